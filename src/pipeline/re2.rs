//! Regexes in Promtail's dialect (RE2, Go's `regexp`) read by Rust's `regex`.
//!
//! Every regex of a stage or a multiline rule is written in RE2 syntax, as
//! in Promtail and Loki, and goes through [`translate`] before it is compiled.
//! The two dialects agree on almost everything; what differs is rewritten:
//!
//! - a `{` that does not start a repetition (`^{`, `a{x}`, `{,3}`) is a
//!   literal in RE2 and an error in Rust: it is escaped;
//! - `\Q...\E` quotes literal text (Rust has no such form): escaped;
//! - `\d`, `\s`, `\w` (and `\D`, `\S`, `\W`) are ASCII in RE2 and Unicode in
//!   Rust: written as RE2's ASCII classes;
//! - octal escapes `\123` become `\x{53}`;
//! - inside a class, a `[` that does not open `[:name:]` is a literal in RE2
//!   and a nested class in Rust, and `&&`, `--`, `~~` are set operations in
//!   Rust only: escaped;
//! - `\C` (any byte) has no equivalent over text: it reads any one character
//!   (reported as a difference).
//!
//! `\z`, `(?P<name>...)`, `(?<name>...)`, flags and Unicode classes mean the
//! same in both and are kept; a name given twice (RE2 allows it, Rust does
//! not) is renamed where it comes again, with [`DUPLICATE`] and a number,
//! and [`group_name`] reads the name back (Promtail sets each group's value
//! in turn, so the last group of a name gives its value).

use regex::Regex;

/// A regex in Rust's dialect, and the differences that remain (for convert's report).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Translated {
    pub pattern: String,
    pub differences: Vec<&'static str>,
}

/// What a group name given again is renamed with: `name` + this + a number.
pub const DUPLICATE: &str = "__tailship_dup";

/// The name a group was given in the regex as written (see [`DUPLICATE`]).
pub fn group_name(name: &str) -> &str {
    match name.rfind(DUPLICATE) {
        Some(i) if name[i + DUPLICATE.len()..].bytes().all(|b| b.is_ascii_digit()) => &name[..i],
        _ => name,
    }
}

/// The difference `\C` leaves.
pub const ANY_BYTE: &str = "`\\C` (any byte in RE2) matches any one character";

/// Rewrites the RE2 regex `re` for Rust's `regex` (see the module documentation).
pub fn translate(re: &str) -> Translated {
    let c: Vec<char> = re.chars().collect();
    let mut out = String::with_capacity(re.len() + 8);
    let mut differences = Vec::new();
    let mut i = 0;
    // Inside a class: the index where its items start (after `[` and `^`).
    let mut class: Option<usize> = None;
    let mut names: Vec<String> = Vec::new();
    while i < c.len() {
        let ch = c[i];
        if ch == '\\' && i + 1 < c.len() {
            i = escape(&c, i, class.is_some(), &mut out, &mut differences);
            continue;
        }
        match class {
            None => match ch {
                '[' => {
                    out.push('[');
                    i += 1;
                    if c.get(i) == Some(&'^') {
                        out.push('^');
                        i += 1;
                    }
                    if c.get(i) == Some(&']') {
                        out.push_str("\\]");
                        i += 1;
                    }
                    class = Some(i);
                    continue;
                }
                '{' if is_repeat(&c[i..]) => {
                    // A repetition: copied whole, so its `}` is not escaped.
                    while i < c.len() {
                        out.push(c[i]);
                        i += 1;
                        if c[i - 1] == '}' {
                            break;
                        }
                    }
                    continue;
                }
                '{' => out.push_str("\\{"),
                '}' => out.push_str("\\}"),
                '(' => match group_start(&c[i..]) {
                    Some((open, name)) => {
                        let seen = names.iter().filter(|n| **n == name).count();
                        out.extend(&c[i..i + open]);
                        out.push_str(&name);
                        if seen > 0 {
                            out.push_str(&format!("{DUPLICATE}{}", seen + 1));
                        }
                        out.push('>');
                        i += open + name.chars().count() + 1;
                        names.push(name);
                        continue;
                    }
                    None => out.push('('),
                },
                _ => out.push(ch),
            },
            Some(_) => match ch {
                ']' => {
                    out.push(']');
                    class = None;
                }
                '[' => match posix_class(&c[i..]) {
                    Some(len) => {
                        out.extend(&c[i..i + len]);
                        i += len;
                        continue;
                    }
                    None => out.push_str("\\["),
                },
                '&' | '~' => {
                    out.push('\\');
                    out.push(ch);
                }
                '-' if c.get(i + 1) == Some(&'-') => out.push_str("\\-"),
                _ => out.push(ch),
            },
        }
        i += 1;
    }
    Translated { pattern: out, differences }
}

/// `(?P<name>` or `(?<name>` at the start of `c`: the length of the part
/// before the name, and the name.
fn group_start(c: &[char]) -> Option<(usize, String)> {
    let open = if c.starts_with(&['(', '?', 'P', '<']) {
        4
    } else if c.starts_with(&['(', '?', '<']) && !matches!(c.get(3), Some('=' | '!')) {
        3
    } else {
        return None;
    };
    let len = c[open..].iter().position(|ch| *ch == '>')?;
    Some((open, c[open..open + len].iter().collect()))
}

/// The most a compiled regex may take. Rust's default (10 MiB) refuses
/// regexes RE2 takes: RE2 compiles a class such as `[^\t]` or `.` to one
/// instruction where Rust builds a UTF-8 automaton of several states, so
/// eleven tab-separated fields of `[^\t]{1,1000}` (RE2's largest count)
/// pass Go and not the default. Go bounds a program at about 3.3 million
/// instructions; this allows as much in Rust's terms.
const SIZE_LIMIT: usize = 512 << 20;

/// Translates and compiles `re`; the error is on one line.
pub fn compile(re: &str) -> Result<Regex, String> {
    let t = translate(re);
    regex::RegexBuilder::new(&t.pattern).size_limit(SIZE_LIMIT).build().map_err(|e| one_line(&e.to_string()))
}

/// A multi-line message (a regex error) on one line.
fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The escape at `c[i]` (a `\` with something after it): written to `out`;
/// returns the index after it.
fn escape(c: &[char], i: usize, in_class: bool, out: &mut String, differences: &mut Vec<&'static str>) -> usize {
    let next = c[i + 1];
    let class_of = |set: &str, negated: bool| match (in_class, negated) {
        (true, false) => set.to_string(),
        (_, true) => format!("[^{set}]"),
        (false, false) => format!("[{set}]"),
    };
    match next {
        'Q' => {
            let mut j = i + 2;
            while j < c.len() && !(c[j] == '\\' && c.get(j + 1) == Some(&'E')) {
                let mut buf = [0u8; 4];
                out.push_str(&regex::escape(c[j].encode_utf8(&mut buf)));
                j += 1;
            }
            return if j < c.len() { j + 2 } else { j };
        }
        'E' => return i + 2, // a `\E` without `\Q` ends nothing
        'C' => {
            out.push_str("(?s:.)");
            if !differences.contains(&ANY_BYTE) {
                differences.push(ANY_BYTE);
            }
        }
        'd' | 'D' => out.push_str(&class_of("0-9", next == 'D')),
        's' | 'S' => out.push_str(&class_of(r"\t\n\f\r ", next == 'S')),
        'w' | 'W' => out.push_str(&class_of("0-9A-Za-z_", next == 'W')),
        '0'..='7' if next == '0' || c.get(i + 2).is_some_and(|d| ('0'..='7').contains(d)) => {
            let mut j = i + 1;
            let mut n = 0u32;
            while j < c.len() && j < i + 4 && ('0'..='7').contains(&c[j]) {
                n = n * 8 + c[j].to_digit(8).unwrap_or(0);
                j += 1;
            }
            out.push_str(&format!("\\x{{{n:X}}}"));
            return j;
        }
        'p' | 'P' | 'x' if c.get(i + 2) == Some(&'{') => {
            // `\p{Greek}`, `\x{263a}`: copied up to the closing brace.
            let mut j = i;
            while j < c.len() {
                out.push(c[j]);
                j += 1;
                if c[j - 1] == '}' {
                    break;
                }
            }
            return j;
        }
        _ => {
            out.push('\\');
            out.push(next);
        }
    }
    i + 2
}

/// True when `c` starts with a repetition RE2 parses: `{n}`, `{n,}` or `{n,m}`.
fn is_repeat(c: &[char]) -> bool {
    let mut i = 1;
    let digits = |i: &mut usize| {
        let s = *i;
        while *i < c.len() && c[*i].is_ascii_digit() {
            *i += 1;
        }
        *i > s
    };
    if !digits(&mut i) {
        return false;
    }
    if c.get(i) == Some(&',') {
        i += 1;
        digits(&mut i);
    }
    c.get(i) == Some(&'}')
}

/// The length of a `[:name:]` (or `[:^name:]`) POSIX class at the start of `c`.
fn posix_class(c: &[char]) -> Option<usize> {
    if c.get(1) != Some(&':') {
        return None;
    }
    let mut j = 2;
    while j + 1 < c.len() {
        if c[j] == ':' && c[j + 1] == ']' {
            return Some(j + 2);
        }
        if !(c[j].is_ascii_alphabetic() || (j == 2 && c[j] == '^')) {
            return None;
        }
        j += 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(re: &str) -> Regex {
        compile(re).unwrap_or_else(|e| panic!("{re}: {e}"))
    }

    #[test]
    fn a_group_name_given_twice_compiles_and_reads_back_as_written() {
        let re = ok(r"^(?P<a>\w+) (?<a>\d+)(?P<b>x)?$");
        let names: Vec<&str> = re.capture_names().flatten().collect();
        assert_eq!(names, ["a", "a__tailship_dup2", "b"]);
        assert_eq!(names.iter().map(|n| group_name(n)).collect::<Vec<_>>(), ["a", "a", "b"]);
        assert_eq!(group_name("a__tailship_dupx"), "a__tailship_dupx");
        assert_eq!(translate(r"(?<=x)(?<!y)").pattern, r"(?<=x)(?<!y)");
    }

    #[test]
    fn a_bare_brace_is_a_literal() {
        let first = ok(r"^\d{4}-\d{2}-\d{2}|^\[|^{");
        assert!(first.is_match("2024-01-02 x"));
        assert!(first.is_match("[main]"));
        assert!(first.is_match(r#"{"a":1}"#));
        assert!(!first.is_match("  at x"));
        assert!(ok("a{x}").is_match("a{x}"));
        assert!(ok("a{,3}").is_match("a{,3}"));
        assert!(ok("a{2,}b").is_match("aab"));
        assert!(ok("x{2,3}").is_match("xx"));
        assert!(ok("^}").is_match("}"));
        assert!(ok(r"\{\}").is_match("{}"));
    }

    #[test]
    fn quoting_named_groups_and_end_of_text() {
        assert!(ok(r"\Q*.+?\E$").is_match("a*.+?"));
        assert!(ok(r"^\Qa{b").is_match("a{b"));
        let named = ok(r"(?P<a>\w+) (?<b>\w+)\z");
        let caps = named.captures("x y").unwrap();
        assert_eq!((&caps["a"], &caps["b"]), ("x", "y"));
        assert!(!ok(r"a\z").is_match("a\n"));
        assert!(ok(r"\101").is_match("A"));
        assert!(ok(r"\p{Greek}+\x{263a}").is_match("αβ☺"));
    }

    #[test]
    fn perl_classes_are_ascii_as_in_re2() {
        assert!(!ok(r"^\d$").is_match("٣"));
        assert!(ok(r"^[\d\s]+$").is_match("1 2"));
        assert!(ok(r"^[^\W]+$").is_match("ab_1"));
        assert!(ok(r"^\D\S\W$").is_match("a-!"));
    }

    #[test]
    fn classes_keep_re2_literals() {
        assert!(ok(r"[[]").is_match("["));
        assert!(ok(r"^[]a]+$").is_match("]a"));
        assert!(ok(r"^[a&&b~~]+$").is_match("a&b~"));
        assert!(ok(r"^[a--]+$").is_match("a--"));
        assert!(ok(r"^[[:alpha:][:^digit:]]+$").is_match("ab"));
    }

    #[test]
    fn any_byte_is_any_character_with_a_difference() {
        let t = translate(r"a\Cb");
        assert_eq!(t.differences, vec![ANY_BYTE]);
        assert!(ok(r"a\Cb").is_match("aéb"));
    }

    #[test]
    fn long_bounded_fields_re2_takes_compile() {
        let fields: Vec<String> = (0..11).map(|i| format!(r"(?P<f{i}>[^\t]{{1,1000}})")).collect();
        let re = ok(&format!("^{}$", fields.join(r"\t")));
        let line: Vec<String> = (0..11).map(|i| format!("field {i} {}", "x".repeat(300))).collect();
        assert_eq!(re.captures(&line.join("\t")).unwrap().len(), 12);
    }

    #[test]
    fn what_re2_refuses_is_still_refused() {
        for bad in [r"(a", r"(?=x)", r"\1"] {
            assert!(compile(bad).is_err(), "{bad}");
        }
    }
}
