//! A push recorder on 127.0.0.1: takes Loki pushes as Promtail sends them
//! (protobuf, snappy) and as tailship sends them (JSON, gzip or not), answers
//! 204, and keeps every entry with its tenant, labels, line, structured
//! metadata and timestamp, so two agents' output can be compared.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};

use crate::loki_proto::PushRequest;

/// One entry as pushed.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Pushed {
    pub tenant: String,
    pub labels: BTreeMap<String, String>,
    pub line: String,
    pub metadata: BTreeMap<String, String>,
    /// Unix nanoseconds.
    pub ts: i128,
}

/// The recorder; it serves until the test process ends.
pub struct Recorder {
    pub base: String,
    entries: Arc<Mutex<Vec<Pushed>>>,
}

impl Recorder {
    pub fn start() -> Recorder {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let entries = Arc::new(Mutex::new(Vec::new()));
        let keep = entries.clone();
        std::thread::spawn(move || {
            for conn in listener.incoming().map_while(Result::ok) {
                let keep = keep.clone();
                std::thread::spawn(move || serve(conn, &keep));
            }
        });
        Recorder { base, entries }
    }

    /// Every entry so far, sorted.
    pub fn entries(&self) -> Vec<Pushed> {
        let mut all = self.entries.lock().unwrap().clone();
        all.sort();
        all
    }

    pub fn len(&self) -> usize {
        self.entries.lock().unwrap().len()
    }
}

/// Serves one keep-alive connection: requests with a Content-Length body.
fn serve(conn: TcpStream, keep: &Mutex<Vec<Pushed>>) {
    let mut out = conn.try_clone().unwrap();
    let mut r = BufReader::new(conn);
    loop {
        let mut headers = BTreeMap::new();
        let mut line = String::new();
        if r.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        loop {
            line.clear();
            if r.read_line(&mut line).unwrap_or(0) == 0 {
                return;
            }
            let l = line.trim_end();
            if l.is_empty() {
                break;
            }
            if let Some((k, v)) = l.split_once(':') {
                headers.insert(k.trim().to_ascii_lowercase(), v.trim().to_string());
            }
        }
        let len: usize = headers.get("content-length").and_then(|v| v.parse().ok()).unwrap_or(0);
        let mut body = vec![0; len];
        if r.read_exact(&mut body).is_err() {
            return;
        }
        let tenant = headers.get("x-scope-orgid").cloned().unwrap_or_default();
        let got = decode(&headers, &body, &tenant);
        keep.lock().unwrap().extend(got);
        if out.write_all(b"HTTP/1.1 204 No Content\r\n\r\n").is_err() {
            return;
        }
    }
}

fn decode(headers: &BTreeMap<String, String>, body: &[u8], tenant: &str) -> Vec<Pushed> {
    let kind = headers.get("content-type").map(String::as_str).unwrap_or("");
    let mut out = Vec::new();
    if kind.contains("protobuf") {
        let raw = snap::raw::Decoder::new().decompress_vec(body).expect("snappy");
        let req = <PushRequest as prost::Message>::decode(raw.as_slice()).expect("protobuf");
        for s in req.streams {
            let labels = parse_labels(&s.labels);
            for e in s.entries {
                let ts = e.timestamp.map(|t| i128::from(t.seconds) * 1_000_000_000 + i128::from(t.nanos)).unwrap_or(0);
                out.push(Pushed {
                    tenant: tenant.to_string(),
                    labels: labels.clone(),
                    line: String::from_utf8_lossy(&e.line).into_owned(),
                    metadata: e.structured_metadata.into_iter().map(|p| (p.name, p.value)).collect(),
                    ts,
                });
            }
        }
        return out;
    }
    let body = if headers.get("content-encoding").is_some_and(|v| v == "gzip") {
        let mut d = Vec::new();
        flate2::read::GzDecoder::new(body).read_to_end(&mut d).expect("gzip");
        d
    } else {
        body.to_vec()
    };
    let v: serde_json::Value = serde_json::from_slice(&body).expect("JSON push");
    for s in v["streams"].as_array().into_iter().flatten() {
        let labels: BTreeMap<String, String> = s["stream"]
            .as_object()
            .into_iter()
            .flatten()
            .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
            .collect();
        for e in s["values"].as_array().into_iter().flatten() {
            let metadata = e[2]
                .as_object()
                .into_iter()
                .flatten()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
                .collect();
            out.push(Pushed {
                tenant: tenant.to_string(),
                labels: labels.clone(),
                line: e[1].as_str().unwrap_or_default().to_string(),
                metadata,
                ts: e[0].as_str().and_then(|t| t.parse().ok()).unwrap_or(0),
            });
        }
    }
    out
}

/// `{a="b", c="d\"e"}` as a map.
fn parse_labels(s: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut rest = s.trim().trim_start_matches('{');
    while let Some(eq) = rest.find("=\"") {
        let name = rest[..eq].trim_start_matches([',', ' ']).to_string();
        let mut value = String::new();
        let mut chars = rest[eq + 2..].char_indices();
        let mut end = rest.len() - eq - 2;
        while let Some((i, c)) = chars.next() {
            match c {
                '\\' => match chars.next() {
                    Some((_, 'n')) => value.push('\n'),
                    Some((_, c)) => value.push(c),
                    None => {}
                },
                '"' => {
                    end = i + 1;
                    break;
                }
                c => value.push(c),
            }
        }
        out.insert(name, value);
        rest = &rest[eq + 2 + end..];
    }
    out
}
