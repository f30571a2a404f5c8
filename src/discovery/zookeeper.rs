//! Targets from ZooKeeper (`sources[].serverset` and `sources[].nerve`,
//! Promtail's `serverset_sd_configs` and `nerve_sd_configs`), with
//! Prometheus' `__meta_serverset_*` and `__meta_nerve_*` labels.
//!
//! Each znode under `paths` (the paths themselves included) whose data is a
//! member's JSON is a target: a serverset member
//! (`{"serviceEndpoint": {"host", "port"}, "additionalEndpoints": {...},
//! "status", "shard"}`) at its service endpoint, with
//! `__meta_serverset_path`, `_endpoint_host`, `_endpoint_port`,
//! `_endpoint_host_<name>`, `_endpoint_port_<name>`, `_status`, `_shard`; a
//! Nerve member (`{"host", "port", "name"}`) with `__meta_nerve_path`,
//! `_endpoint_host`, `_endpoint_port`, `_endpoint_name`. Other znodes are
//! no target. The trees are read at start, and again whenever ZooKeeper
//! says something under a path changed (a persistent recursive watch, as
//! Prometheus' tree cache watches them) and at least once a minute; a lost
//! session is opened again.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Deserialize;
use zookeeper_client::{AddWatchMode, Client, PersistentWatcher};

use super::{join_host_port, Labels, Lister};
use crate::config::{NerveConfig, ServersetConfig, ZookeeperConfig};
use crate::discovery::sanitize;

/// Which members the znodes hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flavor {
    Serverset,
    Nerve,
}

/// The most znodes read under one path, a bound on a tree grown by mistake.
const MAX_NODES: usize = 100_000;

#[derive(Debug, Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct ServersetMember {
    service_endpoint: Endpoint,
    additional_endpoints: BTreeMap<String, Endpoint>,
    status: String,
    shard: i64,
}

#[derive(Debug, Deserialize, Default)]
#[serde(default)]
struct Endpoint {
    host: String,
    port: i64,
}

#[derive(Debug, Deserialize, Default)]
#[serde(default)]
struct NerveMember {
    host: String,
    port: i64,
    name: String,
}

/// The target of the member at `path` whose data is `data`; None when it is no member.
pub fn member_target(flavor: Flavor, path: &str, data: &[u8]) -> Option<Labels> {
    let mut l = Labels::new();
    match flavor {
        Flavor::Serverset => {
            let m: ServersetMember = serde_json::from_slice(data).ok()?;
            let p = "__meta_serverset_";
            let ep = &m.service_endpoint;
            l.insert("__address__".into(), join_host_port(&ep.host, ep.port));
            l.insert(format!("{p}path"), path.to_string());
            l.insert(format!("{p}endpoint_host"), ep.host.clone());
            l.insert(format!("{p}endpoint_port"), ep.port.to_string());
            for (name, e) in &m.additional_endpoints {
                l.insert(format!("{p}endpoint_host_{}", sanitize(name)), e.host.clone());
                l.insert(format!("{p}endpoint_port_{}", sanitize(name)), e.port.to_string());
            }
            l.insert(format!("{p}status"), m.status);
            l.insert(format!("{p}shard"), m.shard.to_string());
        }
        Flavor::Nerve => {
            let m: NerveMember = serde_json::from_slice(data).ok()?;
            let p = "__meta_nerve_";
            l.insert("__address__".into(), join_host_port(&m.host, m.port));
            l.insert(format!("{p}path"), path.to_string());
            l.insert(format!("{p}endpoint_host"), m.host);
            l.insert(format!("{p}endpoint_port"), m.port.to_string());
            l.insert(format!("{p}endpoint_name"), m.name);
        }
    }
    Some(l)
}

/// How often ZooKeeper's trees are read again without a watch event.
const ZK_EVERY: Duration = Duration::from_secs(60);

// Serverset members as targets (Promtail's `serverset_sd_configs`).
super::lister::listed_kind!(
    ServersetConfig = |c: &ServersetConfig| Ok::<_, String>(Zookeeper::new(c, Flavor::Serverset)),
    every | _ | ZK_EVERY
);

// Nerve members as targets (Promtail's `nerve_sd_configs`).
super::lister::listed_kind!(
    NerveConfig = |c: &NerveConfig| Ok::<_, String>(Zookeeper::new(c, Flavor::Nerve)),
    every | _ | ZK_EVERY
);

/// The ensemble and paths of a `serverset` or `nerve` section.
pub struct Zookeeper {
    cfg: ZookeeperConfig,
    flavor: Flavor,
    session: Option<(Client, Vec<PersistentWatcher>)>,
}

impl Zookeeper {
    pub fn new(cfg: &ZookeeperConfig, flavor: Flavor) -> Self {
        Self { cfg: cfg.clone(), flavor, session: None }
    }

    /// A session with a watch on every path (opened when there is none).
    async fn session(&mut self) -> Result<&Client, String> {
        if self.session.is_none() {
            let cluster = self.cfg.servers.join(",");
            let client = Client::connector()
                .with_session_timeout(self.cfg.timeout.get())
                .connect(&cluster)
                .await
                .map_err(|e| format!("cannot reach ZooKeeper at {cluster}: {e}"))?;
            let mut watchers = Vec::new();
            for p in &self.cfg.paths {
                let w = client
                    .watch(p, AddWatchMode::PersistentRecursive)
                    .await
                    .map_err(|e| format!("cannot watch {p} (ZooKeeper 3.6 or later is needed): {e}"))?;
                watchers.push(w);
            }
            self.session = Some((client, watchers));
        }
        self.session.as_ref().map(|(c, _)| c).ok_or_else(|| "no ZooKeeper session".to_string())
    }
}

/// Every znode at and under `root` with its data (a missing root: none).
async fn tree(client: &Client, root: &str) -> Result<Vec<(String, Vec<u8>)>, zookeeper_client::Error> {
    let mut out = Vec::new();
    let mut todo = vec![root.to_string()];
    while let Some(path) = todo.pop() {
        if out.len() >= MAX_NODES {
            break;
        }
        let data = match client.get_data(&path).await {
            Ok((data, _)) => data,
            Err(zookeeper_client::Error::NoNode) => continue,
            Err(e) => return Err(e),
        };
        match client.get_children(&path).await {
            Ok((children, _)) => {
                let base = path.trim_end_matches('/');
                todo.extend(children.iter().map(|c| format!("{base}/{c}")));
            }
            Err(zookeeper_client::Error::NoNode) => {}
            Err(e) => return Err(e),
        }
        out.push((path, data));
    }
    Ok(out)
}

impl Lister for Zookeeper {
    fn describe(&self) -> String {
        format!("ZooKeeper at {} ({})", self.cfg.servers.join(","), self.cfg.paths.join(", "))
    }

    async fn list(&mut self) -> Result<Vec<Labels>, String> {
        let (flavor, paths) = (self.flavor, self.cfg.paths.clone());
        let client = self.session().await?.clone();
        let mut out = Vec::new();
        for p in &paths {
            let nodes = match tree(&client, p).await {
                Ok(nodes) => nodes,
                Err(e) => {
                    // Read again on a new session next time.
                    self.session = None;
                    return Err(format!("cannot read {p}: {e}"));
                }
            };
            out.extend(nodes.iter().filter_map(|(path, data)| member_target(flavor, path, data)));
        }
        Ok(out)
    }

    async fn wait(&mut self, every: Duration) {
        let limit = every.min(Duration::from_secs(60));
        let Some((_, watchers)) = self.session.as_mut().filter(|(_, w)| !w.is_empty()) else {
            return tokio::time::sleep(limit).await;
        };
        let changed = futures_util::future::select_all(watchers.iter_mut().map(|w| Box::pin(w.changed())));
        let ended = match tokio::time::timeout(limit, changed).await {
            Ok((event, ..)) => event.session_state.is_terminated(),
            Err(_) => false,
        };
        if ended {
            // The watchers give no more events: a new session next time.
            self.session = None;
        }
    }
}
