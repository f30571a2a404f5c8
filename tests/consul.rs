//! `consul` targets (Promtail's `consul_sd_configs`) through the real binary,
//! against a small Consul HTTP API written here (Consul cannot run in the
//! tests): the instances of the selected services are targets with
//! Prometheus' `__meta_consul_*` labels, tailed once the relabel rules give
//! them a `__path__`; a service registered later is tailed, one that goes
//! away is read to its end and let go, without a restart.

use crate::agent;
use crate::common;
use crate::mockhttp;
use crate::scenario;
use scenario::{run_agent, Scenario};

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent::{agent_config, free_port, query_all, write_file};
use common::{wait_for, Receiver};
use mockhttp::{Mock, Reply};
use serde_json::json;

fn append(path: &Path, text: &str) {
    std::fs::OpenOptions::new().create(true).append(true).open(path).unwrap().write_all(text.as_bytes()).unwrap();
}

fn lines_of(r: &Receiver, query: &str) -> Vec<String> {
    query_all(r, query, None).into_iter().map(|e| e.line).collect()
}

/// The catalog the server answers from: services (name -> tags, node), and its index.
#[derive(Default)]
struct Catalog {
    index: u64,
    services: BTreeMap<String, (Vec<String>, String)>,
}

type Shared = Arc<Mutex<Catalog>>;

fn register(c: &Shared, name: &str, tags: &[&str], node: &str) {
    let mut c = c.lock().unwrap();
    c.services.insert(name.into(), (tags.iter().map(|t| t.to_string()).collect(), node.into()));
    c.index += 1;
}

fn deregister(c: &Shared, name: &str) {
    let mut c = c.lock().unwrap();
    c.services.remove(name);
    c.index += 1;
}

fn answer(c: &Shared, path: &str) -> Reply {
    let c = c.lock().unwrap();
    let index = c.index.to_string();
    if path == "/v1/agent/self" {
        return Reply::ok(json!({
            "Config": { "Datacenter": "dc1", "NodeName": "agent-node" },
            "Member": { "Addr": "10.0.0.9" },
            "Meta": { "zone": "z1" }
        }));
    }
    if path == "/v1/agent/services" {
        let services: serde_json::Map<String, serde_json::Value> = c
            .services
            .iter()
            .map(|(k, (tags, _))| {
                (format!("{k}-1"), json!({ "ID": format!("{k}-1"), "Service": k, "Tags": tags, "Port": 9000 }))
            })
            .collect();
        return Reply::ok(serde_json::Value::Object(services));
    }
    if let Some(name) = path.strip_prefix("/v1/agent/health/service/name/") {
        let Some((tags, _)) = c.services.get(name) else { return Reply::empty(404) };
        let body = json!([{ "AggregatedStatus": "warning",
            "Service": { "ID": format!("{name}-1"), "Service": name, "Tags": tags, "Port": 9000 } }]);
        // The agent answers a service's health by the status: 429 is warning.
        return Reply::json(429, body);
    }
    if path == "/v1/catalog/services" {
        let services: serde_json::Map<String, serde_json::Value> =
            c.services.iter().map(|(k, (tags, _))| (k.clone(), json!(tags))).collect();
        return Reply::ok(serde_json::Value::Object(services)).with_header("X-Consul-Index", &index);
    }
    if let Some(name) = path.strip_prefix("/v1/health/service/") {
        let entries: Vec<_> = c
            .services
            .get(name)
            .map(|(tags, node)| {
                vec![json!({
                    "Node": { "Node": node, "Address": "10.0.0.7", "Meta": { "rack": "r1" } },
                    "Service": { "ID": format!("{name}-1"), "Service": name, "Tags": tags, "Address": "", "Port": 8080 },
                    "Checks": [{ "CheckID": "serfHealth", "Status": "passing" }]
                })]
            })
            .unwrap_or_default();
        return Reply::ok(json!(entries)).with_header("X-Consul-Index", &index);
    }
    Reply::empty(404)
}

/// A catalog of `(service, tags, node)` and a Consul API serving it.
async fn consul_serving(services: &[(&str, &[&str], &str)]) -> (Shared, Mock) {
    let catalog: Shared = Arc::default();
    for (service, tags, node) in services {
        register(&catalog, service, tags, node);
    }
    let c = catalog.clone();
    (catalog, Mock::start(move |req, _| answer(&c, &req.path)).await)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn consul_services_name_the_files_tailed_and_their_changes_apply_without_a_restart() {
    let (catalog, consul) = consul_serving(&[("web", &["logs", "prod"], "node-1"), ("db", &["prod"], "node-2")]).await;
    let server = consul.url.trim_start_matches("http://").to_string();

    let r = Receiver::start(&["--max-query-limit", "1000000"]);
    let dir = tempfile::tempdir().unwrap();
    let logs = dir.path().join("logs");
    for s in ["web", "db", "api"] {
        std::fs::create_dir_all(logs.join(s)).unwrap();
        append(&logs.join(s).join("app.log"), &format!("{s} first\n"));
    }
    let source = format!(
        r#"consul = {{ server = "{server}", token = "s3cret-token", tags = ["logs"], refresh_interval = "2s" }}
host_label = false
relabel = [
  {{ source_labels = ["__meta_consul_service"], target_label = "__path__", replacement = "{logs}/$1/*.log" }},
  {{ source_labels = ["__meta_consul_service"], target_label = "service" }},
  {{ source_labels = ["__meta_consul_node"], target_label = "node" }},
  {{ source_labels = ["__meta_consul_dc"], target_label = "dc" }},
  {{ source_labels = ["__meta_consul_metadata_rack"], target_label = "rack" }},
  {{ source_labels = ["__meta_consul_tags"], target_label = "tags" }},
  {{ source_labels = ["__address__"], target_label = "instance" }},
]"#,
        logs = logs.display()
    );
    let cfg = agent_config(dir.path(), &r.base, "PLACEHOLDER", "", &source);
    let text = std::fs::read_to_string(&cfg).unwrap().replace("include = [\"PLACEHOLDER\"]\n", "");
    std::fs::write(&cfg, text).unwrap();
    let check = std::process::Command::new(common::bin()).args(["check", "--config"]).arg(&cfg).output().unwrap();
    assert_eq!(check.status.code(), Some(0), "{}", String::from_utf8_lossy(&check.stderr));
    assert!(!String::from_utf8_lossy(&check.stdout).contains("s3cret-token"), "the token is a secret");

    let agent = run_agent(cfg).await;
    let rr = &r;
    let until =
        |q: &'static str, want: Vec<&'static str>| wait_for(Duration::from_secs(20), || lines_of(rr, q) == want);
    assert!(until(r#"{service="web"}"#, vec!["web first"]), "{}", agent.stderr_text());
    let e = &query_all(&r, r#"{service="web"}"#, None)[0];
    let labels: BTreeMap<&str, &str> = e.labels.iter().map(|(k, v)| (k.as_str(), v.as_str().unwrap())).collect();
    assert_eq!(labels["node"], "node-1");
    assert_eq!(labels["dc"], "dc1");
    assert_eq!(labels["rack"], "r1");
    assert_eq!(labels["tags"], ",logs,prod,");
    assert_eq!(labels["instance"], "10.0.0.7:8080");
    assert!(labels["filename"].ends_with("web/app.log"), "{labels:?}");
    assert!(!labels.keys().any(|k| k.starts_with("__")), "{labels:?}");
    // Without the tag: no target.
    assert!(lines_of(&r, r#"{service="db"}"#).is_empty());
    // Every request carried the token; the catalog was asked with its index.
    let reqs = consul.requests();
    assert!(reqs.iter().all(|q| q.header("x-consul-token") == Some("s3cret-token")), "{reqs:?}");
    assert!(reqs.iter().any(|q| q.path == "/v1/catalog/services" && q.query.contains("index=2")), "{reqs:?}");
    assert!(reqs.iter().any(|q| q.query.contains("dc=dc1") && q.query.contains("stale")), "{reqs:?}");

    // A service registered later is tailed.
    register(&catalog, "api", &["logs"], "node-3");
    assert!(until(r#"{service="api"}"#, vec!["api first"]), "{}", agent.stderr_text());
    // One that goes away is read to its end and let go.
    deregister(&catalog, "web");
    let untargeted = r#"tailship_file_events_total{event="untargeted",source="file-0"}"#;
    assert!(wait_for(Duration::from_secs(20), || agent.metric(untargeted) >= 1.0), "{}", agent.stderr_text());
    let closed = r#"tailship_file_events_total{event="closed",source="file-0"}"#;
    assert!(wait_for(Duration::from_secs(20), || agent.metric(closed) >= 1.0), "{}", agent.stderr_text());
    append(&logs.join("web/app.log"), "web after it went away\n");
    append(&logs.join("api/app.log"), "api second\n");
    assert!(until(r#"{service="api"}"#, vec!["api first", "api second"]), "{}", agent.stderr_text());
    assert_eq!(lines_of(&r, r#"{service="web"}"#), ["web first"]);
    assert!(agent.terminate(Duration::from_secs(10)).success());
}

#[test]
fn bad_consul_settings_exit_2_naming_the_key_and_the_file() {
    let dir = tempfile::tempdir().unwrap();
    for (consul, key) in [
        (r#"server = "localhost:8500", scheme = "ftp""#, "sources[0].consul.scheme"),
        (r#"refresh_interval = "0s""#, "sources[0].consul.refresh_interval"),
        (r#"token_file = "/nonexistent/token""#, "sources[0].consul.token_file"),
        (r#"tag_separator = 1"#, "consul.tag_separator"),
    ] {
        let text = format!(
            "[client]\nurl = \"http://127.0.0.1:1\"\n[server]\nlisten = \"127.0.0.1:{}\"\n[[sources]]\nconsul = {{ {consul} }}\n",
            free_port()
        );
        let cfg = write_file(dir.path(), "bad.toml", &text);
        let out = std::process::Command::new(common::bin()).args(["check", "--config"]).arg(&cfg).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{consul}: {stderr}");
        assert!(stderr.contains(key) && stderr.contains("bad.toml"), "{consul}: {stderr}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_converted_promtail_consul_sd_job_passes_check_and_ships() {
    let (_, consul) = consul_serving(&[("web", &["logs"], "node-1")]).await;
    let s = Scenario::loki();
    let logs = s.logs();
    s.log("web", "web first\n");
    let jobs = format!(
        r#"  - job_name: consul-services
    consul_sd_configs:
      - server: {server}
        datacenter: dc1
        token: t0ken
        tags: [logs]
        tag_separator: ";"
        allow_stale: false
        refresh_interval: 2s
        filter: 'ServiceTags contains "logs"'
    relabel_configs:
      - source_labels: [__meta_consul_service]
        target_label: __path__
        replacement: {logs}/$1/*.log
      - source_labels: [__meta_consul_service]
        target_label: service
      - source_labels: [__meta_consul_tags]
        target_label: tags
"#,
        server = consul.url.trim_start_matches("http://"),
        logs = logs.display(),
    );
    let agent = s.run_converted(&jobs, "consul_sd_configs").await;
    let labels = s.wait_labels(&agent, r#"{service="web"}"#, 1);
    assert_eq!(labels[0]["tags"], ";logs;");
    let reqs = consul.requests();
    assert!(reqs.iter().all(|q| q.header("x-consul-token") == Some("t0ken") && !q.query.contains("stale")));
    assert!(reqs.iter().all(|q| q.path != "/v1/agent/self"), "the datacenter is given");
    assert!(
        reqs.iter().any(|q| q.path == "/v1/catalog/services" && q.query.contains("filter=ServiceTags")),
        "{reqs:?}"
    );
    assert!(agent.terminate(Duration::from_secs(10)).success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_converted_promtail_consulagent_sd_job_asks_the_local_agent() {
    let (_, consul) = consul_serving(&[("web", &["logs"], "node-1"), ("db", &[], "node-1")]).await;
    let s = Scenario::loki();
    let logs = s.logs();
    s.log("web", "web first\n");
    let jobs = format!(
        r#"  - job_name: agent-services
    consulagent_sd_configs:
      - server: {server}
        tags: [logs]
        refresh_interval: 1s
    relabel_configs:
      - source_labels: [__meta_consulagent_service]
        target_label: __path__
        replacement: {logs}/$1/*.log
      - source_labels: [__meta_consulagent_service]
        target_label: service
      - source_labels: [__meta_consulagent_node]
        target_label: node
      - source_labels: [__meta_consulagent_health]
        target_label: health
      - source_labels: [__meta_consulagent_metadata_zone]
        target_label: zone
      - source_labels: [__address__]
        target_label: instance
"#,
        server = consul.url.trim_start_matches("http://"),
        logs = logs.display(),
    );
    let agent = s.run_converted(&jobs, "consulagent_sd_configs").await;
    let labels = &s.wait_labels(&agent, r#"{service="web"}"#, 1)[0];
    assert_eq!(
        (labels["node"].as_str(), labels["health"].as_str(), labels["zone"].as_str(), labels["instance"].as_str()),
        ("agent-node", "warning", "z1", "10.0.0.9:9000")
    );
    assert!(consul.requests().iter().all(|q| !q.path.starts_with("/v1/catalog")), "the agent API only");
    assert!(agent.terminate(Duration::from_secs(10)).success());
}
