//! `dockerswarm` targets (Promtail's `dockerswarm_sd_configs`) through the
//! real binary, against a small Docker Engine API of a swarm manager
//! written here (a swarm needs an overlay network, which these machines do
//! not give containers): the role's objects are targets with Prometheus'
//! `__meta_dockerswarm_*` labels, tailed once the relabel rules give them a
//! `__path__`; a task that starts later is tailed, one that goes away is
//! read to its end and let go, without a restart.

use crate::agent;
use crate::common;
use crate::discovery;
use crate::mockhttp;
use crate::scenario;
use scenario::{run_agent, Scenario};

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent::{agent_config, query_all, write_file, Agent};
use common::{wait_for, Receiver};
use discovery::{bad_sources_exit_2, labels_of};
use mockhttp::{Mock, Reply};
use serde_json::{json, Value};

fn append(path: &Path, text: &str) {
    std::fs::OpenOptions::new().create(true).append(true).open(path).unwrap().write_all(text.as_bytes()).unwrap();
}

/// The swarm the manager answers from: its tasks (id, service, container).
type Tasks = Arc<Mutex<Vec<(String, String, String)>>>;

fn task(id: &str, service: &str, container: &str) -> Value {
    json!({
        "ID": id, "ServiceID": service, "NodeID": "node1", "Slot": 1, "DesiredState": "running",
        "Spec": { "ContainerSpec": { "Labels": { "com.docker.stack.namespace": "mon" } } },
        "Status": { "State": "running", "ContainerStatus": { "ContainerID": container }, "PortStatus": {} },
        "NetworksAttachments": [ { "Network": { "ID": "ingress1" }, "Addresses": ["10.0.0.5/24"] } ]
    })
}

fn service(id: &str, name: &str, port: Option<u32>) -> Value {
    let ports: Vec<Value> = port
        .map(|p| json!({ "Name": "http", "Protocol": "tcp", "TargetPort": 80, "PublishedPort": p, "PublishMode": "ingress" }))
        .into_iter()
        .collect();
    json!({
        "ID": id,
        "Spec": { "Name": name, "Labels": { "com.docker.stack.namespace": "mon", "io.promtail.enabled": "true" },
                  "TaskTemplate": { "ContainerSpec": { "Image": format!("{name}:1") } },
                  "Mode": { "Replicated": { "Replicas": 1 } } },
        "Endpoint": { "Ports": ports, "VirtualIPs": [ { "NetworkID": "ingress1", "Addr": "10.0.0.2/24" } ] }
    })
}

/// The manager's answers: `/tasks` from `tasks`, the rest fixed.
fn answer(tasks: &Tasks, path: &str) -> Reply {
    match path {
        "/tasks" => {
            let t: Vec<Value> = tasks.lock().unwrap().iter().map(|(i, s, c)| task(i, s, c)).collect();
            Reply::ok(Value::Array(t))
        }
        "/services" => Reply::ok(json!([service("svc-web", "mon_web", Some(8080)), service("svc-db", "mon_db", None)])),
        "/nodes" => Reply::ok(json!([{
            "ID": "node1",
            "Spec": { "Role": "manager", "Availability": "active", "Labels": { "rack": "r1" } },
            "Description": { "Hostname": "swarm-1", "Platform": { "Architecture": "x86_64", "OS": "linux" },
                             "Engine": { "EngineVersion": "27.0.1" } },
            "Status": { "State": "ready", "Addr": "192.168.1.10" },
            "ManagerStatus": { "Leader": true, "Reachability": "reachable", "Addr": "192.168.1.10:2377" }
        }])),
        "/networks" => Reply::ok(json!([{ "Id": "ingress1", "Name": "ingress", "Scope": "swarm", "Ingress": true,
                                          "Labels": { "team": "ops" } }])),
        _ => Reply::text(404, "{\"message\":\"page not found\"}"),
    }
}

/// A container's json-file log under `root` (`<root>/<id>/<id>-json.log`).
fn json_log(root: &Path, container: &str, line: &str) {
    std::fs::create_dir_all(root.join(container)).unwrap();
    let entry = json!({ "log": format!("{line}\n"), "stream": "stdout", "time": "2026-11-25T00:00:00.000000001Z" });
    append(&root.join(container).join(format!("{container}-json.log")), &format!("{entry}\n"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn swarm_tasks_name_the_container_logs_tailed_and_their_changes_apply_without_a_restart() {
    let tasks: Tasks = Arc::new(Mutex::new(vec![("task-a".into(), "svc-web".into(), "c0ffee01".into())]));
    let t = tasks.clone();
    let manager = Mock::start(move |req, _| answer(&t, &req.path)).await;
    let r = Receiver::start(&["--max-query-limit", "1000000"]);
    let dir = tempfile::tempdir().unwrap();
    let containers = dir.path().join("containers");
    json_log(&containers, "c0ffee01", "web first");
    json_log(&containers, "beef0002", "db first");
    let source = format!(
        r#"dockerswarm = {{ host = "{host}", role = "tasks", refresh_interval = "1s", filters = {{ desired-state = ["running"] }} }}
host_label = false
stages = [{{ docker = {{}} }}]
relabel = [
  {{ source_labels = ["__meta_dockerswarm_task_container_id"], target_label = "__path__", replacement = "{root}/$1/*-json.log" }},
  {{ source_labels = ["__meta_dockerswarm_service_name"], target_label = "service" }},
  {{ source_labels = ["__meta_dockerswarm_node_hostname"], target_label = "node" }},
  {{ source_labels = ["__meta_dockerswarm_network_name"], target_label = "network" }},
  {{ source_labels = ["__meta_dockerswarm_task_port_publish_mode"], target_label = "publish" }},
  {{ source_labels = ["__meta_dockerswarm_container_label_com_docker_stack_namespace"], target_label = "namespace" }},
  {{ source_labels = ["__address__"], target_label = "instance" }},
]"#,
        host = manager.url,
        root = containers.display()
    );
    let cfg = agent_config(dir.path(), &r.base, "PLACEHOLDER", "", &source);
    let text = std::fs::read_to_string(&cfg).unwrap().replace("include = [\"PLACEHOLDER\"]\n", "");
    std::fs::write(&cfg, text).unwrap();
    let check = std::process::Command::new(common::bin()).args(["check", "--config"]).arg(&cfg).output().unwrap();
    assert_eq!(check.status.code(), Some(0), "{}", String::from_utf8_lossy(&check.stderr));

    let agent = run_agent(cfg).await;
    let rr = &r;
    let lines = |q: &str| query_all(rr, q, None).into_iter().map(|e| e.line).collect::<Vec<_>>();
    assert!(
        wait_for(Duration::from_secs(20), || lines(r#"{service="mon_web"}"#) == ["web first"]),
        "{}",
        agent.stderr_text()
    );
    let l = &labels_of(&r, r#"{service="mon_web"}"#)[0];
    assert_eq!(
        (l["node"].as_str(), l["network"].as_str(), l["publish"].as_str(), l["namespace"].as_str()),
        ("swarm-1", "ingress", "ingress", "mon")
    );
    assert_eq!(l["instance"], "10.0.0.5:8080", "the task's address and its service's published port");
    assert_eq!(l["stream"], "stdout", "the docker stage parsed the json-file line");
    assert!(!l.keys().any(|k| k.starts_with("__")), "{l:?}");
    // The filters went with the role's list only.
    let reqs = manager.requests();
    assert!(reqs.iter().any(|q| q.path == "/tasks" && q.query.contains("desired-state")), "{reqs:?}");
    assert!(reqs.iter().all(|q| q.path == "/tasks" || !q.query.contains("filters")), "{reqs:?}");

    // A task that starts later is tailed (its service has no port: the address takes `port`, 80).
    tasks.lock().unwrap().push(("task-b".into(), "svc-db".into(), "beef0002".into()));
    assert!(
        wait_for(Duration::from_secs(20), || lines(r#"{service="mon_db"}"#) == ["db first"]),
        "{}",
        agent.stderr_text()
    );
    assert_eq!(labels_of(&r, r#"{service="mon_db"}"#)[0]["instance"], "10.0.0.5:80");
    // One that goes away is read to its end and let go.
    tasks.lock().unwrap().retain(|(id, ..)| id != "task-a");
    let closed = r#"tailship_file_events_total{event="closed",source="file-0"}"#;
    assert!(wait_for(Duration::from_secs(20), || agent.metric(closed) >= 1.0), "{}", agent.stderr_text());
    json_log(&containers, "c0ffee01", "web after it went away");
    json_log(&containers, "beef0002", "db second");
    assert!(
        wait_for(Duration::from_secs(20), || lines(r#"{service="mon_db"}"#) == ["db first", "db second"]),
        "{}",
        agent.stderr_text()
    );
    assert_eq!(lines(r#"{service="mon_web"}"#), ["web first"]);
    assert!(agent.terminate(Duration::from_secs(10)).success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn swarm_services_and_nodes_are_targets_with_prometheus_labels() {
    let tasks: Tasks = Arc::default();
    let t = tasks.clone();
    let manager = Mock::start(move |req, _| answer(&t, &req.path)).await;
    let s = Scenario::plain();
    let r = &s.r;
    let logs = s.logs();
    s.name_logs(&["mon_web", "mon_db", "swarm-1"]);
    let text = format!(
        r#"[[sources]]
name = "services"
host_label = false
scan_interval = "200ms"
dockerswarm = {{ host = "{host}", role = "services" }}
relabel = [
  {{ source_labels = ["__meta_dockerswarm_service_name"], target_label = "__path__", replacement = "{logs}/$1/*.log" }},
  {{ source_labels = ["__meta_dockerswarm_service_name"], target_label = "service" }},
  {{ source_labels = ["__meta_dockerswarm_service_mode"], target_label = "mode" }},
  {{ source_labels = ["__meta_dockerswarm_service_task_container_image"], target_label = "image" }},
  {{ source_labels = ["__meta_dockerswarm_network_label_team"], target_label = "team" }},
  {{ source_labels = ["__address__"], target_label = "instance" }},
]
[[sources]]
name = "nodes"
host_label = false
scan_interval = "200ms"
dockerswarm = {{ host = "{host}", role = "nodes", port = 9100 }}
relabel = [
  {{ source_labels = ["__meta_dockerswarm_node_hostname"], target_label = "__path__", replacement = "{logs}/$1/*.log" }},
  {{ source_labels = ["__meta_dockerswarm_node_hostname"], target_label = "node" }},
  {{ source_labels = ["__meta_dockerswarm_node_manager_leader"], target_label = "leader" }},
  {{ source_labels = ["__meta_dockerswarm_node_label_rack"], target_label = "rack" }},
  {{ source_labels = ["__meta_dockerswarm_node_engine_version"], target_label = "engine" }},
  {{ source_labels = ["__address__"], target_label = "instance" }},
]
"#,
        host = manager.url,
        logs = logs.display()
    );
    let cfg = s.write_toml("swarm.toml", &text);
    let agent = run_agent(cfg).await;
    let rr = &r;
    let found = |q: &str| wait_for(Duration::from_secs(20), || labels_of(rr, q).len() == 1);
    assert!(found(r#"{service="mon_web"}"#), "{}", agent.stderr_text());
    let web = &labels_of(r, r#"{service="mon_web"}"#)[0];
    assert_eq!(
        (web["mode"].as_str(), web["image"].as_str(), web["team"].as_str(), web["instance"].as_str()),
        ("replicated", "mon_web:1", "ops", "10.0.0.2:8080")
    );
    assert!(found(r#"{service="mon_db"}"#), "{}", agent.stderr_text());
    assert_eq!(labels_of(r, r#"{service="mon_db"}"#)[0]["instance"], "10.0.0.2:80", "no port: `port`");
    assert!(found(r#"{node="swarm-1"}"#), "{}", agent.stderr_text());
    let node = &labels_of(r, r#"{node="swarm-1"}"#)[0];
    assert_eq!(
        (node["leader"].as_str(), node["rack"].as_str(), node["engine"].as_str(), node["instance"].as_str()),
        ("true", "r1", "27.0.1", "192.168.1.10:9100")
    );
    assert!(agent.terminate(Duration::from_secs(10)).success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_converted_promtail_dockerswarm_job_passes_check_and_ships() {
    let tasks: Tasks = Arc::new(Mutex::new(vec![("task-a".into(), "svc-web".into(), "c0ffee01".into())]));
    let t = tasks.clone();
    let manager = Mock::start(move |req, _| answer(&t, &req.path)).await;
    let s = Scenario::loki();
    let containers = s.root().join("containers");
    json_log(&containers, "c0ffee01", "web first");
    // The relabelling of a public Promtail config (a swarm's Kubernetes-like labels).
    let jobs = format!(
        r#"  - job_name: dockerswarm
    dockerswarm_sd_configs:
      - host: {host}
        refresh_interval: 5s
        role: tasks
        filters:
          - name: desired-state
            values: ["running"]
    pipeline_stages:
      - docker: {{}}
    relabel_configs:
      - source_labels: [__meta_dockerswarm_node_hostname]
        target_label: __host__
      - source_labels: [__meta_dockerswarm_task_container_id]
        replacement: {root}/$1/*-json.log
        target_label: __path__
      - source_labels: [__meta_dockerswarm_task_state]
        regex: running
        action: keep
      - source_labels: [__meta_dockerswarm_service_label_io_promtail_enabled]
        regex: 'true'
        action: keep
      - action: labelmap
        regex: __meta_dockerswarm_service_label_com_(docker_stack_.+)
      - source_labels: [__meta_dockerswarm_service_name]
        target_label: pod
      - action: replace
        source_labels: [__meta_dockerswarm_service_name, __meta_dockerswarm_task_slot, __meta_dockerswarm_task_id]
        separator: '.'
        target_label: container
      - source_labels: [__meta_dockerswarm_service_name]
        regex: "^.+_(.+)$"
        replacement: "${{1}}"
        target_label: __tmp_service
      - action: replace
        replacement: $1
        separator: /
        source_labels: [__meta_dockerswarm_service_label_com_docker_stack_namespace, __tmp_service]
        target_label: job
"#,
        host = manager.url,
        root = containers.display(),
    );
    let cfg = s.convert(&jobs, "dockerswarm_sd_configs");
    // The rules give `__host__` the task's node: as Promtail, the agent reads
    // the tasks of its own host only, the one `$HOSTNAME` names.
    let agent = tokio::task::spawn_blocking(move || Agent::start_with(&cfg, &[("HOSTNAME", "swarm-1")])).await.unwrap();
    let all = || agent::query_all_at(&s.r, "/loki/api/v1", r#"{job="mon/web"}"#, None);
    s.wait_labels(&agent, r#"{job="mon/web"}"#, 1);
    let e = &all()[0];
    assert_eq!(e.line, "web first");
    let l: BTreeMap<&str, &str> = e.labels.iter().map(|(k, v)| (k.as_str(), v.as_str().unwrap())).collect();
    assert_eq!(
        (l["pod"], l["container"], l["docker_stack_namespace"], l["stream"]),
        ("mon_web", "mon_web.1.task-a", "mon", "stdout")
    );
    assert!(agent.terminate(Duration::from_secs(10)).success());
}

#[test]
fn bad_dockerswarm_settings_exit_2_naming_the_key_and_the_file() {
    bad_sources_exit_2(&[
        (r#"dockerswarm = { host = "unix:///var/run/docker.sock" }"#, "sources[0].dockerswarm.role"),
        (r#"dockerswarm = { role = "containers" }"#, "dockerswarm.role"),
        (r#"dockerswarm = { role = "tasks", host = "ftp://x" }"#, "sources[0].dockerswarm.host"),
        (r#"dockerswarm = { role = "tasks", refresh_interval = "0s" }"#, "sources[0].dockerswarm.refresh_interval"),
        (
            r#"dockerswarm = { role = "tasks" }
include = ["/var/log/*.log"]"#,
            "sources[0].dockerswarm",
        ),
        (
            r#"type = "docker"
dockerswarm = { role = "tasks" }"#,
            "sources[0].dockerswarm",
        ),
        (
            r#"type = "docker"
docker = { role = "tasks" }"#,
            "sources[0].docker.role",
        ),
        (
            r#"dockerswarm = { role = "nodes" }
consul = { server = "127.0.0.1:8500" }"#,
            "sources[0].dockerswarm",
        ),
    ]);
}

#[test]
fn a_promtail_dockerswarm_job_without_a_role_or_host_is_refused_naming_the_key() {
    let dir = tempfile::tempdir().unwrap();
    for (entry, key) in [
        ("host: unix:///var/run/docker.sock", "dockerswarm_sd_configs[0].role"),
        ("host: unix:///var/run/docker.sock\n        role: containers", "dockerswarm_sd_configs[0].role"),
        ("role: tasks", "dockerswarm_sd_configs[0].host"),
    ] {
        let yaml = format!(
            "clients:\n  - url: http://127.0.0.1:1/loki/api/v1/push\nscrape_configs:\n  - job_name: swarm\n    dockerswarm_sd_configs:\n      - {entry}\n"
        );
        let promtail = write_file(dir.path(), "promtail.yaml", &yaml);
        let out =
            std::process::Command::new(common::bin()).args(["convert", "promtail"]).arg(&promtail).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{entry}: {stderr}");
        assert!(stderr.contains(key), "{entry}: {stderr}");
    }
}
