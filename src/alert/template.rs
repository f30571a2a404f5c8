//! `{{name}}` templates of the alert payload (title, message, link, image).
//!
//! A template is parsed once at start into literal text and variables, so an
//! unknown variable is a config error, never an empty string at 3 a.m. A
//! variable may end with `|urlencode` to percent-encode its value (for query
//! URLs in `link`). There is no escaping and no logic: `{{` always opens a
//! variable. The variables:
//!
//! | variable | value |
//! |---|---|
//! | `rule` | the rule's name |
//! | `count` | matching lines folded into this update |
//! | `total` | matching lines since the alert group opened |
//! | `matches`, `total_matches` | the same with their noun: `1 matching line`, `37 matching lines` |
//! | `first_line`, `last_line` | first and last matching line of this update |
//! | `since` | time of the first match of this update (UTC, `2024-05-01 21:04:05Z`) |
//! | `last_match` | time of the group's latest match |
//! | `selector` | stream selector of the group's labels, `{job="app"}` |
//! | `labels` | the group's labels, `job=app, level=error` |
//! | `label.NAME` | one label's value (empty when absent) |
//! | `alert_uid`, `state` | as sent in the payload |
//! | `from_ms`, `to_ms` | group opened, and now, in Unix milliseconds (for time ranges in links) |

use std::fmt::Write;

/// One `{{...}}` variable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Var {
    Rule,
    Count,
    Total,
    Matches,
    TotalMatches,
    FirstLine,
    LastLine,
    Since,
    LastMatch,
    Selector,
    Labels,
    Label(String),
    AlertUid,
    State,
    FromMs,
    ToMs,
}

impl Var {
    fn parse(name: &str) -> Option<Var> {
        Some(match name {
            "rule" => Var::Rule,
            "count" => Var::Count,
            "total" => Var::Total,
            "matches" => Var::Matches,
            "total_matches" => Var::TotalMatches,
            "first_line" => Var::FirstLine,
            "last_line" => Var::LastLine,
            "since" => Var::Since,
            "last_match" => Var::LastMatch,
            "selector" => Var::Selector,
            "labels" => Var::Labels,
            "alert_uid" => Var::AlertUid,
            "state" => Var::State,
            "from_ms" => Var::FromMs,
            "to_ms" => Var::ToMs,
            other => {
                let label = other.strip_prefix("label.")?;
                if !crate::util::is_valid_label_name(label) {
                    return None;
                }
                Var::Label(label.to_string())
            }
        })
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    Text(String),
    Var { var: Var, urlencode: bool },
}

/// A parsed template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    parts: Vec<Part>,
}

/// What a template is rendered with.
#[derive(Debug, Clone)]
pub struct Context<'a> {
    pub rule: &'a str,
    pub count: u64,
    pub total: u64,
    pub first_line: &'a str,
    pub last_line: &'a str,
    /// Unix milliseconds.
    pub since_ms: i64,
    pub last_match_ms: i64,
    pub opened_ms: i64,
    pub now_ms: i64,
    /// Sorted by name.
    pub labels: &'a [(String, String)],
    pub alert_uid: &'a str,
    pub state: &'a str,
}

impl Template {
    /// Parses `text`; the error names the first bad variable.
    pub fn parse(text: &str) -> Result<Template, String> {
        let mut parts = Vec::new();
        let mut rest = text;
        while let Some(open) = rest.find("{{") {
            if open > 0 {
                parts.push(Part::Text(rest[..open].to_string()));
            }
            let after = &rest[open + 2..];
            let Some(close) = after.find("}}") else {
                return Err(format!("unterminated `{{{{` in template `{}`", shorten(text)));
            };
            let inner = after[..close].trim();
            let (name, urlencode) = match inner.split_once('|') {
                Some((n, f)) if f.trim() == "urlencode" => (n.trim(), true),
                Some((_, f)) => return Err(format!("unknown filter `{}` (only `urlencode`)", f.trim())),
                None => (inner, false),
            };
            let Some(var) = Var::parse(name) else {
                return Err(format!(
                    "unknown template variable `{{{{{name}}}}}`; known: rule, count, total, matches, total_matches, first_line, last_line, \
                     since, last_match, selector, labels, label.NAME, alert_uid, state, from_ms, to_ms"
                ));
            };
            parts.push(Part::Var { var, urlencode });
            rest = &after[close + 2..];
        }
        if !rest.is_empty() {
            parts.push(Part::Text(rest.to_string()));
        }
        Ok(Template { parts })
    }

    /// The `label.NAME` variables this template uses.
    pub fn label_names(&self) -> impl Iterator<Item = &str> {
        self.parts.iter().filter_map(|p| match p {
            Part::Var { var: Var::Label(n), .. } => Some(n.as_str()),
            _ => None,
        })
    }

    pub fn render(&self, c: &Context<'_>) -> String {
        let mut out = String::new();
        for p in &self.parts {
            match p {
                Part::Text(t) => out.push_str(t),
                Part::Var { var, urlencode } => {
                    let v = value(var, c);
                    if *urlencode {
                        percent_encode_into(&mut out, &v);
                    } else {
                        out.push_str(&v);
                    }
                }
            }
        }
        out
    }
}

fn value(var: &Var, c: &Context<'_>) -> String {
    match var {
        Var::Rule => c.rule.to_string(),
        Var::Count => c.count.to_string(),
        Var::Total => c.total.to_string(),
        Var::Matches => matching_lines(c.count),
        Var::TotalMatches => matching_lines(c.total),
        Var::FirstLine => c.first_line.to_string(),
        Var::LastLine => c.last_line.to_string(),
        Var::Since => format_time(c.since_ms),
        Var::LastMatch => format_time(c.last_match_ms),
        Var::Selector => selector(c.labels),
        Var::Labels => c.labels.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(", "),
        Var::Label(n) => c.labels.iter().find(|(k, _)| k == n).map(|(_, v)| v.clone()).unwrap_or_default(),
        Var::AlertUid => c.alert_uid.to_string(),
        Var::State => c.state.to_string(),
        Var::FromMs => c.opened_ms.to_string(),
        Var::ToMs => c.now_ms.to_string(),
    }
}

/// `1 matching line`, `2 matching lines`.
fn matching_lines(n: u64) -> String {
    if n == 1 {
        "1 matching line".into()
    } else {
        format!("{n} matching lines")
    }
}

/// `{a="x", b="y"}`: a stream selector any LogQL-speaking service accepts.
pub fn selector(labels: &[(String, String)]) -> String {
    crate::logql::format_selector(labels.iter().map(|(k, v)| (k.as_str(), v.as_str())))
}

fn format_time(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms)
        .map(|t| t.format("%Y-%m-%d %H:%M:%SZ").to_string())
        .unwrap_or_else(|| ms.to_string())
}

/// RFC 3986 percent-encoding of everything but unreserved characters.
fn percent_encode_into(out: &mut String, s: &str) {
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
            out.push(char::from(b));
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
}

fn shorten(s: &str) -> String {
    if s.chars().count() <= 60 {
        s.to_string()
    } else {
        format!("{}...", s.chars().take(60).collect::<String>())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx<'a>(labels: &'a [(String, String)]) -> Context<'a> {
        Context {
            rule: "errs",
            count: 37,
            total: 40,
            first_line: "ERROR a",
            last_line: "ERROR b",
            since_ms: 1_714_597_445_000,
            last_match_ms: 1_714_597_446_000,
            opened_ms: 1,
            now_ms: 2,
            labels,
            alert_uid: "uid",
            state: "alerting",
        }
    }

    #[test]
    fn renders_every_variable() {
        let labels = vec![("job".to_string(), "app".to_string()), ("level".to_string(), "e r".to_string())];
        let t = Template::parse(
            "{{rule}} {{ count }}/{{total}} since {{since}} [{{first_line}}|{{last_line}}] {{selector}} {{labels}} \
             {{label.job}}{{label.nope}} {{alert_uid}} {{state}} {{from_ms}}-{{to_ms}} {{last_match}}",
        )
        .unwrap();
        assert_eq!(
            t.render(&ctx(&labels)),
            "errs 37/40 since 2024-05-01 21:04:05Z [ERROR a|ERROR b] {job=\"app\", level=\"e r\"} job=app, level=e r \
             app uid alerting 1-2 2024-05-01 21:04:06Z"
        );
    }

    #[test]
    fn urlencode_filter() {
        let labels = vec![("job".to_string(), "app".to_string())];
        let t = Template::parse("http://x/explore?q={{selector|urlencode}}").unwrap();
        assert_eq!(t.render(&ctx(&labels)), "http://x/explore?q=%7Bjob%3D%22app%22%7D");
    }

    #[test]
    fn unknown_variables_and_filters_are_errors() {
        assert!(Template::parse("{{nope}}").unwrap_err().contains("`{{nope}}`"));
        assert!(Template::parse("{{label.9x}}").is_err());
        assert!(Template::parse("{{rule|upper}}").unwrap_err().contains("upper"));
        assert!(Template::parse("{{rule").unwrap_err().contains("unterminated"));
        assert_eq!(Template::parse("plain } { text").unwrap().render(&ctx(&[])), "plain } { text");
        let t = Template::parse("{{label.a}}{{label.b}}").unwrap();
        assert_eq!(t.label_names().collect::<Vec<_>>(), vec!["a", "b"]);
    }
}
