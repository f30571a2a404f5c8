//! Opening a file a scan found: know it by its first bytes, resume it where
//! it was delivered or track it as new, and start following it.
//!
//! A file found **empty** has nothing to be known by yet. It is not let go
//! until it has data: it is held open ("newborn", by device and inode) and
//! looked at (one `fstat`) at every round that reads the open files, so it is
//! followed as soon as it is written to, even while write events are off
//! (busy neighbours) or there are no events at all (polling), and even if it
//! is renamed away before the next scan: the descriptor still reads it. Before,
//! an empty new file was looked at again only at the next scan (up to
//! `scan_interval` later), and a file renamed away meanwhile was never read.
//! A newborn that is deleted, or renamed away and still empty after
//! [`DETACHED_IDLE`], is let go. At most [`MAX_NEWBORN`] are held (and never
//! more than `max_open_files` allows); beyond that, an empty file is looked at
//! again at the next scan, as before.

use std::fs::File;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use super::{FileSource, Mode};
use crate::config::StartAt;
use crate::metrics::Metrics;
use crate::source::fingerprint::{self, open_regular};
use crate::source::tailer::{is_link, Tailer, DETACHED_IDLE};
use crate::source::LineFeed;
use crate::status::report::FileState;

/// Empty files held open at most, per source.
const MAX_NEWBORN: usize = 256;

/// A file found empty, held open until it has data.
pub(super) struct Newborn {
    /// The path the scan found it under (its label, and where it is looked for).
    pub path: PathBuf,
    pub file: File,
    pub dev: u64,
    pub ino: u64,
    /// When it was found: the `since` of its content.
    pub seen: SystemTime,
    /// Since when a scan no longer finds it under a path of the globs.
    pub gone_since: Option<Instant>,
}

impl FileSource {
    /// Opens the file a scan found at `path` (with device and inode `scanned`).
    pub(super) fn open(&mut self, path: &Path, scanned: (u64, u64)) {
        let name = self.name();
        let (file, opened) = match open_regular(path) {
            Ok(Some(f)) => f,
            // Not a regular file any more (replaced since the scan looked): skip it.
            Ok(None) => return,
            Err(e) => {
                if self.warned.insert(path.to_path_buf()) {
                    tracing::warn!(source = %name, path = %path.display(), error = %e, "cannot open file; will retry at each scan");
                    self.event("unreadable");
                    self.out.status.file_unreadable(path, true);
                }
                return;
            }
        };
        if self.warned.remove(path) {
            self.out.status.file_unreadable(path, false);
        }
        // The path may name another file than the one the scan looked at (a
        // rotation in between): what counts is the file opened. If that one
        // is already followed (or held), it is not opened twice.
        let id = (opened.dev(), opened.ino());
        if id != scanned && self.is_followed(id.0, id.1) {
            return;
        }
        self.follow_opened(path, file, &opened, SystemTime::now());
    }

    /// The records of file `key`'s lines in flight at the last stop, for a
    /// tailer reading from `offset`; none when the stages may not give the
    /// same lines on a second read (they are then sent again as read: maybe
    /// twice, never lost to a line matched to another's record).
    pub(super) fn take_replay(&self, key: u64, offset: u64) -> Option<crate::positions::Replay> {
        let replay = self.positions.take_replay(key, offset)?;
        if self.stages.same_every_read() {
            return Some(replay);
        }
        tracing::info!(source = %self.name(), "lines in flight at the last stop are sent again as read: a sampling, rate limit or drop.older_than stage may not drop the same lines twice");
        None
    }

    /// A file untouched for longer than `ignore_older` is not read: said
    /// once (with its age and the key), counted, and listed in `/status` as
    /// skipped until it is written to again.
    fn skip_too_old(&mut self, path: &Path, meta: &std::fs::Metadata) {
        let id = (meta.dev(), meta.ino());
        if self.too_old.contains_key(&id) {
            return;
        }
        let name = self.name();
        let age = meta.modified().ok().and_then(|m| SystemTime::now().duration_since(m).ok()).unwrap_or_default();
        tracing::warn!(source = %name, path = %path.display(), age = %crate::util::format_duration(Duration::from_secs(age.as_secs())),
            ignore_older = %crate::util::format_duration(self.cfg.ignore_older.get()),
            "file not read: untouched for longer than the source's ignore_older (it is read once written to again; ignore_older = \"0\" reads every file)");
        Metrics::get().files_skipped.with_label_values(&[&name, "ignore_older"]).inc();
        let handle = self.out.status.track(&name, path, 0, id.0, id.1, 0, meta.len(), FileState::Skipped);
        self.too_old.insert(id, handle);
    }

    /// Follows `file` (found at `path`, described by `meta`), or holds it
    /// while it is empty. `since`: when its content was first seen.
    fn follow_opened(&mut self, path: &Path, file: File, meta: &std::fs::Metadata, since: SystemTime) {
        let name = self.name();
        let (fp, prefix) = fingerprint::of_file(&file);
        if prefix.is_empty() {
            self.hold_empty(path, file, meta, since);
            return;
        }
        let compressed = self.compressed_format(path);
        if compressed.is_some() && self.still_changing(meta) {
            // Maybe still being compressed: looked at again at the next scans.
            tracing::debug!(source = %name, path = %path.display(), "compressed file changed within decompression.initial_delay; not read yet");
            return;
        }
        let (dev, ino, size) = (meta.dev(), meta.ino(), meta.len());
        let resumed = self.positions.resume(&prefix, path, dev, ino);
        if let Some(format) = compressed {
            self.read_compressed(path, file, format, fp, resumed, size);
            return;
        }
        let too_old = self.cfg.ignore_older.get() > Duration::ZERO
            && meta
                .modified()
                .ok()
                .and_then(|m| SystemTime::now().duration_since(m).ok())
                .is_some_and(|age| age > self.cfg.ignore_older.get());
        let (key, offset) = match resumed {
            Some((key, off)) if off <= size => (key, off),
            Some((key, off)) => {
                tracing::info!(path = %path.display(), saved = off, size, "file is shorter than its saved position (truncated while stopped); reading from the start");
                self.positions.reset(key, fp);
                self.event("truncated");
                (key, 0)
            }
            None => {
                if too_old && self.mode == Mode::Follow {
                    self.skip_too_old(path, meta);
                    return;
                }
                let start = if self.mode == Mode::Follow && self.first_scan && self.cfg.start_at == StartAt::End {
                    size
                } else {
                    0
                };
                (self.positions.track(path, fp, dev, ino, start), start)
            }
        };
        self.too_old.remove(&(dev, ino));
        tracing::debug!(source = %name, path = %path.display(), offset, "tailing file");
        self.event("opened");
        let filename = crate::util::pathtext::text(path).into_owned();
        let feed = LineFeed::new(&self.spec, &self.stages, Some(&filename), offset);
        let status = self.out.status.track(&name, path, key, dev, ino, offset, size, FileState::Following);
        if let Some(target) = self.spec.labels.targets.as_ref().and_then(|t| t.meta(path)) {
            if let Some(named) = crate::discovery::target_name(&target) {
                status.name_target(&named);
            }
        }
        let replay = self.take_replay(key, offset);
        self.tailers.push(Tailer {
            replay,
            status,
            key,
            path: path.to_path_buf(),
            file,
            dev,
            ino,
            fp,
            offset,
            feed,
            detached: false,
            idle_since: None,
            size,
            queued: offset,
            linked: is_link(path),
            since,
            restarted: false,
        });
        self.read_through_if_over();
    }

    /// Holds an empty file open until it has data (see the module documentation).
    fn hold_empty(&mut self, path: &Path, file: File, meta: &std::fs::Metadata, seen: SystemTime) {
        let id = (meta.dev(), meta.ino());
        if self.newborn.iter().any(|n| (n.dev, n.ino) == id) {
            return;
        }
        let room = self.cfg.max_open_files.saturating_sub(self.tailers.len()).min(MAX_NEWBORN);
        if self.mode == Mode::Once || self.newborn.len() >= room {
            // Looked at again at the next scan (a write event brings one early).
            self.saw_empty = true;
            return;
        }
        self.newborn.push(Newborn { path: path.to_path_buf(), file, dev: id.0, ino: id.1, seen, gone_since: None });
    }

    /// Follows the held empty files that have data now; lets go of those
    /// deleted, or renamed away and still empty after [`DETACHED_IDLE`].
    /// One `fstat` each.
    pub(super) fn check_newborn(&mut self) {
        let now = Instant::now();
        let mut i = 0;
        while i < self.newborn.len() {
            let n = &self.newborn[i];
            match n.file.metadata() {
                Ok(meta) if meta.len() > 0 => {
                    let n = self.newborn.swap_remove(i);
                    self.make_room_for(1);
                    // Written, copied away and truncated before this look, its
                    // copy holds what it had first (see `look_beside_newborn`).
                    self.look_if_dir_changed(n.path.clone(), n.seen);
                    self.follow_opened(&n.path, n.file, &meta, n.seen);
                }
                Ok(meta) if meta.nlink() > 0 && n.gone_since.is_none_or(|g| now.duration_since(g) < DETACHED_IDLE) => {
                    i += 1
                }
                _ => {
                    self.newborn.swap_remove(i);
                }
            }
        }
    }

    /// A scan saw the held empty files of `found` (device, inode, path):
    /// a newborn it did not see has been renamed away or deleted.
    pub(super) fn newborn_seen(&mut self, found: &std::collections::HashMap<(u64, u64), PathBuf>) {
        for n in &mut self.newborn {
            match found.get(&(n.dev, n.ino)) {
                Some(path) => {
                    n.path.clone_from(path);
                    n.gone_since = None;
                }
                None => {
                    n.gone_since.get_or_insert_with(Instant::now);
                }
            }
        }
    }
}
