//! After a restart, lines that were in flight are read again with the
//! timestamps they first had (see `positions::flight`). Before they are sent
//! again, each stream's stretch of them is looked up in the service
//! (`query_range` between the first and last timestamp) and the lines found
//! there, same timestamp and text, are not sent: they were stored before the
//! crash and only the acknowledgement was lost.
//!
//! With `client.reconcile = "auto"` (the default) the first query tells
//! whether this client's credentials can read: an answer other than 2xx,
//! 429 or 5xx (401, 403, 404: a push-only token or endpoint) turns the
//! lookups off, said once; the lines then go again as they are, and a
//! service that kept the first copy in its stream's head block drops the
//! second. Errors that may pass (429, 5xx, no connection) are retried as
//! pushes are.
//!
//! One lookup per stream, not per chunk: lines read again went out before
//! the restart, so the first lookup of a stream asks for everything from
//! its first line read again up to the restart, and the chunks after it are
//! answered from that (a stream's lines read again come in order). After a
//! kill with thousands of small chunks in flight, the agent once made 2,638
//! lookups one at a time and delivered no new line for a minute; now it
//! makes about one per stream. What a lookup found is forgotten once no
//! chunk used it for [`KEEP_FOUND`], and a stream holding more than
//! [`MAX_FOUND`] entries in that stretch is looked up chunk by chunk.

use std::collections::{HashMap, HashSet};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

use crate::client::lookup::Lookup;
use crate::config::ClientConfig;
use crate::metrics::Metrics;
use crate::queue::{Budget, Chunk};

/// How long what a lookup found is kept after a chunk last used it.
const KEEP_FOUND: Duration = Duration::from_secs(60);
/// The most entries of one stream kept from a lookup.
const MAX_FOUND: usize = 200_000;

/// What one lookup of a stream found, from `from` to `to` (nanoseconds).
struct Found {
    from: i64,
    to: i64,
    stored: HashSet<(i64, String)>,
    used: Instant,
}

/// See the module documentation.
pub struct Reconciler {
    lookup: Lookup,
    stop: CancellationToken,
    /// The restart: every line read again went out before it.
    started: i64,
    /// By tenant and stream selector.
    found: Mutex<HashMap<(Option<String>, String), Found>>,
}

impl Reconciler {
    /// `None` with `reconcile = "off"` (or a client that cannot be built, which pushes report).
    pub fn new(c: &ClientConfig, stop: CancellationToken) -> Option<Self> {
        let started = i64::try_from(crate::util::now_ns()).unwrap_or(i64::MAX);
        Some(Self { lookup: Lookup::new(c)?, stop, started, found: Mutex::default() })
    }

    /// Forgets what no chunk used for [`KEEP_FOUND`].
    pub fn tidy(&self) {
        if let Ok(mut found) = self.found.lock() {
            found.retain(|_, f| f.used.elapsed() < KEEP_FOUND);
        }
    }

    /// The stored `(timestamp, line)` pairs of `selector` within `range`:
    /// from what an earlier lookup found when it covers the range, else
    /// looked up from the range's start to the restart. `None`: cannot tell.
    async fn stored_in(
        &self,
        selector: &str,
        tenant: Option<&str>,
        (a, b): (i64, i64),
    ) -> Option<HashSet<(i64, String)>> {
        let key = (tenant.map(str::to_string), selector.to_string());
        let pick = |f: &Found| f.stored.iter().filter(|(ts, _)| (a..=b).contains(ts)).cloned().collect();
        if let Ok(mut found) = self.found.lock() {
            if let Some(f) = found.get_mut(&key).filter(|f| f.from <= a && b <= f.to) {
                f.used = Instant::now();
                return Some(pick(f));
            }
        }
        let to = b.max(self.started);
        let stored = match self.lookup.stored(selector, tenant, (a, to), true, &self.stop).await {
            Ok(Some(stored)) => stored,
            Ok(None) | Err(_) => return None,
        };
        let f = Found { from: a, to, stored, used: Instant::now() };
        let picked = pick(&f);
        if f.stored.len() <= MAX_FOUND {
            if let Ok(mut found) = self.found.lock() {
                found.insert(key, f);
            }
        }
        Some(picked)
    }

    /// Drops the chunk's lines the service already holds; returns how many.
    pub async fn reconcile(&self, chunk: &mut Chunk) -> u64 {
        if self.lookup.is_off() {
            return 0;
        }
        let mut stored: HashSet<(u32, i64, String)> = HashSet::new();
        for (si, stream) in chunk.streams.iter().enumerate() {
            let si = si as u32;
            let mut range: Option<(i64, i64)> = None;
            for e in chunk.entries.iter().filter(|e| e.stream == si && !e.skip) {
                range = Some(range.map_or((e.ts, e.ts), |(a, b)| (a.min(e.ts), b.max(e.ts))));
            }
            let Some(range) = range else { continue };
            match self.stored_in(&stream.selector(), stream.tenant.as_deref(), range).await {
                Some(found) => stored.extend(found.into_iter().map(|(ts, line)| (si, ts, line))),
                None => return 0,
            }
        }
        if stored.is_empty() {
            return 0;
        }
        let buf = &chunk.buf;
        let mut found = 0u32;
        for e in chunk.entries.iter_mut().filter(|e| !e.skip) {
            let line = buf.get(e.start as usize..(e.start + e.len) as usize).unwrap_or_default();
            // A lookup by borrowed parts would need another set type; these are few lines after a restart.
            if stored.contains(&(e.stream, e.ts, line.to_string())) {
                // Not sent, but recorded among the file's lines in flight (see `positions::Replay`).
                e.skip = true;
                found += 1;
            }
        }
        chunk.skipped += found;
        u64::from(found)
    }
}

/// Lines read again after a restart (`chunk.replayed`): looked up first when
/// the client can be queried; counted as reconciled or resent. Those found
/// leave the queue's line count here (they are in no batch).
pub(super) async fn lines_read_again(reconciler: Option<&Reconciler>, chunk: &mut Chunk, budget: &Budget) {
    let found = match reconciler {
        Some(r) => r.reconcile(chunk).await,
        None => 0,
    };
    budget.lines_done(found as usize);
    let m = &Metrics::get().lines_replayed;
    m.with_label_values(&[&chunk.source, "reconciled"]).inc_by(found);
    m.with_label_values(&[&chunk.source, "resent"]).inc_by(u64::from(chunk.replayed).saturating_sub(found));
}
