//! Promtail's `replace` stage as tailship's.
//!
//! Promtail replaces each *capture group* of a match with `replace` and keeps
//! the rest of the match; tailship replaces the whole match with `with`. So
//! `password=(\S+)` with `****` becomes `(password=)(?:\S+)` with `${1}****`:
//! the parts of the regex between its capture groups are captured to be put
//! back, and the groups themselves become non-capturing. That holds when the
//! capture groups stand at the top level of the regex (not inside another
//! group, an alternation or a repetition); anything else is reported.
//! Inline flags at the top level (`(?i)` before the groups) stay where they
//! stand, outside the groups, and so hold over the same parts.
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
    let put = literal(replace);
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
            // Flags set at the top level hold to the regex's end: kept where
            // they stand, outside any group, they hold over the same parts.
            Ast::Flags(f) => {
                flush(&mut segment, &mut regex, &mut with);
                regex.push_str(&expression[f.span.start.offset..f.span.end.offset]);
            }
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

/// Promtail's `replace` text (a Go template without actions: text) as the
/// literal text of a regex replacement in a converted config: an
/// environment reference (`${NAME}`) stays one, as Promtail's
/// `-config.expand-env` reads it; every other `$` is the replacement's `$$`,
/// written so that it is `$$` after the config's own `$$` escape (the
/// writer keeps `$$` pairs before a `{` as that escape, and doubles the rest).
fn literal(replace: &str) -> String {
    let mut out = String::with_capacity(replace.len() + 8);
    let mut rest = replace;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let here = &rest[at..];
        if let Some(len) = crate::convert::render::env_reference(here) {
            out.push_str(&here[..len]);
            rest = &here[len..];
            continue;
        }
        out.push_str(if here[1..].starts_with('{') { "$$$$" } else { "$$" });
        rest = &here[1..];
    }
    out.push_str(rest);
    out
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
    fn inline_flags_before_or_between_the_groups_are_kept_where_they_stand() {
        let t = translate(r"(?i)(email|mail)[:=]\s*([^\s,}]+)", "${1}=X").unwrap();
        assert_eq!(t.regex, r"(?i)(?:email|mail)([:=]\s*)(?:[^\s,}]+)");
        // Promtail's `replace` is a Go template: `${1}` is text there.
        assert_eq!(run(r"(?i)(email|mail)[:=]\s*([^\s,}]+)", "R", "a EMAIL=x@y.z b"), "a R=R b");
        assert_eq!(run(r"a(?i)(b)c", "#", "ABC aBC abc"), "ABC a#C a#c");
        assert_eq!(run(r"(?i)x(?-i)(y)", "#", "XY Xy"), "XY X#");
    }

    #[test]
    fn groups_it_cannot_place_are_refused() {
        for (expr, why) in [
            (r"a|(b)", "alternation"),
            (r"(a)+", "repetition"),
            (r"((a)b)", "inside a capture group"),
            (r"x(?:y(z))", "another group"),
            (r"plain", "no capture group"),
        ] {
            let e = translate(expr, "r").unwrap_err();
            assert!(e.contains(why), "{expr}: {e}");
        }
        assert!(translate("(a)", "{{ .Value }}").unwrap_err().contains("template"));
    }

    #[test]
    fn a_replace_text_with_a_dollar_brace_is_shipped_as_promtail_writes_it_not_as_a_group() {
        // Promtail's `replace` is a Go template: `${1}` in it is text.
        let yaml = concat!(
            "scrape_configs:\n  - job_name: app\n",
            "    static_configs:\n      - labels: { job: app, __path__: /var/log/app.log }\n",
            "    pipeline_stages:\n      - replace: { expression: '(?i)(mail)[:=]([^ ]+)', replace: '${1}=$X' }\n",
        );
        let c = crate::convert::promtail(yaml).unwrap();
        let (config, errors) = crate::config::load_parts(std::path::Path::new("converted.toml"), &c.toml, &[]);
        assert!(errors.is_empty(), "{errors:?}\n{}", c.toml);
        let stage = &config.expect("config").sources[0].stages[0];
        let re = regex::Regex::new(stage.replace.as_deref().expect("a replace stage")).unwrap();
        let with = stage.with.as_deref().expect("its text");
        assert_eq!(re.replace_all("a MAIL=x@y b", with), "a ${1}=$X=${1}=$X b", "{}", c.toml);
    }
}
