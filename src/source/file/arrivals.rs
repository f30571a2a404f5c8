//! Generations found by what appeared, not by listing directories.
//!
//! Every generation the agent never saw came into its directory at some
//! point: created there (a copy), or moved there (a rename). The inotify
//! reader hands each source the names of the entries created in or moved
//! into its directories (`IN_CREATE`, `IN_MOVED_TO`), and each scan looks at
//! those only: an entry whose name is a rotation of a path the include
//! globs name (`app.log.1`, `app-20261123.log`: see `generations`), that
//! is a regular, uncompressed file, not followed, changed since the source
//! started and unknown to the positions store (by its first bytes) is a
//! generation never seen, read as `generations` reads them. So a look costs
//! what appeared since the last scan (one `lstat` per entry named as a
//! rotation, one open and fingerprint per unknown one), not the directory:
//! a mass rotation of 5,000 files a second leaves 150,000 entries after
//! 30 s, and each look used to list and `lstat` all of them.
//!
//! An entry found empty (a copy being made) or shorter than a fingerprint
//! and written within the last second (maybe a copy half made, whose first
//! bytes could pass for new content) is looked at again at later scans, for
//! up to a minute. The same looks close the race of a file held while
//! empty: written, then copied away and truncated before the agent read it,
//! its copy is an arrival like any other.
//!
//! Directories are listed, as before, when arrivals cannot tell: at start
//! (generations made while the agent was down), without events (polling, or
//! the `notify` crate, whose events carry no names), for directories that
//! could not be watched, and when arrivals were lost (the inotify queue
//! overflowed, or a directory was watched again after changing unseen):
//! then beside every followed path, for what changed since the scan before
//! the last complete one began.

use std::collections::HashSet;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use super::generations::rotation_base;
use super::FileSource;
use crate::positions::{FINGERPRINT_BYTES, FORGET_AFTER_SECS};
use crate::source::watch::{Events, PolledDirs};

/// An entry shorter than a fingerprint and changed this recently may be a
/// copy still being made: looked at again later.
const SETTLE: Duration = Duration::from_secs(1);
/// How long an entry found empty (or still settling) is looked at again.
const WAIT_AT_MOST: Duration = Duration::from_secs(60);
/// Entries waiting to be looked at again, at most.
const MAX_WAITING: usize = 10_000;
/// Names of compressed rotations, never opened.
const COMPRESSED: &[&str] = &["gz", "bz2", "xz", "zst", "lz4", "zip"];

/// What the source knows of the entries that appeared in its directories.
#[derive(Default)]
pub(super) struct Arrivals {
    /// Events name what appears (inotify): looks take arrivals, not listings.
    named: bool,
    /// Some arrivals since the last scan may be missing: this scan lists.
    lost: bool,
    /// Directories without events (see `watch::PolledDirs`): looks there list.
    polled: Vec<(PathBuf, bool)>,
    /// Taken for this scan.
    fresh: Vec<PathBuf>,
    /// Taken for the scan before (see [`Arrivals::recent`]).
    previous: Vec<PathBuf>,
    /// Entries to look at again: (path, first looked at).
    waiting: Vec<(PathBuf, Instant)>,
    /// When the last three scans began (this one last).
    scans: [Option<SystemTime>; 3],
}

impl Arrivals {
    /// Takes what appeared since the last scan (called as a scan begins).
    pub(super) fn take(&mut self, events: Option<&mut Events>, polled: &PolledDirs) {
        self.scans = [self.scans[1], self.scans[2], Some(SystemTime::now())];
        self.polled = polled.dirs().to_vec();
        match events.and_then(Events::take_arrivals) {
            Some((fresh, lost)) => {
                self.named = true;
                self.lost = lost;
                self.previous = std::mem::replace(&mut self.fresh, fresh);
            }
            None => {
                self.named = false;
                self.fresh.clear();
                self.previous.clear();
                self.waiting.clear();
            }
        }
    }

    /// True when arrivals name every entry that appeared beside `path` since
    /// the last scan: no listing is needed to find its generations. Never at
    /// the first scan (what came before the source started is listed).
    pub(super) fn cover(&self, path: &Path) -> bool {
        let Some(dir) = path.parent() else { return false };
        self.named
            && !self.lost
            && self.scans[1].is_some()
            && !self.polled.iter().any(|(d, recursive)| if *recursive { dir.starts_with(d) } else { dir == d })
    }

    /// True when arrivals name every entry that appeared in every directory
    /// of the source since the last scan (see [`Arrivals::cover`]).
    pub(super) fn cover_all(&self) -> bool {
        self.named && !self.lost && self.scans[1].is_some() && self.polled.is_empty()
    }

    /// What appeared since the last scan (taken for this one).
    pub(super) fn fresh(&self) -> &[PathBuf] {
        &self.fresh
    }

    /// What appeared since the scan before the last one: a file renamed
    /// between a scan's taking its arrivals and its looking is missed by
    /// that scan and found by the next, whose `fresh` no longer names it.
    pub(super) fn recent(&self) -> impl Iterator<Item = &PathBuf> {
        self.fresh.iter().chain(&self.previous)
    }

    /// Arrivals were lost: since when a listing has to look. A generation
    /// never seen whose arrival was lost was made after the glob listing of
    /// the scan before the last one (else that scan opened it, or took its
    /// arrival): since that scan began, less a second of clock coarseness.
    pub(super) fn lost_since(&self) -> Option<SystemTime> {
        let since = self.scans[0].unwrap_or(SystemTime::UNIX_EPOCH);
        (self.named && self.lost).then(|| since.checked_sub(Duration::from_secs(1)).unwrap_or(since))
    }

    /// When an entry waiting should be looked at again.
    pub(super) fn recheck_at(&self) -> Option<Instant> {
        (!self.waiting.is_empty()).then(|| Instant::now() + SETTLE / 2)
    }
}

impl FileSource {
    /// Looks at what appeared since the last scan (and what waits to be
    /// looked at again) for generations never seen; see the module
    /// documentation. Opens those found as `generations` does.
    pub(super) fn look_at_arrivals(&mut self) {
        let fresh = std::mem::take(&mut self.arrivals.fresh);
        let waiting = std::mem::take(&mut self.arrivals.waiting);
        if fresh.is_empty() && waiting.is_empty() {
            return;
        }
        let keep = Duration::from_secs(FORGET_AFTER_SECS.saturating_sub(3600));
        let oldest = SystemTime::now().checked_sub(keep).unwrap_or(SystemTime::UNIX_EPOCH);
        // Content from before the source started is history (as `generations` has it).
        let floor = self.started.max(oldest);
        let followed: HashSet<(u64, u64)> = self
            .tailers
            .iter()
            .map(|t| (t.dev, t.ino))
            .chain(self.parked.keys().copied())
            .chain(self.newborn.iter().map(|n| (n.dev, n.ino)))
            .collect();
        let now = Instant::now();
        let mut seen: HashSet<PathBuf> = HashSet::new();
        let all = fresh.iter().cloned().map(|p| (p, now)).chain(waiting);
        for (path, first) in all {
            if !seen.insert(path.clone()) {
                continue;
            }
            let Some(label) = self.rotation_label(&path) else { continue };
            let Ok(m) = std::fs::symlink_metadata(&path) else { continue };
            if !m.is_file() || followed.contains(&(m.dev(), m.ino())) {
                continue;
            }
            let modified = m.modified().unwrap_or(SystemTime::UNIX_EPOCH);
            if modified <= floor {
                continue;
            }
            let settling = m.len() < FINGERPRINT_BYTES as u64
                && SystemTime::now().duration_since(modified).is_ok_and(|age| age < SETTLE);
            if m.len() == 0 || settling {
                if now.duration_since(first) < WAIT_AT_MOST && self.arrivals.waiting.len() < MAX_WAITING {
                    self.arrivals.waiting.push((path, first));
                }
                continue;
            }
            self.unseen.insert((modified, path, label));
        }
        // Kept to be `previous` at the next scan.
        self.arrivals.fresh = fresh;
        self.open_unseen();
    }

    /// The path the include globs name whose rotation `path` is (by name, as
    /// `generations` has it); none for a path the globs name themselves (the
    /// scan's) or a compressed one.
    fn rotation_label(&self, path: &Path) -> Option<PathBuf> {
        let (dir, name) = (path.parent()?, path.file_name()?.to_str()?);
        if path.extension().is_some_and(|x| COMPRESSED.iter().any(|c| x == *c)) || self.files.matches(path) {
            return None;
        }
        rotation_base(name, |base| {
            let label = dir.join(base);
            self.files.matches(&label).then_some(label)
        })
    }
}
