//! The docker source against a real Docker Engine (see `common/dockerd.rs`):
//! containers found before and after the agent starts, stopped, restarted,
//! rotated by `--log-opt max-size`, and the agent killed with SIGKILL; every
//! line is counted.

use crate::agent;
use crate::common;
use crate::discovery;
use crate::dockerd;
use crate::scenario;

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use agent::{query_all, write_file, Agent, AgentToml};
use common::{wait_for, Receiver};
use dockerd::{distinct, labels, lines_of, Dockerd, DOCKER_CLIENT};

const BIG: &[&str] = &["--max-query-limit", "1000000"];

fn config(dir: &Path, url: &str, d: &Dockerd) -> std::path::PathBuf {
    let text = format!(
        r#"[[sources]]
type = "docker"
docker = {{ host = "{host}", filters = {{ label = ["tailship.test"] }} }}
labels = {{ job = "docker" }}
host_label = false
scan_interval = "200ms"
relabel = [
  {{ source_labels = ["__meta_docker_container_name"], regex = "/(.*)", target_label = "container" }},
  {{ source_labels = ["__meta_docker_container_label_com_docker_compose_project"], target_label = "project" }},
  {{ source_labels = ["__meta_docker_container_label_com_docker_compose_service"], target_label = "service" }},
  {{ source_labels = ["__meta_docker_container_network_mode"], target_label = "network" }},
]
"#,
        host = d.host(),
    );
    AgentToml::new(dir, "").client(url, DOCKER_CLIENT).then(&text).write("tailship.toml")
}

/// A script writing `n` numbered lines `TAG run R line I` (R counts the
/// container's starts), `pause` seconds apart, then sleeping.
fn script(tag: &str, n: u32, pause: &str, pad: usize) -> String {
    dockerd::numbered_script(tag, n, pause, &format!(" {}", "x".repeat(pad)))
}

#[test]
fn containers_started_stopped_restarted_and_rotated_ship_every_line_with_their_labels() {
    let Some(d) = Dockerd::start() else { return };
    let r = Receiver::start(BIG);
    let dir = tempfile::tempdir().unwrap();
    // Found by the first list: a compose-style container that already wrote its lines.
    d.run(
        &[
            "--name",
            "web",
            "-l",
            "tailship.test=1",
            "-l",
            "com.docker.compose.project=shop",
            "-l",
            "com.docker.compose.service=web",
        ],
        &script("web", 100, "0", 0),
    );
    // Not selected by the filters: never read.
    d.run(&["--name", "other"], &script("other", 5, "0", 0));
    let agent = Agent::start(&config(dir.path(), &r.base, &d));
    let done = |c: &str, p: &str, n: usize| distinct(&r, c, p).len() >= n;
    assert!(wait_for(Duration::from_secs(30), || done("web", "web run 1 line", 100)), "{}", agent.stderr_text());
    // `/status` and `top` name the file by its container, not its container-ID path alone.
    let addr = agent.metrics_addr.clone().unwrap();
    let status = common::get(&format!("http://{addr}/status.json")).json();
    let files = status["sources"][0]["files"].as_array().cloned().unwrap_or_default();
    assert!(
        files
            .iter()
            .any(|f| f["target"] == "container web" && f["path"].as_str().is_some_and(|p| p.ends_with("-json.log"))),
        "{status}"
    );
    let top =
        std::process::Command::new(common::bin()).args(["top", "--url", &format!("http://{addr}")]).output().unwrap();
    assert!(
        String::from_utf8_lossy(&top.stdout).contains("container web "),
        "{}",
        String::from_utf8_lossy(&top.stdout)
    );
    // Stopped, then started again: its log file goes on.
    d.docker(&["stop", "-t", "1", "web"]);
    d.docker(&["start", "web"]);
    assert!(wait_for(Duration::from_secs(30), || done("web", "web run 2 line", 100)), "{}", agent.stderr_text());
    // Started after the agent, rotated by Docker every 2 KiB (keeping 5 files).
    d.run(
        &["--name", "rot", "-l", "tailship.test=1", "--log-opt", "max-size=2k", "--log-opt", "max-file=5"],
        &script("rot", 400, "0.01", 60),
    );
    assert!(wait_for(Duration::from_secs(60), || done("rot", "rot run 1 line", 400)), "{}", agent.stderr_text());
    assert!(wait_for(Duration::from_secs(20), || done("rot", "rot run 1 done", 1)), "{}", agent.stderr_text());
    let rotated = std::fs::read_dir(d.log_dir("rot"))
        .unwrap()
        .filter_map(Result::ok)
        .any(|e| e.file_name().to_string_lossy().ends_with("-json.log.1"));
    assert!(rotated, "Docker rotated the log");
    assert!(
        agent.metric(r#"tailship_file_events_total{event="rotated",source="docker-0"}"#) >= 1.0,
        "{}",
        agent.metrics()
    );

    for (run, want) in [(1, 100), (2, 100)] {
        let got = distinct(&r, "web", &format!("web run {run} line"));
        assert_eq!(got.len(), want, "web run {run}");
    }
    let web = lines_of(&r, "web");
    let first = web.iter().find(|e| e.line.starts_with("web run 1 line 0")).unwrap();
    let want: BTreeMap<String, String> = [
        ("container", "web"),
        ("job", "docker"),
        ("network", "none"),
        ("project", "shop"),
        ("service", "web"),
        ("stream", "stdout"),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    assert_eq!(labels(first), want);
    let err = lines_of(&r, "rot").into_iter().find(|e| e.line == "rot run 1 done").unwrap();
    assert_eq!(labels(&err).get("stream").map(String::as_str), Some("stderr"));
    assert!(query_all(&r, r#"{container="other"}"#, None).is_empty(), "filtered out");
    // Every line once: no duplicates without a restart of the agent.
    assert_eq!(web.len(), 200 + 2, "{:?}", web.iter().map(|e| &e.line).collect::<Vec<_>>());
    assert!(agent.terminate(Duration::from_secs(10)).success());
}

#[test]
fn a_sigkill_of_the_agent_loses_no_container_line() {
    let Some(d) = Dockerd::start() else { return };
    let r = Receiver::start(BIG);
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path(), &r.base, &d);
    d.run(
        &["--name", "busy", "-l", "tailship.test=1", "--log-opt", "max-size=4k", "--log-opt", "max-file=20"],
        &script("busy", 600, "0.01", 40),
    );
    let agent = Agent::start(&cfg);
    assert!(
        wait_for(Duration::from_secs(30), || distinct(&r, "busy", "busy run 1 line").len() >= 100),
        "{}",
        agent.stderr_text()
    );
    agent.kill9();
    let agent = Agent::start(&cfg);
    assert!(
        wait_for(Duration::from_secs(60), || distinct(&r, "busy", "busy run 1 line").len() >= 600),
        "{} of 600\n{}",
        distinct(&r, "busy", "busy run 1 line").len(),
        agent.stderr_text()
    );
    let got = distinct(&r, "busy", "busy run 1 line");
    for i in 0..600 {
        assert!(got.iter().any(|l| l.starts_with(&format!("busy run 1 line {i} "))), "line {i} lost");
    }
    assert!(agent.terminate(Duration::from_secs(10)).success());
}

#[test]
fn a_converted_promtail_docker_sd_job_ships_with_the_labels_its_rules_give() {
    let Some(d) = Dockerd::start() else { return };
    let r = scenario::loki_receiver();
    let dir = tempfile::tempdir().unwrap();
    // Grafana's documented docker_sd_configs example, on the private Engine.
    let yaml = scenario::promtail_yaml_at(
        dir.path(),
        &r.base,
        "positions.yaml",
        &format!(
            r#"  - job_name: flog_scrape
    docker_sd_configs:
      - host: {host}
        refresh_interval: 5s
        filters:
          - name: label
            values: ["logging=promtail"]
    relabel_configs:
      - source_labels: ['__meta_docker_container_name']
        regex: '/(.*)'
        target_label: 'container'
      - source_labels: ['__meta_docker_container_log_stream']
        target_label: 'logstream'
      - source_labels: ['__meta_docker_container_label_logging_jobname']
        target_label: 'job'
"#,
            host = d.host()
        ),
    );
    let (toml, stderr) = discovery::convert_promtail(dir.path(), &yaml);
    // Nothing left out: the log stream rule labels each line by its stream.
    assert!(!stderr.contains("relabel_configs"), "{stderr}");
    let cfg = write_file(dir.path(), "tailship.toml", &toml);
    d.run(
        &["--name", "flog", "-l", "logging=promtail", "-l", "logging_jobname=containerlogs"],
        &script("flog", 20, "0", 0),
    );
    d.run(&["--name", "quiet"], &script("quiet", 5, "0", 0));
    let agent = Agent::start(&cfg);
    let all = || agent::query_all_at(&r, "/loki/api/v1", r#"{job="containerlogs"}"#, None);
    // 20 lines on stdout, then `flog run 1 done` on stderr.
    assert!(wait_for(Duration::from_secs(30), || all().len() >= 21), "{}", agent.stderr_text());
    let entries = all();
    assert_eq!(entries.iter().filter(|e| e.line.starts_with("flog run 1 line")).count(), 20);
    assert_eq!(entries.len(), 21);
    let want = |stream: &str| -> BTreeMap<String, String> {
        [("container", "flog"), ("job", "containerlogs"), ("logstream", stream)]
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    };
    for e in &entries {
        let stream = if e.line.contains("done") { "stderr" } else { "stdout" };
        assert_eq!(labels(e), want(stream), "{}", e.line);
    }
    assert!(agent::query_all_at(&r, "/loki/api/v1", r#"{container="quiet"}"#, None).is_empty());
    assert!(agent.terminate(Duration::from_secs(10)).success());
}
