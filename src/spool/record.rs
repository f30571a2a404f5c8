//! One received line as the spool keeps it: a JSON object per line.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};

/// How a *mark* line begins: a line a source writes into its spool for
/// itself, in the same append (and fsync) as its records, such as where in
/// its input those records end (see `source/net/kafka/`). Readers skip marks.
pub const MARK_PREFIX: &[u8] = b"{\"tailship_mark\":";

/// True for a mark line (see [`MARK_PREFIX`]).
pub fn is_mark(line: &[u8]) -> bool {
    line.starts_with(MARK_PREFIX)
}

/// A received line: its time, tenant, labels, text and structured metadata.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Record<'a> {
    /// Unix nanoseconds.
    #[serde(rename = "t")]
    pub ts: i64,
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

impl<'a> Record<'a> {
    /// Appends this record, one line, to `out`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        // A struct of strings and integers always serializes.
        if serde_json::to_writer(&mut *out, self).is_ok() {
            out.push(b'\n');
        }
    }

    /// A record from one spool line (without its newline); `None` for the
    /// header line or a damaged one.
    pub fn decode(line: &'a [u8]) -> Option<Record<'a>> {
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
