//! A JSON push body into structs that borrow from it.
//!
//! Shape errors (a JSON number as timestamp, no `streams`) refuse the
//! whole request. The structs borrow from the body wherever a JSON string
//! has no escapes, which keeps the null store (the benchmark receiver) cheap.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;

/// A push body as sent: `{"streams":[{"stream":{..},"values":[[ts,line],..]}]}`.
#[derive(Debug, Deserialize)]
pub struct PushBody<'a> {
    #[serde(borrow)]
    pub streams: Vec<PushStream<'a>>,
}

#[derive(Debug, Deserialize)]
pub struct PushStream<'a> {
    /// Missing: no labels (as Loki reads it; the label rules then speak).
    #[serde(borrow, default)]
    pub stream: LabelPairs<'a>,
    /// Missing: no entries.
    #[serde(borrow, default)]
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
