//! A scan of a file source: the paths its globs name now, each looked at
//! once. A path of an open file (renamed, or still at its path), of a
//! parked file, of a file held while empty, or a new file; then the open
//! files whose path names another file now (rotated or deleted), files
//! rewritten in place, and generations never seen (`generations.rs`).
//! Opening is in `open.rs`, parking in `park.rs`.

use std::collections::{HashMap, HashSet};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use super::{FileSource, Mode};
use crate::metrics::Metrics;
use crate::status::report::FileState;

/// What the candidates of one scan are, by device and inode.
#[derive(Default)]
struct Found {
    /// Every file a candidate path names.
    claimed: HashSet<(u64, u64)>,
    /// Parked files changed since they were parked.
    changed: Vec<(u64, u64)>,
    /// New files by path and id (not their whole metadata: 100,000 new files).
    new: Vec<(PathBuf, (u64, u64))>,
    /// Known files found at their paths: when, is what tells history from
    /// generations never seen (see `generations`).
    at_path: Vec<u64>,
    /// Parked files unchanged at their paths.
    parked_seen: Vec<u64>,
    /// Files held while empty, at the paths found now.
    held_seen: HashMap<(u64, u64), PathBuf>,
}

impl FileSource {
    pub(super) fn scan(&mut self) {
        self.saw_empty = false;
        // At start: when each known path's entry was last written, taken
        // before this scan tracks anything (see `generations`).
        let previous = (self.first_scan && self.mode == Mode::Follow).then(|| self.positions.last_seen_by_path());
        let Some(found) = self.look() else { return };
        let Found { claimed, changed, new, at_path, parked_seen, held_seen } = found;
        self.release_moved(&claimed);
        self.make_room_for(changed.len() + new.len());
        for id in changed {
            if let Some(p) = self.parked.remove(&id) {
                self.unpark(id, p);
            }
        }
        self.positions.seen_at_path(&parked_seen);
        self.newborn_seen(&held_seen);
        // A file that appeared while the source ran may have been rotated
        // before this scan saw it (Docker rotates a busy container's log
        // within a fraction of a second): its rotations since the start are
        // generations never seen.
        let mut rotated: Vec<(PathBuf, SystemTime)> = Vec::new();
        for (path, id) in new {
            if self.out.stopped() {
                return;
            }
            self.open(&path, id);
            if !self.first_scan && self.mode == Mode::Follow {
                rotated.push((path, self.started));
            }
        }
        self.untarget(&claimed);
        self.detach_moved(&claimed, &mut rotated);
        self.check_contents(at_path);
        self.resume_rotated();
        // Generations never seen: found among what appeared (`arrivals`), and
        // by a listing where arrivals cannot tell (no events, a directory
        // polled, arrivals lost: then beside every followed path).
        rotated.retain(|(p, _)| !self.arrivals.cover(p));
        if let Some(since) = self.arrivals.lost_since() {
            let followed = self.tailers.iter().filter(|t| !t.detached).map(|t| &t.path);
            rotated.extend(followed.chain(self.newborn.iter().map(|n| &n.path)).map(|p| (p.clone(), since)));
        }
        self.look_beside_newborn();
        if let Some(previous) = previous {
            let epoch = SystemTime::UNIX_EPOCH;
            rotated.extend(
                previous
                    .into_iter()
                    .filter(|(p, _)| self.files.matches(p))
                    .map(|(p, ms)| (p, epoch + Duration::from_millis(ms))),
            );
        }
        if !rotated.is_empty() {
            self.read_missed_generations(&rotated);
        }
        self.look_at_arrivals();
        self.first_scan = false;
    }

    /// Looks at every candidate path once; `None` when told to stop.
    fn look(&mut self) -> Option<Found> {
        let candidates = self.named.paths(&self.files, &self.arrivals, self.cfg.scan_interval.get());
        let open: HashMap<(u64, u64), usize> =
            self.tailers.iter().enumerate().map(|(i, t)| ((t.dev, t.ino), i)).collect();
        let held: HashSet<(u64, u64)> = self.newborn.iter().map(|n| (n.dev, n.ino)).collect();
        let mut f = Found::default();
        for path in candidates {
            // Told to stop: the rest of a scan of 100,000 files waits for the next run
            // (the shutdown deadline holds while a scan looks, see `agent`).
            if self.out.stopped() {
                return None;
            }
            let meta = match std::fs::metadata(&path) {
                Ok(m) => m,
                Err(e) => {
                    if e.kind() == std::io::ErrorKind::NotFound {
                        self.named.gone(&path);
                    }
                    continue;
                }
            };
            if !meta.is_file() {
                continue;
            }
            let id = (meta.dev(), meta.ino());
            if let Some(&i) = open.get(&id) {
                self.open_file_at(i, id, path, &mut f);
                f.claimed.insert(id);
                continue;
            }
            if f.claimed.contains(&id) {
                continue;
            }
            f.claimed.insert(id);
            if held.contains(&id) {
                f.held_seen.insert(id, path);
                continue;
            }
            if let Some(p) = self.parked.get_mut(&id) {
                if !p.changed(&meta) {
                    // Unchanged since it was parked: its content, at its path.
                    f.parked_seen.push(p.key);
                }
                if !p.status.is_at(&path) {
                    p.status.renamed(&path);
                    self.positions.renamed(p.key, &path);
                }
                if p.changed(&meta) {
                    f.changed.push(id);
                }
                continue;
            }
            f.new.push((path, id));
        }
        Some(f)
    }

    /// An open file (tailer `i`) found at `path`: at its own path, or
    /// renamed there.
    fn open_file_at(&mut self, i: usize, id: (u64, u64), path: PathBuf, f: &mut Found) {
        let t = &mut self.tailers[i];
        if !t.detached && t.path == path {
            f.at_path.push(t.key);
        }
        if t.path != path && (!f.claimed.contains(&id)) && (t.detached || !path.exists_as(&t.path)) {
            tracing::info!(from = %t.path.display(), to = %path.display(), "file renamed; still reading it");
            t.path = path.clone();
            t.status.renamed(&path);
            self.positions.renamed(t.key, &path);
        }
    }

    /// Files whose path now names another file, or nothing: rotated or
    /// deleted. Generations between theirs and the path's new file may
    /// have come and gone unseen (see `generations`): added to `rotated`.
    fn detach_moved(&mut self, claimed: &HashSet<(u64, u64)>, rotated: &mut Vec<(PathBuf, SystemTime)>) {
        for t in &mut self.tailers {
            if t.detached {
                continue;
            }
            let same = std::fs::metadata(&t.path).map(|m| (m.dev(), m.ino()) == (t.dev, t.ino)).unwrap_or(false);
            if !same && !claimed.contains(&(t.dev, t.ino)) {
                rotated.push((t.path.clone(), t.since));
                t.detached = true;
                t.status.set_state(FileState::Draining);
                let what = if t.path.exists() { "rotated" } else { "deleted" };
                tracing::info!(path = %t.path.display(), "file {what}; reading it to its end before closing it");
                Metrics::get().file_events.with_label_values(&[&self.stages.name, what]).inc();
            }
        }
    }

    /// A file rewritten in place (its first bytes changed) starts again at 0.
    /// One found at its path with its content as known was seen there now.
    fn check_contents(&mut self, at_path: Vec<u64>) {
        let mut seen: Vec<u64> = Vec::with_capacity(at_path.len());
        let at_path: HashSet<u64> = at_path.into_iter().collect();
        for i in 0..self.tailers.len() {
            match self.tailers[i].content_check() {
                Some(false) => self.truncated(i),
                Some(true) if at_path.contains(&self.tailers[i].key) => seen.push(self.tailers[i].key),
                _ => {}
            }
        }
        self.positions.seen_at_path(&seen);
    }
}

trait PathExt {
    /// True when `self` and `other` both exist and are the same file.
    fn exists_as(&self, other: &Path) -> bool;
}

impl PathExt for Path {
    fn exists_as(&self, other: &Path) -> bool {
        match (std::fs::metadata(self), std::fs::metadata(other)) {
            (Ok(a), Ok(b)) => (a.dev(), a.ino()) == (b.dev(), b.ino()),
            _ => false,
        }
    }
}
