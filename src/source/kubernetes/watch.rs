//! One list-and-watch loop of one resource, kept in a [`Store`].
//!
//! List (with the resource's selectors), then watch from the list's
//! resourceVersion with bookmarks. ADDED and MODIFIED replace an object,
//! DELETED removes it, BOOKMARK moves the version on; a watch the server
//! ends is opened again from the last version; 410 Gone (the version is too
//! old) or an ERROR event lists again. Errors back off (1 s doubling to
//! 30 s) and are logged once per streak.

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::api::{Api, KubeError, Resource, WatchEvent};

const BACKOFF_MIN: Duration = Duration::from_secs(1);
const BACKOFF_MAX: Duration = Duration::from_secs(30);

/// Where a watch keeps the objects it sees.
pub trait Store: Send + Sync {
    /// The whole list, replacing what was known from this resource.
    fn replace(&self, res: &Resource, items: Vec<Value>);
    fn upsert(&self, res: &Resource, object: Value);
    fn remove(&self, res: &Resource, object: Value);
}

/// The resourceVersion of an object (empty when it has none).
fn version_of(o: &Value) -> String {
    o.pointer("/metadata/resourceVersion").and_then(Value::as_str).unwrap_or_default().to_string()
}

/// Keeps `store` current with `res` until cancelled (see the module documentation).
pub async fn run(api: Api, res: Resource, store: Arc<dyn Store>, cancel: CancellationToken, name: Arc<str>) {
    let mut backoff = BACKOFF_MIN;
    let mut failing = false;
    let kind = res.path.rsplit('/').next().unwrap_or_default().to_string();
    let fail = |e: &KubeError, failing: &mut bool| {
        if !*failing {
            tracing::warn!(source = %name, resource = %res.path, error = %e, "cannot watch {kind}; retrying with backoff");
        }
        *failing = true;
    };
    'list: loop {
        if cancel.is_cancelled() {
            return;
        }
        let mut version = match api.list(&res).await {
            Ok(list) => {
                let n = list.items.len();
                store.replace(&res, list.items);
                if failing {
                    tracing::info!(source = %name, resource = %res.path, objects = n, "watching again");
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
            let mut resp = match api.watch(&res, &version).await {
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
                    if ev.kind == "ERROR" {
                        // A Status object: 410 (Gone/Expired) means the version is too old.
                        continue 'list;
                    }
                    let v = version_of(&ev.object);
                    match ev.kind.as_str() {
                        "ADDED" | "MODIFIED" => store.upsert(&res, ev.object),
                        "DELETED" => store.remove(&res, ev.object),
                        "BOOKMARK" => {}
                        _ => continue,
                    }
                    if !v.is_empty() {
                        version = v;
                    }
                }
            }
        }
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
