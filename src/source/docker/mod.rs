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

pub mod remote;
pub mod stream;

use std::collections::HashMap;
use std::sync::Arc;

use super::file::{FileSource, Tailing};
use super::FileMatch;
use crate::config::DockerHost;
use crate::discovery::docker::api::Engine;
use crate::discovery::docker::targets::Containers;
use crate::discovery::docker::{refresh, watch, BACKOFF_MAX, ENGINE};
use crate::discovery::poll::Backoff;

/// The docker source; see the module documentation.
pub struct DockerSource {
    /// The file source to be, but for the files the Engine names.
    parts: Tailing,
}

impl DockerSource {
    pub fn new(parts: Tailing) -> Self {
        Self { parts }
    }

    /// Runs until cancelled.
    pub fn run(self) {
        let name = self.parts.stages.name.clone();
        let cfg = self.parts.spec.config.docker.clone().unwrap_or_default();
        let engine = match Engine::new(&cfg) {
            Ok(e) => e,
            Err(e) => {
                tracing::error!(source = %name, error = %e, "docker source cannot start");
                return;
            }
        };
        let handle = self.parts.out.handle.clone();
        let socket = match cfg.endpoint() {
            Ok(DockerHost::Socket(s)) => s,
            _ => {
                handle.block_on(remote::run(engine, self.parts));
                return;
            }
        };
        let cancel = self.parts.out.cancel.clone();
        let mut backoff = Backoff::up_to(BACKOFF_MAX);
        let root = loop {
            match handle.block_on(engine.info()) {
                Ok(info) => break info.root_dir,
                Err(e) => {
                    backoff.failed(&name, ENGINE, &e);
                    if !handle.block_on(backoff.wait(&cancel)) {
                        return;
                    }
                }
            }
        };
        backoff.recovered(&name, ENGINE);
        let containers = Arc::new(Containers::default());
        let mut known = HashMap::new();
        // The first list before the first scan: the files of running
        // containers are known from the start.
        if let Err(e) = handle.block_on(refresh(&engine, &cfg, &containers, &mut known, &name)) {
            tracing::warn!(source = %name, error = %e, "cannot list the Docker Engine's containers yet; retrying");
        }
        let task = handle.spawn(watch(engine, cfg.clone(), containers.clone(), known, cancel, name.clone()));
        let glob = format!("{}/containers/*/*-json.log", root.display());
        let files = match FileMatch::compile(std::slice::from_ref(&glob), &self.parts.spec.config.exclude) {
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
        let mut parts = self.parts;
        parts.spec.files = Some(Arc::new(files));
        parts.spec.labels.targets = Some(containers);
        parts.spec = super::target::admitting(&parts.spec, &parts.stages);
        match FileSource::new(parts) {
            Ok(fs) => fs.run(),
            Err(e) => tracing::error!(source = %name, error = %e, "docker source cannot start"),
        }
        task.abort();
    }
}
