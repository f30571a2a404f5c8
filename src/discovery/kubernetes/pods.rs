//! The pods of this node as the API server describes them, and the
//! `__meta_kubernetes_*` labels Promtail's `kubernetes_sd_configs` (role
//! pod) gives each of their containers.
//!
//! A log file is matched to its pod by the directory kubelet names
//! `<namespace>_<pod>_<uid>` (a static pod's: its `kubernetes.io/config.hash`
//! annotation in place of the uid) and to its container by the directory
//! below. A file whose pod is not known yet waits up to `wait_for_pod`, then
//! ships with its path labels only, counted (`tailship_file_events_total{event="pod_unknown"}`):
//! a file is never held without bound when the API server is unreachable.
//! A deleted pod stays known for ten minutes (kubelet keeps its logs a while).

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use serde::Deserialize;

pub use super::objects::ObjectMeta;
use crate::config::KubeAttach;
use crate::discovery::sanitize;
use crate::discovery::Targets;
use crate::metrics::Metrics;

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct PodSpec {
    pub node_name: String,
    pub containers: Vec<Container>,
    pub init_containers: Vec<Container>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct Container {
    pub name: String,
    pub image: String,
    pub ports: Vec<ContainerPort>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct ContainerPort {
    pub name: String,
    pub container_port: i64,
    pub protocol: String,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct PodStatus {
    pub phase: String,
    #[serde(rename = "podIP")]
    pub pod_ip: String,
    #[serde(rename = "hostIP")]
    pub host_ip: String,
    pub conditions: Vec<Condition>,
    pub container_statuses: Vec<ContainerStatus>,
    pub init_container_statuses: Vec<ContainerStatus>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Condition {
    #[serde(rename = "type")]
    pub kind: String,
    pub status: String,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct ContainerStatus {
    pub name: String,
    #[serde(rename = "containerID")]
    pub container_id: String,
}

/// A Pod object (the fields the labels need).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct Pod {
    pub metadata: ObjectMeta,
    pub spec: PodSpec,
    pub status: PodStatus,
}

/// Files remembered as waiting, at most, before old ones are forgotten.
const MAX_WAITING: usize = 4096;
const FORGET_AFTER: Duration = Duration::from_secs(600);
/// How long a deleted pod's labels stay known for its files.
const GONE_KEPT: Duration = Duration::from_secs(600);

/// The annotation kubelet names a static pod's log directory by.
const CONFIG_HASH: &str = "kubernetes.io/config.hash";

impl Pod {
    /// The labels of container `container` of this pod (Prometheus' names).
    pub fn meta(&self, container: &str) -> BTreeMap<String, String> {
        let mut l = self.labels();
        let mut put = |k: &str, v: &str| {
            l.insert(format!("__meta_kubernetes_{k}"), v.to_string());
        };
        let (found, init) = match self.spec.containers.iter().find(|c| c.name == container) {
            Some(c) => (Some(c), false),
            None => (self.spec.init_containers.iter().find(|c| c.name == container), true),
        };
        put("pod_container_name", container);
        if let Some(c) = found {
            put("pod_container_image", &c.image);
            put("pod_container_init", if init { "true" } else { "false" });
        }
        let statuses = self.status.container_statuses.iter().chain(&self.status.init_container_statuses);
        if let Some(s) = statuses.into_iter().find(|s| s.name == container) {
            put("pod_container_id", &s.container_id);
        }
        l
    }

    /// The labels of this pod, whatever the container (with its namespace).
    pub fn labels(&self) -> BTreeMap<String, String> {
        let m = &self.metadata;
        let mut l = BTreeMap::new();
        let mut put = |k: &str, v: &str| {
            l.insert(format!("__meta_kubernetes_{k}"), v.to_string());
        };
        put("namespace", &m.namespace);
        put("pod_name", &m.name);
        put("pod_uid", &m.uid);
        put("pod_ip", &self.status.pod_ip);
        put("pod_host_ip", &self.status.host_ip);
        put("pod_node_name", &self.spec.node_name);
        put("pod_phase", &self.status.phase);
        let ready =
            self.status.conditions.iter().find(|c| c.kind == "Ready").map_or("unknown", |c| match c.status.as_str() {
                "True" => "true",
                "False" => "false",
                _ => "unknown",
            });
        put("pod_ready", ready);
        if let Some(o) = m.owner_references.iter().find(|o| o.controller == Some(true)) {
            put("pod_controller_kind", &o.kind);
            put("pod_controller_name", &o.name);
        }
        for (k, v) in &m.labels {
            put(&format!("pod_label_{}", sanitize(k)), v);
            put(&format!("pod_labelpresent_{}", sanitize(k)), "true");
        }
        for (k, v) in &m.annotations {
            put(&format!("pod_annotation_{}", sanitize(k)), v);
            put(&format!("pod_annotationpresent_{}", sanitize(k)), "true");
        }
        l
    }

    /// The key of this pod's log directory: its uid, or a static pod's config hash.
    fn keys(&self) -> Vec<String> {
        let mut k = vec![self.metadata.uid.clone()];
        if let Some(h) = self.metadata.annotations.get(CONFIG_HASH) {
            k.push(h.clone());
        }
        k
    }
}

/// Prometheus' role pod: one target per container and port (a container without ports:
/// one, at the pod's IP), init containers after the others, each with the
/// pod's labels; a pod without an IP (starting, or evicted) has none.
pub fn targets(p: &Pod) -> Vec<BTreeMap<String, String>> {
    let ip = &p.status.pod_ip;
    if ip.is_empty() {
        return Vec::new();
    }
    let g = p.labels();
    let own = p.spec.containers.len();
    let mut out = Vec::new();
    for (i, c) in p.spec.containers.iter().chain(&p.spec.init_containers).enumerate() {
        let init = i >= own;
        let statuses = if init { &p.status.init_container_statuses } else { &p.status.container_statuses };
        let id = statuses.iter().find(|s| s.name == c.name).map_or("", |s| s.container_id.as_str());
        let mut l = g.clone();
        put(&mut l, "__meta_kubernetes_pod_container_name", &c.name);
        put(&mut l, "__meta_kubernetes_pod_container_id", id);
        put(&mut l, "__meta_kubernetes_pod_container_image", &c.image);
        put(&mut l, "__meta_kubernetes_pod_container_init", if init { "true" } else { "false" });
        if c.ports.is_empty() {
            // An IPv6 address in brackets, with no port after it.
            let addr = if ip.contains(':') { format!("[{ip}]") } else { ip.clone() };
            l.insert("__address__".into(), addr);
            out.push(l);
            continue;
        }
        for port in &c.ports {
            let mut l = l.clone();
            l.insert("__address__".into(), crate::discovery::join_host_port(ip, port.container_port));
            put(&mut l, "__meta_kubernetes_pod_container_port_number", &port.container_port.to_string());
            put(&mut l, "__meta_kubernetes_pod_container_port_name", &port.name);
            put(&mut l, "__meta_kubernetes_pod_container_port_protocol", &port.protocol);
            out.push(l);
        }
    }
    out
}

fn put(l: &mut BTreeMap<String, String>, k: &str, v: &str) {
    l.insert(k.to_string(), v.to_string());
}

/// The pods of this node, and the files waiting for theirs.
#[derive(Debug)]
pub struct Pods {
    root: PathBuf,
    source: Arc<str>,
    wait: Duration,
    namespaces: Option<Vec<String>>,
    by_key: RwLock<HashMap<String, Arc<Pod>>>,
    /// Pods deleted (or gone from a new list) lately, and when: kubelet keeps
    /// their logs a while, and a file still read, or rotated, keeps its labels.
    gone: Mutex<HashMap<String, (Arc<Pod>, Instant)>>,
    /// Files whose pod was not known when first looked at, and when.
    waiting: Mutex<HashMap<PathBuf, (Instant, bool)>>,
    /// `attach_metadata`: the node's and the namespaces' metadata are
    /// watched too, and a file waits for them as for its pod.
    attach: KubeAttach,
    nodes: RwLock<HashMap<String, ObjectMeta>>,
    namespace_meta: RwLock<HashMap<String, ObjectMeta>>,
    /// Grows with every change of what is known (see [`Targets::changes`]).
    changes: AtomicU64,
}

impl Pods {
    pub fn new(root: PathBuf, source: Arc<str>, wait: Duration) -> Self {
        Self {
            root,
            source,
            wait,
            namespaces: None,
            by_key: RwLock::default(),
            gone: Mutex::default(),
            waiting: Mutex::default(),
            attach: KubeAttach::default(),
            nodes: RwLock::default(),
            namespace_meta: RwLock::default(),
            changes: AtomicU64::new(0),
        }
    }

    /// Also the labels of each pod's node and namespace (`attach_metadata`).
    pub fn attaching(mut self, attach: KubeAttach) -> Self {
        self.attach = attach;
        self
    }

    /// Adds to `l` the metadata `attach_metadata` asks for; false while some is not known yet.
    fn attached(&self, pod: &Pod, l: &mut BTreeMap<String, String>) -> bool {
        if !self.attach.any() {
            return true;
        }
        let node = if self.attach.node {
            let Some(n) = self.nodes.read().ok().and_then(|m| m.get(&pod.spec.node_name).cloned()) else {
                return false;
            };
            Some(n)
        } else {
            None
        };
        let ns = if self.attach.namespace {
            let Some(n) = self.namespace_meta.read().ok().and_then(|m| m.get(&pod.metadata.namespace).cloned()) else {
                return false;
            };
            Some(n)
        } else {
            None
        };
        super::roles::attach(l, node.as_ref(), ns.as_ref());
        true
    }

    /// Only the pods of these namespaces are targets (`kubernetes.namespaces`);
    /// the logs of the others are not read.
    pub fn in_namespaces(mut self, namespaces: Vec<String>) -> Self {
        self.namespaces = Some(namespaces);
        self
    }

    /// Replaces every pod (after a list).
    pub fn replace(&self, pods: Vec<Pod>) {
        let mut map = HashMap::with_capacity(pods.len());
        for p in pods {
            let p = Arc::new(p);
            for k in p.keys() {
                map.insert(k, p.clone());
            }
        }
        if let Ok(mut g) = self.by_key.write() {
            let old = std::mem::replace(&mut *g, map);
            let vanished: Vec<(String, Arc<Pod>)> = old.into_iter().filter(|(k, _)| !g.contains_key(k)).collect();
            drop(g);
            self.bury(vanished);
        }
    }

    /// Remembers pods that went away for [`GONE_KEPT`], forgetting older ones.
    fn bury(&self, pods: Vec<(String, Arc<Pod>)>) {
        if let Ok(mut gone) = self.gone.lock() {
            gone.retain(|_, (_, at)| at.elapsed() < GONE_KEPT);
            let now = Instant::now();
            for (k, p) in pods {
                gone.insert(k, (p, now));
            }
        }
    }

    pub fn upsert(&self, pod: Pod) {
        let p = Arc::new(pod);
        if let Ok(mut g) = self.by_key.write() {
            for k in p.keys() {
                g.insert(k, p.clone());
            }
        }
    }

    pub fn remove(&self, pod: &Pod) {
        let mut removed = Vec::new();
        if let Ok(mut g) = self.by_key.write() {
            for k in pod.keys() {
                if let Some(p) = g.remove(&k) {
                    removed.push((k, p));
                }
            }
        }
        self.bury(removed);
    }

    fn lookup(&self, key: &str) -> Option<Arc<Pod>> {
        if let Some(p) = self.by_key.read().ok()?.get(key) {
            return Some(p.clone());
        }
        let gone = self.gone.lock().ok()?;
        gone.get(key).filter(|(_, at)| at.elapsed() < GONE_KEPT).map(|(p, _)| p.clone())
    }

    /// Pods known (by uid).
    pub fn len(&self) -> usize {
        self.by_key.read().map(|g| g.values().filter(|p| !p.metadata.uid.is_empty()).count()).unwrap_or(0)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// `<root>/<ns>_<pod>_<key>/<container>/...`: (key, container).
    fn parse(&self, path: &Path) -> Option<(String, String)> {
        let rel = path.strip_prefix(&self.root).ok()?;
        let mut parts = rel.iter().filter_map(|p| p.to_str());
        let dir = parts.next()?;
        let container = parts.next()?;
        let key = dir.rsplit('_').next()?;
        Some((key.to_string(), container.to_string()))
    }
}

impl Targets for Pods {
    fn changes(&self) -> u64 {
        self.changes.load(Ordering::Acquire)
    }

    fn meta(&self, path: &Path) -> Option<BTreeMap<String, String>> {
        if let Some(ns) = &self.namespaces {
            // `<ns>_<pod>_<uid>`: a namespace name has no `_`.
            let dir = path.strip_prefix(&self.root).ok()?.iter().next()?.to_str()?;
            if !ns.iter().any(|n| dir.split('_').next() == Some(n.as_str())) {
                return None;
            }
        }
        let (key, container) = self.parse(path)?;
        let pod = self.lookup(&key);
        // The pod's labels, once its node's and namespace's are known too if asked for.
        let known = pod.as_ref().map(|p| {
            let mut l = p.meta(&container);
            let complete = self.attached(p, &mut l);
            (l, complete)
        });
        if let Some((l, true)) = known {
            if let Ok(mut w) = self.waiting.lock() {
                w.remove(path);
            }
            return Some(l);
        }
        let mut w = self.waiting.lock().ok()?;
        if w.len() > MAX_WAITING {
            // Files asked about once and never again (deleted): forget them.
            w.retain(|_, (since, _)| since.elapsed() < self.wait + FORGET_AFTER);
        }
        let (since, counted) = w.entry(path.to_path_buf()).or_insert_with(|| (Instant::now(), false));
        if since.elapsed() < self.wait {
            return None;
        }
        if !*counted {
            *counted = true;
            if known.is_some() {
                tracing::warn!(source = %self.source, path = %path.display(), waited = ?self.wait,
                    "the metadata of this pod's node or namespace is not known (attach_metadata; RBAC for nodes and namespaces?): it ships with its pod's labels only");
                Metrics::get().file_events.with_label_values(&[&self.source, "metadata_unknown"]).inc();
            } else {
                tracing::warn!(source = %self.source, path = %path.display(), waited = ?self.wait,
                    "no pod known for this log file (API server unreachable, or the pod is gone): it ships with its path labels only");
                Metrics::get().file_events.with_label_values(&[&self.source, "pod_unknown"]).inc();
            }
        }
        Some(known.map(|(l, _)| l).unwrap_or_default())
    }
}

/// The metadata of a node or namespace object.
#[derive(Deserialize)]
struct Named {
    #[serde(default)]
    metadata: ObjectMeta,
}

/// Counts a change of the pods when dropped: after the change is made, on
/// every way out, so a scan the count starts finds what changed.
struct Changed<'a>(&'a Pods);

impl Drop for Changed<'_> {
    fn drop(&mut self) {
        self.0.changes.fetch_add(1, Ordering::Release);
    }
}

impl Pods {
    /// The map a watch of `res` keeps, when it is not the pods' own
    /// (`/api/v1/nodes`, `/api/v1/namespaces`).
    fn metas_of(&self, res: &super::api::Resource) -> Option<&RwLock<HashMap<String, ObjectMeta>>> {
        if res.path.ends_with("/nodes") {
            Some(&self.nodes)
        } else if res.path.ends_with("/namespaces") {
            Some(&self.namespace_meta)
        } else {
            None
        }
    }
}

impl super::watch::Store for Pods {
    fn replace(&self, res: &super::api::Resource, items: Vec<serde_json::Value>) {
        let _counted = Changed(self);
        if let Some(m) = self.metas_of(res) {
            let all = items.into_iter().filter_map(|v| serde_json::from_value::<Named>(v).ok());
            if let Ok(mut g) = m.write() {
                *g = all.map(|n| (n.metadata.name.clone(), n.metadata)).collect();
            }
            return;
        }
        Pods::replace(self, items.into_iter().filter_map(|v| serde_json::from_value(v).ok()).collect());
    }

    fn upsert(&self, res: &super::api::Resource, object: serde_json::Value) {
        let _counted = Changed(self);
        if let Some(m) = self.metas_of(res) {
            if let (Ok(n), Ok(mut g)) = (serde_json::from_value::<Named>(object), m.write()) {
                g.insert(n.metadata.name.clone(), n.metadata);
            }
            return;
        }
        if let Ok(p) = serde_json::from_value(object) {
            Pods::upsert(self, p);
        }
    }

    fn remove(&self, res: &super::api::Resource, object: serde_json::Value) {
        if let Some(m) = self.metas_of(res) {
            if let (Ok(n), Ok(mut g)) = (serde_json::from_value::<Named>(object), m.write()) {
                g.remove(&n.metadata.name);
            }
            return;
        }
        if let Ok(p) = serde_json::from_value::<Pod>(object) {
            Pods::remove(self, &p);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(ip: &str) -> Pod {
        serde_json::from_value(serde_json::json!({
            "metadata": { "name": "web", "namespace": "shop", "uid": "u1" },
            "spec": { "nodeName": "n1",
                      "containers": [{ "name": "app", "image": "app:1", "ports": [
                          { "name": "http", "containerPort": 80, "protocol": "TCP" },
                          { "name": "metrics", "containerPort": 9100, "protocol": "TCP" }] },
                        { "name": "sidecar", "image": "side:1" }],
                      "initContainers": [{ "name": "init", "image": "init:1" }] },
            "status": { "podIP": ip, "containerStatuses": [{ "name": "app", "containerID": "containerd://a" }],
                        "initContainerStatuses": [{ "name": "init", "containerID": "containerd://i" }] }
        }))
        .unwrap()
    }

    fn get<'a>(l: &'a BTreeMap<String, String>, k: &str) -> &'a str {
        l.get(&format!("__meta_kubernetes_{k}")).map_or("", String::as_str)
    }

    #[test]
    fn role_pod_gives_a_target_per_container_port_and_one_per_container_without_ports() {
        let t = pod("10.0.0.5");
        let targets = super::targets(&t);
        let addrs: Vec<&str> = targets.iter().map(|l| l["__address__"].as_str()).collect();
        assert_eq!(addrs, ["10.0.0.5:80", "10.0.0.5:9100", "10.0.0.5", "10.0.0.5"]);
        assert_eq!(get(&targets[1], "pod_container_port_name"), "metrics");
        assert_eq!(get(&targets[0], "pod_container_id"), "containerd://a");
        assert_eq!(get(&targets[2], "pod_container_name"), "sidecar");
        assert_eq!(get(&targets[2], "pod_container_id"), "", "no status: empty, as Prometheus");
        assert_eq!(
            (get(&targets[3], "pod_container_init"), get(&targets[3], "pod_container_id")),
            ("true", "containerd://i")
        );
        assert!(targets.iter().all(|l| get(l, "namespace") == "shop" && get(l, "pod_uid") == "u1"));
    }

    #[test]
    fn a_pod_without_an_ip_has_no_targets_and_an_ipv6_one_is_bracketed() {
        assert!(super::targets(&pod("")).is_empty());
        assert_eq!(super::targets(&pod("fd00::5"))[2]["__address__"], "[fd00::5]");
        assert_eq!(super::targets(&pod("fd00::5"))[0]["__address__"], "[fd00::5]:80");
    }
}
