//! A recording HTTP server on 127.0.0.1 for black-box tests of the
//! management commands, and a runner of the real binary.
//!
//! The server answers every request with a closure of the test and records
//! method, path, raw query, headers, body and arrival time, so tests can
//! assert exactly what the binary sent.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};

/// One request as the server saw it.
#[derive(Debug, Clone)]
pub struct Req {
    pub method: String,
    pub path: String,
    /// The raw query string, `""` when there is none.
    pub query: String,
    pub headers: BTreeMap<String, String>,
    pub body: String,
    pub at: Instant,
}

impl Req {
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body)
            .unwrap_or_else(|e| panic!("body of {} {} is not JSON ({e}): {}", self.method, self.path, self.body))
    }
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).map(String::as_str)
    }
}

/// A reply: status, JSON or empty body, extra headers.
#[derive(Debug, Clone)]
pub struct Reply {
    pub status: u16,
    pub body: String,
    pub headers: Vec<(String, String)>,
}

impl Reply {
    pub fn json(status: u16, v: serde_json::Value) -> Self {
        Self { status, body: v.to_string(), headers: vec![("content-type".into(), "application/json".into())] }
    }
    pub fn ok(v: serde_json::Value) -> Self {
        Self::json(200, v)
    }
    pub fn empty(status: u16) -> Self {
        Self { status, body: String::new(), headers: Vec::new() }
    }
    pub fn text(status: u16, body: &str) -> Self {
        Self { status, body: body.into(), headers: Vec::new() }
    }
    pub fn with_header(mut self, k: &str, v: &str) -> Self {
        self.headers.push((k.into(), v.into()));
        self
    }
}

type Handler = Arc<dyn Fn(&Req, usize) -> Reply + Send + Sync>;

#[derive(Clone)]
struct Shared {
    reqs: Arc<Mutex<Vec<Req>>>,
    handler: Handler,
}

pub struct Mock {
    pub url: String,
    reqs: Arc<Mutex<Vec<Req>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Mock {
    /// Starts a server whose answers come from `handler(request, index of the request)`.
    pub async fn start(handler: impl Fn(&Req, usize) -> Reply + Send + Sync + 'static) -> Self {
        let reqs = Arc::new(Mutex::new(Vec::new()));
        let shared = Shared { reqs: reqs.clone(), handler: Arc::new(handler) };
        let app = axum::Router::new().fallback(record).with_state(shared);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let task = tokio::spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        Self { url, reqs, task }
    }

    pub fn requests(&self) -> Vec<Req> {
        self.reqs.lock().unwrap().clone()
    }
}

impl Drop for Mock {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn record(State(s): State<Shared>, method: Method, uri: Uri, headers: HeaderMap, body: Bytes) -> Response {
    let req = Req {
        method: method.to_string(),
        path: uri.path().to_string(),
        query: uri.query().unwrap_or("").to_string(),
        headers: headers
            .iter()
            .map(|(k, v)| (k.as_str().to_string(), String::from_utf8_lossy(v.as_bytes()).into_owned()))
            .collect(),
        body: String::from_utf8_lossy(&body).into_owned(),
        at: Instant::now(),
    };
    let index = {
        let mut r = s.reqs.lock().unwrap();
        r.push(req.clone());
        r.len() - 1
    };
    let reply = (s.handler)(&req, index);
    let mut resp = (StatusCode::from_u16(reply.status).unwrap(), reply.body).into_response();
    for (k, v) in reply.headers {
        resp.headers_mut().insert(
            axum::http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
            axum::http::HeaderValue::from_str(&v).unwrap(),
        );
    }
    resp
}

/// What a run of the binary left behind.
#[derive(Debug)]
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.stdout).unwrap_or_else(|e| panic!("stdout is not JSON ({e}):\n{}", self.stdout))
    }
}

/// Runs the real binary with `args`, a clean `TAILSHIP_*` environment plus
/// `env`, in `dir` when given; fails the test after 60 s.
pub async fn run(args: &[&str], env: &[(&str, &str)], dir: Option<&std::path::Path>) -> Run {
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_tailship"));
    cmd.args(args).kill_on_drop(true);
    for (k, _) in std::env::vars() {
        if k.starts_with("TAILSHIP_") || k == "RUST_LOG" {
            cmd.env_remove(k);
        }
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    if let Some(d) = dir {
        cmd.current_dir(d);
    }
    let out = tokio::time::timeout(Duration::from_secs(60), cmd.output())
        .await
        .expect("the binary did not finish within 60 s")
        .expect("cannot run the binary");
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}
