//! `type = "kafka"` and `type = "azure_event_hubs"` against a broker written
//! in the test (tests/common/kafka_broker.rs: the real Kafka wire protocol,
//! no Kafka can run here): lines, the `__meta_kafka_*` labels through
//! relabel rules, timestamps (`use_incoming_timestamp` on and off), a
//! value that is not UTF-8, a restart that resumes without a repeat or a
//! loss (also when the offsets file lags the spool, as after a crash), a broker down at start and up later; Event Hubs over TLS with
//! SASL PLAIN and its `{"records": [...]}` split; bad config refused.

use crate::agent;
use crate::common;
use crate::discovery;
use crate::kafka_broker;
use crate::pki;
use crate::scenario;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use agent::{free_port, query_all, Agent, Stored};
use common::{bin, wait_for, Receiver};
use kafka_broker::{Broker, Msg, Options};
use tempfile::TempDir;
use tokio_rustls::rustls;

const BIG: &[&str] = &["--max-query-limit", "1000000"];

fn kafka_config(dir: &Path, url: &str, brokers: &str, topics: &str, incoming: bool) -> PathBuf {
    let source = format!(
        r#"type = "kafka"
name = "kafka"
labels = {{ job = "kafka" }}
host_label = false
kafka = {{ brokers = ["{brokers}"], topics = [{topics}], group_id = "g1", use_incoming_timestamp = {incoming}, topic_refresh_interval = "200ms", max_wait = "100ms" }}
relabel = [
  {{ source_labels = ["__meta_kafka_topic"], target_label = "topic" }},
  {{ source_labels = ["__meta_kafka_partition"], target_label = "partition" }},
  {{ source_labels = ["__meta_kafka_message_key"], target_label = "key" }},
  {{ source_labels = ["__meta_kafka_group_id"], target_label = "group" }},
  {{ source_labels = ["__meta_kafka_message_key"], regex = "secret", action = "drop" }},
]
"#
    );
    agent::net_source_config(dir, "kafka.toml", url, &source)
}

fn wait_lines(store: &Receiver, query: &str, n: usize) -> Vec<Stored> {
    let mut got = Vec::new();
    wait_for(Duration::from_secs(30), || {
        got = query_all(store, query, None);
        got.len() >= n
    });
    got
}

/// A temp dir and a receiver.
fn dir_and_store() -> (TempDir, Receiver) {
    (tempfile::tempdir().unwrap(), Receiver::start(BIG))
}

/// SIGTERM: the agent exits 0 within 20 s, and `line` was never stored.
fn stop_never_stored(agent: Agent, store: &Receiver, line: &str) {
    assert!(agent.terminate(Duration::from_secs(20)).success());
    assert!(!query_all(store, r#"{job="kafka"}"#, None).iter().any(|e| e.line == line));
}

/// [`wait_lines`] of job `kafka`: the lines, sorted.
fn sorted_lines(store: &Receiver, n: usize) -> Vec<String> {
    let mut lines: Vec<String> = wait_lines(store, r#"{job="kafka"}"#, n).into_iter().map(|e| e.line).collect();
    lines.sort();
    lines
}

/// Waits (30 s at most) until the agent has said `text`.
fn wait_said(agent: &Agent, text: &str) {
    assert!(wait_for(Duration::from_secs(30), || agent.stderr_text().contains(text)), "{}", agent.stderr_text());
}

fn now_ms() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as i64
}

#[test]
fn messages_are_labelled_timed_and_resume_after_a_restart_without_repeats() {
    let (dir, store) = dir_and_store();
    let broker = Broker::start(Options::default());
    broker.create_topic("app-web", 2);
    broker.produce("other", 0, vec![Msg::new("not a topic of ours", 1_700_000_000_000)]);
    broker.produce(
        "app-web",
        0,
        vec![
            Msg::keyed("user-1", "first", 1_700_000_000_001),
            Msg::new("second", 1_700_000_000_002),
            Msg::keyed("secret", "dropped by relabel", 1_700_000_000_003),
        ],
    );
    broker.produce("app-web", 1, vec![Msg { key: None, value: b"bad \xff utf8".to_vec(), ts_ms: 1_700_000_000_004 }]);
    let config = kafka_config(dir.path(), &store.base, &broker.addr(), r#""^app-.*""#, true);
    let agent = Agent::start(&config);
    let got = wait_lines(&store, r#"{job="kafka"}"#, 3);
    assert_eq!(got.len(), 3, "{got:#?}\n{}", agent.stderr_text());
    let first = &got[0];
    assert_eq!(first.line, "first");
    assert_eq!(first.ts, 1_700_000_000_001_000_000);
    assert_eq!(first.labels["topic"], "app-web");
    assert_eq!(first.labels["partition"], "0");
    assert_eq!(first.labels["key"], "user-1");
    assert_eq!(first.labels["group"], "g1");
    assert!(!first.labels.keys().any(|k| k.starts_with("__")), "{first:?}");
    assert_eq!(got[1].line, "second");
    assert_eq!(got[1].labels["key"], "none");
    assert_eq!(got[2].line, "bad \u{fffd} utf8");
    assert_eq!(got[2].labels["partition"], "1");
    assert!(wait_for(Duration::from_secs(10), || agent
        .metrics()
        .contains(r#"tailship_lines_repaired_total{reason="invalid_utf8",source="kafka"} 1"#)));
    assert!(agent.terminate(Duration::from_secs(20)).success());
    let offsets = std::fs::read_to_string(dir.path().join("spool/kafka/kafka-offsets.json")).unwrap();
    let saved: serde_json::Value = serde_json::from_str(&offsets).unwrap();
    assert_eq!(saved["app-web"]["0"], 3, "{offsets}");
    assert_eq!(saved["app-web"]["1"], 1, "{offsets}");
    // As if the agent had died between the spool's fsync and the offsets
    // file's write: the file lags; the marks in the spool carry the offsets.
    std::fs::write(dir.path().join("spool/kafka/kafka-offsets.json"), r#"{"app-web":{"0":1}}"#).unwrap();

    // While the agent is down, more arrives; after the restart exactly that is shipped.
    broker.produce("app-web", 0, vec![Msg::new("third", 1_700_000_000_005)]);
    broker.produce("app-web", 1, vec![Msg::new("fourth", 1_700_000_000_006)]);
    let agent = Agent::start(&config);
    let got = wait_lines(&store, r#"{job="kafka"}"#, 5);
    // Give a repeat the time to show up.
    broker.produce("app-web", 0, vec![Msg::new("fifth", 1_700_000_000_007)]);
    let got2 = wait_lines(&store, r#"{job="kafka"}"#, 6);
    let lines: Vec<&str> = got2.iter().map(|e| e.line.as_str()).collect();
    assert_eq!(lines, ["first", "second", "bad \u{fffd} utf8", "third", "fourth", "fifth"], "{got:#?}");
    assert!(agent.stderr_text().contains("Kafka offsets taken from the spool"), "{}", agent.stderr_text());
    assert!(agent.terminate(Duration::from_secs(20)).success());
}

#[test]
fn without_use_incoming_timestamp_lines_take_the_time_they_were_read() {
    let (dir, store) = dir_and_store();
    let broker = Broker::start(Options::default());
    broker.produce("logs", 0, vec![Msg::new("old message", 1_000_000_000_000)]);
    let before = now_ms() as i128 * 1_000_000;
    let agent = Agent::start(&kafka_config(dir.path(), &store.base, &broker.addr(), r#""logs""#, false));
    let got = wait_lines(&store, r#"{job="kafka"}"#, 1);
    assert_eq!(got.len(), 1, "{}", agent.stderr_text());
    assert!(got[0].ts >= before, "{} < {before}", got[0].ts);
    assert_eq!(got[0].labels["topic"], "logs");
    assert!(agent.terminate(Duration::from_secs(20)).success());
}

#[test]
fn a_broker_down_at_start_is_retried_and_read_once_up() {
    let (dir, store) = dir_and_store();
    let port = free_port();
    let addr = format!("127.0.0.1:{port}");
    let agent = Agent::start(&kafka_config(dir.path(), &store.base, &addr, r#""logs""#, true));
    assert!(
        wait_for(Duration::from_secs(20), || agent.stderr_text().contains("cannot be reached; retrying with backoff")),
        "{}",
        agent.stderr_text()
    );
    let broker = Broker::start(Options { port, ..Default::default() });
    broker.produce("logs", 0, vec![Msg::new("after the outage", 1_700_000_000_000)]);
    let got = wait_lines(&store, r#"{job="kafka"}"#, 1);
    assert_eq!(got.len(), 1, "{}", agent.stderr_text());
    assert_eq!(got[0].line, "after the outage");
    let err = agent.stderr_text();
    assert_eq!(err.matches("cannot be reached; retrying with backoff").count(), 1, "said once: {err}");
    assert!(agent.terminate(Duration::from_secs(20)).success());
}

const CONNECTION: &str =
    "Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey=abc=";

/// A broker as Azure Event Hubs answers Kafka clients: over TLS (its CA's
/// PEM returned) and SASL PLAIN with the connection string as the password.
fn event_hubs() -> (String, Broker) {
    let (ca, tls) = pki::private_ca();
    let sasl = Some(("$ConnectionString".into(), CONNECTION.into()));
    (ca, Broker::start(Options { tls: Some(tls), sasl, ..Default::default() }))
}

#[test]
fn azure_event_hubs_over_tls_and_sasl_splits_records() {
    let (dir, store) = dir_and_store();
    let (ca, broker) = event_hubs();
    let records = r#"{"records":[{"time":"2024-05-01T10:00:00Z","category":"FunctionAppLogs","resourceId":"/SUBSCRIPTIONS/X","operationName":"Microsoft.Web/sites/functions/log","level":"Informational"},{"time":"2024-05-01T10:00:01.5Z","category":"AppServiceHTTPLogs","resourceId":"/SUBSCRIPTIONS/X","operationName":"op"}]}"#;
    broker.produce(
        "insights-logs",
        0,
        vec![Msg::new(records, 1_700_000_000_000), Msg::new("just text, a custom message", 1_700_000_000_001)],
    );
    std::fs::write(dir.path().join("ca.pem"), ca).unwrap();
    std::fs::write(dir.path().join("conn"), CONNECTION).unwrap();
    let source = format!(
        r#"type = "azure_event_hubs"
name = "azure"
labels = {{ job = "azure" }}
host_label = false
azure_event_hubs = {{ fully_qualified_namespace = "127.0.0.1:{port}", event_hubs = ["insights-logs"], connection_string_file = "{dir}/conn", ca_file = "{dir}/ca.pem", use_incoming_timestamp = true }}
relabel = [
  {{ source_labels = ["__azure_event_hubs_category"], target_label = "category" }},
  {{ source_labels = ["__meta_kafka_topic"], target_label = "hub" }},
]
"#,
        port = broker.port,
        dir = dir.path().display()
    );
    let agent = Agent::start(&agent::net_source_config(dir.path(), "azure.toml", &store.base, &source));
    let got = wait_lines(&store, r#"{job="azure"}"#, 3);
    assert_eq!(got.len(), 3, "{got:#?}\n{}", agent.stderr_text());
    assert!(broker.authenticated.load(std::sync::atomic::Ordering::SeqCst) >= 1);
    // The custom message takes the message's time (1.7e18), before the records' (2024).
    assert_eq!(got[0].line, "just text, a custom message");
    assert_eq!(got[0].ts, 1_700_000_000_001_000_000);
    assert!(!got[0].labels.contains_key("category"));
    assert!(got[1].line.starts_with(r#"{"time":"2024-05-01T10:00:00Z","category":"FunctionAppLogs""#), "{got:#?}");
    assert_eq!(got[1].ts, 1_714_557_600_000_000_000);
    assert_eq!(got[1].labels["category"], "FunctionAppLogs");
    assert_eq!(got[1].labels["hub"], "insights-logs");
    assert_eq!(got[2].ts, 1_714_557_601_500_000_000);
    assert_eq!(got[2].labels["category"], "AppServiceHTTPLogs");
    assert!(agent.terminate(Duration::from_secs(20)).success());
}

#[test]
fn azure_event_hubs_with_a_wrong_connection_string_ships_nothing_and_says_so() {
    let (dir, store) = dir_and_store();
    let (ca, broker) = event_hubs();
    broker.produce("hub", 0, vec![Msg::new("never read", 1_700_000_000_000)]);
    std::fs::write(dir.path().join("ca.pem"), ca).unwrap();
    let source = format!(
        r#"type = "azure_event_hubs"
name = "azure"
azure_event_hubs = {{ fully_qualified_namespace = "127.0.0.1:{port}", event_hubs = ["hub"], connection_string = "Endpoint=wrong", ca_file = "{dir}/ca.pem", disallow_custom_messages = true }}
"#,
        port = broker.port,
        dir = dir.path().display()
    );
    let agent = Agent::start(&agent::net_source_config(dir.path(), "azure.toml", &store.base, &source));
    assert!(
        wait_for(Duration::from_secs(20), || agent.stderr_text().contains("cannot be reached; retrying with backoff")),
        "{}",
        agent.stderr_text()
    );
    assert!(query_all(&store, r#"{job=~".+"}"#, None).is_empty());
    assert!(!agent.stderr_text().contains("Endpoint=wrong"), "the connection string is a secret");
    assert!(agent.terminate(Duration::from_secs(20)).success());
}

fn check(dir: &Path, source: &str) -> (i32, String) {
    let path = agent::net_source_config(dir, "bad.toml", "http://127.0.0.1:1", source);
    let out = Command::new(bin()).args(["check", "--config"]).arg(&path).output().unwrap();
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn bad_kafka_config_exits_2_naming_the_key_and_file() {
    let dir = tempfile::tempdir().unwrap();
    let (code, err) = check(dir.path(), "type = \"kafka\"\nkafka = { brokers = [], topics = [\"^app-(\"] }\n");
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("bad.toml"), "{err}");
    assert!(err.contains("sources[0].kafka.brokers"), "{err}");
    assert!(err.contains("sources[0].kafka.topics[0]"), "{err}");
    let (code, err) = check(
        dir.path(),
        "type = \"kafka\"\nkafka = { brokers = [\"k:9092\"], topics = [\"t\"], authentication = { type = \"sasl\", sasl = { mechanism = \"SCRAM-SHA-512\" } } }\n",
    );
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("sources[0].kafka.authentication.sasl.user"), "{err}");
    assert!(err.contains("sources[0].kafka.authentication.sasl.password"), "{err}");
    let (code, err) = check(dir.path(), "type = \"azure_event_hubs\"\nazure_event_hubs = { event_hubs = [] }\n");
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("sources[0].azure_event_hubs.fully_qualified_namespace"), "{err}");
    assert!(err.contains("sources[0].azure_event_hubs.event_hubs"), "{err}");
    assert!(err.contains("sources[0].azure_event_hubs.connection_string"), "{err}");
    let (code, err) = check(dir.path(), "type = \"kafka\"\n");
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("sources[0].kafka"), "{err}");
}

#[test]
fn promtail_kafka_and_azure_event_hubs_jobs_convert_check_and_ship() {
    let s = scenario::Scenario::loki();
    let (recv, dir) = (&s.r, s.root());
    let kafka = Broker::start(Options::default());
    kafka.produce("orders", 0, vec![Msg::keyed("k1", "order placed", 1_700_000_000_000)]);
    let (ca, azure) = event_hubs();
    let record = r#"{"records":[{"time":"2024-05-01T10:00:00Z","category":"AuditEvent","resourceId":"/R","operationName":"op"}]}"#;
    azure.produce("hub1", 0, vec![Msg::new(record, 1_700_000_000_000)]);
    let ca_file = dir.join("ca.pem");
    std::fs::write(&ca_file, ca).unwrap();
    let yaml = s.promtail_yaml(&format!(
        r#"  - job_name: kafka
    kafka:
      brokers: [{kafka}]
      topics: ['^ord.*']
      group_id: shippers
      assignor: roundrobin
      use_incoming_timestamp: true
      labels:
        job: kafka
    relabel_configs:
      - source_labels: ['__meta_kafka_topic']
        target_label: topic
      - source_labels: ['__meta_kafka_message_key']
        target_label: key
      - source_labels: ['__meta_kafka_group_id']
        target_label: group
  - job_name: azure
    azure_event_hubs:
      fully_qualified_namespace: 127.0.0.1:{azure}
      connection_string: "{conn}"
      event_hubs: [hub1]
      use_incoming_timestamp: true
      labels:
        job: azure
    relabel_configs:
      - source_labels: ['__azure_event_hubs_category']
        target_label: category
"#,
        kafka = kafka.addr(),
        azure = azure.port,
        conn = CONNECTION,
    ));
    let (toml, stderr) = discovery::convert_promtail(dir, &yaml);
    assert!(toml.contains("type = \"kafka\"") && toml.contains("type = \"azure_event_hubs\""), "{toml}");
    assert!(stderr.contains("scrape_configs[0].kafka.group_id"), "the difference is listed: {stderr}");
    let converted =
        agent::write_file(dir, "tailship.toml", &format!("{toml}\n[spool]\npath = \"{}/spool\"\n", dir.display()));
    discovery::check_ok(&converted);
    // Promtail would trust the system's roots: the test's CA is given as one of them.
    let agent = Agent::start_with(&converted, &[("SSL_CERT_FILE", ca_file.to_str().unwrap())]);
    let mut got = Vec::new();
    assert!(
        wait_for(Duration::from_secs(30), || {
            got = agent::query_all_at(recv, "/loki/api/v1", r#"{job=~"kafka|azure"}"#, None);
            got.len() >= 2
        }),
        "{got:?} {}",
        agent.stderr_text()
    );
    let k = got.iter().find(|e| e.line == "order placed").unwrap_or_else(|| panic!("{got:#?}"));
    assert_eq!(k.labels["topic"], "orders");
    assert_eq!(k.labels["key"], "k1");
    assert_eq!(k.labels["group"], "shippers");
    assert_eq!(k.ts, 1_700_000_000_000_000_000);
    let a = got.iter().find(|e| e.labels.get("job").is_some_and(|j| j == "azure")).unwrap();
    assert_eq!(a.labels["category"], "AuditEvent");
    assert_eq!(a.ts, 1_714_557_600_000_000_000);
    assert!(agent.terminate(Duration::from_secs(20)).success());
}

/// A CA, a broker certificate for 127.0.0.1 and a client certificate signed
/// by it, and a server config requiring a client certificate of that CA:
/// (CA PEM, client cert PEM, client key PEM, server config).
fn mutual_tls() -> (String, String, String, Arc<rustls::ServerConfig>) {
    let pki::Pki { ca, client, server: config } = pki::pki("127.0.0.1", Some("agent"));
    let (cert, key) = client.unwrap();
    (ca, cert, key, config)
}

#[test]
fn authentication_ssl_with_a_client_certificate_reads_from_a_broker_that_requires_one() {
    let (dir, store) = dir_and_store();
    let (ca, cert, key, tls) = mutual_tls();
    let broker = Broker::start(Options { tls: Some(tls), ..Default::default() });
    broker.produce("secure", 0, vec![Msg::new("over mutual TLS", 1_700_000_000_000)]);
    for (name, pem) in [("ca.pem", &ca), ("cert.pem", &cert), ("key.pem", &key)] {
        std::fs::write(dir.path().join(name), pem).unwrap();
    }
    let d = dir.path().display();
    let source = format!(
        r#"type = "kafka"
name = "kafka"
labels = {{ job = "kafka" }}
kafka = {{ brokers = ["{addr}"], topics = ["secure"], authentication = {{ type = "ssl", tls = {{ ca_file = "{d}/ca.pem", cert_file = "{d}/cert.pem", key_file = "{d}/key.pem" }} }} }}
"#,
        addr = broker.addr()
    );
    let agent = Agent::start(&agent::net_source_config(dir.path(), "ssl.toml", &store.base, &source));
    let got = wait_lines(&store, r#"{job="kafka"}"#, 1);
    assert_eq!(got.len(), 1, "{}", agent.stderr_text());
    assert_eq!(got[0].line, "over mutual TLS");
    assert!(agent.terminate(Duration::from_secs(20)).success());
}

#[test]
fn a_broker_that_goes_away_and_comes_back_is_read_on_from_where_it_was() {
    let (dir, store) = dir_and_store();
    let broker = Broker::start(Options::default());
    let port = broker.port;
    broker.produce("logs", 0, vec![Msg::new("before", 1_700_000_000_000)]);
    let agent = Agent::start(&kafka_config(dir.path(), &store.base, &broker.addr(), r#""logs""#, true));
    assert_eq!(wait_lines(&store, r#"{job="kafka"}"#, 1).len(), 1, "{}", agent.stderr_text());
    // The broker stops (its log kept) and starts again on the same port.
    let log = Broker::start(Options::default());
    log.copy_from(&broker);
    drop(broker);
    wait_said(&agent, "cannot be reached; retrying with backoff");
    let again = Broker::start(Options { port, ..Default::default() });
    again.copy_from(&log);
    again.produce("logs", 0, vec![Msg::new("after", 1_700_000_000_001)]);
    let got = wait_lines(&store, r#"{job="kafka"}"#, 2);
    let lines: Vec<&str> = got.iter().map(|e| e.line.as_str()).collect();
    assert_eq!(lines, ["before", "after"], "{}", agent.stderr_text());
    // Said once the fetch after the outage is done, which may be after its lines are stored.
    let said = || agent.stderr_text().contains("reached again");
    assert!(wait_for(Duration::from_secs(20), said), "{}", agent.stderr_text());
    assert!(agent.terminate(Duration::from_secs(20)).success());
}

/// `tls.server_name` checks the broker's certificate against that name, and
/// `insecure_skip_verify` checks nothing; without either, a certificate for
/// another name is refused and said so.
#[test]
fn kafka_tls_server_name_and_insecure_skip_verify_reach_a_broker_named_otherwise() {
    let (dir, store) = dir_and_store();
    // A certificate for `broker.internal`, not the address connected to.
    let pki::Pki { ca, server: tls, .. } = pki::pki("broker.internal", None);
    let broker = Broker::start(Options { tls: Some(tls), ..Default::default() });
    broker.produce("named", 0, vec![Msg::new("checked against its name", 1_700_000_000_000)]);
    broker.produce("unchecked", 0, vec![Msg::new("not checked at all", 1_700_000_000_000)]);
    broker.produce("refused", 0, vec![Msg::new("never read", 1_700_000_000_000)]);
    std::fs::write(dir.path().join("ca.pem"), &ca).unwrap();
    let d = dir.path().display();
    let addr = broker.addr();
    let source = format!(
        r#"type = "kafka"
name = "named"
labels = {{ job = "kafka" }}
kafka = {{ brokers = ["{addr}"], topics = ["named"], authentication = {{ type = "ssl", tls = {{ ca_file = "{d}/ca.pem", server_name = "broker.internal" }} }} }}
[[sources]]
type = "kafka"
name = "unchecked"
labels = {{ job = "kafka" }}
kafka = {{ brokers = ["{addr}"], topics = ["unchecked"], authentication = {{ type = "ssl", tls = {{ insecure_skip_verify = true }} }} }}
[[sources]]
type = "kafka"
name = "refused"
labels = {{ job = "kafka" }}
kafka = {{ brokers = ["{addr}"], topics = ["refused"], authentication = {{ type = "ssl", tls = {{ ca_file = "{d}/ca.pem" }} }} }}
"#
    );
    let agent = Agent::start(&agent::net_source_config(dir.path(), "named.toml", &store.base, &source));
    let lines = sorted_lines(&store, 2);
    assert_eq!(lines, ["checked against its name", "not checked at all"], "{}", agent.stderr_text());
    wait_said(&agent, "cannot be reached; retrying with backoff");
    assert!(agent.stderr_text().contains("insecure_skip_verify"), "{}", agent.stderr_text());
    stop_never_stored(agent, &store, "never read");
}

/// SASL with SCRAM-SHA-256 in the clear and SCRAM-SHA-512 over TLS
/// (`use_tls`): the broker checks the proof of the password (RFC 5802) and
/// the agent the broker's signature; a wrong password is refused and said so.
#[test]
fn sasl_scram_sha_256_and_sha_512_over_tls_read_from_brokers_that_check_the_proof() {
    let (dir, store) = dir_and_store();
    let creds = Some(("shipper".to_string(), "pa55-w0rd".to_string()));
    let plain = Broker::start(Options { sasl: creds.clone(), scram: Some("SCRAM-SHA-256"), ..Default::default() });
    let (ca, tls) = pki::private_ca();
    let secure =
        Broker::start(Options { sasl: creds, scram: Some("SCRAM-SHA-512"), tls: Some(tls), ..Default::default() });
    plain.produce("t", 0, vec![Msg::new("scram 256", 1_700_000_000_000)]);
    secure.produce("t", 0, vec![Msg::new("scram 512 over tls", 1_700_000_000_000)]);
    plain.produce("u", 0, vec![Msg::new("wrong password", 1_700_000_000_000)]);
    std::fs::write(dir.path().join("ca.pem"), &ca).unwrap();
    std::fs::write(dir.path().join("pw"), "pa55-w0rd\n").unwrap();
    let d = dir.path().display();
    let source = format!(
        r#"type = "kafka"
name = "scram256"
labels = {{ job = "kafka" }}
kafka = {{ brokers = ["{p}"], topics = ["t"], authentication = {{ type = "sasl", sasl = {{ mechanism = "SCRAM-SHA-256", user = "shipper", password_file = "{d}/pw" }} }} }}
[[sources]]
type = "kafka"
name = "scram512"
labels = {{ job = "kafka" }}
kafka = {{ brokers = ["{s}"], topics = ["t"], authentication = {{ type = "sasl", tls = {{ ca_file = "{d}/ca.pem" }}, sasl = {{ mechanism = "SCRAM-SHA-512", user = "shipper", password = "pa55-w0rd", use_tls = true }} }} }}
[[sources]]
type = "kafka"
name = "wrong"
labels = {{ job = "kafka" }}
kafka = {{ brokers = ["{p}"], topics = ["u"], authentication = {{ type = "sasl", sasl = {{ mechanism = "SCRAM-SHA-256", user = "shipper", password = "not-it" }} }} }}
"#,
        p = plain.addr(),
        s = secure.addr()
    );
    let agent = Agent::start(&agent::net_source_config(dir.path(), "scram.toml", &store.base, &source));
    let lines = sorted_lines(&store, 2);
    assert_eq!(lines, ["scram 256", "scram 512 over tls"], "{}", agent.stderr_text());
    assert!(plain.authenticated.load(std::sync::atomic::Ordering::SeqCst) >= 1);
    assert!(secure.authenticated.load(std::sync::atomic::Ordering::SeqCst) >= 1);
    wait_said(&agent, "cannot be reached; retrying with backoff");
    assert!(!agent.stderr_text().contains("pa55-w0rd"), "{}", agent.stderr_text());
    stop_never_stored(agent, &store, "wrong password");
}

/// A topic matching a regex and a partition created while the agent runs
/// are found at the next `topic_refresh_interval` and read from their start.
#[test]
fn a_topic_and_a_partition_created_while_running_are_read_from_their_start() {
    let (dir, store) = dir_and_store();
    let broker = Broker::start(Options::default());
    broker.produce("app-a", 0, vec![Msg::new("a0", 1_700_000_000_000)]);
    let agent = Agent::start(&kafka_config(dir.path(), &store.base, &broker.addr(), r#""^app-.*""#, true));
    assert_eq!(wait_lines(&store, r#"{job="kafka"}"#, 1).len(), 1, "{}", agent.stderr_text());
    broker.produce("app-b", 0, vec![Msg::new("b0", 1_700_000_000_001), Msg::new("b1", 1_700_000_000_002)]);
    broker.produce("app-a", 1, vec![Msg::new("a1 on a new partition", 1_700_000_000_003)]);
    let got = wait_lines(&store, r#"{job="kafka"}"#, 4);
    let mut lines: Vec<String> = got
        .iter()
        .map(|e| {
            format!("{} {}/{}", e.line, e.labels["topic"].as_str().unwrap(), e.labels["partition"].as_str().unwrap())
        })
        .collect();
    lines.sort();
    assert_eq!(
        lines,
        ["a0 app-a/0", "a1 on a new partition app-a/1", "b0 app-b/0", "b1 app-b/0"],
        "{}",
        agent.stderr_text()
    );
    assert!(agent.terminate(Duration::from_secs(20)).success());
}
