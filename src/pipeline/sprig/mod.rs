//! Sprig's template functions (github.com/Masterminds/sprig v3), which
//! Promtail's `template` stage registers beside its own: written here over
//! gtmpl's values, with sprig's documented behaviour (argument order for
//! pipes, `must*` variants that fail where the plain ones give a zero value).
//!
//! Every extracted value is a string, so functions that take numbers read
//! them from text as sprig's `cast` does (`"12"`, `"0x1f"`, `"1.5"`; text
//! that is no number is 0). A time (from `now`, `toDate`, `dateModify`) is a
//! map holding its Unix nanoseconds; `date` and friends format it with Go's
//! layouts.
//!
//! The crypto functions are in [`crypto`] and [`certs`] (no DSA keys:
//! `genPrivateKey "dsa"` fails). `randSeededNumeric` is in no sprig
//! release, so a template calling it is refused as Promtail refuses it.
//! Printing lists and dicts in Go's form and `set`/`unset` in place come
//! from rewriting the template's actions ([`actions`]). `toDecimal` reads octal
//! text only; `semverCompare` reads Masterminds' constraints through the
//! semver crate (`^`, `~`, wildcards, `a - b`, `||`, `!=`).

use gtmpl::{FuncError, Value};

pub use actions::rewrite;

mod actions;
mod certs;
mod crypto;
mod dates;
mod encoding;
mod goprint;
mod lists;
mod math;
mod strings;

/// Every function, by the name templates call it.
pub fn funcs() -> Vec<(&'static str, gtmpl::Func)> {
    let mut all = Vec::new();
    all.extend_from_slice(strings::FUNCS);
    all.extend_from_slice(encoding::FUNCS);
    all.extend_from_slice(lists::FUNCS);
    all.extend_from_slice(math::FUNCS);
    all.extend_from_slice(dates::FUNCS);
    all.extend_from_slice(crypto::FUNCS);
    all.extend_from_slice(certs::FUNCS);
    all.extend_from_slice(actions::FUNCS);
    all.extend_from_slice(goprint::FUNCS);
    all
}

pub(crate) type Out = Result<Value, FuncError>;

fn err(name: &str, msg: impl std::fmt::Display) -> FuncError {
    FuncError::Generic(format!("{name}: {msg}"))
}

fn arity(name: &str, args: &[Value], n: usize) -> Result<(), FuncError> {
    if args.len() == n {
        Ok(())
    } else {
        Err(FuncError::ExactlyXArgs(name.into(), n))
    }
}

fn at_least(name: &str, args: &[Value], n: usize) -> Result<(), FuncError> {
    if args.len() >= n {
        Ok(())
    } else {
        Err(FuncError::AtLeastXArgs(name.into(), n))
    }
}

/// Argument `i` as text: a string, or a number or bool as Go prints it.
/// A missing value fails, as Go's call with a string parameter does.
fn text(name: &str, args: &[Value], i: usize) -> Result<String, FuncError> {
    match args.get(i) {
        Some(Value::String(s)) => Ok(s.clone()),
        Some(v @ (Value::Number(_) | Value::Bool(_))) => Ok(strval(v)),
        Some(Value::NoValue | Value::Nil) | None => Err(err(name, "a missing value where text is needed")),
        Some(_) => Err(err(name, "a list or dict where text is needed")),
    }
}

fn string(s: impl Into<String>) -> Out {
    let s = s.into();
    charge("a function", s.len())?;
    Ok(Value::String(s))
}

std::thread_local! {
    /// What the template being rendered on this thread may still make (see [`with_budget`]).
    static BUDGET: std::cell::Cell<Option<usize>> = const { std::cell::Cell::new(None) };
}

/// Runs `f` (one rendering) with a budget of `bytes` for what the
/// functions it calls make: strings by their length, lists by 8 bytes an
/// element. Past it, a function fails (and so the rendering): a template
/// such as `{{ repeat 1000000 (repeat 1000000 "x") }}` or loops over
/// `until` in loops end with an error instead of taking the process.
pub fn with_budget<R>(bytes: usize, f: impl FnOnce() -> R) -> R {
    let before = BUDGET.with(|b| b.replace(Some(bytes)));
    let r = f();
    BUDGET.with(|b| b.set(before));
    r
}

/// Takes `n` bytes of the rendering's budget; an error naming `name` when it is spent.
fn charge(name: &str, n: usize) -> Result<(), FuncError> {
    BUDGET.with(|b| match b.get() {
        None => Ok(()),
        Some(left) if n <= left => {
            b.set(Some(left - n));
            Ok(())
        }
        Some(_) => {
            b.set(Some(0));
            Err(err(name, "the template makes more than its budget allows (it is cut off; the line goes on)"))
        }
    })
}

/// Go's `fmt.Sprintf("%v", v)` of a value (sprig's `toString`).
fn strval(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        Value::Bool(b) => b.to_string(),
        Value::NoValue | Value::Nil => "<nil>".into(),
        Value::Array(a) => format!("[{}]", a.iter().map(strval).collect::<Vec<_>>().join(" ")),
        Value::Map(m) | Value::Object(m) => {
            if let Some(ns) = dates::time_of(v) {
                return dates::go_string(ns);
            }
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            let parts: Vec<String> = keys.iter().map(|k| format!("{k}:{}", strval(&m[*k]))).collect();
            format!("map[{}]", parts.join(" "))
        }
        Value::Function(_) => "<func>".into(),
    }
}

/// sprig's `empty`: nil, "", 0, false, an empty list or dict.
fn empty(v: &Value) -> bool {
    match v {
        Value::NoValue | Value::Nil => true,
        Value::String(s) => s.is_empty(),
        Value::Bool(b) => !b,
        Value::Number(n) => n.as_i64() == Some(0) || n.as_u64() == Some(0) || n.as_f64() == Some(0.0),
        Value::Array(a) => a.is_empty(),
        Value::Map(m) | Value::Object(m) => m.is_empty(),
        Value::Function(_) => false,
    }
}

/// Go's `strconv.ParseInt(s, 0, 64)`: `0x`, `0o`, `0b` and a leading `0` (octal) prefixes.
fn parse_int(s: &str) -> Option<i64> {
    let s = s.trim();
    let (neg, body) = match s.strip_prefix('-') {
        Some(b) => (true, b),
        None => (false, s.strip_prefix('+').unwrap_or(s)),
    };
    let body = body.replace('_', "");
    let lower = body.to_ascii_lowercase();
    let v = if let Some(h) = lower.strip_prefix("0x") {
        i64::from_str_radix(h, 16).ok()?
    } else if let Some(o) = lower.strip_prefix("0o") {
        i64::from_str_radix(o, 8).ok()?
    } else if let Some(b) = lower.strip_prefix("0b") {
        i64::from_str_radix(b, 2).ok()?
    } else if lower.len() > 1 && lower.starts_with('0') {
        i64::from_str_radix(&lower[1..], 8).ok()?
    } else {
        lower.parse().ok()?
    };
    Some(if neg { -v } else { v })
}

/// sprig's `toInt64` (spf13/cast): text read as an integer (a `.0`
/// fraction allowed), a float cut, a bool 1 or 0; anything else 0.
fn to_i64(v: &Value) -> i64 {
    match v {
        Value::Number(n) => n.as_i64().or_else(|| n.as_f64().map(|f| f as i64)).unwrap_or(0),
        Value::Bool(b) => i64::from(*b),
        Value::String(s) => {
            let t = s.trim();
            let t = t.strip_suffix(".0").filter(|r| !r.is_empty()).unwrap_or(t);
            parse_int(t).unwrap_or(0)
        }
        _ => 0,
    }
}

/// sprig's `toFloat64`: text read as a number; anything else 0.
fn to_f64(v: &Value) -> f64 {
    match v {
        Value::Number(n) => n.as_f64().or_else(|| n.as_i64().map(|i| i as f64)).unwrap_or(0.0),
        Value::Bool(b) => f64::from(u8::from(*b)),
        Value::String(s) => s.trim().parse().unwrap_or(0.0),
        _ => 0.0,
    }
}

fn int(i: i64) -> Out {
    Ok(Value::from(i))
}

fn float(f: f64) -> Out {
    Ok(Value::from(f))
}

fn bool(b: bool) -> Out {
    Ok(Value::Bool(b))
}

#[cfg(test)]
mod crypto_tests;
#[cfg(test)]
mod tests;
