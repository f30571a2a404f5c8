//! The bounded queue between sources and the batcher.
//!
//! A source fills a [`Chunk`] with processed lines, then takes that chunk's
//! size from the [`Budget`], a semaphore counted in bytes. When the budget is
//! spent the source waits: a file source simply stops reading (its data waits
//! on disk) and stdin stops being read, which blocks its writer. The chunk's
//! permit travels with its lines into a batch and is returned only when that
//! batch is acknowledged or dropped on purpose, so the budget bounds every
//! line held anywhere in the agent: queued, batched, or in flight.
//!
//! Also here: what moves through the queue ([`chunk`]: lines, their streams,
//! the ack reference) and the interned label sets of streams ([`stream`]).

mod chunk;
mod stream;

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use tokio::sync::{mpsc, OwnedSemaphorePermit, Semaphore};
use tokio_util::sync::CancellationToken;

pub use chunk::{Chunk, Entry, CHUNK_OVERHEAD, ENTRY_OVERHEAD};
pub use stream::{Interner, PerStream, Stream, StreamRef};

/// The byte budget shared by every line between reading and acknowledgement.
#[derive(Debug)]
pub struct Budget {
    sem: Arc<Semaphore>,
    max: usize,
    /// Lines queued and not yet acknowledged (or given up).
    lines: AtomicI64,
}

impl Budget {
    pub fn new(max_bytes: usize) -> Arc<Self> {
        let max = max_bytes.clamp(1, Semaphore::MAX_PERMITS);
        Arc::new(Self { sem: Arc::new(Semaphore::new(max)), max, lines: AtomicI64::new(0) })
    }

    fn permits_for(&self, cost: usize) -> u32 {
        cost.clamp(1, self.max).min(u32::MAX as usize) as u32
    }

    /// Waits for `cost` bytes of budget, or returns `None` if `cancel` fires first.
    pub async fn acquire(&self, cost: usize, cancel: &CancellationToken) -> Option<OwnedSemaphorePermit> {
        let n = self.permits_for(cost);
        tokio::select! {
            p = self.sem.clone().acquire_many_owned(n) => p.ok(),
            _ = cancel.cancelled() => None,
        }
    }

    /// `cost` bytes of budget if they are free now.
    pub fn try_acquire(&self, cost: usize) -> Option<OwnedSemaphorePermit> {
        self.sem.clone().try_acquire_many_owned(self.permits_for(cost)).ok()
    }

    /// Bytes of budget in use.
    pub fn used(&self) -> usize {
        self.max - self.sem.available_permits()
    }

    pub fn max(&self) -> usize {
        self.max
    }

    /// Lines queued and not yet acknowledged (or given up).
    pub fn lines(&self) -> i64 {
        self.lines.load(Ordering::Relaxed)
    }

    /// `n` lines left the agent (acknowledged, dropped or given up).
    pub fn lines_done(&self, n: usize) {
        self.lines.fetch_sub(n as i64, Ordering::Relaxed);
    }
}

/// Where sources put their chunks: the queue in front of a client's batcher,
/// or (standard input, read once) the queues of several clients.
#[derive(Debug, Clone)]
pub struct ChunkSink {
    to: To,
}

#[derive(Debug, Clone)]
enum To {
    One(Queue),
    /// Every chunk goes to each (a reload may change them).
    Many(Arc<std::sync::RwLock<Vec<Queue>>>),
}

/// One client's queue.
#[derive(Debug, Clone)]
struct Queue {
    tx: mpsc::UnboundedSender<Chunk>,
    budget: Arc<Budget>,
    /// Never waited for: a chunk that finds the budget spent is dropped and counted.
    best_effort: bool,
    /// Chunks are [`Chunk::echo`]es: read for this client by a source that reads for another first.
    echo: bool,
    /// Labels added to chunks' streams (a client's external labels), for
    /// lines read once for several clients (standard input).
    external: Option<(Arc<Interner>, Arc<Labels>)>,
}

type Labels = std::collections::BTreeMap<String, String>;

impl ChunkSink {
    /// A sink over `budget`; the chunks come out of the returned receiver.
    pub fn new(budget: Arc<Budget>) -> (Self, mpsc::UnboundedReceiver<Chunk>) {
        let (tx, rx) = mpsc::unbounded_channel();
        (Self { to: To::One(Queue { tx, budget, best_effort: false, echo: false, external: None }) }, rx)
    }

    /// This sink, marked best effort: a fan-out never waits for it.
    pub fn best_effort(mut self) -> Self {
        if let To::One(q) = &mut self.to {
            q.best_effort = true;
        }
        self
    }

    /// This sink, for sources that read for another client first (see [`Chunk::echo`]).
    pub fn echo(mut self) -> Self {
        if let To::One(q) = &mut self.to {
            q.echo = true;
        }
        self
    }

    /// This sink, adding `labels` to each chunk's streams (a source's own
    /// labels of the same names win), for a fan-out.
    pub fn with_external_labels(
        mut self,
        interner: Arc<Interner>,
        labels: std::collections::BTreeMap<String, String>,
    ) -> Self {
        if let To::One(q) = &mut self.to {
            q.external = (!labels.is_empty()).then(|| (interner, Arc::new(labels)));
        }
        self
    }

    /// A sink that puts every chunk into each of `sinks` (each one-queue sinks).
    pub fn fan_out(sinks: Vec<ChunkSink>) -> Self {
        Self { to: To::Many(Arc::new(std::sync::RwLock::new(Self::queues(sinks)))) }
    }

    /// Changes where a fan-out sink (and its clones) put chunks from now on.
    pub fn set_fan_out(&self, sinks: Vec<ChunkSink>) {
        if let To::Many(many) = &self.to {
            let queues = Self::queues(sinks);
            match many.write() {
                Ok(mut m) => *m = queues,
                Err(p) => *p.into_inner() = queues,
            }
        }
    }

    fn queues(sinks: Vec<ChunkSink>) -> Vec<Queue> {
        sinks
            .into_iter()
            .flat_map(|s| match s.to {
                To::One(q) => vec![q],
                To::Many(m) => m.read().map(|m| m.clone()).unwrap_or_default(),
            })
            .collect()
    }

    /// Takes budget for the chunk (waiting while the queue is full) and queues it.
    /// Returns false when `cancel` fired or the pipeline is gone: the chunk was not queued.
    /// A fan-out waits for every queue but best-effort ones: those take a copy
    /// only if they have room now, and count what they miss.
    pub async fn send(&self, chunk: Chunk, cancel: &CancellationToken) -> bool {
        if chunk.is_empty() {
            return true;
        }
        match &self.to {
            To::One(q) => q.send(chunk, cancel).await,
            To::Many(many) => {
                let queues = many.read().map(|m| m.clone()).unwrap_or_default();
                let Some((last, rest)) = queues.split_last() else { return false };
                for q in rest {
                    if !q.send(chunk.duplicate(), cancel).await && !q.best_effort {
                        return false;
                    }
                }
                last.send(chunk, cancel).await || last.best_effort
            }
        }
    }

    /// [`ChunkSink::send`] for threads outside the runtime (file and stdin readers).
    pub fn send_blocking(&self, handle: &tokio::runtime::Handle, chunk: Chunk, cancel: &CancellationToken) -> bool {
        handle.block_on(self.send(chunk, cancel))
    }
}

impl Queue {
    async fn send(&self, mut chunk: Chunk, cancel: &CancellationToken) -> bool {
        let cost = chunk.cost();
        let permit = if self.best_effort {
            match self.budget.try_acquire(cost) {
                Some(p) => p,
                None => {
                    let m = crate::metrics::Metrics::get();
                    m.lines_dropped
                        .with_label_values(&[&chunk.source, "best_effort"])
                        .inc_by(chunk.lines_to_send() as u64);
                    return false;
                }
            }
        } else {
            match self.budget.acquire(cost, cancel).await {
                Some(p) => p,
                None => return false,
            }
        };
        chunk.permit = Some(permit);
        if chunk.read_at.is_none() {
            chunk.read_at = Some(Instant::now());
        }
        chunk.echo |= self.echo;
        if let Some((interner, labels)) = &self.external {
            for s in chunk.streams.iter_mut() {
                let mut all: std::collections::BTreeMap<String, String> = s.labels.iter().cloned().collect();
                for (k, v) in labels.iter() {
                    all.entry(k.clone()).or_insert_with(|| v.clone());
                }
                *s = interner.intern(s.tenant.as_ref(), all);
            }
        }
        self.budget.lines.fetch_add(chunk.lines_to_send() as i64, Ordering::Relaxed);
        self.tx.send(chunk).is_ok()
    }
}
