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

    /// Starts a server speaking TLS with `tls` (see [`Pki`]), whose answers
    /// come from `handler`. With `proxy`, it is also an HTTP proxy: a
    /// `CONNECT host:port` is answered 200 and the tunnel is served as if it
    /// reached `host` (its certificate must name it), so a client of a
    /// service at a fixed URL can be tested through its `proxy_url`.
    pub async fn start_tls(
        tls: Arc<tokio_rustls::rustls::ServerConfig>,
        proxy: bool,
        handler: impl Fn(&Req, usize) -> Reply + Send + Sync + 'static,
    ) -> Self {
        let reqs = Arc::new(Mutex::new(Vec::new()));
        let shared = Shared { reqs: reqs.clone(), handler: Arc::new(handler) };
        let app = axum::Router::new().fallback(record).with_state(shared);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("https://{}", listener.local_addr().unwrap());
        let acceptor = tokio_rustls::TlsAcceptor::from(tls);
        let task = tokio::spawn(async move {
            loop {
                let Ok((mut tcp, _)) = listener.accept().await else { return };
                let (acceptor, app) = (acceptor.clone(), app.clone());
                tokio::spawn(async move {
                    if proxy && !read_connect(&mut tcp).await {
                        return;
                    }
                    let Ok(tls) = acceptor.accept(tcp).await else { return };
                    let service = hyper_util::service::TowerToHyperService::new(app);
                    let io = hyper_util::rt::TokioIo::new(tls);
                    let _ = hyper::server::conn::http1::Builder::new().serve_connection(io, service).await;
                });
            }
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

/// Reads a `CONNECT` request's head and answers 200 (false: not a CONNECT).
async fn read_connect(tcp: &mut tokio::net::TcpStream) -> bool {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        if head.len() > 8192 || tcp.read_exact(&mut byte).await.is_err() {
            return false;
        }
        head.push(byte[0]);
    }
    head.starts_with(b"CONNECT ") && tcp.write_all(b"HTTP/1.1 200 Connection established\r\n\r\n").await.is_ok()
}

/// A private CA, a server certificate naming `names` (and 127.0.0.1), and
/// a client certificate, for a [`Mock::start_tls`] server.
pub struct Pki {
    pub ca: String,
    pub client_cert: String,
    pub client_key: String,
    /// Asks no client certificate.
    pub server: Arc<tokio_rustls::rustls::ServerConfig>,
    /// Asks for a client certificate signed by the CA.
    pub mutual: Arc<tokio_rustls::rustls::ServerConfig>,
}

impl Pki {
    pub fn new(names: &[&str]) -> Self {
        use tokio_rustls::rustls;
        let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        ca_params.distinguished_name.push(rcgen::DnType::CommonName, "test CA");
        let ca_key = rcgen::KeyPair::generate().unwrap();
        let ca_cert = ca_params.self_signed(&ca_key).unwrap();
        let issuer = rcgen::Issuer::from_params(&ca_params, &ca_key);
        let key = rcgen::KeyPair::generate().unwrap();
        let mut sans: Vec<String> = names.iter().map(|n| n.to_string()).collect();
        sans.push("127.0.0.1".into());
        let cert = rcgen::CertificateParams::new(sans).unwrap().signed_by(&key, &issuer).unwrap();
        let mut client_params = rcgen::CertificateParams::new(vec!["tailship".to_string()]).unwrap();
        client_params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ClientAuth];
        let ckey = rcgen::KeyPair::generate().unwrap();
        let ccert = client_params.signed_by(&ckey, &issuer).unwrap();
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut roots = rustls::RootCertStore::empty();
        roots.add(ca_cert.der().clone()).unwrap();
        let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider.clone())
            .build()
            .unwrap();
        let key_der = || rustls::pki_types::PrivateKeyDer::Pkcs8(key.serialize_der().into());
        let builder = || {
            rustls::ServerConfig::builder_with_provider(provider.clone()).with_safe_default_protocol_versions().unwrap()
        };
        let mut server = builder().with_no_client_auth().with_single_cert(vec![cert.der().clone()], key_der()).unwrap();
        server.alpn_protocols = vec![b"http/1.1".to_vec()];
        let mut mutual = builder()
            .with_client_cert_verifier(verifier)
            .with_single_cert(vec![cert.der().clone()], key_der())
            .unwrap();
        mutual.alpn_protocols = vec![b"http/1.1".to_vec()];
        Self {
            ca: ca_cert.pem(),
            client_cert: ccert.pem(),
            client_key: ckey.serialize_pem(),
            server: Arc::new(server),
            mutual: Arc::new(mutual),
        }
    }
}
