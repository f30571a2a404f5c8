//! `type = "loki_push"`: tailship as a relay. Real binaries on loopback: an
//! agent pushing to a relay (`tailship run` with a `loki_push` source) that
//! ships to a `tailship receive`; the relay killed with -9 under load; the
//! spool full; protobuf bodies and auth as Promtail sends them.

use crate::agent;
use crate::common;
use crate::loki_proto;
use crate::recorder;

use std::collections::HashSet;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use agent::{free_port, query_all, write_file, Agent, AgentToml};
use common::{request, wait_for, Receiver};
use loki_proto::{EntryAdapter, LabelPair, PushRequest, StreamAdapter, Timestamp};
use recorder::Recorder;

/// A relay's config: a `loki_push` source on `listen`, shipping to `url`.
fn relay_config(dir: &Path, listen: &str, url: &str, source_extra: &str, top: &str) -> PathBuf {
    let source = format!(
        "[[sources]]\ntype = \"loki_push\"\nname = \"relay\"\nlisten = \"{listen}\"\nlabels = {{ relayed_by = \"r1\" }}\n{source_extra}"
    );
    AgentToml::new(dir, "10s").top(top).client(url, "").spool("").then(&source).write("relay.toml")
}

/// An edge agent's config: `dir/*.log` pushed to the relay at `push_url`.
fn edge_config(dir: &Path, push_url: &str, tenant: &str) -> PathBuf {
    let text = format!(
        r#"shutdown_timeout = "10s"
[server]
listen = ""
[client]
url = "{push_url}"
tenant_id = "{tenant}"
batch = {{ max_bytes = "64KiB", max_wait = "50ms" }}
retry = {{ min_backoff = "20ms", max_backoff = "300ms" }}
[positions]
path = "{dir}/edge-positions.json"
sync_period = "200ms"
[[sources]]
type = "file"
include = ["{dir}/*.log"]
labels = {{ job = "edge" }}
host_label = false
scan_interval = "100ms"
"#,
        dir = dir.display()
    );
    write_file(dir, "edge.toml", &text)
}

fn wait_ready(url: &str) {
    let addr = url.trim_start_matches("http://").split('/').next().unwrap().to_string();
    assert!(wait_for(Duration::from_secs(15), || std::net::TcpStream::connect(&addr).is_ok()), "{url} never answered");
}

#[test]
fn lines_pushed_through_the_relay_arrive_with_their_labels_and_tenant() {
    let dir = tempfile::tempdir().unwrap();
    let store = Receiver::start(&["--multi-tenant", "--max-query-limit", "1000000"]);
    let listen = format!("127.0.0.1:{}", free_port());
    let relay = Agent::start(&relay_config(dir.path(), &listen, &store.base, "", ""));
    wait_ready(&format!("http://{listen}/ready"));
    let logs = tempfile::tempdir().unwrap();
    let mut text = String::new();
    for i in 0..500 {
        text.push_str(&format!("edge line {i}\n"));
    }
    write_file(logs.path(), "a.log", &text);
    let _edge = Agent::start(&edge_config(logs.path(), &format!("http://{listen}/loki/api/v1/push"), "team-a"));
    let mut got = Vec::new();
    let arrived = wait_for(Duration::from_secs(30), || {
        got = query_all(&store, r#"{job="edge"}"#, Some("team-a"));
        got.len() >= 500
    });
    assert!(arrived, "{} of 500 arrived; relay: {}", got.len(), relay.stderr_text());
    assert_eq!(got.len(), 500);
    assert_eq!(got[0].labels["relayed_by"], "r1");
    assert!(!got[0].labels.contains_key("host"), "the relay adds no host label: {:?}", got[0].labels);
    assert!(query_all(&store, r#"{job="edge"}"#, Some("other")).is_empty(), "the tenant is kept");
    assert!(relay.metric("tailship_receiver_lines_total") >= 500.0);
}

#[test]
fn an_edge_agent_pushes_to_the_relay_over_https_and_plain_http_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let key = rcgen::KeyPair::generate().unwrap();
    let cert = rcgen::CertificateParams::new(vec!["127.0.0.1".to_string()]).unwrap().self_signed(&key).unwrap();
    write_file(dir.path(), "cert.pem", &cert.pem());
    write_file(dir.path(), "key.pem", &key.serialize_pem());
    let store = Receiver::start(&["--multi-tenant", "--max-query-limit", "1000000"]);
    let listen = format!("127.0.0.1:{}", free_port());
    let tls = format!(
        "receiver = {{ tls = {{ cert_file = \"{d}/cert.pem\", key_file = \"{d}/key.pem\" }} }}",
        d = dir.path().display()
    );
    let relay = Agent::start(&relay_config(dir.path(), &listen, &store.base, &tls, ""));
    wait_ready(&format!("http://{listen}/ready"));
    // Plain HTTP to the TLS port gets no answer, and is counted (so was wait_ready's probe).
    let mut plain = std::net::TcpStream::connect(&listen).unwrap();
    let _ = plain.write_all(b"POST /loki/api/v1/push HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}");
    let mut answer = Vec::new();
    let _ = std::io::Read::read_to_end(&mut plain, &mut answer);
    assert!(!String::from_utf8_lossy(&answer).contains("HTTP/1.1 2"), "{}", String::from_utf8_lossy(&answer));
    assert!(
        wait_for(Duration::from_secs(10), || {
            relay.metric(r#"tailship_receiver_refused_total{reason="tls",source="relay"}"#) >= 1.0
        }),
        "{}",
        relay.metrics()
    );
    let logs = tempfile::tempdir().unwrap();
    let text: String = (0..300).map(|i| format!("tls line {i}\n")).collect();
    write_file(logs.path(), "a.log", &text);
    let edge = edge_config(logs.path(), &format!("https://{listen}/loki/api/v1/push"), "team-t");
    let with_ca = std::fs::read_to_string(&edge).unwrap().replace(
        "tenant_id = \"team-t\"",
        &format!("tenant_id = \"team-t\"\ntls = {{ ca_file = \"{}/cert.pem\" }}", dir.path().display()),
    );
    std::fs::write(&edge, with_ca).unwrap();
    let edge = Agent::start(&edge);
    let mut got = Vec::new();
    let arrived = wait_for(Duration::from_secs(30), || {
        got = query_all(&store, r#"{job="edge"}"#, Some("team-t"));
        got.len() >= 300
    });
    assert!(arrived, "{} of 300; relay: {}\nedge: {}", got.len(), relay.stderr_text(), edge.stderr_text());
}

#[test]
fn protobuf_bodies_with_auth_replaced_tenant_and_loki_answers() {
    let dir = tempfile::tempdir().unwrap();
    let store = Receiver::start(&["--multi-tenant", "--max-query-limit", "1000000"]);
    let listen = format!("127.0.0.1:{}", free_port());
    std::fs::write(dir.path().join("token"), "s3cret\n").unwrap();
    let extra =
        format!("tenant_id = \"fixed\"\nreceiver = {{ bearer_token_file = \"{}/token\" }}", dir.path().display());
    let relay = Agent::start(&relay_config(dir.path(), &listen, &store.base, &extra, ""));
    wait_ready(&format!("http://{listen}/ready"));
    let url = format!("http://{listen}/loki/api/v1/push");
    let req = PushRequest {
        streams: vec![StreamAdapter {
            labels: r#"{job="proto", app="x"}"#.into(),
            entries: (0..3)
                .map(|i| EntryAdapter {
                    timestamp: Some(Timestamp { seconds: now_secs(), nanos: i }),
                    line: format!("proto line {i}").into_bytes(),
                    structured_metadata: vec![LabelPair { name: "trace_id".into(), value: format!("t{i}") }],
                })
                .collect(),
            hash: 0,
        }],
    };
    let body = loki_proto::encode_snappy(&req);
    let proto = [("Content-Type", "application/x-protobuf"), ("X-Scope-OrgID", "sender")];
    assert_eq!(request("POST", &url, &proto, &body).status, 401, "no token");
    let wrong = [proto[0], proto[1], ("Authorization", "Bearer s3cre")];
    assert_eq!(request("POST", &url, &wrong, &body).status, 401, "a wrong token");
    let authed = [proto[0], proto[1], ("Authorization", "Bearer s3cret")];
    let r = request("POST", &url, &authed, &body);
    assert_eq!(r.status, 204, "{}", r.text());
    let bad = request(
        "POST",
        &url,
        &[("Authorization", "Bearer s3cret")],
        br#"{"streams":[{"stream":{"a-b":"x"},"values":[["1","l"]]}]}"#,
    );
    assert_eq!(bad.status, 400);
    assert!(bad.text().contains("invalid label name"), "{}", bad.text());
    let gz = common::gzip(
        common::push_body(&[("job", "proto")], &[(now_secs() * 1_000_000_000, "json gz line")]).as_bytes(),
    );
    let r = request(
        "POST",
        &url,
        &[("Content-Type", "application/json"), ("Content-Encoding", "gzip"), ("Authorization", "Bearer s3cret")],
        &gz,
    );
    assert_eq!(r.status, 204, "{}", r.text());
    let mut got = Vec::new();
    assert!(
        wait_for(Duration::from_secs(20), || {
            got = query_all(&store, r#"{job="proto"}"#, Some("fixed"));
            got.len() >= 4
        }),
        "{got:?} {}",
        relay.stderr_text()
    );
    let lines: HashSet<String> = got.iter().map(|e| e.line.clone()).collect();
    assert!(lines.contains("proto line 2") && lines.contains("json gz line"), "{lines:?}");
    assert!(
        query_all(&store, r#"{job="proto"}"#, Some("sender")).is_empty(),
        "the source's tenant_id replaces the sender's"
    );
    assert!(relay.metric("tailship_receiver_refused_total") >= 2.0);
}

#[test]
fn basic_auth_on_the_receiver_refuses_missing_and_wrong_credentials() {
    use base64::Engine;
    let dir = tempfile::tempdir().unwrap();
    let store = Receiver::start(&["--max-query-limit", "1000000"]);
    let listen = format!("127.0.0.1:{}", free_port());
    std::fs::write(dir.path().join("password"), "pa:ss\n").unwrap();
    let extra = format!(
        "receiver = {{ basic_auth = {{ username = \"edge\", password_file = \"{}/password\" }} }}",
        dir.path().display()
    );
    let relay = Agent::start(&relay_config(dir.path(), &listen, &store.base, &extra, ""));
    wait_ready(&format!("http://{listen}/ready"));
    let url = format!("http://{listen}/loki/api/v1/push");
    let basic = |pair: &str| format!("Basic {}", base64::engine::general_purpose::STANDARD.encode(pair));
    let send = |auth: Option<&str>, line: &str| {
        let body = common::push_body(&[("job", "basic")], &[(now_secs() * 1_000_000_000, line)]);
        let mut headers = vec![("Content-Type", "application/json")];
        if let Some(a) = auth {
            headers.push(("Authorization", a));
        }
        request("POST", &url, &headers, body.as_bytes()).status
    };
    assert_eq!(send(None, "no credentials"), 401);
    assert_eq!(send(Some(&basic("edge:wrong")), "wrong password"), 401);
    assert_eq!(send(Some(&basic("other:pa:ss")), "wrong user"), 401);
    assert_eq!(send(Some("Bearer pa:ss"), "a bearer token instead"), 401);
    assert_eq!(send(Some(&basic("edge:pa:ss")), "right credentials"), 204);
    let mut got = Vec::new();
    assert!(wait_for(Duration::from_secs(20), || {
        got = query_all(&store, r#"{job="basic"}"#, None);
        !got.is_empty()
    }));
    // The refused ones were answered before it was sent: none of them is in the spool.
    let got: Vec<String> = got.into_iter().map(|e| e.line).collect();
    assert_eq!(got, ["right credentials"]);
    assert_eq!(relay.metric(r#"tailship_receiver_refused_total{reason="unauthorized",source="relay"}"#), 4.0);
}

#[test]
fn a_full_spool_answers_429_and_loses_nothing_it_acknowledged() {
    let dir = tempfile::tempdir().unwrap();
    let store_port = free_port();
    let listen = format!("127.0.0.1:{}", free_port());
    let top = "";
    let cfg = relay_config(dir.path(), &listen, &format!("http://127.0.0.1:{store_port}"), "", top);
    let mut text = std::fs::read_to_string(&cfg).unwrap();
    text = text.replace("[spool]\n", "[spool]\nmax_bytes = \"64KiB\"\nsegment_bytes = \"8KiB\"\n");
    std::fs::write(&cfg, text).unwrap();
    let relay = Agent::start(&cfg);
    wait_ready(&format!("http://{listen}/ready"));
    let url = format!("http://{listen}/loki/api/v1/push");
    let mut acked = Vec::new();
    let mut refused = None;
    for i in 0..2000 {
        let line = format!("spooled {i} {}", "x".repeat(200));
        let body = common::push_body(&[("job", "full")], &[(now_secs() * 1_000_000_000 + i, &line)]);
        let r = common::post_json(&url, &body);
        match r.status {
            204 => acked.push(line),
            429 => {
                refused = Some(r);
                break;
            }
            s => panic!("unexpected {s}: {}", r.text()),
        }
    }
    let refused = refused.expect("the spool never filled");
    assert_eq!(refused.header("retry-after"), Some("1"));
    assert!(acked.len() > 100, "{}", acked.len());
    // The service comes up: everything acknowledged arrives, and the spool empties.
    let store = Receiver::start_on(&format!("127.0.0.1:{store_port}"), &["--max-query-limit", "1000000"]);
    let mut got = Vec::new();
    assert!(
        wait_for(Duration::from_secs(30), || {
            got = query_all(&store, r#"{job="full"}"#, None);
            got.len() >= acked.len()
        }),
        "{} of {} {}",
        got.len(),
        acked.len(),
        relay.stderr_text()
    );
    let lines: HashSet<String> = got.into_iter().map(|e| e.line).collect();
    assert!(acked.iter().all(|l| lines.contains(l)));
    assert!(
        wait_for(Duration::from_secs(10), || {
            let body = common::push_body(&[("job", "full")], &[(now_secs() * 1_000_000_000, "after")]);
            common::post_json(&url, &body).status == 204
        }),
        "the spool has room again once delivered"
    );
    let segments = || std::fs::read_dir(dir.path().join("spool/relay")).unwrap().count();
    assert!(wait_for(Duration::from_secs(10), || segments() <= 2), "delivered segments are deleted: {}", segments());
}

#[test]
fn the_relay_killed_with_9_under_load_loses_no_acknowledged_line() {
    let dir = tempfile::tempdir().unwrap();
    let store = Receiver::start(&["--max-query-limit", "1000000"]);
    let listen = format!("127.0.0.1:{}", free_port());
    let cfg = relay_config(dir.path(), &listen, &store.base, "", "");
    let mut relay = Agent::start(&cfg);
    wait_ready(&format!("http://{listen}/ready"));
    let logs = tempfile::tempdir().unwrap();
    let _edge = Agent::start(&edge_config(logs.path(), &format!("http://{listen}/loki/api/v1/push"), "t"));
    let total = 30_000;
    let path = logs.path().join("load.log");
    let mut f = std::fs::File::create(&path).unwrap();
    for round in 0..3 {
        for i in 0..total / 3 {
            writeln!(f, "load line {} {}", round * (total / 3) + i, "y".repeat(100)).unwrap();
        }
        f.flush().unwrap();
        // Kill the relay while lines are arriving; start it again.
        assert!(wait_for(Duration::from_secs(20), || relay.metric("tailship_receiver_lines_total") > 0.0));
        std::thread::sleep(Duration::from_millis(150 * (round + 1) as u64));
        relay.kill9();
        relay = Agent::start(&cfg);
        wait_ready(&format!("http://{listen}/ready"));
    }
    let mut got = Vec::new();
    assert!(
        wait_for(Duration::from_secs(60), || {
            got = query_all(&store, r#"{job="edge"}"#, None);
            let distinct: HashSet<&str> = got.iter().map(|e| e.line.as_str()).collect();
            distinct.len() >= total
        }),
        "{} entries {}",
        got.len(),
        relay.stderr_text()
    );
    let distinct: HashSet<String> = got.into_iter().map(|e| e.line).collect();
    for i in 0..total {
        assert!(distinct.contains(&format!("load line {i} {}", "y".repeat(100))), "line {i} lost");
    }
}

/// Pushes `n` lines to the relay at `listen`; returns them (every one acknowledged).
fn push_acked(listen: &str, n: usize, tag: &str) -> Vec<String> {
    let url = format!("http://{listen}/loki/api/v1/push");
    (0..n)
        .map(|i| {
            let line = format!("{tag} {i}");
            let body = common::push_body(&[("job", "gone")], &[(now_secs() * 1_000_000_000 + i as i64, &line)]);
            let r = common::post_json(&url, &body);
            assert_eq!(r.status, 204, "{}", r.text());
            line
        })
        .collect()
}

/// The relay's config with its `loki_push` source replaced by a file source (nothing to read).
fn without_the_push_source(cfg: &Path, dir: &Path) {
    let text = std::fs::read_to_string(cfg).unwrap();
    let at = text.find("[[sources]]").unwrap();
    let rest =
        format!("[[sources]]\ntype = \"file\"\nname = \"files\"\ninclude = [\"{}/none/*.log\"]\n", dir.display());
    std::fs::write(cfg, format!("{}{rest}", &text[..at])).unwrap();
}

/// Waits until every line in `acked` is stored once with the removed
/// source's labels (its `labels` and what its stages set), and its spool
/// directory is gone.
fn drained(store: &Receiver, acked: &[String], spool: &Path, relay: &Agent) {
    let mut got = Vec::new();
    let all = wait_for(Duration::from_secs(30), || {
        got = query_all(store, r#"{job="gone", relayed_by="r1", stage="ran"}"#, None);
        got.len() >= acked.len()
    });
    assert!(all, "{} of {} {}", got.len(), acked.len(), relay.stderr_text());
    let lines: Vec<&str> = got.iter().map(|e| e.line.as_str()).collect();
    let distinct: HashSet<&str> = lines.iter().copied().collect();
    assert_eq!(distinct.len(), lines.len(), "a line twice");
    assert!(acked.iter().all(|l| distinct.contains(l.as_str())));
    assert!(
        wait_for(Duration::from_secs(10), || !spool.exists()),
        "the delivered spool stays: {}",
        relay.stderr_text()
    );
}

/// A relay whose source has a stage, shipping to a service that is down (on
/// the returned port): what it acknowledges waits in the spool.
fn relay_with_the_service_down(dir: &Path) -> (PathBuf, String, u16, Agent) {
    let store_port = free_port();
    let listen = format!("127.0.0.1:{}", free_port());
    let stages = "stages = [{ static_labels = { stage = \"ran\" } }]";
    let cfg = relay_config(dir, &listen, &format!("http://127.0.0.1:{store_port}"), stages, "");
    let relay = Agent::start(&cfg);
    wait_ready(&format!("http://{listen}/ready"));
    (cfg, listen, store_port, relay)
}

#[test]
fn a_source_removed_by_a_reload_has_its_spooled_lines_delivered_and_its_spool_removed() {
    let dir = tempfile::tempdir().unwrap();
    let (cfg, listen, store_port, relay) = relay_with_the_service_down(dir.path());
    let acked = push_acked(&listen, 200, "spooled");
    without_the_push_source(&cfg, dir.path());
    relay.signal(libc::SIGHUP);
    assert!(wait_for(Duration::from_secs(10), || std::net::TcpStream::connect(&listen).is_err()), "still listening");
    let series = r#"tailship_spool_bytes{source="relay"}"#;
    assert!(relay.metric(series) > 0.0, "{}", relay.metrics());
    let store = Receiver::start_on(&format!("127.0.0.1:{store_port}"), &["--max-query-limit", "1000000"]);
    drained(&store, &acked, &dir.path().join("spool/relay"), &relay);
    assert!(
        wait_for(Duration::from_secs(10), || !relay.metrics().contains(series)),
        "the gauge of a delivered spool stays"
    );
}

#[test]
fn a_source_removed_while_the_agent_was_down_has_its_spool_delivered_at_the_next_start() {
    let dir = tempfile::tempdir().unwrap();
    let (cfg, listen, store_port, relay) = relay_with_the_service_down(dir.path());
    let acked = push_acked(&listen, 200, "waiting");
    relay.kill9();
    without_the_push_source(&cfg, dir.path());
    let store = Receiver::start_on(&format!("127.0.0.1:{store_port}"), &["--max-query-limit", "1000000"]);
    let relay = Agent::start(&cfg);
    drained(&store, &acked, &dir.path().join("spool/relay"), &relay);
    assert!(relay.stderr_text().contains("delivering the spool of a source no longer configured"));
}

fn now_secs() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() as i64
}

fn now_ns() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as i64
}

/// Issue #50: a relay's `max_streams` never forgot a label set. Short-lived
/// pods each pushed a line and stopped; once as many as the bound had come
/// and gone, every new pod's lines lost their labels until a restart, while
/// Loki counts only active streams. A label set quiet for
/// `stream_idle_period` is forgotten and its room goes to the next pod; one
/// that keeps pushing keeps its stream.
#[test]
fn received_label_sets_quiet_for_the_idle_period_are_forgotten_so_new_pods_keep_their_labels() {
    let dir = tempfile::tempdir().unwrap();
    let store = Recorder::start();
    let listen = format!("127.0.0.1:{}", free_port());
    let url = format!("{}/loki/api/v1/push", store.base);
    let extra = "max_streams = 20\nstream_idle_period = \"5s\"";
    let relay = Agent::start(&relay_config(dir.path(), &listen, &url, extra, ""));
    wait_ready(&format!("http://{listen}/ready"));
    let push_url = format!("http://{listen}/loki/api/v1/push");
    let push = |pod: &str, line: &str| {
        let body = common::push_body(&[("app", "web"), ("pod", pod)], &[(now_ns(), line)]);
        let r = common::post_json(&push_url, &body);
        assert_eq!(r.status, 204, "{}", r.text());
    };
    // Twenty pods fill the bound: nineteen push a line and stop, `steady` goes on.
    push("steady", "steady 0");
    for i in 0..19 {
        push(&format!("short-{i}"), &format!("short {i}"));
    }
    assert!(wait_for(Duration::from_secs(30), || store.len() >= 20), "{}", relay.stderr_text());
    assert!(store.entries().iter().all(|e| e.labels.contains_key("pod")), "the first twenty keep their labels");
    // A new pod every 200 ms, and a line of `steady`, until a new pod keeps its labels.
    let (mut steady, mut probes) = (1, 0);
    let mut last = Instant::now() - Duration::from_secs(1);
    let admitted = wait_for(Duration::from_secs(60), || {
        if last.elapsed() >= Duration::from_millis(200) {
            push("steady", &format!("steady {steady}"));
            push(&format!("new-{probes}"), &format!("probe {probes}"));
            (steady, probes, last) = (steady + 1, probes + 1, Instant::now());
        }
        store.entries().iter().any(|e| e.labels.get("pod").is_some_and(|p| p.starts_with("new-")))
    });
    assert!(admitted, "after {probes} new pods none kept its labels: {}", relay.stderr_text());
    assert!(wait_for(Duration::from_secs(30), || store.len() >= 20 + steady - 1 + probes), "every line arrives");
    let all = store.entries();
    let relay_only: std::collections::BTreeMap<String, String> = [("relayed_by".to_string(), "r1".to_string())].into();
    let left_off: Vec<_> = all.iter().filter(|e| e.line.starts_with("probe ") && e.labels == relay_only).collect();
    assert!(!left_off.is_empty(), "while the twenty were active a new pod's labels were left off");
    let steady_lines: Vec<_> = all.iter().filter(|e| e.line.starts_with("steady ")).collect();
    assert_eq!(steady_lines.len(), steady);
    assert!(
        steady_lines.iter().all(|e| e.labels.get("pod").map(String::as_str) == Some("steady")),
        "a pod that keeps pushing keeps its stream: {steady_lines:?}"
    );
    // Every new pod after the first admitted keeps its labels too (the quiet ones' room is free).
    let first = all
        .iter()
        .filter_map(|e| e.labels.get("pod").and_then(|p| p.strip_prefix("new-")).and_then(|n| n.parse::<usize>().ok()))
        .min()
        .unwrap();
    for e in all.iter().filter(|e| e.line.starts_with("probe ")) {
        let n: usize = e.line["probe ".len()..].parse().unwrap();
        if n >= first {
            assert_eq!(e.labels.get("pod"), Some(&format!("new-{n}")), "{e:?}");
        }
    }
    assert!(relay.metric("tailship_lines_repaired_total") >= left_off.len() as f64);
}
