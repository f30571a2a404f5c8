//! Finding lines again that moved away before they were read.
//!
//! Two cases lose lines in a plain `tail -F`:
//!
//! - **Rotated while not followed.** The agent was down (or the file was
//!   parked) when logrotate renamed `app.log` to `app.log.1`; a new `app.log`
//!   took its place. The positions store still knows the old file (device,
//!   inode, fingerprint, delivered offset), but its path now names another
//!   file. At every scan, such a file is looked for beside its old path: first
//!   by device and inode (a rename keeps them), then by fingerprint among the
//!   most recently changed siblings at least as long as the delivered offset
//!   (a copy). Found: it is read from its delivered offset to its end, then
//!   released. Not found (deleted, compressed, moved elsewhere): the loss is
//!   counted (`tailship_files_lost_total{reason="gone"}`) and logged once.
//! - **copytruncate while behind.** logrotate copied `app.log` to `app.log.1`
//!   and truncated `app.log` before the agent read the end. When a tailer
//!   finds its file shorter than its offset, the copy is looked for beside it
//!   (a file whose first bytes are the old content's and that is at least as
//!   long as what was handled); the copy is read from there to its end under
//!   the old content's positions key, while the truncated file starts again
//!   at 0 under a new key. Only what the application wrote between the copy
//!   and the truncate is lost.
//!
//! Work stays bounded: a parked file renamed away is found where the
//! arrivals said it went (`moved`), one `lstat`; the other orphans cost one
//! directory listing per directory with orphans per scan, read as it goes
//! however many entries the directory holds (a mass rotation leaves
//! thousands of generations beside their paths), each orphan one lookup by
//! device and inode, not a pass over the listing; at most
//! [`MAX_FINGERPRINT_READS`] files opened to compare fingerprints per orphan, and compressed siblings (`.gz`, `.xz`, ...) are
//! never opened. An orphan is looked for until it is found or known gone, then
//! finished, so it costs nothing afterwards. No file is read twice: a file
//! already open or parked (by device and inode) is never adopted.

use std::collections::HashMap;
use std::fs::File;
use std::os::unix::fs::{DirEntryExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use super::FileSource;
use crate::metrics::Metrics;
use crate::positions::{Fingerprint, Orphan};
use crate::source::fingerprint::{self, open_regular};
use crate::source::tailer::Tailer;
use crate::source::LineFeed;
use crate::status::report::FileState;

/// Files opened to compare fingerprints, at most, per orphan and scan.
const MAX_FINGERPRINT_READS: usize = 16;
/// Names of compressed rotations, never opened.
const COMPRESSED: &[&str] = &["gz", "bz2", "xz", "zst", "lz4", "zip"];

/// A file found again: its path, the open file and its metadata.
type Found = (PathBuf, File, std::fs::Metadata);

/// A regular file beside an orphan's path.
#[derive(Debug, Clone)]
pub(super) struct Sibling {
    pub path: PathBuf,
    pub dev: u64,
    pub ino: u64,
    pub size: u64,
    pub modified: SystemTime,
}

/// The regular, uncompressed files of a directory, newest first, indexed by device and inode.
#[derive(Debug, Default)]
pub(super) struct Siblings {
    pub list: Vec<Sibling>,
    by_id: HashMap<(u64, u64), usize>,
}

impl Siblings {
    fn by_id(&self, id: (u64, u64)) -> Option<&Sibling> {
        self.by_id.get(&id).map(|&i| &self.list[i])
    }
}

impl Siblings {
    /// `list`, newest first, indexed.
    pub(super) fn of(mut list: Vec<Sibling>) -> Self {
        list.sort_by_key(|s| std::cmp::Reverse(s.modified));
        let by_id = list.iter().enumerate().map(|(i, s)| ((s.dev, s.ino), i)).collect();
        Siblings { list, by_id }
    }
}

/// The regular, uncompressed files of `dir`, newest first: every one, however many.
pub(super) fn siblings(dir: &Path) -> Siblings {
    Siblings::of(siblings_named(dir, |_| true).collect())
}

/// The regular, uncompressed files of `dir` whose name `named` takes (a name
/// that is not UTF-8 is taken as ""), in the directory's order: read as the
/// listing goes, and only those named are looked at (one `lstat` each), so a
/// directory of 10,000 files costs neither a list of them nor 10,000 calls.
pub(super) fn siblings_named(dir: &Path, mut named: impl FnMut(&str) -> bool) -> impl Iterator<Item = Sibling> {
    let entries = std::fs::read_dir(dir).into_iter().flatten();
    entries.filter_map(Result::ok).filter_map(move |e| {
        if !named(e.file_name().to_str().unwrap_or("")) {
            return None;
        }
        let path = e.path();
        if path.extension().is_some_and(|x| COMPRESSED.iter().any(|c| x == *c)) {
            return None;
        }
        let m = e.metadata().ok()?;
        m.is_file().then(|| Sibling {
            path,
            dev: m.dev(),
            ino: m.ino(),
            size: m.len(),
            modified: m.modified().unwrap_or(SystemTime::UNIX_EPOCH),
        })
    })
}

/// Where each of `orphans` is now, when it was renamed within its
/// directory (what a rotation does): by device and inode, among the
/// entries of their directories, one listing each, read as it goes and
/// only the entries with an orphan's inode looked at. The whole listing,
/// kept and sorted, is made only for an orphan not found so (a copy, found
/// by its first bytes): a mass rotation parks thousands of files, which are
/// rotated while parked, and each scan held a listing of the 155,000
/// entries beside them (25 MiB) and `lstat`ed every one.
fn renamed_beside(orphans: &[Orphan]) -> HashMap<(u64, u64), PathBuf> {
    let mut wanted: HashMap<&Path, HashMap<u64, u64>> = HashMap::new();
    for o in orphans {
        wanted.entry(o.path.parent().unwrap_or(Path::new(""))).or_default().insert(o.ino, o.dev);
    }
    let mut out = HashMap::new();
    for (dir, inodes) in wanted {
        let Ok(entries) = std::fs::read_dir(dir) else { continue };
        for e in entries.filter_map(Result::ok) {
            let Some(&dev) = inodes.get(&e.ino()) else { continue };
            let path = e.path();
            if path.extension().is_some_and(|x| COMPRESSED.iter().any(|c| x == *c)) {
                continue;
            }
            if e.metadata().is_ok_and(|m| m.is_file() && (m.dev(), m.ino()) == (dev, e.ino())) {
                out.insert((dev, e.ino()), path);
            }
        }
    }
    out
}

/// Opens `path` when it is a regular file whose first bytes match `fp`.
fn open_if_same(path: &Path, fp: Fingerprint) -> Option<(File, std::fs::Metadata)> {
    let (file, meta) = open_regular(path).ok()??;
    let (_, prefix) = fingerprint::of_file(&file);
    fp.matches(&prefix).then_some((file, meta))
}

/// Looks among `siblings` for the file known by `fp` (and, first, by `dev`
/// and `ino`), at least `min_size` long, skipping files for which `taken` is true.
fn find(
    siblings: &Siblings,
    (dev, ino): (u64, u64),
    fp: Fingerprint,
    min_size: u64,
    taken: impl Fn(u64, u64) -> bool,
) -> Option<Found> {
    if let Some(s) = siblings.by_id((dev, ino)).filter(|s| !taken(s.dev, s.ino)) {
        if let Some((f, m)) = open_if_same(&s.path, fp) {
            return Some((s.path.clone(), f, m));
        }
    }
    siblings
        .list
        .iter()
        .filter(|s| s.size >= min_size && (s.dev, s.ino) != (dev, ino) && !taken(s.dev, s.ino))
        .take(MAX_FINGERPRINT_READS)
        .find_map(|s| open_if_same(&s.path, fp).map(|(f, m)| (s.path.clone(), f, m)))
}

impl FileSource {
    /// True when a file with this device and inode is open, parked or held empty.
    pub(super) fn is_followed(&self, dev: u64, ino: u64) -> bool {
        self.tailers.iter().any(|t| (t.dev, t.ino) == (dev, ino))
            || self.parked.contains_key(&(dev, ino))
            || self.newborn.iter().any(|n| (n.dev, n.ino) == (dev, ino))
    }

    /// Looks for this source's orphans (known files no source follows, whose
    /// path names another file now): reads the ones found, counts the others
    /// as lost. Runs after each scan opened what the globs name.
    pub(super) fn resume_rotated(&mut self) {
        let orphans: Vec<Orphan> =
            self.positions.orphans().into_iter().filter(|o| self.files.matches(&o.path)).collect();
        // (Device and inode alone prove nothing here: a deleted file's inode
        // is soon another file's. Every match below also checks the fingerprint.)
        let moved: Vec<Orphan> = orphans
            .into_iter()
            // Renamed away while parked, its new name maybe not seen yet: later.
            .filter(|o| !self.moved_to.awaited((o.dev, o.ino)))
            .filter(|o| {
                let at_path = std::fs::metadata(&o.path).ok().map(|m| (m.dev(), m.ino()));
                // Still where it was: the scan opens it (or it waits to be: parked, too old, ...).
                !(at_path == Some((o.dev, o.ino)) && open_if_same(&o.path, o.fp).is_some())
            })
            .collect();
        // Where each went: noted since it was released (`moved`) and still
        // there, else found by a listing.
        let still = |p: &Path, id: (u64, u64)| std::fs::symlink_metadata(p).is_ok_and(|m| (m.dev(), m.ino()) == id);
        let mut renamed: HashMap<(u64, u64), PathBuf> = moved
            .iter()
            .filter_map(|o| self.moved_to.get((o.dev, o.ino)).map(|p| ((o.dev, o.ino), p)))
            .filter(|(id, p)| still(p, *id))
            .map(|(id, p)| (id, p.to_path_buf()))
            .collect();
        let rest: Vec<Orphan> = moved.iter().filter(|o| !renamed.contains_key(&(o.dev, o.ino))).cloned().collect();
        renamed.extend(renamed_beside(&rest));
        let mut dirs: HashMap<PathBuf, Siblings> = HashMap::new();
        for o in moved {
            let taken = |d, i| self.is_followed(d, i);
            let dir = o.path.parent().map(Path::to_path_buf).unwrap_or_default();
            let found = match renamed.get(&(o.dev, o.ino)).filter(|_| !taken(o.dev, o.ino)) {
                Some(path) => open_if_same(path, o.fp).map(|(f, m)| (path.clone(), f, m)),
                None => None,
            };
            let found = found.or_else(|| {
                let sibs = dirs.entry(dir.clone()).or_insert_with(|| siblings(&dir));
                find(sibs, (o.dev, o.ino), o.fp, o.committed, taken)
            });
            match found {
                Some((_, _, meta)) if meta.len() <= o.committed.max(o.read_to) => {
                    self.moved_to.done((o.dev, o.ino));
                    self.positions.finish(o.key, meta.len())
                }
                Some((path, file, meta)) => {
                    let meta: std::fs::Metadata = meta;
                    self.make_room_for(1);
                    if self.tailers.len() >= self.cfg.max_open_files {
                        return;
                    }
                    self.moved_to.done((o.dev, o.ino));
                    let Some(offset) = self.positions.adopt(o.key, meta.dev(), meta.ino()) else { continue };
                    tracing::info!(source = %self.name(), from = %o.path.display(), to = %path.display(),
                        unread_bytes = meta.len() - offset, "found a file rotated while not followed; reading the rest of it");
                    Metrics::get().files_recovered.with_label_values(&[&self.name(), "rotated"]).inc();
                    self.follow_detached(o.key, &o.path, (path, file, meta), o.fp, offset, SystemTime::now());
                }
                None => {
                    self.moved_to.done((o.dev, o.ino));
                    let unread = o.size.saturating_sub(o.committed);
                    // Its size when last seen: it may have grown after, so 0 is "unknown", not "none".
                    let unread = if unread > 0 { unread.to_string() } else { "unknown".to_string() };
                    tracing::warn!(source = %self.name(), path = %o.path.display(), delivered = o.committed,
                        last_seen_size = o.size, unread_bytes_at_least = %unread,
                        "a file rotated away or deleted while not followed is not beside its old path: lines written after what was delivered are lost");
                    Metrics::get().files_lost.with_label_values(&[&self.name(), "gone"]).inc();
                    self.positions.finish(o.key, o.committed);
                }
            }
        }
    }

    /// Tailer `i` found its file shorter than its offset: read the rest of the
    /// old content from logrotate's copy beside it (if there is one), then
    /// start the file again at 0.
    pub(super) fn truncated(&mut self, i: usize) {
        let t = &self.tailers[i];
        let (old_key, old_fp, from, seen, id) = (t.key, t.fp, t.feed.safe_offset(), t.size, (t.dev, t.ino));
        let since = t.since;
        let path = t.path.clone();
        let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
        let copy = find(&siblings(&dir), (0, 0), old_fp, from, |d, n| (d, n) == id || self.is_followed(d, n));
        // Lines in flight at the last stop that the tailer had not read again
        // yet: the copy holds them now, and they go with the timestamps they had.
        let replay = self.tailers[i].replay.take();
        self.tailers[i].restart_at_zero(&self.positions);
        self.event("truncated");
        let name = self.name();
        match copy {
            Some((cpath, file, meta)) => {
                self.positions.adopt(old_key, meta.dev(), meta.ino());
                self.positions.keep_replay(old_key, replay, from);
                tracing::info!(source = %name, path = %path.display(), copy = %cpath.display(), from,
                    "file truncated; reading the rest of its old content from the copy beside it");
                Metrics::get().files_recovered.with_label_values(&[&name, "copy"]).inc();
                self.follow_detached(old_key, &path, (cpath, file, meta), old_fp, from, since);
            }
            None => {
                // The old content's key is done with once its lines in flight are acknowledged.
                self.positions.finish(old_key, from);
                if seen > from {
                    tracing::warn!(source = %name, path = %path.display(), unread_bytes_at_least = seen - from,
                        "file truncated before it was read to its end, and no copy is beside it: those lines are lost");
                    Metrics::get().files_lost.with_label_values(&[&name, "truncated"]).inc();
                }
            }
        }
        // Truncated more than once while behind: the contents between are in
        // older copies (logrotate moves `app.log.1` to `app.log.2`): they
        // appeared since the last scan, or are listed (see `arrivals`).
        if !self.arrivals.cover(&path) {
            self.read_missed_generations(&[(path, since)]);
        }
    }

    /// Follows the file `found` (labelled as `label_path`) from `offset` to its end, then closes it.
    /// `since`: when its content was first seen (see [`Tailer::since`]).
    pub(super) fn follow_detached(
        &mut self,
        key: u64,
        label_path: &Path,
        found: Found,
        fp: Fingerprint,
        offset: u64,
        since: SystemTime,
    ) {
        let (path, file, meta) = found;
        let filename = crate::util::pathtext::text(label_path).into_owned();
        let feed = LineFeed::new(&self.spec, &self.stages, Some(&filename), offset);
        self.event("opened");
        let (dev, ino, size) = (meta.dev(), meta.ino(), meta.len());
        let status = self.out.status.track(&self.name(), &path, key, dev, ino, offset, size, FileState::Draining);
        let replay = self.take_replay(key, offset);
        self.tailers.push(Tailer {
            replay,
            status,
            key,
            path,
            file,
            dev: meta.dev(),
            ino: meta.ino(),
            fp,
            offset,
            feed,
            detached: true,
            idle_since: None,
            size: meta.len(),
            queued: offset,
            linked: false,
            since,
            restarted: false,
        });
    }
}
