//! logcli's habits in `tailship query`, `tail`, `labels`, `series` and
//! `instant-query`, through the real binary against `tailship receive`
//! serving Loki's prefix (`--api-prefix /loki/api/v1`), and a small server
//! written here where a header has to be seen.

use crate::cli;
use crate::common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use cli::{ok, run, tailship};
use common::{base64, push_body_streams, request, wait_for, Receiver};
use serde_json::Value;

const LOKI: &str = "/loki/api/v1";

fn now_ns() -> i64 {
    i64::try_from(std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).expect("clock").as_nanos())
        .expect("ns")
}

/// A store with Loki's prefix, tenants and basic auth, holding two streams of tenant `t1`.
fn loki() -> (Receiver, tempfile::TempDir, i64) {
    let dir = tempfile::tempdir().unwrap();
    let pw = dir.path().join("pw");
    std::fs::write(&pw, "s3cret-pass\n").unwrap();
    let r = Receiver::start(&[
        "--api-prefix",
        LOKI,
        "--multi-tenant",
        "--basic-auth-user",
        "alice",
        "--basic-auth-password-file",
        pw.to_str().unwrap(),
    ]);
    let t = now_ns() - 60_000_000_000;
    let body = push_body_streams(&[
        (&[("job", "a"), ("pod", "p1")], &[(t, "first a"), (t + 1_000_000_000, "second a")]),
        (&[("job", "b"), ("pod", "p2")], &[(t + 500_000_000, "only b")]),
    ]);
    let auth = format!("Basic {}", base64("alice:s3cret-pass"));
    let resp = request(
        "POST",
        &r.url(&format!("{LOKI}/push")),
        &[("Content-Type", "application/json"), ("X-Scope-OrgID", "t1"), ("Authorization", &auth)],
        body.as_bytes(),
    );
    assert_eq!(resp.status, 204, "{}", resp.text());
    (r, dir, t)
}

/// logcli's environment: address (a Loki: its prefix), user, password, tenant.
fn loki_env(r: &Receiver) -> Vec<(&'static str, String)> {
    vec![
        ("LOKI_ADDR", r.base.clone()),
        ("LOKI_USERNAME", "alice".into()),
        ("LOKI_PASSWORD", "s3cret-pass".into()),
        ("LOKI_ORG_ID", "t1".into()),
    ]
}

fn env_ref<'a>(v: &'a [(&'static str, String)]) -> Vec<(&'static str, &'a str)> {
    v.iter().map(|(k, v)| (*k, v.as_str())).collect()
}

#[test]
fn logcli_environment_jsonl_keys_timezone_and_excluded_labels() {
    let (r, _dir, t) = loki();
    let env = loki_env(&r);
    let env = env_ref(&env);
    // jsonl as logcli writes it: labels, line, timestamp (RFC 3339, fraction trimmed).
    let out = ok(&run(&["query", r#"{job="a"}"#, "--since", "1h", "--forward", "-o", "jsonl"], &env));
    let first: Value = serde_json::from_str(out.lines().next().expect("a line")).unwrap();
    let keys: Vec<&str> = first.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(keys, ["labels", "line", "timestamp", "ts"], "{out}");
    assert_eq!(first["line"], "first a");
    assert_eq!(first["labels"]["pod"], "p1");
    let ts = chrono::DateTime::parse_from_rfc3339(first["timestamp"].as_str().unwrap()).unwrap();
    assert_eq!(ts.timestamp_nanos_opt().unwrap(), t);
    // --timezone Local (here TZ) and --exclude-label.
    let local = [env.clone(), vec![("TZ", "IST-5:30")]].concat();
    let out = ok(&run(
        &["query", r#"{job="a"}"#, "--since", "1h", "--forward", "-z", "Local", "--exclude-label", "pod"],
        &local,
    ));
    let line = out.lines().next().expect("a line");
    assert!(line.split(' ').next().unwrap().ends_with("+05:30"), "{out}");
    assert!(line.contains(r#"{job="a"}"#) && !line.contains("pod"), "{out}");
    // --password and --org-id as flags instead.
    let out = ok(&run(
        &[
            "labels",
            "job",
            "--addr",
            &r.base,
            "--api-prefix",
            LOKI,
            "--username",
            "alice",
            "--password",
            "s3cret-pass",
            "--org-id",
            "t1",
        ],
        &[],
    ));
    assert_eq!(out.lines().collect::<Vec<_>>(), ["a", "b"]);
}

#[test]
fn series_instant_query_and_range_metric_queries() {
    let (r, _dir, _) = loki();
    let env = loki_env(&r);
    let env = env_ref(&env);
    let out = ok(&run(&["series", r#"{job=~"a|b"}"#, "--since", "1h"], &env));
    assert_eq!(out.lines().collect::<Vec<_>>(), [r#"{job="a", pod="p1"}"#, r#"{job="b", pod="p2"}"#], "{out}");
    let out = ok(&run(&["instant-query", r#"sum(count_over_time({job=~"a|b"}[1h]))"#], &env));
    assert_eq!(out.trim(), "{} 3", "{out}");
    // A metric query over a range prints the matrix, as logcli does.
    let out = ok(&run(&["query", r#"count_over_time({job="a"}[1h])"#, "--since", "10m"], &env));
    let m: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    let series = m.as_array().expect("a matrix");
    assert_eq!(series.len(), 1, "{out}");
    assert_eq!(series[0]["metric"]["job"], "a");
    let values = series[0]["values"].as_array().unwrap();
    // One value every 2.4 s (10 minutes in 250 steps) since the entries, a minute ago.
    assert!(values.len() >= 10, "{out}");
    assert_eq!(values.last().unwrap()[1], "2", "{out}");
    // --step: a point a minute.
    let out = ok(&run(
        &["query", r#"count_over_time({job="a"}[1h])"#, "--since", "10m", "--step", "1m", "-o", "jsonl"],
        &env,
    ));
    let one: Value = serde_json::from_str(out.trim()).unwrap_or_else(|e| panic!("{e}: {out}"));
    let times: Vec<f64> = one["values"].as_array().unwrap().iter().map(|v| v[0].as_f64().unwrap()).collect();
    assert!(!times.is_empty() && times.windows(2).all(|w| (w[1] - w[0] - 60.0).abs() < 0.01), "{out}");
}

#[test]
fn a_404_at_the_default_prefix_is_tried_at_lokis_quietly_and_named() {
    let (r, _dir, _) = loki();
    let auth = ["--username", "alice", "--password", "s3cret-pass", "--org-id", "t1"];
    // --addr without a prefix: the default one 404s, Loki's answers.
    let o = run(&[&["labels", "--addr", &r.base][..], &auth].concat(), &[]);
    assert!(ok(&o).contains("job"));
    // Quietly: the fallback is no news on stderr.
    assert!(!String::from_utf8_lossy(&o.stderr).contains("404"), "{o:?}");
    let o = run(&[&["query", r#"{job="b"}"#, "--addr", &r.base, "--since", "1h"][..], &auth].concat(), &[]);
    assert!(ok(&o).contains("only b"));
    // A prefix given on purpose is not second-guessed: the 404 names the fix.
    let o = run(&[&["labels", "--addr", &r.base, "--api-prefix", "/logstore/api/v1"][..], &auth].concat(), &[]);
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("404") && err.contains("set --api-prefix /loki/api/v1"), "{err}");
}

#[test]
fn query_tail_follows_new_lines() {
    let (r, _dir, _) = loki();
    let env = loki_env(&r);
    let env = env_ref(&env);
    let mut child = Killed(
        tailship(&["query", r#"{job="c"}"#, "--tail", "-o", "raw"], &env)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let out = Arc::new(Mutex::new(String::new()));
    let o = out.clone();
    let stdout = child.0.stdout.take().unwrap();
    std::thread::spawn(move || {
        let mut r = BufReader::new(stdout);
        let mut line = String::new();
        while matches!(r.read_line(&mut line), Ok(n) if n > 0) {
            o.lock().unwrap().push_str(&line);
            line.clear();
        }
    });
    let auth = format!("Basic {}", base64("alice:s3cret-pass"));
    // A little ahead: the tail starts at its own start, which may come after this push.
    let body = push_body_streams(&[(&[("job", "c")], &[(now_ns() + 3_000_000_000, "followed")])]);
    let resp = request(
        "POST",
        &r.url(&format!("{LOKI}/push")),
        &[("Content-Type", "application/json"), ("X-Scope-OrgID", "t1"), ("Authorization", &auth)],
        body.as_bytes(),
    );
    assert_eq!(resp.status, 204);
    assert!(wait_for(Duration::from_secs(20), || out.lock().unwrap().contains("followed")));
}

/// A child killed when dropped, a failed assertion included (a tail never ends by itself).
struct Killed(std::process::Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A server that answers every request with an empty label list and keeps
/// each request's head.
fn header_server() -> (String, Arc<Mutex<Vec<String>>>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = format!("http://{}", l.local_addr().unwrap());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s = seen.clone();
    std::thread::spawn(move || {
        for conn in l.incoming().flatten() {
            let mut conn = conn;
            let mut head = Vec::new();
            let mut buf = [0u8; 1];
            while !head.ends_with(b"\r\n\r\n") && matches!(conn.read(&mut buf), Ok(1)) {
                head.push(buf[0]);
            }
            s.lock().unwrap().push(String::from_utf8_lossy(&head).into_owned());
            let body = r#"{"status":"success","data":[]}"#;
            let _ = write!(
                conn,
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    (addr, seen)
}

#[test]
fn bearer_token_from_the_flag_or_loki_bearer_token_and_logcli_tls_flag_names() {
    let (addr, seen) = header_server();
    ok(&run(&["labels", "--addr", &addr, "--bearer-token", "tok-from-flag-123"], &[]));
    ok(&run(&["labels"], &[("LOKI_ADDR", &addr), ("LOKI_BEARER_TOKEN", "tok-from-env-456")]));
    // logcli's names of the TLS flags are taken (over plain HTTP they change nothing).
    let ca = tempfile::NamedTempFile::new().unwrap();
    let o = run(&["labels", "--addr", &addr, "--tls-skip-verify", "--ca-cert", ca.path().to_str().unwrap()], &[]);
    assert!(!String::from_utf8_lossy(&o.stderr).contains("unexpected argument"), "{o:?}");
    let heads = seen.lock().unwrap().join("\n").to_ascii_lowercase();
    assert!(heads.contains("authorization: bearer tok-from-flag-123"), "{heads}");
    assert!(heads.contains("authorization: bearer tok-from-env-456"), "{heads}");
    // LOKI_ADDR is a Loki: Loki's prefix without a 404 first.
    assert!(heads.contains("get /loki/api/v1/labels"), "{heads}");
}
