//! The subset of LogQL the embedded store understands, parsed into small
//! matchers that the store applies to its streams.
//!
//! Log queries: a stream selector `{a="x", b!="y", c=~"re", d!~"re"}` followed
//! by any chain of line filters `|= "s"`, `!= "s"`, `|~ "re"`, `!~ "re"`.
//! Strings are Go-style double-quoted (escapes), single-quoted, or backtick
//! raw. Label regexes are fully anchored, line-filter regexes are not (as in
//! Loki).
//!
//! Metric queries: `count_over_time`, `rate`, `bytes_over_time` and
//! `bytes_rate` over `selector [range]`, optionally wrapped in `sum(...)`,
//! `sum by (l1, l2) (...)`, `sum(...) by (l1)` or the `without` forms.
//!
//! The product uses it too: the query client checks selectors with
//! [`selectors`] before sending, and alert rules compile their selectors
//! with [`parse_log_query`]. One parser, so they all agree.
//!
//! Like Loki, a selector must hold at least one matcher that does not match
//! the empty string (`{}` or `{a=~".*"}` would select every stream).

use std::fmt;

use regex::Regex;

mod parser;
#[cfg(test)]
mod tests;

pub use parser::Compile;
use parser::Parser;

/// A parse or validation error, with the byte column where it was found.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    #[error("parse error at column {col}: {msg}")]
    Syntax { col: usize, msg: String },
    #[error(
        "queries require at least one label matcher that does not match the empty string, such as {{job=\"app\"}}; \
         got {selector}"
    )]
    EmptySelector { selector: String },
}

pub(crate) fn syntax<T>(col: usize, msg: impl Into<String>) -> Result<T, ParseError> {
    Err(ParseError::Syntax { col: col + 1, msg: msg.into() })
}

/// A label matcher operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MatchOp {
    Eq,
    Neq,
    Re,
    Nre,
}

impl fmt::Display for MatchOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Eq => "=",
            Self::Neq => "!=",
            Self::Re => "=~",
            Self::Nre => "!~",
        })
    }
}

/// One `name op "value"` matcher of a stream selector.
#[derive(Debug, Clone)]
pub struct LabelMatcher {
    pub name: String,
    pub op: MatchOp,
    pub value: String,
    /// The anchored regex for `=~` and `!~`.
    re: Option<Regex>,
}

impl LabelMatcher {
    pub fn new(name: &str, op: MatchOp, value: &str) -> Result<Self, String> {
        Self::compiled(name, op, value, |re| Regex::new(re).map_err(|e| e.to_string()))
    }

    /// A matcher whose regex (anchored) `compile` makes.
    pub fn compiled(name: &str, op: MatchOp, value: &str, compile: Compile) -> Result<Self, String> {
        let re = match op {
            MatchOp::Re | MatchOp::Nre => {
                Some(compile(&format!("^(?:{value})$")).map_err(|e| format!("invalid regex {value:?}: {e}"))?)
            }
            MatchOp::Eq | MatchOp::Neq => None,
        };
        Ok(Self { name: name.to_string(), op, value: value.to_string(), re })
    }

    /// Matches a label value; an absent label matches as the empty string.
    pub fn matches(&self, value: &str) -> bool {
        match (&self.op, &self.re) {
            (MatchOp::Eq, _) => value == self.value,
            (MatchOp::Neq, _) => value != self.value,
            (MatchOp::Re, Some(re)) => re.is_match(value),
            (MatchOp::Nre, Some(re)) => !re.is_match(value),
            (MatchOp::Re | MatchOp::Nre, None) => false,
        }
    }
}

/// One line filter of a log query.
#[derive(Debug, Clone)]
pub enum LineFilter {
    Contains(String),
    NotContains(String),
    Regex(Regex),
    NotRegex(Regex),
}

impl LineFilter {
    pub fn matches(&self, line: &str) -> bool {
        match self {
            Self::Contains(s) => line.contains(s.as_str()),
            Self::NotContains(s) => !line.contains(s.as_str()),
            Self::Regex(re) => re.is_match(line),
            Self::NotRegex(re) => !re.is_match(line),
        }
    }
}

/// A stream selector with its line filters.
#[derive(Debug, Clone)]
pub struct LogSelector {
    pub matchers: Vec<LabelMatcher>,
    pub filters: Vec<LineFilter>,
}

impl LogSelector {
    /// True when a stream with these labels is selected.
    pub fn matches_labels<'a>(&self, mut get: impl FnMut(&str) -> Option<&'a str>) -> bool {
        self.matchers.iter().all(|m| m.matches(get(&m.name).unwrap_or("")))
    }

    /// True when a line passes every filter.
    pub fn matches_line(&self, line: &str) -> bool {
        self.filters.iter().all(|f| f.matches(line))
    }
}

/// The range function of a metric query.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RangeFn {
    CountOverTime,
    Rate,
    BytesOverTime,
    BytesRate,
}

/// `sum` grouping.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Grouping {
    /// `sum(...)`: everything into one series.
    All,
    By(Vec<String>),
    Without(Vec<String>),
}

/// `fn(selector [range])`, maybe summed.
#[derive(Debug, Clone)]
pub struct MetricQuery {
    pub func: RangeFn,
    pub selector: LogSelector,
    pub range_ns: i64,
    pub sum: Option<Grouping>,
}

/// A parsed query.
#[derive(Debug, Clone)]
pub enum Query {
    Log(LogSelector),
    Metric(MetricQuery),
}

/// Parses a log or metric query.
pub fn parse(input: &str) -> Result<Query, ParseError> {
    Parser::new(input).query()
}

/// Every `{...}` stream selector of a query (its text and matchers), found
/// outside strings whatever surrounds it, so a query with stages this module
/// does not parse (`| json`, `| line_format`) is still checked: each selector
/// must hold a matcher that does not match the empty string. Unknown escapes
/// in strings are left for the service to judge.
pub fn selectors(input: &str) -> Result<Vec<(String, Vec<LabelMatcher>)>, ParseError> {
    Parser::new(input).scan_selectors()
}

/// `{a="x", b="y"}`: the stream selector of exactly these labels, values
/// quoted as JSON strings (which LogQL accepts), in the order given.
pub fn format_selector<'a>(labels: impl IntoIterator<Item = (&'a str, &'a str)>) -> String {
    let mut out = String::from("{");
    for (i, (k, v)) in labels.into_iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        out.push_str(k);
        out.push('=');
        out.push_str(&serde_json::Value::String(v.to_string()).to_string());
    }
    out.push('}');
    out
}

/// [`parse_log_query`] for a `match` stage's selector, as Promtail reads
/// it: a selector of negative matchers only (`{app!="web"}`) is allowed,
/// Go's comments and Unicode names are read, and `compile` makes the
/// regexes (the pipeline's reads RE2, Promtail's dialect).
pub fn parse_match_selector(input: &str, compile: Compile) -> Result<LogSelector, ParseError> {
    let mut p = parser::Parser::new(input);
    p.any_matcher = true;
    p.go_lexer = true;
    p.compile = compile;
    match p.query()? {
        Query::Log(s) => Ok(s),
        Query::Metric(_) => syntax(0, "a log query (stream selector) is needed here, not a metric query"),
    }
}

/// Parses a log query; a metric query is an error.
pub fn parse_log_query(input: &str) -> Result<LogSelector, ParseError> {
    match parse(input)? {
        Query::Log(s) => Ok(s),
        Query::Metric(_) => syntax(0, "a log query (stream selector) is needed here, not a metric query"),
    }
}

/// Parses a LogQL/Prometheus duration such as `5m`, `1h30m`, `250ms`.
pub fn parse_duration_ns(s: &str) -> Result<i64, String> {
    let bad = || format!("invalid duration {s:?}; use forms like 30s, 5m, 1h");
    let b = s.as_bytes();
    if b.is_empty() {
        return Err(bad());
    }
    let mut i = 0;
    let mut total: i64 = 0;
    while i < b.len() {
        let start = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        if start == i {
            return Err(bad());
        }
        let n: i64 = s[start..i].parse().map_err(|_| bad())?;
        let ustart = i;
        while i < b.len() && b[i].is_ascii_alphabetic() {
            i += 1;
        }
        let unit: i64 = match &s[ustart..i] {
            "ms" => 1_000_000,
            "s" => 1_000_000_000,
            "m" => 60_000_000_000,
            "h" => 3_600_000_000_000,
            "d" => 86_400_000_000_000,
            "w" => 7 * 86_400_000_000_000,
            "y" => 365 * 86_400_000_000_000,
            _ => return Err(bad()),
        };
        total = n.checked_mul(unit).and_then(|v| total.checked_add(v)).ok_or_else(bad)?;
    }
    if total <= 0 {
        return Err(format!("duration {s:?} must be positive"));
    }
    Ok(total)
}
