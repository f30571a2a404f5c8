//! Helpers shared by the black-box tests: the binary's path, a `tailship
//! receive` child process on a free loopback port, a polling `wait_for`, and
//! a tiny blocking HTTP/1.1 client (reqwest has no blocking feature here).
//!
//! Every test file that includes this module uses only part of it.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Path of the `tailship` binary built for these tests, or `TAILSHIP_BIN`
/// (another build: to show a regression test fails on an older one).
pub fn bin() -> PathBuf {
    std::env::var_os("TAILSHIP_BIN").map(PathBuf::from).unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_tailship")))
}

/// `f` over each of `items` (with its index), `workers` at once; the
/// results in the items' order. For independent cases that mostly wait on
/// processes of their own.
pub fn run_parallel<T: Sync, R: Send>(items: &[T], workers: usize, f: impl Fn(usize, &T) -> R + Sync) -> Vec<R> {
    let next = std::sync::atomic::AtomicUsize::new(0);
    let mut done: Vec<(usize, R)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..workers)
            .map(|_| {
                s.spawn(|| {
                    let mut done = Vec::new();
                    loop {
                        let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let Some(item) = items.get(i) else { return done };
                        done.push((i, f(i, item)));
                    }
                })
            })
            .collect();
        handles.into_iter().flat_map(|h| h.join().unwrap()).collect()
    });
    done.sort_by_key(|(i, _)| *i);
    done.into_iter().map(|(_, r)| r).collect()
}

/// Polls `condition` every 10ms until it holds or `deadline` has passed.
/// Returns whether it held.
pub fn wait_for(deadline: Duration, mut condition: impl FnMut() -> bool) -> bool {
    let end = Instant::now() + deadline;
    loop {
        if condition() {
            return true;
        }
        if Instant::now() >= end {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Reads `pipe` line by line into `buf` until it closes, so the child never
/// blocks on a full pipe.
fn drain(pipe: impl Read + Send + 'static, buf: Arc<Mutex<String>>) {
    std::thread::spawn(move || {
        let mut r = BufReader::new(pipe);
        let mut line = String::new();
        loop {
            line.clear();
            match r.read_line(&mut line) {
                Ok(0) | Err(_) => break,
                Ok(_) => {
                    if let Ok(mut b) = buf.lock() {
                        b.push_str(&line);
                    }
                }
            }
        }
    });
}

/// A `tailship receive` child listening on `127.0.0.1:<free port>`; killed on drop.
pub struct Receiver {
    /// `127.0.0.1:PORT`
    pub addr: String,
    /// `http://127.0.0.1:PORT`
    pub base: String,
    child: Option<Child>,
    stdout: Arc<Mutex<String>>,
    stderr: Arc<Mutex<String>>,
}

const LISTENING: &str = "tailship receive listening on http://";

impl Receiver {
    /// Starts `tailship receive --listen 127.0.0.1:0 <args>` and waits (10s at
    /// most) for its listening line. Panics with its stderr when it fails.
    pub fn start(args: &[&str]) -> Receiver {
        Self::start_on("127.0.0.1:0", args)
    }

    /// [`Receiver::start`] on a given address.
    pub fn start_on(listen: &str, args: &[&str]) -> Receiver {
        let mut child = Command::new(bin())
            .args(["receive", "--listen", listen])
            .args(args)
            .env("RUST_LOG", "info")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn tailship receive");
        let stdout = Arc::new(Mutex::new(String::new()));
        let stderr = Arc::new(Mutex::new(String::new()));
        drain(child.stdout.take().expect("stdout"), stdout.clone());
        drain(child.stderr.take().expect("stderr"), stderr.clone());
        let mut r = Receiver { addr: String::new(), base: String::new(), child: Some(child), stdout, stderr };
        let found = wait_for(Duration::from_secs(10), || {
            let text = r.stdout_text();
            if let Some(rest) = text.split(LISTENING).nth(1) {
                if let Some(addr) = rest.lines().next() {
                    r.addr = addr.trim().to_string();
                    return true;
                }
            }
            r.child.as_mut().is_some_and(|c| matches!(c.try_wait(), Ok(Some(_))))
        });
        assert!(found && !r.addr.is_empty(), "receiver did not start: {}", r.stderr_text());
        r.base = format!("http://{}", r.addr);
        r
    }

    /// The receiver's process id.
    pub fn pid(&self) -> u32 {
        self.child.as_ref().map_or(0, |c| c.id())
    }

    /// Everything the child printed on stdout so far.
    pub fn stdout_text(&self) -> String {
        self.stdout.lock().map(|s| s.clone()).unwrap_or_default()
    }

    /// Everything the child printed on stderr so far.
    pub fn stderr_text(&self) -> String {
        self.stderr.lock().map(|s| s.clone()).unwrap_or_default()
    }

    /// `base` + `path`.
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// URL of a log API endpoint under the default prefix, such as `api("/push")`.
    pub fn api(&self, path: &str) -> String {
        format!("{}/logstore/api/v1{path}", self.base)
    }

    /// POSTs a JSON push body to the default prefix.
    pub fn push(&self, body: &str) -> HttpResponse {
        post_json(&self.api("/push"), body)
    }

    /// GET `/stats` as JSON.
    pub fn stats(&self) -> serde_json::Value {
        let r = get(&self.url("/stats"));
        assert_eq!(r.status, 200, "{}", r.text());
        r.json()
    }

    /// Sends SIGTERM and waits (10s at most) for the exit status.
    pub fn stop(mut self) -> ExitStatus {
        let mut child = self.child.take().expect("child");
        let pid = i32::try_from(child.id()).expect("pid");
        // SAFETY: plain kill(2) on our own child's pid.
        unsafe { libc::kill(pid, libc::SIGTERM) };
        wait_exit(&mut child, Duration::from_secs(10)).unwrap_or_else(|| {
            let _ = child.kill();
            panic!("receiver did not exit within 10s of SIGTERM");
        })
    }
}

/// The exit status of `child` once it exits (waits up to `deadline`; `None` if it runs on).
pub fn wait_exit(child: &mut Child, deadline: Duration) -> Option<ExitStatus> {
    let mut status = None;
    wait_for(deadline, || {
        status = child.try_wait().expect("try_wait");
        status.is_some()
    });
    status
}

impl Drop for Receiver {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// An HTTP response read by [`request`].
#[derive(Debug)]
pub struct HttpResponse {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl HttpResponse {
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.text()))
    }

    /// First header of this name (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }
}

/// Percent-encodes a query parameter value.
pub fn encode(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// `url?k=v&...` with values percent-encoded.
pub fn with_params(url: &str, params: &[(&str, &str)]) -> String {
    let q: Vec<String> = params.iter().map(|(k, v)| format!("{k}={}", encode(v))).collect();
    if q.is_empty() {
        url.to_string()
    } else {
        format!("{url}?{}", q.join("&"))
    }
}

/// One blocking HTTP/1.1 request over a fresh connection (`Connection: close`).
/// Only `http://host:port/...` URLs. Panics on I/O errors.
pub fn request(method: &str, url: &str, headers: &[(&str, &str)], body: &[u8]) -> HttpResponse {
    try_request(method, url, headers, body).unwrap_or_else(|e| panic!("{e}"))
}

/// [`request`], with an I/O error (connect, or a reset before any answer)
/// as `Err` naming the URL.
pub fn try_request(method: &str, url: &str, headers: &[(&str, &str)], body: &[u8]) -> Result<HttpResponse, String> {
    let rest = url.strip_prefix("http://").expect("http:// URL");
    let (host, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    let mut s = TcpStream::connect(host).map_err(|e| format!("connect {host}: {e}"))?;
    s.set_read_timeout(Some(Duration::from_secs(30))).expect("timeout");
    let mut head = format!("{method} {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n");
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    if !body.is_empty() || method == "POST" || method == "PUT" {
        head.push_str(&format!("Content-Length: {}\r\n", body.len()));
    }
    head.push_str("\r\n");
    s.write_all(head.as_bytes()).map_err(|e| format!("write {url}: {e}"))?;
    // A server may answer (413) before reading a large body; ignore write errors then.
    let _ = s.write_all(body);
    let mut raw = Vec::new();
    if let Err(e) = s.read_to_end(&mut raw) {
        // A reset after a complete early answer still leaves the answer in `raw`.
        if raw.is_empty() {
            return Err(format!("read {url}: {e}"));
        }
    }
    Ok(parse_response(&raw))
}

fn parse_response(raw: &[u8]) -> HttpResponse {
    let end = raw.windows(4).position(|w| w == b"\r\n\r\n").expect("end of headers");
    let head = String::from_utf8_lossy(&raw[..end]);
    let mut lines = head.split("\r\n");
    let status_line = lines.next().expect("status line");
    let status: u16 = status_line.split(' ').nth(1).and_then(|s| s.parse().ok()).expect("status code");
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let mut body = raw[end + 4..].to_vec();
    let chunked = headers.iter().any(|(k, v)| k == "transfer-encoding" && v.eq_ignore_ascii_case("chunked"));
    if chunked {
        body = dechunk(&body);
    }
    HttpResponse { status, headers, body }
}

fn dechunk(mut data: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    while let Some(eol) = data.windows(2).position(|w| w == b"\r\n") {
        let size_text = String::from_utf8_lossy(&data[..eol]);
        let size = usize::from_str_radix(size_text.split(';').next().unwrap_or("").trim(), 16).unwrap_or(0);
        data = &data[eol + 2..];
        if size == 0 || data.len() < size {
            break;
        }
        out.extend_from_slice(&data[..size]);
        data = &data[(size + 2).min(data.len())..];
    }
    out
}

pub fn get(url: &str) -> HttpResponse {
    request("GET", url, &[], b"")
}

pub fn get_with(url: &str, headers: &[(&str, &str)]) -> HttpResponse {
    request("GET", url, headers, b"")
}

/// POST with `Content-Type: application/json`.
pub fn post_json(url: &str, body: &str) -> HttpResponse {
    request("POST", url, &[("Content-Type", "application/json")], body.as_bytes())
}

/// Gzip-compresses `data`.
pub fn gzip(data: &[u8]) -> Vec<u8> {
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    enc.write_all(data).expect("gzip");
    enc.finish().expect("gzip")
}

/// A push body of one stream: `labels` and `(ts, line)` values.
pub fn push_body(labels: &[(&str, &str)], values: &[(i64, &str)]) -> String {
    push_body_streams(&[(labels, values)])
}

/// One stream for [`push_body_streams`]: labels and `(ts, line)` values.
pub type TestStream<'a> = (&'a [(&'a str, &'a str)], &'a [(i64, &'a str)]);

/// A push body of several streams.
pub fn push_body_streams(streams: &[TestStream<'_>]) -> String {
    let streams: Vec<serde_json::Value> = streams
        .iter()
        .map(|(labels, values)| {
            let stream: serde_json::Map<String, serde_json::Value> =
                labels.iter().map(|(k, v)| (k.to_string(), serde_json::Value::from(*v))).collect();
            let values: Vec<serde_json::Value> =
                values.iter().map(|(ts, l)| serde_json::json!([ts.to_string(), l])).collect();
            serde_json::json!({ "stream": stream, "values": values })
        })
        .collect();
    serde_json::json!({ "streams": streams }).to_string()
}

/// `s` in base64 (the standard alphabet, padded).
pub fn base64(s: &str) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(s)
}

/// Appends `PREFIX NNNNNNNN` for each number of `range` to `path` (made if missing).
pub fn append_lines(path: &Path, prefix: &str, range: std::ops::Range<u64>) {
    let mut f = std::fs::OpenOptions::new().create(true).append(true).open(path).unwrap();
    let mut text = String::new();
    for i in range {
        text.push_str(&format!("{prefix} {i:08}\n"));
    }
    f.write_all(text.as_bytes()).unwrap();
}

/// Reads `conn` to the end of an HTTP request's head: its request line and
/// the value of its Authorization header ("" without one); `None` when the
/// connection ends first.
pub fn read_request_head(conn: &mut (impl Read + ?Sized)) -> Option<(String, String)> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
        match conn.read(&mut chunk) {
            Ok(0) | Err(_) => return None,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
    let head = String::from_utf8_lossy(&buf).to_string();
    let line = head.lines().next().unwrap_or("").to_string();
    let auth = head
        .lines()
        .find_map(|l| l.to_ascii_lowercase().starts_with("authorization:").then(|| l[14..].trim().to_string()))
        .unwrap_or_default();
    Some((line, auth))
}

/// Every piece of `secret` of 8 characters (the scrubber's shortest) or more
/// is absent from `text`: a piece of 8 is in any longer piece.
pub fn assert_no_piece(what: &str, text: &str, secret: &str) {
    let chars: Vec<char> = secret.chars().collect();
    for w in chars.windows(8) {
        let piece: String = w.iter().collect();
        assert!(!text.contains(&piece), "{what} shows a piece of the secret ({piece}):\n{text}");
    }
}

/// Debian's `systemd-journal-remote`, which writes journal files from the export format.
pub const JOURNAL_REMOTE: &str = "/lib/systemd/systemd-journal-remote";

/// Appends the entries `data` (journal export format) to the journal file
/// `file` (made on first use) with [`JOURNAL_REMOTE`].
pub fn journal_remote(file: &Path, data: &[u8]) {
    let mut child = Command::new(JOURNAL_REMOTE)
        .arg(format!("--output={}", file.display()))
        .arg("-")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(data).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "journal-remote: {}", String::from_utf8_lossy(&out.stderr));
}
