//! Promtail's `replace` stage as tailship's.
//!
//! Promtail replaces each *capture group* of a match with `replace` and keeps
//! the rest of the match; tailship replaces the whole match with `with`. So
//! `password=(\S+)` with `****` becomes `(password=)(?:\S+)` with `${1}****`:
//! the parts of the regex between its capture groups are captured to be put
//! back, and the groups themselves become non-capturing. That holds when the
//! capture groups stand at the top level of the regex (not inside another
//! group, an alternation or a repetition); anything else is reported.
//! Named groups also extract values in Promtail: a `regex` stage with the
//! original expression goes first to extract them.

use regex::Regex;
use regex_syntax::ast::{parse::Parser, Ast, GroupKind};

/// The tailship stages of one Promtail `replace` stage.
#[derive(Debug, PartialEq, Eq)]
pub struct Translated {
    /// A `regex` stage to extract the named groups first: the expression and the names.
    pub extract: Option<(String, Vec<String>)>,
    pub regex: String,
    pub with: String,
}

/// Translates `expression` and its `replace` text.
pub fn translate(expression: &str, replace: &str) -> Result<Translated, String> {
    if replace.contains("{{") {
        return Err("a Go template in `replace` has no tailship equivalent".into());
    }
    // Promtail's regexes are RE2: one Rust does not read is translated first
    // (tailship translates the result again when it loads it, which changes nothing).
    let translated = crate::pipeline::re2::translate(expression).pattern;
    let expression = if Regex::new(expression).is_ok() { expression } else { translated.as_str() };
    let whole = Regex::new(expression).map_err(|e| format!("not a regex tailship reads: {e}"))?;
    if whole.captures_len() == 1 {
        return Err("has no capture group: Promtail replaces capture groups, so this stage changes nothing".into());
    }
    let ast = Parser::new().parse(expression).map_err(|e| format!("not a regex tailship reads: {e}"))?;
    let items: Vec<&Ast> = match &ast {
        Ast::Concat(c) => c.asts.iter().collect(),
        other => vec![other],
    };
    let put = replace.replace('$', "$$");
    let mut regex = String::new();
    let mut with = String::new();
    let mut groups = 0;
    let mut segment: Option<(usize, usize)> = None;
    let mut flush = |segment: &mut Option<(usize, usize)>, regex: &mut String, with: &mut String| {
        if let Some((a, b)) = segment.take() {
            groups += 1;
            regex.push_str(&format!("({})", &expression[a..b]));
            with.push_str(&format!("${{{groups}}}"));
        }
    };
    for item in items {
        match item {
            Ast::Group(g) if !matches!(g.kind, GroupKind::NonCapturing(_)) => {
                flush(&mut segment, &mut regex, &mut with);
                let inner = &expression[g.ast.span().start.offset..g.ast.span().end.offset];
                if captures(inner) > 0 {
                    return Err("a capture group inside a capture group has no tailship equivalent".into());
                }
                regex.push_str(&format!("(?:{inner})"));
                with.push_str(&put);
            }
            Ast::Flags(_) => return Err("inline flags between the groups have no tailship equivalent".into()),
            other => {
                let s = other.span();
                segment = Some(match segment {
                    Some((a, _)) => (a, s.end.offset),
                    None => (s.start.offset, s.end.offset),
                });
            }
        }
    }
    flush(&mut segment, &mut regex, &mut with);
    if captures(&regex) != groups {
        return Err(
            "a capture group inside an alternation, a repetition or another group has no tailship equivalent".into()
        );
    }
    let names: Vec<String> = whole.capture_names().flatten().map(String::from).collect();
    let extract = (!names.is_empty()).then(|| (expression.to_string(), names));
    Ok(Translated { extract, regex, with })
}

/// Capture groups of `re` (0 when it does not compile).
fn captures(re: &str) -> usize {
    Regex::new(re).map(|r| r.captures_len() - 1).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(expr: &str, replace: &str, line: &str) -> String {
        let t = translate(expr, replace).unwrap();
        Regex::new(&t.regex).unwrap().replace_all(line, t.with.as_str()).into_owned()
    }

    #[test]
    fn capture_groups_are_replaced_and_the_rest_kept() {
        assert_eq!(run(r"password=(\S+)", "****", "user=a password=secret x"), "user=a password=**** x");
        assert_eq!(run(r"(\d{12})(\d{4})", "#", "card 1234567890123456"), "card ##");
        assert_eq!(run(r"id=(?P<id>\d+) key=(\w+);", "$X", "id=7 key=abc; id=8 key=d;"), "id=$X key=$X; id=$X key=$X;");
        assert_eq!(run(r"(secret)", "", "a secret b"), "a  b");
        let t = translate(r"id=(?P<id>\d+)", "x").unwrap();
        assert_eq!(t.extract, Some((r"id=(?P<id>\d+)".to_string(), vec!["id".to_string()])));
        assert_eq!(t.regex, r"(id=)(?:\d+)");
        assert_eq!(t.with, "${1}x");
    }

    #[test]
    fn groups_it_cannot_place_are_refused() {
        for (expr, why) in [
            (r"a|(b)", "alternation"),
            (r"(a)+", "repetition"),
            (r"((a)b)", "inside a capture group"),
            (r"x(?:y(z))", "another group"),
            (r"plain", "no capture group"),
            (r"a(?i)(b)", "flags"),
        ] {
            let e = translate(expr, "r").unwrap_err();
            assert!(e.contains(why), "{expr}: {e}");
        }
        assert!(translate("(a)", "{{ .Value }}").unwrap_err().contains("template"));
    }
}
