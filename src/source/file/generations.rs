//! Generations of a file that the agent never saw.
//!
//! A generation is what a path held between two rotations. One can come and
//! go unseen: created and rotated away while the agent was down (or before
//! its position was first saved), or while the agent was stuck behind a full
//! queue and logrotate moved copies along (`app.log.1` -> `app.log.2`). Such
//! a generation now sits beside the path under a rotated name, and no
//! positions entry knows its first bytes.
//!
//! While file-system events name what appears in a directory, generations
//! are found among those arrivals instead (see `arrivals`): the looks below
//! list a directory only where arrivals cannot tell (at start, without
//! events, in a directory polled, after events were lost).
//!
//! It is looked for when the agent has reason to think one slipped by: when
//! a followed file was rotated away or truncated (beside that path, for
//! files changed since the agent began following the old content), when a
//! new file appears at a path while the source runs (for files changed since
//! the source started: Docker may rotate a new container's log before a scan
//! saw it), when the first bytes of a file found empty or truncated become
//! known (a copytruncate meanwhile could not be told from an append), and at
//! start (beside every path the positions file knows, for files changed
//! since a scan last found that path's known content there).
//! Files older than the positions' tombstones (7 days, less an hour) are
//! never taken for generations. A sibling is a generation of
//! `app.log` when its name is the path's name or stem followed by a rotation
//! suffix (`app.log.1`, `app.log-20261123`, `app.log.ct3`, `app-20261123.log`,
//! `app.1.log`), no include glob names it, it is not followed, and no
//! positions entry, live or finished (a tombstone kept for
//! `FORGET_AFTER`), knows its first bytes. It is read from its start, oldest
//! first, labelled with the path, under a positions entry of its own (a kill
//! -9 meanwhile finds it again as an orphan), and finished at its end, which
//! makes it known: it is never read twice. Rotated files older than that
//! time are history from before the agent and are never read.
//!
//! Bounded: one directory listing per directory and look, read whole
//! however many entries it holds; only candidates that passed the name and
//! time tests are opened, oldest first, as many at once as
//! `max_open_files` leaves room for (the others wait their turn in the
//! source, not for a later look that may never come: a mass rotation once
//! found 24,000 generations at once, ran out of descriptors opening them,
//! and lost the last ones without a word); compressed files are never opened.
//! A look begins where the last listing of the same path began, so a
//! generation made while the agent was behind is never between two looks.

use std::collections::HashMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use super::rotated::siblings_named;
use super::FileSource;
use crate::metrics::Metrics;
use crate::positions::FORGET_AFTER_SECS;
use crate::source::fingerprint::{self, open_regular};

/// Paths whose last listing time is kept; past it they are forgotten (and
/// the next look at each goes back to the time its caller gives).
const MAX_LOOKED: usize = 100_000;
/// Generations found and waiting to be opened, at most; past it the rest are
/// found again by a later look.
const MAX_WAITING: usize = 1_000_000;

/// Generations (and other files read to their end) open at once, at least,
/// even with `max_open_files` taken by followed files: within the
/// descriptors the agent keeps in reserve beside them (see `agent::sources`).
const GENERATIONS_OPEN: usize = 64;

/// The key of `path` in `FileSource::looked`: a 128-bit hash (16 bytes, not
/// a copy of each of 10,000 paths); two of 100,000 paths sharing one is not
/// to be expected (about 1 in 10^28).
fn path_hash(path: &Path) -> u128 {
    xxhash_rust::xxh3::xxh3_128(path.as_os_str().as_encoded_bytes())
}

/// How far behind the real time a file's times may be: the kernel stamps
/// them from a clock that advances once a tick (4 ms at 250 Hz, 10 at 100).
const COARSE_CLOCK: Duration = Duration::from_millis(20);

/// What may stand between a file's name (or stem) and a rotation's suffix.
const SEPARATORS: &[char] = &['.', '-', '_'];

/// The name in `names` whose rotation `sibling` is, if any (the longest).
fn rotation_of<'a, T>(sibling: &str, names: &'a HashMap<&str, T>) -> Option<&'a T> {
    rotation_base(sibling, |base| names.get(base))
}

/// What `found` gives for the name whose rotation `sibling` is: tried for
/// each name `sibling` may extend, the longest first.
pub(super) fn rotation_base<T>(sibling: &str, found: impl Fn(&str) -> Option<T>) -> Option<T> {
    let ext = sibling.rsplit_once('.').map(|(_, e)| e).filter(|e| !e.is_empty());
    let cuts: Vec<usize> = sibling.match_indices(SEPARATORS).map(|(i, _)| i).filter(|i| *i > 0).collect();
    for &i in cuts.iter().rev() {
        let base = &sibling[..i];
        // `app.log.1`, `app.log-20261123`: the name, then a suffix.
        if let Some(v) = found(base) {
            return Some(v);
        }
        // `app-20261123.log`, `app.1.log`: the stem, a suffix, the extension.
        if let Some(ext) = ext {
            let named = format!("{base}.{ext}");
            if named != sibling {
                if let Some(v) = found(named.as_str()) {
                    return Some(v);
                }
            }
        }
    }
    None
}

impl FileSource {
    /// Reads the generations of each of `paths` that the agent never saw and
    /// that changed after that path's time (see the module documentation).
    pub(super) fn read_missed_generations(&mut self, paths: &[(PathBuf, SystemTime)]) {
        // Tombstones are kept FORGET_AFTER: a file older than that may have
        // been read and forgotten, so it is never taken for a generation.
        let keep = Duration::from_secs(FORGET_AFTER_SECS.saturating_sub(3600));
        let oldest = SystemTime::now().checked_sub(keep).unwrap_or(SystemTime::UNIX_EPOCH);
        // Names borrowed from `paths`: a scan that found 10,000 new files
        // makes no second copy of their paths.
        let mut by_dir: HashMap<&Path, HashMap<&str, (&Path, SystemTime)>> = HashMap::new();
        for (path, since) in paths {
            // A generation made after the last listing of this path's
            // rotations began was not in it, whatever `since` says: a file
            // opened at a path that was rotated again meanwhile is younger
            // than the generation between.
            let since = self.looked.get(&path_hash(path)).map_or(*since, |l| (*since).min(*l));
            let since = since.max(oldest);
            let (Some(dir), Some(name)) = (path.parent(), path.file_name().and_then(|n| n.to_str())) else {
                continue;
            };
            let names = by_dir.entry(dir).or_default();
            let slot = names.entry(name).or_insert((path.as_path(), since));
            // The latest time wins: what changed before it was seen (or is history).
            slot.1 = slot.1.max(since);
        }
        if self.looked.len() > MAX_LOOKED {
            self.looked.clear();
        }
        for (dir, names) in &by_dir {
            let listed = SystemTime::now();
            for (path, _) in names.values() {
                self.looked.insert(path_hash(path), listed);
            }
            // Only the entries named as a rotation of one of `names` are looked
            // at further: the directory of those 10,000 files is listed, not kept.
            let named = |name: &str| rotation_of(name, names).is_some();
            for s in siblings_named(dir, named) {
                let Some(name) = s.path.file_name().and_then(|n| n.to_str()) else { continue };
                let Some((label, since)) = rotation_of(name, names) else { continue };
                if s.modified <= *since || s.size == 0 || self.files.matches(&s.path) || self.is_followed(s.dev, s.ino)
                {
                    continue;
                }
                if self.unseen.len() < MAX_WAITING {
                    self.unseen.insert((s.modified, s.path, label.to_path_buf()));
                }
            }
        }
        self.open_unseen();
    }

    /// Tailer `i` learned more of its first bytes, and its content was empty
    /// or began at a truncation: its file was shorter than a fingerprint when
    /// that content was first seen, so a copytruncate since then that left it
    /// as short again could pass for an append (nothing, or a prefix the next
    /// content shares, to tell them apart). The copy of what it held between
    /// (`app.log.1`, never read) is a generation the agent never saw: looked
    /// for beside the path, as after a truncation, but only when the
    /// directory changed (a copy made, a file renamed) since this content
    /// was first seen or the path's last listing. New files of a rename
    /// rotation (never truncated) are not looked after this way.
    pub(super) fn look_after_fingerprint_grew(&mut self, i: usize) {
        let t = &self.tailers[i];
        let (path, since) = (t.path.clone(), t.since);
        self.look_if_dir_changed(path, since);
    }

    /// Files held while empty, where arrivals do not tell what appeared
    /// beside them: one written, copied away and truncated before the agent
    /// read it left its copy there, unseen (see `open`). Looked for when the
    /// directory changed since the file was found or its path last listed.
    pub(super) fn look_beside_newborn(&mut self) {
        let held: Vec<(PathBuf, SystemTime)> = self
            .newborn
            .iter()
            .filter(|n| self.dir_changed_since(&n.path, n.seen))
            .map(|n| (n.path.clone(), n.seen))
            .collect();
        if !held.is_empty() {
            self.read_missed_generations(&held);
        }
    }

    /// Looks for generations of `path` changed since `since` when its
    /// directory changed since then or since the path's last listing (see
    /// [`FileSource::dir_changed_since`]).
    pub(super) fn look_if_dir_changed(&mut self, path: PathBuf, since: SystemTime) {
        if self.dir_changed_since(&path, since) {
            self.read_missed_generations(&[(path, since)]);
        }
    }

    /// True when arrivals do not tell what appeared beside `path` (see
    /// `arrivals`) and its directory changed since `since` or since the
    /// path's last listing.
    fn dir_changed_since(&self, path: &Path, since: SystemTime) -> bool {
        let Some(dir) = path.parent().filter(|_| !self.arrivals.cover(path)) else { return false };
        let last = self.looked.get(&path_hash(path)).map_or(since, |l| since.max(*l));
        // File times come from a coarse clock, a tick behind the real time.
        let last = last.checked_sub(COARSE_CLOCK).unwrap_or(SystemTime::UNIX_EPOCH);
        std::fs::metadata(dir).and_then(|m| m.modified()).is_ok_and(|changed| changed > last)
    }

    /// Opens the generations found (oldest first) as far as
    /// `max_open_files` leaves room, and [`GENERATIONS_OPEN`] at least; the
    /// rest wait for the ones open to be read and closed (called every
    /// round). True when it opened one.
    pub(super) fn open_unseen(&mut self) -> bool {
        if self.unseen.is_empty() {
            return false;
        }
        self.make_room_for(self.unseen.len());
        let detached = self.tailers.iter().filter(|t| t.detached).count();
        let mut room =
            self.cfg.max_open_files.saturating_sub(self.tailers.len()).max(GENERATIONS_OPEN.saturating_sub(detached));
        let before = room;
        while room > 0 {
            let Some((modified, path, label)) = self.unseen.pop_first() else { break };
            match self.read_unseen(&label, &path, modified) {
                Ok(true) => room -= 1,
                Ok(false) => {}
                Err(e) => {
                    // Out of descriptors, say: it waits for the next round.
                    if self.warned.insert(path.clone()) {
                        tracing::warn!(source = %self.name(), path = %path.display(), error = %e,
                            "cannot open a generation of a rotated file yet; trying again");
                    }
                    self.unseen.insert((modified, path, label));
                    break;
                }
            }
        }
        room < before
    }

    /// Reads `path`, a rotation of `label`, from its start unless a positions
    /// entry knows its content. True when it was opened to be read; an error
    /// other than its being gone is the caller's to retry.
    fn read_unseen(&mut self, label: &Path, path: &Path, modified: SystemTime) -> std::io::Result<bool> {
        let (file, meta) = match open_regular(path) {
            Ok(Some(f)) => f,
            Ok(None) => return Ok(false),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
            Err(e) => return Err(e),
        };
        if self.is_followed(meta.dev(), meta.ino()) {
            return Ok(false);
        }
        let (fp, prefix) = fingerprint::of_file(&file);
        if prefix.is_empty() || self.positions.knows(&prefix) {
            return Ok(false);
        }
        let name = self.name();
        tracing::info!(source = %name, path = %label.display(), rotated_to = %path.display(), bytes = meta.len(),
            "found a generation of the file that was rotated away before it was read; reading it");
        Metrics::get().files_recovered.with_label_values(&[&name, "unseen"]).inc();
        let key = self.positions.track(label, fp, meta.dev(), meta.ino(), 0);
        self.follow_detached(key, label, (path.to_path_buf(), file, meta), fp, 0, modified);
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rotated_names_are_known_by_the_name_or_stem_they_extend() {
        let names: HashMap<&str, &str> = [("app.log", "app"), ("a", "a")].into();
        for (sibling, of) in [
            ("app.log.1", Some("app")),
            ("app.log-20261123", Some("app")),
            ("app.log.ct3", Some("app")),
            ("app-20261123.log", Some("app")),
            ("app.1.log", Some("app")),
            ("app_2.log", Some("app")),
            ("a.log", Some("a")),
            ("app.log", None),
            ("apple.log", None),
            ("other.log.1", None),
            ("b-a.log", None),
        ] {
            assert_eq!(rotation_of(sibling, &names).copied(), of, "{sibling}");
        }
    }
}
