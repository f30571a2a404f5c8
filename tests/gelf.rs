//! `type = "gelf"` with real senders on loopback: Docker Engine's `gelf`
//! log driver (skipped, saying so, where Docker is not installed), and
//! datagrams sent from the test: plain, gzip and zlib messages, a
//! compressed message in chunks out of order, one whose chunks never all
//! arrive (counted once expired), and one that is not JSON.

use crate::agent;
use crate::common;
use crate::dockerd;

use std::io::Write;
use std::net::UdpSocket;
use std::path::{Path, PathBuf};
use std::time::Duration;

use agent::{free_port, query_all, Agent, Stored};
use common::{wait_for, Receiver};

const BIG: &[&str] = &["--max-query-limit", "1000000"];

/// A config with one gelf source on `listen`, shipping to `url`.
fn gelf_config(dir: &Path, listen: &str, url: &str) -> PathBuf {
    let source = format!(
        r#"type = "gelf"
name = "gelf"
listen = "{listen}"
labels = {{ job = "gelf" }}
host_label = false
relabel = [
  {{ source_labels = ["__gelf_message_host"], target_label = "host" }},
  {{ source_labels = ["__gelf_message_level"], target_label = "level" }},
  {{ source_labels = ["__gelf_message_facility"], target_label = "facility" }},
  {{ source_labels = ["__gelf_message_version"], target_label = "version" }},
]
"#
    );
    agent::net_source_config(dir, "gelf.toml", url, &source)
}

fn start(dir: &Path, store: &Receiver) -> (Agent, String) {
    let listen = format!("127.0.0.1:{}", free_port());
    let agent = Agent::start(&gelf_config(dir, &listen, &store.base));
    assert!(wait_for(Duration::from_secs(15), || agent.stderr_text().contains("receiving")), "{}", agent.stderr_text());
    (agent, listen)
}

fn wait_lines(store: &Receiver, n: usize) -> Vec<Stored> {
    let mut got = Vec::new();
    wait_for(Duration::from_secs(30), || {
        got = query_all(store, r#"{job="gelf"}"#, None);
        got.len() >= n
    });
    got
}

/// The sum of `name`'s samples whose labels include `label`.
fn metric_with(agent: &Agent, name: &str, label: &str) -> f64 {
    agent
        .metrics()
        .lines()
        .filter(|l| l.starts_with(&format!("{name}{{")) && l.contains(label))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

fn zlib(data: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

fn chunks(id: u64, data: &[u8], count: usize) -> Vec<Vec<u8>> {
    let size = data.len().div_ceil(count);
    data.chunks(size)
        .enumerate()
        .map(|(i, part)| {
            let mut c = vec![0x1e, 0x0f];
            c.extend_from_slice(&id.to_be_bytes());
            c.extend_from_slice(&[i as u8, count as u8]);
            c.extend_from_slice(part);
            c
        })
        .collect()
}

fn message(text: &str, extra: &str) -> String {
    format!(
        r#"{{"version":"1.1","host":"web-1","short_message":"{text}","timestamp":1700000000.25,"level":3,"_facility":"billing"{extra}}}"#
    )
}

#[test]
fn plain_gzip_zlib_and_chunked_messages_from_the_test() {
    let dir = tempfile::tempdir().unwrap();
    let store = Receiver::start(BIG);
    let (agent, listen) = start(dir.path(), &store);
    let s = UdpSocket::bind("127.0.0.1:0").unwrap();
    let plain = message("plain one", "");
    s.send_to(plain.as_bytes(), &listen).unwrap();
    s.send_to(&gzip(message("gzipped", "").as_bytes()), &listen).unwrap();
    s.send_to(&zlib(message("zlibbed", "").as_bytes()), &listen).unwrap();
    // A large message, gzipped, in 5 chunks sent out of order (one twice).
    let filler = "x".repeat(20_000);
    let big = message("chunked", &format!(r#","_filler":"{filler}""#));
    let parts = chunks(42, &gzip(big.as_bytes()), 5);
    for i in [3, 0, 4, 0, 2, 1] {
        s.send_to(&parts[i], &listen).unwrap();
    }
    // Chunks of a message whose last chunk never comes.
    let lost = chunks(43, message("never whole", "").as_bytes(), 3);
    s.send_to(&lost[0], &listen).unwrap();
    s.send_to(&lost[2], &listen).unwrap();
    s.send_to(b"not gelf at all", &listen).unwrap();
    let got = wait_lines(&store, 5);
    assert_eq!(got.len(), 5, "{got:#?}");
    let one = got.iter().find(|e| e.line == plain).unwrap_or_else(|| panic!("{got:#?}"));
    assert_eq!(one.labels["host"], "web-1");
    assert_eq!(one.labels["level"], "error");
    assert_eq!(one.labels["facility"], "billing");
    assert_eq!(one.labels["version"], "1.1");
    assert!(!one.labels.keys().any(|k| k.starts_with("__")), "{:?}", one.labels);
    // The message's own time (use_incoming_timestamp's default).
    assert_eq!(one.ts, 1_700_000_000_250_000_000);
    for text in ["gzipped", "zlibbed"] {
        assert!(got.iter().any(|e| e.line == message(text, "")), "{text}: {got:#?}");
    }
    assert!(got.iter().any(|e| e.line == big), "the chunked message is not whole");
    let raw = got.iter().find(|e| e.line == "not gelf at all").unwrap();
    assert_eq!(raw.labels["gelf_unparsed"], "true");
    assert_eq!(agent.metric("tailship_receiver_unparsed_total"), 1.0);
    assert!(
        wait_for(Duration::from_secs(15), || metric_with(&agent, "tailship_receiver_refused_total", "incomplete")
            == 1.0),
        "the incomplete message was not counted: {}",
        agent.metrics()
    );
    assert_eq!(agent.metric("tailship_receiver_lines_total"), 5.0);
}

#[test]
fn bad_chunks_are_counted_by_reason() {
    let dir = tempfile::tempdir().unwrap();
    let store = Receiver::start(BIG);
    let (agent, listen) = start(dir.path(), &store);
    let s = UdpSocket::bind("127.0.0.1:0").unwrap();
    let mut over = chunks(7, b"{}", 1).remove(0);
    over[11] = 129;
    s.send_to(&over, &listen).unwrap();
    s.send_to(&[0x1f, 0x8b, 0, 1, 2, 3], &listen).unwrap();
    s.send_to(message("after", "").as_bytes(), &listen).unwrap();
    assert_eq!(wait_lines(&store, 1).len(), 1);
    assert!(wait_for(Duration::from_secs(10), || {
        metric_with(&agent, "tailship_receiver_refused_total", "bad_chunk") == 1.0
            && metric_with(&agent, "tailship_receiver_refused_total", "decompress") == 1.0
    }));
}

#[test]
fn docker_gelf_log_driver() {
    let Some(d) = dockerd::Dockerd::start() else { return };
    let dir = tempfile::tempdir().unwrap();
    let store = Receiver::start(BIG);
    let (_agent, listen) = start(dir.path(), &store);
    let address = format!("gelf-address=udp://{listen}");
    let long = "y".repeat(12_000);
    // Uncompressed, the long line goes in chunks (the driver sends datagrams of at most 1420 bytes).
    d.run(
        &[
            "--name",
            "gelfy",
            "--log-driver",
            "gelf",
            "--log-opt",
            &address,
            "--log-opt",
            "tag=tagged",
            "--log-opt",
            "gelf-compression-type=none",
        ],
        &format!("echo first from docker; echo {long}; echo last from docker"),
    );
    let got = wait_lines(&store, 3);
    let lines: Vec<serde_json::Value> = got.iter().map(|e| serde_json::from_str(&e.line).unwrap()).collect();
    let texts: Vec<&str> = lines.iter().filter_map(|m| m["short_message"].as_str()).collect();
    for want in ["first from docker", long.as_str(), "last from docker"] {
        assert!(texts.contains(&want), "{got:#?}");
    }
    let i = texts.iter().position(|t| *t == "first from docker").unwrap();
    assert_eq!(lines[i]["_container_name"], "gelfy");
    assert_eq!(lines[i]["_tag"], "tagged");
    // Docker sends level 6 (informational) for stdout.
    assert_eq!(got[i].labels["level"], "informational");
    assert_eq!(got[i].labels["version"], "1.1");
    assert!(got[i].labels.contains_key("host"), "{:?}", got[i].labels);
}
