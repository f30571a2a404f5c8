//! A string a regular expression matches, to build input lines from a job's
//! own regexes: the expression's syntax tree is walked and each part writes
//! a short text it accepts; a named group may be given its text (a time in
//! the format a timestamp stage reads from it). The result is checked
//! against the expression, and `None` where it does not match.

use std::collections::BTreeMap;

use regex_syntax::hir::{Class, Hir, HirKind};

/// A string `expr` matches, with the groups of `given` holding their given
/// text where that still matches; `variant` picks other alternatives.
pub fn sample(expr: &str, given: &BTreeMap<String, String>, variant: usize) -> Option<String> {
    let re = regex::Regex::new(expr).ok()?;
    let hir = regex_syntax::ParserBuilder::new().build().parse(expr).ok()?;
    for given in [given.clone(), BTreeMap::new()] {
        let mut out = String::new();
        write(&hir, &given, variant, &mut out);
        if re.is_match(&out) && !out.contains('\n') {
            return Some(out);
        }
    }
    None
}

/// Characters a class offers first, in order of preference: what logs hold.
const PREFERRED: &str = "a1xA0 -._:/=b2cZ,";

fn pick(class: &Class) -> Option<char> {
    match class {
        Class::Unicode(u) => {
            let has = |c: char| u.ranges().iter().any(|r| r.start() <= c && c <= r.end());
            PREFERRED.chars().find(|c| has(*c)).or_else(|| {
                u.ranges().iter().flat_map(|r| [r.start(), r.end()]).find(|c| !c.is_control() && *c != '\n')
            })
        }
        Class::Bytes(b) => {
            let has = |c: u8| b.ranges().iter().any(|r| r.start() <= c && c <= r.end());
            PREFERRED.bytes().find(|c| has(*c)).map(char::from)
        }
    }
}

fn write(hir: &Hir, given: &BTreeMap<String, String>, variant: usize, out: &mut String) {
    match hir.kind() {
        HirKind::Empty | HirKind::Look(_) => {}
        HirKind::Literal(l) => out.push_str(&String::from_utf8_lossy(&l.0)),
        HirKind::Class(c) => out.extend(pick(c)),
        HirKind::Repetition(r) => {
            let n = match r.max {
                Some(max) => r.min.max(1).min(max).max(r.min),
                None => r.min.max(3),
            };
            for _ in 0..n {
                write(&r.sub, given, variant, out);
            }
        }
        HirKind::Capture(c) => match c.name.as_deref().and_then(|n| given.get(n)) {
            Some(text) => out.push_str(text),
            None => write(&c.sub, given, variant, out),
        },
        HirKind::Concat(parts) => parts.iter().for_each(|p| write(p, given, variant, out)),
        HirKind::Alternation(alts) => write(&alts[variant % alts.len()], given, variant, out),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_match_and_keep_given_groups() {
        let e = r"^(?P<time>\S+ \S+) (?P<level>INFO|WARN) (?P<msg>.*)$";
        let given = BTreeMap::from([("time".to_string(), "2024-05-01 10:00:00".to_string())]);
        assert_eq!(sample(e, &given, 0).unwrap(), "2024-05-01 10:00:00 INFO aaa");
        assert_eq!(sample(e, &given, 1).unwrap(), "2024-05-01 10:00:00 WARN aaa");
        assert!(sample(r"\d{3}-[a-f]+", &BTreeMap::new(), 0).is_some());
    }
}
