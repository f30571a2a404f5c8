//! The recursive-descent parser behind [`super::parse`] and [`super::selectors`].

use regex::Regex;

use super::*;

pub(super) struct Parser<'a> {
    src: &'a str,
    pos: usize,
    /// Unknown escapes in double-quoted strings keep their backslash (the
    /// client's check leaves judging them to the service).
    lenient: bool,
    /// Any matcher will do (a `match` stage's selector, as Promtail reads
    /// it): `{app!="x"}` is allowed; `{}` is not.
    pub(super) any_matcher: bool,
    /// Go's lexer, as Promtail's `match` selector is read: `//` and `/* */`
    /// comments between tokens, names of Unicode letters and digits.
    pub(super) go_lexer: bool,
    /// Compiles the regexes of `=~`, `!~`, `|~` and `!~` (the label ones
    /// already anchored).
    pub(super) compile: Compile,
}

/// A regex compiler: Rust's, or (for a `match` stage) one reading RE2.
pub type Compile = fn(&str) -> Result<Regex, String>;

fn rust_regex(re: &str) -> Result<Regex, String> {
    Regex::new(re).map_err(|e| e.to_string())
}

impl<'a> Parser<'a> {
    pub(super) fn new(src: &'a str) -> Self {
        Self { src, pos: 0, lenient: false, any_matcher: false, go_lexer: false, compile: rust_regex }
    }

    /// Parses a whole log or metric query.
    pub(super) fn query(mut self) -> Result<Query, ParseError> {
        self.skip_ws();
        let q = if self.peek() == Some('{') { Query::Log(self.log_selector()?) } else { Query::Metric(self.metric()?) };
        self.skip_ws();
        if self.pos < self.src.len() {
            return syntax(self.pos, format!("unexpected {:?}", self.rest_snippet()));
        }
        Ok(q)
    }

    /// Every `{...}` selector outside strings, with its matchers, whatever
    /// surrounds it (parsers and formatters this module does not know).
    pub(super) fn scan_selectors(mut self) -> Result<Vec<(String, Vec<LabelMatcher>)>, ParseError> {
        self.lenient = true;
        let mut out = Vec::new();
        while let Some(c) = self.peek() {
            match c {
                '"' | '\'' | '`' => {
                    self.string()?;
                }
                '{' => {
                    let start = self.pos;
                    let matchers = self.matchers()?;
                    out.push((self.src[start..self.pos].to_string(), matchers));
                }
                c => self.pos += c.len_utf8(),
            }
        }
        Ok(out)
    }

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
        loop {
            let trimmed = self.rest().trim_start();
            self.pos = self.src.len() - trimmed.len();
            if !self.go_lexer {
                return;
            }
            let skip = if trimmed.starts_with("//") {
                trimmed.find('\n').unwrap_or(trimmed.len())
            } else if let Some(body) = trimmed.strip_prefix("/*") {
                body.find("*/").map_or(trimmed.len(), |end| end + 4)
            } else {
                return;
            };
            self.pos += skip;
        }
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
            .find(|&(i, c)| {
                let letter = if self.go_lexer { c.is_alphabetic() } else { c.is_ascii_alphabetic() };
                let digit = if self.go_lexer { c.is_numeric() } else { c.is_ascii_digit() };
                !(c == '_' || letter || (i > 0 && digit))
            })
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
                    other if self.lenient => {
                        out.push('\\');
                        out.push(other);
                    }
                    other => return syntax(start + j, format!("unknown escape \\{other}")),
                }
            } else {
                out.push(c);
            }
        }
        syntax(start, "unterminated string")
    }

    /// Parses `{name op "value", ...}` at the current position; refuses a
    /// selector without a matcher that does not match the empty string.
    fn matchers(&mut self) -> Result<Vec<LabelMatcher>, ParseError> {
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
                let m = LabelMatcher::compiled(name, op, &value, self.compile).or_else(|e| syntax(value_pos, e))?;
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
        if matchers.is_empty() || (!self.any_matcher && !matchers.iter().any(|m| !m.matches(""))) {
            return Err(ParseError::EmptySelector { selector: self.src[sel_start..self.pos].trim().to_string() });
        }
        Ok(matchers)
    }

    fn log_selector(&mut self) -> Result<LogSelector, ParseError> {
        let matchers = self.matchers()?;
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
                    let re = (self.compile)(&s).or_else(|e| syntax(spos, format!("invalid regex {s:?}: {e}")))?;
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
