//! Docker's containers, found through the Engine API (`client::docker`),
//! with the `__meta_docker_*` labels Promtail's `docker_sd_configs` gives
//! them ([`targets`]). The agent starts this discovery (`DockerConfig`'s
//! `Discover`) for a
//! `docker` source as any other, and the source (`source/docker/`) reads
//! what it found: from disk for a local Engine (the containers' json-file
//! logs, [`Found::include`] and [`Found::targets`]), or through the API for
//! an Engine elsewhere ([`Found::remote`], a [`RemoteEngine`]: the Engine
//! and its containers with their labels, listed on request).
//!
//! How the list is kept current: [`watch`] follows the Engine's event
//! stream and lists again after each container event, and in full every
//! `refresh_interval` (a [`Discovery`] whose wait is the event stream); when
//! the Engine cannot be reached it says so once, backs off (1 s doubling to
//! 30 s) and tries again. Stopped containers stay listed (`all=1`), so a log
//! is read to its end after its container stopped.

pub mod targets;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use targets::{meta_labels, network_labels, Containers};
use tokio_util::sync::CancellationToken;

use super::poll::{poll, Backoff, Discovery};
use super::{Found, Serving};
use crate::client::docker::{take_events, ApiError, Engine, BACKOFF_MAX, ENGINE};
use crate::config::{DockerConfig, DockerHost, SourceConfig};

/// The Docker discovery of a docker source whose Engine is local: the
/// containers whose json-file logs are read from disk, and the glob of
/// those logs (`<DockerRootDir>/containers/*/*-json.log`); of one whose
/// Engine is elsewhere, the [`RemoteEngine`].
impl super::Discover for DockerConfig {
    /// An Engine elsewhere: its [`RemoteEngine`], nothing started (the
    /// source lists its containers as its readers need). A local one:
    /// asks the Engine where it keeps its data (`GET /info`; when it cannot
    /// be reached it says so once and tries again with backoff, blocking
    /// this thread until it answers or `at.cancel`), lists the containers
    /// once (the files of running containers are known before the source's
    /// first scan), then keeps the list current with a task on `at.handle`.
    fn start(&self, _: &SourceConfig, at: &Serving) -> Result<Found, String> {
        let cfg = self;
        let engine = Engine::new(cfg).map_err(|e| e.to_string())?;
        let socket = match cfg.endpoint()? {
            DockerHost::Socket(s) => s,
            DockerHost::Url(_) => {
                let remote = RemoteEngine { engine, cfg: cfg.clone() };
                let targets = Arc::new(Containers::default());
                return Ok(Found { targets, globs: None, include: Vec::new(), remote: Some(remote) });
            }
        };
        let (name, handle, cancel) = (&at.name, &at.handle, &at.cancel);
        let containers = Arc::new(Containers::default());
        let mut found = Found { targets: containers.clone(), globs: None, include: Vec::new(), remote: None };
        let mut backoff = Backoff::up_to(BACKOFF_MAX);
        let root = loop {
            match handle.block_on(engine.info()) {
                Ok(info) => break info.root_dir,
                Err(e) => {
                    backoff.failed(name, ENGINE, &e);
                    if !handle.block_on(backoff.wait(cancel)) {
                        return Ok(found);
                    }
                }
            }
        };
        backoff.recovered(name, ENGINE);
        let mut known = HashMap::new();
        if let Err(e) = handle.block_on(refresh(&engine, cfg, &containers, &mut known, name)) {
            tracing::warn!(source = %name, error = %e, "cannot list the Docker Engine's containers yet; retrying");
        }
        handle.spawn(watch(engine, cfg.clone(), containers.clone(), known, cancel.clone(), name.clone()));
        let glob = format!("{}/containers/*/*-json.log", root.display());
        tracing::info!(source = %name, socket = %socket.display(), logs = %glob, containers = containers.len(),
            "docker source: reading the json-file logs of the Engine's containers");
        found.include.push(glob);
        Ok(found)
    }
}

/// An Engine reached over the network (`tcp://`, `http(s)://`), whose
/// containers' logs are read through its API: the Engine, and its
/// containers with their `__meta_docker_*` labels, listed on request.
#[derive(Debug, Clone)]
pub struct RemoteEngine {
    engine: Engine,
    cfg: DockerConfig,
}

/// A container of a [`RemoteEngine`].
#[derive(Debug, Clone)]
pub struct Container {
    pub id: String,
    /// Running now (a stopped one's log is read to its end once).
    pub running: bool,
    /// Its `__meta_docker_*` labels and `__address__`.
    pub meta: BTreeMap<String, String>,
}

impl RemoteEngine {
    /// The Engine, for its events and the containers' logs.
    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    /// Every container the filters select, running or stopped, with its labels.
    pub async fn containers(&self) -> Result<Vec<Container>, ApiError> {
        let listed = self.engine.containers().await?;
        let nets = network_labels(&self.engine.networks().await?);
        Ok(listed
            .into_iter()
            .map(|c| {
                let meta = meta_labels(&c, &nets, &self.cfg);
                Container { running: c.state == "running", meta, id: c.id }
            })
            .collect())
    }
}

/// Lists the containers and replaces `containers` with those whose log can
/// be read from disk. `known` caches each container's log path (None: a log
/// driver other than json-file, said once).
async fn refresh(
    engine: &Engine,
    cfg: &DockerConfig,
    containers: &Containers,
    known: &mut HashMap<String, Option<PathBuf>>,
    name: &str,
) -> Result<(), ApiError> {
    let listed = engine.containers().await?;
    let nets = network_labels(&engine.networks().await?);
    let mut found = Vec::with_capacity(listed.len());
    let mut live = HashSet::with_capacity(listed.len());
    for c in listed {
        live.insert(c.id.clone());
        let log = match known.get(&c.id) {
            Some(p) => p.clone(),
            None => {
                let i = match engine.inspect(&c.id).await {
                    Ok(i) => i,
                    // Removed since the list: gone.
                    Err(ApiError::Status { status: 404, .. }) => continue,
                    Err(e) => return Err(e),
                };
                let driver = i.host_config.log_config.kind;
                if driver == "json-file" && i.log_path.is_empty() {
                    // Created, never started: no log yet; look again next time.
                    continue;
                }
                let path = (driver == "json-file").then(|| PathBuf::from(i.log_path));
                if path.is_none() {
                    tracing::warn!(source = name, container = %c.names.first().unwrap_or(&c.id), driver = %driver,
                        "container's log driver is not json-file: its log cannot be read from disk, and is not shipped");
                }
                known.insert(c.id.clone(), path.clone());
                path
            }
        };
        if let Some(p) = log {
            found.push((p, meta_labels(&c, &nets, cfg)));
        }
    }
    known.retain(|id, _| live.contains(id));
    containers.replace(found);
    Ok(())
}

/// Keeps `containers` current until cancelled (see the module documentation).
async fn watch(
    engine: Engine,
    cfg: DockerConfig,
    containers: Arc<Containers>,
    known: HashMap<String, Option<PathBuf>>,
    cancel: CancellationToken,
    name: Arc<str>,
) {
    let every = cfg.refresh_interval.get();
    let events = Events { engine, cfg, containers, known, name: name.clone(), stream: None, buf: Vec::new() };
    poll(events, name, every, Backoff::up_to(BACKOFF_MAX), cancel).await;
}

/// The Engine's containers and its event stream.
struct Events {
    engine: Engine,
    cfg: DockerConfig,
    containers: Arc<Containers>,
    known: HashMap<String, Option<PathBuf>>,
    name: Arc<str>,
    stream: Option<reqwest::Response>,
    buf: Vec<u8>,
}

impl Discovery for Events {
    fn describe(&self) -> String {
        ENGINE.into()
    }

    /// Lists the containers, the event stream opening meanwhile: nothing happens unseen.
    async fn refresh(&mut self) -> Result<(), String> {
        let listed = refresh(&self.engine, &self.cfg, &self.containers, &mut self.known, &self.name);
        let (events, listed) = tokio::join!(self.engine.events(), listed);
        listed.map_err(|e| e.to_string())?;
        self.stream = Some(events.map_err(|e| e.to_string())?);
        self.buf.clear();
        Ok(())
    }

    /// Lists again after each container event, until the stream ends, a
    /// list fails or `every` is over (then the poller lists in full).
    async fn wait(&mut self, every: Duration) {
        let Some(mut stream) = self.stream.take() else { return };
        let full_list_at = tokio::time::Instant::now() + every;
        loop {
            tokio::select! {
                _ = tokio::time::sleep_until(full_list_at) => return,
                chunk = stream.chunk() => match chunk {
                    Ok(Some(bytes)) => {
                        let changed = take_events(&mut self.buf, &bytes).iter().any(|e| e.changes_containers());
                        if changed && refresh(&self.engine, &self.cfg, &self.containers, &mut self.known, &self.name).await.is_err() {
                            return;
                        }
                    }
                    Ok(None) | Err(_) => {
                        tracing::info!(source = %self.name, "the Docker Engine's event stream ended; listing again");
                        return;
                    }
                },
            }
        }
    }
}
