//! The `json` stage: each expression is a plain path (`a.b[0].c`, read
//! straight off the parsed line) or a JMESPath expression (Promtail's
//! `expressions`: `items[?kind=='x'].id | [0]`, functions, projections),
//! evaluated with the `jmespath` crate.

use std::borrow::Cow;
use std::sync::Arc;

use serde_json::Value;

use super::line::Line;
use super::parse::{json_text, JsonPath};

/// One expression of a `json` stage.
#[derive(Debug, Clone)]
pub enum JsonField {
    Path(JsonPath),
    Jmes(Arc<jmespath::Expression<'static>>),
}

impl JsonField {
    /// A plain path when `s` is one, else a JMESPath expression; the error
    /// is JMESPath's.
    pub fn parse(s: &str) -> Result<Self, String> {
        // Identifiers and indexes (`a.b[0]`), or tailship's quoted keys (`a["x.y"]`).
        let plain = s.bytes().all(|b| b.is_ascii_alphanumeric() || b"_.[]".contains(&b));
        if plain {
            return JsonPath::parse(s).map(Self::Path);
        }
        if s.contains("[\"") {
            if let Ok(p) = JsonPath::parse(s) {
                return Ok(Self::Path(p));
            }
        }
        jmespath::compile(s)
            .map(|e| Self::Jmes(Arc::new(e)))
            .map_err(|e| format!("`{s}` is neither a path (a.b[0].c) nor a JMESPath expression: {}", one_line(&e)))
    }
}

fn one_line(e: &jmespath::JmespathError) -> String {
    e.to_string().split_whitespace().collect::<Vec<_>>().join(" ")
}

/// What a `json` stage made of a line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Parsed {
    Ok,
    /// The text is not a JSON object (it goes on unchanged, or is dropped
    /// with `drop_malformed`).
    Malformed,
}

/// A `json` stage over the line or the extracted value `source` (a line
/// without it passes untouched). Empty `fields`: every top-level scalar.
/// A JMESPath result that is null removes the value (Promtail sets it to
/// nil); numbers are written as Go writes a float64 (`3.0` is `3`).
pub fn apply<'s>(line: &mut Line<'s, '_>, fields: &'s [(String, JsonField)], source: Option<&str>) -> Parsed {
    let text = match source {
        Some(s) => match line.extracted.get(s) {
            Some(v) => v,
            None => return Parsed::Ok,
        },
        None => &line.text,
    };
    // Plain paths read the top level without building the document.
    if let Some(found) = plain_paths(text, fields) {
        for (name, v) in found {
            if let Some(t) = v {
                line.extracted.set(Cow::Borrowed(name), t);
            }
        }
        return Parsed::Ok;
    }
    let doc = match serde_json::from_str::<Value>(text) {
        Ok(doc @ Value::Object(_)) => doc,
        _ => return Parsed::Malformed,
    };
    if fields.is_empty() {
        if let Value::Object(map) = doc {
            for (k, v) in map {
                if !(v.is_object() || v.is_array()) {
                    if let Some(t) = json_text(&v) {
                        line.extracted.set(Cow::Owned(k), t);
                    }
                }
            }
        }
        return Parsed::Ok;
    }
    let mut var: Option<jmespath::Rcvar> = None;
    for (name, field) in fields {
        match field {
            JsonField::Path(path) => {
                if let Some(t) = path.get(&doc).and_then(json_text) {
                    line.extracted.set(Cow::Borrowed(name), t);
                }
            }
            JsonField::Jmes(expr) => {
                if var.is_none() {
                    match jmespath::Variable::from_serializable(&doc) {
                        Ok(v) => var = Some(jmespath::Rcvar::new(v)),
                        Err(_) => continue,
                    }
                }
                let Some(data) = &var else { continue };
                let mut ctx = jmespath::Context::new(expr.as_str(), &jmespath::DEFAULT_RUNTIME);
                let Ok(found) = jmespath::interpret(data, expr.as_ast(), &mut ctx) else { continue };
                match jmes_text(&found) {
                    Some(t) => line.extracted.set(Cow::Borrowed(name), t),
                    None => line.extracted.remove(name),
                }
            }
        }
    }
    Parsed::Ok
}

/// The values of `fields` read off the top level of `text`: `None` when
/// one is a JMESPath expression (or there are none), or the text is not an
/// object read that way (the whole document is read then).
fn plain_paths<'s>(text: &str, fields: &'s [(String, JsonField)]) -> Option<Vec<(&'s str, Option<String>)>> {
    if fields.is_empty() || fields.iter().any(|(_, f)| matches!(f, JsonField::Jmes(_))) {
        return None;
    }
    let top = super::json_top::parse(text)?;
    let read = |path: &JsonPath| {
        let f = top.get(path.first_key()?)?;
        match f {
            _ if path.is_key() => f.text(),
            super::json_top::Field::Nested(v) => path.get_from(v, 1).and_then(json_text),
            _ => None,
        }
    };
    let mut found = Vec::with_capacity(fields.len());
    for (name, field) in fields {
        if let JsonField::Path(path) = field {
            found.push((name.as_str(), read(path)));
        }
    }
    Some(found)
}

/// A JMESPath result as an extracted string (`None`: null).
fn jmes_text(v: &jmespath::Variable) -> Option<String> {
    use jmespath::Variable as V;
    match v {
        V::Null => None,
        V::String(s) => Some(s.clone()),
        V::Bool(b) => Some(b.to_string()),
        V::Number(n) => Some(n.as_f64().map_or_else(|| n.to_string(), |f| f.to_string())),
        other => serde_json::to_string(other).ok(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(fields: &[(&str, &str)], text: &str) -> (Parsed, Vec<(String, String)>) {
        let fields: Vec<(String, JsonField)> =
            fields.iter().map(|(n, e)| (n.to_string(), JsonField::parse(e).unwrap())).collect();
        let mut line = Line::new(Cow::Borrowed(text), 0, true);
        let r = apply(&mut line, &fields, None);
        (r, line.extracted.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect())
    }

    #[test]
    fn jmespath_expressions_as_promtails_json_stage_reads_them() {
        // Promtail's json_test.go vectors: a nested field, an array projection, a function, a quoted key.
        let line = r#"{"time":"2012-11-01T22:08:41+00:00","app":"loki","component":["parser","type"],"level":"WARN","nested":{"child":"value"},"duration":125,"message":"this is a log line","complex":{"log":{"array":[{"test1":"test1"},{"test2":"test2"}],"prop":"value","prop.with.dots":"val"}}}"#;
        let (r, got) = run(
            &[
                ("out", "message"),
                ("app", "app"),
                ("nested", "nested"),
                ("duration", "duration"),
                ("component", "component"),
                ("first", "component[0]"),
                ("count", "length(component)"),
                ("dotted", r#"complex.log."prop.with.dots""#),
                ("test1", "complex.log.array[0].test1"),
                ("tests", "complex.log.array[*].test2"),
                ("missing", "nope"),
            ],
            line,
        );
        assert_eq!(r, Parsed::Ok);
        let want = [
            ("out", "this is a log line"),
            ("app", "loki"),
            ("nested", r#"{"child":"value"}"#),
            ("duration", "125"),
            ("component", r#"["parser","type"]"#),
            ("first", "parser"),
            ("count", "2"),
            ("dotted", "val"),
            ("test1", "test1"),
            ("tests", r#"["test2"]"#),
        ];
        assert_eq!(got, want.map(|(a, b)| (a.to_string(), b.to_string())));
        assert_eq!(run(&[("a", "length(@)")], "not json").0, Parsed::Malformed);
        assert_eq!(run(&[("a", "a")], "[1,2]").0, Parsed::Malformed);
        assert!(JsonField::parse("a[?").is_err());
    }
}
