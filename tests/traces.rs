//! `[tracing]`: the agent's spans as OTLP/HTTP traces, posted to a collector
//! written in the test (protobuf bodies; their strings are read as bytes),
//! while the log lines stay free of span prefixes.

use crate::agent;
use crate::common;
use crate::mockhttp;

use std::time::Duration;

use agent::{agent_config, write_file, Agent};
use common::{wait_for, Receiver};
use mockhttp::{Mock, Reply};

#[test]
fn pushes_are_sent_as_spans_to_the_otlp_endpoint() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let collector = rt.block_on(Mock::start(|_, _| Reply::empty(200)));
    let dir = tempfile::tempdir().unwrap();
    let store = Receiver::start(&[]);
    let log = write_file(dir.path(), "app.log", "traced line one\ntraced line two\n");
    let cfg = agent_config(dir.path(), &store.base, log.to_str().unwrap(), "", "");
    let mut text = std::fs::read_to_string(&cfg).unwrap();
    text.push_str(&format!(
        "\n[tracing]\nenabled = true\nendpoint = \"{}\"\nservice_name = \"edge-shipper\"\n",
        collector.url
    ));
    std::fs::write(&cfg, text).unwrap();
    let agent = Agent::start(&cfg);
    assert!(wait_for(Duration::from_secs(20), || store.stats()["entries"].as_u64() == Some(2)));
    // The batch of spans goes out within the exporter's delay (5 s), or at exit.
    let got = wait_for(Duration::from_secs(30), || collector.requests().iter().any(|r| r.path == "/v1/traces"));
    let stderr = agent.stderr_text();
    assert!(got, "no spans: {stderr}");
    let r = collector.requests().into_iter().find(|r| r.path == "/v1/traces").unwrap();
    assert_eq!(r.method, "POST");
    assert_eq!(r.header("content-type"), Some("application/x-protobuf"));
    for want in ["edge-shipper", "push", "client", "default", "status", "204"] {
        assert!(r.body.contains(want), "`{want}` not in the spans: {:?}", r.body);
    }
    assert!(!stderr.contains("push{"), "log lines show spans: {stderr}");
    assert!(agent.terminate(Duration::from_secs(10)).success());
}

#[test]
fn tracing_mistakes_exit_2_naming_the_key() {
    let dir = tempfile::tempdir().unwrap();
    for (t, key) in
        [("endpoint = \"collector:4318\"", "tracing.endpoint"), ("sampling_ratio = 2.0", "tracing.sampling_ratio")]
    {
        let cfg = write_file(
            dir.path(),
            "bad.toml",
            &format!("[tracing]\nenabled = true\n{t}\n[[sources]]\ntype = \"stdin\"\n"),
        );
        let out = std::process::Command::new(common::bin()).args(["check", "--config"]).arg(&cfg).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.contains(key) && err.contains("bad.toml"), "{err}");
    }
}
