//! The network receivers held to the file path's promise, tried as an
//! attacker would (real binaries on loopback; regressions of issue #38): a
//! relay of short lines with many labels loses none, hostile bodies are
//! refused without taking the agent (and its file sources) down or its
//! memory up, a long syslog message is cut and its neighbours kept,
//! metadata the service cannot take never costs a line, the door refuses
//! what the service would, and idle connections shut out no one.

use crate::agent;
use crate::common;
use crate::mockhttp;

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use agent::{file_source, free_port, query_all, write_file, Agent, AgentToml, RETRY};
use common::{request, wait_for, Receiver};

const BIG: &[&str] = &["--max-query-limit", "1000000"];

/// An agent shipping `dir/*.log` (job "file") and `sources` to `url`.
fn config(dir: &Path, url: &str, client: &str, sources: &str) -> (PathBuf, String) {
    let file = format!("{}{sources}", file_source(dir, "file", "100ms"));
    let toml = AgentToml::new(dir, "5s").bare_client(url, &format!("{RETRY}\n{client}")).spool("").then(&file);
    (toml.write("agent.toml"), toml.listen().to_string())
}

fn wait_tcp(addr: &str) {
    assert!(wait_for(Duration::from_secs(15), || std::net::TcpStream::connect(addr).is_ok()), "{addr} never listened");
}

fn lines(store: &Receiver, query: &str, tenant: Option<&str>) -> Vec<String> {
    query_all(store, query, tenant).into_iter().map(|e| e.line).collect()
}

/// A line appended to the agent's file source arrives: the agent lives and its files still ship.
fn files_still_ship(dir: &Path, store: &Receiver, agent: &Agent, text: &str) {
    let mut f = std::fs::OpenOptions::new().create(true).append(true).open(dir.join("app.log")).unwrap();
    writeln!(f, "{text}").unwrap();
    let arrived = wait_for(Duration::from_secs(30), || lines(store, r#"{job="file"}"#, None).iter().any(|l| l == text));
    assert!(arrived, "the file line never arrived: {}", agent.stderr_text());
}

/// An agent with one network source (`source` given its listen address), its store and its files.
struct Rig {
    dir: tempfile::TempDir,
    store: Receiver,
    agent: Agent,
    listen: String,
}

fn rig(source: impl Fn(&str) -> String) -> Rig {
    let dir = tempfile::tempdir().unwrap();
    let store = Receiver::start(BIG);
    let listen = format!("127.0.0.1:{}", free_port());
    let (cfg, _) = config(dir.path(), &store.base, "", &source(&listen));
    let agent = Agent::start(&cfg);
    wait_tcp(&listen);
    Rig { dir, store, agent, listen }
}

impl Rig {
    /// After a hostile input: the agent lives, its files ship, its peak RSS stayed under `max_kb`.
    fn survived(&self, what: &str, max_kb: u64) {
        files_still_ship(self.dir.path(), &self.store, &self.agent, &format!("after {what}"));
        let peak = self.agent.peak_rss_kb();
        eprintln!("{what}: peak RSS {peak} kB");
        assert!(peak < max_kb, "peak RSS {peak} kB");
    }
}

fn push_source(listen: &str, receiver: &str) -> String {
    format!("[[sources]]\ntype = \"loki_push\"\nname = \"relay\"\nlisten = \"{listen}\"\nreceiver = {{ {receiver} }}\n")
}

/// The book's relay (book/src/receivers/index.md) with default settings: an edge tailship pushes short
/// lines with 8 Kubernetes-style labels through it. The spool once wrote
/// every label with every line, refused a 1 MiB batch with 413 and the
/// senders dropped it: 196,530 of 200,000 were lost.
#[test]
fn the_relay_keeps_every_short_line_with_many_labels() {
    let dir = tempfile::tempdir().unwrap();
    let store = Receiver::start(BIG);
    let listen = format!("127.0.0.1:{}", free_port());
    let (cfg, _) = config(dir.path(), &store.base, "", &push_source(&listen, ""));
    let relay = Agent::start(&cfg);
    wait_tcp(&listen);
    let edge_dir = tempfile::tempdir().unwrap();
    let n = 40_000;
    let mut text = String::with_capacity(n * 64);
    for i in 0..n {
        text.push_str(&format!("GET /healthz 200 0.3ms id={i:08} ua=kube-probe/1.29\n"));
    }
    write_file(edge_dir.path(), "probe.log", &text);
    let labels = [
        ("namespace", "kube-system"),
        ("pod", "coredns-5d78c9869d-abcde"),
        ("container", "coredns"),
        ("node_name", "ip-10-0-12-34.eu-west-1.compute.internal"),
        ("app", "kube-dns"),
        ("pod_template_hash", "5d78c9869d"),
        ("cluster", "production-eu-west-1"),
    ];
    let labels: Vec<String> = labels.iter().map(|(k, v)| format!("{k} = \"{v}\"")).collect();
    let edge = format!(
        r#"shutdown_timeout = "5s"
[server]
listen = ""
[client]
url = "http://{listen}/loki/api/v1/push"
retry = {{ min_backoff = "20ms", max_backoff = "300ms" }}
[positions]
path = "{dir}/edge-positions.json"
[[sources]]
type = "file"
include = ["{dir}/*.log"]
host_label = false
labels = {{ job = "probe", {labels} }}
"#,
        dir = edge_dir.path().display(),
        labels = labels.join(", ")
    );
    let _edge = Agent::start(&write_file(edge_dir.path(), "edge.toml", &edge));
    let mut got = 0;
    let all = wait_for(Duration::from_secs(120), || {
        got = lines(&store, r#"{job="probe"}"#, None).len();
        got >= n
    });
    assert!(all, "{got} of {n} arrived; relay: {}", relay.stderr_text());
    assert_eq!(relay.metric(r#"tailship_receiver_refused_total{reason="too_large",source="relay"}"#), 0.0);
}

/// A JSON push of 7 MB of empty lines in one stream of 15 labels of 2,000
/// bytes each once aborted the agent ("memory allocation of 9299957760
/// bytes failed"), its file sources with it.
#[test]
fn a_push_of_tiny_lines_under_huge_labels_neither_aborts_nor_bloats_the_agent() {
    let rig = rig(|l| push_source(l, ""));
    let listen = &rig.listen;
    let labels: Vec<String> = (0..15).map(|i| format!("\"l{i}\":\"{}\"", "v".repeat(2000))).collect();
    let entries = vec![r#"["1700000000000000000",""]"#; 270_000].join(",");
    let body = format!(r#"{{"streams":[{{"stream":{{{}}},"values":[{entries}]}}]}}"#, labels.join(","));
    assert!(body.len() > 7_000_000);
    let r = request(
        "POST",
        &format!("http://{listen}/loki/api/v1/push"),
        &[("Content-Type", "application/json")],
        body.as_bytes(),
    );
    // Labels are written once: the request is taken whole (its lines are 400s downstream as too old: the door takes it).
    assert!(r.status == 204 || r.status == 413, "{} {}", r.status, r.text());
    rig.survived("the label bomb", 600_000);
}

/// A snappy body that decompresses to far more than `max_message_bytes`
/// once took a 9.66 GB allocation and aborted the agent.
#[test]
fn a_snappy_bomb_is_refused_before_it_is_decompressed() {
    let rig = rig(|l| push_source(l, ""));
    let listen = &rig.listen;
    let body = snap::raw::Encoder::new().compress_vec(&vec![0u8; 100 << 20]).unwrap();
    assert!(body.len() < 8 << 20, "within max_message_bytes as sent: {}", body.len());
    let r = request(
        "POST",
        &format!("http://{listen}/loki/api/v1/push"),
        &[("Content-Type", "application/x-protobuf")],
        &body,
    );
    assert_eq!(r.status, 413, "{}", r.text());
    assert!(r.text().contains("max_message_bytes"), "{}", r.text());
    rig.survived("the snappy bomb", 300_000);
}

/// OTLP: a 100 KB resource attribute repeated on 5,000 records (a 255 KB
/// request) once took 513 MB; the lines it carries are refused or bounded.
#[test]
fn an_otlp_request_whose_attributes_repeat_on_every_record_is_bounded() {
    let rig = rig(|l| format!("[[sources]]\ntype = \"otlp\"\nname = \"otel\"\nlisten = \"{l}\"\n"));
    let listen = &rig.listen;
    let big = "x".repeat(100_000);
    let records: Vec<String> = (0..5_000).map(|i| format!(r#"{{"body":{{"stringValue":"r{i}"}}}}"#)).collect();
    let body = format!(
        r#"{{"resourceLogs":[{{"resource":{{"attributes":[{{"key":"big","value":{{"stringValue":"{big}"}}}}]}},"scopeLogs":[{{"logRecords":[{}]}}]}}]}}"#,
        records.join(",")
    );
    let r =
        request("POST", &format!("http://{listen}/v1/logs"), &[("Content-Type", "application/json")], body.as_bytes());
    assert_eq!(r.status, 413, "{}", r.text());
    rig.survived("the attribute bomb", 300_000);
}

/// GELF over UDP: a flood of chunked messages that never complete (127 of
/// 128 chunks) once took 6.0 GB and kept 5.7 GB; now what waits is held to
/// `receiver.max_pending_bytes` and a whole message still arrives.
#[test]
fn a_flood_of_gelf_chunks_that_never_complete_stays_within_the_budget() {
    let dir = tempfile::tempdir().unwrap();
    let store = Receiver::start(BIG);
    let port = free_port();
    let src = format!(
        "[[sources]]\ntype = \"gelf\"\nname = \"gelf\"\nlisten = \"127.0.0.1:{port}\"\nlabels = {{ job = \"gelf\" }}\n\
         receiver = {{ max_message_bytes = \"8MiB\", max_pending_bytes = \"16MiB\" }}\n"
    );
    let (cfg, _) = config(dir.path(), &store.base, "", &src);
    let agent = Agent::start(&cfg);
    let sock = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let to = format!("127.0.0.1:{port}");
    let body = vec![b'a'; 8_000];
    let mut sent = 0usize;
    for id in 0..1_500u64 {
        for seq in 0..127u8 {
            let mut c = vec![0x1e, 0x0f];
            c.extend_from_slice(&id.to_be_bytes());
            c.extend_from_slice(&[seq, 128]);
            c.extend_from_slice(&body);
            if sock.send_to(&c, &to).is_ok() {
                sent += c.len();
            }
        }
    }
    assert!(sent > 1_000_000_000);
    assert!(wait_for(Duration::from_secs(30), || agent.metric("tailship_receiver_refused_total") > 0.0));
    let whole = r#"{"version":"1.1","host":"h","short_message":"whole after the flood"}"#;
    let arrived = wait_for(Duration::from_secs(30), || {
        sock.send_to(whole.as_bytes(), &to).unwrap();
        lines(&store, r#"{job="gelf"}"#, None).iter().any(|l| l.contains("whole after the flood"))
    });
    assert!(arrived, "{}", agent.stderr_text());
    eprintln!("peak RSS {} kB", agent.peak_rss_kb());
    assert!(agent.peak_rss_kb() < 300_000, "peak RSS {} kB", agent.peak_rss_kb());
}

/// One syslog message of 5 MiB between 100 before and 100 after on one TCP
/// connection once closed the connection: 201 of 301 lost. Now it is cut
/// at `max_message_bytes` (64 KiB by default) and counted, and its
/// neighbours arrive.
#[test]
fn a_huge_syslog_message_is_cut_and_its_neighbours_arrive() {
    let dir = tempfile::tempdir().unwrap();
    let store = Receiver::start(BIG);
    let listen = format!("127.0.0.1:{}", free_port());
    let src = format!(
        "[[sources]]\ntype = \"syslog\"\nname = \"sys\"\nlisten = \"{listen}\"\nlabels = {{ job = \"sys\" }}\n"
    );
    let (cfg, _) = config(dir.path(), &store.base, "", &src);
    let agent = Agent::start(&cfg);
    wait_tcp(&listen);
    let framed = |text: &str| {
        let msg = format!("<13>1 - host app - - - {text}");
        format!("{} {msg}", msg.len()).into_bytes()
    };
    let mut s = std::net::TcpStream::connect(&listen).unwrap();
    for i in 0..100 {
        s.write_all(&framed(&format!("before {i}"))).unwrap();
    }
    s.write_all(&framed(&format!("huge {}", "h".repeat(5 << 20)))).unwrap();
    for i in 0..100 {
        s.write_all(&framed(&format!("after {i}"))).unwrap();
    }
    drop(s);
    let mut got = Vec::new();
    let all = wait_for(Duration::from_secs(60), || {
        got = lines(&store, r#"{job="sys"}"#, None);
        got.len() >= 201
    });
    assert!(all, "{} of 201: {}", got.len(), agent.stderr_text());
    let huge = got.iter().find(|l| l.starts_with("huge")).expect("the huge one, cut");
    assert!(huge.len() <= 64 << 10, "{}", huge.len());
    assert_eq!(agent.metric(r#"tailship_receiver_refused_total{reason="truncated",source="sys"}"#), 1.0);
}

/// Syslog structured data and pushed metadata against a service that takes
/// `[timestamp, line]` pairs only: with the default `[client]` every such
/// line was refused (400) and dropped. Now the metadata is left off and counted.
#[test]
fn received_metadata_is_left_off_for_a_service_that_takes_none() {
    let dir = tempfile::tempdir().unwrap();
    // A service as the spec describes it: a value with a third element is a 400.
    let (stored, refused) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let rt = tokio::runtime::Runtime::new().unwrap();
    let strict = rt.block_on(mockhttp::Mock::start({
        let (stored, refused) = (stored.clone(), refused.clone());
        move |req, _| {
            let values: Vec<serde_json::Value> = req.json()["streams"]
                .as_array()
                .into_iter()
                .flatten()
                .flat_map(|s| s["values"].as_array().cloned().unwrap_or_default())
                .collect();
            if values.iter().any(|v| v.as_array().is_none_or(|a| a.len() != 2)) {
                refused.fetch_add(values.len(), Ordering::SeqCst);
                mockhttp::Reply::text(400, "values are [timestamp, line] pairs")
            } else {
                stored.fetch_add(values.len(), Ordering::SeqCst);
                mockhttp::Reply::empty(204)
            }
        }
    }));
    let listen = format!("127.0.0.1:{}", free_port());
    let src = format!(
        "[[sources]]\ntype = \"syslog\"\nname = \"sys\"\nlisten = \"{listen}\"\nlabels = {{ job = \"sys\" }}\n"
    );
    let (cfg, _) = config(dir.path(), &strict.url, "compression = \"none\"", &src);
    let agent = Agent::start(&cfg);
    wait_tcp(&listen);
    let mut s = std::net::TcpStream::connect(&listen).unwrap();
    for i in 0..20 {
        let msg = format!("<13>1 2026-11-27T10:00:00Z host app - - [exampleSDID@32473 eventID=\"{i}\"] with sd {i}");
        s.write_all(format!("{} {msg}", msg.len()).as_bytes()).unwrap();
    }
    drop(s);
    let ok = wait_for(Duration::from_secs(30), || stored.load(Ordering::SeqCst) >= 20);
    let (n, bad) = (stored.load(Ordering::SeqCst), refused.load(Ordering::SeqCst));
    assert!(ok, "{n} of 20 stored, {bad} refused: {}", agent.stderr_text());
    assert_eq!(bad, 0);
    assert!(agent.metric("tailship_receiver_metadata_dropped_total") >= 20.0);
    let check = std::process::Command::new(common::bin()).args(["check", "--config"]).arg(&cfg).output().unwrap();
    let err = String::from_utf8_lossy(&check.stderr);
    assert!(err.contains("structured metadata") && err.contains("client.structured_metadata"), "{err}");
}

/// Tenants and labels the service refuses were once acknowledged (204) by
/// the relay and dropped downstream; now they are refused at the door.
#[test]
fn the_relay_refuses_at_the_door_what_the_service_would_refuse() {
    let dir = tempfile::tempdir().unwrap();
    let store = Receiver::start(BIG);
    let listen = format!("127.0.0.1:{}", free_port());
    let (cfg, _) = config(dir.path(), &store.base, "", &push_source(&listen, ""));
    let _agent = Agent::start(&cfg);
    wait_tcp(&listen);
    let url = format!("http://{listen}/loki/api/v1/push");
    let body = r#"{"streams":[{"stream":{"job":"door"},"values":[["1700000000000000000","x"]]}]}"#;
    let long = "t".repeat(151);
    for tenant in ["../../etc/passwd", "a/b", long.as_str(), "spaces in it", ".", ".."] {
        let r =
            request("POST", &url, &[("Content-Type", "application/json"), ("X-Scope-OrgID", tenant)], body.as_bytes());
        assert_eq!(r.status, 400, "tenant {tenant:?}: {}", r.text());
        assert!(r.text().contains("tenant"), "{}", r.text());
    }
    let value = format!(r#"{{"streams":[{{"stream":{{"job":"{}"}},"values":[["1","x"]]}}]}}"#, "v".repeat(2049));
    let r = request("POST", &url, &[("Content-Type", "application/json")], value.as_bytes());
    assert_eq!(r.status, 400, "{}", r.text());
    let ok = request(
        "POST",
        &url,
        &[("Content-Type", "application/json"), ("X-Scope-OrgID", "team-a.prod_(1)")],
        body.as_bytes(),
    );
    assert_eq!(ok.status, 204, "{}", ok.text());
}

/// 300 idle syslog connections once made a real sender's connection close
/// at once (100 of 100 lost); 256 idle connections to `loki_push` kept real
/// pushes unanswered; 64 idle connections to the agent's own server made
/// `/healthz` take 9 s. Now the connection silent longest makes room.
#[test]
fn idle_connections_shut_out_no_sender_and_no_probe() {
    let dir = tempfile::tempdir().unwrap();
    let store = Receiver::start(BIG);
    let sys = format!("127.0.0.1:{}", free_port());
    let push = format!("127.0.0.1:{}", free_port());
    let src = format!(
        "[[sources]]\ntype = \"syslog\"\nname = \"sys\"\nlisten = \"{sys}\"\nlabels = {{ job = \"sys\" }}\n{}",
        push_source(&push, "")
    );
    let (cfg, server) = config(dir.path(), &store.base, "", &src);
    let agent = Agent::start(&cfg);
    wait_tcp(&sys);
    wait_tcp(&push);
    wait_tcp(&server);
    let idle_sys: Vec<_> = (0..300).filter_map(|_| std::net::TcpStream::connect(&sys).ok()).collect();
    let idle_push: Vec<_> = (0..300).filter_map(|_| std::net::TcpStream::connect(&push).ok()).collect();
    let idle_server: Vec<_> = (0..100).filter_map(|_| std::net::TcpStream::connect(&server).ok()).collect();
    assert!(idle_sys.len() == 300 && idle_push.len() == 300 && idle_server.len() == 100);
    // A real sender (util-linux logger over TCP) is taken.
    let logger = std::process::Command::new("logger")
        .args(["--tcp", "--octet-count", "--rfc5424", "-n", "127.0.0.1", "-P"])
        .arg(sys.rsplit(':').next().unwrap())
        .args(["-t", "real", "a real sender among idle connections"])
        .status();
    match logger {
        Ok(st) => assert!(st.success()),
        Err(_) => eprintln!("logger not found: the syslog sender part is skipped"),
    }
    // A real push is answered.
    let body = r#"{"streams":[{"stream":{"job":"pushed"},"values":[["1700000000000000000","pushed among idle connections"]]}]}"#;
    let r = request(
        "POST",
        &format!("http://{push}/loki/api/v1/push"),
        &[("Content-Type", "application/json")],
        body.as_bytes(),
    );
    assert_eq!(r.status, 204, "{}", r.text());
    // The agent's own /healthz answers.
    let mut probe = std::net::TcpStream::connect(&server).unwrap();
    probe.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    probe.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").unwrap();
    let mut answer = String::new();
    let _ = probe.read_to_string(&mut answer);
    assert!(answer.starts_with("HTTP/1.1 200"), "healthz: {answer:?}");
    if logger.is_ok() {
        let got = wait_for(Duration::from_secs(30), || {
            lines(&store, r#"{job="sys"}"#, None).iter().any(|l| l.contains("a real sender among idle connections"))
        });
        assert!(got, "{}", agent.stderr_text());
    }
    drop((idle_sys, idle_push, idle_server));
}

/// Mounts a tmpfs of `size` on `dir/spool` in the agent's own mount
/// namespace (`then` runs there before the agent); `None` (the test skips,
/// saying so) where a user namespace cannot mount one.
fn tmpfs_spool(dir: &Path, size: &str, then: &str) -> Option<Vec<String>> {
    let spool = dir.join("spool");
    std::fs::create_dir_all(&spool).unwrap();
    let mount = format!("mount -t tmpfs -o size={size} tmpfs {}", spool.display());
    let probe = std::process::Command::new("unshare").args(["-rm", "sh", "-c", &mount]).output();
    if !probe.is_ok_and(|o| o.status.success()) {
        eprintln!("cannot mount a tmpfs in a user namespace (unshare -rm); skipping");
        return None;
    }
    let script = format!("{mount} && {then} exec \"$0\" \"$@\"");
    Some(vec!["unshare".into(), "-rm".into(), "sh".into(), "-c".into(), script])
}

fn syslog_messages(addr: &str, from: usize, to: usize, tag: &str) -> std::thread::JoinHandle<std::io::Result<()>> {
    let addr = addr.to_string();
    let tag = tag.to_string();
    std::thread::spawn(move || {
        let mut s = std::net::TcpStream::connect(&addr)?;
        for i in from..to {
            let msg = format!("<13>1 - host {tag} - - - {tag} {i} {}", "d".repeat(400));
            s.write_all(format!("{} {msg}", msg.len()).as_bytes())?;
        }
        Ok(())
    })
}

/// `tailship run` started with its spool on a full disk once exited 1
/// ("cannot write the spool ... No space left on device"), its file sources
/// with it: a crash loop under systemd. Now it runs, the files ship, the
/// receiver holds its senders back, and once there is room every message arrives.
#[test]
fn run_starts_on_a_full_disk_and_its_file_sources_ship() {
    let dir = tempfile::tempdir().unwrap();
    let fill = dir.path().join("spool/fill");
    let then = format!("(dd if=/dev/zero of={} bs=4k 2>/dev/null || true) &&", fill.display());
    let Some(wrapper) = tmpfs_spool(dir.path(), "512k", &then) else { return };
    let store = Receiver::start(BIG);
    let sys = format!("127.0.0.1:{}", free_port());
    let src =
        format!("[[sources]]\ntype = \"syslog\"\nname = \"sys\"\nlisten = \"{sys}\"\nlabels = {{ job = \"sys\" }}\n");
    let (cfg, _) = config(dir.path(), &store.base, "", &src);
    let wrapper: Vec<&str> = wrapper.iter().map(String::as_str).collect();
    let agent = Agent::start_wrapped(&cfg, &[], &wrapper);
    wait_tcp(&sys);
    files_still_ship(dir.path(), &store, &agent, "a file line while the disk is full");
    let total = 300;
    let sender = syslog_messages(&sys, 0, total, "full");
    // Room comes back (the filler removed, seen through the agent's own mount namespace).
    let filler = format!("/proc/{}/root{}", agent.pid(), fill.display());
    assert!(wait_for(Duration::from_secs(10), || std::fs::remove_file(&filler).is_ok()), "cannot remove {filler}");
    sender.join().unwrap().expect("the sender was held back, not reset");
    let mut got = Vec::new();
    let all = wait_for(Duration::from_secs(60), || {
        got = lines(&store, r#"{job="sys"}"#, None);
        got.len() >= total
    });
    assert!(all, "{} of {total}: {}", got.len(), agent.stderr_text());
    assert_eq!(got.len(), total, "none twice");
}

/// The spool's disk smaller than one segment (16 MiB by default) and the
/// service down: the segment being written once took all the room, was never
/// sealed, so never deleted, and nothing moved again ("no new spool segment
/// could be begun" every second; 7,667 of 47,318 messages lost). Now a
/// failed write is undone and seals its segment, and segments are cut to
/// the room there is.
#[test]
fn a_disk_smaller_than_a_segment_fills_and_empties_and_every_message_arrives_once() {
    let dir = tempfile::tempdir().unwrap();
    let Some(wrapper) = tmpfs_spool(dir.path(), "1m", "") else { return };
    let store_port = free_port();
    let sys = format!("127.0.0.1:{}", free_port());
    let src =
        format!("[[sources]]\ntype = \"syslog\"\nname = \"sys\"\nlisten = \"{sys}\"\nlabels = {{ job = \"sys\" }}\n");
    let (cfg, _) = config(dir.path(), &format!("http://127.0.0.1:{store_port}"), "", &src);
    let wrapper: Vec<&str> = wrapper.iter().map(String::as_str).collect();
    let agent = Agent::start_wrapped(&cfg, &[], &wrapper);
    wait_tcp(&sys);
    let total = 6_000;
    let sender = syslog_messages(&sys, 0, total, "small");
    let full = wait_for(Duration::from_secs(30), || agent.stderr_text().contains("spool write failed"));
    assert!(full, "the disk never filled: {}", agent.stderr_text());
    let store = Receiver::start_on(&format!("127.0.0.1:{store_port}"), BIG);
    sender.join().unwrap().expect("the sender was held back, not reset");
    let mut got = Vec::new();
    let all = wait_for(Duration::from_secs(90), || {
        got = lines(&store, r#"{job="sys"}"#, None);
        got.len() >= total
    });
    assert!(all, "{} of {total}: {}", got.len(), agent.stderr_text());
    let distinct: std::collections::HashSet<&String> = got.iter().collect();
    assert_eq!((got.len(), distinct.len()), (total, total), "each once");
}
