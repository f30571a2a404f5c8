//! Staying under `max_open_files` with many files.
//!
//! Files beyond the limit wait closed ("parked"), remembered by device and
//! inode in a map, with the size and modification time they had when closed:
//! a scan reopens a parked file only when those say it changed, so idle
//! files cost one `stat` per scan and nothing else. A file found while the
//! limit is reached (and no open file has been idle for [`PARK_IDLE`]) is
//! not left waiting for a turn: it is opened, read to its end at once, and
//! parked. Making room parks the longest-idle files in one pass per scan
//! (a sort of the open files), not a search per file.

use std::collections::HashSet;
use std::os::unix::fs::MetadataExt;
use std::time::{Duration, Instant};

use super::{open_regular, FileSource, Turn};
use crate::positions::Fingerprint;
use crate::source::tailer::{is_link, Tailer};
use crate::source::{fingerprint, LineFeed};
use crate::status::{report::FileState, FileHandle};

/// With `max_open_files` reached, a file idle this long may be parked (closed,
/// remembered) to give another file a turn.
pub(super) const PARK_IDLE: Duration = Duration::from_secs(1);

/// A file closed to stay under `max_open_files`; reopened when it changes.
/// Kept small (one per file of 100,000): its device and inode are its key in
/// the map, its path is its status's.
pub(super) struct Parked {
    pub key: u64,
    pub fp: Fingerprint,
    /// Where reading goes on (the start of a partial last line, if any).
    pub offset: u64,
    /// Size and modification time (ns since the epoch) when it was closed.
    pub seen: (u64, i64),
    /// See [`Tailer::since`].
    pub since: std::time::SystemTime,
    pub status: FileHandle,
}

impl Parked {
    /// True when `meta` says the file changed since it was parked.
    pub fn changed(&self, meta: &std::fs::Metadata) -> bool {
        (meta.len(), mtime_ns(meta)) != self.seen
    }
}

fn mtime_ns(meta: &std::fs::Metadata) -> i64 {
    meta.mtime().saturating_mul(1_000_000_000).saturating_add(meta.mtime_nsec())
}

impl FileSource {
    /// Parks up to `n` open files idle for [`PARK_IDLE`] or more (longest
    /// idle first) when fewer than `n` more may be opened.
    pub(super) fn make_room_for(&mut self, n: usize) {
        let max = self.cfg.max_open_files;
        let need = (self.tailers.len() + n).saturating_sub(max);
        if need == 0 {
            return;
        }
        let now = Instant::now();
        let mut idle: Vec<(Instant, u64)> = self
            .tailers
            .iter()
            .filter(|t| !t.detached && !t.feed.has_pending())
            .filter_map(|t| t.idle_since.filter(|s| now.duration_since(*s) >= PARK_IDLE).map(|s| (s, t.key)))
            .collect();
        if idle.is_empty() {
            return;
        }
        idle.sort_unstable();
        idle.truncate(need);
        let park: std::collections::HashSet<u64> = idle.into_iter().map(|(_, k)| k).collect();
        let (out, keep): (Vec<Tailer>, Vec<Tailer>) =
            std::mem::take(&mut self.tailers).into_iter().partition(|t| park.contains(&t.key));
        self.tailers = keep;
        for t in out {
            tracing::debug!(path = %t.path.display(), "parking idle file to stay under max_open_files");
            self.park(t);
        }
    }

    /// Closes `t` and remembers it.
    pub(super) fn park(&mut self, t: Tailer) {
        let meta = t.file.metadata();
        let offset = t.feed.safe_offset();
        // Size and time as of now; a file with bytes not yet read (or a
        // stat that failed) is looked at again at the next scan.
        let seen = match meta {
            Ok(m) if m.len() == t.offset => (m.len(), mtime_ns(&m)),
            _ => (u64::MAX, 0),
        };
        t.status.set_state(FileState::Parked);
        self.positions.keep_replay(t.key, t.replay, offset);
        let p = Parked { key: t.key, fp: t.fp, offset, seen, since: t.since, status: t.status };
        self.parked.insert((t.dev, t.ino), p);
    }

    /// After a file was opened (the last tailer): over `max_open_files`, it
    /// is read to its end now and parked.
    pub(super) fn read_through_if_over(&mut self) {
        if self.tailers.len() <= self.cfg.max_open_files {
            return;
        }
        let i = self.tailers.len() - 1;
        while self.read_turn(i) == Turn::More && !self.out.stopped() {}
        let t = self.tailers.swap_remove(i);
        self.park(t);
    }

    /// Parked files the scan did not find (`claimed`: the files it found)
    /// were renamed away or deleted: released with how far their lines were
    /// handed on, to be looked for as orphans (`rotated`) once those lines
    /// are delivered; where each went is watched for meanwhile (`moved`).
    pub(super) fn release_moved(&mut self, claimed: &HashSet<(u64, u64)>) {
        let moved: Vec<(u64, u64)> = self.parked.keys().filter(|id| !claimed.contains(id)).copied().collect();
        for id in moved {
            if let Some(p) = self.parked.remove(&id) {
                self.positions.release(p.key, p.offset, p.offset);
                self.moved_to.released(id, p.status.path());
            }
        }
        self.moved_to.look(self.arrivals.recent());
    }

    /// Reopens a parked file that changed; a file whose first bytes changed
    /// starts again at 0.
    pub(super) fn unpark(&mut self, id: (u64, u64), p: Parked) {
        let path = p.status.path();
        let (file, meta) = match open_regular(&path) {
            Ok(Some(f)) => f,
            Ok(None) | Err(_) => {
                self.positions.release(p.key, p.offset, p.offset);
                return;
            }
        };
        if (meta.dev(), meta.ino()) != id {
            // The path names another file now (rotated since the scan looked):
            // the parked file waits for a scan to find it under its new name.
            self.parked.insert(id, p);
            return;
        }
        let (now_fp, prefix) = fingerprint::of_file(&file);
        let same = p.fp.matches(&prefix) && meta.len() >= p.offset;
        let offset = if same { p.offset } else { 0 };
        let fp = if same { p.fp } else { now_fp };
        // Lines of the old content may still be in flight: new content, new key.
        let key = if same { p.key } else { self.positions.restart(p.key, fp) };
        if !same {
            self.event("truncated");
        }
        self.event("opened");
        let filename = crate::util::pathtext::text(&path).into_owned();
        let feed = LineFeed::new(&self.spec, &self.stages, Some(&filename), offset);
        p.status.set_state(FileState::Following);
        if !same {
            p.status.restart(key);
        }
        let replay = self.take_replay(key, offset);
        self.tailers.push(Tailer {
            replay,
            status: p.status,
            key,
            linked: is_link(&path),
            path,
            file,
            dev: id.0,
            ino: id.1,
            fp,
            offset,
            feed,
            detached: false,
            idle_since: None,
            size: meta.len(),
            queued: offset,
            since: if same { p.since } else { std::time::SystemTime::now() },
            restarted: false,
        });
        self.read_through_if_over();
    }
}
