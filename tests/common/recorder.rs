//! A push recorder on 127.0.0.1: takes Loki pushes as Promtail sends them
//! (protobuf, snappy) and as tailship sends them (JSON, gzip or not), answers
//! 204, and keeps every entry with its tenant, labels, line, structured
//! metadata and timestamp, so two agents' output can be compared.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};

use tailship::lokipush;

/// The largest body it reads, decompressed.
const MAX_BODY: usize = 256 << 20;

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

/// A push body read by tailship's own Loki push codec (`tailship::lokipush`),
/// protobuf or JSON, as the service would read it.
fn decode(headers: &BTreeMap<String, String>, body: &[u8], tenant: &str) -> Vec<Pushed> {
    let kind = headers.get("content-type").map(String::as_str).unwrap_or("");
    let mut out = Vec::new();
    let pushed = |labels: &BTreeMap<String, String>, line: String, metadata: BTreeMap<String, String>, ts: i64| {
        Pushed { tenant: tenant.to_string(), labels: labels.clone(), line, metadata, ts: i128::from(ts) }
    };
    if kind.contains("protobuf") {
        let req = lokipush::proto::decode_snappy(body, MAX_BODY).expect("snappy protobuf");
        for s in req.streams {
            let labels: BTreeMap<String, String> = s.label_pairs().expect("labels").into_iter().collect();
            for e in s.entries {
                let metadata = e.structured_metadata.iter().map(|p| (p.name.clone(), p.value.clone())).collect();
                out.push(pushed(&labels, String::from_utf8_lossy(&e.line).into_owned(), metadata, e.unix_nanos()));
            }
        }
        return out;
    }
    let json = lokipush::decode(body, headers.get("content-encoding").map(String::as_str), MAX_BODY).expect("body");
    let req = lokipush::parse(&json).expect("JSON push");
    for s in req.streams {
        let labels: BTreeMap<String, String> = s.stream.0.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        for e in s.values {
            let metadata =
                e.metadata.iter().flat_map(|m| m.0.iter()).map(|(k, v)| (k.to_string(), v.to_string())).collect();
            out.push(pushed(&labels, e.line.to_string(), metadata, lokipush::parse_ts(&e.ts).expect("timestamp")));
        }
    }
    out
}
