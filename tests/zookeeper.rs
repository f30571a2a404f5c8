//! `serverset` and `nerve` targets (Promtail's `serverset_sd_configs` and
//! `nerve_sd_configs`) through the real binary, against a real ZooKeeper
//! (Debian's `zookeeper` package, started by the test on loopback): members
//! written as znodes are targets with Prometheus' `__meta_serverset_*` and
//! `__meta_nerve_*` labels, tailed once the relabel rules give them a
//! `__path__`; a member that joins is tailed and one that leaves is let go,
//! as soon as ZooKeeper's watch says so.

use crate::agent;
use crate::common;
use crate::discovery;
use crate::scenario;
use scenario::{run_agent, Scenario};

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use agent::{free_port, query_all};
use common::wait_for;
use discovery::{bad_sources_exit_2, labels_of};
use serde_json::json;
use zookeeper_client::{Acls, Client, CreateMode};

const JAR: &str = "/usr/share/java/zookeeper.jar";

/// A standalone ZooKeeper server on 127.0.0.1, stopped on drop.
struct Zk {
    child: Child,
    port: u16,
    _data: tempfile::TempDir,
}

impl Zk {
    /// None (and a note) when ZooKeeper is not installed.
    fn start() -> Option<Zk> {
        if !Path::new(JAR).exists() || Command::new("java").arg("-version").output().is_err() {
            eprintln!("ZooKeeper ({JAR}) or java is not installed; skipping");
            return None;
        }
        let data = tempfile::tempdir().unwrap();
        let port = free_port();
        let child = Command::new("java")
            .args(["-cp", &format!("{JAR}:/usr/share/java/*"), "-Dzookeeper.admin.enableServer=false"])
            .arg("-Dzookeeper.4lw.commands.whitelist=srvr")
            .args(["org.apache.zookeeper.server.ZooKeeperServerMain", &port.to_string()])
            .arg(data.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let zk = Zk { child, port, _data: data };
        let up = wait_for(Duration::from_secs(60), || std::net::TcpStream::connect(("127.0.0.1", port)).is_ok());
        assert!(up, "ZooKeeper did not listen on {port}");
        Some(zk)
    }

    fn addr(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }
}

impl Drop for Zk {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Creates `path` with `data` (and its parents, empty).
async fn put(c: &Client, path: &str, data: &[u8]) {
    let opts = CreateMode::Persistent.with_acls(Acls::anyone_all());
    let mut at = String::new();
    let parts: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    for (i, p) in parts.iter().enumerate() {
        at = format!("{at}/{p}");
        let d: &[u8] = if i + 1 == parts.len() { data } else { b"" };
        match c.create(&at, d, &opts).await {
            Ok(_) | Err(zookeeper_client::Error::NodeExists) => {}
            Err(e) => panic!("create {at}: {e}"),
        }
    }
}

fn serverset(host: &str, port: u16) -> Vec<u8> {
    json!({
        "serviceEndpoint": { "host": host, "port": port },
        "additionalEndpoints": { "admin-http": { "host": host, "port": 9990 } },
        "status": "ALIVE", "shard": 2
    })
    .to_string()
    .into_bytes()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn serverset_and_nerve_members_name_the_files_tailed_and_joins_and_leaves_apply_at_once() {
    let Some(zk) = tokio::task::spawn_blocking(Zk::start).await.unwrap() else { return };
    let c = Client::connect(&zk.addr()).await.unwrap();
    put(&c, "/aurora/prod/web/member_0000000001", &serverset("web-1", 8080)).await;
    put(
        &c,
        "/nerve/services/db/services/db-1",
        &json!({ "host": "db-1", "port": 5432, "name": "db" }).to_string().into_bytes(),
    )
    .await;
    let s = Scenario::plain();
    let (r, d) = (&s.r, s.root());
    s.said_logs(&["web-1", "web-2", "db-1"], "first");
    let text = format!(
        r#"[[sources]]
name = "serverset"
host_label = false
scan_interval = "200ms"
serverset = {{ servers = ["{zk}"], paths = ["/aurora/prod/web"] }}
relabel = [
  {{ source_labels = ["__meta_serverset_endpoint_host"], target_label = "__path__", replacement = "{d}/logs/$1/*.log" }},
  {{ source_labels = ["__meta_serverset_endpoint_host"], target_label = "member" }},
  {{ source_labels = ["__meta_serverset_status"], target_label = "status" }},
  {{ source_labels = ["__meta_serverset_shard"], target_label = "shard" }},
  {{ source_labels = ["__meta_serverset_endpoint_port_admin_http"], target_label = "admin_port" }},
  {{ source_labels = ["__meta_serverset_path"], target_label = "znode" }},
  {{ source_labels = ["__address__"], target_label = "instance" }},
]
[[sources]]
name = "nerve"
host_label = false
scan_interval = "200ms"
nerve = {{ servers = ["{zk}"], paths = ["/nerve/services/db/services"], timeout = "5s" }}
relabel = [
  {{ source_labels = ["__meta_nerve_endpoint_host"], target_label = "__path__", replacement = "{d}/logs/$1/*.log" }},
  {{ source_labels = ["__meta_nerve_endpoint_name"], target_label = "nerve_name" }},
  {{ source_labels = ["__address__"], target_label = "instance" }},
]
"#,
        d = d.display(),
        zk = zk.addr(),
    );
    let cfg = s.toml("zk.toml", &text);
    let agent = run_agent(cfg).await;
    let rr = r;
    let lines = |q: &str| query_all(rr, q, None).into_iter().map(|e| e.line).collect::<Vec<_>>();
    assert!(
        wait_for(Duration::from_secs(30), || lines(r#"{member="web-1"}"#) == ["web-1 first"]),
        "{}",
        agent.stderr_text()
    );
    let l = &labels_of(r, r#"{member="web-1"}"#)[0];
    assert_eq!(
        (l["status"].as_str(), l["shard"].as_str(), l["admin_port"].as_str(), l["instance"].as_str()),
        ("ALIVE", "2", "9990", "web-1:8080")
    );
    assert_eq!(l["znode"], "/aurora/prod/web/member_0000000001");
    assert!(wait_for(Duration::from_secs(30), || labels_of(rr, r#"{nerve_name="db"}"#).len() == 1));
    assert_eq!(labels_of(r, r#"{nerve_name="db"}"#)[0]["instance"], "db-1:5432");

    // A member joins: the watch fires and it is tailed (well before the minute's re-read).
    put(&c, "/aurora/prod/web/member_0000000002", &serverset("web-2", 8080)).await;
    assert!(
        wait_for(Duration::from_secs(20), || lines(r#"{member="web-2"}"#) == ["web-2 first"]),
        "{}",
        agent.stderr_text()
    );
    // One leaves: its file is read to its end and closed.
    c.delete("/aurora/prod/web/member_0000000001", None).await.unwrap();
    let closed = r#"tailship_file_events_total{event="closed",source="serverset"}"#;
    assert!(wait_for(Duration::from_secs(20), || agent.metric(closed) >= 1.0), "{}", agent.stderr_text());
    assert!(agent.terminate(Duration::from_secs(10)).success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_converted_promtail_serverset_job_passes_check_and_ships() {
    let Some(zk) = tokio::task::spawn_blocking(Zk::start).await.unwrap() else { return };
    let c = Client::connect(&zk.addr()).await.unwrap();
    put(&c, "/aurora/prod/web/member_0000000001", &serverset("web-1", 8080)).await;
    let s = Scenario::loki();
    let d = s.root();
    s.log("web-1", "web-1 first\n");
    let jobs = format!(
        r#"  - job_name: aurora
    serverset_sd_configs:
      - servers: ["{zk}"]
        paths: [/aurora/prod/web]
        timeout: 10s
    relabel_configs:
      - source_labels: [__meta_serverset_endpoint_host]
        target_label: __path__
        replacement: {d}/logs/$1/*.log
      - source_labels: [__meta_serverset_endpoint_host]
        target_label: member
"#,
        d = d.display(),
        zk = zk.addr(),
    );
    let agent = s.run_converted(&jobs, "serverset_sd_configs").await;
    s.wait_labels(&agent, r#"{member="web-1"}"#, 1);
    assert!(agent.terminate(Duration::from_secs(10)).success());
}

#[test]
fn bad_zookeeper_settings_exit_2_naming_the_key_and_the_file() {
    bad_sources_exit_2(&[
        (r#"serverset = { paths = ["/a"] }"#, "sources[0].serverset.servers"),
        (r#"serverset = { servers = ["zk1"], paths = ["/a"] }"#, "sources[0].serverset.servers[0]"),
        (r#"nerve = { servers = ["zk1:2181"] }"#, "sources[0].nerve.paths"),
        (r#"nerve = { servers = ["zk1:2181"], paths = ["a/b"] }"#, "sources[0].nerve.paths[0]"),
        (r#"nerve = { servers = ["zk1:2181"], paths = ["/a"], timeout = "0s" }"#, "sources[0].nerve.timeout"),
    ]);
}
