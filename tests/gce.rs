//! `gce` targets (Promtail's `gce_sd_configs`) through the real binary.
//! Google's Compute API has a fixed address and GCE's discovery has no
//! proxy key of its own, so the agent reaches a stand-in for it the way an
//! operator behind a proxy would: `HTTPS_PROXY` names a proxy written here
//! that serves the tunnel with a certificate for `compute.googleapis.com`
//! from a CA the environment trusts (`SSL_CERT_FILE`); the token comes from a
//! service account's key (`GOOGLE_APPLICATION_CREDENTIALS`) whose token
//! endpoint is written here too.

use crate::agent;
use crate::common;
use crate::discovery;
use crate::mockhttp;
use crate::scenario;
use scenario::Scenario;

use std::path::Path;
use std::time::Duration;

use agent::{write_file, Agent};
use common::wait_for;
use discovery::bad_sources_exit_2;
use mockhttp::{Mock, Pki, Reply};
use serde_json::json;

fn compute(path: &str, query: &str) -> Reply {
    if path != "/compute/v1/projects/shop/zones/europe-west1-b/instances" {
        return Reply::json(404, json!({ "error": { "code": 404, "message": "not found" } }));
    }
    let web = json!({
        "id": "4567890123456789012", "name": "web-1", "status": "RUNNING",
        "zone": "https://www.googleapis.com/compute/v1/projects/shop/zones/europe-west1-b",
        "machineType": "https://www.googleapis.com/compute/v1/projects/shop/zones/europe-west1-b/machineTypes/e2-small",
        "networkInterfaces": [
            { "name": "nic0", "network": "global/networks/default", "subnetwork": "regions/europe-west1/subnetworks/default",
              "networkIP": "10.132.0.2", "accessConfigs": [ { "type": "ONE_TO_ONE_NAT", "natIP": "34.76.1.2" } ] },
            { "name": "nic1", "networkIP": "10.8.0.2" } ],
        "tags": { "items": ["http-server", "logs"] },
        "metadata": { "items": [ { "key": "env", "value": "prod" }, { "key": "startup-script" } ] },
        "labels": { "team": "shop" }
    });
    if query.contains("pageToken=p2") {
        Reply::ok(json!({ "items": [ { "id": "2", "name": "db-1", "status": "RUNNING",
            "networkInterfaces": [ { "name": "nic0", "networkIP": "10.132.0.3" } ] },
            { "id": "3", "name": "bare-1", "status": "TERMINATED", "networkInterfaces": [] } ] }))
    } else {
        Reply::ok(json!({ "items": [web], "nextPageToken": "p2" }))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn gce_instances_through_the_environments_proxy_name_the_files_and_a_converted_promtail_job_ships() {
    let pki = Pki::new(&["compute.googleapis.com"]);
    let proxy = Mock::start_tls(pki.server.clone(), true, |req, _| compute(&req.path, &req.query)).await;
    let tokens = Mock::start(|_, _| {
        Reply::ok(json!({"access_token": "ya29.gce-test-token", "token_type": "Bearer", "expires_in": 3600}))
    })
    .await;
    let s = Scenario::loki();
    let d = s.root();
    let ca = write_file(d, "ca.pem", &pki.ca);
    let key = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/gcp-test-only-key.pem"))
        .unwrap();
    let creds = write_file(
        d,
        "sa.json",
        &json!({
            "type": "service_account", "project_id": "shop", "private_key_id": "k1", "private_key": key,
            "client_email": "shipper@shop.iam.gserviceaccount.com", "client_id": "1",
            "token_uri": format!("{}/token", tokens.url),
        })
        .to_string(),
    );
    s.name_logs(&["web-1", "db-1", "bare-1"]);
    let jobs = format!(
        r#"  - job_name: gce
    gce_sd_configs:
      - project: shop
        zone: europe-west1-b
        filter: status = RUNNING
        port: 9100
        tag_separator: ';'
        refresh_interval: 10s
    relabel_configs:
      - source_labels: [__meta_gce_instance_name]
        target_label: __path__
        replacement: {d}/logs/$1/*.log
      - source_labels: [__meta_gce_instance_name]
        target_label: instance_name
      - source_labels: [__meta_gce_tags]
        target_label: tags
      - source_labels: [__meta_gce_public_ip]
        target_label: public_ip
      - source_labels: [__meta_gce_interface_ipv4_nic1]
        target_label: nic1
      - source_labels: [__meta_gce_metadata_env]
        target_label: env
      - source_labels: [__meta_gce_label_team]
        target_label: team
      - source_labels: [__meta_gce_instance_id]
        target_label: id
      - source_labels: [__address__]
        target_label: instance
"#,
        d = d.display(),
    );
    let cfg = s.convert(&jobs, "gce_sd_configs");
    let https_proxy = proxy.url.replace("https://", "http://");
    let env = [
        ("HTTPS_PROXY", https_proxy.as_str()),
        ("SSL_CERT_FILE", ca.to_str().unwrap()),
        ("GOOGLE_APPLICATION_CREDENTIALS", creds.to_str().unwrap()),
    ];
    let agent = {
        let env: Vec<(String, String)> = env.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        tokio::task::spawn_blocking(move || {
            let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
            Agent::start_with(&cfg, &env)
        })
        .await
        .unwrap()
    };
    let of = |q: &str| s.labels(q);
    let l = &s.wait_labels(&agent, r#"{instance_name="web-1"}"#, 1)[0];
    assert_eq!(
        (l["tags"].as_str(), l["public_ip"].as_str(), l["nic1"].as_str(), l["env"].as_str(), l["team"].as_str()),
        (";http-server;logs;", "34.76.1.2", "10.8.0.2", "prod", "shop")
    );
    assert_eq!((l["id"].as_str(), l["instance"].as_str()), ("4567890123456789012", "10.132.0.2:9100"));
    assert!(wait_for(Duration::from_secs(20), || of(r#"{instance_name="db-1"}"#).len() == 1), "the second page");
    assert!(of(r#"{instance_name="bare-1"}"#).is_empty(), "an instance without a network interface is no target");
    let reqs = proxy.requests();
    assert!(reqs.iter().all(|q| q.header("authorization") == Some("Bearer ya29.gce-test-token")), "{reqs:?}");
    assert!(reqs.iter().any(|q| q.query.contains("filter=status")), "{reqs:?}");
    assert!(agent.terminate(Duration::from_secs(10)).success());
}

#[test]
fn bad_gce_settings_exit_2_naming_the_key_and_the_file() {
    let cases = [
        (r#"zone = "europe-west1-b""#, "sources[0].gce.project"),
        (r#"project = "shop""#, "sources[0].gce.zone"),
        (r#"project = "shop", zone = "a/b""#, "sources[0].gce.zone"),
        (r#"project = "shop", zone = "z", refresh_interval = "0s""#, "sources[0].gce.refresh_interval"),
    ];
    bad_sources_exit_2(&cases.map(|(table, key)| (format!("gce = {{ {table} }}"), key)));
}
