//! The default of every config key, read through serde from the structs'
//! own `Default`s (the same the loader starts from), for the book's
//! reference to be checked against.

use std::collections::{BTreeMap, BTreeSet};

use serde::de::DeserializeOwned;

use super::schema::Schema;

/// The default of every key that has one, rendered as TOML writes a value
/// (`"10s"`, `64`, `false`): for each table key of `schema`, a document
/// where it is an empty table (a list of tables holds one, a table of tables
/// `x`), read into `T` by serde alone (no checks) and written out again.
pub fn defaults<T: DeserializeOwned + serde::Serialize>(schema: &Schema) -> Result<BTreeMap<String, String>, String> {
    let tables: BTreeSet<&str> = schema
        .keys
        .keys()
        .filter(|k| schema.keys.keys().any(|c| c.len() > k.len() && c.starts_with(k.as_str()) && is_child(k, c)))
        .map(String::as_str)
        .collect();
    // One document per table, so a table with a required key (`selectors[].role`)
    // costs only its own defaults (it has none to give).
    let mut found = BTreeMap::new();
    for t in std::iter::once(&"").chain(tables.iter()) {
        // A list of tables (`sources[].relabel` with `sources[].relabel[].action`) holds one.
        let list = !t.is_empty() && schema.keys.keys().any(|c| c.starts_with(&format!("{t}[]")));
        let mut doc = serde_json::json!({});
        if !t.is_empty() {
            let mut at = &mut doc;
            for seg in segments(if list { format!("{t}[]") } else { t.to_string() }.as_str()) {
                at = step(at, &seg);
            }
            if !at.is_object() {
                *at = serde_json::json!({});
            }
        }
        let Ok(value) = serde_json::from_value::<T>(doc) else { continue };
        let out = serde_json::to_value(&value).map_err(|e| e.to_string())?;
        flatten(&out, String::new(), &mut found);
    }
    Ok(found.into_iter().filter(|(k, _)| schema.keys.contains_key(k)).collect())
}

fn is_child(parent: &str, child: &str) -> bool {
    let rest = &child[parent.len()..];
    rest.starts_with('.') || rest.starts_with("[]")
}

/// `sources[].kafka.brokers` -> `sources`, `[]`, `kafka`, `brokers`.
fn segments(path: &str) -> Vec<String> {
    let mut out = Vec::new();
    for part in path.split('.') {
        let mut p = part;
        let mut lists = 0;
        while let Some(s) = p.strip_suffix("[]") {
            p = s;
            lists += 1;
        }
        out.push(p.to_string());
        out.extend(std::iter::repeat_n("[]".to_string(), lists));
    }
    out
}

fn step<'v>(at: &'v mut serde_json::Value, seg: &str) -> &'v mut serde_json::Value {
    if seg == "[]" {
        if !at.is_array() {
            *at = serde_json::json!([{}]);
        }
        return &mut at.as_array_mut().expect("an array")[0];
    }
    if !at.is_object() {
        *at = serde_json::json!({});
    }
    let name = if seg == "<name>" { "x" } else { seg };
    at.as_object_mut().expect("an object").entry(name).or_insert(serde_json::json!({}))
}

fn flatten(v: &serde_json::Value, path: String, out: &mut BTreeMap<String, String>) {
    use serde_json::Value as V;
    match v {
        V::Object(m) if !m.is_empty() && !path.is_empty() && m.keys().all(|k| k == "x") => {
            for (_, c) in m {
                flatten(c, format!("{path}.<name>"), out);
            }
        }
        V::Object(m) => {
            for (k, c) in m {
                flatten(c, if path.is_empty() { k.clone() } else { format!("{path}.{k}") }, out);
            }
        }
        V::Array(a) if a.first().is_some_and(V::is_object) => flatten(&a[0], format!("{path}[]"), out),
        V::Null => {}
        V::String(s) if s.is_empty() => {}
        V::Array(a) if a.is_empty() => {}
        other => {
            out.insert(path, render(other));
        }
    }
}

/// A value as TOML writes it inline.
pub fn render(v: &serde_json::Value) -> String {
    use serde_json::Value as V;
    match v {
        V::String(s) => format!("{s:?}"),
        V::Array(a) => format!("[{}]", a.iter().map(render).collect::<Vec<_>>().join(", ")),
        V::Object(m) => {
            format!("{{ {} }}", m.iter().map(|(k, v)| format!("{k} = {}", render(v))).collect::<Vec<_>>().join(", "))
        }
        other => other.to_string(),
    }
}
