//! `digitalocean` targets (Promtail's `digitalocean_sd_configs`) through the
//! real binary. DigitalOcean's API has a fixed address, so the test reaches
//! a stand-in for it the way an operator behind a proxy would: through
//! `proxy_url`, a proxy written here that answers `CONNECT
//! api.digitalocean.com:443` and serves the tunnel with a certificate for
//! that name from a CA the source trusts (`tls.ca_file`).

use crate::agent;
use crate::common;
use crate::discovery;
use crate::mockhttp;
use crate::scenario;
use scenario::Scenario;

use std::time::Duration;

use agent::write_file;
use common::wait_for;
use discovery::bad_sources_exit_2;
use mockhttp::{Mock, Pki, Reply};
use serde_json::json;

/// Two pages of droplets; the second holds one without networks (no target).
fn api(path: &str, query: &str) -> Reply {
    if path != "/v2/droplets" {
        return Reply::text(404, "{\"id\":\"not_found\"}");
    }
    if query.starts_with("page=1") {
        Reply::ok(json!({
            "droplets": [{
                "id": 3164444, "name": "web-1", "status": "active", "size_slug": "s-1vcpu-1gb",
                "features": ["backups", "ipv6"], "tags": ["logs"], "vpc_uuid": "vpc-1",
                "image": { "slug": "ubuntu-24-04-x64", "name": "24.04 (LTS) x64" }, "region": { "slug": "ams3" },
                "networks": { "v4": [ { "ip_address": "10.110.0.2", "type": "private" },
                                       { "ip_address": "203.0.113.7", "type": "public" } ],
                              "v6": [ { "ip_address": "2001:db8::7", "type": "public" } ] }
            }],
            "links": { "pages": { "next": "https://api.digitalocean.com/v2/droplets?page=2&per_page=200",
                                  "last": "https://api.digitalocean.com/v2/droplets?page=2&per_page=200" } }
        }))
    } else {
        Reply::ok(json!({
            "droplets": [
                { "id": 2, "name": "db-1", "status": "active", "networks": { "v4": [ { "ip_address": "203.0.113.8", "type": "public" } ] } },
                { "id": 3, "name": "new-1", "status": "new", "networks": { "v4": [], "v6": [] } }
            ],
            "links": {}
        }))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn droplets_through_a_proxy_name_the_files_tailed_and_a_converted_promtail_job_ships() {
    let pki = Pki::new(&["api.digitalocean.com"]);
    let proxy = Mock::start_tls(pki.server.clone(), true, |req, _| api(&req.path, &req.query)).await;
    let proxy_url = proxy.url.replace("https://", "http://");
    let s = Scenario::loki();
    let d = s.root();
    write_file(d, "ca.pem", &pki.ca);
    write_file(d, "do-token", "dop_v1_s3cret\n");
    s.name_logs(&["web-1", "db-1", "new-1"]);
    let jobs = format!(
        r#"  - job_name: droplets
    digitalocean_sd_configs:
      - port: 9100
        refresh_interval: 10s
        authorization:
          credentials_file: {d}/do-token
        proxy_url: {proxy_url}
        tls_config:
          ca_file: {d}/ca.pem
    relabel_configs:
      - source_labels: [__meta_digitalocean_droplet_name]
        target_label: __path__
        replacement: {d}/logs/$1/*.log
      - source_labels: [__meta_digitalocean_droplet_name]
        target_label: droplet
      - source_labels: [__meta_digitalocean_region]
        target_label: region
      - source_labels: [__meta_digitalocean_tags]
        target_label: tags
      - source_labels: [__meta_digitalocean_features]
        target_label: features
      - source_labels: [__meta_digitalocean_private_ipv4]
        target_label: private
      - source_labels: [__meta_digitalocean_public_ipv6]
        target_label: ipv6
      - source_labels: [__meta_digitalocean_image]
        target_label: image
      - source_labels: [__address__]
        target_label: instance
"#,
        d = d.display(),
    );
    let agent = s.run_converted(&jobs, "digitalocean_sd_configs").await;
    let of = |q: &str| s.labels(q);
    s.wait_labels(&agent, r#"{droplet="web-1"}"#, 1);
    let l = &of(r#"{droplet="web-1"}"#)[0];
    assert_eq!(
        (l["region"].as_str(), l["tags"].as_str(), l["features"].as_str(), l["private"].as_str()),
        ("ams3", ",logs,", ",backups,ipv6,", "10.110.0.2")
    );
    assert_eq!((l["ipv6"].as_str(), l["image"].as_str()), ("2001:db8::7", "ubuntu-24-04-x64"));
    assert_eq!(l["instance"], "203.0.113.7:9100");
    assert!(wait_for(Duration::from_secs(20), || of(r#"{droplet="db-1"}"#).len() == 1), "the second page was read");
    assert!(of(r#"{droplet="new-1"}"#).is_empty(), "a droplet without an IPv4 network is no target");
    let reqs = proxy.requests();
    assert!(reqs.iter().all(|q| q.header("authorization") == Some("Bearer dop_v1_s3cret")), "{reqs:?}");
    assert!(agent.terminate(Duration::from_secs(10)).success());
}

#[test]
fn bad_digitalocean_settings_exit_2_naming_the_key_and_the_file() {
    let cases = [
        (r#"refresh_interval = "0s""#, "sources[0].digitalocean.refresh_interval"),
        (r#"bearer_token = "a", bearer_token_file = "/etc/hostname""#, "sources[0].digitalocean.bearer_token_file"),
        (r#"proxy_url = "ftp://proxy""#, "sources[0].digitalocean.proxy_url"),
        (r#"role = "databases""#, "sources[0].digitalocean.role"),
    ];
    bad_sources_exit_2(&cases.map(|(table, key)| (format!("digitalocean = {{ {table} }}"), key)));
}
