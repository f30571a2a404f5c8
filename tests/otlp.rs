//! `type = "otlp"`: the OpenTelemetry Python SDK's OTLP/HTTP exporter
//! sending to `tailship run` on loopback, and OTLP/JSON bodies.

use crate::agent;
use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use agent::{free_port, query_all, Agent, AgentToml, BATCH};
use common::{request, wait_for, Receiver};

fn otlp_config(dir: &Path, listen: &str, url: &str) -> PathBuf {
    // The store takes structured metadata, as Loki 3 does: attributes other than labels go on as it.
    let client = format!("{BATCH}\nstructured_metadata = true");
    let source = format!(
        r#"[[sources]]
type = "otlp"
listen = "{listen}"
labels = {{ job = "otlp" }}
receiver = {{ attribute_labels = ["service.name", "deployment.environment"] }}"#
    );
    let toml = AgentToml::new(dir, "").bare_client(url, &client).sync_period("").spool("");
    toml.then(&source).write("otlp.toml")
}

fn start(dir: &Path) -> (Receiver, Agent, String) {
    let store = Receiver::start(&["--max-query-limit", "1000000"]);
    let listen = format!("127.0.0.1:{}", free_port());
    let agent = Agent::start(&otlp_config(dir, &listen, &store.base));
    assert!(wait_for(Duration::from_secs(15), || std::net::TcpStream::connect(&listen).is_ok()));
    (store, agent, listen)
}

#[test]
fn the_opentelemetry_python_sdk_exports_to_v1_logs() {
    let sdk = Command::new("python3").args(["-c", "import opentelemetry.exporter.otlp.proto.http"]).output();
    if !sdk.is_ok_and(|o| o.status.success()) {
        eprintln!("the OpenTelemetry Python SDK is not installed (pip install opentelemetry-sdk opentelemetry-exporter-otlp-proto-http); skipping");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (store, agent, listen) = start(dir.path());
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/otlp_send.py");
    let out = Command::new("python3").arg(script).arg(format!("http://{listen}/v1/logs")).arg("20").output().unwrap();
    assert!(
        out.status.success(),
        "{:?} {}\n{}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
        agent.stderr_text()
    );
    let mut got = Vec::new();
    assert!(wait_for(Duration::from_secs(20), || {
        got = query_all(&store, r#"{job="otlp"}"#, None);
        got.len() >= 20
    }));
    let e = got.iter().find(|e| e.line == "python record 7").expect("record 7");
    assert_eq!(e.labels["service_name"], "pyapp");
    assert_eq!(e.labels["deployment_environment"], "test");
    assert_eq!(e.labels["level"], "warn");
    // Other attributes arrive as structured metadata (query results show it beside the labels).
    assert_eq!(e.labels["order_id"], "7");
}

#[test]
fn otlp_json_bodies_and_bad_ones() {
    let dir = tempfile::tempdir().unwrap();
    let (store, _agent, listen) = start(dir.path());
    let url = format!("http://{listen}/v1/logs");
    let body = r#"{"resourceLogs":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"jsonsvc"}}]},"scopeLogs":[{"logRecords":[{"severityNumber":17,"body":{"stringValue":"json record"}}]}]}]}"#;
    let r = request("POST", &url, &[("Content-Type", "application/json")], body.as_bytes());
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.text(), "{}");
    let bad = request("POST", &url, &[("Content-Type", "application/json")], b"{\"resourceLogs\": 1}");
    assert_eq!(bad.status, 400);
    let bad = request("POST", &url, &[("Content-Type", "application/x-protobuf")], b"\xff\xff\xff");
    assert_eq!(bad.status, 400);
    let mut got = Vec::new();
    assert!(wait_for(Duration::from_secs(20), || {
        got = query_all(&store, r#"{job="otlp", service_name="jsonsvc"}"#, None);
        !got.is_empty()
    }));
    assert_eq!(got[0].line, "json record");
    assert_eq!(got[0].labels["level"], "error");
}
