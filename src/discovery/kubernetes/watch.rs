//! One list-and-watch loop of one resource, kept in a [`Store`].
//!
//! List (with the resource's selectors), then watch from the list's
//! resourceVersion with bookmarks. ADDED and MODIFIED replace an object,
//! DELETED removes it, BOOKMARK moves the version on; a watch the server
//! ends is opened again from the last version; 410 Gone (the version is too
//! old) or an ERROR event lists again. It is a [`Discovery`] run by the one
//! poller: errors back off (1 s doubling to 30 s) and are logged once per
//! streak.

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::api::{Api, KubeError, Resource, WatchEvent};
use crate::discovery::poll::{poll, Backoff, Discovery};

/// The longest watch event kept while its end is awaited (an object of the
/// API; a pod is a few KiB).
const MAX_EVENT: usize = crate::client::read::Cap::Discovery.bytes();

/// Failed lists and watches back off up to this.
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

/// Keeps `store` current with `res` until cancelled (see the module
/// documentation), through the one poller of discoveries.
pub async fn run(api: Api, res: Resource, store: Arc<dyn Store>, cancel: CancellationToken, name: Arc<str>) {
    let kind = res.path.rsplit('/').next().unwrap_or_default().to_string();
    let watch = ListWatch { api, res, kind, store, version: None, stream: None, buf: Vec::new(), lost: None };
    poll(watch, name, BACKOFF_MAX, Backoff::up_to(BACKOFF_MAX), cancel).await;
}

/// One resource's list and watch: the version seen last (None: list
/// again), the watch open, and why the last one was lost.
struct ListWatch {
    api: Api,
    res: Resource,
    kind: String,
    store: Arc<dyn Store>,
    version: Option<String>,
    stream: Option<reqwest::Response>,
    buf: Vec<u8>,
    lost: Option<KubeError>,
}

impl Discovery for ListWatch {
    fn describe(&self) -> String {
        format!("the Kubernetes API server {} (watching {})", self.api.server(), self.kind)
    }

    /// Lists when no version is known, then opens the watch from it.
    async fn refresh(&mut self) -> Result<(), String> {
        if let Some(e) = self.lost.take() {
            return Err(e.to_string());
        }
        loop {
            let version = match &self.version {
                Some(v) => v.clone(),
                None => {
                    let list = self.api.list(&self.res).await.map_err(|e| e.to_string())?;
                    self.store.replace(&self.res, list.items);
                    self.version = Some(list.metadata.resource_version.clone());
                    list.metadata.resource_version
                }
            };
            match self.api.watch(&self.res, &version).await {
                Ok(r) => {
                    self.stream = Some(r);
                    self.buf.clear();
                    return Ok(());
                }
                // The version is too old: list again.
                Err(KubeError::Gone) => self.version = None,
                Err(e) => return Err(e.to_string()),
            }
        }
    }

    /// Applies the watch's events until it ends (then it is opened again
    /// from the last version) or says to list again.
    async fn wait(&mut self, _every: Duration) {
        let Some(resp) = self.stream.as_mut() else { return };
        loop {
            let bytes = match resp.chunk().await {
                Ok(Some(b)) => b,
                // The server ended the watch (timeoutSeconds): go on from the last version.
                Ok(None) => break,
                Err(e) => {
                    self.lost = Some(KubeError::Unreachable(e));
                    break;
                }
            };
            self.buf.extend_from_slice(&bytes);
            if !apply_events(&mut self.buf, &self.res, &*self.store, &mut self.version) {
                break;
            }
            if self.buf.len() > MAX_EVENT {
                // An event that never ends: the server (or what stands in
                // between) is broken; list again rather than grow.
                tracing::warn!(resource = %self.res.path, "a watch event larger than {} MiB; listing again", MAX_EVENT >> 20);
                self.buf.clear();
                self.version = None;
                break;
            }
        }
        self.stream = None;
    }
}

/// Applies the whole events in `buf` to `store`, moving `version` on;
/// false (and no version: list again) on an ERROR event or one that is no JSON.
fn apply_events(buf: &mut Vec<u8>, res: &Resource, store: &dyn Store, version: &mut Option<String>) -> bool {
    while let Some(nl) = buf.iter().position(|&b| b == b'\n') {
        let line: Vec<u8> = buf.drain(..=nl).collect();
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let ev: WatchEvent = match serde_json::from_slice(&line) {
            Ok(ev) => ev,
            Err(e) => {
                tracing::warn!(resource = %res.path, error = %e, "a watch event that is not JSON; listing again");
                *version = None;
                return false;
            }
        };
        if ev.kind == "ERROR" {
            // A Status object: 410 (Gone/Expired) means the version is too old.
            *version = None;
            return false;
        }
        let v = version_of(&ev.object);
        match ev.kind.as_str() {
            "ADDED" | "MODIFIED" => store.upsert(res, ev.object),
            "DELETED" => store.remove(res, ev.object),
            "BOOKMARK" => {}
            _ => continue,
        }
        if !v.is_empty() {
            *version = Some(v);
        }
    }
    true
}
