//! The converted config as TOML text: sections of keys with comments, inline
//! tables and one stage per line, written so a person can read and edit it.

use std::fmt::Write;

/// A TOML value.
#[derive(Debug, Clone, PartialEq)]
pub enum Val {
    Str(String),
    Int(i64),
    Float(f64),
    Bool(bool),
    Arr(Vec<Val>),
    Table(Vec<(String, Val)>),
}

impl Val {
    pub fn str(s: impl Into<String>) -> Self {
        Self::Str(s.into())
    }

    pub fn strs(items: &[String]) -> Self {
        Self::Arr(items.iter().map(|s| Self::Str(s.clone())).collect())
    }

    pub fn pairs(items: &[(String, String)]) -> Self {
        Self::Table(items.iter().map(|(k, v)| (k.clone(), Self::Str(v.clone()))).collect())
    }
}

/// One `[name]` or `[[name]]` section.
#[derive(Debug, Clone, Default)]
pub struct Section {
    /// Comment lines before the header.
    pub comments: Vec<String>,
    /// Key, value and an end-of-line comment.
    pub entries: Vec<(String, Val, Option<String>)>,
}

impl Section {
    /// Sets `key`, in its place when it is already set.
    pub fn set(&mut self, key: &str, v: Val) {
        match self.entries.iter_mut().find(|(k, _, _)| k == key) {
            Some(e) => e.1 = v,
            None => self.entries.push((key.to_string(), v, None)),
        }
    }

    pub fn set_noted(&mut self, key: &str, v: Val, comment: &str) {
        self.set(key, v);
        if let Some(e) = self.entries.iter_mut().find(|(k, _, _)| k == key) {
            e.2 = Some(comment.to_string());
        }
    }

    pub fn get(&self, key: &str) -> Option<&Val> {
        self.entries.iter().find(|(k, _, _)| k == key).map(|(_, v, _)| v)
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Writes the section under `header` (`[client]`, `[[sources]]`).
    pub fn render(&self, header: &str, out: &mut String) {
        for c in &self.comments {
            let _ = writeln!(out, "# {}", comment(c));
        }
        let _ = writeln!(out, "{header}");
        for (k, v, comment) in &self.entries {
            let _ = write!(out, "{} = ", key(k));
            match v {
                // A list of tables (stages): one per line.
                Val::Arr(items) if items.iter().any(|i| matches!(i, Val::Table(_))) => {
                    out.push_str("[\n");
                    for i in items {
                        let _ = writeln!(out, "  {},", inline(i));
                    }
                    out.push(']');
                }
                _ => out.push_str(&inline(v)),
            }
            if let Some(c) = comment {
                let _ = write!(out, "  # {}", self::comment(c));
            }
            out.push('\n');
        }
    }
}

/// Text for a `#` comment: one line whatever the input holds. A job name
/// with a newline once ended the comment and wrote its own keys into the
/// converted config (a proxy that received the credentials, a source
/// reading /etc/shadow); control characters are written escaped.
pub fn comment(text: &str) -> String {
    text.chars().flat_map(|c| if c.is_control() { c.escape_default().collect::<Vec<_>>() } else { vec![c] }).collect()
}

/// A key, bare when it can be.
pub fn key(k: &str) -> String {
    if !k.is_empty() && k.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-') {
        k.to_string()
    } else {
        basic(k)
    }
}

/// A value on one line.
pub fn inline(v: &Val) -> String {
    match v {
        Val::Str(s) => string(s),
        Val::Int(i) => i.to_string(),
        Val::Float(f) if f.fract() == 0.0 && f.abs() < 1e15 => format!("{f:.1}"),
        Val::Float(f) => f.to_string(),
        Val::Bool(b) => b.to_string(),
        Val::Arr(items) => format!("[{}]", items.iter().map(inline).collect::<Vec<_>>().join(", ")),
        Val::Table(entries) if entries.is_empty() => "{}".into(),
        Val::Table(entries) => format!(
            "{{ {} }}",
            entries.iter().map(|(k, v)| format!("{} = {}", key(k), inline(v))).collect::<Vec<_>>().join(", ")
        ),
    }
}

/// A string: a literal `'...'` when it holds backslashes or double quotes
/// (regexes read as written), a basic `"..."` otherwise.
pub fn string(s: &str) -> String {
    let s = &dollars(s);
    let literal_ok = !s.contains('\'') && !s.chars().any(|c| c.is_control());
    if literal_ok && (s.contains('\\') || s.contains('"')) {
        format!("'{s}'")
    } else {
        basic(s)
    }
}

/// `s` with each `$` that tailship's config loading would read doubled
/// (`$$` is a `$` there): a `$` before a `{` that opens no reference, and
/// each `$` of a run of them before anything else. A lone `$` (`$1`,
/// `cost $5`, `end$`) stays as written, and so do `${NAME}`,
/// `${NAME:-default}` and `$${...}` (Promtail's escape of a literal `${`
/// under `-config.expand-env`), which tailship reads as Promtail does with
/// that flag.
pub fn dollars(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(pos) = rest.find('$') {
        out.push_str(&rest[..pos]);
        let at = &rest[pos..];
        let run = at.bytes().take_while(|b| *b == b'$').count();
        let after = &at[run..];
        if !after.starts_with('{') {
            if run == 1 {
                out.push('$');
            } else {
                out.push_str(&"$$".repeat(run));
            }
            rest = after;
            continue;
        }
        // Before `{`: `$$` pairs are escapes, read alike by both; kept.
        let pairs = run / 2 * 2;
        out.push_str(&at[..pairs]);
        let one = &at[pairs..];
        rest = one;
        if run % 2 == 0 {
            continue;
        }
        if let Some(len) = env_reference(one) {
            out.push_str(&one[..len]);
            rest = &one[len..];
        } else {
            out.push_str(if group_reference(&one[1..]) { "$" } else { "$$" });
            rest = &one[1..];
        }
    }
    out.push_str(rest);
    out
}

/// Whether `s` starts with `{digits}`, the rest of a `${1}` group reference,
/// which tailship's config loading leaves as it is.
fn group_reference(s: &str) -> bool {
    let Some(body) = s.strip_prefix('{') else { return false };
    let digits = body.bytes().take_while(u8::is_ascii_digit).count();
    digits > 0 && body[digits..].starts_with('}')
}

/// `text` with Promtail's `${NAME:default}` references written
/// `${NAME:-default}`, the form tailship expands (`:-` stays as it is).
pub fn colon_defaults(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(pos) = rest.find("${") {
        out.push_str(&rest[..pos]);
        let body = &rest[pos + 2..];
        let name_len = body.bytes().take_while(|b| b.is_ascii_alphanumeric() || *b == b'_').count();
        let named = name_len > 0 && !body[..name_len].bytes().all(|b| b.is_ascii_digit());
        let colon = body[name_len..].starts_with(':') && !body[name_len..].starts_with(":-");
        let closed = body[name_len..].find('}').is_some_and(|e| !body[name_len..name_len + e].contains('\n'));
        out.push_str("${");
        out.push_str(&body[..name_len]);
        if named && colon && closed {
            out.push_str(":-");
            rest = &body[name_len + 1..];
        } else {
            rest = &body[name_len..];
        }
    }
    out.push_str(rest);
    out
}

/// The length of a reference tailship expands at the start of `s`
/// (`${NAME}`, `${NAME:-default}`, `${NAME:=default}`; not `${1}`).
pub fn env_reference(s: &str) -> Option<usize> {
    crate::config::reference_len(s)
}

fn basic(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if c.is_control() => {
                let _ = write!(out, "\\u{:04X}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_round_trip_through_the_toml_parser() {
        for s in ["plain", r"\d+ \w", "say \"hi\"", "it's", "tab\there", "both ' and \\", "\u{1}"] {
            let text = format!("v = {}", string(s));
            let t: ::toml::Table = ::toml::from_str(&text).unwrap_or_else(|e| panic!("{text}: {e}"));
            assert_eq!(t["v"].as_str(), Some(s), "{text}");
        }
        assert_eq!(string(r"^\d+"), r"'^\d+'");
        assert_eq!(dollars("${1}x$ ${HOME} ${A:-b} $$"), "${1}x$ ${HOME} ${A:-b} $$$$");
        assert_eq!(dollars("$1 end$ ${ $${HOME} ${a b}"), "$1 end$ $${ $${HOME} $${a b}");
        assert_eq!(dollars("$${1}x $$${HOME} ${A:-${B}} ${A:=b}"), "$${1}x $$${HOME} ${A:-${B}} ${A:=b}");
        assert_eq!(key("a.b"), "\"a.b\"");
    }

    #[test]
    fn a_section_renders_stages_one_per_line() {
        let mut s = Section { comments: vec!["from job".into()], entries: Vec::new() };
        s.set("include", Val::strs(&["/var/log/*.log".into()]));
        s.set(
            "stages",
            Val::Arr(vec![Val::Table(vec![
                ("regex".into(), Val::str("(?P<a>x)")),
                ("labels".into(), Val::Arr(vec![])),
            ])]),
        );
        s.set_noted("rate", Val::Float(2.0), "why");
        let mut out = String::new();
        s.render("[[sources]]", &mut out);
        assert_eq!(
            out,
            "# from job\n[[sources]]\ninclude = [\"/var/log/*.log\"]\nstages = [\n  { regex = \"(?P<a>x)\", labels = [] },\n]\nrate = 2.0  # why\n"
        );
        let _: ::toml::Table = ::toml::from_str(&out).unwrap();
    }
}
