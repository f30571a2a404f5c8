//! `openstack` targets (Promtail's `openstack_sd_configs`) through the real
//! binary, against a small OpenStack written here (Keystone's token with its
//! catalog, Nova, Neutron, Octavia): instances, hypervisors and load
//! balancers are targets with Prometheus' `__meta_openstack_*` labels, tailed
//! once the relabel rules give them a `__path__`.

use crate::common;
use crate::discovery;
use crate::mockhttp;
use crate::scenario;
use scenario::{run_agent, Scenario};

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use common::wait_for;
use discovery::{bad_sources_exit_2, labels_of};
use mockhttp::{Mock, Reply, Req};
use serde_json::json;

fn cloud(base: &str, req: &Req) -> Reply {
    let authed = req.header("x-auth-token") == Some("gAAAA-token");
    match (req.method.as_str(), req.path.as_str()) {
        ("POST", "/identity/v3/auth/tokens") => {
            let body = req.json();
            let user = &body["auth"]["identity"]["password"]["user"];
            if user["name"] != "prom" || user["password"] != "s3cret" || user["domain"]["name"] != "Default" {
                return Reply::json(
                    401,
                    json!({ "error": { "code": 401, "message": "The request you have made requires authentication." } }),
                );
            }
            let ep = |kind: &str, url: String| {
                json!({ "type": kind, "endpoints": [
                    { "interface": "public", "region": "RegionOne", "region_id": "RegionOne", "url": url },
                    { "interface": "internal", "region": "RegionOne", "region_id": "RegionOne", "url": "http://127.0.0.1:1/" } ] })
            };
            Reply::json(
                201,
                json!({ "token": { "catalog": [
                    ep("compute", format!("{base}/compute/v2.1")),
                    ep("network", format!("{base}/network/")),
                    ep("load-balancer", format!("{base}/lb")) ] } }),
            )
            .with_header("X-Subject-Token", "gAAAA-token")
        }
        _ if !authed => Reply::json(401, json!({ "error": "no token" })),
        ("GET", "/compute/v2.1/servers/detail") if !req.query.contains("marker") => Reply::ok(json!({
            "servers": [ {
                "id": "srv-1", "name": "web-1", "status": "ACTIVE", "tenant_id": "proj-1", "user_id": "user-1",
                "flavor": { "original_name": "m1.small" }, "image": { "id": "img-1" },
                "metadata": { "role.name": "web" },
                "addresses": { "private": [ { "addr": "10.0.0.5", "version": 4 }, { "addr": "172.24.4.10", "version": 4 } ] }
            } ],
            "servers_links": [ { "rel": "next", "href": format!("{base}/compute/v2.1/servers/detail?marker=srv-1") } ]
        })),
        ("GET", "/compute/v2.1/servers/detail") => Reply::ok(json!({ "servers": [ {
            "id": "srv-2", "name": "db-1", "status": "ACTIVE", "flavor": { "id": "f-2" },
            "addresses": { "private": [ { "addr": "10.0.0.6" } ] } } ] })),
        ("GET", "/network/v2.0/ports") => Reply::ok(json!({ "ports": [ { "id": "port-1", "device_id": "srv-1" } ] })),
        ("GET", "/network/v2.0/floatingips") => Reply::ok(json!({ "floatingips": [
            { "port_id": "port-1", "fixed_ip_address": "10.0.0.5", "floating_ip_address": "172.24.4.10" },
            { "port_id": "vip-port-1", "fixed_ip_address": "10.0.0.9", "floating_ip_address": "172.24.4.20" } ] })),
        ("GET", "/compute/v2.1/os-hypervisors/detail") => Reply::ok(json!({ "hypervisors": [ {
            "id": 1, "hypervisor_hostname": "compute-1", "host_ip": "192.168.0.11", "state": "up",
            "status": "enabled", "hypervisor_type": "QEMU" } ] })),
        ("GET", "/lb/v2.0/lbaas/loadbalancers") => Reply::ok(json!({ "loadbalancers": [
            { "id": "lb-1", "name": "edge", "operating_status": "ONLINE", "provisioning_status": "ACTIVE",
              "availability_zone": "az1", "vip_address": "10.0.0.9", "vip_port_id": "vip-port-1", "provider": "amphora",
              "project_id": "proj-1", "tags": ["a", "b"] },
            { "id": "lb-2", "name": "plain", "vip_address": "10.0.0.10" } ] })),
        ("GET", "/lb/v2.0/lbaas/listeners") => Reply::ok(json!({ "listeners": [
            { "protocol": "PROMETHEUS", "protocol_port": 9100, "loadbalancers": [ { "id": "lb-1" } ] },
            { "protocol": "HTTP", "protocol_port": 80, "loadbalancers": [ { "id": "lb-2" } ] } ] })),
        _ => Reply::json(404, json!({ "itemNotFound": { "message": "not found" } })),
    }
}

async fn start_cloud() -> Mock {
    let base: Arc<OnceLock<String>> = Arc::default();
    let b = base.clone();
    let mock = Mock::start(move |req, _| cloud(b.get().map(String::as_str).unwrap_or(""), req)).await;
    base.set(mock.url.clone()).unwrap();
    mock
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn instances_hypervisors_and_load_balancers_name_the_files_tailed() {
    let cloud = start_cloud().await;
    let s = Scenario::plain();
    let (r, d) = (&s.r, s.root());
    s.name_logs(&["web-1", "db-1", "compute-1", "edge", "plain"]);
    let os = |role: &str| {
        format!(
            r#"openstack = {{ identity_endpoint = "{url}/identity/v3", username = "prom", password = "s3cret", domain_name = "Default", project_name = "ops", region = "RegionOne", role = "{role}", port = 9100 }}"#,
            url = cloud.url
        )
    };
    let text = format!(
        r#"[[sources]]
name = "instances"
host_label = false
scan_interval = "200ms"
{instance}
relabel = [
  {{ source_labels = ["__meta_openstack_instance_name"], target_label = "__path__", replacement = "{d}/logs/$1/*.log" }},
  {{ source_labels = ["__meta_openstack_instance_name"], target_label = "name" }},
  {{ source_labels = ["__meta_openstack_instance_flavor"], target_label = "flavor" }},
  {{ source_labels = ["__meta_openstack_public_ip"], target_label = "public_ip" }},
  {{ source_labels = ["__meta_openstack_tag_role_name"], target_label = "role" }},
  {{ source_labels = ["__meta_openstack_address_pool"], target_label = "pool" }},
  {{ source_labels = ["__address__"], target_label = "instance" }},
]
[[sources]]
name = "hypervisors"
host_label = false
scan_interval = "200ms"
{hypervisor}
relabel = [
  {{ source_labels = ["__meta_openstack_hypervisor_hostname"], target_label = "__path__", replacement = "{d}/logs/$1/*.log" }},
  {{ source_labels = ["__meta_openstack_hypervisor_hostname"], target_label = "name" }},
  {{ source_labels = ["__meta_openstack_hypervisor_type"], target_label = "type" }},
  {{ source_labels = ["__address__"], target_label = "instance" }},
]
[[sources]]
name = "lbs"
host_label = false
scan_interval = "200ms"
{lb}
relabel = [
  {{ source_labels = ["__meta_openstack_loadbalancer_name"], target_label = "__path__", replacement = "{d}/logs/$1/*.log" }},
  {{ source_labels = ["__meta_openstack_loadbalancer_name"], target_label = "name" }},
  {{ source_labels = ["__meta_openstack_loadbalancer_floating_ip"], target_label = "fip" }},
  {{ source_labels = ["__meta_openstack_loadbalancer_tags"], target_label = "tags" }},
  {{ source_labels = ["__address__"], target_label = "instance" }},
]
"#,
        d = d.display(),
        instance = os("instance"),
        hypervisor = os("hypervisor"),
        lb = os("loadbalancer"),
    );
    let cfg = s.write_toml("os.toml", &text);
    discovery::check_hides(&cfg, "s3cret");
    let agent = run_agent(cfg).await;
    let rr = &r;
    let one = |q: &str| wait_for(Duration::from_secs(20), || labels_of(rr, q).len() == 1);
    assert!(one(r#"{name="web-1"}"#), "{}", agent.stderr_text());
    let l = &labels_of(r, r#"{name="web-1"}"#)[0];
    assert_eq!(
        (l["flavor"].as_str(), l["public_ip"].as_str(), l["role"].as_str(), l["pool"].as_str(), l["instance"].as_str()),
        ("m1.small", "172.24.4.10", "web", "private", "10.0.0.5:9100")
    );
    assert!(one(r#"{name="db-1"}"#), "the second page: {}", agent.stderr_text());
    assert_eq!(labels_of(r, r#"{name="db-1"}"#)[0]["flavor"], "f-2");
    assert!(one(r#"{name="compute-1"}"#), "{}", agent.stderr_text());
    let h = &labels_of(r, r#"{name="compute-1"}"#)[0];
    assert_eq!((h["type"].as_str(), h["instance"].as_str()), ("QEMU", "192.168.0.11:9100"));
    assert!(one(r#"{name="edge"}"#), "{}", agent.stderr_text());
    let b = &labels_of(r, r#"{name="edge"}"#)[0];
    assert_eq!(
        (b["fip"].as_str(), b["tags"].as_str(), b["instance"].as_str()),
        ("172.24.4.20", "a,b", "10.0.0.9:9100")
    );
    assert!(labels_of(r, r#"{name="plain"}"#).is_empty(), "a load balancer without a PROMETHEUS listener is no target");
    let reqs = cloud.requests();
    let auth = reqs.iter().find(|q| q.method == "POST").expect("a token asked");
    assert_eq!(auth.json()["auth"]["scope"]["project"]["name"], "ops");
    assert!(agent.terminate(Duration::from_secs(10)).success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_converted_promtail_openstack_job_passes_check_and_ships() {
    let cloud = start_cloud().await;
    let s = Scenario::loki();
    let d = s.root();
    s.log("web-1", "web line\n");
    let jobs = format!(
        r#"  - job_name: openstack
    openstack_sd_configs:
      - role: instance
        region: RegionOne
        identity_endpoint: {cloud}/identity/v3
        username: prom
        password: s3cret
        domain_name: Default
        project_name: ops
        port: 9100
        all_tenants: true
        refresh_interval: 10s
    relabel_configs:
      - source_labels: [__meta_openstack_instance_name]
        target_label: __path__
        replacement: {d}/logs/$1/*.log
      - source_labels: [__meta_openstack_instance_name]
        target_label: name
"#,
        d = d.display(),
        cloud = cloud.url,
    );
    let agent = s.run_converted(&jobs, "openstack_sd_configs").await;
    s.wait_labels(&agent, r#"{name="web-1"}"#, 1);
    let reqs = cloud.requests();
    assert!(reqs.iter().any(|q| q.path.ends_with("/servers/detail") && q.query == "all_tenants=true"), "{reqs:?}");
    assert!(agent.terminate(Duration::from_secs(10)).success());
}

#[test]
fn bad_openstack_settings_exit_2_naming_the_key_and_the_file() {
    let ok = r#"identity_endpoint = "http://k:5000/v3", username = "u", password = "p", region = "R""#;
    let cases = [
        (r#"identity_endpoint = "http://k:5000/v3", username = "u", password = "p", role = "instance""#.to_string(), "sources[0].openstack.region"),
        (ok.to_string(), "sources[0].openstack.role"),
        (format!(r#"{ok}, role = "vm""#), "openstack.role"),
        (format!(r#"{ok}, role = "instance", availability = "private""#), "sources[0].openstack.availability"),
        (r#"identity_endpoint = "keystone", username = "u", password = "p", region = "R", role = "instance""#.into(), "sources[0].openstack.identity_endpoint"),
        (r#"identity_endpoint = "http://k:5000/v3", username = "u", region = "R", role = "instance""#.into(), "sources[0].openstack.password"),
        (r#"identity_endpoint = "http://k:5000/v3", application_credential_id = "a", region = "R", role = "instance""#.into(), "sources[0].openstack.application_credential_secret"),
    ];
    bad_sources_exit_2(&cases.map(|(table, key)| (format!("openstack = {{ {table} }}"), key)));
}
