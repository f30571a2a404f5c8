//! The `docker` source: the containers of a Docker Engine, found through its
//! API, their json-file logs read from disk by the file machinery.
//!
//! An Engine reached over the network (`tcp://`, `http(s)://`) keeps its
//! logs on its own machine: they are read through the API instead (see
//! [`remote`]); the rest of this page is about a local Engine.
//!
//! How it works. The source's thread asks the Engine (`docker.host`, its Unix
//! socket) where it keeps its data (`GET /info`), lists the containers once,
//! then runs a [`FileSource`] over `<DockerRootDir>/containers/*/*-json.log`
//! that opens only the files of listed containers the relabel rules keep,
//! labelled from their `__meta_docker_*` labels. Reading, positions (moved
//! only after acknowledgement), Docker's rotation by `max-size`/`max-file`
//! (a rename, drained by inode) and restarts are the file source's, so a
//! container's log has every guarantee a file has. The `docker` stage runs
//! first: the message, Docker's time, a `stream` label, long lines joined.
//!
//! Meanwhile a task on the runtime keeps the list current: it follows the
//! Engine's event stream and lists again after each container event, and in
//! full every `refresh_interval`; when the Engine cannot be reached it says
//! so once, backs off (1 s doubling to 30 s) and tries again. Stopped
//! containers stay listed (`all=1`), so a log is read to its end after its
//! container stopped; a removed container's file is deleted by Docker and
//! drained like any deleted file.

pub mod api;
pub mod remote;
pub mod stream;
pub mod targets;

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use api::{take_events, ApiError, Engine};
use targets::{meta_labels, network_labels, Containers};
use tokio_util::sync::CancellationToken;

use super::file::{FileSource, Mode};
use super::{FileMatch, Outlet, SourceSpec};
use crate::config::{DockerConfig, DockerHost};
use crate::pipeline::SourceStages;
use crate::positions::Positions;

/// Backoff after a failed call to the Engine: first wait, and the most.
const BACKOFF_MIN: Duration = Duration::from_secs(1);
const BACKOFF_MAX: Duration = Duration::from_secs(30);

/// The docker source; see the module documentation.
pub struct DockerSource {
    spec: SourceSpec,
    stages: Arc<SourceStages>,
    positions: Arc<Positions>,
    out: Outlet,
    mode: Mode,
}

impl DockerSource {
    pub fn new(
        spec: SourceSpec,
        stages: Arc<SourceStages>,
        positions: Arc<Positions>,
        out: Outlet,
        mode: Mode,
    ) -> Self {
        Self { spec, stages, positions, out, mode }
    }

    /// Runs until cancelled.
    pub fn run(self) {
        let name = self.stages.name.clone();
        let cfg = self.spec.config.docker.clone().unwrap_or_default();
        let engine = match Engine::new(&cfg) {
            Ok(e) => e,
            Err(e) => {
                tracing::error!(source = %name, error = %e, "docker source cannot start");
                return;
            }
        };
        let handle = self.out.handle.clone();
        let socket = match cfg.endpoint() {
            Ok(DockerHost::Socket(s)) => s,
            _ => {
                let Self { spec, stages, positions, out, mode } = self;
                handle.block_on(remote::run(engine, spec, stages, positions, out, mode));
                return;
            }
        };
        let cancel = self.out.cancel.clone();
        let mut backoff = Backoff::default();
        let root = loop {
            match handle.block_on(engine.info()) {
                Ok(info) => break info.root_dir,
                Err(e) => {
                    backoff.failed(&name, &e);
                    if !handle.block_on(backoff.wait(&cancel)) {
                        return;
                    }
                }
            }
        };
        backoff.recovered(&name);
        let containers = Arc::new(Containers::default());
        let mut known = HashMap::new();
        // The first list before the first scan: the files of running
        // containers are known from the start.
        if let Err(e) = handle.block_on(refresh(&engine, &cfg, &containers, &mut known, &name)) {
            tracing::warn!(source = %name, error = %e, "cannot list the Docker Engine's containers yet; retrying");
        }
        let task = handle.spawn(discover(engine, cfg.clone(), containers.clone(), known, cancel, name.clone()));
        let glob = format!("{}/containers/*/*-json.log", root.display());
        let files = match FileMatch::compile(std::slice::from_ref(&glob), &self.spec.config.exclude) {
            Ok(f) => f,
            Err(errs) => {
                for e in errs {
                    tracing::error!(source = %name, error = %e, "docker source cannot start");
                }
                task.abort();
                return;
            }
        };
        tracing::info!(source = %name, socket = %socket.display(), logs = %glob, containers = containers.len(),
            "docker source: reading the json-file logs of the Engine's containers");
        let mut spec = self.spec;
        spec.files = Some(Arc::new(files));
        spec.labels.targets = Some(containers);
        let spec = super::target::admitting(&spec, &self.stages);
        match FileSource::new(spec, self.stages, self.positions, self.out, self.mode) {
            Ok(fs) => fs.run(),
            Err(e) => tracing::error!(source = %name, error = %e, "docker source cannot start"),
        }
        task.abort();
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
async fn discover(
    engine: Engine,
    cfg: DockerConfig,
    containers: Arc<Containers>,
    mut known: HashMap<String, Option<PathBuf>>,
    cancel: CancellationToken,
    name: Arc<str>,
) {
    let every = cfg.refresh_interval.get();
    let mut backoff = Backoff::default();
    loop {
        // The event stream opens while the list is read: nothing happens unseen.
        let (events, listed) = tokio::join!(engine.events(), refresh(&engine, &cfg, &containers, &mut known, &name));
        let mut events = match (events, listed) {
            (Ok(ev), Ok(())) => {
                backoff.recovered(&name);
                ev
            }
            (Err(e), _) | (_, Err(e)) => {
                backoff.failed(&name, &e);
                if !backoff.wait(&cancel).await {
                    return;
                }
                continue;
            }
        };
        let full_list_at = tokio::time::Instant::now() + every;
        let mut buf = Vec::new();
        loop {
            tokio::select! {
                _ = cancel.cancelled() => return,
                _ = tokio::time::sleep_until(full_list_at) => break,
                chunk = events.chunk() => match chunk {
                    Ok(Some(bytes)) => {
                        let changed = take_events(&mut buf, &bytes).iter().any(|e| {
                            e.kind == "container" && !e.action.starts_with("exec_") && !e.action.starts_with("health_status")
                        });
                        if changed {
                            if let Err(e) = refresh(&engine, &cfg, &containers, &mut known, &name).await {
                                backoff.failed(&name, &e);
                                break;
                            }
                        }
                    }
                    Ok(None) | Err(_) => {
                        tracing::info!(source = %name, "the Docker Engine's event stream ended; listing again");
                        break;
                    }
                },
            }
        }
    }
}

/// Backoff between failed calls, logging a failure once per streak.
#[derive(Debug)]
pub(crate) struct Backoff {
    next: Duration,
    failing: bool,
}

impl Default for Backoff {
    fn default() -> Self {
        Self { next: BACKOFF_MIN, failing: false }
    }
}

impl Backoff {
    fn failed(&mut self, name: &str, e: &ApiError) {
        if !self.failing {
            tracing::warn!(source = name, error = %e, "cannot reach the Docker Engine; retrying with backoff");
        }
        self.failing = true;
    }

    fn recovered(&mut self, name: &str) {
        if self.failing {
            tracing::info!(source = name, "the Docker Engine answers again");
        }
        *self = Self::default();
    }

    /// Waits the current backoff; false when cancelled meanwhile.
    async fn wait(&mut self, cancel: &CancellationToken) -> bool {
        let wait = self.next;
        self.next = (self.next * 2).min(BACKOFF_MAX);
        tokio::select! {
            _ = cancel.cancelled() => false,
            _ = tokio::time::sleep(wait) => true,
        }
    }
}
