//! Parsers of the structured stages: JSON paths, logfmt, and the two
//! container-runtime line formats (CRI and Docker json-file).

use std::borrow::Cow;

use serde_json::Value;

/// A dotted path into a JSON document: `a.b[0].c`, `["key.with.dots"]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JsonPath(Vec<Step>);

#[derive(Debug, Clone, PartialEq, Eq)]
enum Step {
    Key(String),
    Index(usize),
}

impl JsonPath {
    /// Parses `a.b[0].c` and `a["x.y"]`; the error says what is wrong.
    pub fn parse(s: &str) -> Result<Self, String> {
        let mut steps = Vec::new();
        let mut rest = s;
        let mut expect_key = true;
        while !rest.is_empty() {
            if let Some(r) = rest.strip_prefix('[') {
                let close = r.find(']').ok_or_else(|| format!("`{s}`: `[` without `]`"))?;
                let inner = &r[..close];
                if let Some(q) = inner.strip_prefix('"').and_then(|q| q.strip_suffix('"')) {
                    steps.push(Step::Key(q.to_string()));
                } else {
                    let n =
                        inner.parse().map_err(|_| format!("`{s}`: `[{inner}]` is neither an index nor a \"key\""))?;
                    steps.push(Step::Index(n));
                }
                rest = &r[close + 1..];
                expect_key = false;
            } else if let Some(r) = rest.strip_prefix('.') {
                if expect_key {
                    return Err(format!("`{s}`: empty key"));
                }
                rest = r;
                expect_key = true;
            } else {
                if !expect_key {
                    return Err(format!("`{s}`: expected `.` or `[` before `{rest}`"));
                }
                let end = rest.find(['.', '[']).unwrap_or(rest.len());
                steps.push(Step::Key(rest[..end].to_string()));
                rest = &rest[end..];
                expect_key = false;
            }
        }
        if steps.is_empty() || (expect_key && s.ends_with('.')) {
            return Err(format!("`{s}`: empty path"));
        }
        Ok(Self(steps))
    }

    /// The value at this path, if any.
    pub fn get<'v>(&self, doc: &'v Value) -> Option<&'v Value> {
        self.get_from(doc, 0)
    }

    /// The path's first step when it is a key (a top-level field).
    pub fn first_key(&self) -> Option<&str> {
        match self.0.first() {
            Some(Step::Key(k)) => Some(k),
            _ => None,
        }
    }

    /// True when the path is one key (a top-level field).
    pub fn is_key(&self) -> bool {
        matches!(self.0.as_slice(), [Step::Key(_)])
    }

    /// The value at the steps of this path after the first `skip`.
    pub fn get_from<'v>(&self, doc: &'v Value, skip: usize) -> Option<&'v Value> {
        let mut v = doc;
        for step in self.0.iter().skip(skip) {
            v = match step {
                Step::Key(k) => v.as_object()?.get(k)?,
                Step::Index(i) => v.as_array()?.get(*i)?,
            };
        }
        Some(v)
    }
}

/// A JSON value as an extracted string: strings as they are, numbers and
/// booleans as written, objects and arrays as compact JSON; `null` is none.
pub fn json_text(v: &Value) -> Option<String> {
    match v {
        Value::Null => None,
        Value::String(s) => Some(s.clone()),
        Value::Bool(_) | Value::Number(_) | Value::Array(_) | Value::Object(_) => Some(v.to_string()),
    }
}

/// Splits a logfmt line into `(key, value)` pairs: `key=value`,
/// `key="quoted \"value\""`, and a bare `key` (value empty). The flag is
/// false when the line holds no `key=` pair at all (it is not logfmt) or a
/// stray quote stops the reading: as Promtail's decoder does, the pairs
/// before it are kept.
pub fn logfmt(line: &str) -> (Vec<(&str, Cow<'_, str>)>, bool) {
    let b = line.as_bytes();
    let mut out = Vec::new();
    let mut any_eq = false;
    let mut i = 0;
    while i < b.len() {
        while i < b.len() && b[i].is_ascii_whitespace() {
            i += 1;
        }
        let ks = i;
        while i < b.len() && b[i] != b'=' && !b[i].is_ascii_whitespace() && b[i] != b'"' {
            i += 1;
        }
        let key = &line[ks..i];
        if i < b.len() && b[i] == b'"' {
            return (out, false); // a quote inside a key
        }
        if i < b.len() && b[i] == b'=' {
            any_eq = true;
            i += 1;
            if i < b.len() && b[i] == b'"' {
                i += 1;
                let vs = i;
                let mut escaped = false;
                while i < b.len() && b[i] != b'"' {
                    if b[i] == b'\\' && i + 1 < b.len() {
                        escaped = true;
                        i += 1;
                    }
                    i += 1;
                }
                if i >= b.len() {
                    return (out, false); // unterminated quote
                }
                let raw = &line[vs..i];
                i += 1;
                if !key.is_empty() {
                    out.push((key, if escaped { Cow::Owned(unescape(raw)) } else { Cow::Borrowed(raw) }));
                }
            } else {
                let vs = i;
                while i < b.len() && !b[i].is_ascii_whitespace() {
                    if b[i] == b'"' {
                        return (out, false); // a quote inside a bare value
                    }
                    i += 1;
                }
                if !key.is_empty() {
                    out.push((key, Cow::Borrowed(&line[vs..i])));
                }
            }
        } else if !key.is_empty() {
            out.push((key, Cow::Borrowed("")));
        }
    }
    (out, any_eq)
}

fn unescape(raw: &str) -> String {
    let mut s = String::with_capacity(raw.len());
    let mut chars = raw.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            s.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => s.push('\n'),
            Some('t') => s.push('\t'),
            Some('r') => s.push('\r'),
            Some(other) => s.push(other),
            None => s.push('\\'),
        }
    }
    s
}

/// One container-runtime log line, parsed.
#[derive(Debug, PartialEq, Eq)]
pub struct ContainerLine<'a> {
    /// Unix nanoseconds; `None` when the runtime's time does not read (the
    /// stream and message are still taken, as Promtail takes them).
    pub ts: Option<i64>,
    pub stream: Cow<'a, str>,
    /// False for a part of a longer line (CRI `P`, Docker without `\n`).
    pub complete: bool,
    pub message: Cow<'a, str>,
}

/// `2024-05-01T10:00:00.123456789Z stdout F message` (CRI-O, containerd).
pub fn cri(line: &str) -> Option<ContainerLine<'_>> {
    let (time, rest) = line.split_once(' ')?;
    let (stream, rest) = rest.split_once(' ')?;
    let (flag, message) = match rest.split_once(' ') {
        Some((f, m)) => (f, m),
        None => (rest, ""),
    };
    // Promtail's pattern: a stream of stdout or stderr, any flag (`P`: a part).
    if !matches!(stream, "stdout" | "stderr") || flag.is_empty() || time.is_empty() {
        return None;
    }
    let complete = flag != "P";
    Some(ContainerLine {
        ts: rfc3339_ns(time),
        stream: Cow::Borrowed(stream),
        complete,
        message: Cow::Borrowed(message),
    })
}

/// A line as Promtail's `docker` stage reads it: any JSON object, its
/// `log` the message, `stream` the stream and `time` the time, each where it
/// is a string (Docker's json-file writes all three:
/// `{"log":"message\n","stream":"stdout","time":"2024-05-01T10:00:00.1Z"}`).
#[derive(Debug, PartialEq, Eq)]
pub struct DockerLine {
    /// Unix nanoseconds of `time`; `None` where it is missing or does not read.
    pub ts: Option<i64>,
    pub stream: Option<String>,
    /// `log` less its ending newline; `None` where the object has none (the
    /// line stays as it is).
    pub message: Option<String>,
    /// False for a part of a longer line (a `log` without `\n`).
    pub complete: bool,
}

/// `line` as Promtail's `docker` stage reads it; `None` where it is no JSON object.
pub fn docker(line: &str) -> Option<DockerLine> {
    let serde_json::Value::Object(mut o) = serde_json::from_str(line).ok()? else { return None };
    let mut text = |k: &str| match o.remove(k) {
        Some(serde_json::Value::String(s)) => Some(s),
        _ => None,
    };
    let (log, stream, time) = (text("log"), text("stream"), text("time"));
    let ts = time.as_deref().and_then(rfc3339_ns);
    let (message, complete) = match log {
        Some(l) => match l.strip_suffix('\n') {
            Some(m) => (Some(m.strip_suffix('\r').unwrap_or(m).to_string()), true),
            None => (Some(l), false),
        },
        None => (None, true),
    };
    Some(DockerLine { ts, stream, message, complete })
}

fn rfc3339_ns(s: &str) -> Option<i64> {
    chrono::DateTime::parse_from_rfc3339(s).ok()?.timestamp_nanos_opt()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_paths_reach_nested_keys_indices_and_quoted_keys() {
        let doc: Value = serde_json::from_str(r#"{"a":{"b":[{"c":7}],"x.y":"q"},"n":null}"#).unwrap();
        let at = |p: &str| JsonPath::parse(p).unwrap().get(&doc).and_then(json_text);
        assert_eq!(at("a.b[0].c").as_deref(), Some("7"));
        assert_eq!(at(r#"a["x.y"]"#).as_deref(), Some("q"));
        assert_eq!(at("a.b").as_deref(), Some(r#"[{"c":7}]"#));
        assert_eq!(at("n"), None);
        assert_eq!(at("a.missing"), None);
        for bad in ["", "a..b", ".a", "a.", "a[x]", "a[0", "a[0]b"] {
            assert!(JsonPath::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn logfmt_pairs_quoted_values_and_bare_keys() {
        let (kv, ok) = logfmt(r#"level=info msg="hello \"you\"" took=3ms debug"#);
        let kv: Vec<(&str, &str)> = kv.iter().map(|(k, v)| (*k, v.as_ref())).collect();
        assert_eq!(kv, [("level", "info"), ("msg", "hello \"you\""), ("took", "3ms"), ("debug", "")]);
        assert!(ok);
        assert!(!logfmt("just some words").1);
        // A stray quote stops the reading; the pairs before it stay (Promtail's decoder).
        for stray in [r#"a=1 b="open"#, r#"a=1 b=x"y c=2"#, r#"a=1 "b=2"#] {
            let (kv, ok) = logfmt(stray);
            assert!(!ok, "{stray}");
            assert_eq!(kv.iter().map(|(k, v)| (*k, v.as_ref())).collect::<Vec<_>>(), [("a", "1")], "{stray}");
        }
    }

    #[test]
    fn cri_and_docker_lines() {
        let l = cri("2024-05-01T10:00:00.000000001Z stderr P part one").unwrap();
        assert_eq!(
            (l.ts, l.stream.as_ref(), l.complete, l.message.as_ref()),
            (Some(1714557600000000001), "stderr", false, "part one")
        );
        assert_eq!(cri("2024-05-01T10:00:00Z stdout F").unwrap().message, "");
        assert!(cri("not a cri line").is_none());
        assert!(cri("2024-05-01T10:00:00Z stdout X m").unwrap().complete, "any flag but P ends a line");
        assert!(cri("2024-05-01T10:00:00Z other F m").is_none(), "stdout or stderr only");
        let bad_time = cri("yesterday stdout F m").unwrap();
        assert_eq!((bad_time.ts, bad_time.message.as_ref()), (None, "m"));
        assert_eq!(docker(r#"{"log":"x\n","stream":"stderr","time":"soon"}"#).unwrap().ts, None);
        let d = docker(r#"{"log":"hi there\n","stream":"stdout","time":"2024-05-01T10:00:00.5Z"}"#).unwrap();
        assert_eq!(
            (d.ts, d.stream.as_deref(), d.complete, d.message.as_deref()),
            (Some(1714557600500000000), Some("stdout"), true, Some("hi there"))
        );
        assert!(!docker(r#"{"log":"cut","stream":"stdout","time":"2024-05-01T10:00:00Z"}"#).unwrap().complete);
        assert!(docker("plain").is_none());
        assert!(docker("[1]").is_none());
    }

    #[test]
    fn the_docker_stage_reads_any_json_object_as_promtail_does() {
        let d = docker(r#"{"level":"info","time":"2024-05-01T10:00:00.5Z"}"#).unwrap();
        assert_eq!((d.ts, d.stream, d.message, d.complete), (Some(1714557600500000000), None, None, true));
        let d = docker(r#"{"log":"x\n","stream":"stdout","time":7}"#).unwrap();
        assert_eq!((d.ts, d.stream.as_deref(), d.message.as_deref()), (None, Some("stdout"), Some("x")));
    }
}
