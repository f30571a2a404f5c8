//! One journal entry as `journalctl --output=json` prints it: one JSON object
//! per line, every value a string, except that a value that is not printable
//! UTF-8 (binary data, control characters) is an array of byte values, and a
//! field that occurs more than once in an entry is an array of its values.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, Deserializer, SeqAccess, Visitor};
use serde::Deserialize;

use crate::config::UnitLabel;

/// A field's value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Field {
    Text(String),
    /// journalctl's form of a value that is not printable UTF-8.
    Bytes(Vec<u8>),
    /// A field set more than once in one entry: its values in order.
    Many(Vec<Field>),
    /// A value journalctl left out (over its size limit without `--all`).
    Null,
    /// One element of a byte array (only inside [`Field::Bytes`] while parsing).
    Byte(u8),
}

impl Field {
    /// The value's bytes (the first value of a field set more than once);
    /// `None` for a null value. The flag is true when journalctl gave it as
    /// a byte array.
    pub fn bytes(&self) -> Option<(Cow<'_, [u8]>, bool)> {
        match self {
            Field::Text(s) => Some((Cow::Borrowed(s.as_bytes()), false)),
            Field::Bytes(b) => Some((Cow::Borrowed(b), true)),
            Field::Many(v) => v.iter().find_map(Field::bytes),
            Field::Null => None,
            Field::Byte(b) => Some((Cow::Owned(vec![*b]), true)),
        }
    }

    /// The value as text, invalid UTF-8 replaced; `None` for null or empty.
    pub fn text(&self) -> Option<Cow<'_, str>> {
        let (b, _) = self.bytes()?;
        if b.is_empty() {
            return None;
        }
        Some(match b {
            Cow::Borrowed(b) => String::from_utf8_lossy(b),
            Cow::Owned(b) => Cow::Owned(String::from_utf8_lossy(&b).into_owned()),
        })
    }
}

impl<'de> Deserialize<'de> for Field {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(FieldVisitor)
    }
}

struct FieldVisitor;

impl<'de> Visitor<'de> for FieldVisitor {
    type Value = Field;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string, an array of bytes, an array of values, or null")
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Field, E> {
        Ok(Field::Text(v.to_owned()))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Field, E> {
        Ok(Field::Text(v))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Field, E> {
        u8::try_from(v).map(Field::Byte).map_err(|_| E::custom(format!("byte value {v} out of range")))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Field, E> {
        u8::try_from(v).map(Field::Byte).map_err(|_| E::custom(format!("byte value {v} out of range")))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Field, E> {
        Ok(Field::Null)
    }

    fn visit_none<E: de::Error>(self) -> Result<Field, E> {
        Ok(Field::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Field, A::Error> {
        let mut bytes = Vec::new();
        let mut values = Vec::new();
        while let Some(item) = seq.next_element::<Field>()? {
            match item {
                Field::Byte(b) => bytes.push(b),
                other => values.push(other),
            }
        }
        Ok(if values.is_empty() { Field::Bytes(bytes) } else { Field::Many(values) })
    }
}

/// The fields of an entry the journal source uses (journalctl is asked for
/// these only, see `command`).
#[derive(Debug, Default, Deserialize)]
pub struct RawEntry {
    #[serde(rename = "__CURSOR")]
    pub cursor: Option<Field>,
    #[serde(rename = "__REALTIME_TIMESTAMP")]
    pub realtime: Option<Field>,
    #[serde(rename = "MESSAGE")]
    pub message: Option<Field>,
    #[serde(rename = "PRIORITY")]
    pub priority: Option<Field>,
    #[serde(rename = "_SYSTEMD_UNIT")]
    pub unit: Option<Field>,
    #[serde(rename = "SYSLOG_IDENTIFIER")]
    pub identifier: Option<Field>,
    #[serde(rename = "_HOSTNAME")]
    pub hostname: Option<Field>,
}

/// The fields journalctl is asked to print (`--output-fields`); it always
/// adds `__CURSOR`, `__REALTIME_TIMESTAMP` and a few others of its own.
pub const OUTPUT_FIELDS: &str = "MESSAGE,PRIORITY,_SYSTEMD_UNIT,SYSLOG_IDENTIFIER,_HOSTNAME";

/// The entry's address fields: journalctl prints them with every entry;
/// Promtail 3.6's journal reader puts none of them among an entry's fields.
pub const ADDRESS_FIELDS: &[&str] = &["__CURSOR", "__REALTIME_TIMESTAMP", "__MONOTONIC_TIMESTAMP"];

/// Whether journalctl's field `k` is one of the entry's fields: never its
/// own `__SEQNUM` and `__SEQNUM_ID` (Promtail's reader has no such fields),
/// the address fields only with `address`.
pub fn is_entry_field(k: &str, address: bool) -> bool {
    k != "__SEQNUM" && k != "__SEQNUM_ID" && (address || !ADDRESS_FIELDS.contains(&k))
}

/// The whole entry as Promtail's `journal.json` ships it: a JSON object of
/// every field as a string (a field set more than once: its last value, as
/// Promtail's journal reader keeps; bytes as text, invalid UTF-8 replaced),
/// keys sorted and `<`, `>`, `&` escaped as Go's encoder writes them. The
/// fields are those of [`is_entry_field`].
pub fn whole_entry_json(line: &[u8], address: bool) -> Result<String, serde_json::Error> {
    fn last(f: &Field) -> Option<Vec<u8>> {
        match f {
            Field::Many(v) => v.iter().rev().find_map(last),
            Field::Null => None,
            other => other.bytes().map(|(b, _)| b.into_owned()),
        }
    }
    let fields: std::collections::BTreeMap<String, Field> = serde_json::from_slice(line)?;
    let mut out = String::with_capacity(line.len());
    out.push('{');
    for (k, v) in fields.iter().filter(|(k, _)| is_entry_field(k, address)) {
        let Some(value) = last(v) else { continue };
        if out.len() > 1 {
            out.push(',');
        }
        go_json_string(k.as_bytes(), &mut out);
        out.push(':');
        go_json_string(&value, &mut out);
    }
    out.push('}');
    Ok(out)
}

/// `bytes` as a JSON string the way Go's encoder (and the jsoniter Promtail
/// uses, compatible with it) writes one: `"` and `\` escaped, `\n`, `\r`
/// and `\t` short, other control characters as `\u00xx`, `<`, `>`, `&`,
/// U+2028 and U+2029 as `\u....`, and each byte that is not UTF-8 as the
/// six characters `\ufffd`.
fn go_json_string(bytes: &[u8], out: &mut String) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.push('"');
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            match c {
                '"' => out.push_str("\\\""),
                '\\' => out.push_str("\\\\"),
                '\n' => out.push_str("\\n"),
                '\r' => out.push_str("\\r"),
                '\t' => out.push_str("\\t"),
                '<' | '>' | '&' | '\u{2028}' | '\u{2029}' => out.push_str(&format!("\\u{:04x}", c as u32)),
                c if (c as u32) < 0x20 => {
                    out.push_str("\\u00");
                    out.push(HEX[(c as usize) >> 4] as char);
                    out.push(HEX[(c as usize) & 0xf] as char);
                }
                c => out.push(c),
            }
        }
        for _ in chunk.invalid() {
            out.push_str("\\ufffd");
        }
    }
    out.push('"');
}

/// The `level` label of a `PRIORITY`, as Promtail's
/// `__journal_priority_keyword`: the syslog name of 0 to 7, another value as
/// it is.
pub fn priority_keyword(priority: &str) -> Cow<'_, str> {
    match level_name(priority) {
        Some(name) if priority.len() == 1 => Cow::Borrowed(name),
        _ => Cow::Borrowed(priority),
    }
}

/// The syslog name of a `PRIORITY` (0 to 7).
pub fn level_name(priority: &str) -> Option<&'static str> {
    Some(match priority.trim() {
        "0" => "emerg",
        "1" => "alert",
        "2" => "crit",
        "3" => "error",
        "4" => "warning",
        "5" => "notice",
        "6" => "info",
        "7" => "debug",
        _ => return None,
    })
}

impl RawEntry {
    /// Parses one line of journalctl's JSON output.
    pub fn parse(line: &[u8]) -> Result<Self, serde_json::Error> {
        serde_json::from_slice(line)
    }

    /// `__CURSOR`, the entry's position in the journal.
    pub fn cursor(&self) -> Option<String> {
        self.cursor.as_ref().and_then(Field::text).map(Cow::into_owned)
    }

    /// `__REALTIME_TIMESTAMP` (microseconds) in Unix nanoseconds.
    pub fn timestamp_ns(&self) -> Option<i64> {
        let us: i64 = self.realtime.as_ref()?.text()?.trim().parse().ok()?;
        us.checked_mul(1000)
    }

    /// The `unit` label: `_SYSTEMD_UNIT`, else `SYSLOG_IDENTIFIER`.
    pub fn unit(&self) -> Option<Cow<'_, str>> {
        self.unit_by(UnitLabel::UnitOrIdentifier)
    }

    /// The `unit` label as `how` says.
    pub fn unit_by(&self, how: UnitLabel) -> Option<Cow<'_, str>> {
        let unit = || self.unit.as_ref().and_then(Field::text);
        match how {
            UnitLabel::UnitOrIdentifier => unit().or_else(|| self.identifier.as_ref().and_then(Field::text)),
            UnitLabel::SystemdUnit => unit(),
            UnitLabel::None => None,
        }
    }

    /// The `level` label, from `PRIORITY` (see [`priority_keyword`]).
    pub fn level(&self) -> Option<String> {
        Some(priority_keyword(&self.priority.as_ref()?.text()?).into_owned())
    }

    /// `_HOSTNAME`: the host that wrote the entry.
    pub fn host(&self) -> Option<Cow<'_, str>> {
        self.hostname.as_ref().and_then(Field::text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_binary_repeated_and_null_values_parse() {
        let line = br#"{"__CURSOR":"s=1;i=2","__REALTIME_TIMESTAMP":"1700000000000123","MESSAGE":[98,105,110,255,0],"PRIORITY":"3","SYSLOG_IDENTIFIER":["cron","CRON"],"_HOSTNAME":null,"_BOOT_ID":"x"}"#;
        let e = RawEntry::parse(line).unwrap();
        assert_eq!(e.cursor().as_deref(), Some("s=1;i=2"));
        assert_eq!(e.timestamp_ns(), Some(1_700_000_000_000_123_000));
        let (msg, binary) = e.message.as_ref().unwrap().bytes().unwrap();
        assert_eq!((&*msg, binary), (&b"bin\xff\x00"[..], true));
        assert_eq!(e.level().as_deref(), Some("error"));
        assert_eq!(e.unit().as_deref(), Some("cron"), "the first of a repeated field");
        assert_eq!(e.unit_by(UnitLabel::SystemdUnit), None, "no _SYSTEMD_UNIT: no unit as Promtail's rule gives it");
        assert_eq!(e.unit_by(UnitLabel::None), None);
        assert_eq!(e.host(), None);
        let e = RawEntry::parse(
            br#"{"MESSAGE":"hi","_SYSTEMD_UNIT":"nginx.service","SYSLOG_IDENTIFIER":"nginx","PRIORITY":"9"}"#,
        )
        .unwrap();
        assert_eq!(e.unit().as_deref(), Some("nginx.service"));
        assert_eq!(e.level().as_deref(), Some("9"), "another PRIORITY as it is, as Promtail's keyword");
        assert_eq!(e.timestamp_ns(), None);
        assert!(RawEntry::parse(br#"{"MESSAGE":[300]}"#).is_err());
        assert!(RawEntry::parse(b"not json").is_err());
    }

    #[test]
    fn the_whole_entry_is_promtails_json_of_its_fields() {
        let line = br#"{"__CURSOR":"s=1;i=2","__REALTIME_TIMESTAMP":"1700000000000123","__SEQNUM":"7","__SEQNUM_ID":"x","MESSAGE":[98,105,110,255],"SYSLOG_IDENTIFIER":["cron","CRON"],"_HOSTNAME":null,"A":"<a & b>"}"#;
        assert_eq!(
            whole_entry_json(line, true).unwrap(),
            r#"{"A":"\u003ca \u0026 b\u003e","MESSAGE":"bin\ufffd","SYSLOG_IDENTIFIER":"CRON","__CURSOR":"s=1;i=2","__REALTIME_TIMESTAMP":"1700000000000123"}"#
        );
        // Promtail 3.6's line: no address fields.
        assert_eq!(
            whole_entry_json(line, false).unwrap(),
            r#"{"A":"\u003ca \u0026 b\u003e","MESSAGE":"bin\ufffd","SYSLOG_IDENTIFIER":"CRON"}"#
        );
    }

    #[test]
    fn a_json_line_escapes_as_gos_encoder_each_invalid_byte_as_ufffd() {
        let line = br#"{"M":[105,110,118,32,255,254,32,10,13,9,1,34,92,226,128,168,239,191,189]}"#;
        assert_eq!(whole_entry_json(line, false).unwrap(), r#"{"M":"inv \ufffd\ufffd \n\r\t\u0001\"\\\u2028�"}"#);
    }

    #[test]
    fn every_priority_has_its_syslog_name() {
        let names: Vec<_> = (0..8).map(|p| level_name(&p.to_string()).unwrap()).collect();
        assert_eq!(names, ["emerg", "alert", "crit", "error", "warning", "notice", "info", "debug"]);
        assert_eq!(priority_keyword("3"), "error");
        assert_eq!(priority_keyword(" 3"), " 3", "Promtail's keyword matches the digit alone");
        assert_eq!(priority_keyword("priority-value"), "priority-value");
    }
}
