//! A `loki_push_api` job side by side with the real Promtail 3.6.15: the
//! same pushes go to Promtail and to tailship running `tailship convert
//! promtail`'s conversion of the same job, each agent pushing to its own
//! recorder, and the streams (labels and lines) must be Promtail's. Skips,
//! saying so, where the Promtail binary is absent.

use crate::agent;
use crate::common;
use crate::promtail;
use crate::recorder;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use agent::{free_port, write_file, Agent};
use common::{bin, post_json, wait_for};
use promtail::Promtail;
use recorder::Recorder;

/// A push job whose rules read pushed labels (one starting `__`), the
/// job's own `labels` (which replace pushed ones of the same name), drop a
/// stream, drop a pushed label and one of the job's, and change another.
const JOB: &str = r#"
- job_name: pushed
  loki_push_api:
    server: { http_listen_address: 127.0.0.1, http_listen_port: PUSH_PORT, grpc_listen_port: 0 }
    labels: { job: pushed, env: prod, dropped: "yes" }
  relabel_configs:
    - { source_labels: [app], target_label: application }
    - { source_labels: [__origin], target_label: origin }
    - { source_labels: [job], target_label: job_seen }
    - { source_labels: [app], regex: noisy, action: drop }
    - { action: labeldrop, regex: level }
    - { source_labels: [app], regex: api, target_label: env, replacement: staging }
    - { action: labeldrop, regex: dropped }
"#;

/// The whole Promtail config: its server on `port`, pushing to `url`.
fn config(dir: &Path, port: u16, push_port: u16, url: &str) -> String {
    format!(
        "server: {{ http_listen_address: 127.0.0.1, http_listen_port: {port}, grpc_listen_port: 0 }}\n\
         positions: {{ filename: {}/positions.yaml }}\n\
         clients: [{{ url: '{url}/loki/api/v1/push', batchwait: 100ms }}]\n\
         scrape_configs:{}",
        dir.display(),
        JOB.replace("PUSH_PORT", &push_port.to_string())
    )
}

/// A pushed stream: its labels and lines.
type Stream<'a> = (&'a [(&'a str, &'a str)], &'a [&'a str]);

/// A push of `streams`.
fn body(streams: &[Stream<'_>]) -> String {
    let streams: Vec<serde_json::Value> = streams
        .iter()
        .map(|(labels, lines)| {
            let labels: serde_json::Map<String, serde_json::Value> =
                labels.iter().map(|(k, v)| (k.to_string(), serde_json::Value::from(*v))).collect();
            let values: Vec<serde_json::Value> =
                lines.iter().enumerate().map(|(i, l)| serde_json::json!([format!("17000000000{i:08}"), l])).collect();
            serde_json::json!({ "stream": labels, "values": values })
        })
        .collect();
    serde_json::json!({ "streams": streams }).to_string()
}

/// Posts `body` to a push listener on `port`, retrying while it is not up.
fn push(port: u16, body: &str) {
    let url = format!("http://127.0.0.1:{port}/loki/api/v1/push");
    let up = wait_for(Duration::from_secs(20), || std::net::TcpStream::connect(("127.0.0.1", port)).is_ok());
    assert!(up, "nothing listens on {port}");
    let sent = wait_for(Duration::from_secs(20), || {
        std::panic::catch_unwind(|| post_json(&url, body)).is_ok_and(|r| r.status / 100 == 2)
    });
    assert!(sent, "{url} took no push");
}

/// What a recorder took: each line with its labels.
fn streams(r: &Recorder) -> BTreeMap<String, BTreeMap<String, String>> {
    r.entries().into_iter().map(|e| (e.line, e.labels)).collect()
}

/// tailship on the conversion of `yaml` (written in `dir`), with a spool.
fn tailship(dir: &Path, yaml: &str) -> Agent {
    let file = write_file(dir, "promtail.yaml", yaml);
    let out = Command::new(bin()).args(["convert", "promtail"]).arg(&file).output().unwrap();
    let report = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{report}");
    assert!(!report.contains("relabel_configs"), "the rules are converted, not listed: {report}");
    let toml = String::from_utf8_lossy(&out.stdout).replacen(
        "[positions]",
        &format!("[spool]\npath = \"{}/spool\"\n\n[positions]", dir.display()),
        1,
    );
    Agent::start(&write_file(dir, "tailship.toml", &toml))
}

#[test]
fn relabel_rules_of_a_push_job_label_pushed_streams_as_in_promtail() {
    let Some(bin) = promtail::binary() else {
        eprintln!("no Promtail binary in ../shared/peers: skipping");
        return;
    };
    let (theirs, ours) = (Recorder::start(), Recorder::start());
    let (p_dir, t_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (p_port, p_push, t_push) = (free_port(), free_port(), free_port());
    let p_cfg = write_file(p_dir.path(), "promtail.yaml", &config(p_dir.path(), p_port, p_push, &theirs.base));
    let _promtail = Promtail::try_start(&bin, p_dir.path(), &p_cfg, p_port).unwrap_or_else(|e| panic!("{e}"));
    let agent = tailship(t_dir.path(), &config(t_dir.path(), free_port(), t_push, &ours.base));

    // Promtail stops at a stream its rules drop (answering 204): the rest
    // of that request is lost. So the dropped stream comes last here, and
    // the case after it is sent alone below.
    let kept: &[Stream<'_>] = &[
        (&[("app", "web"), ("level", "info"), ("job", "theirs"), ("__origin", "edge1")], &["web one", "web two"]),
        (&[("app", "api")], &["api one"]),
        (&[("app", "noisy")], &["noisy one"]),
    ];
    for port in [p_push, t_push] {
        push(port, &body(kept));
    }
    let want = 3;
    assert!(
        wait_for(Duration::from_secs(30), || theirs.len() >= want && ours.len() >= want),
        "Promtail took {}, tailship {}",
        theirs.len(),
        ours.len()
    );
    let promtails = streams(&theirs);
    assert_eq!(streams(&ours), promtails, "tailship's streams, then Promtail's");
    let web = &promtails["web one"];
    let expected: BTreeMap<String, String> = [
        ("app", "web"),
        ("application", "web"),
        ("env", "prod"),
        ("job", "pushed"),
        ("job_seen", "pushed"),
        ("origin", "edge1"),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    assert_eq!(web, &expected, "Promtail's labels, as this test reads them");
    assert!(!promtails.contains_key("noisy one"));

    // A stream after a dropped one: Promtail loses it, tailship keeps it
    // (a deliberate difference).
    let after: &[Stream<'_>] = &[(&[("app", "noisy")], &["noisy two"]), (&[("app", "db")], &["db one"])];
    for port in [p_push, t_push] {
        push(port, &body(after));
    }
    assert!(wait_for(Duration::from_secs(30), || ours.len() > want), "tailship keeps the stream after a dropped one");
    assert!(streams(&ours).contains_key("db one"));
    // Promtail answered before the line reached its client: give it the time
    // tailship took, then it still has none.
    push(p_push, &body(&[(&[("app", "marker")], &["marker"])]));
    assert!(wait_for(Duration::from_secs(30), || streams(&theirs).contains_key("marker")));
    assert!(!streams(&theirs).contains_key("db one"), "Promtail drops the rest of the request");
    assert!(agent.terminate(Duration::from_secs(15)).success());
}
