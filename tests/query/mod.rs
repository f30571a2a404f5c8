//! Black-box tests of `tailship query`, `tailship tail` and `tailship labels`:
//! the real binary against `tailship receive`, or against small servers
//! written here when a test needs a fault (429 in the middle of a tail) or has
//! to prove that no request was sent.

use crate::common;

use std::collections::{BTreeMap, HashMap};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{bin, push_body, push_body_streams, request, wait_for, Receiver};
use serde_json::Value;

mod access;
mod answers;
mod tail;

const HOUR_NS: i64 = 3_600_000_000_000;

fn now_ns() -> i64 {
    i64::try_from(std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).expect("clock").as_nanos())
        .expect("ns")
}

/// Runs `tailship <args>` against `url` to the end, with no inherited client settings.
fn run(url: &str, args: &[&str]) -> Output {
    tailship(url, args).stdin(Stdio::null()).output().expect("run tailship")
}

fn tailship(url: &str, args: &[&str]) -> Command {
    let mut c = Command::new(bin());
    c.args(args).env("TAILSHIP_URL", url).env("NO_COLOR", "1").env("RUST_LOG", "warn");
    for v in ["TAILSHIP_ORG_ID", "TAILSHIP_USERNAME", "TAILSHIP_PASSWORD_FILE", "TAILSHIP_API_PREFIX"] {
        c.env_remove(v);
    }
    c
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn ok(o: &Output) -> String {
    assert!(o.status.success(), "exit {:?}: {}", o.status.code(), stderr(o));
    stdout(o)
}

/// `jsonl` output as (ts, labels, line).
fn jsonl(text: &str) -> Vec<(i64, BTreeMap<String, String>, String)> {
    text.lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}"));
            let ts = v["ts"].as_str().expect("ts").parse().expect("ts number");
            let labels = v["labels"]
                .as_object()
                .expect("labels")
                .iter()
                .map(|(k, v)| (k.clone(), v.as_str().expect("label").to_string()))
                .collect();
            (ts, labels, v["line"].as_str().expect("line").to_string())
        })
        .collect()
}

/// A child `tailship tail` whose stdout and stderr are collected as they come.
struct Tail {
    child: Child,
    out: Arc<Mutex<String>>,
    err: Arc<Mutex<String>>,
}

fn collect(pipe: impl Read + Send + 'static) -> Arc<Mutex<String>> {
    let buf = Arc::new(Mutex::new(String::new()));
    let b = buf.clone();
    std::thread::spawn(move || {
        let mut r = BufReader::new(pipe);
        let mut line = String::new();
        while matches!(r.read_line(&mut line), Ok(n) if n > 0) {
            b.lock().expect("lock").push_str(&line);
            line.clear();
        }
    });
    buf
}

impl Tail {
    fn start(url: &str, args: &[&str]) -> Tail {
        let mut child = tailship(url, args)
            .arg("--output")
            .arg("jsonl")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn tail");
        let out = collect(child.stdout.take().expect("stdout"));
        let err = collect(child.stderr.take().expect("stderr"));
        Tail { child, out, err }
    }

    fn lines(&self) -> Vec<String> {
        jsonl(&self.out.lock().expect("lock")).into_iter().map(|(_, _, l)| l).collect()
    }

    fn stderr(&self) -> String {
        self.err.lock().expect("lock").clone()
    }

    /// Waits until every line of `want` was printed (20s at most).
    fn wait_for_lines(&self, want: &[String]) {
        let done = wait_for(Duration::from_secs(20), || {
            let got = self.lines();
            want.iter().all(|w| got.contains(w))
        });
        let got = self.lines();
        let missing: Vec<&String> = want.iter().filter(|w| !got.contains(w)).collect();
        assert!(
            done,
            "tail did not print {} lines, such as {:?}; stderr: {}",
            missing.len(),
            missing.first(),
            self.stderr()
        );
    }

    /// Sends `sig` and asserts a clean exit 0 within 10s.
    fn stop(mut self, sig: i32) -> Vec<String> {
        let pid = i32::try_from(self.child.id()).expect("pid");
        // SAFETY: kill(2) on our own child.
        unsafe { libc::kill(pid, sig) };
        let mut status = None;
        wait_for(Duration::from_secs(10), || {
            status = self.child.try_wait().expect("try_wait");
            status.is_some()
        });
        let Some(status) = status else {
            let _ = self.child.kill();
            panic!("tail did not exit after the signal");
        };
        assert_eq!(status.code(), Some(0), "tail exit; stderr: {}", self.stderr());
        // The pipe readers finish once the child is gone.
        wait_for(Duration::from_secs(5), || Arc::strong_count(&self.out) == 1);
        self.lines()
    }
}

impl Drop for Tail {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn assert_each_once(got: &[String], want: &[String]) {
    let mut counts: HashMap<&String, usize> = HashMap::new();
    for g in got {
        *counts.entry(g).or_default() += 1;
    }
    let dups: Vec<_> = counts.iter().filter(|(_, n)| **n > 1).collect();
    assert!(dups.is_empty(), "printed more than once: {dups:?}");
    for w in want {
        assert!(counts.contains_key(w), "missing {w}");
    }
    assert_eq!(got.len(), want.len(), "unexpected extra lines");
}

/// 2,500 lines over two streams: runs of 5 entries sharing a timestamp, then
/// one run of 500 at a single timestamp (longer than a batch of 300).
fn push_paging_data(r: &Receiver, base: i64) -> Vec<(i64, String)> {
    let mut a = Vec::new();
    let mut b = Vec::new();
    let mut all = Vec::new();
    for i in 0..2500i64 {
        let ts = if i < 2000 { base + (i / 5) * 1000 } else { base + 5_000_000 };
        let line = format!("line {i:04}");
        all.push((ts, line.clone()));
        if i % 2 == 0 { &mut a } else { &mut b }.push((ts, line));
    }
    let a: Vec<(i64, &str)> = a.iter().map(|(t, l)| (*t, l.as_str())).collect();
    let b: Vec<(i64, &str)> = b.iter().map(|(t, l)| (*t, l.as_str())).collect();
    let body = push_body_streams(&[(&[("job", "page"), ("s", "a")], &a), (&[("job", "page"), ("s", "b")], &b)]);
    let resp = r.push(&body);
    assert_eq!(resp.status, 204, "{}", resp.text());
    all
}

#[test]
fn query_pages_2500_lines_with_batch_300_in_both_directions() {
    let r = Receiver::start(&[]);
    let base = now_ns() - HOUR_NS / 2;
    let all = push_paging_data(&r, base);
    let want: Vec<String> = all.iter().map(|(_, l)| l.clone()).collect();
    for direction in ["forward", "backward"] {
        let out = ok(&run(
            &r.base,
            &[
                "query",
                r#"{job="page"}"#,
                "--since",
                "1h",
                "--limit",
                "0",
                "--batch",
                "300",
                "--direction",
                direction,
                "-o",
                "jsonl",
            ],
        ));
        let got = jsonl(&out);
        let lines: Vec<String> = got.iter().map(|(_, _, l)| l.clone()).collect();
        assert_each_once(&lines, &want);
        // In order: timestamps never go back, and every line is at its own timestamp.
        let ts: Vec<i64> = got.iter().map(|(t, _, _)| *t).collect();
        match direction {
            "forward" => assert!(ts.windows(2).all(|w| w[0] <= w[1]), "forward order"),
            _ => assert!(ts.windows(2).all(|w| w[0] >= w[1]), "backward order"),
        }
        let by_line: HashMap<&String, i64> = all.iter().map(|(t, l)| (l, *t)).collect();
        assert!(got.iter().all(|(t, _, l)| by_line[l] == *t));
    }
    // A limit over several pages stops exactly there; runs of 5 make the first 1000 lines well defined.
    let out = ok(&run(
        &r.base,
        &["query", r#"{job="page"}"#, "--limit", "1000", "--batch", "300", "--direction", "forward", "-o", "raw"],
    ));
    let lines: Vec<String> = out.lines().map(str::to_string).collect();
    let mut sorted = lines.clone();
    sorted.sort();
    assert_eq!(sorted, want[..1000].to_vec());
    // --from/--to select part of the range, end exclusive.
    let from = (base + 100 * 1000).to_string();
    let to = (base + 200 * 1000).to_string();
    let out =
        ok(&run(&r.base, &["query", r#"{job="page"}"#, "--from", &from, "--to", &to, "--limit", "0", "-o", "raw"]));
    assert_eq!(out.lines().count(), 500);
}

#[test]
fn default_output_and_no_labels_and_default_limit() {
    let r = Receiver::start(&[]);
    let base = now_ns() - 60_000_000_000;
    let values: Vec<(i64, String)> = (0..150).map(|i| (base + i, format!("msg {i}"))).collect();
    let v: Vec<(i64, &str)> = values.iter().map(|(t, l)| (*t, l.as_str())).collect();
    assert_eq!(r.push(&push_body(&[("job", "fmt"), ("host", "h1")], &v)).status, 204);
    let out = ok(&run(&r.base, &["query", r#"{job="fmt"}"#]));
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 100, "default limit");
    // Newest first, RFC 3339 UTC with nanoseconds, labels, line; no colour off a terminal.
    assert!(lines[0].ends_with(r#"Z {host="h1", job="fmt"} msg 149"#), "{}", lines[0]);
    assert!(!out.contains('\x1b'));
    let out = ok(&run(&r.base, &["query", r#"{job="fmt"} |= "msg 14""#, "--no-labels", "--direction", "forward"]));
    let first = out.lines().next().expect("a line");
    let (time, line) = first.split_once(' ').expect("time and line");
    assert_eq!(line, "msg 14");
    assert_eq!(time.len(), "2024-01-01T00:00:00.000000000Z".len(), "{time}");
}

#[test]
fn instant_query_prints_labels_and_values() {
    let r = Receiver::start(&[]);
    let t = now_ns() - 60_000_000_000;
    let body = push_body_streams(&[
        (&[("job", "x")], &[(t, "a"), (t + 1, "b"), (t + 2, "c")]),
        (&[("job", "y")], &[(t, "d"), (t + 1, "e")]),
    ]);
    assert_eq!(r.push(&body).status, 204);
    let q = r#"sum by (job) (count_over_time({job=~"x|y"}[1h]))"#;
    let out = ok(&run(&r.base, &["query", "--instant", q]));
    let mut lines: Vec<&str> = out.lines().collect();
    lines.sort();
    assert_eq!(lines, vec![r#"{job="x"} 3"#, r#"{job="y"} 2"#]);
    let time = (t + 10).to_string();
    let out = ok(&run(&r.base, &["query", "--instant", q, "--time", &time, "-o", "jsonl"]));
    let mut got: Vec<(String, String)> = out
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).expect("json");
            assert!(v["time"].as_str().is_some_and(|s| s.ends_with('Z')), "{v}");
            (v["labels"]["job"].as_str().expect("job").to_string(), v["value"].as_str().expect("value").to_string())
        })
        .collect();
    got.sort();
    assert_eq!(got, vec![("x".into(), "3".into()), ("y".into(), "2".into())]);
}

#[test]
fn instant_with_a_plain_selector_explains_that_it_needs_a_metric_query() {
    let r = Receiver::start(&[]);
    let o = run(&r.base, &["query", "--instant", r#"{job="x"}"#]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("needs a metric query"), "{}", stderr(&o));
    assert!(stderr(&o).contains("count_over_time({job=\"x\"}[5m])"), "{}", stderr(&o));
}

/// A listener that counts the connections it is offered, without answering.
fn silent_listener() -> (TcpListener, String) {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind");
    l.set_nonblocking(true).expect("nonblocking");
    let url = format!("http://{}", l.local_addr().expect("addr"));
    (l, url)
}

#[test]
fn empty_selector_fails_before_any_request() {
    let (listener, url) = silent_listener();
    for args in [
        vec!["query", "{}"],
        vec!["query", r#"{job=~".*"}"#],
        vec!["query", r#"{job=""} |= "x""#],
        vec!["query", "--instant", r#"rate({job=~".*"}[1m])"#],
        vec!["tail", "{}"],
    ] {
        let o = run(&url, &args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains("at least one label matcher"), "{args:?}: {}", stderr(&o));
    }
    // A connection would wait in the backlog; there is none.
    match listener.accept() {
        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
        other => panic!("a request was sent: {other:?}"),
    }
}

/// A log API that answers `query_range` from a list of entries and fails the
/// requests whose numbers (1-based) are in `fail` with 429.
struct FakeApi {
    url: String,
    entries: Arc<Mutex<Vec<(i64, String)>>>,
    requests: Arc<AtomicUsize>,
}

fn query_params(target: &str) -> HashMap<String, String> {
    let q = target.split_once('?').map(|(_, q)| q).unwrap_or("");
    q.split('&').filter_map(|kv| kv.split_once('=')).map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

fn fake_api(fail: &'static [usize]) -> FakeApi {
    fake_api_capped(fail, usize::MAX)
}

/// [`fake_api`] answering at most `cap` entries per request, whatever `limit`
/// asked (as a service with a per-query entry limit below the asked batch does).
fn fake_api_capped(fail: &'static [usize], cap: usize) -> FakeApi {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    let entries: Arc<Mutex<Vec<(i64, String)>>> = Arc::new(Mutex::new(Vec::new()));
    let requests = Arc::new(AtomicUsize::new(0));
    let (e, n) = (entries.clone(), requests.clone());
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { break };
            let Some(first) = request_line(&conn) else { continue };
            let k = n.fetch_add(1, Ordering::SeqCst) + 1;
            let target = first.split(' ').nth(1).unwrap_or("");
            if fail.contains(&k) {
                let body = "too many requests";
                let _ = write!(
                    conn,
                    "HTTP/1.1 429 Too Many Requests\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
                continue;
            }
            let p = query_params(target);
            let num = |k: &str| p.get(k).and_then(|v| v.parse::<i64>().ok()).expect("numeric param");
            let (start, end, limit) = (num("start"), num("end"), num("limit") as usize);
            assert_eq!(p.get("direction").map(String::as_str), Some("forward"));
            let mut page: Vec<(i64, String)> =
                e.lock().expect("lock").iter().filter(|(t, _)| *t >= start && *t < end).cloned().collect();
            page.sort();
            page.truncate(limit.min(cap));
            let values: Vec<Value> = page.iter().map(|(t, l)| serde_json::json!([t.to_string(), l])).collect();
            let body = serde_json::json!({
                "status": "success",
                "data": {"resultType": "streams", "result": [{"stream": {"job": "fake"}, "values": values}]}
            })
            .to_string();
            let _ = write!(
                conn,
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    FakeApi { url, entries, requests }
}

#[test]
fn closing_the_pipe_after_one_line_exits_0_quietly() {
    let r = Receiver::start(&[]);
    push_paging_data(&r, now_ns() - HOUR_NS / 2);
    let mut child = tailship(&r.base, &["query", r#"{job="page"}"#, "--limit", "0", "--batch", "300"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let mut out = BufReader::new(child.stdout.take().expect("stdout"));
    let mut first = String::new();
    out.read_line(&mut first).expect("read");
    assert!(first.contains("line "), "{first}");
    drop(out);
    let mut err = String::new();
    child.stderr.take().expect("stderr").read_to_string(&mut err).expect("stderr");
    let status = child.wait().expect("wait");
    assert_eq!(status.code(), Some(0), "{err}");
    assert!(err.is_empty(), "quiet: {err}");
}

#[test]
fn api_prefix_flag_reaches_a_loki_style_path() {
    let r = Receiver::start(&["--api-prefix", "/loki/api/v1"]);
    let t = now_ns() - 60_000_000_000;
    let resp = common::post_json(&r.url("/loki/api/v1/push"), &push_body(&[("job", "loki")], &[(t, "via loki path")]));
    assert_eq!(resp.status, 204, "{}", resp.text());
    let out = ok(&run(&r.base, &["query", r#"{job="loki"}"#, "--api-prefix", "/loki/api/v1", "-o", "raw"]));
    assert_eq!(out.trim(), "via loki path");
    // Without --api-prefix, the default one's 404 sends the query to Loki's.
    let out = ok(&run(&r.base, &["query", r#"{job="loki"}"#, "-o", "raw"]));
    assert_eq!(out.trim(), "via loki path");
    // A prefix chosen on purpose that is not served: a clear runtime failure naming the fix.
    let o = run(&r.base, &["query", r#"{job="loki"}"#, "--api-prefix", "/logstore/api/v1"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("404") && stderr(&o).contains("--api-prefix /loki/api/v1"), "{}", stderr(&o));
}

fn push_lines(r: &Receiver, n: i64) -> Vec<String> {
    let base = now_ns() - HOUR_NS / 4;
    let lines: Vec<String> = (0..n).map(|i| format!("paged {i:04}")).collect();
    let v: Vec<(i64, &str)> = lines.iter().enumerate().map(|(i, l)| (base + i as i64 * 1000, l.as_str())).collect();
    assert_eq!(r.push(&push_body(&[("job", "cap")], &v)).status, 204);
    lines
}

#[test]
fn query_limit_0_pages_past_a_service_that_caps_pages_below_the_batch() {
    let api = fake_api_capped(&[], 100);
    let base = now_ns() - HOUR_NS / 4;
    let want: Vec<String> = (0..700).map(|i| format!("capped {i:04}")).collect();
    api.entries.lock().expect("lock").extend(want.iter().enumerate().map(|(i, l)| (base + i as i64, l.clone())));
    let out = ok(&run(
        &api.url,
        &["query", r#"{job="fake"}"#, "--limit", "0", "--direction", "forward", "--since", "1h", "-o", "raw"],
    ));
    let got: Vec<String> = out.lines().map(String::from).collect();
    assert_each_once(&got, &want);
    // Pages of 100 (each after the first re-reads the entry at its boundary:
    // 100 + 7 x 99 >= 700), then one that brings nothing new.
    assert_eq!(api.requests.load(Ordering::SeqCst), 9);
}

#[test]
fn query_and_tail_lower_the_batch_to_the_limit_a_400_names() {
    let r = Receiver::start(&["--max-query-limit", "100"]);
    let want = push_lines(&r, 700);
    for direction in ["forward", "backward"] {
        let out = run(
            &r.base,
            &["query", r#"{job="cap"}"#, "--limit", "0", "--direction", direction, "--since", "1h", "-o", "raw"],
        );
        let text = ok(&out);
        let got: Vec<String> = text.lines().map(String::from).collect();
        assert_each_once(&got, &want);
    }
    let tail =
        Tail::start(&r.base, &["tail", r#"{job="cap"}"#, "--since", "1h", "--interval", "100ms", "--batch", "1000"]);
    tail.wait_for_lines(&want);
    let got = tail.stop(libc::SIGINT);
    assert_each_once(&got, &want);
}

#[test]
fn logcli_habits_addr_and_forward() {
    let r = Receiver::start(&[]);
    let base = now_ns() - HOUR_NS / 4;
    let v: Vec<(i64, &str)> = vec![(base, "one"), (base + 1, "two"), (base + 2, "three")];
    assert_eq!(r.push(&push_body(&[("job", "habits")], &v)).status, 204);
    let mut c = Command::new(bin());
    c.args(["query", r#"{job="habits"}"#, "--addr", &r.base, "--forward", "--since", "1h", "-o", "raw"]);
    c.env_remove("TAILSHIP_URL").env("NO_COLOR", "1");
    let out = c.output().unwrap();
    assert_eq!(ok(&out), "one\ntwo\nthree\n");
}

/// `query` and `labels` against a port nobody listens on took 20 s to say
/// so (the retry backoff); refused connections get two quick retries now,
/// even with a backoff of an hour configured for 429 and 5xx.
#[test]
fn query_and_labels_report_a_refused_connection_without_backing_off() {
    let port = TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("addr").port();
    let url = format!("http://127.0.0.1:{port}");
    let dir = tempfile::tempdir().expect("tempdir");
    let cfg = dir.path().join("t.toml");
    std::fs::write(
        &cfg,
        "[client]\nurl = \"http://127.0.0.1:9\"\n[client.retry]\nmin_backoff = \"1h\"\nmax_backoff = \"2h\"\n",
    )
    .expect("write");
    let cfg = cfg.to_str().expect("path");
    for args in [&["labels", "--config", cfg][..], &["query", r#"{job="x"}"#, "--config", cfg][..]] {
        let mut child = tailship(&url, args).stdout(Stdio::null()).stderr(Stdio::piped()).spawn().expect("spawn");
        let err = collect(child.stderr.take().expect("stderr"));
        let mut status = None;
        let done = wait_for(Duration::from_secs(60), || {
            status = child.try_wait().expect("try_wait");
            status.is_some()
        });
        if !done {
            let _ = child.kill();
        }
        assert!(done, "{args:?} still backing off: {}", err.lock().expect("lock"));
        assert_eq!(status.and_then(|s| s.code()), Some(1), "{args:?}");
        wait_for(Duration::from_secs(5), || Arc::strong_count(&err) == 1);
        let err = err.lock().expect("lock").clone();
        assert!(err.contains("connection failed") && err.contains(&format!("127.0.0.1:{port}")), "{err}");
    }
}

/// logcli's `--quiet`: only the error reaches stderr, not the retry warnings.
#[test]
fn quiet_leaves_only_errors_on_stderr() {
    let port = TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("addr").port();
    let url = format!("http://127.0.0.1:{port}");
    let loud = tailship(&url, &["labels"]).env_remove("RUST_LOG").output().expect("run");
    assert!(stderr(&loud).contains("WARN"), "{}", stderr(&loud));
    for args in [&["labels", "-q"][..], &["query", r#"{job="x"}"#, "--quiet"][..]] {
        let o = tailship(&url, args).env_remove("RUST_LOG").output().expect("run");
        assert_eq!(o.status.code(), Some(1));
        let err = stderr(&o);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.starts_with("tailship: request to") && err.contains("connection failed"), "{err}");
    }
}

/// The request line of the request on `conn`, its headers read past.
fn request_line(conn: &TcpStream) -> Option<String> {
    let mut reader = BufReader::new(conn.try_clone().expect("clone"));
    let mut first = String::new();
    reader.read_line(&mut first).ok()?;
    let mut h = String::new();
    while matches!(reader.read_line(&mut h), Ok(n) if n > 2) {
        h.clear();
    }
    Some(first)
}
