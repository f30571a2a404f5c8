//! The input lines of a corpus job: lines in common formats (plain, RFC
//! 3339, syslog file, nginx, JSON, logfmt, Docker, CRI, a Java stack trace,
//! a CRLF line, invalid UTF-8) and lines built from the job's own stages:
//! its regexes (with a time in the format its timestamp stage reads where a
//! group is a timestamp's source), its JSON keys, logfmt keys, multiline
//! first lines, selectors' line filters, and drop and replace expressions.

use std::collections::BTreeMap;

use chrono::{DateTime, TimeZone, Utc};
use yaml_rust2::Yaml;

use crate::golayout;
use crate::regex_gen::sample;

/// A stage's names and what each reads (a JSON path, a logfmt key).
type Fields = Vec<(String, String)>;

/// What a job's stages read, gathered from its `pipeline_stages` (and the
/// stages of its `match` stages).
#[derive(Default, Debug)]
pub struct Reads {
    /// Timestamp source -> format.
    pub times: BTreeMap<String, String>,
    /// Regexes and their source (`None`: the line).
    pub regexes: Vec<(String, Option<String>)>,
    /// JSON stages: expressions (name -> path) and source.
    pub jsons: Vec<(Fields, Option<String>)>,
    /// logfmt stages: (name -> key) and source.
    pub logfmts: Vec<(Fields, Option<String>)>,
    /// Expressions whose match alone matters: drop, replace, multiline
    /// first lines, selectors' line filters.
    pub lines: Vec<String>,
    pub multiline: Vec<String>,
    pub filters: Vec<String>,
}

fn text(y: &Yaml) -> Option<String> {
    match y {
        Yaml::String(s) | Yaml::Real(s) => Some(s.clone()),
        Yaml::Integer(i) => Some(i.to_string()),
        Yaml::Boolean(b) => Some(b.to_string()),
        _ => None,
    }
}

fn pairs(y: &Yaml) -> Vec<(String, String)> {
    let Yaml::Hash(h) = y else { return Vec::new() };
    h.iter()
        .filter_map(|(k, v)| {
            let k = text(k)?;
            let v = text(v).filter(|v| !v.is_empty()).unwrap_or_else(|| k.clone());
            Some((k, v))
        })
        .collect()
}

/// Gathers what `stages` read into `r`.
pub fn gather(stages: &Yaml, r: &mut Reads) {
    let Yaml::Array(list) = stages else { return };
    for stage in list {
        let Yaml::Hash(h) = stage else { continue };
        for (name, cfg) in h {
            let source = text(&cfg["source"]);
            match text(name).as_deref().unwrap_or("") {
                "regex" => r.regexes.extend(text(&cfg["expression"]).map(|e| (e, source))),
                "json" => r.jsons.push((pairs(&cfg["expressions"]), source)),
                "logfmt" => r.logfmts.push((pairs(&cfg["mapping"]), source)),
                "timestamp" => {
                    if let (Some(s), Some(f)) = (source, text(&cfg["format"])) {
                        r.times.insert(s, f);
                    }
                }
                "multiline" => r.multiline.extend(text(&cfg["firstline"])),
                "drop" | "replace" if source.is_none() => r.lines.extend(text(&cfg["expression"])),
                "match" => {
                    r.filters.extend(text(&cfg["selector"]));
                    gather(&cfg["stages"], r);
                }
                _ => {}
            }
        }
    }
}

/// The time of the `i`th built line.
pub fn time(i: usize) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2024, 5, 1, 10, 0, 0).unwrap() + chrono::Duration::milliseconds(1000 * i as i64 + 123)
}

/// Lines in common formats, each ending in `\n`.
pub fn common() -> Vec<Vec<u8>> {
    let lines: [&[u8]; 13] = [
        b"plain text line\n",
        b"2024-05-01T10:00:00.123Z INFO rfc3339 line key=value\n",
        b"May  4 10:00:00 host sshd[123]: Accepted publickey for user\n",
        b"127.0.0.1 - - [01/May/2024:10:00:00 +0000] \"GET /index.html HTTP/1.1\" 200 512 \"-\" \"curl/8.0\"\n",
        b"{\"level\":\"info\",\"ts\":\"2024-05-01T10:00:00Z\",\"time\":\"2024-05-01T10:00:00.5Z\",\"msg\":\"json line\",\"message\":\"json message\"}\n",
        b"level=warn ts=2024-05-01T10:00:01Z caller=main.go:12 msg=\"logfmt line\"\n",
        b"{\"log\":\"docker line\\n\",\"stream\":\"stdout\",\"time\":\"2024-05-01T10:00:02.000000001Z\"}\n",
        b"2024-05-01T10:00:03.1Z stdout F cri line\n",
        b"2024-05-01 10:00:04,123 ERROR [main] com.example.App - java exception\n",
        b"\tat com.example.App.main(App.java:10)\n",
        b"crlf line\r\n",
        b"invalid utf8 \xff\xfe line\n",
        b"last common line\n",
    ];
    lines.iter().map(|l| l.to_vec()).collect()
}

/// The value a built line gives the extracted name `name`.
fn value(
    name: &str,
    r: &Reads,
    t: DateTime<Utc>,
    from_regex: &BTreeMap<String, String>,
    depth: usize,
) -> serde_json::Value {
    if let Some(f) = r.times.get(name) {
        return serde_json::Value::String(golayout::format(t, f));
    }
    if let Some(v) = from_regex.get(name) {
        return serde_json::Value::String(v.clone());
    }
    if depth < 3 {
        if let Some((exprs, _)) = r.jsons.iter().find(|(_, s)| s.as_deref() == Some(name)) {
            return serde_json::Value::String(object(exprs, r, t, from_regex, depth + 1).to_string());
        }
    }
    let lower = name.to_ascii_lowercase();
    let v = if lower.contains("level") || lower == "severity" || lower == "lvl" { "info" } else { name };
    serde_json::Value::String(v.to_string())
}

/// A JSON object holding each expression's path.
fn object(
    exprs: &[(String, String)],
    r: &Reads,
    t: DateTime<Utc>,
    from_regex: &BTreeMap<String, String>,
    depth: usize,
) -> serde_json::Value {
    let mut root = serde_json::Map::new();
    for (name, path) in exprs {
        let keys: Vec<String> = match path.strip_prefix('"').and_then(|p| p.strip_suffix('"')) {
            Some(quoted) => vec![quoted.to_string()],
            None if path.chars().all(|c| c.is_alphanumeric() || c == '_' || c == '.' || c == '-') => {
                path.split('.').map(str::to_string).collect()
            }
            None => continue,
        };
        let mut at = &mut root;
        for k in &keys[..keys.len() - 1] {
            let entry = at.entry(k.clone()).or_insert_with(|| serde_json::Value::Object(Default::default()));
            if !entry.is_object() {
                *entry = serde_json::Value::Object(Default::default());
            }
            at = entry.as_object_mut().expect("an object");
        }
        at.insert(keys[keys.len() - 1].clone(), value(name, r, t, from_regex, depth));
    }
    serde_json::Value::Object(root)
}

/// `"text"` of `|= "text"` and the regexes of `|~ "re"` in a selector.
fn line_filters(selector: &str) -> Vec<(bool, String)> {
    let mut out = Vec::new();
    for (op, regex) in [("|=", false), ("|~", true)] {
        for part in selector.split(op).skip(1) {
            let part = part.trim_start();
            let quoted = part.strip_prefix('"').and_then(|p| p.find('"').map(|end| p[..end].to_string()));
            let quoted =
                quoted.or_else(|| part.strip_prefix('`').and_then(|p| p.find('`').map(|e| p[..e].to_string())));
            out.extend(quoted.map(|q| (regex, q.replace("\\\\", "\\"))));
        }
    }
    out
}

/// Lines built from what a job's stages read (see the module's header).
pub fn built(r: &Reads) -> Vec<String> {
    let mut out = Vec::new();
    let mut i = 10;
    let given = |t: DateTime<Utc>| -> BTreeMap<String, String> {
        r.times.iter().map(|(s, f)| (s.clone(), golayout::format(t, f))).collect()
    };
    // Values of names that a regex reads from the extracted map.
    let mut from_regex = BTreeMap::new();
    for (expr, source) in &r.regexes {
        if let Some(s) = source {
            from_regex.extend(sample(expr, &given(time(i)), 0).map(|v| (s.clone(), v)));
        }
    }
    for (expr, source) in &r.regexes {
        if source.is_none() {
            for variant in 0..2 {
                i += 1;
                out.extend(sample(expr, &given(time(i)), variant));
            }
        }
    }
    for (exprs, source) in &r.jsons {
        if source.is_none() {
            i += 1;
            out.push(object(exprs, r, time(i), &from_regex, 0).to_string());
        }
    }
    for (mapping, source) in &r.logfmts {
        if source.is_none() {
            i += 1;
            let kv = mapping.iter().map(|(name, key)| match value(name, r, time(i), &from_regex, 0) {
                serde_json::Value::String(v) if v.contains(' ') => format!("{key}=\"{v}\""),
                serde_json::Value::String(v) => format!("{key}={v}"),
                v => format!("{key}={v}"),
            });
            out.push(kv.collect::<Vec<_>>().join(" "));
        }
    }
    for first in &r.multiline {
        i += 1;
        if let Some(l) = sample(first, &given(time(i)), 0) {
            out.extend([l, "    at continuation one".into(), "    at continuation two".into()]);
        }
    }
    for expr in &r.lines {
        out.extend(sample(expr, &BTreeMap::new(), 0));
    }
    for selector in &r.filters {
        for (regex, f) in line_filters(selector) {
            match regex {
                true => out.extend(sample(&f, &BTreeMap::new(), 0)),
                false => out.push(format!("filtered {f} line")),
            }
        }
    }
    out.dedup();
    out
}
