//! Loki's rules over a whole push body, as its store holds them.
//!
//! Timestamps are checked first, for the whole request: a bad one refuses
//! it all (Loki refuses it while decoding). Then per stream and per entry
//! (label names, counts and lengths, structured metadata names, line
//! length): a bad stream or entry is skipped and the first problem is
//! reported, but the rest of the request is still kept.

use super::{parse_ts, stream_labels, LabelPairs, MalformedPush, PushBody, MAX_LINE_BYTES};

/// One stream of a validated push: sorted labels and its good entries.
#[derive(Debug)]
pub struct ValidStream<'b> {
    pub labels: Vec<(&'b str, &'b str)>,
    /// `(timestamp, line, structured metadata)`.
    pub entries: Vec<(i64, &'b str, Meta<'b>)>,
}

/// What [`validate`] keeps, and the first problem of the ones it skipped.
#[derive(Debug, Default)]
pub struct Validated<'b> {
    pub streams: Vec<ValidStream<'b>>,
    pub first_error: Option<String>,
    /// Entries left out (bad labels, lines too long), and entries in all.
    pub ignored: usize,
    pub total: usize,
}

impl Validated<'_> {
    /// The 400 message of a partly refused push, ending as Loki's does
    /// (`total ignored: N out of M`), so clients can count what was stored.
    pub fn error_message(&self) -> Option<String> {
        let first = self.first_error.as_ref()?;
        Some(format!("{first}; total ignored: {} out of {}", self.ignored, self.total))
    }
}

/// Checks every rule. Timestamps are checked first, for the whole request,
/// since Loki refuses a request with a bad one while decoding it.
pub fn validate<'b>(body: &'b PushBody<'_>) -> Result<Validated<'b>, MalformedPush> {
    if body.streams.is_empty() {
        return Ok(Validated::default());
    }
    let mut out =
        Validated { streams: Vec::with_capacity(body.streams.len()), first_error: None, ignored: 0, total: 0 };
    for (si, s) in body.streams.iter().enumerate() {
        let mut entries = Vec::with_capacity(s.values.len());
        for (vi, v) in s.values.iter().enumerate() {
            let Some(ts) = parse_ts(&v.ts) else {
                return Err(MalformedPush(format!(
                    "stream {si} value {vi}: timestamp {:?} is not decimal nanoseconds",
                    &*v.ts
                )));
            };
            let meta: Meta<'b> = match &v.metadata {
                Some(m) if !m.0.is_empty() => match check_metadata(m) {
                    Ok(pairs) => Some(pairs),
                    Err(msg) => {
                        out.first_error.get_or_insert_with(|| format!("stream {si} value {vi}: {msg}"));
                        out.ignored += 1;
                        continue;
                    }
                },
                _ => None,
            };
            entries.push((ts, &*v.line, meta));
        }
        out.total += entries.len();
        let labels = match stream_labels(&s.stream) {
            Ok(l) => l,
            Err(e) => {
                out.first_error.get_or_insert_with(|| format!("stream {si}: {e}"));
                out.ignored += entries.len();
                continue;
            }
        };
        let mut vi = 0;
        let before = entries.len();
        entries.retain(|(_, line, _)| {
            let ok = line.len() <= MAX_LINE_BYTES;
            if !ok {
                out.first_error.get_or_insert_with(|| {
                    format!("stream {si} value {vi}: line too long ({} bytes, max {MAX_LINE_BYTES})", line.len())
                });
            }
            vi += 1;
            ok
        });
        out.ignored += before - entries.len();
        out.streams.push(ValidStream { labels, entries });
    }
    Ok(out)
}

/// An entry's structured metadata, names sorted.
pub type Meta<'b> = Option<Vec<(&'b str, &'b str)>>;

/// Structured metadata names follow the label name rules.
fn check_metadata<'b>(pairs: &'b LabelPairs<'_>) -> Result<Vec<(&'b str, &'b str)>, String> {
    let mut out: Vec<(&str, &str)> = Vec::with_capacity(pairs.0.len());
    for (k, v) in &pairs.0 {
        if !crate::util::is_valid_label_name(k) {
            return Err(format!("structured metadata name {:?} is invalid (must match [a-zA-Z_][a-zA-Z0-9_]*)", &**k));
        }
        out.push((k, v));
    }
    out.sort_unstable();
    Ok(out)
}

#[cfg(test)]
mod tests {
    use std::borrow::Cow;

    use super::*;
    use crate::lokipush::parse;

    #[test]
    fn parses_borrowed_and_metadata() {
        let body = br#"{"streams":[{"stream":{"job":"a"},"values":[["1","x"],["2","y\n",{"trace_id":"t"}]]}]}"#;
        let b = parse(body).unwrap();
        assert!(matches!(b.streams[0].values[0].line.0, Cow::Borrowed("x")));
        assert_eq!(&*b.streams[0].values[1].line, "y\n");
        let v = validate(&b).unwrap();
        assert_eq!(v.streams[0].entries, vec![(1, "x", None), (2, "y\n", Some(vec![("trace_id", "t")]))]);
        assert!(v.first_error.is_none());
    }

    #[test]
    fn bad_timestamp_refuses_everything() {
        let b = parse(br#"{"streams":[{"stream":{"job":"a"},"values":[["1","x"],["2","y"],["3","z"],["12a","w"]]}]}"#)
            .unwrap();
        let e = validate(&b).unwrap_err();
        assert_eq!(e.0, r#"stream 0 value 3: timestamp "12a" is not decimal nanoseconds"#);
    }

    #[test]
    fn bad_stream_is_skipped_but_others_kept() {
        let long = "x".repeat(MAX_LINE_BYTES + 1);
        let json = format!(
            r#"{{"streams":[{{"stream":{{"bad-name":"a"}},"values":[["1","x"]]}},{{"stream":{{"job":"b","e":""}},"values":[["1","ok"],["2","{long}"]]}}]}}"#
        );
        let b = parse(json.as_bytes()).unwrap();
        let v = validate(&b).unwrap();
        assert_eq!(
            v.first_error.as_deref(),
            Some(r#"stream 0: label name "bad-name" is invalid (must match [a-zA-Z_][a-zA-Z0-9_]*)"#)
        );
        assert_eq!(v.streams.len(), 1);
        assert_eq!(v.streams[0].labels, vec![("job", "b")]);
        assert_eq!(v.streams[0].entries, vec![(1, "ok", None)]);
    }
}
