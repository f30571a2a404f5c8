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
pub use stream::{Interner, Stream, StreamRef};

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

/// Where sources put their chunks: the queue in front of the batcher.
#[derive(Debug, Clone)]
pub struct ChunkSink {
    tx: mpsc::UnboundedSender<Chunk>,
    budget: Arc<Budget>,
}

impl ChunkSink {
    /// A sink over `budget`; the chunks come out of the returned receiver.
    pub fn new(budget: Arc<Budget>) -> (Self, mpsc::UnboundedReceiver<Chunk>) {
        let (tx, rx) = mpsc::unbounded_channel();
        (Self { tx, budget }, rx)
    }

    /// Takes budget for the chunk (waiting while the queue is full) and queues it.
    /// Returns false when `cancel` fired or the pipeline is gone: the chunk was not queued.
    pub async fn send(&self, mut chunk: Chunk, cancel: &CancellationToken) -> bool {
        if chunk.is_empty() {
            return true;
        }
        let Some(permit) = self.budget.acquire(chunk.cost(), cancel).await else { return false };
        chunk.permit = Some(permit);
        if chunk.read_at.is_none() {
            chunk.read_at = Some(Instant::now());
        }
        self.budget.lines.fetch_add(chunk.entries.len() as i64, Ordering::Relaxed);
        self.tx.send(chunk).is_ok()
    }

    /// [`ChunkSink::send`] for threads outside the runtime (file and stdin readers).
    pub fn send_blocking(&self, handle: &tokio::runtime::Handle, chunk: Chunk, cancel: &CancellationToken) -> bool {
        handle.block_on(self.send(chunk, cancel))
    }
}
