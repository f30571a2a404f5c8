//! One received line as the spool keeps it: a JSON object per line.
//!
//! A record names its stream one of two ways: inline (`"n"` tenant and
//! `"l"` labels on the record itself, what a receiver of one message per
//! stream writes), or by reference (`"r"`: the id of a *stream line*
//! written earlier in the same segment, see [`StreamDef`]), so that a
//! request of many lines of one stream costs its labels once on disk and
//! in memory. A stream line's id is valid until another stream line of the
//! same id follows it; a reader that starts in the middle of a segment
//! first reads the stream lines before its offset.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};

/// How a *mark* line begins: a line a source writes into its spool for
/// itself, in the same append (and fsync) as its records, such as where in
/// its input those records end (see `source/net/kafka/`). Readers skip marks.
pub const MARK_PREFIX: &[u8] = b"{\"tailship_mark\":";

/// How a stream line (see [`StreamDef`]) begins.
pub const STREAM_PREFIX: &[u8] = b"{\"d\":";

/// True for a mark line (see [`MARK_PREFIX`]).
pub fn is_mark(line: &[u8]) -> bool {
    line.starts_with(MARK_PREFIX)
}

/// True for a stream line (see [`StreamDef`]).
pub fn is_stream(line: &[u8]) -> bool {
    line.starts_with(STREAM_PREFIX)
}

/// A received line: its time, tenant, labels, text and structured metadata.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Record<'a> {
    /// Unix nanoseconds.
    #[serde(rename = "t")]
    pub ts: i64,
    /// The stream line this record belongs to (then `tenant` and `labels` are empty).
    #[serde(rename = "r", default, skip_serializing_if = "Option::is_none")]
    pub stream: Option<u32>,
    /// The sender's tenant (or the one the source sets); none: the client's.
    #[serde(rename = "n", default, skip_serializing_if = "Option::is_none", borrow)]
    pub tenant: Option<Cow<'a, str>>,
    #[serde(rename = "l", default, skip_serializing_if = "Vec::is_empty", borrow)]
    pub labels: Vec<(Cow<'a, str>, Cow<'a, str>)>,
    #[serde(rename = "m", borrow)]
    pub line: Cow<'a, str>,
    #[serde(rename = "s", default, skip_serializing_if = "Vec::is_empty", borrow)]
    pub metadata: Vec<(Cow<'a, str>, Cow<'a, str>)>,
}

/// A stream line: the tenant and labels of the records that refer to `id`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StreamDef<'a> {
    #[serde(rename = "d")]
    pub id: u32,
    #[serde(rename = "n", default, skip_serializing_if = "Option::is_none", borrow)]
    pub tenant: Option<Cow<'a, str>>,
    #[serde(rename = "l", default, borrow)]
    pub labels: Vec<(Cow<'a, str>, Cow<'a, str>)>,
}

impl<'a> StreamDef<'a> {
    /// Appends this stream line to `out`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        // A struct of strings and integers always serializes.
        if serde_json::to_writer(&mut *out, self).is_ok() {
            out.push(b'\n');
        }
    }

    /// A stream line (without its newline); `None` for anything else.
    pub fn decode(line: &'a [u8]) -> Option<StreamDef<'a>> {
        if !is_stream(line) {
            return None;
        }
        serde_json::from_slice(line).ok()
    }

    /// The same, owning its strings.
    pub fn into_owned(self) -> StreamDef<'static> {
        let own = |v: Vec<(Cow<'a, str>, Cow<'a, str>)>| {
            v.into_iter().map(|(k, v)| (Cow::Owned(k.into_owned()), Cow::Owned(v.into_owned()))).collect()
        };
        StreamDef { id: self.id, tenant: self.tenant.map(|t| Cow::Owned(t.into_owned())), labels: own(self.labels) }
    }
}

impl<'a> Record<'a> {
    /// Appends this record, one line, to `out`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        // A struct of strings and integers always serializes.
        if serde_json::to_writer(&mut *out, self).is_ok() {
            out.push(b'\n');
        }
    }

    /// A record from one spool line (without its newline); `None` for the
    /// header line, a stream line or a damaged one.
    pub fn decode(line: &'a [u8]) -> Option<Record<'a>> {
        if is_stream(line) {
            return None;
        }
        serde_json::from_slice(line).ok()
    }

    /// The structured metadata as the JSON object a chunk carries.
    pub fn metadata_json(&self) -> Option<String> {
        if self.metadata.is_empty() {
            return None;
        }
        let map: serde_json::Map<String, serde_json::Value> =
            self.metadata.iter().map(|(k, v)| (k.to_string(), serde_json::Value::String(v.to_string()))).collect();
        Some(serde_json::Value::Object(map).to_string())
    }
}

/// The records of spool lines, each with its stream line's tenant and labels (for tests).
#[cfg(test)]
pub fn resolved(encoded: &[u8]) -> Vec<Record<'_>> {
    let mut defs = std::collections::HashMap::new();
    let mut out = Vec::new();
    for l in encoded.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
        if let Some(d) = StreamDef::decode(l) {
            defs.insert(d.id, d);
            continue;
        }
        let Some(mut r) = Record::decode(l) else { continue };
        if let Some(d) = r.stream.and_then(|id| defs.get(&id)) {
            r.tenant = d.tenant.clone();
            r.labels = d.labels.clone();
        }
        out.push(r);
    }
    out
}
