//! Pod metadata for a `kubernetes` source: the pods of this node, watched
//! through the API server, offered to the relabel rules as Promtail's
//! `__meta_kubernetes_*` labels. The files are still found and read by the
//! file machinery (`<root>/<ns>_<pod>_<uid>/<container>/<n>.log`); this
//! module only says, for each file, which pod and container it belongs to.
//!
//! The watch: list the node's pods (`fieldSelector=spec.nodeName=NODE`),
//! then watch from the list's resourceVersion with bookmarks. ADDED and
//! MODIFIED replace a pod, DELETED removes it, BOOKMARK moves the version on;
//! a watch the server ends is opened again from the last version; 410 Gone
//! (the version is too old) lists again. Errors back off (1 s doubling to
//! 30 s) and are logged once per streak. Memory holds the node's pods only.

pub mod api;
pub mod defaults;
pub mod pods;

use std::sync::Arc;
use std::time::Duration;

use api::{Api, KubeError, WatchEvent};
use pods::{Pod, Pods};
use tokio_util::sync::CancellationToken;

use super::SourceSpec;

const BACKOFF_MIN: Duration = Duration::from_secs(1);
const BACKOFF_MAX: Duration = Duration::from_secs(30);

/// `spec` with its files labelled from the pods of this node, watched by a
/// task on `handle` until `cancel`; unchanged without `kubernetes` metadata.
pub fn attach(
    spec: &SourceSpec,
    name: &Arc<str>,
    handle: &tokio::runtime::Handle,
    cancel: &CancellationToken,
) -> SourceSpec {
    let mut spec = spec.clone();
    let Some(cfg) = spec.config.kubernetes.clone() else { return spec };
    let node = cfg
        .node_name
        .clone()
        .or_else(|| std::env::var("NODE_NAME").ok().filter(|n| !n.is_empty()))
        .unwrap_or_else(|| gethostname::gethostname().to_string_lossy().into_owned());
    let pods = Arc::new(Pods::new(spec.config.pod_root(), name.clone(), cfg.wait_for_pod.get()));
    spec.labels.targets = Some(pods.clone());
    match Api::new(&cfg, node.clone()) {
        Ok(api) => {
            tracing::info!(source = %name, server = api.server(), node = %node, "watching this node's pods for their metadata");
            handle.spawn(watch(api, pods, cancel.clone(), name.clone()));
        }
        // Every file then waits `wait_for_pod` and ships with its path labels.
        Err(e) => tracing::error!(source = %name, error = %e, "no pod metadata: files ship with their path labels"),
    }
    spec
}

/// Keeps `pods` current until cancelled (see the module documentation).
async fn watch(api: Api, pods: Arc<Pods>, cancel: CancellationToken, name: Arc<str>) {
    let mut backoff = BACKOFF_MIN;
    let mut failing = false;
    let fail = |e: &KubeError, failing: &mut bool| {
        if !*failing {
            tracing::warn!(source = %name, error = %e, "cannot watch pods; retrying with backoff");
        }
        *failing = true;
    };
    'list: loop {
        if cancel.is_cancelled() {
            return;
        }
        let mut version = match api.list().await {
            Ok(list) => {
                pods.replace(list.items);
                if failing {
                    tracing::info!(source = %name, pods = pods.len(), "pod metadata available again");
                }
                (failing, backoff) = (false, BACKOFF_MIN);
                list.metadata.resource_version
            }
            Err(e) => {
                fail(&e, &mut failing);
                if !pause(&cancel, &mut backoff).await {
                    return;
                }
                continue;
            }
        };
        loop {
            let mut resp = match api.watch(&version).await {
                Ok(r) => r,
                Err(KubeError::Gone) => continue 'list,
                Err(e) => {
                    fail(&e, &mut failing);
                    if !pause(&cancel, &mut backoff).await {
                        return;
                    }
                    continue 'list;
                }
            };
            let mut buf: Vec<u8> = Vec::new();
            loop {
                let chunk = tokio::select! {
                    _ = cancel.cancelled() => return,
                    c = resp.chunk() => c,
                };
                let bytes = match chunk {
                    Ok(Some(b)) => b,
                    // The server ended the watch (timeoutSeconds): go on from the last version.
                    Ok(None) => break,
                    Err(e) => {
                        fail(&KubeError::Unreachable(e), &mut failing);
                        break;
                    }
                };
                buf.extend_from_slice(&bytes);
                while let Some(nl) = buf.iter().position(|&b| b == b'\n') {
                    let line: Vec<u8> = buf.drain(..=nl).collect();
                    if line.iter().all(u8::is_ascii_whitespace) {
                        continue;
                    }
                    let ev: WatchEvent = match serde_json::from_slice(&line) {
                        Ok(ev) => ev,
                        Err(e) => {
                            tracing::warn!(source = %name, error = %e, "a watch event that is not JSON; listing again");
                            continue 'list;
                        }
                    };
                    match apply(&pods, ev) {
                        Step::Version(v) => version = v,
                        Step::Same => {}
                        Step::Relist => continue 'list,
                    }
                }
            }
        }
    }
}

enum Step {
    Version(String),
    Same,
    Relist,
}

fn apply(pods: &Pods, ev: WatchEvent) -> Step {
    if ev.kind == "ERROR" {
        // A Status object: 410 (Gone/Expired) means the version is too old.
        return Step::Relist;
    }
    let Ok(pod) = serde_json::from_value::<Pod>(ev.object) else { return Step::Same };
    let version = pod.metadata.resource_version.clone();
    match ev.kind.as_str() {
        "ADDED" | "MODIFIED" => pods.upsert(pod),
        "DELETED" => pods.remove(&pod),
        "BOOKMARK" => {}
        _ => return Step::Same,
    }
    if version.is_empty() {
        Step::Same
    } else {
        Step::Version(version)
    }
}

/// Waits the current backoff (then doubles it); false when cancelled.
async fn pause(cancel: &CancellationToken, backoff: &mut Duration) -> bool {
    let wait = *backoff;
    *backoff = (*backoff * 2).min(BACKOFF_MAX);
    tokio::select! {
        _ = cancel.cancelled() => false,
        _ = tokio::time::sleep(wait) => true,
    }
}
