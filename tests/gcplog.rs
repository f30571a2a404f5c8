//! `type = "gcplog"`: Cloud Logging entries from Pub/Sub. Pub/Sub cannot
//! run here, so a push subscription's POSTs are made by the test as Pub/Sub
//! makes them, and a pull subscription pulls from a Pub/Sub REST API written
//! in the test (as the emulator, and as the real API behind a service
//! account's token, whose token endpoint is in the test too). Lines land in
//! `tailship receive`; Promtail's `gcplog` jobs go through `convert` and `check`.

use crate::agent;
use crate::common;
use crate::discovery;
use crate::mockhttp;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent::{free_port, query_all, Agent, Stored};
use base64::Engine;
use common::{bin, request, wait_for, Receiver};
use mockhttp::{Mock, Reply};

const BIG: &[&str] = &["--max-query-limit", "1000000"];

const RELABEL: &str = r#"relabel = [
  { source_labels = ["__gcp_resource_type"], target_label = "resource_type" },
  { source_labels = ["__gcp_resource_labels_zone"], target_label = "zone" },
  { source_labels = ["__gcp_severity"], target_label = "severity" },
  { source_labels = ["__gcp_labels_app_kubernetes_io_name"], target_label = "app" },
  { source_labels = ["__gcp_attributes_origin"], target_label = "origin" },
  { source_labels = ["__gcp_severity"], regex = "DEBUG", action = "drop" },
]"#;

fn b64(s: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(s)
}

/// A Cloud Logging entry as a log sink writes it to Pub/Sub.
fn entry(text: &str, severity: &str, ts: &str) -> String {
    serde_json::json!({
        "insertId": "abc",
        "logName": "projects/shop/logs/app",
        "resource": {"type": "gce_instance", "labels": {"zone": "europe-west1-b", "instance_id": "42"}},
        "timestamp": ts,
        "receiveTimestamp": "2024-05-01T10:00:09Z",
        "severity": severity,
        "labels": {"app.kubernetes.io/name": "checkout"},
        "textPayload": text,
    })
    .to_string()
}

fn wait_lines(store: &Receiver, n: usize) -> Vec<Stored> {
    let mut got = Vec::new();
    wait_for(Duration::from_secs(30), || {
        got = query_all(store, r#"{job="gcp"}"#, None);
        got.len() >= n
    });
    got
}

fn push_body(data: &str, id: &str, attributes: serde_json::Value) -> String {
    serde_json::json!({
        "message": {"attributes": attributes, "data": b64(data), "messageId": id, "message_id": id,
                    "publishTime": "2024-05-01T10:00:10Z", "publish_time": "2024-05-01T10:00:10Z"},
        "subscription": "projects/shop/subscriptions/to-loki",
    })
    .to_string()
}

#[test]
fn push_messages_are_labelled_stamped_and_acknowledged_once_spooled() {
    let dir = tempfile::tempdir().unwrap();
    let store = Receiver::start(BIG);
    let listen = format!("127.0.0.1:{}", free_port());
    let source = format!(
        "type = \"gcplog\"\nname = \"gcp\"\nlisten = \"{listen}\"\nlabels = {{ job = \"gcp\" }}\nhost_label = false\n\
         gcplog = {{ subscription_type = \"push\" }}\n{RELABEL}\n"
    );
    let cfg = agent::net_source_config(dir.path(), "gcp.toml", &store.base, &source);
    let agent = Agent::start(&cfg);
    assert!(wait_for(Duration::from_secs(15), || std::net::TcpStream::connect(&listen).is_ok()));
    let url = format!("http://{listen}/gcp/api/v1/push");
    let post = |body: &str| request("POST", &url, &[("Content-Type", "application/json")], body.as_bytes());

    let r = post(&push_body(
        &entry("payment accepted", "INFO", "2024-05-01T10:00:00.25Z"),
        "m-1",
        serde_json::json!({"origin": "sink"}),
    ));
    assert_eq!(r.status, 204, "{}", r.text());
    // DEBUG is dropped by the rules, and still acknowledged.
    assert_eq!(
        post(&push_body(&entry("noise", "DEBUG", "2024-05-01T10:00:01Z"), "m-2", serde_json::json!({}))).status,
        204
    );
    // Data that is not an entry is shipped as it is, counted.
    assert_eq!(post(&push_body("not a log entry", "m-3", serde_json::json!({}))).status, 204);
    // A message without an id is not a Pub/Sub push: refused.
    let bad = serde_json::json!({"message": {"data": b64("x")}, "subscription": "s"}).to_string();
    let r = post(&bad);
    assert_eq!(r.status, 400);
    assert!(r.text().contains("message_id"), "{}", r.text());

    let got = wait_lines(&store, 2);
    assert_eq!(got.len(), 2, "{got:#?}");
    let paid = got.iter().find(|e| e.line == "payment accepted").unwrap_or_else(|| panic!("{got:#?}"));
    assert_eq!(paid.ts, 1_714_557_600_250_000_000);
    for (k, v) in [
        ("resource_type", "gce_instance"),
        ("zone", "europe-west1-b"),
        ("severity", "INFO"),
        ("app", "checkout"),
        ("origin", "sink"),
    ] {
        assert_eq!(paid.labels[k], v, "{k}: {:?}", paid.labels);
    }
    let raw = got.iter().find(|e| e.line == "not a log entry").unwrap_or_else(|| panic!("{got:#?}"));
    assert!(!raw.labels.contains_key("severity"));
    assert!(agent.metric("tailship_receiver_unparsed_total") >= 1.0, "{}", agent.metrics());
}

/// A Pub/Sub REST API: `:pull` hands out what `queue` holds (each message
/// again until acknowledged), `:acknowledge` records the ack ids.
struct PubSub {
    mock: Mock,
    acked: Arc<Mutex<Vec<String>>>,
}

fn pubsub(messages: Vec<(String, String)>, fail_first: usize) -> (tokio::runtime::Runtime, PubSub) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let pending: Arc<Mutex<BTreeMap<String, String>>> = Arc::new(Mutex::new(messages.into_iter().collect()));
    let acked = Arc::new(Mutex::new(Vec::new()));
    let (p, a) = (pending.clone(), acked.clone());
    let mock = rt.block_on(Mock::start(move |r, index| {
        if index < fail_first {
            return Reply::json(503, serde_json::json!({"error": {"code": 503, "status": "UNAVAILABLE"}}));
        }
        if r.path.ends_with(":acknowledge") {
            let ids: Vec<String> = serde_json::from_value(r.json()["ackIds"].clone()).unwrap();
            let mut pending = p.lock().unwrap();
            for id in &ids {
                pending.remove(id.trim_start_matches("ack-"));
            }
            a.lock().unwrap().extend(ids);
            return Reply::ok(serde_json::json!({}));
        }
        assert!(r.path.ends_with("/v1/projects/shop/subscriptions/to-loki:pull"), "{}", r.path);
        let max = r.json()["maxMessages"].as_u64().unwrap() as usize;
        let received: Vec<serde_json::Value> = p
            .lock()
            .unwrap()
            .iter()
            .take(max)
            .map(|(id, data)| {
                serde_json::json!({"ackId": format!("ack-{id}"), "message": {
                    "data": b64(data), "messageId": id, "attributes": {"origin": "pull"},
                    "publishTime": "2024-05-01T10:00:10Z"}})
            })
            .collect();
        Reply::ok(if received.is_empty() {
            serde_json::json!({})
        } else {
            serde_json::json!({"receivedMessages": received})
        })
    }));
    (rt, PubSub { mock, acked })
}

fn pull_config(dir: &Path, store: &Receiver, endpoint: Option<&str>) -> PathBuf {
    let endpoint = endpoint.map(|e| format!(", endpoint = \"{e}\"")).unwrap_or_default();
    let source = format!(
        "type = \"gcplog\"\nname = \"gcp\"\nlabels = {{ job = \"gcp\" }}\nhost_label = false\n\
         gcplog = {{ project_id = \"shop\", subscription = \"to-loki\", max_messages = 50{endpoint} }}\n{RELABEL}\n"
    );
    agent::net_source_config(dir, "gcp.toml", &store.base, &source)
}

/// The emulator's way (`PUBSUB_EMULATOR_HOST`, no credentials): a failing
/// API at first, then every message once, each acknowledged after it was spooled.
#[test]
fn a_pull_subscription_ships_every_message_once_through_failures() {
    let messages: Vec<(String, String)> = (0..120)
        .map(|i| (format!("id-{i:03}"), entry(&format!("pulled {i:03}"), "INFO", "2024-05-01T10:00:00Z")))
        .collect();
    let (_rt, ps) = pubsub(messages, 2);
    let dir = tempfile::tempdir().unwrap();
    let store = Receiver::start(BIG);
    let host = ps.mock.url.trim_start_matches("http://").to_string();
    let agent = Agent::start_with(&pull_config(dir.path(), &store, None), &[("PUBSUB_EMULATOR_HOST", &host)]);
    let got = wait_lines(&store, 120);
    assert_eq!(got.len(), 120, "{}", agent.stderr_text());
    let mut lines: Vec<&str> = got.iter().map(|e| e.line.as_str()).collect();
    lines.sort();
    lines.dedup();
    assert_eq!(lines.len(), 120);
    assert_eq!(got[0].labels["origin"], "pull");
    assert!(wait_for(Duration::from_secs(10), || ps.acked.lock().unwrap().len() >= 120));
    let stderr = agent.stderr_text();
    assert!(stderr.contains("cannot pull") && stderr.contains("503"), "{stderr}");
    assert!(ps.mock.requests().iter().all(|r| r.header("authorization").is_none()), "no credentials for an emulator");
}

/// A message Pub/Sub delivers again (its acknowledgement failed) is
/// acknowledged again, not shipped twice.
#[test]
fn a_message_delivered_again_after_a_failed_acknowledgement_is_shipped_once() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let acks = Arc::new(Mutex::new(0usize));
    let a = acks.clone();
    let data = entry("delivered twice", "INFO", "2024-05-01T10:00:00Z");
    let mock = rt.block_on(Mock::start(move |r, _| {
        if r.path.ends_with(":acknowledge") {
            let mut n = a.lock().unwrap();
            *n += 1;
            // The first acknowledgement is lost.
            return if *n == 1 { Reply::json(500, serde_json::json!({})) } else { Reply::ok(serde_json::json!({})) };
        }
        if *a.lock().unwrap() >= 2 {
            return Reply::ok(serde_json::json!({}));
        }
        Reply::ok(serde_json::json!({"receivedMessages": [{"ackId": "ack-1", "message": {
            "data": b64(&data), "messageId": "only-one", "publishTime": "2024-05-01T10:00:10Z"}}]}))
    }));
    let dir = tempfile::tempdir().unwrap();
    let store = Receiver::start(BIG);
    let host = mock.url.trim_start_matches("http://").to_string();
    let agent = Agent::start_with(&pull_config(dir.path(), &store, None), &[("PUBSUB_EMULATOR_HOST", &host)]);
    assert!(wait_for(Duration::from_secs(30), || *acks.lock().unwrap() >= 2), "{}", agent.stderr_text());
    let got = wait_lines(&store, 1);
    assert_eq!(got.len(), 1);
    // Past the second acknowledgement: still one.
    assert!(wait_for(Duration::from_secs(10), || mock.requests().len() > 4));
    assert_eq!(query_all(&store, r#"{job="gcp"}"#, None).len(), 1);
}

/// The real API's way: a service account's key (`GOOGLE_APPLICATION_CREDENTIALS`)
/// signs a JWT for its token endpoint, and each Pub/Sub call carries the token.
#[test]
fn a_pull_subscription_authenticates_with_a_service_account() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let tokens = rt.block_on(Mock::start(|r, _| {
        let form: BTreeMap<String, String> = url::form_urlencoded::parse(r.body.as_bytes()).into_owned().collect();
        if form.get("grant_type").map(String::as_str) != Some("urn:ietf:params:oauth:grant-type:jwt-bearer")
            || form.get("assertion").is_none_or(|a| a.split('.').count() != 3)
        {
            return Reply::json(400, serde_json::json!({"error": "invalid_grant"}));
        }
        Reply::ok(
            serde_json::json!({"access_token": "ya29.test-token-7f3e", "token_type": "Bearer", "expires_in": 3600}),
        )
    }));
    let (_rt2, ps) = pubsub(vec![("id-1".into(), entry("with a token", "INFO", "2024-05-01T10:00:00Z"))], 0);
    let dir = tempfile::tempdir().unwrap();
    let key = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/gcp-test-only-key.pem"))
        .unwrap();
    let creds = dir.path().join("sa.json");
    std::fs::write(
        &creds,
        serde_json::json!({
            "type": "service_account", "project_id": "shop", "private_key_id": "k1", "private_key": key,
            "client_email": "shipper@shop.iam.gserviceaccount.com", "client_id": "1",
            "token_uri": format!("{}/token", tokens.url),
        })
        .to_string(),
    )
    .unwrap();
    let store = Receiver::start(BIG);
    let agent = Agent::start_with(
        &pull_config(dir.path(), &store, Some(&ps.mock.url)),
        &[("GOOGLE_APPLICATION_CREDENTIALS", creds.to_str().unwrap()), ("PUBSUB_EMULATOR_HOST", "")],
    );
    let got = wait_lines(&store, 1);
    assert_eq!(got.len(), 1, "{}", agent.stderr_text());
    assert!(!tokens.requests().is_empty());
    let calls = ps.mock.requests();
    assert!(calls.iter().all(|r| r.header("authorization") == Some("Bearer ya29.test-token-7f3e")), "{calls:?}");
    assert!(!agent.stderr_text().contains("test-token-7f3e"));
}

#[test]
fn promtail_gcplog_jobs_convert_and_check() {
    let dir = tempfile::tempdir().unwrap();
    let yaml = r#"clients:
  - url: http://127.0.0.1:3100/loki/api/v1/push
scrape_configs:
  - job_name: gcp-pull
    gcplog:
      project_id: shop
      subscription: to-loki
      use_incoming_timestamp: true
      use_full_line: true
      labels:
        job: gcp
    relabel_configs:
      - source_labels: [__gcp_resource_type]
        target_label: resource_type
  - job_name: gcp-push
    gcplog:
      subscription_type: push
      server:
        http_listen_address: 127.0.0.1
        http_listen_port: 8519
      push_timeout: 10s
      labels:
        job: gcp-push
"#;
    let (toml, report) = discovery::convert_promtail(dir.path(), yaml);
    assert!(!report.contains("Not translated") || !report.contains("gcplog"), "{report}");
    assert!(toml.contains("type = \"gcplog\"") && toml.contains("subscription = \"to-loki\""), "{toml}");
    assert!(toml.contains("subscription_type = \"push\"") && toml.contains("127.0.0.1:8519"), "{toml}");
    assert!(toml.contains("use_full_line = true") && toml.contains("__gcp_resource_type"), "{toml}");
    assert!(report.contains("push_timeout"), "{report}");
    let cfg = dir.path().join("tailship.toml");
    std::fs::write(&cfg, toml.replace("/var/lib/tailship", &dir.path().display().to_string())).unwrap();
    let out = Command::new(bin()).args(["check", "--config"]).arg(&cfg).output().unwrap();
    assert!(out.status.success(), "{}\n{toml}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn gcplog_mistakes_exit_2_naming_the_key() {
    let dir = tempfile::tempdir().unwrap();
    discovery::bad_net_sources_exit_2(
        "gcplog",
        &[
            ("gcplog = { subscription = \"s\" }", "gcplog.project_id"),
            ("gcplog = { project_id = \"p\", subscription = \"projects/p/subscriptions/s\" }", "gcplog.subscription"),
            ("gcplog = { project_id = \"p\", subscription = \"s\" }\nlisten = \"127.0.0.1:9\"", ".listen"),
            ("gcplog = { project_id = \"p\", subscription = \"s\", endpoint = \"pubsub\" }", "gcplog.endpoint"),
            ("gcplog = { project_id = \"p\", subscription = \"s\" }\nreceiver = { max_connections = 3 }", ".receiver"),
        ],
    );
    let cfg = agent::net_source_config(
        dir.path(),
        "bad.toml",
        "http://127.0.0.1:9",
        "type = \"file\"\ninclude = [\"/tmp/x\"]\ngcplog = { project_id = \"p\", subscription = \"s\" }",
    );
    let out = Command::new(bin()).args(["check", "--config"]).arg(&cfg).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("gcplog is for gcplog sources"));
}
