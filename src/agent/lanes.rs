//! Clients' lanes: each client (`[client]`, or each of `[[clients]]`) has
//! its own way out, so one that is down, slow or refused never holds back
//! another: its own positions, queue budget, batcher, push slots and pusher,
//! and its own readers of its sources' files and journals (a file read for
//! two clients is read twice, each at its client's pace; its lines wait on
//! disk for the slower one). Standard input is read once and each line is
//! put in the queue of every client it goes to (see `ChunkSink::fan_out`).
//!
//! A source's first client's readers count lines, files and events; the
//! others' are muted (`metrics::mute_this_thread`) and show their files in
//! a status nobody serves, so metrics and `/status` count each line read once.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::thread::JoinHandle;

use tokio_util::sync::CancellationToken;

use super::sources::{join_sources, start_sources, SourceEnv};
use crate::batch::{Along, BatchSettings, LineTap, Reconciler, Shipper, Totals};
use crate::client::push::Pusher;
use crate::config::{ClientConfig, SourceType};
use crate::metrics::Health;
use crate::plan::{Plan, SourcePlan};
use crate::positions::{Positions, PositionsFile, Start};
use crate::queue::{ChunkSink, Interner};
use crate::source::file::Mode;
use crate::status::Status;

/// Where a lane keeps its positions, and how it ends.
pub(super) enum Keep<'a> {
    /// The daemon's: in the positions file; lines read again after a
    /// restart are first looked up in the service.
    File(&'a PositionsFile),
    /// A run once (`tailship push`): positions in memory; `abort` stops it
    /// (a signal, a deadline), as does a refusal no retry cures. Its sources
    /// read to their end, stdin among them, with `labels` added.
    Once { abort: CancellationToken, labels: BTreeMap<String, String> },
}

/// One client's way out, and the readers of its sources.
pub(super) struct Lane {
    pub(super) client: ClientConfig,
    pub(super) pusher: Arc<Pusher>,
    pub(super) positions: Arc<Positions>,
    /// How its positions began: a fresh client's sources start as its `start_at` says, once.
    start: Start,
    shipper: Shipper,
    abort: CancellationToken,
    cancel: CancellationToken,
    threads: Vec<JoinHandle<()>>,
    /// Follow (the daemon) or read once; a run once reads stdin in the lane.
    mode: Mode,
    /// Labels added to every source (`tailship push --label`).
    labels: BTreeMap<String, String>,
    /// The agent's status, and the one nobody serves for the readers of
    /// sources whose first client is another.
    status: Arc<Status>,
    unserved: Arc<Status>,
}

impl Lane {
    /// Starts a client's pusher, batcher and pushers (its sources start with [`Lane::start_sources`]),
    /// shown in `status`. A client without `api_prefix` first asks its service which prefix it serves.
    pub(super) async fn start(
        client: &ClientConfig,
        keep: Keep<'_>,
        health: &Arc<Health>,
        status: &Arc<Status>,
        queue_bytes: usize,
        tap: Option<Box<dyn LineTap>>,
    ) -> anyhow::Result<Lane> {
        let (client, _) = crate::client::prefix::resolve(client, &client.name).await;
        let client = &client;
        let pusher = Pusher::new(client, health.clone())?.observed_by(status.clone());
        let (pusher, positions, start, abort, reconciler, mode, labels) = match keep {
            Keep::File(file) => {
                let (positions, start) = file.client(&client.name, client.start_at);
                match start {
                    Start::Saved => {}
                    Start::Others => {
                        tracing::info!(client = %client.name, "new client: starts where the other clients are")
                    }
                    Start::Fresh(at) => {
                        tracing::info!(client = %client.name, start_at = ?at, "new client: starts as its start_at says")
                    }
                }
                let abort = CancellationToken::new();
                let reconciler = Reconciler::new(client, abort.clone());
                (pusher, positions, start, abort, reconciler, Mode::Follow, BTreeMap::new())
            }
            Keep::Once { abort, labels } => {
                let positions = Arc::new(Positions::in_memory());
                (pusher.one_off(abort.clone()), positions, Start::Saved, abort, None, Mode::Once, labels)
            }
        };
        let pusher = Arc::new(pusher);
        let along = Along { tap, reconciler, status: Some(status.clone()) };
        let shipper = Shipper::start_with(
            BatchSettings::of(client),
            queue_bytes,
            pusher.clone(),
            positions.clone(),
            abort.clone(),
            along,
        );
        Ok(Lane {
            client: client.clone(),
            pusher,
            positions,
            start,
            shipper,
            abort,
            cancel: CancellationToken::new(),
            threads: Vec::new(),
            mode,
            labels,
            status: status.clone(),
            unserved: Arc::default(),
        })
    }

    pub(super) fn name(&self) -> &str {
        &self.client.name
    }

    /// This client's queue, for standard input's fan-out.
    pub(super) fn stdin_sink(&self, interner: &Arc<Interner>) -> ChunkSink {
        let sink =
            self.shipper.sink.clone().with_external_labels(interner.clone(), self.client.external_labels.clone());
        if self.client.best_effort {
            sink.best_effort()
        } else {
            sink
        }
    }

    /// Starts the file, journal and discovery sources of `plan` that go to
    /// this client (the daemon's stdin is read once, elsewhere; a run once
    /// reads it here).
    pub(super) fn start_sources(
        &mut self,
        plan: &Plan,
        interner: &Arc<Interner>,
        shutdown: &CancellationToken,
        stdin: &mut Option<Box<dyn std::io::Read + Send>>,
        spools: Option<Arc<crate::spool::Spools>>,
    ) -> anyhow::Result<usize> {
        self.cancel = shutdown.child_token();
        let mut first = Vec::new();
        let mut echoes = Vec::new();
        let stdin_here = self.mode == Mode::Once;
        for s in plan.sources.iter().filter(|s| stdin_here || s.spec.config.kind != SourceType::Stdin) {
            let mut clients = plan.config.clients_of(&s.spec.config);
            let Some(primary) = clients.next() else { continue };
            let goes_here = primary.name == self.client.name || clients.any(|c| c.name == self.client.name);
            if !goes_here {
                continue;
            }
            let mut s = self.with_client_labels(s);
            if let Start::Fresh(at) = self.start {
                s.spec.config.start_at = at;
            }
            if primary.name == self.client.name {
                first.push(s);
            } else {
                echoes.push(s);
            }
        }
        self.start = Start::Saved;
        let n = first.len() + echoes.len();
        let env = |sink: ChunkSink, mute: bool| SourceEnv {
            default_tenant: self.client.tenant_id.clone(),
            sink,
            positions: self.positions.clone(),
            interner: interner.clone(),
            handle: tokio::runtime::Handle::current(),
            mode: self.mode,
            extra_labels: self.labels.clone(),
            mute,
            status: if mute { self.unserved.clone() } else { self.status.clone() },
            client: self.client.name.clone(),
            spools: spools.clone(),
            structured_metadata: self.client.structured_metadata,
        };
        let mut threads = start_sources(&first, &env(self.shipper.sink.clone(), false), &self.cancel, stdin)?;
        threads.append(&mut start_sources(&echoes, &env(self.shipper.sink.clone().echo(), true), &self.cancel, stdin)?);
        self.threads = threads;
        Ok(n)
    }

    /// A source with this client's external labels under its own.
    fn with_client_labels(&self, s: &SourcePlan) -> SourcePlan {
        let mut s = s.clone();
        // A push source's records carry its own labels as its relabel rules
        // left them (one they dropped stays dropped): only the client's go on.
        if s.spec.config.kind == SourceType::LokiPush && !s.spec.config.relabel.is_empty() {
            s.spec.config.labels.clear();
        }
        for (k, v) in &self.client.external_labels {
            s.spec.config.labels.entry(k.clone()).or_insert_with(|| v.clone());
        }
        s
    }

    /// Stops this client's sources; the task ends when their threads did.
    pub(super) fn stop_sources(&mut self) -> tokio::task::JoinHandle<()> {
        self.cancel.cancel();
        tokio::spawn(join_sources(std::mem::take(&mut self.threads)))
    }

    /// Waits until its sources end by themselves (a run once: each read to its end).
    pub(super) async fn sources_done(&mut self) {
        join_sources(std::mem::take(&mut self.threads)).await;
    }

    /// A run once's end: waits for every queued line to be acknowledged (or
    /// given up, once aborted); the totals, and the refusal that ended it.
    pub(super) async fn finish(self) -> (Totals, Option<String>) {
        let totals = self.shipper.finish().await;
        (totals, self.pusher.final_refusal())
    }

    /// A removed client: what it has queued or in flight is given up at once
    /// (its positions are dropped; its sources were stopped).
    pub(super) async fn discard(self) {
        self.abort.cancel();
        let _ = tokio::time::timeout(std::time::Duration::from_secs(5), self.shipper.finish()).await;
    }

    /// Waits for every queued line to be acknowledged, up to `deadline`; then
    /// gives up on what is left (it is sent again at the next start).
    pub(super) async fn flush(self, deadline: std::time::Duration) -> Totals {
        let Lane { shipper, abort, client, .. } = self;
        let finish = shipper.finish();
        tokio::pin!(finish);
        match tokio::time::timeout(deadline, &mut finish).await {
            Ok(t) => t,
            Err(_) => {
                tracing::warn!(client = %client.name, timeout = ?deadline, "shutdown_timeout reached with batches undelivered; they are sent again at the next start");
                abort.cancel();
                tokio::time::timeout(std::time::Duration::from_secs(5), &mut finish).await.unwrap_or_default()
            }
        }
    }
}
