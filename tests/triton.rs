//! `triton` targets (Promtail's `triton_sd_configs`) through the real
//! binary, against a Triton discovery endpoint written here that asks for
//! a client certificate, as Triton's does: containers (or compute nodes)
//! are targets with Prometheus' `__meta_triton_*` labels, tailed once the
//! relabel rules give them a `__path__`.

use crate::agent;
use crate::common;
use crate::discovery;
use crate::mockhttp;
use crate::scenario;
use scenario::{run_agent, Scenario};

use std::time::Duration;

use agent::write_file;
use common::wait_for;
use discovery::{bad_sources_exit_2, labels_of};
use mockhttp::{Mock, Pki, Reply};
use serde_json::json;

fn endpoint(path: &str) -> Reply {
    match path {
        "/v1/discover" => Reply::ok(json!({ "containers": [
            { "groups": ["web", "prod"], "server_uuid": "srv-1", "vm_alias": "web-1", "vm_brand": "lx",
              "vm_image_uuid": "img-1", "vm_uuid": "vm-web-1" } ] })),
        "/v1/gz/discover" => Reply::ok(json!({ "cns": [ { "server_uuid": "srv-1", "server_hostname": "headnode" } ] })),
        _ => Reply::text(404, "not found"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn triton_containers_and_compute_nodes_over_mutual_tls_name_the_files_tailed() {
    let pki = Pki::new(&["triton.test"]);
    let server = Mock::start_tls(pki.mutual.clone(), false, |req, _| endpoint(&req.path)).await;
    let port: u16 = server.url.rsplit(':').next().unwrap().parse().unwrap();
    let s = Scenario::plain();
    let (r, d) = (&s.r, s.root());
    for (f, text) in [("ca.pem", &pki.ca), ("client.pem", &pki.client_cert), ("client-key.pem", &pki.client_key)] {
        write_file(d, f, text);
    }
    let logs = s.logs();
    s.name_logs(&["web-1", "headnode"]);
    let tls = format!(
        r#"tls = {{ ca_file = "{d}/ca.pem", cert_file = "{d}/client.pem", key_file = "{d}/client-key.pem" }}"#,
        d = d.display()
    );
    let text = format!(
        r#"[[sources]]
name = "containers"
host_label = false
scan_interval = "200ms"
triton = {{ account = "ops", dns_suffix = "triton.example", endpoint = "127.0.0.1", port = {port}, groups = ["web", "prod"], {tls} }}
relabel = [
  {{ source_labels = ["__meta_triton_machine_alias"], target_label = "__path__", replacement = "{logs}/$1/*.log" }},
  {{ source_labels = ["__meta_triton_machine_alias"], target_label = "alias" }},
  {{ source_labels = ["__meta_triton_machine_brand"], target_label = "brand" }},
  {{ source_labels = ["__meta_triton_groups"], target_label = "groups" }},
  {{ source_labels = ["__meta_triton_server_id"], target_label = "server" }},
  {{ source_labels = ["__address__"], target_label = "instance" }},
]
[[sources]]
name = "cns"
host_label = false
scan_interval = "200ms"
triton = {{ account = "ops", role = "cn", dns_suffix = "triton.example", endpoint = "localhost", port = {port}, tls = {{ ca_file = "{d}/ca.pem", cert_file = "{d}/client.pem", key_file = "{d}/client-key.pem", server_name = "triton.test" }} }}
relabel = [
  {{ source_labels = ["__meta_triton_machine_alias"], target_label = "__path__", replacement = "{logs}/$1/*.log" }},
  {{ source_labels = ["__meta_triton_machine_alias"], target_label = "alias" }},
  {{ source_labels = ["__address__"], target_label = "instance" }},
]
"#,
        d = d.display(),
        logs = logs.display(),
    );
    let cfg = s.toml("triton.toml", &text);
    let agent = run_agent(cfg).await;
    let rr = &r;
    let found = |q: &str| wait_for(Duration::from_secs(20), || labels_of(rr, q).len() == 1);
    assert!(found(r#"{alias="web-1"}"#), "{}", agent.stderr_text());
    let l = &labels_of(r, r#"{alias="web-1"}"#)[0];
    assert_eq!(
        (l["brand"].as_str(), l["groups"].as_str(), l["server"].as_str(), l["instance"].as_str()),
        ("lx", ",web,prod,", "srv-1", &*format!("vm-web-1.triton.example:{port}"))
    );
    assert!(found(r#"{alias="headnode"}"#), "{}", agent.stderr_text());
    let l = &labels_of(r, r#"{alias="headnode"}"#)[0];
    assert_eq!(l["instance"], format!("srv-1.triton.example:{port}"));
    let reqs = server.requests();
    assert!(reqs.iter().any(|q| q.path == "/v1/discover" && q.query == "groups=web%2Cprod"), "{reqs:?}");
    assert!(agent.terminate(Duration::from_secs(10)).success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_converted_promtail_triton_job_passes_check_and_ships() {
    let pki = Pki::new(&["triton.test"]);
    let server = Mock::start_tls(pki.mutual.clone(), false, |req, _| endpoint(&req.path)).await;
    let port: u16 = server.url.rsplit(':').next().unwrap().parse().unwrap();
    let s = Scenario::loki();
    let d = s.root();
    for (f, text) in [("ca.pem", &pki.ca), ("client.pem", &pki.client_cert), ("client-key.pem", &pki.client_key)] {
        write_file(d, f, text);
    }
    s.log("web-1", "web line\n");
    let jobs = format!(
        r#"  - job_name: triton
    triton_sd_configs:
      - account: ops
        dns_suffix: triton.example
        endpoint: 127.0.0.1
        port: {port}
        version: 1
        refresh_interval: 10s
        tls_config:
          ca_file: {d}/ca.pem
          cert_file: {d}/client.pem
          key_file: {d}/client-key.pem
    relabel_configs:
      - source_labels: [__meta_triton_machine_alias]
        target_label: __path__
        replacement: {d}/logs/$1/*.log
      - source_labels: [__meta_triton_machine_alias]
        target_label: alias
"#,
        d = d.display(),
    );
    let agent = s.run_converted(&jobs, "triton_sd_configs").await;
    s.wait_labels(&agent, r#"{alias="web-1"}"#, 1);
    assert!(agent.terminate(Duration::from_secs(10)).success());
}

#[test]
fn bad_triton_settings_exit_2_naming_the_key_and_the_file() {
    let ok = r#"account = "a", dns_suffix = "s", endpoint = "e""#;
    let cases = [
        (r#"dns_suffix = "s", endpoint = "e""#.to_string(), "sources[0].triton.account"),
        (r#"account = "a", endpoint = "e""#.into(), "sources[0].triton.dns_suffix"),
        (r#"account = "a", dns_suffix = "s""#.into(), "sources[0].triton.endpoint"),
        (format!(r#"{ok}, role = "vm""#), "triton.role"),
        (format!(r#"{ok}, refresh_interval = "0s""#), "sources[0].triton.refresh_interval"),
        (format!(r#"{ok}, tls = {{ ca_file = "/nonexistent/ca.pem" }}"#), "sources[0].triton.tls.ca_file"),
    ];
    bad_sources_exit_2(&cases.map(|(triton, key)| (format!("triton = {{ {triton} }}"), key)));
}
