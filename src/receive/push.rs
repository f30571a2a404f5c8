//! Decoding and validating a push body without building a JSON tree.
//!
//! Two phases, mirroring what Loki does:
//! 1. [`decode`] + [`parse`]: gzip (bounded) and JSON into borrowed structs.
//!    Shape errors (a JSON number as timestamp, a non-decimal timestamp, a
//!    missing field) refuse the whole request: nothing is stored.
//! 2. [`validate`]: per-stream and per-entry rules (label names, label counts
//!    and lengths, line length). A bad stream or entry is skipped and the first
//!    problem is reported, but the rest of the request is still stored.
//!
//! The structs borrow from the request body wherever the JSON string has no
//! escapes, which keeps the null store (the benchmark receiver) cheap.

use std::borrow::Cow;
use std::fmt;
use std::io::Read;

use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;

/// Longest line accepted, in bytes (Loki's default `max_line_size`).
pub const MAX_LINE_BYTES: usize = 262_144;
/// Most labels per stream (Loki's default).
pub const MAX_LABELS: usize = 15;
/// Longest label name and value (Loki's defaults).
pub const MAX_LABEL_NAME_LEN: usize = 1024;
pub const MAX_LABEL_VALUE_LEN: usize = 2048;

/// Why a body could not be turned into bytes of JSON.
#[derive(Debug, thiserror::Error)]
pub enum BodyError {
    #[error("request body is larger than {max} bytes after decompression")]
    TooLarge { max: usize },
    #[error("cannot decompress {encoding} body: {source}")]
    Corrupt { encoding: &'static str, source: std::io::Error },
    #[error("unsupported Content-Encoding {0:?}; use gzip, deflate or none")]
    UnsupportedEncoding(String),
}

/// Undoes `Content-Encoding`, reading at most `max` bytes of output.
pub fn decode<'a>(body: &'a [u8], encoding: Option<&str>, max: usize) -> Result<Cow<'a, [u8]>, BodyError> {
    let enc = encoding.map(|e| e.trim().to_ascii_lowercase()).unwrap_or_default();
    let (name, reader): (&'static str, Box<dyn Read + '_>) = match enc.as_str() {
        "" | "identity" => return Ok(Cow::Borrowed(body)),
        "gzip" | "x-gzip" => ("gzip", Box::new(flate2::read::MultiGzDecoder::new(body))),
        "deflate" => ("deflate", Box::new(flate2::read::ZlibDecoder::new(body))),
        _ => return Err(BodyError::UnsupportedEncoding(enc)),
    };
    let mut out = Vec::with_capacity(body.len().saturating_mul(4).min(max));
    // One byte more than allowed tells "exactly max" from "over max".
    reader
        .take(max as u64 + 1)
        .read_to_end(&mut out)
        .map_err(|source| BodyError::Corrupt { encoding: name, source })?;
    if out.len() > max {
        return Err(BodyError::TooLarge { max });
    }
    Ok(Cow::Owned(out))
}

/// A push body as sent: `{"streams":[{"stream":{..},"values":[[ts,line],..]}]}`.
#[derive(Debug, Deserialize)]
pub struct PushBody<'a> {
    #[serde(borrow)]
    pub streams: Vec<PushStream<'a>>,
}

#[derive(Debug, Deserialize)]
pub struct PushStream<'a> {
    #[serde(borrow)]
    pub stream: LabelPairs<'a>,
    #[serde(borrow)]
    pub values: Vec<PushEntry<'a>>,
}

/// A JSON object of string to string, in order, duplicates kept (so they can be refused).
#[derive(Debug, Default)]
pub struct LabelPairs<'a>(pub Vec<(Str<'a>, Str<'a>)>);

/// One `[ts, line]` or `[ts, line, {structured metadata}]`, the metadata
/// an object of string to string (kept, and returned by queries as labels
/// of the entry, as Loki 3 does).
#[derive(Debug)]
pub struct PushEntry<'a> {
    pub ts: Str<'a>,
    pub line: Str<'a>,
    pub metadata: Option<LabelPairs<'a>>,
}

/// A JSON string, borrowed from the body when it has no escapes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Str<'a>(pub Cow<'a, str>);

impl std::ops::Deref for Str<'_> {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

struct StrVisitor(&'static str);

impl<'de> Visitor<'de> for StrVisitor {
    type Value = Str<'de>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(self.0)
    }
    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(Str(Cow::Borrowed(v)))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Str(Cow::Owned(v.to_string())))
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
        Ok(Str(Cow::Owned(v)))
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Str<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_str(StrVisitor("a string"))
    }
}

/// A timestamp field: only a JSON string is accepted (a number is an error, as in Loki).
struct Ts<'a>(Str<'a>);

impl<'de: 'a, 'a> Deserialize<'de> for Ts<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_str(StrVisitor("a timestamp string of decimal Unix nanoseconds")).map(Ts)
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for LabelPairs<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = LabelPairs<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an object of label names to string values")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut pairs = Vec::with_capacity(map.size_hint().unwrap_or(4));
                while let Some(k) = map.next_key::<Str<'de>>()? {
                    let v = map.next_value::<Str<'de>>()?;
                    pairs.push((k, v));
                }
                Ok(LabelPairs(pairs))
            }
        }
        d.deserialize_map(V)
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for PushEntry<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = PushEntry<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a [timestamp, line] or [timestamp, line, {metadata}] list")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let ts = seq.next_element::<Ts<'de>>()?.ok_or_else(|| de::Error::invalid_length(0, &self))?;
                let line = seq.next_element::<Str<'de>>()?.ok_or_else(|| de::Error::invalid_length(1, &self))?;
                // Structured metadata (as tailship, Vector and Alloy send it).
                let metadata = seq.next_element::<LabelPairs<'de>>()?;
                if metadata.is_some() && seq.next_element::<IgnoredAny>()?.is_some() {
                    return Err(de::Error::invalid_length(4, &self));
                }
                Ok(PushEntry { ts: ts.0, line, metadata })
            }
        }
        d.deserialize_seq(V)
    }
}

/// A push body that cannot be used at all; nothing of it is stored.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct MalformedPush(pub String);

/// Parses JSON. On error, parses again tracking the path so the message says
/// where the problem is (the fast path stays free of that bookkeeping).
pub fn parse(json: &[u8]) -> Result<PushBody<'_>, MalformedPush> {
    // One SIMD check of the whole body lets the parser take it as text and
    // skip checking every string it borrows again.
    let parsed = match simdutf8::basic::from_utf8(json) {
        Ok(text) => serde_json::from_str::<PushBody>(text),
        Err(_) => serde_json::from_slice::<PushBody>(json),
    };
    match parsed {
        Ok(b) => Ok(b),
        Err(first) => {
            let mut de = serde_json::Deserializer::from_slice(json);
            match serde_path_to_error::deserialize::<_, PushBody>(&mut de) {
                Err(e) if e.path().iter().next().is_some() => {
                    Err(MalformedPush(format!("invalid push body at {}: {}", e.path(), e.inner())))
                }
                _ => Err(MalformedPush(format!("invalid push body: {first}"))),
            }
        }
    }
}

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

/// Reads a timestamp: decimal digits only, within i64 nanoseconds.
pub fn parse_ts(ts: &str) -> Option<i64> {
    if ts.is_empty() {
        return None;
    }
    let mut v: i64 = 0;
    for b in ts.bytes() {
        let d = b.wrapping_sub(b'0');
        if d > 9 {
            return None;
        }
        v = v.checked_mul(10)?.checked_add(i64::from(d))?;
    }
    Some(v)
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
        let labels = match check_labels(&s.stream) {
            Ok(l) => l,
            Err(msg) => {
                out.first_error.get_or_insert_with(|| format!("stream {si}: {msg}"));
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

/// Label rules; empty values are dropped (an empty label is no label, as in Prometheus).
fn check_labels<'b>(pairs: &'b LabelPairs<'_>) -> Result<Vec<(&'b str, &'b str)>, String> {
    let mut labels: Vec<(&str, &str)> = Vec::with_capacity(pairs.0.len());
    for (k, v) in &pairs.0 {
        if !crate::util::is_valid_label_name(k) {
            return Err(format!("label name {:?} is invalid (must match [a-zA-Z_][a-zA-Z0-9_]*)", &**k));
        }
        if k.len() > MAX_LABEL_NAME_LEN {
            return Err(format!("label name {:?}… is longer than {MAX_LABEL_NAME_LEN} bytes", &k[..32]));
        }
        if v.len() > MAX_LABEL_VALUE_LEN {
            return Err(format!("value of label {:?} is longer than {MAX_LABEL_VALUE_LEN} bytes", &**k));
        }
        if !v.is_empty() {
            labels.push((k, v));
        }
    }
    labels.sort_unstable();
    if let Some(w) = labels.windows(2).find(|w| w[0].0 == w[1].0) {
        return Err(format!("duplicate label name {:?}", w[0].0));
    }
    if labels.is_empty() {
        return Err("a stream needs at least one label with a non-empty value".to_string());
    }
    if labels.len() > MAX_LABELS {
        return Err(format!("{} labels, more than the {MAX_LABELS} allowed per stream", labels.len()));
    }
    Ok(labels)
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn shape_errors_name_the_place() {
        let e = parse(br#"{"streams":[{"stream":{"job":"a"},"values":[["1","x"],[5,"y"]]}]}"#).unwrap_err();
        assert!(e.0.contains("streams[0].values[1]"), "{e}");
        assert!(e.0.contains("timestamp string"), "{e}");
        let e = parse(br#"{"streams":[{"stream":{"job":1},"values":[]}]}"#).unwrap_err();
        assert!(e.0.contains("streams[0].stream"), "{e}");
        let e = parse(br#"{"streams":[{"stream":{"job":"a"},"values":[["1","x",{},4]]}]}"#).unwrap_err();
        assert!(e.0.contains("invalid length"), "{e}");
        assert!(parse(b"{").is_err());
        assert!(parse(br#"{"nope":1}"#).unwrap_err().0.contains("streams"));
    }

    #[test]
    fn timestamps_are_decimal_digits_within_i64() {
        assert_eq!(parse_ts("0"), Some(0));
        assert_eq!(parse_ts("1700000000123456789"), Some(1_700_000_000_123_456_789));
        assert_eq!(parse_ts("9223372036854775807"), Some(i64::MAX));
        for bad in ["", "9223372036854775808", "-1", "+1", "1.5", "1e9", " 1", "12a", "١٢"] {
            assert_eq!(parse_ts(bad), None, "{bad:?}");
        }
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

    #[test]
    fn gzip_is_bounded() {
        use std::io::Write;
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        enc.write_all(&vec![b'a'; 10_000]).unwrap();
        let gz = enc.finish().unwrap();
        assert_eq!(decode(&gz, Some("gzip"), 10_000).unwrap().len(), 10_000);
        assert!(matches!(decode(&gz, Some("gzip"), 9_999), Err(BodyError::TooLarge { .. })));
        assert!(matches!(decode(b"nope", Some("gzip"), 100), Err(BodyError::Corrupt { .. })));
        assert!(matches!(decode(b"x", Some("br"), 100), Err(BodyError::UnsupportedEncoding(_))));
        assert_eq!(&*decode(b"x", None, 100).unwrap(), b"x");
    }
}
