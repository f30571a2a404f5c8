//! The top level of a JSON line read without building it: each field's
//! name borrowed from the line, a string value borrowed unless it has
//! escapes, numbers and booleans written as text at once, only nested
//! objects and arrays built as values. A `json` stage whose expressions
//! are plain paths reads the line this way (fewer allocations per line
//! than a whole `serde_json::Value`), with the same results.

use std::borrow::Cow;
use std::fmt;

use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

/// The top-level fields of an object, in order, held inline when few.
pub struct Top<'a>(smallvec::SmallVec<[(&'a str, Field<'a>); 8]>);

impl<'a> Top<'a> {
    /// The value of `name` (the last one, as Go's decoder keeps it).
    pub fn get(&self, name: &str) -> Option<&Field<'a>> {
        self.0.iter().rev().find(|(k, _)| *k == name).map(|(_, v)| v)
    }
}

impl<'de> Deserialize<'de> for Top<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(TopVisitor)
    }
}

struct TopVisitor;

impl<'de> Visitor<'de> for TopVisitor {
    type Value = Top<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut out = smallvec::SmallVec::new();
        while let Some(k) = map.next_key::<&'de str>()? {
            out.push((k, map.next_value::<Field<'de>>()?));
        }
        Ok(Top(out))
    }
}

/// One top-level value.
pub enum Field<'a> {
    Str(Cow<'a, str>),
    /// A number or boolean, as `Value::to_string` writes it.
    Text(String),
    Null,
    Nested(Value),
}

/// A JSON object's top-level fields by name. Parsing fails on a line that
/// is not an object, and on one whose names have escapes (read it whole then).
pub fn parse(text: &str) -> Option<Top<'_>> {
    serde_json::from_str(text).ok()
}

impl Field<'_> {
    /// The extracted string of this value (`None`: null), as
    /// [`super::parse::json_text`] gives it.
    pub fn text(&self) -> Option<String> {
        match self {
            Field::Str(s) => Some(s.to_string()),
            Field::Text(t) => Some(t.clone()),
            Field::Null => None,
            Field::Nested(v) => super::parse::json_text(v),
        }
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Field<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(FieldVisitor)
    }
}

struct FieldVisitor;

impl<'de> Visitor<'de> for FieldVisitor {
    type Value = Field<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(Field::Str(Cow::Borrowed(v)))
    }

    fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Field::Str(Cow::Owned(v.to_string())))
    }

    fn visit_string<E>(self, v: String) -> Result<Self::Value, E> {
        Ok(Field::Str(Cow::Owned(v)))
    }

    fn visit_bool<E>(self, v: bool) -> Result<Self::Value, E> {
        Ok(Field::Text(v.to_string()))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Self::Value, E> {
        Ok(Field::Text(v.to_string()))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Self::Value, E> {
        Ok(Field::Text(v.to_string()))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Self::Value, E> {
        Ok(serde_json::Number::from_f64(v).map_or(Field::Null, |n| Field::Text(n.to_string())))
    }

    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(Field::Null)
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        Value::deserialize(serde::de::value::MapAccessDeserializer::new(map)).map(Field::Nested)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        Value::deserialize(serde::de::value::SeqAccessDeserializer::new(seq)).map(Field::Nested)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn top_level_values_read_as_the_whole_document_gives_them() {
        let line = r#"{"s":"a\"b","n":3.0,"i":-7,"b":true,"z":null,"o":{"x":[1, 2]}}"#;
        let top = parse(line).unwrap();
        let doc: Value = serde_json::from_str(line).unwrap_or(Value::Null);
        for k in ["s", "n", "i", "b", "z", "o"] {
            assert_eq!(top.get(k).and_then(Field::text), super::super::parse::json_text(&doc[k]), "{k}");
        }
        assert!(parse("[1]").is_none());
        assert!(parse(r#"{"a\u0062":1}"#).is_none(), "an escaped name: read whole");
    }
}
