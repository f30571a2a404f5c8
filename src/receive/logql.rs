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
//! Like Loki, a selector must hold at least one matcher that does not match
//! the empty string (`{}` or `{a=~".*"}` would select every stream).

use std::fmt;

use regex::Regex;

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

fn syntax<T>(col: usize, msg: impl Into<String>) -> Result<T, ParseError> {
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
        let re = match op {
            MatchOp::Re | MatchOp::Nre => {
                Some(Regex::new(&format!("^(?:{value})$")).map_err(|e| format!("invalid regex {value:?}: {e}"))?)
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
    let mut p = Parser { src: input, pos: 0 };
    p.skip_ws();
    let q = if p.peek() == Some('{') { Query::Log(p.log_selector()?) } else { Query::Metric(p.metric()?) };
    p.skip_ws();
    if p.pos < input.len() {
        return syntax(p.pos, format!("unexpected {:?}", p.rest_snippet()));
    }
    Ok(q)
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

struct Parser<'a> {
    src: &'a str,
    pos: usize,
}

impl<'a> Parser<'a> {
    fn rest(&self) -> &'a str {
        &self.src[self.pos..]
    }

    fn rest_snippet(&self) -> String {
        self.rest().chars().take(20).collect()
    }

    fn peek(&self) -> Option<char> {
        self.rest().chars().next()
    }

    fn skip_ws(&mut self) {
        let trimmed = self.rest().trim_start();
        self.pos = self.src.len() - trimmed.len();
    }

    /// Consumes `tok` (after whitespace) when it is next.
    fn eat(&mut self, tok: &str) -> bool {
        self.skip_ws();
        if self.rest().starts_with(tok) {
            self.pos += tok.len();
            true
        } else {
            false
        }
    }

    fn expect(&mut self, tok: &str) -> Result<(), ParseError> {
        if self.eat(tok) {
            return Ok(());
        }
        if self.pos >= self.src.len() {
            return syntax(self.pos, format!("expected {tok:?}, found end of query"));
        }
        syntax(self.pos, format!("expected {tok:?}, found {:?}", self.rest_snippet()))
    }

    fn ident(&mut self) -> Result<&'a str, ParseError> {
        self.skip_ws();
        let rest = self.rest();
        let len = rest
            .char_indices()
            .find(|&(i, c)| !(c == '_' || c.is_ascii_alphabetic() || (i > 0 && c.is_ascii_digit())))
            .map_or(rest.len(), |(i, _)| i);
        if len == 0 {
            if rest.is_empty() {
                return syntax(self.pos, "expected a name, found end of query");
            }
            return syntax(self.pos, format!("expected a name, found {:?}", self.rest_snippet()));
        }
        self.pos += len;
        Ok(&rest[..len])
    }

    fn string(&mut self) -> Result<String, ParseError> {
        self.skip_ws();
        let start = self.pos;
        let mut chars = self.rest().char_indices();
        let quote = match chars.next() {
            Some((_, q @ ('"' | '\'' | '`'))) => q,
            Some(_) => return syntax(start, format!("expected a quoted string, found {:?}", self.rest_snippet())),
            None => return syntax(start, "expected a quoted string, found end of query"),
        };
        let mut out = String::new();
        while let Some((i, c)) = chars.next() {
            if c == quote {
                self.pos = start + i + c.len_utf8();
                return Ok(out);
            }
            if c == '\\' && quote != '`' {
                let Some((j, e)) = chars.next() else { break };
                match e {
                    'a' => out.push('\x07'),
                    'b' => out.push('\x08'),
                    'f' => out.push('\x0c'),
                    'n' => out.push('\n'),
                    'r' => out.push('\r'),
                    't' => out.push('\t'),
                    'v' => out.push('\x0b'),
                    '\\' | '"' | '\'' | '`' => out.push(e),
                    'x' | 'u' | 'U' => {
                        let n = match e {
                            'x' => 2,
                            'u' => 4,
                            _ => 8,
                        };
                        let hex: String = chars.by_ref().take(n).map(|(_, h)| h).collect();
                        let ch = (hex.len() == n)
                            .then(|| u32::from_str_radix(&hex, 16).ok())
                            .flatten()
                            .and_then(char::from_u32);
                        match ch {
                            Some(ch) => out.push(ch),
                            None => return syntax(start + j, format!("invalid escape \\{e}{hex}")),
                        }
                    }
                    '0'..='7' => {
                        let mut oct = String::from(e);
                        oct.extend(chars.by_ref().take(2).map(|(_, o)| o));
                        match u32::from_str_radix(&oct, 8).ok().filter(|&v| v < 256 && oct.len() == 3) {
                            Some(v) => out.push(char::from_u32(v).unwrap_or('\u{fffd}')),
                            None => return syntax(start + j, format!("invalid escape \\{oct}")),
                        }
                    }
                    other => return syntax(start + j, format!("unknown escape \\{other}")),
                }
            } else {
                out.push(c);
            }
        }
        syntax(start, "unterminated string")
    }

    fn log_selector(&mut self) -> Result<LogSelector, ParseError> {
        let sel_start = self.pos;
        self.expect("{")?;
        let mut matchers = Vec::new();
        if !self.eat("}") {
            loop {
                let name = self.ident()?;
                self.skip_ws();
                let op_pos = self.pos;
                let op = if self.eat("=~") {
                    MatchOp::Re
                } else if self.eat("!~") {
                    MatchOp::Nre
                } else if self.eat("!=") {
                    MatchOp::Neq
                } else if self.eat("=") {
                    MatchOp::Eq
                } else {
                    return syntax(op_pos, format!("expected one of = != =~ !~ after label {name:?}"));
                };
                let value_pos = self.pos;
                let value = self.string()?;
                let m = LabelMatcher::new(name, op, &value).or_else(|e| syntax(value_pos, e))?;
                matchers.push(m);
                if self.eat("}") {
                    break;
                }
                self.expect(",")?;
                // A trailing comma before `}` is allowed, as in Prometheus.
                if self.eat("}") {
                    break;
                }
            }
        }
        if !matchers.iter().any(|m| !m.matches("")) {
            return Err(ParseError::EmptySelector { selector: self.src[sel_start..self.pos].trim().to_string() });
        }
        let mut filters = Vec::new();
        loop {
            self.skip_ws();
            let fpos = self.pos;
            let kind = if self.eat("|=") {
                0
            } else if self.eat("!=") {
                1
            } else if self.eat("|~") {
                2
            } else if self.eat("!~") {
                3
            } else if self.rest().starts_with('|') {
                return syntax(fpos, "only line filters (|= != |~ !~) are supported after the selector; parsers and formatters such as | json are not");
            } else {
                break;
            };
            let spos = self.pos;
            let s = self.string()?;
            let filter = match kind {
                0 => LineFilter::Contains(s),
                1 => LineFilter::NotContains(s),
                _ => {
                    let re = Regex::new(&s).or_else(|e| syntax(spos, format!("invalid regex {s:?}: {e}")))?;
                    if kind == 2 {
                        LineFilter::Regex(re)
                    } else {
                        LineFilter::NotRegex(re)
                    }
                }
            };
            filters.push(filter);
        }
        Ok(LogSelector { matchers, filters })
    }

    fn grouping(&mut self) -> Result<Option<Grouping>, ParseError> {
        self.skip_ws();
        let save = self.pos;
        let kw = match self.ident() {
            Ok(kw @ ("by" | "without")) => kw,
            _ => {
                self.pos = save;
                return Ok(None);
            }
        };
        self.expect("(")?;
        let mut labels = Vec::new();
        if !self.eat(")") {
            loop {
                labels.push(self.ident()?.to_string());
                if self.eat(")") {
                    break;
                }
                self.expect(",")?;
            }
        }
        Ok(Some(if kw == "by" { Grouping::By(labels) } else { Grouping::Without(labels) }))
    }

    fn metric(&mut self) -> Result<MetricQuery, ParseError> {
        self.skip_ws();
        let fpos = self.pos;
        let name = self.ident()?;
        if name == "sum" {
            let before = self.grouping()?;
            self.expect("(")?;
            let mut inner = self.range_aggregation()?;
            self.expect(")")?;
            let after = self.grouping()?;
            if before.is_some() && after.is_some() {
                return syntax(self.pos, "a grouping (by/without) may appear only once");
            }
            inner.sum = Some(before.or(after).unwrap_or(Grouping::All));
            return Ok(inner);
        }
        self.pos = fpos;
        self.range_aggregation()
    }

    fn range_aggregation(&mut self) -> Result<MetricQuery, ParseError> {
        self.skip_ws();
        let fpos = self.pos;
        let name = self.ident()?;
        let func = match name {
            "count_over_time" => RangeFn::CountOverTime,
            "rate" => RangeFn::Rate,
            "bytes_over_time" => RangeFn::BytesOverTime,
            "bytes_rate" => RangeFn::BytesRate,
            other => {
                return syntax(
                    fpos,
                    format!(
                        "unsupported function {other:?}; supported: count_over_time, rate, bytes_over_time, \
                         bytes_rate, optionally inside sum(...)"
                    ),
                )
            }
        };
        self.expect("(")?;
        self.skip_ws();
        let selector = self.log_selector()?;
        self.expect("[")?;
        let dstart = self.pos;
        let Some(len) = self.rest().find(']') else {
            return syntax(dstart, "expected a range such as [5m]");
        };
        let text = self.src[dstart..dstart + len].trim();
        let range_ns = parse_duration_ns(text).or_else(|e| syntax(dstart, e))?;
        self.pos = dstart + len + 1;
        self.expect(")")?;
        Ok(MetricQuery { func, selector, range_ns, sum: None })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl FnMut(&str) -> Option<&'a str> + 'a {
        move |n| pairs.iter().find(|(k, _)| *k == n).map(|(_, v)| *v)
    }

    #[test]
    fn selector_with_every_operator() {
        let s = parse_log_query(r#"{a="x", b!="y", c=~"re.*", d!~"no|nope"}"#).unwrap();
        assert_eq!(s.matchers.len(), 4);
        assert_eq!(s.matchers[1].op, MatchOp::Neq);
        assert!(s.matches_labels(labels(&[("a", "x"), ("c", "regex"), ("d", "yes")])));
        assert!(!s.matches_labels(labels(&[("a", "x"), ("b", "y"), ("c", "re")])));
        // Regexes are anchored: "xre" does not match "re.*".
        assert!(!s.matches_labels(labels(&[("a", "x"), ("c", "xre")])));
        assert!(!s.matches_labels(labels(&[("a", "x"), ("c", "re"), ("d", "nope")])));
    }

    #[test]
    fn line_filters_chain() {
        let s = parse_log_query(r#"{job="a"} |= "err" != `debug` |~ "code=\\d+" !~ "(?i)IGNORED""#).unwrap();
        assert_eq!(s.filters.len(), 4);
        assert!(s.matches_line("err code=42"));
        assert!(!s.matches_line("err code=x"));
        assert!(!s.matches_line("err debug code=1"));
        assert!(!s.matches_line("err code=1 ignored"));
        // Line regexes are not anchored.
        let s = parse_log_query(r#"{job="a"} |~ "b.d""#).unwrap();
        assert!(s.matches_line("abcde"));
    }

    #[test]
    fn strings_and_escapes() {
        let s = parse_log_query(r#"{a="q\"uo\tte\u00e9\x41\101"} |= '\n'"#).unwrap();
        assert_eq!(s.matchers[0].value, "q\"uo\tteéAA");
        assert!(matches!(&s.filters[0], LineFilter::Contains(x) if x == "\n"));
        let s = parse_log_query(r#"{a=`raw\d`}"#).unwrap();
        assert_eq!(s.matchers[0].value, r"raw\d");
        assert!(parse(r#"{a="open}"#).is_err());
        assert!(parse(r#"{a="\q"}"#).is_err());
    }

    #[test]
    fn empty_selectors_are_refused() {
        for q in ["{}", r#"{a=~".*"}"#, r#"{a!="x"}"#, r#"count_over_time({}[5m])"#] {
            let e = parse(q).unwrap_err();
            assert!(matches!(e, ParseError::EmptySelector { .. }), "{q}: {e}");
            assert!(e.to_string().contains("at least one label matcher"), "{e}");
        }
        assert!(parse(r#"{a=~".+", b!="x"}"#).is_ok());
    }

    #[test]
    fn syntax_errors_say_where() {
        let e = parse(r#"{a="x"} | json"#).unwrap_err().to_string();
        assert!(e.contains("line filters"), "{e}");
        let e = parse(r#"{a~"x"}"#).unwrap_err().to_string();
        assert!(e.contains("column 3"), "{e}");
        assert!(parse(r#"{a="x"} extra"#).is_err());
        assert!(parse(r#"{a="(" }"#).is_ok());
        assert!(parse(r#"{a=~"("}"#).unwrap_err().to_string().contains("invalid regex"));
        assert!(parse("").is_err());
    }

    #[test]
    fn metric_queries() {
        let Query::Metric(m) = parse(r#"count_over_time({job="a"} |= "x" [5m])"#).unwrap() else { panic!() };
        assert_eq!(m.func, RangeFn::CountOverTime);
        assert_eq!(m.range_ns, 300_000_000_000);
        assert_eq!(m.selector.filters.len(), 1);
        assert_eq!(m.sum, None);

        let Query::Metric(m) = parse(r#"sum by (level, host) (rate({job="a"}[1m]))"#).unwrap() else { panic!() };
        assert_eq!(m.func, RangeFn::Rate);
        assert_eq!(m.sum, Some(Grouping::By(vec!["level".into(), "host".into()])));

        let Query::Metric(m) = parse(r#"sum(bytes_over_time({job="a"}[1h30m])) by (level)"#).unwrap() else { panic!() };
        assert_eq!(m.func, RangeFn::BytesOverTime);
        assert_eq!(m.range_ns, 5_400_000_000_000);
        assert_eq!(m.sum, Some(Grouping::By(vec!["level".into()])));

        let Query::Metric(m) = parse(r#"sum(bytes_rate({job="a"}[10s]))"#).unwrap() else { panic!() };
        assert_eq!(m.sum, Some(Grouping::All));
        let Query::Metric(m) = parse(r#"sum without (host) (rate({job="a"}[10s]))"#).unwrap() else { panic!() };
        assert_eq!(m.sum, Some(Grouping::Without(vec!["host".into()])));

        assert!(parse(r#"avg_over_time({job="a"}[5m])"#).unwrap_err().to_string().contains("unsupported function"));
        assert!(parse(r#"rate({job="a"}[5x])"#).unwrap_err().to_string().contains("invalid duration"));
        assert!(parse(r#"rate({job="a"})"#).is_err());
        assert!(parse(r#"sum by (a) (rate({job="a"}[1m])) by (b)"#).is_err());
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration_ns("250ms").unwrap(), 250_000_000);
        assert_eq!(parse_duration_ns("1d").unwrap(), 86_400_000_000_000);
        assert!(parse_duration_ns("0s").is_err());
        assert!(parse_duration_ns("m").is_err());
        assert!(parse_duration_ns("5").is_err());
    }

    #[test]
    fn parse_log_query_refuses_metrics() {
        assert!(parse_log_query(r#"rate({a="b"}[1m])"#).is_err());
    }
}
