//! `marathon` targets (Promtail's `marathon_sd_configs`) through the real
//! binary, against a small Marathon API written here: every task port of an
//! app is a target with Prometheus' `__meta_marathon_*` labels, tailed once
//! the relabel rules give it a `__path__`; an app that starts later is
//! tailed, one that goes away is let go, without a restart; a server that
//! does not answer is passed over for the next.

use crate::agent;
use crate::common;
use crate::discovery;
use crate::mockhttp;
use crate::scenario;
use scenario::{run_agent, Scenario};

use std::io::Write;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent::{agent_config, query_all, write_file};
use common::{wait_for, Receiver};
use discovery::{bad_sources_exit_2, labels_of};
use mockhttp::{Mock, Reply};
use serde_json::{json, Value};

fn append(path: &Path, text: &str) {
    std::fs::OpenOptions::new().create(true).append(true).open(path).unwrap().write_all(text.as_bytes()).unwrap();
}

fn app(id: &str) -> Value {
    json!({
        "id": id,
        "labels": { "team.name": "ops" },
        "container": { "docker": { "image": format!("{}:1", id.trim_start_matches('/')),
                                   "portMappings": [ { "containerPort": 80, "hostPort": 0, "labels": { "svc": "http" } } ] } },
        "tasks": [ { "id": format!("{}.task1", id.trim_start_matches('/')), "host": "agent-1", "ports": [31001] } ]
    })
}

type Apps = Arc<Mutex<Vec<String>>>;

fn marathon(apps: &Apps, path: &str) -> Reply {
    if path != "/v2/apps/" {
        return Reply::text(404, "not found");
    }
    Reply::ok(json!({ "apps": apps.lock().unwrap().iter().map(|a| app(a)).collect::<Vec<_>>() }))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn marathon_apps_name_the_files_tailed_and_their_changes_apply_without_a_restart() {
    let apps: Apps = Arc::new(Mutex::new(vec!["/web".into()]));
    let a = apps.clone();
    let server = Mock::start(move |req, _| marathon(&a, &req.path)).await;
    let down = Mock::start(|_, _| Reply::text(503, "leader election")).await;
    let r = Receiver::start(&["--max-query-limit", "1000000"]);
    let dir = tempfile::tempdir().unwrap();
    let logs = dir.path().join("logs");
    for s in ["web", "db"] {
        std::fs::create_dir_all(logs.join(s)).unwrap();
        append(&logs.join(s).join("app.log"), &format!("{s} first\n"));
    }
    let token = write_file(dir.path(), "token", "dcos-t0ken\n");
    let source = format!(
        r#"marathon = {{ servers = ["{down}", "{up}"], auth_token_file = "{token}", refresh_interval = "1s" }}
host_label = false
relabel = [
  {{ source_labels = ["__meta_marathon_app"], target_label = "__path__", replacement = "{logs}$1/*.log" }},
  {{ source_labels = ["__meta_marathon_app"], target_label = "app" }},
  {{ source_labels = ["__meta_marathon_image"], target_label = "image" }},
  {{ source_labels = ["__meta_marathon_task"], target_label = "task" }},
  {{ source_labels = ["__meta_marathon_app_label_team_name"], target_label = "team" }},
  {{ source_labels = ["__meta_marathon_port_mapping_label_svc"], target_label = "svc" }},
  {{ source_labels = ["__address__"], target_label = "instance" }},
]"#,
        down = down.url,
        up = server.url,
        token = token.display(),
        logs = logs.display()
    );
    let cfg = agent_config(dir.path(), &r.base, "PLACEHOLDER", "", &source);
    let text = std::fs::read_to_string(&cfg).unwrap().replace("include = [\"PLACEHOLDER\"]\n", "");
    std::fs::write(&cfg, text).unwrap();
    let check = std::process::Command::new(common::bin()).args(["check", "--config"]).arg(&cfg).output().unwrap();
    assert_eq!(check.status.code(), Some(0), "{}", String::from_utf8_lossy(&check.stderr));
    assert!(!String::from_utf8_lossy(&check.stdout).contains("dcos-t0ken"));

    let agent = run_agent(cfg).await;
    let rr = &r;
    let lines = |q: &str| query_all(rr, q, None).into_iter().map(|e| e.line).collect::<Vec<_>>();
    assert!(wait_for(Duration::from_secs(20), || lines(r#"{app="/web"}"#) == ["web first"]), "{}", agent.stderr_text());
    let l = &labels_of(&r, r#"{app="/web"}"#)[0];
    assert_eq!(
        (l["image"].as_str(), l["task"].as_str(), l["team"].as_str(), l["svc"].as_str(), l["instance"].as_str()),
        ("web:1", "web.task1", "ops", "http", "agent-1:31001")
    );
    let reqs = server.requests();
    assert!(reqs.iter().all(|q| q.header("authorization") == Some("token=dcos-t0ken")), "{reqs:?}");
    assert!(reqs.iter().all(|q| q.query == "embed=apps.tasks"), "{reqs:?}");
    assert!(!down.requests().is_empty(), "the first server was asked first");

    apps.lock().unwrap().push("/db".into());
    assert!(wait_for(Duration::from_secs(20), || lines(r#"{app="/db"}"#) == ["db first"]), "{}", agent.stderr_text());
    apps.lock().unwrap().retain(|a| a != "/web");
    let closed = r#"tailship_file_events_total{event="closed",source="file-0"}"#;
    assert!(wait_for(Duration::from_secs(20), || agent.metric(closed) >= 1.0), "{}", agent.stderr_text());
    append(&logs.join("web/app.log"), "web after it went away\n");
    append(&logs.join("db/app.log"), "db second\n");
    assert!(
        wait_for(Duration::from_secs(20), || lines(r#"{app="/db"}"#) == ["db first", "db second"]),
        "{}",
        agent.stderr_text()
    );
    assert_eq!(lines(r#"{app="/web"}"#), ["web first"]);
    assert!(agent.terminate(Duration::from_secs(10)).success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_converted_promtail_marathon_job_passes_check_and_ships() {
    let apps: Apps = Arc::new(Mutex::new(vec!["/web".into()]));
    let a = apps.clone();
    let server = Mock::start(move |req, _| marathon(&a, &req.path)).await;
    let s = Scenario::loki();
    let logs = s.logs();
    s.log("web", "web first\n");
    let jobs = format!(
        r#"  - job_name: marathon
    marathon_sd_configs:
      - servers: [{server}]
        refresh_interval: 5s
        basic_auth:
          username: prom
          password: s3cret
    relabel_configs:
      - source_labels: [__meta_marathon_app]
        target_label: __path__
        replacement: {logs}$1/*.log
      - source_labels: [__meta_marathon_app]
        regex: /(.*)
        target_label: app
"#,
        server = server.url,
        logs = logs.display(),
    );
    let agent = s.run_converted(&jobs, "marathon_sd_configs").await;
    s.wait_labels(&agent, r#"{app="web"}"#, 1);
    let reqs = server.requests();
    assert!(reqs.iter().all(|q| q.header("authorization") == Some("Basic cHJvbTpzM2NyZXQ=")), "{reqs:?}");
    assert!(agent.terminate(Duration::from_secs(10)).success());
}

#[test]
fn bad_marathon_settings_exit_2_naming_the_key_and_the_file() {
    bad_sources_exit_2(&[
        (r#"marathon = { refresh_interval = "5s" }"#, "sources[0].marathon.servers"),
        (r#"marathon = { servers = ["marathon:8080"] }"#, "sources[0].marathon.servers[0]"),
        (
            r#"marathon = { servers = ["http://m:8080"], refresh_interval = "0s" }"#,
            "sources[0].marathon.refresh_interval",
        ),
        (r#"marathon = { servers = ["http://m:8080"], auth_token = "a", bearer_token = "b" }"#, "sources[0].marathon."),
        (
            r#"marathon = { servers = ["http://m:8080"], auth_token_file = "/nonexistent/t" }"#,
            "sources[0].marathon.auth_token_file",
        ),
        (r#"marathon = { servers = ["http://m:8080"], no_proxy = "x" }"#, "sources[0].marathon.no_proxy"),
        (r#"marathon = { servers = ["http://m:8080"], sever = "x" }"#, "sources[0].marathon.sever"),
        (
            r#"type = "docker"
marathon = { servers = ["http://m:8080"] }"#,
            "sources[0].marathon",
        ),
        (
            r#"marathon = { servers = ["http://m:8080"] }
include = ["/var/log/*.log"]"#,
            "sources[0].marathon",
        ),
    ]);
}
