//! The Loki push format, decoded once: what `POST /loki/api/v1/push` carries
//! and the rules the service holds it to. The embedded store (`receive`),
//! the `loki_push` source (a relay) and the tests' recorder all read a push
//! body through here.
//!
//! - [`body`]: `Content-Encoding` undone (gzip, deflate), bounded.
//! - [`json`]: a JSON body into structs that borrow from it
//!   (`{"streams":[{"stream":{..},"values":[[ts,line,{metadata}],..]}]}`).
//! - [`proto`]: a protobuf body (`logproto.PushRequest`, snappy), as
//!   Promtail, Alloy and Fluent Bit send it; its label sets are selector
//!   text, read by the one LogQL parser (so this module sits beside `logql`).
//! - the label rules ([`check_label`], [`check_labels`], [`stream_labels`])
//!   and timestamps ([`parse_ts`]).
//! - [`validate`]: Loki's per-stream and per-entry rules over a whole body
//!   (a bad stream is skipped, the first problem reported).

pub mod body;
pub mod json;
pub mod proto;
pub mod validate;

pub use body::{decode, BodyError};
pub use json::{parse, LabelPairs, MalformedPush, PushBody, PushEntry, PushStream, Str};
pub use validate::{validate, Meta, ValidStream, Validated};

/// Longest line accepted, in bytes (Loki's default `max_line_size`).
pub const MAX_LINE_BYTES: usize = 262_144;
/// Most labels per stream (Loki's `max_label_names_per_series`).
pub const MAX_LABELS: usize = 15;
/// Longest label name and value (Loki's `max_label_name_length`, `max_label_value_length`).
pub const MAX_LABEL_NAME_LEN: usize = 1024;
pub const MAX_LABEL_VALUE_LEN: usize = 2048;

/// Why a stream's labels are refused (Loki answers 400 to each).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LabelError {
    #[error("label name {0:?} is invalid (must match [a-zA-Z_][a-zA-Z0-9_]*)")]
    InvalidName(String),
    /// The name's first 32 bytes.
    #[error("label name {0:?}… is longer than {MAX_LABEL_NAME_LEN} bytes")]
    NameTooLong(String),
    #[error("value of label {0:?} is longer than {MAX_LABEL_VALUE_LEN} bytes")]
    ValueTooLong(String),
    #[error("duplicate label name {0:?}")]
    Duplicate(String),
    #[error("a stream needs at least one label with a non-empty value")]
    NoLabels,
    #[error("{0} labels, more than the {MAX_LABELS} allowed per stream")]
    TooMany(usize),
}

impl LabelError {
    /// What kind of problem it is, in a few words.
    pub fn kind(&self) -> &'static str {
        match self {
            LabelError::InvalidName(_) => "invalid label name",
            LabelError::NameTooLong(_) => "label name too long",
            LabelError::ValueTooLong(_) => "label value too long",
            LabelError::Duplicate(_) => "duplicate label name",
            LabelError::NoLabels => "no labels",
            LabelError::TooMany(_) => "too many labels",
        }
    }
}

/// One label's rules: a valid name, name and value within Loki's lengths.
pub fn check_label(name: &str, value: &str) -> Result<(), LabelError> {
    if !crate::util::is_valid_label_name(name) {
        return Err(LabelError::InvalidName(name.to_string()));
    }
    if name.len() > MAX_LABEL_NAME_LEN {
        return Err(LabelError::NameTooLong(name[..32].to_string()));
    }
    if value.len() > MAX_LABEL_VALUE_LEN {
        return Err(LabelError::ValueTooLong(name.to_string()));
    }
    Ok(())
}

/// Each label's rules and the count, for labels taken as they are (a
/// relay's: what it acknowledges it can deliver).
pub fn check_labels<'a>(labels: impl IntoIterator<Item = (&'a str, &'a str)>) -> Result<(), LabelError> {
    let mut n = 0;
    for (name, value) in labels {
        n += 1;
        check_label(name, value)?;
    }
    if n > MAX_LABELS {
        return Err(LabelError::TooMany(n));
    }
    Ok(())
}

/// A stream's labels as the service keeps them: each label's rules, empty
/// values dropped (an empty label is no label, as in Prometheus), sorted,
/// no name twice, at least one, at most [`MAX_LABELS`].
pub fn stream_labels<'b>(pairs: &'b LabelPairs<'_>) -> Result<Vec<(&'b str, &'b str)>, LabelError> {
    let mut labels: Vec<(&str, &str)> = Vec::with_capacity(pairs.0.len());
    for (k, v) in &pairs.0 {
        check_label(k, v)?;
        if !v.is_empty() {
            labels.push((k, v));
        }
    }
    labels.sort_unstable();
    if let Some(w) = labels.windows(2).find(|w| w[0].0 == w[1].0) {
        return Err(LabelError::Duplicate(w[0].0.to_string()));
    }
    if labels.is_empty() {
        return Err(LabelError::NoLabels);
    }
    if labels.len() > MAX_LABELS {
        return Err(LabelError::TooMany(labels.len()));
    }
    Ok(labels)
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

#[cfg(test)]
mod tests {
    use super::*;

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
    fn labels_as_taken_and_as_kept() {
        assert_eq!(check_labels([("a-b", "x")]), Err(LabelError::InvalidName("a-b".into())));
        let long = "v".repeat(MAX_LABEL_VALUE_LEN + 1);
        assert_eq!(check_labels([("a", long.as_str())]), Err(LabelError::ValueTooLong("a".into())));
        let name = "n".repeat(MAX_LABEL_NAME_LEN + 1);
        assert!(matches!(check_labels([(name.as_str(), "v")]), Err(LabelError::NameTooLong(_))));
        let names: Vec<String> = (0..16).map(|i| format!("l{i}")).collect();
        assert_eq!(check_labels(names.iter().map(|n| (n.as_str(), ""))), Err(LabelError::TooMany(16)));
        // Taken as they are, an empty value or none at all passes; kept, it does not.
        assert_eq!(check_labels([("a", "")]), Ok(()));
        let pairs = |v: &[(&'static str, &'static str)]| {
            LabelPairs(v.iter().map(|(k, v)| (Str((*k).into()), Str((*v).into()))).collect())
        };
        assert_eq!(stream_labels(&pairs(&[("a", "")])), Err(LabelError::NoLabels));
        assert_eq!(stream_labels(&pairs(&[("b", "2"), ("a", "1"), ("c", "")])), Ok(vec![("a", "1"), ("b", "2")]));
        assert_eq!(stream_labels(&pairs(&[("a", "1"), ("a", "2")])), Err(LabelError::Duplicate("a".into())));
    }
}
