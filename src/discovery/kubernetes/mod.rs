//! Pod metadata for a `kubernetes` source: the pods of this node, watched
//! through the API server, offered to the relabel rules as Promtail's
//! `__meta_kubernetes_*` labels. The files are still found and read by the
//! file machinery (`<root>/<ns>_<pod>_<uid>/<container>/<n>.log`); this
//! module only says, for each file, which pod and container it belongs to.
//!
//! The watch (see [`watch`]) lists the node's pods
//! (`fieldSelector=spec.nodeName=NODE`, with the pod selector of the
//! config), then follows them. Memory holds the node's pods only.
//!
//! A file source's discovery of any role, pod included, is [`discovery`]:
//! its targets' relabelled `__path__` names the files read, as Promtail's
//! file targets (what a converted Promtail job runs).

pub mod api;
pub mod defaults;
pub mod discovery;
pub mod endpoints;
pub mod objects;
pub mod pods;
pub mod roles;
pub mod watch;

use std::sync::Arc;

use api::{Api, Resource};
use pods::Pods;

use super::{Found, Serving};
use crate::config::{KubeRole, KubernetesConfig, SourceConfig, SourceType};

/// The node whose pods role pod watches, and where its name comes from:
/// `node_name`; else the variable `node_name_env` names; else (no
/// `node_name_env`) `$NODE_NAME`, or `$HOSTNAME` where it is not the host
/// name (set on purpose, as Promtail's DaemonSet sets it from
/// `spec.nodeName`; in a pod the runtime's `HOSTNAME` is the pod's name);
/// else this machine's host name.
pub fn node(cfg: &KubernetesConfig) -> (String, String) {
    if let Some(n) = &cfg.node_name {
        return (n.clone(), "kubernetes.node_name".into());
    }
    let var = |name: &str| std::env::var(name).ok().filter(|n| !n.is_empty());
    let host = gethostname::gethostname().to_string_lossy().into_owned();
    if let Some(name) = &cfg.node_name_env {
        return match var(name) {
            Some(n) => (n, format!("${name}")),
            None => (host, format!("the host name (${name} is unset)")),
        };
    }
    if let Some(n) = var("NODE_NAME") {
        return (n, "$NODE_NAME".into());
    }
    match var("HOSTNAME").filter(|h| *h != host) {
        Some(n) => (n, "$HOSTNAME, which is not the host name".into()),
        None => (host, "the host name ($NODE_NAME is unset)".into()),
    }
}

/// The Kubernetes discovery: the pods of this node, watched by tasks on
/// `at.handle` until `at.cancel`, to label the files of a `kubernetes`
/// source; for a file source, the targets of its role (see [`discovery`]).
impl super::Discover for KubernetesConfig {
    fn start(&self, config: &SourceConfig, at: &Serving) -> Result<Found, String> {
        Ok(match config.kind {
            SourceType::Kubernetes => start(config, self.clone(), at),
            _ => discovery::start(config, self, at),
        })
    }
}

/// The pods of this node for the `kubernetes` source `config`.
fn start(config: &SourceConfig, cfg: KubernetesConfig, at: &Serving) -> Found {
    let (name, handle, cancel) = (&at.name, &at.handle, &at.cancel);
    let node = node(&cfg).0;
    let mut pods = Pods::new(config.pod_root(), name.clone(), cfg.wait_for_pod.get());
    if cfg.namespaces.is_some() {
        pods = pods.in_namespaces(discovery::namespaces(&cfg));
    }
    pods = pods.attaching(cfg.attach_metadata);
    let pods = Arc::new(pods);
    let found = Found { targets: pods.clone(), globs: None, include: Vec::new(), remote: None };
    let own = cfg.selectors.iter().find(|s| s.role == KubeRole::Pod);
    let mut field = format!("spec.nodeName={node}");
    if let Some(f) = own.and_then(|s| s.field.as_deref()).filter(|f| !f.is_empty()) {
        field = format!("{field},{f}");
    }
    let res = Resource { path: "/api/v1/pods".into(), label: own.and_then(|s| s.label.clone()), field: Some(field) };
    match Api::new(&cfg) {
        Ok(api) => {
            tracing::info!(source = %name, server = api.server(), node = %node, "watching this node's pods for their metadata");
            if cfg.attach_metadata.node {
                let sel = cfg.selectors.iter().find(|s| s.role == KubeRole::Node);
                let field = match sel.and_then(|s| s.field.as_deref()).filter(|f| !f.is_empty()) {
                    Some(f) => format!("metadata.name={node},{f}"),
                    None => format!("metadata.name={node}"),
                };
                let label = sel.and_then(|s| s.label.clone());
                let nodes = Resource { path: "/api/v1/nodes".into(), label, field: Some(field) };
                handle.spawn(watch::run(api.clone(), nodes, pods.clone(), cancel.clone(), name.clone()));
            }
            if cfg.attach_metadata.namespace {
                let namespaces = Resource { path: "/api/v1/namespaces".into(), label: None, field: None };
                handle.spawn(watch::run(api.clone(), namespaces, pods.clone(), cancel.clone(), name.clone()));
            }
            handle.spawn(watch::run(api, res, pods, cancel.clone(), name.clone()));
        }
        // Every file then waits `wait_for_pod` and ships with its path labels.
        Err(e) => tracing::error!(source = %name, error = %e, "no pod metadata: files ship with their path labels"),
    }
    found
}
