//! Sprig's encoding, hashing, JSON, default, type, OS and random functions.

use std::collections::{BTreeMap, HashMap};

use base64::Engine;
use gtmpl::{Func, Value};
use sha2::Digest;

use super::{arity, at_least, bool, empty, err, string, text, to_i64, Out};

pub(super) const FUNCS: &[(&str, Func)] = &[
    ("b64enc", b64enc),
    ("b64dec", b64dec),
    ("b32enc", b32enc),
    ("b32dec", b32dec),
    ("sha1sum", sha1sum),
    ("sha256sum", sha256sum),
    ("adler32sum", adler32sum),
    ("toJson", to_json),
    ("mustToJson", to_json),
    ("toPrettyJson", to_pretty_json),
    ("mustToPrettyJson", to_pretty_json),
    ("toRawJson", to_raw_json),
    ("mustToRawJson", to_raw_json),
    ("fromJson", from_json),
    ("mustFromJson", must_from_json),
    ("default", default),
    ("empty", is_empty),
    ("coalesce", coalesce),
    ("all", all),
    ("any", any),
    ("ternary", ternary),
    ("fail", fail),
    ("deepEqual", deep_equal),
    ("typeOf", type_of),
    ("typeIs", type_is),
    ("typeIsLike", type_is_like),
    ("kindOf", kind_of),
    ("kindIs", kind_is),
    ("env", env),
    ("expandenv", expandenv),
    ("randAlphaNum", rand_alpha_num),
    ("randAlpha", rand_alpha),
    ("randNumeric", rand_numeric),
    ("randAscii", rand_ascii),
    ("uuidv4", uuidv4),
    ("deepCopy", deep_copy),
    ("mustDeepCopy", deep_copy),
    ("getHostByName", get_host_by_name),
    ("semver", semver_of),
    ("semverCompare", semver_compare),
];

fn one(name: &str, args: &[Value], f: impl Fn(&str) -> String) -> Out {
    arity(name, args, 1)?;
    string(f(&text(name, args, 0)?))
}

fn b64enc(args: &[Value]) -> Out {
    one("b64enc", args, |s| base64::engine::general_purpose::STANDARD.encode(s))
}

/// The decoded text, or Go's error text (sprig returns it as the value).
fn b64dec(args: &[Value]) -> Out {
    one("b64dec", args, |s| match base64::engine::general_purpose::STANDARD.decode(s) {
        Ok(b) => String::from_utf8_lossy(&b).into_owned(),
        Err(base64::DecodeError::InvalidByte(at, _) | base64::DecodeError::InvalidLastSymbol(at, _)) => {
            format!("illegal base64 data at input byte {at}")
        }
        Err(_) => format!("illegal base64 data at input byte {}", s.len()),
    })
}

fn b32enc(args: &[Value]) -> Out {
    one("b32enc", args, |s| data_encoding::BASE32.encode(s.as_bytes()))
}

fn b32dec(args: &[Value]) -> Out {
    one("b32dec", args, |s| match data_encoding::BASE32.decode(s.as_bytes()) {
        Ok(b) => String::from_utf8_lossy(&b).into_owned(),
        Err(e) => format!("illegal base32 data at input byte {}", e.position),
    })
}

fn sha1sum(args: &[Value]) -> Out {
    one("sha1sum", args, |s| hex::encode(sha1::Sha1::digest(s)))
}

fn sha256sum(args: &[Value]) -> Out {
    one("sha256sum", args, |s| hex::encode(sha2::Sha256::digest(s)))
}

fn adler32sum(args: &[Value]) -> Out {
    one("adler32sum", args, |s| {
        let mut a = adler2::Adler32::new();
        a.write_slice(s.as_bytes());
        a.checksum().to_string()
    })
}

/// A value as JSON: numbers as Go writes a float64 with no fraction (`5`),
/// maps with their keys sorted (as Go's encoder does).
fn json_of(v: &Value) -> serde_json::Value {
    use serde_json::Value as J;
    match v {
        Value::NoValue | Value::Nil | Value::Function(_) => J::Null,
        Value::Bool(b) => J::Bool(*b),
        Value::String(s) => J::String(s.clone()),
        Value::Number(n) => match (n.as_i64(), n.as_u64(), n.as_f64()) {
            (Some(i), ..) => J::from(i),
            (_, Some(u), _) => J::from(u),
            (.., Some(f)) if f.fract() == 0.0 && f.abs() < 1e21 => J::from(f as i64),
            (.., Some(f)) => serde_json::Number::from_f64(f).map_or(J::Null, J::Number),
            _ => J::Null,
        },
        Value::Array(a) => J::Array(a.iter().map(json_of).collect()),
        Value::Map(m) | Value::Object(m) => {
            if let Some(ns) = super::dates::time_of(v) {
                return J::String(super::dates::rfc3339(ns));
            }
            let sorted: BTreeMap<&String, serde_json::Value> = m.iter().map(|(k, v)| (k, json_of(v))).collect();
            J::Object(sorted.into_iter().map(|(k, v)| (k.clone(), v)).collect())
        }
    }
}

/// Go's encoder escapes `<`, `>`, `&`, U+2028 and U+2029 (not `toRawJson`).
fn html_safe(s: String) -> String {
    s.replace('<', "\\u003c")
        .replace('>', "\\u003e")
        .replace('&', "\\u0026")
        .replace('\u{2028}', "\\u2028")
        .replace('\u{2029}', "\\u2029")
}

fn to_json(args: &[Value]) -> Out {
    arity("toJson", args, 1)?;
    string(html_safe(json_of(&args[0]).to_string()))
}

fn to_pretty_json(args: &[Value]) -> Out {
    arity("toPrettyJson", args, 1)?;
    let pretty = serde_json::to_string_pretty(&json_of(&args[0])).map_err(|e| err("toPrettyJson", e))?;
    string(html_safe(pretty))
}

fn to_raw_json(args: &[Value]) -> Out {
    arity("toRawJson", args, 1)?;
    string(json_of(&args[0]).to_string())
}

/// JSON as a value; numbers are floats, as Go reads them.
fn value_of(j: serde_json::Value) -> Value {
    use serde_json::Value as J;
    match j {
        J::Null => Value::Nil,
        J::Bool(b) => Value::Bool(b),
        J::Number(n) => Value::from(n.as_f64().unwrap_or(0.0)),
        J::String(s) => Value::String(s),
        J::Array(a) => Value::Array(a.into_iter().map(value_of).collect()),
        J::Object(o) => Value::Map(o.into_iter().map(|(k, v)| (k, value_of(v))).collect::<HashMap<_, _>>()),
    }
}

fn from_json(args: &[Value]) -> Out {
    Ok(must_from_json(args).unwrap_or(Value::Nil))
}

fn must_from_json(args: &[Value]) -> Out {
    arity("fromJson", args, 1)?;
    let s = text("fromJson", args, 0)?;
    serde_json::from_str(&s).map(value_of).map_err(|e| err("fromJson", e))
}

/// `default DEFAULT VALUE`: the value, unless it is empty (or not given).
fn default(args: &[Value]) -> Out {
    at_least("default", args, 1)?;
    Ok(match args.get(1) {
        Some(v) if !empty(v) => v.clone(),
        _ => args[0].clone(),
    })
}

fn is_empty(args: &[Value]) -> Out {
    arity("empty", args, 1)?;
    bool(empty(&args[0]))
}

fn coalesce(args: &[Value]) -> Out {
    Ok(args.iter().find(|v| !empty(v)).cloned().unwrap_or(Value::Nil))
}

fn all(args: &[Value]) -> Out {
    bool(args.iter().all(|v| !empty(v)))
}

fn any(args: &[Value]) -> Out {
    bool(args.iter().any(|v| !empty(v)))
}

/// `ternary TRUE FALSE CONDITION`.
fn ternary(args: &[Value]) -> Out {
    arity("ternary", args, 3)?;
    match &args[2] {
        Value::Bool(b) => Ok(args[if *b { 0 } else { 1 }].clone()),
        _ => Err(err("ternary", "the condition must be a bool (eq, ne, empty, ...)")),
    }
}

fn fail(args: &[Value]) -> Out {
    arity("fail", args, 1)?;
    Err(err("fail", text("fail", args, 0)?))
}

fn deep_equal(args: &[Value]) -> Out {
    arity("deepEqual", args, 2)?;
    bool(args[0] == args[1])
}

/// Go's type name of a value as a template sees it.
fn type_name(v: &Value) -> &'static str {
    match v {
        Value::String(_) => "string",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.as_f64().is_some() => "float64",
        Value::Number(_) => "int",
        Value::Array(_) => "[]interface {}",
        Value::Map(_) | Value::Object(_) if super::dates::time_of(v).is_some() => "time.Time",
        Value::Map(_) | Value::Object(_) => "map[string]interface {}",
        Value::Function(_) => "func",
        Value::NoValue | Value::Nil => "<nil>",
    }
}

fn kind_name(v: &Value) -> &'static str {
    match type_name(v) {
        "[]interface {}" => "slice",
        "map[string]interface {}" => "map",
        "time.Time" => "struct",
        "<nil>" => "invalid",
        other => other,
    }
}

fn type_of(args: &[Value]) -> Out {
    arity("typeOf", args, 1)?;
    string(type_name(&args[0]))
}

fn type_is(args: &[Value]) -> Out {
    arity("typeIs", args, 2)?;
    bool(text("typeIs", args, 0)? == type_name(&args[1]))
}

fn type_is_like(args: &[Value]) -> Out {
    arity("typeIsLike", args, 2)?;
    let (want, t) = (text("typeIsLike", args, 0)?, type_name(&args[1]));
    bool(want == t || want == format!("*{t}"))
}

fn kind_of(args: &[Value]) -> Out {
    arity("kindOf", args, 1)?;
    string(kind_name(&args[0]))
}

fn kind_is(args: &[Value]) -> Out {
    arity("kindIs", args, 2)?;
    bool(text("kindIs", args, 0)? == kind_name(&args[1]))
}

/// The environment variable of tailship's process (Promtail's read its own).
fn env(args: &[Value]) -> Out {
    one("env", args, |n| std::env::var(n).unwrap_or_default())
}

/// Go's `os.ExpandEnv`: `$NAME` and `${NAME}` replaced (unset: "").
fn expandenv(args: &[Value]) -> Out {
    one("expandenv", args, |s| {
        let mut out = String::new();
        let mut rest = s;
        while let Some(at) = rest.find('$') {
            out.push_str(&rest[..at]);
            let after = &rest[at + 1..];
            let (name, len) = if let Some(b) = after.strip_prefix('{') {
                match b.find('}') {
                    Some(end) => (&b[..end], end + 2),
                    None => ("", 0),
                }
            } else {
                let end = after.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(after.len());
                (&after[..end], end)
            };
            if len == 0 {
                out.push('$');
                rest = after;
                continue;
            }
            out.push_str(&std::env::var(name).unwrap_or_default());
            rest = &after[len..];
        }
        out.push_str(rest);
        out
    })
}

fn random(name: &str, args: &[Value], from: &[u8]) -> Out {
    arity(name, args, 1)?;
    let n = to_i64(&args[0]).clamp(0, 1_000_000) as usize;
    string((0..n).map(|_| char::from(from[fastrand::usize(..from.len())])).collect::<String>())
}

const DIGITS: &[u8] = b"0123456789";
const LETTERS: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
const ALNUM: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";

fn rand_alpha_num(args: &[Value]) -> Out {
    random("randAlphaNum", args, ALNUM)
}

fn rand_alpha(args: &[Value]) -> Out {
    random("randAlpha", args, LETTERS)
}

fn rand_numeric(args: &[Value]) -> Out {
    random("randNumeric", args, DIGITS)
}

fn rand_ascii(args: &[Value]) -> Out {
    let printable: Vec<u8> = (32u8..=126).collect();
    random("randAscii", args, &printable)
}

/// A random (version 4) UUID.
fn uuidv4(args: &[Value]) -> Out {
    arity("uuidv4", args, 0)?;
    let mut b: [u8; 16] = std::array::from_fn(|_| fastrand::u8(..));
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let h = hex::encode(b);
    string(format!("{}-{}-{}-{}-{}", &h[..8], &h[8..12], &h[12..16], &h[16..20], &h[20..]))
}

fn deep_copy(args: &[Value]) -> Out {
    arity("deepCopy", args, 1)?;
    Ok(args[0].clone())
}

/// An address of the host name (the system's resolver; "" when there is none).
fn get_host_by_name(args: &[Value]) -> Out {
    one("getHostByName", args, |name| {
        use std::net::ToSocketAddrs;
        (name, 0).to_socket_addrs().ok().and_then(|mut a| a.next()).map(|a| a.ip().to_string()).unwrap_or_default()
    })
}

/// A version as Masterminds' semver reads it: a leading `v`, and a minor or
/// patch left out (`1.2` is 1.2.0).
fn version(s: &str) -> Option<semver::Version> {
    let s = s.trim().trim_start_matches(['v', 'V']);
    let end = s.find(['-', '+']).unwrap_or(s.len());
    let (core, tail) = s.split_at(end);
    let mut parts: Vec<&str> = core.split('.').collect();
    if parts.is_empty() || parts.len() > 3 {
        return None;
    }
    while parts.len() < 3 {
        parts.push("0");
    }
    semver::Version::parse(&format!("{}{tail}", parts.join("."))).ok()
}

/// `semver TEXT`: a dict of `Major`, `Minor`, `Patch`, `Prerelease` and `Metadata`.
fn semver_of(args: &[Value]) -> Out {
    arity("semver", args, 1)?;
    let s = text("semver", args, 0)?;
    let v = version(&s).ok_or_else(|| err("semver", format!("invalid semantic version {s:?}")))?;
    let mut m = HashMap::new();
    m.insert("Major".to_string(), Value::from(v.major));
    m.insert("Minor".to_string(), Value::from(v.minor));
    m.insert("Patch".to_string(), Value::from(v.patch));
    m.insert("Prerelease".to_string(), Value::String(v.pre.to_string()));
    m.insert("Metadata".to_string(), Value::String(v.build.to_string()));
    Ok(Value::Map(m))
}

/// One of Masterminds' constraints (`>= 1.2`, `~1.3`, `^2`, `1.2.x`,
/// `!=1.4`, `1.2 - 1.4`, a bare version meaning `=`) against `v`.
fn one_constraint(c: &str, v: &semver::Version) -> Option<bool> {
    let c = c.trim();
    if let Some(rest) = c.strip_prefix("!=") {
        let want = version(rest)?;
        return Some(*v != want);
    }
    let c = c.replace("=<", "<=").replace("=>", ">=");
    let bare = c.starts_with(|ch: char| ch.is_ascii_digit() || ch == 'v' || ch == 'V');
    let wild = c.contains(['x', 'X', '*']);
    let ours =
        if bare && !wild { format!("={}", c.trim_start_matches(['v', 'V'])) } else { c.replace(['x', 'X'], "*") };
    Some(semver::VersionReq::parse(&ours).ok()?.matches(v))
}

/// `semverCompare CONSTRAINT VERSION`: constraints joined by `,` or spaces
/// must all hold, groups joined by `||` are alternatives.
fn semver_compare(args: &[Value]) -> Out {
    arity("semverCompare", args, 2)?;
    let (c, s) = (text("semverCompare", args, 0)?, text("semverCompare", args, 1)?);
    let v = version(&s).ok_or_else(|| err("semverCompare", format!("invalid semantic version {s:?}")))?;
    let bad = || err("semverCompare", format!("improper constraint: {c}"));
    for group in c.split("||") {
        let mut all = true;
        let group = group.trim();
        if let Some((lo, hi)) = group.split_once(" - ") {
            let (lo, hi) = (version(lo).ok_or_else(bad)?, version(hi).ok_or_else(bad)?);
            if lo <= v && v <= hi {
                return bool(true);
            }
            continue;
        }
        // `>= 1.2 < 2` and `>=1.2, <2`: an operator starts each constraint.
        let mut parts: Vec<String> = Vec::new();
        for tok in group.split([',', ' ']).filter(|t| !t.is_empty()) {
            match parts.last_mut() {
                Some(last) if last.chars().all(|ch| "<>=!~^".contains(ch)) => last.push_str(tok),
                _ => parts.push(tok.to_string()),
            }
        }
        for p in &parts {
            all &= one_constraint(p, &v).ok_or_else(bad)?;
        }
        if all && !parts.is_empty() {
            return bool(true);
        }
    }
    bool(false)
}
