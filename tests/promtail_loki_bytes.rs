//! The two input choices where tailship ships other bytes than Promtail
//! (docs/promtail-differences.md, "Lines"), seen where users see them: in
//! a real Loki 3.7.6. The real Promtail 3.6.15 and tailship read one file
//! and push to one Loki; its query API answers. Invalid UTF-8 reads back
//! the same from both (Loki's JSON answer has U+FFFD where Promtail sent
//! the bytes); a CRLF line keeps its `\r` in Promtail's entry and not in
//! tailship's. Skips, saying so, where either binary is absent.

use crate::agent;
use crate::common;
use crate::loki;
use crate::promtail;

use std::time::Duration;

use agent::{free_port, write_file, Agent};
use common::wait_for;
use loki::Loki;
use promtail::Promtail;

#[test]
fn invalid_utf8_reads_back_from_loki_as_promtails_and_crlf_loses_only_its_cr() {
    if promtail::binary().is_none() {
        eprintln!("no Promtail binary in ../shared/peers: skipping");
        return;
    }
    let Some(loki) = Loki::start() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let log = dir.join("app.log");
    std::fs::write(&log, b"bad \xff\xfe bytes here\nwindows line\r\nplain\n").unwrap();

    let port = free_port();
    let promtail_yaml = write_file(
        dir,
        "promtail.yaml",
        &format!(
            "server: {{ http_listen_address: 127.0.0.1, http_listen_port: {port}, grpc_listen_port: 0, log_level: warn }}\n\
             clients: [{{ url: {base}/loki/api/v1/push, batchwait: 100ms }}]\n\
             positions: {{ filename: {d}/promtail-positions.yaml }}\n\
             scrape_configs:\n  - job_name: bytes\n    static_configs:\n      \
             - labels: {{ job: bytes, agent: promtail, __path__: {log} }}\n",
            base = loki.base,
            d = dir.display(),
            log = log.display()
        ),
    );
    let Some(promtail) = Promtail::start(dir, &promtail_yaml, port) else { return };
    let cfg = write_file(
        dir,
        "tailship.toml",
        &format!(
            "[server]\nlisten = \"127.0.0.1:{server}\"\n[client]\nurl = \"{base}\"\napi_prefix = \"/loki/api/v1\"\n\
             batch = {{ max_wait = \"100ms\" }}\n[positions]\npath = \"{d}/positions.json\"\n\
             [[sources]]\ntype = \"file\"\ninclude = [\"{log}\"]\nlabels = {{ job = \"bytes\", agent = \"tailship\" }}\n",
            server = free_port(),
            base = loki.base,
            d = dir.display(),
            log = log.display()
        ),
    );
    let agent = Agent::start(&cfg);

    let (mut theirs, mut ours) = (Vec::new(), Vec::new());
    let arrived = wait_for(Duration::from_secs(60), || {
        theirs = loki.lines(r#"{job="bytes", agent="promtail"}"#);
        ours = loki.lines(r#"{job="bytes", agent="tailship"}"#);
        theirs.len() >= 3 && ours.len() >= 3
    });
    assert!(arrived, "Promtail {theirs:?}, tailship {ours:?}\n{}\n{}", promtail.log_text(), agent.stderr_text());
    assert_eq!(theirs, ["bad \u{fffd}\u{fffd} bytes here", "windows line\r", "plain"], "Promtail's, read from Loki");
    assert_eq!(ours, ["bad \u{fffd}\u{fffd} bytes here", "windows line", "plain"], "tailship's, read from Loki");
    assert_eq!(agent.metric(r#"tailship_lines_repaired_total{reason="invalid_utf8",source="file-0"}"#), 1.0);
    drop(promtail);
    assert!(agent.terminate(Duration::from_secs(15)).success());
}
