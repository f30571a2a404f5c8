//! A batch's lines as they were read: each stream's entries point into the
//! chunk texts they came in (held until the batch is encoded), and the JSON
//! is written once, when the pusher encodes the body (see `client::body`).
//! Lengths are known exactly beforehand, so the body's one buffer never grows.

use std::sync::Arc;

use crate::client::body::Encode;
use crate::client::json::{escape_json_into, escaped_len};
use crate::queue::{Entry, StreamRef};

/// A chunk's text, shared by the batches holding its lines; the buffer goes
/// back to [`crate::pool::CHUNK_TEXT`] when the last one is encoded.
pub(super) struct Text(String);

impl Text {
    pub(super) fn new(buf: String) -> Arc<Self> {
        Arc::new(Self(buf))
    }

    /// Entry `e`'s line.
    pub(super) fn line(&self, e: &Entry) -> &str {
        // Entries are only made by `SourceStages::process`, at char boundaries.
        self.0.get(e.start as usize..(e.start + e.len) as usize).unwrap_or_default()
    }
}

impl Drop for Text {
    fn drop(&mut self) {
        crate::pool::CHUNK_TEXT.give(std::mem::take(&mut self.0).into_bytes());
    }
}

/// One line of a batch: where its text sits, and its timestamp.
#[derive(Clone, Copy)]
struct Value {
    /// Index of the chunk text in [`Streams::texts`].
    text: u32,
    start: u32,
    len: u32,
    /// Length of the structured metadata (a JSON object) after the line; 0: none.
    meta: u32,
    ts: i64,
}

const FIRST_STREAM: &[u8] = b"{\"streams\":[{\"stream\":";
const NEXT_STREAM: &[u8] = b",{\"stream\":";
const VALUES: &[u8] = b",\"values\":[";
const END_STREAM: &[u8] = b"]}";
const END_BODY: &[u8] = b"]}";

/// A tenant's batch: its streams' lines, in the order they came.
#[derive(Default)]
pub(super) struct Streams {
    texts: Vec<Arc<Text>>,
    streams: Vec<(StreamRef, Vec<Value>)>,
    /// The encoded body's length so far, without the closing brackets.
    len: usize,
}

impl Streams {
    /// Adds a stream; returns its index and the bytes its framing adds.
    pub(super) fn add_stream(&mut self, stream: &StreamRef) -> (usize, usize) {
        let open = if self.streams.is_empty() { FIRST_STREAM.len() } else { NEXT_STREAM.len() };
        let added = open + stream.labels_json.len() + VALUES.len() + END_STREAM.len();
        self.len += added;
        self.streams.push((stream.clone(), Vec::new()));
        (self.streams.len() - 1, added)
    }

    /// The index of `text` among the batch's texts, adding it when it is not the last one added.
    pub(super) fn text_index(&mut self, text: &Arc<Text>) -> u32 {
        if !self.texts.last().is_some_and(|t| Arc::ptr_eq(t, text)) {
            self.texts.push(text.clone());
        }
        (self.texts.len() - 1) as u32
    }

    /// Adds entry `e` of text `text` (`line` is its line) to stream
    /// `stream` at time `ts`; returns the bytes it adds to the body.
    pub(super) fn push(&mut self, stream: usize, text: u32, e: &Entry, line: &str, ts: i64) -> usize {
        let values = &mut self.streams[stream].1;
        let comma = usize::from(!values.is_empty());
        let digits = digits(ts.max(0) as u64);
        // `["ts","line"]` or `["ts","line",{meta}]`.
        let framing = if e.meta > 0 { 8 + e.meta as usize } else { 7 };
        let n = comma + digits + framing + escaped_len(line);
        values.push(Value { text, start: e.start, len: line.len() as u32, meta: e.meta, ts });
        self.len += n;
        n
    }
}

/// Decimal digits of `v`.
fn digits(v: u64) -> usize {
    v.checked_ilog10().map_or(1, |d| d as usize + 1)
}

impl Encode for Streams {
    fn encoded_len(&self) -> usize {
        if self.streams.is_empty() {
            0
        } else {
            self.len + END_BODY.len()
        }
    }

    fn encode(&self, out: &mut Vec<u8>, piece: usize, flush: &mut dyn FnMut(&mut Vec<u8>)) {
        let mut ts_digits = TsDigits::new();
        for (i, (stream, values)) in self.streams.iter().enumerate() {
            out.extend_from_slice(if i == 0 { FIRST_STREAM } else { NEXT_STREAM });
            out.extend_from_slice(stream.labels_json.as_bytes());
            out.extend_from_slice(VALUES);
            for (k, v) in values.iter().enumerate() {
                let text = self.texts[v.text as usize].0.as_str();
                let (start, end) = (v.start as usize, (v.start + v.len) as usize);
                out.extend_from_slice(if k == 0 { b"[\"" } else { b",[\"" });
                out.extend_from_slice(ts_digits.format(v.ts.max(0) as u64));
                out.extend_from_slice(b"\",\"");
                escape_json_into(out, text.get(start..end).unwrap_or_default());
                if v.meta > 0 {
                    // Structured metadata: `[ts, line, {"name": "value"}]`.
                    out.extend_from_slice(b"\",");
                    out.extend_from_slice(text.as_bytes().get(end..end + v.meta as usize).unwrap_or_default());
                    out.push(b']');
                } else {
                    out.extend_from_slice(b"\"]");
                }
                if out.len() >= piece {
                    flush(out);
                }
            }
            out.extend_from_slice(END_STREAM);
        }
        if !self.streams.is_empty() {
            out.extend_from_slice(END_BODY);
        }
        if !out.is_empty() && piece != usize::MAX {
            flush(out);
        }
    }
}

/// Decimal timestamps. Lines of one read share the read time, bumped by 1 ns
/// each to keep them in order, so most timestamps are the previous one plus
/// one: those are made by incrementing the previous digits in place instead
/// of formatting all nineteen again.
struct TsDigits {
    /// The last value formatted, `None` before the first.
    last: Option<u64>,
    /// Its digits, right-aligned: `buf[start..]`.
    buf: [u8; 20],
    start: usize,
}

impl TsDigits {
    fn new() -> Self {
        Self { last: None, buf: [b'0'; 20], start: 19 }
    }

    #[inline]
    fn format(&mut self, v: u64) -> &[u8] {
        if self.last.is_some_and(|last| last.checked_add(1) == Some(v)) {
            let mut i = self.buf.len() - 1;
            loop {
                if self.buf[i] != b'9' {
                    self.buf[i] += 1;
                    self.last = Some(v);
                    return &self.buf[self.start..];
                }
                self.buf[i] = b'0';
                if i == self.start {
                    // 99..9 + 1 gains a digit: format it whole.
                    break;
                }
                i -= 1;
            }
        }
        let mut b = itoa::Buffer::new();
        let digits = b.format(v).as_bytes();
        self.start = self.buf.len() - digits.len();
        self.buf[self.start..].copy_from_slice(digits);
        self.last = Some(v);
        &self.buf[self.start..]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stream(labels_json: &str) -> StreamRef {
        Arc::new(crate::queue::Stream { tenant: None, labels: Vec::new(), labels_json: labels_json.to_string() })
    }

    /// Adds `line` (with `meta`, if any) to text `buf`: its entry, for stream `s`.
    fn add(buf: &mut String, s: usize, line: &str, meta: Option<&str>, ts: i64) -> (usize, Entry) {
        let start = buf.len() as u32;
        buf.push_str(line);
        buf.push_str(meta.unwrap_or(""));
        let e = Entry {
            stream: 0,
            ts,
            assigned_ts: true,
            start,
            len: line.len() as u32,
            meta: meta.map_or(0, |m| m.len() as u32),
            skip: false,
        };
        (s, e)
    }

    #[test]
    fn a_body_is_encoded_to_its_exact_length_whole_or_in_pieces() {
        let mut b = Streams::default();
        assert_eq!(b.encoded_len(), 0);
        let mut buf = String::new();
        let (a, _) = b.add_stream(&stream(r#"{"job":"a"}"#));
        let (c, _) = b.add_stream(&stream(r#"{"job":"c"}"#));
        let lines = [
            (a, "plain", None, 1_700_000_000_000_000_000i64),
            (c, "quote \" and \\ back\n\u{1}", None, 9),
            (a, "with metadata", Some(r#"{"trace_id":"x"}"#), 1_700_000_000_000_000_001),
            (c, "üñí €", None, 10),
            (a, "", None, 0),
        ];
        let entries: Vec<_> = lines.iter().map(|(s, l, m, ts)| (add(&mut buf, *s, l, *m, *ts), *ts)).collect();
        let text = Text::new(buf);
        let mut added = 0;
        for ((s, e), ts) in &entries {
            let t = b.text_index(&text);
            added += b.push(*s, t, e, text.line(e), *ts);
        }
        assert!(added > 0);
        let mut whole = Vec::new();
        b.encode(&mut whole, usize::MAX, &mut |_| panic!("no piece of a whole body"));
        assert_eq!(whole.len(), b.encoded_len(), "{}", String::from_utf8_lossy(&whole));
        let v: serde_json::Value = serde_json::from_slice(&whole).unwrap();
        assert_eq!(v["streams"][0]["stream"]["job"], "a");
        assert_eq!(v["streams"][0]["values"][1][2]["trace_id"], "x");
        assert_eq!(v["streams"][0]["values"][0][0], "1700000000000000000");
        assert_eq!(v["streams"][1]["values"][0][1], "quote \" and \\ back\n\u{1}");
        assert_eq!(v["streams"][1]["values"][1][1], "üñí €");
        let mut pieces = Vec::new();
        let mut out = Vec::new();
        b.encode(&mut out, 7, &mut |p| {
            pieces.extend_from_slice(p);
            p.clear();
        });
        assert!(out.is_empty(), "the last piece is handed on too");
        assert_eq!(pieces, whole);
    }

    #[test]
    fn timestamp_digits_match_plain_formatting_across_carries_and_jumps() {
        let mut d = TsDigits::new();
        let mut check = |v: u64| {
            let ours = String::from_utf8(d.format(v).to_vec()).unwrap();
            assert_eq!(ours, v.to_string());
        };
        // Runs of +1 through every kind of carry, and jumps between them.
        for start in [0u64, 7, 95, 998, 1_700_000_000_123_456_789, 1_699_999_999_999_999_990, u64::MAX - 3] {
            for k in 0..=12u64 {
                if let Some(v) = start.checked_add(k) {
                    check(v);
                }
            }
        }
        for v in [5u64, 4, 10, 9_999, 10_000, 10_001, 3, 4] {
            check(v);
        }
    }
}
