//! Targets from Marathon (`sources[].marathon`, Promtail's
//! `marathon_sd_configs`), with Prometheus' `__meta_marathon_*` labels.
//!
//! Each refresh reads `GET /v2/apps/?embed=apps.tasks` of the first server
//! that answers. Every task of an app is a target per port: the ports of
//! the app's container port mappings (the container's own port on a
//! container network, else the host port, which Marathon may leave 0 for
//! the task's port), else of its port definitions (their ports when
//! `requirePorts`, else the task's), else the task's own; the address is
//! the task's host (its first IP address on a container network).
//! Labels: `__meta_marathon_app`, `_image`, `_task`, `_port_index`,
//! `_app_label_<name>`, `_port_mapping_label_<name>` or
//! `_port_definition_label_<name>`.

use std::collections::BTreeMap;

use serde::Deserialize;

use super::{join_host_port, Labels, Lister};
use crate::client::discovery::{SdClient, SdHttpError};
use crate::config::MarathonConfig;
use crate::discovery::sanitize;
use crate::util::Secret;

const P: &str = "__meta_marathon_";

#[derive(Debug, Deserialize, Default)]
#[serde(default)]
pub struct AppList {
    pub apps: Vec<App>,
}

#[derive(Debug, Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
pub struct App {
    pub id: String,
    pub tasks: Vec<Task>,
    pub labels: BTreeMap<String, String>,
    pub container: Container,
    pub port_definitions: Vec<PortDefinition>,
    pub networks: Vec<Network>,
    pub require_ports: bool,
}

#[derive(Debug, Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
pub struct Task {
    pub id: String,
    pub host: String,
    pub ports: Vec<u32>,
    pub ip_addresses: Vec<IpAddress>,
}

#[derive(Debug, Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
pub struct IpAddress {
    pub ip_address: String,
}

#[derive(Debug, Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
pub struct Container {
    pub docker: Docker,
    pub port_mappings: Vec<PortMapping>,
}

#[derive(Debug, Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
pub struct Docker {
    pub image: String,
    pub port_mappings: Vec<PortMapping>,
}

#[derive(Debug, Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
pub struct PortMapping {
    pub labels: BTreeMap<String, String>,
    pub container_port: u32,
    pub host_port: u32,
}

#[derive(Debug, Deserialize, Default)]
#[serde(default)]
pub struct PortDefinition {
    pub labels: BTreeMap<String, String>,
    pub port: u32,
}

#[derive(Debug, Deserialize, Default)]
#[serde(default)]
pub struct Network {
    pub mode: String,
}

super::lister::listed_kind!(MarathonConfig = Marathon::new, every |c: &MarathonConfig| c.refresh_interval.get());

/// The Marathon servers of a `marathon` section.
pub struct Marathon {
    client: SdClient,
    servers: Vec<String>,
    token: Token,
}

/// DC/OS's `Authorization: token=...`.
enum Token {
    None,
    Value(Secret),
    File(std::path::PathBuf),
}

impl Marathon {
    pub fn new(cfg: &MarathonConfig) -> Result<Self, crate::client::http::HttpError> {
        let plain = cfg.servers.iter().all(|s| s.starts_with("http://"));
        let token = match (&cfg.auth_token, &cfg.auth_token_file) {
            (Some(t), _) => Token::Value(t.clone()),
            (None, Some(p)) => Token::File(p.clone()),
            (None, None) => Token::None,
        };
        Ok(Self { client: SdClient::new(cfg.http(), plain)?, servers: cfg.servers.clone(), token })
    }

    async fn apps(&self) -> Result<AppList, String> {
        let headers = match &self.token {
            Token::None => Vec::new(),
            Token::Value(t) => vec![("Authorization", format!("token={}", t.expose()))],
            Token::File(p) => {
                let t = crate::util::read_secret_file(p)
                    .map_err(|e| format!("cannot read auth_token_file {}: {e}", p.display()))?;
                vec![("Authorization", format!("token={}", t.expose().trim()))]
            }
        };
        let mut last: Option<SdHttpError> = None;
        for s in &self.servers {
            let url = format!("{}/v2/apps/?embed=apps.tasks", s.trim_end_matches('/'));
            match self.client.get_json(&url, &headers).await {
                Ok(apps) => return Ok(apps),
                Err(e) => last = Some(e),
            }
        }
        Err(last.map(|e| e.to_string()).unwrap_or_else(|| "no Marathon server given".into()))
    }
}

impl Lister for Marathon {
    fn describe(&self) -> String {
        format!(
            "Marathon at {}",
            self.servers.iter().map(|s| crate::client::http::redact_url(s)).collect::<Vec<_>>().join(", ")
        )
    }

    async fn list(&mut self) -> Result<Vec<Labels>, String> {
        let apps = self.apps().await?;
        Ok(apps.apps.iter().flat_map(app_targets).collect())
    }
}

/// An app's targets, with its own labels.
pub fn app_targets(app: &App) -> Vec<Labels> {
    let mut common = Labels::new();
    common.insert(format!("{P}app"), app.id.clone());
    common.insert(format!("{P}image"), app.container.docker.image.clone());
    for (k, v) in &app.labels {
        common.insert(format!("{P}app_label_{}", sanitize(k)), v.clone());
    }
    let container_net = app.networks.first().is_some_and(|n| n.mode == "container");
    let mappings = |m: &[PortMapping]| -> (Vec<u32>, Vec<BTreeMap<String, String>>) {
        m.iter().map(|p| (if container_net { p.container_port } else { p.host_port }, p.labels.clone())).unzip()
    };
    let (mut ports, labels, prefix) = if !app.container.port_mappings.is_empty() {
        let (p, l) = mappings(&app.container.port_mappings);
        (p, l, "port_mapping_label_")
    } else if !app.container.docker.port_mappings.is_empty() {
        let (p, l) = mappings(&app.container.docker.port_mappings);
        (p, l, "port_mapping_label_")
    } else if !app.port_definitions.is_empty() {
        let d = &app.port_definitions;
        let p = d.iter().map(|d| if app.require_ports { d.port } else { 0 }).collect();
        (p, d.iter().map(|d| d.labels.clone()).collect(), "port_definition_label_")
    } else {
        (Vec::new(), Vec::new(), "")
    };
    let mut out = Vec::new();
    for t in &app.tasks {
        // As Prometheus does: the first task with ports gives them to the app's tasks after it too.
        if ports.is_empty() && !t.ports.is_empty() {
            ports = t.ports.clone();
        }
        for (i, port) in ports.iter().enumerate() {
            let port = if *port == 0 && t.ports.len() == ports.len() { t.ports[i] } else { *port };
            let host = match t.ip_addresses.first() {
                Some(ip) if container_net => ip.ip_address.as_str(),
                _ => t.host.as_str(),
            };
            let mut l = common.clone();
            l.insert("__address__".into(), join_host_port(host, port));
            l.insert(format!("{P}task"), t.id.clone());
            l.insert(format!("{P}port_index"), i.to_string());
            for (k, v) in labels.get(i).into_iter().flatten() {
                l.insert(format!("{P}{prefix}{}", sanitize(k)), v.clone());
            }
            out.push(l);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn task_ports_fill_the_host_ports_marathon_leaves_zero() {
        let app: App = serde_json::from_value(serde_json::json!({
            "id": "/web", "labels": { "team.name": "ops" },
            "container": { "docker": { "image": "web:1", "portMappings": [
                { "containerPort": 80, "hostPort": 0, "labels": { "svc": "http" } },
                { "containerPort": 9090, "hostPort": 31002 } ] } },
            "tasks": [ { "id": "web.1", "host": "agent-1", "ports": [31001, 31002] } ]
        }))
        .unwrap();
        let t = app_targets(&app);
        let addrs: Vec<&str> = t.iter().map(|l| l["__address__"].as_str()).collect();
        assert_eq!(addrs, ["agent-1:31001", "agent-1:31002"]);
        assert_eq!(t[0]["__meta_marathon_port_mapping_label_svc"], "http");
        assert_eq!(t[0]["__meta_marathon_app_label_team_name"], "ops");
        assert_eq!(t[1]["__meta_marathon_port_index"], "1");
        assert_eq!(t[0]["__meta_marathon_image"], "web:1");
    }

    #[test]
    fn a_container_network_uses_the_task_ip_and_container_port() {
        let app: App = serde_json::from_value(serde_json::json!({
            "id": "/db", "networks": [ { "mode": "container", "name": "dcos" } ],
            "container": { "portMappings": [ { "containerPort": 5432, "hostPort": 0 } ] },
            "tasks": [ { "id": "db.1", "host": "agent-2", "ports": [], "ipAddresses": [ { "ipAddress": "9.0.0.7", "protocol": "IPv4" } ] } ]
        }))
        .unwrap();
        assert_eq!(app_targets(&app)[0]["__address__"], "9.0.0.7:5432");
    }
}
