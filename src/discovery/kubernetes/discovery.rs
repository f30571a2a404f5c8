//! Kubernetes discovery for a file source (`kubernetes.role` pod, node,
//! service, endpoints, endpointslice or ingress), as Promtail's file targets
//! of `kubernetes_sd_configs`: the objects of the role are listed and watched
//! (with the config's `namespaces` and `selectors`); each makes targets
//! with Prometheus' `__meta_kubernetes_*` labels ([`super::roles`]); the
//! source's relabel rules run once per target, and a target they keep and
//! give a `__path__` (a glob; `__path_exclude__` too) names files, read with
//! the target's labels (labels starting `__` removed, `filename` added).
//!
//! A change of the objects takes effect at the source's next scan, as
//! `targets_from` does: a new target's files are opened, and files no target
//! names any more are read to their end and closed. While the API server
//! cannot be reached, the last known targets stay; none are offered before
//! every resource watched has been listed once.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};

use serde_json::Value;
use tokio::sync::Notify;

use super::api::{Api, Resource};
use super::endpoints;
use super::objects::{EndpointSlice, Endpoints, ObjectMeta};
use super::roles::{self, Labels};
use super::watch::{self, Store};
use crate::config::{KubeAttach, KubeRole, KubernetesConfig, SourceConfig, SERVICE_ACCOUNT_DIR};
use crate::discovery::publish::{Published, SdTargets};
use crate::discovery::{Found, LiveGlobs, Serving};

/// The objects of one kind, by (namespace, uid).
type ByKey = BTreeMap<(String, String), Value>;

/// The objects seen, by resource kind (`nodes`, `services`, ...), then by
/// key; and the resources listed at least once, of the `watched`.
#[derive(Default)]
struct Objects {
    by_kind: Mutex<BTreeMap<&'static str, ByKey>>,
    listed: Mutex<BTreeSet<String>>,
    watched: BTreeSet<String>,
    changed: Notify,
}

/// How long the first lists may take before the resources not listed yet
/// are named in a warning.
const HELD_WARNING: std::time::Duration = std::time::Duration::from_secs(10);

/// The kind of a resource path (its last segment).
fn kind_of(res: &Resource) -> &'static str {
    ["pods", "nodes", "services", "endpoints", "endpointslices", "ingresses", "namespaces"]
        .into_iter()
        .find(|k| res.path.ends_with(&format!("/{k}")))
        .unwrap_or("other")
}

/// An object's key in its kind: (namespace, uid or name); the namespace
/// tells a namespaced watch's own objects when it lists again.
fn key_of(o: &Value) -> (String, String) {
    let s = |p: &str| o.pointer(p).and_then(Value::as_str).unwrap_or_default().to_string();
    let uid = s("/metadata/uid");
    (s("/metadata/namespace"), if uid.is_empty() { s("/metadata/name") } else { uid })
}

/// The namespace a namespaced path watches (`/.../namespaces/NS/KIND`).
fn namespace_of(res: &Resource) -> Option<&str> {
    let mut parts = res.path.rsplit('/');
    parts.next();
    let ns = parts.next()?;
    (parts.next() == Some("namespaces")).then_some(ns)
}

impl Store for Objects {
    fn replace(&self, res: &Resource, items: Vec<Value>) {
        if let Ok(mut g) = self.by_kind.lock() {
            let m = g.entry(kind_of(res)).or_default();
            match namespace_of(res) {
                Some(ns) => m.retain(|(n, _), _| n != ns),
                None => m.clear(),
            }
            m.extend(items.into_iter().map(|o| (key_of(&o), o)));
        }
        if let Ok(mut l) = self.listed.lock() {
            l.insert(res.path.clone());
        }
        self.changed.notify_one();
    }

    fn upsert(&self, res: &Resource, object: Value) {
        if let Ok(mut g) = self.by_kind.lock() {
            g.entry(kind_of(res)).or_default().insert(key_of(&object), object);
        }
        self.changed.notify_one();
    }

    fn remove(&self, res: &Resource, object: Value) {
        if let Ok(mut g) = self.by_kind.lock() {
            g.entry(kind_of(res)).or_default().remove(&key_of(&object));
        }
        self.changed.notify_one();
    }
}

impl Objects {
    /// Whether every resource watched has been listed: until then the
    /// targets are not offered, as Prometheus waits for its informers'
    /// caches (an endpoint listed before its pods and services would make
    /// a target without their labels, and its first lines would ship so).
    fn all_listed(&self) -> bool {
        // Only watched resources are ever listed: counting is enough, at every event.
        self.listed.lock().is_ok_and(|l| l.len() >= self.watched.len())
    }

    /// The resources watched that have not been listed yet.
    fn unlisted(&self) -> Vec<String> {
        match self.listed.lock() {
            Ok(l) => self.watched.difference(&l).cloned().collect(),
            Err(_) => self.watched.iter().cloned().collect(),
        }
    }

    /// Every object of `kind`, typed (objects that do not parse are skipped).
    fn all<T: serde::de::DeserializeOwned>(&self, kind: &str) -> Vec<T> {
        let Ok(g) = self.by_kind.lock() else { return Vec::new() };
        g.get(kind).map(|m| m.values().filter_map(|v| T::deserialize(v).ok()).collect()).unwrap_or_default()
    }

    /// The metadata of the objects of `kind` (not namespaced) by name.
    fn metas(&self, kind: &str) -> BTreeMap<String, ObjectMeta> {
        #[derive(serde::Deserialize)]
        struct Named {
            #[serde(default)]
            metadata: ObjectMeta,
        }
        self.all::<Named>(kind).into_iter().map(|n| (n.metadata.name.clone(), n.metadata)).collect()
    }

    /// The targets of `role` now, with the metadata `attach` asks for.
    fn targets(&self, role: KubeRole, attach: KubeAttach) -> Vec<Labels> {
        let mut found = self.targets_of(role);
        if attach.any() {
            let nodes = if attach.node { self.metas("nodes") } else { BTreeMap::new() };
            let namespaces = if attach.namespace { self.metas("namespaces") } else { BTreeMap::new() };
            for l in &mut found {
                let node = roles::node_of(l).and_then(|n| nodes.get(n)).cloned();
                let ns = l.get("__meta_kubernetes_namespace").and_then(|n| namespaces.get(n)).cloned();
                roles::attach(l, node.as_ref(), ns.as_ref());
            }
        }
        found
    }

    fn targets_of(&self, role: KubeRole) -> Vec<Labels> {
        match role {
            KubeRole::Node => self.all("nodes").iter().flat_map(roles::node).collect(),
            KubeRole::Service => self.all("services").iter().flat_map(roles::service).collect(),
            KubeRole::Ingress => self.all("ingresses").iter().flat_map(roles::ingress).collect(),
            KubeRole::Endpoints => {
                let (pods, services) = (self.all("pods"), self.all("services"));
                let eps: Vec<Endpoints> = self.all("endpoints");
                eps.iter().flat_map(|e| endpoints::endpoints(e, &pods, &services)).collect()
            }
            KubeRole::EndpointSlice => {
                let (pods, services) = (self.all("pods"), self.all("services"));
                let eps: Vec<EndpointSlice> = self.all("endpointslices");
                eps.iter().flat_map(|e| endpoints::endpointslice(e, &pods, &services)).collect()
            }
            KubeRole::Pod => self.all("pods").iter().flat_map(super::pods::targets).collect(),
        }
    }
}

/// The resources `cfg` watches: its role's (and, for endpoints and
/// endpointslice, pods and services), in each of its namespaces; for role
/// pod, the pods of `node` only (as Promtail asks for them).
pub fn resources(cfg: &KubernetesConfig, node: Option<&str>) -> Vec<Resource> {
    let kinds: &[(KubeRole, &str, &str)] = match cfg.role {
        KubeRole::Node => &[(KubeRole::Node, "/api/v1", "nodes")],
        KubeRole::Service => &[(KubeRole::Service, "/api/v1", "services")],
        KubeRole::Ingress => &[(KubeRole::Ingress, "/apis/networking.k8s.io/v1", "ingresses")],
        KubeRole::Endpoints => &[
            (KubeRole::Endpoints, "/api/v1", "endpoints"),
            (KubeRole::Pod, "/api/v1", "pods"),
            (KubeRole::Service, "/api/v1", "services"),
        ],
        KubeRole::EndpointSlice => &[
            (KubeRole::EndpointSlice, "/apis/discovery.k8s.io/v1", "endpointslices"),
            (KubeRole::Pod, "/api/v1", "pods"),
            (KubeRole::Service, "/api/v1", "services"),
        ],
        KubeRole::Pod => &[(KubeRole::Pod, "/api/v1", "pods")],
    };
    let namespaces = namespaces(cfg);
    let mut out = Vec::new();
    if cfg.attach_metadata.node && cfg.role != KubeRole::Node {
        let sel = cfg.selectors.iter().find(|s| s.role == KubeRole::Node);
        let (label, field) = (sel.and_then(|s| s.label.clone()), sel.and_then(|s| s.field.clone()));
        out.push(Resource { path: "/api/v1/nodes".into(), label, field });
    }
    if cfg.attach_metadata.namespace {
        out.push(Resource { path: "/api/v1/namespaces".into(), label: None, field: None });
    }
    for (role, prefix, kind) in kinds {
        let sel = cfg.selectors.iter().find(|s| s.role == *role);
        let (label, mut field) = (sel.and_then(|s| s.label.clone()), sel.and_then(|s| s.field.clone()));
        if let (KubeRole::Pod, KubeRole::Pod, Some(node)) = (cfg.role, role, node) {
            let own = format!("spec.nodeName={node}");
            field = Some(match field.filter(|f| !f.is_empty()) {
                Some(f) if f.split(',').any(|s| s == own) => f,
                Some(f) => format!("{f},{own}"),
                None => own,
            });
        }
        if namespaces.is_empty() || *role == KubeRole::Node {
            out.push(Resource { path: format!("{prefix}/{kind}"), label, field });
        } else {
            for ns in &namespaces {
                out.push(Resource {
                    path: format!("{prefix}/namespaces/{ns}/{kind}"),
                    label: label.clone(),
                    field: field.clone(),
                });
            }
        }
    }
    out
}

/// The namespaces of `cfg.namespaces` (`names`, and the agent's own with
/// `own_namespace`); empty: every namespace.
pub fn namespaces(cfg: &KubernetesConfig) -> Vec<String> {
    let mut namespaces: Vec<String> = Vec::new();
    if let Some(ns) = &cfg.namespaces {
        namespaces.extend(ns.names.iter().cloned());
        if ns.own_namespace {
            match std::fs::read_to_string(std::path::Path::new(SERVICE_ACCOUNT_DIR).join("namespace")) {
                Ok(own) => namespaces.push(own.trim().to_string()),
                Err(e) => {
                    tracing::warn!(error = %e, "namespaces.own_namespace: cannot read the service account's namespace")
                }
            }
        }
    }
    namespaces.sort();
    namespaces.dedup();
    namespaces
}

/// The targets of `cfg`'s role for the source `config`, kept current by
/// tasks on `at.handle` until `at.cancel` (see the module documentation).
pub fn start(config: &SourceConfig, cfg: &KubernetesConfig, at: &Serving) -> Found {
    let (name, handle, cancel) = (&at.name, &at.handle, &at.cancel);
    let targets = Arc::new(SdTargets::relabelled());
    let live = Arc::new(LiveGlobs::default());
    let found = Found { targets: targets.clone(), globs: Some(live.clone()), include: Vec::new(), remote: None };
    let api = match Api::new(cfg) {
        Ok(api) => api,
        Err(e) => {
            tracing::error!(source = %name, error = %e, "no Kubernetes discovery: the source reads nothing");
            return found;
        }
    };
    let node = (cfg.role == KubeRole::Pod).then(|| super::node(cfg).0);
    let resources = resources(cfg, node.as_deref());
    let watched = resources.iter().map(|r| r.path.clone()).collect();
    let objects = Arc::new(Objects { watched, ..Objects::default() });
    match &node {
        Some(node) => {
            tracing::info!(source = %name, server = api.server(), role = cfg.role.as_str(), node = %node, resources = resources.len(), "discovering targets")
        }
        None => {
            tracing::info!(source = %name, server = api.server(), role = cfg.role.as_str(), resources = resources.len(), "discovering targets")
        }
    }
    for res in resources {
        handle.spawn(watch::run(api.clone(), res, objects.clone(), cancel.clone(), name.clone()));
    }
    let (role, attach) = (cfg.role, cfg.attach_metadata);
    let mut out = Published::new(name.clone(), at.rules.clone(), targets, live).relabelled(config.labels.clone());
    if let Some(node) = node {
        out = out.on_host(node);
    }
    let cancel = cancel.clone();
    let name = name.clone();
    handle.spawn(async move {
        // Said once, when the first lists take long: which ones hold the targets back.
        let held = tokio::time::sleep(HELD_WARNING);
        tokio::pin!(held);
        let mut warned = false;
        loop {
            tokio::select! {
                _ = cancel.cancelled() => return,
                _ = objects.changed.notified() => {}
                _ = &mut held, if !warned => {
                    warned = true;
                    let unlisted = objects.unlisted();
                    if !unlisted.is_empty() {
                        tracing::warn!(source = %name, waiting_for = %unlisted.join(", "), "no Kubernetes targets until every resource the role needs has been listed once; the service account may lack `list` on it");
                    }
                    continue;
                }
            }
            if !objects.all_listed() {
                continue;
            }
            out.offer(objects.targets(role, attach), "Kubernetes", &mut |name, _, e| {
                tracing::warn!(source = %name, error = %e, "a target's __path__ or __path_exclude__ is no glob; left out")
            });
        }
    });
    found
}
