//! The `docker` source: the containers of a Docker Engine, found through its
//! API, their json-file logs read from disk by the file machinery.
//!
//! An Engine reached over the network (`tcp://`, `http(s)://`) keeps its
//! logs on its own machine: they are read through the API instead (see
//! [`remote`]); the rest of this page is about a local Engine.
//!
//! How it works. The agent starts the source's Docker discovery
//! (`discovery::docker`) on the source's thread and hands the source what
//! it found: the Engine's containers and where their json-file logs are
//! (`<DockerRootDir>/containers/*/*-json.log`, asked of the Engine first).
//! The source runs a [`FileSource`] over those logs that opens only the
//! files of listed containers the relabel rules keep, labelled from their
//! `__meta_docker_*` labels. Reading, positions (moved
//! only after acknowledgement), Docker's rotation by `max-size`/`max-file`
//! (a rename, drained by inode) and restarts are the file source's, so a
//! container's log has every guarantee a file has. The `docker` stage runs
//! first: the message, Docker's time, a `stream` label, long lines joined.
//!
//! Meanwhile the discovery's task on the runtime keeps the list current: it follows the
//! Engine's event stream and lists again after each container event, and in
//! full every `refresh_interval`; when the Engine cannot be reached it says
//! so once, backs off (1 s doubling to 30 s) and tries again. Stopped
//! containers stay listed (`all=1`), so a log is read to its end after its
//! container stopped; a removed container's file is deleted by Docker and
//! drained like any deleted file.

pub mod remote;
pub mod stream;

use std::sync::Arc;

use super::file::{FileSource, Tailing};
use super::FileMatch;
use crate::discovery::Found;

/// The docker source; see the module documentation.
pub struct DockerSource {
    /// The file source to be, but for the files the Engine names.
    parts: Tailing,
}

impl DockerSource {
    pub fn new(parts: Tailing) -> Self {
        Self { parts }
    }

    /// Runs until cancelled, reading what its discovery `found` (None: it
    /// could not start, said in the log).
    pub fn run(self, found: Option<Found>) {
        let name = self.parts.stages.name.clone();
        let Some(found) = found else { return };
        if let Some(engine) = found.remote {
            let handle = self.parts.out.handle.clone();
            handle.block_on(remote::run(self.parts, engine));
            return;
        }
        if self.parts.out.cancel.is_cancelled() {
            return;
        }
        let files = match FileMatch::compile(&found.include, &self.parts.spec.config.exclude) {
            Ok(f) => f,
            Err(errs) => {
                for e in errs {
                    tracing::error!(source = %name, error = %e, "docker source cannot start");
                }
                return;
            }
        };
        let mut parts = self.parts;
        parts.spec.files = Some(Arc::new(files));
        parts.spec.labels.targets = Some(found.targets);
        parts.spec = super::target::admitting(&parts.spec, &parts.stages);
        match FileSource::new(parts) {
            Ok(fs) => fs.run(),
            Err(e) => tracing::error!(source = %name, error = %e, "docker source cannot start"),
        }
    }
}
