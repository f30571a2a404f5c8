//! Targets from the Consul catalog (`sources[].consul`, Promtail's
//! `consul_sd_configs`) for a file source.
//!
//! How it works. A task watches the catalog's services (`GET
//! /v1/catalog/services`, a blocking query: `index` is the last answer's
//! `X-Consul-Index`, `wait` the `refresh_interval`), and each time it
//! answers (a change, or the wait over) reads the instances of every
//! service it selects (`services`, all of `tags`, `filter`, `health_filter`; `GET
//! /v1/health/service/<name>`). Each instance is a target with Prometheus'
//! `__meta_consul_*` labels and `__address__`. As in Promtail, a target is
//! tailed only when the source's relabel rules give it a `__path__` (a
//! glob; `__path_exclude__` too): the rules run on each target to find
//! it, and the targets with one go to the file machinery as the groups of
//! a target file do (see [`super::file_sd`]): files are opened at the next
//! scan, with the target's labels through the same rules; files no target
//! names any more are read to their end and closed. When Consul cannot be
//! reached the targets known stay, the failure is said once, and the
//! request is tried again with backoff (1 s doubling to 15 s).
//!
//! With `agent = true` (Promtail's `consulagent_sd_configs`) the local
//! agent is asked instead (`/v1/agent/services`, then
//! `/v1/agent/health/service/name/<name>`, whose status is the health),
//! every `refresh_interval` (the agent API has no blocking query), and the
//! labels are Promtail's `__meta_consulagent_*`: the node, its address and
//! metadata are the agent's own (`/v1/agent/self`).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use serde::Deserialize;

use super::lister::{published, Listed, Lister};
use super::poll::{poll, Backoff};
use super::{join_host_port, sanitize, Found, Labels, Serving};
use crate::client::auth::Auth;
use crate::client::discovery::{options, Overrides};
use crate::config::{ConsulConfig, HttpKeys, SourceConfig};
use crate::util::Secret;

/// Retries after a failure wait at most this (Prometheus waits 15 s).
const RETRY_MAX: Duration = Duration::from_secs(15);
/// A blocking query that came back at once with nothing new waits this long before the next.
const MIN_ROUND: Duration = Duration::from_secs(1);

#[derive(Debug, thiserror::Error)]
pub enum ConsulError {
    #[error("cannot reach Consul at {url}: {source}")]
    Unreachable { url: String, source: reqwest::Error },
    #[error("Consul answered {status} to {what}: {body}")]
    Status { what: String, status: u16, body: String },
    #[error("Consul's answer to {what} is not what its API documents: {source}")]
    Decode { what: String, source: serde_json::Error },
    #[error("consul.{0}")]
    Setting(String),
    #[error(transparent)]
    Client(#[from] crate::client::http::HttpError),
}

/// One instance of `GET /v1/health/service/<name>`.
#[derive(Debug, Clone, Deserialize, Default)]
#[serde(default, rename_all = "PascalCase")]
pub struct ServiceEntry {
    pub node: Node,
    pub service: Service,
    pub checks: Vec<Check>,
}

#[derive(Debug, Clone, Deserialize, Default)]
#[serde(default, rename_all = "PascalCase")]
pub struct Node {
    pub node: String,
    pub address: String,
    pub tagged_addresses: Option<BTreeMap<String, String>>,
    pub meta: Option<BTreeMap<String, String>>,
}

#[derive(Debug, Clone, Deserialize, Default)]
#[serde(default, rename_all = "PascalCase")]
pub struct Service {
    #[serde(rename = "ID")]
    pub id: String,
    pub tags: Option<Vec<String>>,
    pub address: String,
    pub port: u16,
    pub meta: Option<BTreeMap<String, String>>,
    pub namespace: String,
    pub partition: String,
}

#[derive(Debug, Clone, Deserialize, Default)]
#[serde(default, rename_all = "PascalCase")]
pub struct Check {
    #[serde(rename = "CheckID")]
    pub check_id: String,
    pub status: String,
}

/// Consul's aggregated status of an instance's checks (its Go client's `AggregatedStatus`).
pub fn health(checks: &[Check]) -> &'static str {
    let (mut passing, mut warning, mut critical, mut maintenance) = (false, false, false, false);
    for c in checks {
        if c.check_id == "_node_maintenance" || c.check_id.starts_with("_service_maintenance:") {
            maintenance = true;
            continue;
        }
        match c.status.as_str() {
            "passing" => passing = true,
            "warning" => warning = true,
            "critical" => critical = true,
            _ => return "",
        }
    }
    let _ = passing;
    if maintenance {
        "maintenance"
    } else if critical {
        "critical"
    } else if warning {
        "warning"
    } else {
        "passing"
    }
}

/// A service as the local agent knows it (`/v1/agent/services`, and in
/// `/v1/agent/health/service/name/<name>`).
#[derive(Debug, Clone, Deserialize, Default)]
#[serde(default, rename_all = "PascalCase")]
pub struct AgentService {
    #[serde(rename = "ID")]
    pub id: String,
    pub service: String,
    pub tags: Option<Vec<String>>,
    pub address: String,
    pub port: u16,
    pub meta: Option<BTreeMap<String, String>>,
    pub tagged_addresses: Option<BTreeMap<String, AgentAddress>>,
}

#[derive(Debug, Clone, Deserialize, Default)]
#[serde(default, rename_all = "PascalCase")]
pub struct AgentAddress {
    pub address: String,
    pub port: u16,
}

#[derive(Debug, Clone, Deserialize, Default)]
#[serde(default, rename_all = "PascalCase")]
struct AgentServiceChecks {
    service: AgentService,
}

/// The local agent, as `/v1/agent/self` describes it.
#[derive(Debug, Clone, Default)]
pub struct AgentSelf {
    pub node: String,
    pub addr: String,
    pub meta: BTreeMap<String, String>,
}

/// The labels Promtail's `consulagent_sd_configs` gives an instance of
/// service `name` on the local agent, whose health is `health`.
pub fn agent_target_labels(
    name: &str,
    dc: &str,
    sep: &str,
    me: &AgentSelf,
    health: &str,
    s: &AgentService,
) -> BTreeMap<String, String> {
    let tags = s.tags.clone().unwrap_or_default();
    let host = if s.address.is_empty() { &me.addr } else { &s.address };
    let mut m = BTreeMap::from([
        ("__address__".to_string(), join_host_port(host, s.port)),
        ("__meta_consulagent_address".to_string(), me.addr.clone()),
        ("__meta_consulagent_node".to_string(), me.node.clone()),
        ("__meta_consulagent_tags".to_string(), format!("{sep}{}{sep}", tags.join(sep))),
        ("__meta_consulagent_service_address".to_string(), s.address.clone()),
        ("__meta_consulagent_service_port".to_string(), s.port.to_string()),
        ("__meta_consulagent_service_id".to_string(), s.id.clone()),
        ("__meta_consulagent_health".to_string(), health.to_string()),
        ("__meta_consulagent_service".to_string(), name.to_string()),
        ("__meta_consulagent_dc".to_string(), dc.to_string()),
    ]);
    for (k, v) in &me.meta {
        m.insert(format!("__meta_consulagent_metadata_{}", sanitize(k)), v.clone());
    }
    for (k, v) in s.meta.iter().flatten() {
        m.insert(format!("__meta_consulagent_service_metadata_{}", sanitize(k)), v.clone());
    }
    for (k, v) in s.tagged_addresses.iter().flatten() {
        m.insert(format!("__meta_consulagent_tagged_address_{}", sanitize(k)), format!("{}:{}", v.address, v.port));
    }
    m
}

/// The labels Prometheus gives an instance of service `name` in datacenter `dc`.
pub fn target_labels(name: &str, dc: &str, sep: &str, e: &ServiceEntry) -> BTreeMap<String, String> {
    let tags = e.service.tags.clone().unwrap_or_default();
    let host = if e.service.address.is_empty() { &e.node.address } else { &e.service.address };
    let mut m = BTreeMap::from([
        ("__address__".to_string(), join_host_port(host, e.service.port)),
        ("__meta_consul_address".to_string(), e.node.address.clone()),
        ("__meta_consul_node".to_string(), e.node.node.clone()),
        ("__meta_consul_namespace".to_string(), e.service.namespace.clone()),
        ("__meta_consul_partition".to_string(), e.service.partition.clone()),
        ("__meta_consul_tags".to_string(), format!("{sep}{}{sep}", tags.join(sep))),
        ("__meta_consul_service_address".to_string(), e.service.address.clone()),
        ("__meta_consul_service_port".to_string(), e.service.port.to_string()),
        ("__meta_consul_service_id".to_string(), e.service.id.clone()),
        ("__meta_consul_health".to_string(), health(&e.checks).to_string()),
        ("__meta_consul_service".to_string(), name.to_string()),
        ("__meta_consul_dc".to_string(), dc.to_string()),
    ]);
    for (k, v) in e.node.meta.iter().flatten() {
        m.insert(format!("__meta_consul_metadata_{}", sanitize(k)), v.clone());
    }
    for (k, v) in e.service.meta.iter().flatten() {
        m.insert(format!("__meta_consul_service_metadata_{}", sanitize(k)), v.clone());
    }
    for (k, v) in e.node.tagged_addresses.iter().flatten() {
        m.insert(format!("__meta_consul_tagged_address_{}", sanitize(k)), v.clone());
    }
    m
}

/// The Consul HTTP API as `sources[].consul` describes it.
struct Catalog {
    http: reqwest::Client,
    base: String,
    token: Option<Secret>,
    auth: Auth,
    cfg: ConsulConfig,
}

impl Catalog {
    fn new(cfg: &ConsulConfig) -> Result<Self, ConsulError> {
        let base = cfg.base_url();
        // Blocking queries stay open: no timeout of the client's own.
        let keys = HttpKeys { basic_auth: cfg.basic_auth.as_ref(), tls: cfg.tls.as_ref(), ..HttpKeys::none() };
        let o = Overrides { plain_http: cfg.scheme == "http", timeout: None, no_redirects: false, http1_only: false };
        let opts = options(keys, o);
        let http = crate::client::http::build_client(&opts).map_err(|e| ConsulError::Setting(e.to_string()))?;
        let token = match (&cfg.token, &cfg.token_file) {
            (Some(t), _) => Some(t.clone()),
            (None, Some(p)) => Some(
                crate::util::read_secret_file(p)
                    .map_err(|e| ConsulError::Setting(format!("token_file: cannot read {}: {e}", p.display())))?,
            ),
            (None, None) => None,
        };
        let auth = crate::client::discovery::auth(keys, opts).map_err(|e| ConsulError::Setting(e.to_string()))?;
        Ok(Self { http, base, token, auth, cfg: cfg.clone() })
    }

    /// GETs `path` with the common parameters (dc, ns, partition, stale,
    /// node-meta) and `extra`; the answer and its `X-Consul-Index`.
    async fn get<T: serde::de::DeserializeOwned>(
        &self,
        path: &str,
        extra: &[(&str, String)],
        dc: Option<&str>,
        timeout: Duration,
    ) -> Result<(T, u64), ConsulError> {
        let c = &self.cfg;
        let mut q: Vec<(&str, String)> = extra.to_vec();
        if let Some(dc) = dc.filter(|d| !d.is_empty()) {
            q.push(("dc", dc.to_string()));
        }
        if let Some(ns) = &c.namespace {
            q.push(("ns", ns.clone()));
        }
        if let Some(p) = &c.partition {
            q.push(("partition", p.clone()));
        }
        if c.allow_stale {
            q.push(("stale", String::new()));
        }
        for (k, v) in &c.node_meta {
            q.push(("node-meta", format!("{k}:{v}")));
        }
        let mut rb = self.auth.apply(self.http.get(format!("{}{path}", self.base)).query(&q).timeout(timeout)).await?;
        if let Some(t) = &self.token {
            rb = rb.header("X-Consul-Token", t.expose());
        }
        let url = crate::client::http::redact_url(&self.base);
        let resp = rb.send().await.map_err(|source| ConsulError::Unreachable { url: url.clone(), source })?;
        let status = resp.status().as_u16();
        let index = resp
            .headers()
            .get("X-Consul-Index")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        let (_, body) = crate::client::read::answer(resp, crate::client::read::Cap::Discovery, &url).await?;
        if !(200..300).contains(&status) {
            let body = String::from_utf8_lossy(&body).chars().take(300).collect();
            return Err(ConsulError::Status { what: path.to_string(), status, body });
        }
        let v =
            serde_json::from_slice(&body).map_err(|source| ConsulError::Decode { what: path.to_string(), source })?;
        Ok((v, index))
    }

    /// The datacenter of the agent asked (`/v1/agent/self`).
    async fn own_datacenter(&self) -> Result<String, ConsulError> {
        let (v, _): (serde_json::Value, u64) = self.get("/v1/agent/self", &[], None, Duration::from_secs(30)).await?;
        Ok(v.pointer("/Config/Datacenter").and_then(|d| d.as_str()).unwrap_or_default().to_string())
    }

    /// One round of `agent = true` (Promtail's `consulagent_sd_configs`):
    /// the local agent's services and, for each watched one, its instances
    /// with their health (the status of `/v1/agent/health/service/name/`:
    /// 200 passing, 429 warning, 503 critical).
    async fn agent_round(&self, dc: &str) -> Result<Vec<BTreeMap<String, String>>, ConsulError> {
        let t = Duration::from_secs(30);
        let (v, _): (serde_json::Value, u64) = self.get("/v1/agent/self", &[], None, t).await?;
        let text = |p: &str| v.pointer(p).and_then(|x| x.as_str()).unwrap_or_default().to_string();
        let meta = v
            .get("Meta")
            .and_then(|m| m.as_object())
            .map(|m| m.iter().filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string()))).collect());
        let me =
            AgentSelf { node: text("/Config/NodeName"), addr: text("/Member/Addr"), meta: meta.unwrap_or_default() };
        let (services, _): (BTreeMap<String, AgentService>, u64) = self.get("/v1/agent/services", &[], None, t).await?;
        let mut names: Vec<&str> = services
            .values()
            .filter(|s| self.watched(&s.service, s.tags.as_deref().unwrap_or_default()))
            .map(|s| s.service.as_str())
            .collect();
        names.sort();
        names.dedup();
        let mut targets = Vec::new();
        for name in names {
            let path = format!("/v1/agent/health/service/name/{name}");
            let mut rb = self.auth.apply(self.http.get(format!("{}{path}", self.base)).timeout(t)).await?;
            if let Some(tok) = &self.token {
                rb = rb.header("X-Consul-Token", tok.expose());
            }
            let url = crate::client::http::redact_url(&self.base);
            let resp = rb.send().await.map_err(|source| ConsulError::Unreachable { url: url.clone(), source })?;
            let health = match resp.status().as_u16() {
                200 => "passing",
                429 => "warning",
                503 => "critical",
                404 => continue,
                status => {
                    let body = crate::client::read::error_text(resp).await.chars().take(300).collect();
                    return Err(ConsulError::Status { what: path, status, body });
                }
            };
            let body = crate::client::read::body(resp, crate::client::read::Cap::Discovery, &url).await?;
            let infos: Vec<AgentServiceChecks> =
                serde_json::from_slice(&body).map_err(|source| ConsulError::Decode { what: path.clone(), source })?;
            for i in infos {
                let s = &i.service;
                if self.cfg.tags.iter().all(|t| s.tags.iter().flatten().any(|x| x == t)) {
                    targets.push(agent_target_labels(name, dc, &self.cfg.tag_separator, &me, health, s));
                }
            }
        }
        Ok(targets)
    }

    /// Whether service `name` with `tags` is watched (Prometheus' `shouldWatch`).
    fn watched(&self, name: &str, tags: &[String]) -> bool {
        (self.cfg.services.is_empty() || self.cfg.services.iter().any(|s| s == name))
            && self.cfg.tags.iter().all(|t| tags.contains(t))
    }

    /// One round: the catalog after `index`, then every watched service's
    /// instances; the targets and the catalog's new index.
    async fn round(&self, index: u64, dc: &str) -> Result<(Vec<BTreeMap<String, String>>, u64), ConsulError> {
        let wait = self.cfg.refresh_interval.get();
        let mut extra = vec![("index", index.to_string()), ("wait", format!("{}ms", wait.as_millis()))];
        if let Some(f) = &self.cfg.filter {
            extra.push(("filter", f.clone()));
        }
        let (services, new_index): (BTreeMap<String, Option<Vec<String>>>, u64) =
            self.get("/v1/catalog/services", &extra, Some(dc), wait + Duration::from_secs(15)).await?;
        let mut targets = Vec::new();
        for (name, tags) in services {
            if !self.watched(&name, tags.as_deref().unwrap_or_default()) {
                continue;
            }
            let mut tag_q: Vec<(&str, String)> = self.cfg.tags.iter().map(|t| ("tag", t.clone())).collect();
            if let Some(f) = &self.cfg.health_filter {
                tag_q.push(("filter", f.clone()));
            }
            let path = format!("/v1/health/service/{name}");
            let (entries, _): (Vec<ServiceEntry>, u64) =
                self.get(&path, &tag_q, Some(dc), Duration::from_secs(30)).await?;
            targets.extend(entries.iter().map(|e| target_labels(&name, dc, &self.cfg.tag_separator, e)));
        }
        Ok((targets, new_index))
    }
}

/// The Consul discovery: the catalog's targets, kept current by a task on
/// `at.handle` until `at.cancel`.
impl super::Discover for ConsulConfig {
    fn start(&self, _: &SourceConfig, at: &Serving) -> Result<Found, String> {
        Ok(start(self, Catalog::new(self).map_err(|e| e.to_string())?, at))
    }
}

/// Watches `catalog` for the source `at`.
fn start(cfg: &ConsulConfig, catalog: Catalog, at: &Serving) -> Found {
    let (out, found) = published(at);
    let watch = Watch { dc: catalog.cfg.datacenter.clone(), catalog, index: 0, pause: Duration::ZERO };
    let every = cfg.refresh_interval.get();
    at.handle.spawn(poll(
        Listed { lister: watch, out },
        at.name.clone(),
        every,
        Backoff::up_to(RETRY_MAX),
        at.cancel.clone(),
    ));
    found
}

/// The catalog watched: the datacenter asked (the agent's own until
/// known), the last answer's index, and how long to wait before the next.
struct Watch {
    catalog: Catalog,
    dc: Option<String>,
    index: u64,
    pause: Duration,
}

impl Lister for Watch {
    fn describe(&self) -> String {
        format!("Consul at {}", crate::client::http::redact_url(&self.catalog.base))
    }

    async fn list(&mut self) -> Result<Vec<Labels>, String> {
        let began = Instant::now();
        let dc = match &self.dc {
            Some(d) => d.clone(),
            None => {
                let d = self.catalog.own_datacenter().await.map_err(|e| e.to_string())?;
                self.dc = Some(d.clone());
                d
            }
        };
        if self.catalog.cfg.agent {
            // The agent API has no blocking query: read again every refresh_interval.
            self.pause = self.catalog.cfg.refresh_interval.get();
            return self.catalog.agent_round(&dc).await.map_err(|e| e.to_string());
        }
        let (found, new_index) = self.catalog.round(self.index, &dc).await.map_err(|e| e.to_string())?;
        let same = new_index == self.index;
        // An index that went backwards (a restored server) starts over.
        self.index = if new_index < self.index { 0 } else { new_index };
        // The blocking query waited for a change: ask again at once, unless it came back with nothing new.
        self.pause = if same { MIN_ROUND.saturating_sub(began.elapsed()) } else { Duration::ZERO };
        Ok(found)
    }

    fn wait(&mut self, _every: Duration) -> impl std::future::Future<Output = ()> + Send {
        tokio::time::sleep(self.pause)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_instance_gets_prometheus_labels() {
        let e: ServiceEntry = serde_json::from_str(
            r#"{"Node":{"Node":"n1","Address":"10.0.0.1","TaggedAddresses":{"lan":"10.0.0.1"},"Meta":{"rack":"r1"}},
                "Service":{"ID":"web-1","Service":"web","Tags":["a","b"],"Address":"","Port":8080,"Meta":{"v":"2"}},
                "Checks":[{"CheckID":"serfHealth","Status":"passing"},{"CheckID":"c","Status":"warning"}]}"#,
        )
        .unwrap();
        let m = target_labels("web", "dc1", ",", &e);
        assert_eq!(m["__address__"], "10.0.0.1:8080");
        assert_eq!(m["__meta_consul_tags"], ",a,b,");
        assert_eq!(m["__meta_consul_health"], "warning");
        assert_eq!(m["__meta_consul_metadata_rack"], "r1");
        assert_eq!(m["__meta_consul_service_metadata_v"], "2");
        assert_eq!(m["__meta_consul_tagged_address_lan"], "10.0.0.1");
        assert_eq!(m["__meta_consul_dc"], "dc1");
        let maint = [Check { check_id: "_node_maintenance".into(), status: "critical".into() }];
        assert_eq!(health(&maint), "maintenance");
        assert_eq!(health(&[]), "passing");
    }
}
