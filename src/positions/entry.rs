//! One file's entry in the positions store, kept small: with 100,000 files
//! the store holds 100,000 of them (#29 item 8). What only a file with lines
//! on their way needs (batches pending, records of lines in flight) is boxed
//! apart and dropped once empty, so an idle file's entry is a few words and
//! its path, not three queues that keep their room after their first use.

use std::collections::VecDeque;
use std::path::Path;
use std::sync::Arc;

use super::flight::{self, Flight};
use super::{now_ms, now_secs, Fingerprint};

#[derive(Debug, Clone)]
pub(super) struct FileState {
    /// Shared with the other entries that name it (see `entries::Paths`).
    pub(super) path: Arc<Path>,
    pub(super) fp: Fingerprint,
    /// Tailed by a running source (as opposed to loaded from disk and not yet seen).
    pub(super) active: bool,
    /// The file was deleted (no name left): once delivered to its end, the
    /// entry is forgotten at the next save (see `Positions::deleted`). Not saved.
    pub(super) gone: bool,
    pub(super) dev: u64,
    pub(super) ino: u64,
    pub(super) committed: u64,
    pub(super) updated_at: u64,
    /// Last size seen.
    pub(super) size: u64,
    /// See `SavedFile::end`.
    pub(super) end: Option<u64>,
    /// Where the source that released the file had read to (its lines may
    /// still be in flight): a source that takes the file over in this
    /// process (a reload) goes on from here, so no line is sent twice. Not saved.
    pub(super) read_to: u64,
    /// See `SavedFile::seen_at_ms`.
    pub(super) seen_at_ms: u64,
    /// Batches and records of lines in flight; `None` when there are none.
    lines: Option<Box<InFlight>>,
}

/// A file's lines on their way (see [`FileState`]).
#[derive(Debug, Clone, Default)]
pub(super) struct InFlight {
    /// (batch sequence, offset after the batch's last line of this file, acknowledged)
    pub(super) pending: VecDeque<(u64, u64, bool)>,
    /// This process's records of the file's lines in flight (see [`flight`]).
    pub(super) flight: VecDeque<Flight>,
    /// Records of earlier runs of the agent (loaded from disk, or left by a
    /// source that stopped before it read them all again): what the source
    /// does with the lines it reads again (`Positions::take_replay`).
    pub(super) replay: VecDeque<Flight>,
    /// Records handed to a source for its replay: saved still, until the
    /// file is delivered past them. Until the source has read the lines
    /// again and this run's records of them are written (after a lookup that
    /// may wait minutes for the service), they are the only record of what
    /// the lines went out as: a second crash meanwhile sent them again with
    /// new timestamps, and Loki kept both copies. Of two records of one
    /// stretch, a replay takes the later run's (`Replay::of`).
    pub(super) taken: VecDeque<Flight>,
}

impl InFlight {
    fn is_empty(&self) -> bool {
        self.pending.is_empty() && self.flight.is_empty() && self.replay.is_empty() && self.taken.is_empty()
    }
}

impl FileState {
    /// A file first seen now, delivered to `committed`.
    pub(super) fn new(path: Arc<Path>, fp: Fingerprint, dev: u64, ino: u64, committed: u64) -> Self {
        FileState {
            path,
            fp,
            active: true,
            gone: false,
            dev,
            ino,
            committed,
            updated_at: now_secs(),
            size: committed,
            end: None,
            read_to: 0,
            seen_at_ms: now_ms(),
            lines: None,
        }
    }

    /// Its lines on their way, made room for.
    pub(super) fn lines(&mut self) -> &mut InFlight {
        self.lines.get_or_insert_with(Box::default)
    }

    /// Drops the box of lines on their way once nothing is left in it.
    pub(super) fn tidy(&mut self) {
        if self.lines.as_ref().is_some_and(|l| l.is_empty()) {
            self.lines = None;
        }
    }

    /// Sets the lines on their way (loaded from disk).
    pub(super) fn set_lines(&mut self, lines: InFlight) {
        self.lines = Some(Box::new(lines));
        self.tidy();
    }

    /// Forgets every batch and record of lines in flight.
    pub(super) fn clear_lines(&mut self) {
        self.lines = None;
    }

    /// Forgets the batches pending (another process's, never acknowledged
    /// now), and with `records`, the records of lines in flight too.
    pub(super) fn clear_pending(&mut self, records: bool) {
        if let Some(l) = self.lines.as_deref_mut() {
            l.pending.clear();
            if records {
                l.replay.clear();
                l.taken.clear();
                l.flight.clear();
            }
        }
        self.tidy();
    }

    /// Batches pending, oldest first.
    pub(super) fn pending(&self) -> impl Iterator<Item = &(u64, u64, bool)> {
        self.lines.iter().flat_map(|l| l.pending.iter())
    }

    pub(super) fn no_pending(&self) -> bool {
        self.lines.as_ref().is_none_or(|l| l.pending.is_empty())
    }

    /// Records of lines in flight: earlier runs' first (those not yet
    /// handed to a source, then those handed), then this one's.
    pub(super) fn records(&self) -> impl Iterator<Item = &Flight> {
        self.lines.iter().flat_map(|l| l.replay.iter().chain(l.taken.iter()).chain(l.flight.iter()))
    }

    /// This run's records only.
    pub(super) fn flights(&self) -> impl Iterator<Item = &Flight> {
        self.lines.iter().flat_map(|l| l.flight.iter())
    }

    /// Batch `seq` was acknowledged: returns true when the delivered offset moved.
    pub(super) fn ack(&mut self, seq: u64) -> bool {
        let Some(l) = self.lines.as_deref_mut() else { return false };
        for p in l.pending.iter_mut() {
            if p.0 == seq {
                p.2 = true;
            }
        }
        flight::delivered(&mut l.flight, seq);
        flight::delivered(&mut l.replay, seq);
        let mut changed = false;
        while let Some(&(_, off, true)) = l.pending.front() {
            self.committed = self.committed.max(off);
            l.pending.pop_front();
            changed = true;
        }
        if changed {
            flight::prune(&mut l.flight, self.committed);
            flight::prune(&mut l.replay, self.committed);
            flight::prune(&mut l.taken, self.committed);
        }
        self.tidy();
        changed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 100,000 idle files hold 100,000 entries (#29 item 8): an entry with
    /// its queues inline was 216 bytes.
    #[test]
    fn an_idle_entry_is_small() {
        assert!(std::mem::size_of::<FileState>() <= 112, "{}", std::mem::size_of::<FileState>());
    }

    #[test]
    fn lines_on_their_way_are_dropped_once_acknowledged() {
        let mut f = FileState::new(Path::new("/a").into(), Fingerprint::of(b"x"), 1, 2, 0);
        f.lines().pending.push_back((7, 10, false));
        assert!(f.lines.is_some());
        assert!(f.ack(7));
        assert_eq!(f.committed, 10);
        assert!(f.lines.is_none(), "an empty box of lines in flight is kept");
    }
}
