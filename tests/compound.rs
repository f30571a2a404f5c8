//! Exactly once under faults that come together: two pushes of one stream
//! are never on their way at once (Loki 3.7's WAL replay drops entries of
//! one of them after a restart, though it acknowledged both); a receiver's
//! lines that the service acknowledged before a `kill -9` are not pushed
//! again after it, while a batch that was still retrying goes again.

use crate::agent;
use crate::common;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent::{agent_config, free_port, Agent, AgentToml};
use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use common::{push_body, request, wait_for};

/// What the service below saw: each stream's pushes on their way at once
/// (now and at most), and every line it answered 204 to, by text.
#[derive(Default)]
struct Seen {
    in_flight: HashMap<String, usize>,
    max_in_flight: HashMap<String, usize>,
    max_total: usize,
    stored: HashMap<String, u32>,
    refused: u32,
}

#[derive(Clone)]
struct Service {
    seen: Arc<Mutex<Seen>>,
    /// Streams whose pushes are answered 500 while this holds.
    refuse: Arc<Mutex<Option<String>>>,
    delay: Duration,
}

/// The streams (labels as JSON) and lines of a JSON push body.
fn streams_of(body: &[u8]) -> Vec<(String, Vec<String>)> {
    let v: serde_json::Value = serde_json::from_slice(body).unwrap();
    v["streams"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            let lines = s["values"].as_array().unwrap().iter().map(|e| e[1].as_str().unwrap().to_string()).collect();
            (s["stream"].to_string(), lines)
        })
        .collect()
}

async fn push(State(s): State<Service>, body: Bytes) -> StatusCode {
    let streams = streams_of(&body);
    let refused = {
        let refuse = s.refuse.lock().unwrap();
        refuse.as_ref().is_some_and(|r| streams.iter().any(|(labels, _)| labels.contains(r.as_str())))
    };
    {
        let mut seen = s.seen.lock().unwrap();
        for (labels, _) in &streams {
            let n = {
                let n = seen.in_flight.entry(labels.clone()).or_default();
                *n += 1;
                *n
            };
            let max = seen.max_in_flight.entry(labels.clone()).or_default();
            *max = (*max).max(n);
        }
        let total: usize = seen.in_flight.values().filter(|n| **n > 0).count();
        seen.max_total = seen.max_total.max(total);
    }
    tokio::time::sleep(s.delay).await;
    let mut seen = s.seen.lock().unwrap();
    for (labels, lines) in &streams {
        if let Some(n) = seen.in_flight.get_mut(labels) {
            *n -= 1;
        }
        if !refused {
            for l in lines {
                *seen.stored.entry(l.clone()).or_default() += 1;
            }
        }
    }
    if refused {
        seen.refused += 1;
        StatusCode::INTERNAL_SERVER_ERROR
    } else {
        StatusCode::NO_CONTENT
    }
}

/// Starts the service on 127.0.0.1; its URL.
fn start(rt: &tokio::runtime::Runtime, s: Service) -> String {
    let listener = rt.block_on(tokio::net::TcpListener::bind("127.0.0.1:0")).unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let app = axum::Router::new().route("/loki/api/v1/push", axum::routing::post(push)).with_state(s);
    rt.spawn(async move { axum::serve(listener, app).await.unwrap() });
    url
}

/// Four files written at once, many small batches, four pushes allowed on
/// their way: two batches holding one stream were pushed together, which
/// a Loki restart turns into acknowledged lines lost. Now a batch waits
/// until no push of its streams is on its way.
#[test]
fn two_pushes_of_one_stream_are_never_on_their_way_together() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let s = Service { seen: Arc::default(), refuse: Arc::default(), delay: Duration::from_millis(20) };
    let url = start(&rt, s.clone());
    let dir = tempfile::tempdir().unwrap();
    for f in 0..4 {
        let text: String = (0..1500).map(|i| format!("file {f} line {i:05} {}\n", "x".repeat(60))).collect();
        std::fs::write(dir.path().join(format!("{f}.log")), text).unwrap();
    }
    let include = format!("{}/*.log", dir.path().display());
    let client =
        "api_prefix = \"/loki/api/v1\"\ncompression = \"none\"\nbatch = { max_bytes = \"8KiB\", max_wait = \"20ms\", max_in_flight = 4 }";
    let cfg = agent_config(dir.path(), &url, &include, client, "");
    let text = std::fs::read_to_string(&cfg)
        .unwrap()
        .replace("batch = { max_bytes = \"256KiB\", max_wait = \"100ms\" }\n", "");
    std::fs::write(&cfg, text).unwrap();
    let agent = Agent::start(&cfg);
    let stored = || s.seen.lock().unwrap().stored.len();
    assert!(wait_for(Duration::from_secs(60), || stored() == 6000), "{} of 6000\n{}", stored(), agent.stderr_text());
    let seen = s.seen.lock().unwrap();
    assert_eq!(seen.max_in_flight.len(), 4, "{:?}", seen.max_in_flight.keys());
    for (stream, max) in &seen.max_in_flight {
        assert_eq!(*max, 1, "{stream} was in {max} pushes at once");
    }
    assert!(seen.stored.values().all(|n| *n == 1), "a line stored twice");
}

/// A relay's config: a `loki_push` source on `listen`, shipping to `url`.
fn relay_config(dir: &Path, listen: &str, url: &str) -> PathBuf {
    let client = "api_prefix = \"/loki/api/v1\"\ncompression = \"none\"\nreconcile = \"off\"\n\
                  batch = { max_bytes = \"256KiB\", max_wait = \"50ms\" }\n\
                  retry = { min_backoff = \"20ms\", max_backoff = \"200ms\" }";
    let source = format!("[[sources]]\ntype = \"loki_push\"\nname = \"relay\"\nlisten = \"{listen}\"");
    let toml = AgentToml::new(dir, "10s").client(url, client).sync_period("1h").spool("").then(&source);
    toml.write("relay.toml")
}

/// A relay whose batch of stream `a` the service kept refusing (500) while
/// it acknowledged a later batch of stream `b`: killed with -9, the
/// restarted relay read the spool again from `a` and pushed `b`'s lines a
/// second time (Loki kept the copies: `count_over_time` inflated). Now the
/// acknowledgement of `b`'s batch is kept as a file's is, so only `a` goes again.
#[test]
fn receiver_lines_acknowledged_before_a_kill_are_not_pushed_again() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let s = Service {
        seen: Arc::default(),
        refuse: Arc::new(Mutex::new(Some("\"app\":\"a\"".to_string()))),
        delay: Duration::ZERO,
    };
    let url = start(&rt, s.clone());
    let dir = tempfile::tempdir().unwrap();
    let listen = format!("127.0.0.1:{}", free_port());
    let cfg = relay_config(dir.path(), &listen, &url);
    let push_url = format!("http://{listen}/loki/api/v1/push");
    let send = |app: &str, from: usize| {
        let lines: Vec<(i64, String)> =
            (from..from + 50).map(|i| (1_700_000_000_000_000_000 + i as i64, format!("{app} line {i}"))).collect();
        let values: Vec<(i64, &str)> = lines.iter().map(|(t, l)| (*t, l.as_str())).collect();
        let r = request(
            "POST",
            &push_url,
            &[("content-type", "application/json")],
            push_body(&[("app", app)], &values).as_bytes(),
        );
        assert_eq!(r.status, 204, "{}", r.text());
    };
    let agent = Agent::start(&cfg);
    assert!(wait_for(Duration::from_secs(15), || std::net::TcpStream::connect(&listen).is_ok()));
    send("a", 0);
    assert!(wait_for(Duration::from_secs(15), || s.seen.lock().unwrap().refused >= 2), "{}", agent.stderr_text());
    send("b", 0);
    let stored_b = || s.seen.lock().unwrap().stored.keys().filter(|l| l.starts_with("b ")).count();
    assert!(wait_for(Duration::from_secs(15), || stored_b() == 50), "{}", agent.stderr_text());
    // The acknowledgement is in the positions log at once (sync_period is an hour).
    agent.kill9();
    *s.refuse.lock().unwrap() = None;
    let again = Agent::start(&cfg);
    let stored_a = || s.seen.lock().unwrap().stored.keys().filter(|l| l.starts_with("a ")).count();
    assert!(wait_for(Duration::from_secs(20), || stored_a() == 50), "{}", again.stderr_text());
    // Anything sent again would have arrived with `a`'s lines or before them; settle a little more.
    send("b", 50);
    assert!(wait_for(Duration::from_secs(15), || stored_b() == 100), "{}", again.stderr_text());
    let seen = s.seen.lock().unwrap();
    let twice: Vec<_> = seen.stored.iter().filter(|(_, n)| **n > 1).map(|(l, _)| l.clone()).collect();
    assert!(twice.is_empty(), "{} lines stored twice: {:?}", twice.len(), &twice[..twice.len().min(5)]);
    let replayed = again.metrics();
    assert!(replayed.contains("tailship_lines_replayed_total{outcome=\"skipped\",source=\"relay\"} 50"), "{replayed}");
}

/// After a `kill -9` with many small chunks in flight, the restarted agent
/// looked each chunk's lines up on its own, one query at a time (a soak:
/// 2,638 lookups in 122 s, no new line delivered for a minute). Now the
/// first lookup of a stream covers every line of it read again.
#[test]
fn lookups_after_a_restart_are_one_per_stream_not_one_per_chunk() {
    let r = common::Receiver::start(&["--max-query-limit", "1000000", "--answer-after-store", "3s"]);
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("app.log");
    std::fs::write(&log, "").unwrap();
    let cfg = agent_config(dir.path(), &r.base, &log.display().to_string(), "timeout = \"30s\"", "");
    let agent = Agent::start(&cfg);
    // 40 writes, each read on its own: 40 chunks in flight, each held unanswered.
    let mut file = std::fs::OpenOptions::new().append(true).open(&log).unwrap();
    for w in 0..40 {
        let text: String = (0..10).map(|i| format!("write {w:02} line {i} {}\n", "x".repeat(30))).collect();
        std::io::Write::write_all(&mut file, text.as_bytes()).unwrap();
        let want = f64::from(10 * (w + 1));
        assert!(wait_for(Duration::from_secs(20), || agent.metric("tailship_source_lines_total") >= want));
    }
    // Some stored (each answered only 3 s later, one push of the stream at a time), the rest in flight.
    let stored = || r.stats()["entries"].as_u64().unwrap_or(0);
    assert!(wait_for(Duration::from_secs(20), || stored() >= 50), "{} stored", stored());
    agent.kill9();
    let again = Agent::start(&cfg);
    let settled = || {
        let m = again.metrics();
        let v = |name: &str| agent::metric_value(&m, name);
        let read = v("tailship_source_lines_total");
        let found = m.lines().filter(|l| l.starts_with("tailship_lines_replayed_total") && l.contains("reconciled"));
        let found: f64 = found.filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok()).sum();
        read > 0.0 && v("tailship_queue_lines") == 0.0 && v("tailship_push_lines_total") + found >= read
    };
    assert!(
        wait_for(Duration::from_secs(60), settled),
        "{}",
        again.metrics().lines().filter(|l| l.starts_with("tailship_")).collect::<Vec<_>>().join("\n")
    );
    let m = again.metrics();
    let lookups = agent::metric_value(&m, "tailship_lookup_requests_total");
    assert!((1.0..=3.0).contains(&lookups), "{lookups} lookups for 40 chunks of one stream\n{m}");
    assert!(m.contains("outcome=\"reconciled\""), "{m}");
    let mut counts: HashMap<String, u32> = HashMap::new();
    for e in agent::query_all(&r, r#"{job="test"}"#, None) {
        *counts.entry(e.line).or_default() += 1;
    }
    assert_eq!(counts.len(), 400);
    assert!(counts.values().all(|n| *n == 1), "a line stored twice");
}
