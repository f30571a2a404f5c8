//! Lines read again after a restart, matched to the records of how they
//! went out (see [`crate::positions::Replay`]): those of acknowledged
//! batches are marked not to be sent (the batcher still records them among
//! the lines in flight), the others get the timestamps they first had. One
//! way for every reader whose offsets the positions keep: file tailers and
//! the spool readers of network sources.

use crate::metrics::Metrics;
use crate::positions::{Again, Replay};
use crate::queue::Chunk;

/// What applying a replay to a chunk found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Applied {
    /// More lines in flight are still to be read again.
    Going,
    /// Every line in flight at the last stop was read again.
    Done,
    /// The chunk's lines are not cut as they were (a partial line, a
    /// multiline block ended by its wait): the chunk and the rest are sent as read.
    Unfit,
    /// The lines read again do not match the records: the rest are sent as read.
    Mismatch,
}

/// Applies `r` to `chunk`, whose lines end at `end`; the replay ends unless
/// [`Applied::Going`] is returned.
pub fn apply(r: &mut Replay, chunk: &mut Chunk, end: u64) -> Applied {
    if !r.fits(chunk.entries.len(), end) {
        return Applied::Unfit;
    }
    let (mut skipped, mut resent) = (0u32, 0u32);
    for e in chunk.entries.iter_mut() {
        match r.next_line() {
            None => {}
            Some(Again::Skip) => {
                e.skip = true;
                skipped += 1;
            }
            Some(Again::Send(ts)) => {
                if let Some(ts) = ts {
                    e.ts = ts;
                    e.assigned_ts = false;
                }
                resent += 1;
            }
        }
    }
    chunk.replayed = resent;
    chunk.skipped = skipped;
    // Resent ones are counted once the batcher looked them up (`batch/reconcile.rs`).
    Metrics::get().lines_replayed.with_label_values(&[&chunk.source, "skipped"]).inc_by(u64::from(skipped));
    if !r.chunk_done(end) {
        Applied::Mismatch
    } else if r.is_done() {
        Applied::Done
    } else {
        Applied::Going
    }
}

/// Says what `applied` means for the reader of `what` (a path); true when
/// the replay ended.
pub fn ended(applied: Applied, what: &dyn std::fmt::Display) -> bool {
    match applied {
        Applied::Going => return false,
        Applied::Done => tracing::info!(path = %what, "lines in flight at the last stop were read again"),
        Applied::Unfit => {
            tracing::warn!(path = %what, "the lines read again are not cut as they were before the last stop \
            (a partial line, a multiline block ended by its wait); they and the rest in flight then are sent as read")
        }
        Applied::Mismatch => {
            tracing::warn!(path = %what, "the lines read again do not match the records of lines in flight at the last stop; \
            the rest are sent as read")
        }
    }
    true
}
