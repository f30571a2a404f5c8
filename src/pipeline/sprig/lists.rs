//! Sprig's lists and dicts, and the string functions that make or take lists.

use std::collections::HashMap;

use gtmpl::{Func, Value};

use super::{arity, at_least, bool, empty, err, string, strval, text, to_i64, Out};

pub(super) const FUNCS: &[(&str, Func)] = &[
    ("list", list),
    ("tuple", list),
    ("first", first),
    ("mustFirst", first),
    ("rest", rest),
    ("mustRest", rest),
    ("last", last),
    ("mustLast", last),
    ("initial", initial),
    ("mustInitial", initial),
    ("reverse", reverse),
    ("mustReverse", reverse),
    ("uniq", uniq),
    ("mustUniq", uniq),
    ("without", without),
    ("mustWithout", without),
    ("has", has),
    ("mustHas", has),
    ("append", push),
    ("push", push),
    ("mustAppend", push),
    ("mustPush", push),
    ("prepend", prepend),
    ("mustPrepend", prepend),
    ("concat", concat),
    ("slice", slice),
    ("mustSlice", slice),
    ("chunk", chunk),
    ("mustChunk", chunk),
    ("compact", compact),
    ("mustCompact", compact),
    ("dict", dict),
    ("get", get),
    ("set", set),
    ("unset", unset),
    ("hasKey", has_key),
    ("keys", keys),
    ("values", values),
    ("pick", pick),
    ("omit", omit),
    ("pluck", pluck),
    ("dig", dig),
    ("merge", merge),
    ("mustMerge", merge),
    ("mergeOverwrite", merge_overwrite),
    ("mustMergeOverwrite", merge_overwrite),
    ("join", join),
    ("sortAlpha", sort_alpha),
    ("split", split),
    ("splitList", split_list),
    ("splitn", splitn),
    ("urlParse", url_parse),
    ("urlJoin", url_join),
];

type Map = HashMap<String, Value>;

/// Argument `i` as a list; anything else fails, as sprig's do.
fn list_at(name: &str, args: &[Value], i: usize) -> Result<Vec<Value>, gtmpl::FuncError> {
    match args.get(i) {
        Some(Value::Array(a)) => Ok(a.clone()),
        Some(other) => Err(err(name, format!("cannot find {name} on type {}", kind(other)))),
        None => Err(gtmpl::FuncError::AtLeastXArgs(name.into(), i + 1)),
    }
}

fn map_at(name: &str, args: &[Value], i: usize) -> Result<Map, gtmpl::FuncError> {
    match args.get(i) {
        Some(Value::Map(m) | Value::Object(m)) => Ok(m.clone()),
        Some(other) => Err(err(name, format!("a dict is needed, not {}", kind(other)))),
        None => Err(gtmpl::FuncError::AtLeastXArgs(name.into(), i + 1)),
    }
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::String(_) => "string",
        Value::Number(_) => "number",
        Value::Bool(_) => "bool",
        Value::Array(_) => "slice",
        Value::Map(_) | Value::Object(_) => "map",
        _ => "nil",
    }
}

fn arr(v: Vec<Value>) -> Out {
    Ok(Value::Array(v))
}

fn list(args: &[Value]) -> Out {
    arr(args.to_vec())
}

fn first(args: &[Value]) -> Out {
    arity("first", args, 1)?;
    Ok(list_at("first", args, 0)?.into_iter().next().unwrap_or(Value::Nil))
}

fn rest(args: &[Value]) -> Out {
    arity("rest", args, 1)?;
    arr(list_at("rest", args, 0)?.into_iter().skip(1).collect())
}

fn last(args: &[Value]) -> Out {
    arity("last", args, 1)?;
    Ok(list_at("last", args, 0)?.pop().unwrap_or(Value::Nil))
}

fn initial(args: &[Value]) -> Out {
    arity("initial", args, 1)?;
    let mut l = list_at("initial", args, 0)?;
    l.pop();
    arr(l)
}

fn reverse(args: &[Value]) -> Out {
    arity("reverse", args, 1)?;
    let mut l = list_at("reverse", args, 0)?;
    l.reverse();
    arr(l)
}

fn uniq(args: &[Value]) -> Out {
    arity("uniq", args, 1)?;
    let mut out: Vec<Value> = Vec::new();
    for v in list_at("uniq", args, 0)? {
        if !out.contains(&v) {
            out.push(v);
        }
    }
    arr(out)
}

fn without(args: &[Value]) -> Out {
    at_least("without", args, 1)?;
    arr(list_at("without", args, 0)?.into_iter().filter(|v| !args[1..].contains(v)).collect())
}

/// `has NEEDLE LIST`.
fn has(args: &[Value]) -> Out {
    arity("has", args, 2)?;
    bool(list_at("has", args, 1)?.contains(&args[0]))
}

fn push(args: &[Value]) -> Out {
    arity("append", args, 2)?;
    let mut l = list_at("append", args, 0)?;
    l.push(args[1].clone());
    arr(l)
}

fn prepend(args: &[Value]) -> Out {
    arity("prepend", args, 2)?;
    let mut l = list_at("prepend", args, 0)?;
    l.insert(0, args[1].clone());
    arr(l)
}

fn concat(args: &[Value]) -> Out {
    let mut out = Vec::new();
    for i in 0..args.len() {
        out.extend(list_at("concat", args, i)?);
    }
    arr(out)
}

/// `slice LIST [START [END]]`.
fn slice(args: &[Value]) -> Out {
    at_least("slice", args, 1)?;
    let l = list_at("slice", args, 0)?;
    let start = args.get(1).map_or(0, to_i64);
    let end = args.get(2).map_or(l.len() as i64, to_i64);
    if start < 0 || end < start || end > l.len() as i64 {
        return Err(err("slice", format!("slice bounds out of range [{start}:{end}]")));
    }
    arr(l[start as usize..end as usize].to_vec())
}

/// `chunk SIZE LIST`: lists of SIZE (the last one shorter).
fn chunk(args: &[Value]) -> Out {
    arity("chunk", args, 2)?;
    let size = to_i64(&args[0]);
    if size < 1 {
        return Err(err("chunk", "the size must be at least 1"));
    }
    arr(list_at("chunk", args, 1)?.chunks(size as usize).map(|c| Value::Array(c.to_vec())).collect())
}

fn compact(args: &[Value]) -> Out {
    arity("compact", args, 1)?;
    arr(list_at("compact", args, 0)?.into_iter().filter(|v| !empty(v)).collect())
}

/// `dict KEY VALUE ...`: a key without a value gets "".
fn dict(args: &[Value]) -> Out {
    let mut m = Map::new();
    for kv in args.chunks(2) {
        let v = kv.get(1).cloned().unwrap_or_else(|| Value::String(String::new()));
        m.insert(strval(&kv[0]), v);
    }
    Ok(Value::Map(m))
}

fn get(args: &[Value]) -> Out {
    arity("get", args, 2)?;
    let m = map_at("get", args, 0)?;
    Ok(m.get(&text("get", args, 1)?).cloned().unwrap_or_else(|| Value::String(String::new())))
}

/// The dict with KEY set. Go's `set` changes the dict itself; here the
/// dict returned holds the change (use it: `$d = set $d "k" "v"`).
fn set(args: &[Value]) -> Out {
    arity("set", args, 3)?;
    let mut m = map_at("set", args, 0)?;
    m.insert(text("set", args, 1)?, args[2].clone());
    Ok(Value::Map(m))
}

fn unset(args: &[Value]) -> Out {
    arity("unset", args, 2)?;
    let mut m = map_at("unset", args, 0)?;
    m.remove(&text("unset", args, 1)?);
    Ok(Value::Map(m))
}

fn has_key(args: &[Value]) -> Out {
    arity("hasKey", args, 2)?;
    bool(map_at("hasKey", args, 0)?.contains_key(&text("hasKey", args, 1)?))
}

/// The keys of every dict given, sorted (Go's order is random).
fn keys(args: &[Value]) -> Out {
    let mut out: Vec<String> = Vec::new();
    for i in 0..args.len() {
        out.extend(map_at("keys", args, i)?.into_keys());
    }
    out.sort();
    arr(out.into_iter().map(Value::String).collect())
}

/// The values, in the order of their sorted keys (Go's order is random).
fn values(args: &[Value]) -> Out {
    arity("values", args, 1)?;
    let m = map_at("values", args, 0)?;
    let mut ks: Vec<&String> = m.keys().collect();
    ks.sort();
    arr(ks.into_iter().map(|k| m[k].clone()).collect())
}

fn pick(args: &[Value]) -> Out {
    at_least("pick", args, 1)?;
    let m = map_at("pick", args, 0)?;
    let want: Vec<String> = args[1..].iter().map(strval).collect();
    Ok(Value::Map(m.into_iter().filter(|(k, _)| want.contains(k)).collect()))
}

fn omit(args: &[Value]) -> Out {
    at_least("omit", args, 1)?;
    let m = map_at("omit", args, 0)?;
    let drop: Vec<String> = args[1..].iter().map(strval).collect();
    Ok(Value::Map(m.into_iter().filter(|(k, _)| !drop.contains(k)).collect()))
}

/// `pluck KEY DICT...`: KEY's value in each dict that has it.
fn pluck(args: &[Value]) -> Out {
    at_least("pluck", args, 1)?;
    let key = text("pluck", args, 0)?;
    let mut out = Vec::new();
    for i in 1..args.len() {
        if let Some(v) = map_at("pluck", args, i)?.get(&key) {
            out.push(v.clone());
        }
    }
    arr(out)
}

/// `dig KEY... DEFAULT DICT`: the value at the path of keys, or DEFAULT.
fn dig(args: &[Value]) -> Out {
    at_least("dig", args, 3)?;
    let n = args.len();
    let mut at = Value::Map(map_at("dig", args, n - 1)?);
    for k in &args[..n - 2] {
        let next = match &at {
            Value::Map(m) | Value::Object(m) => m.get(&strval(k)).cloned(),
            _ => None,
        };
        match next {
            Some(v) => at = v,
            None => return Ok(args[n - 2].clone()),
        }
    }
    Ok(at)
}

/// Deep merge: `over` wins when `overwrite`, else only fills what `dst` lacks.
fn merge_into(dst: &mut Map, src: &Map, overwrite: bool) {
    for (k, v) in src {
        match (dst.get_mut(k), v) {
            (Some(Value::Map(d)), Value::Map(s)) => merge_into(d, s, overwrite),
            (Some(d), v) if overwrite && !empty(v) => *d = v.clone(),
            (Some(d), v) if empty(d) && !overwrite => *d = v.clone(),
            (None, v) => {
                dst.insert(k.clone(), v.clone());
            }
            _ => {}
        }
    }
}

fn merged(name: &str, args: &[Value], overwrite: bool) -> Out {
    at_least(name, args, 1)?;
    let mut dst = map_at(name, args, 0)?;
    for i in 1..args.len() {
        merge_into(&mut dst, &map_at(name, args, i)?, overwrite);
    }
    Ok(Value::Map(dst))
}

fn merge(args: &[Value]) -> Out {
    merged("merge", args, false)
}

fn merge_overwrite(args: &[Value]) -> Out {
    merged("mergeOverwrite", args, true)
}

/// `join SEP LIST`: each element as text (a single value is itself).
fn join(args: &[Value]) -> Out {
    arity("join", args, 2)?;
    let sep = text("join", args, 0)?;
    let parts: Vec<String> = match &args[1] {
        Value::Array(a) => a.iter().filter(|v| !matches!(v, Value::Nil | Value::NoValue)).map(strval).collect(),
        other => vec![strval(other)],
    };
    string(parts.join(&sep))
}

fn sort_alpha(args: &[Value]) -> Out {
    arity("sortAlpha", args, 1)?;
    let mut parts: Vec<String> = match &args[0] {
        Value::Array(a) => a.iter().map(strval).collect(),
        other => vec![strval(other)],
    };
    parts.sort();
    arr(parts.into_iter().map(Value::String).collect())
}

fn indexed<'a>(parts: impl Iterator<Item = &'a str>) -> Out {
    Ok(Value::Map(parts.enumerate().map(|(i, p)| (format!("_{i}"), Value::String(p.to_string()))).collect()))
}

/// `split SEP TEXT`: a dict `_0`, `_1`, ... of the parts.
fn split(args: &[Value]) -> Out {
    arity("split", args, 2)?;
    let (sep, s) = (text("split", args, 0)?, text("split", args, 1)?);
    indexed(s.split(sep.as_str()))
}

fn split_list(args: &[Value]) -> Out {
    arity("splitList", args, 2)?;
    let (sep, s) = (text("splitList", args, 0)?, text("splitList", args, 1)?);
    arr(s.split(sep.as_str()).map(|p| Value::String(p.to_string())).collect())
}

/// `splitn SEP N TEXT`: at most N parts, as a dict like `split`'s.
fn splitn(args: &[Value]) -> Out {
    arity("splitn", args, 3)?;
    let (sep, n, s) = (text("splitn", args, 0)?, to_i64(&args[1]), text("splitn", args, 2)?);
    match usize::try_from(n) {
        Ok(0) => Ok(Value::Map(Map::new())),
        Ok(n) => indexed(s.splitn(n, sep.as_str())),
        Err(_) => indexed(s.split(sep.as_str())),
    }
}

fn decoded(s: &str) -> String {
    percent_encoding::percent_decode_str(s).decode_utf8_lossy().into_owned()
}

/// `urlParse URL`: a dict of `scheme`, `host`, `hostname`, `path`, `query`,
/// `opaque`, `fragment` and `userinfo` (Go's `url.Parse`: a URL without a
/// scheme is a path with its query and fragment).
fn url_parse(args: &[Value]) -> Out {
    arity("urlParse", args, 1)?;
    let s = text("urlParse", args, 0)?;
    let mut d: Map = ["scheme", "host", "hostname", "path", "query", "opaque", "fragment", "userinfo"]
        .iter()
        .map(|k| (k.to_string(), Value::String(String::new())))
        .collect();
    let mut put = |k: &str, v: String| {
        d.insert(k.to_string(), Value::String(v));
    };
    match url::Url::parse(&s) {
        Ok(u) => {
            let host = u.host_str().unwrap_or("").to_string();
            put("scheme", u.scheme().to_string());
            put("host", u.port().map_or(host.clone(), |p| format!("{host}:{p}")));
            put("hostname", host.trim_start_matches('[').trim_end_matches(']').to_string());
            if u.cannot_be_a_base() {
                put("opaque", u.path().to_string());
            } else {
                put("path", decoded(u.path()));
            }
            put("query", u.query().unwrap_or("").to_string());
            put("fragment", decoded(u.fragment().unwrap_or("")));
            let user = match (u.username(), u.password()) {
                ("", None) => String::new(),
                (n, None) => n.to_string(),
                (n, Some(p)) => format!("{n}:{p}"),
            };
            put("userinfo", user);
        }
        Err(url::ParseError::RelativeUrlWithoutBase) => {
            let (rest, fragment) = s.split_once('#').unwrap_or((&s, ""));
            let (path, query) = rest.split_once('?').unwrap_or((rest, ""));
            put("path", decoded(path));
            put("query", query.to_string());
            put("fragment", decoded(fragment));
        }
        Err(e) => return Err(err("urlParse", format!("unable to parse url: {e}"))),
    }
    Ok(Value::Map(d))
}

/// `urlJoin DICT`: the URL of a dict like `urlParse`'s.
fn url_join(args: &[Value]) -> Out {
    arity("urlJoin", args, 1)?;
    let d = map_at("urlJoin", args, 0)?;
    let get = |k: &str| d.get(k).map(strval).unwrap_or_default();
    let mut out = String::new();
    if !get("scheme").is_empty() {
        out.push_str(&get("scheme"));
        out.push(':');
    }
    if !get("opaque").is_empty() {
        out.push_str(&get("opaque"));
    } else {
        if !get("host").is_empty() || !get("userinfo").is_empty() {
            out.push_str("//");
            if !get("userinfo").is_empty() {
                out.push_str(&get("userinfo"));
                out.push('@');
            }
            out.push_str(&get("host"));
        }
        let path = get("path");
        if !path.is_empty() && !path.starts_with('/') && !get("host").is_empty() {
            out.push('/');
        }
        out.push_str(&percent_encoding::utf8_percent_encode(&path, PATH).to_string());
    }
    if !get("query").is_empty() {
        out.push('?');
        out.push_str(&get("query"));
    }
    if !get("fragment").is_empty() {
        out.push('#');
        out.push_str(&percent_encoding::utf8_percent_encode(&get("fragment"), PATH).to_string());
    }
    string(out)
}

/// What Go escapes in a URL path.
const PATH: &percent_encoding::AsciiSet = &percent_encoding::CONTROLS
    .add(b' ')
    .add(b'"')
    .add(b'#')
    .add(b'%')
    .add(b'<')
    .add(b'>')
    .add(b'?')
    .add(b'`')
    .add(b'{')
    .add(b'}');
