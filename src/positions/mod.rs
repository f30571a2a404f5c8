//! The positions store: how far each file has been *delivered*.
//!
//! A file's committed offset moves forward only when every line before it was
//! acknowledged by the service (or dropped on purpose and counted). Batches may
//! be acknowledged out of order when several are in flight, so each file keeps
//! a queue of `(batch, offset)` marks in the order the batches were sealed, and
//! the committed offset advances over the longest acknowledged prefix.
//!
//! Files are identified by a fingerprint: a hash of their first bytes (up to
//! [`FINGERPRINT_BYTES`]) together with how many bytes were hashed, so a file
//! that was short when last saved still matches once it has grown, and a file
//! renamed by rotation is recognised under its new name. Device and inode are
//! kept as a hint only: an inode reused by a new file has another fingerprint.
//!
//! The file is versioned JSON written atomically: a temp file, `fsync`,
//! `rename`, then `fsync` of the directory. A file that exists but cannot be
//! read or is corrupt is an error that stops `run` (exit 2, naming it); asked
//! to (`positions.on_unreadable = "start_fresh"`, `run --fresh-positions`),
//! the agent moves it aside to `<path>.corrupt` and starts afresh per
//! `start_at`. Paths are written as text (`util::pathtext`): a file name
//! that is not UTF-8 is escaped, and marked so, to read back as its bytes.
//!
//! Journal sources keep a cursor instead of an offset, under the same
//! acknowledgement rules (see [`journal`]).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

mod entries;
mod entry;
mod file;
mod flight;
mod index;
mod inflight;
mod journal;
mod persist;
mod wal;

use entry::FileState;
pub use file::{write_imported, Imported, PositionsFile, Start};
pub use flight::{Again, Flight, Replay, Run};
pub use persist::{write_atomically_with, Unreadable};

/// Where a chunk's lines came from, so the position can advance once they are acknowledged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AckRef {
    /// Key of the file in the positions store.
    pub file: u64,
    /// The file offset just after the last line this chunk accounts for
    /// (dropped lines included).
    pub offset: u64,
}

/// Bytes at the start of a file that identify it.
pub const FINGERPRINT_BYTES: usize = 1024;

/// Saved entries of files no longer tailed are forgotten after this long.
pub const FORGET_AFTER_SECS: u64 = 7 * 24 * 3600;

/// A hash of a file's first `len` bytes. Packed to 12 bytes: one in each
/// of 100,000 positions entries, where its padding would cost a word.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(C, packed(4))]
pub struct Fingerprint {
    pub hash: u64,
    pub len: u32,
}

impl Fingerprint {
    /// The fingerprint of a file whose first bytes are `prefix` (at most [`FINGERPRINT_BYTES`] used).
    pub fn of(prefix: &[u8]) -> Self {
        let p = &prefix[..prefix.len().min(FINGERPRINT_BYTES)];
        Self { hash: xxhash_rust::xxh3::xxh3_64(p), len: p.len() as u32 }
    }

    /// True when a file starting with `prefix` is the file this fingerprint was taken of.
    pub fn matches(&self, prefix: &[u8]) -> bool {
        let n = self.len as usize;
        prefix.len() >= n && xxhash_rust::xxh3::xxh3_64(&prefix[..n]) == self.hash
    }
}

/// A known file that no source follows now, with lines that may not have
/// been delivered: the file source looks for it (see `source/file/rotated.rs`).
#[derive(Debug, Clone)]
pub struct Orphan {
    pub key: u64,
    pub path: PathBuf,
    pub fp: Fingerprint,
    pub dev: u64,
    pub ino: u64,
    /// The delivered offset.
    pub committed: u64,
    /// Where a source of this process had handed its lines on to (0 after a restart).
    pub read_to: u64,
    /// The size when it was last seen.
    pub size: u64,
}

#[derive(Debug, Default, Clone)]
struct State {
    next_key: u64,
    files: entries::Entries,
    /// The entries' paths (see `entries::Paths`).
    paths: entries::Paths,
    /// Journal sources' cursors, keyed from the same counter as files.
    journals: HashMap<u64, journal::JournalState>,
    dirty: bool,
    /// Files by fingerprint, built at the first lookup and kept in step
    /// by every change of an entry's fingerprint (see `index.rs`).
    index: Option<index::FpIndex>,
}

impl State {
    /// Entry `key` has fingerprint `fp` now (a new entry: `old` is `None`).
    fn fingerprint_changed(&mut self, key: u64, old: Option<Fingerprint>, fp: Fingerprint) {
        if let Some(ix) = self.index.as_mut() {
            if let Some(old) = old {
                ix.remove(key, old);
            }
            ix.add(key, fp);
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum PositionsError {
    #[error("cannot write positions file {}: {source}", crate::util::pathtext::text(path))]
    Write { path: PathBuf, source: std::io::Error },
    /// The positions file, or a log beside it (`path`), exists but cannot be
    /// read or is corrupt: `run` stops (exit 2) with this text, which says
    /// what to do.
    #[error("{}", unreadable_text(path, why))]
    Unreadable { path: PathBuf, why: persist::Unreadable },
}

/// See [`PositionsError::Unreadable`].
fn unreadable_text(path: &Path, why: &persist::Unreadable) -> String {
    let shown = crate::util::pathtext::text(path);
    let log = path.file_name().is_some_and(|n| n.to_string_lossy().contains(".wal-"));
    let what = if log { "positions log" } else { "positions file" };
    // SAFETY: geteuid has no preconditions.
    let uid = unsafe { libc::geteuid() };
    let (problem, fix) = match why {
        persist::Unreadable::Io(e) if e.kind() == std::io::ErrorKind::PermissionDenied => (
            format!("cannot be read by this user (uid {uid}): {e}"),
            "Let the user tailship runs as read and write it and its directory (the packaged service runs as              user tailship: `chown -R tailship:tailship /var/lib/tailship`)"
                .to_string(),
        ),
        persist::Unreadable::Io(e) => {
            (format!("cannot be read: {e}"), format!("Put the {what} back at {shown} (or remove what is there)"))
        }
        persist::Unreadable::Corrupt(reason) => {
            (format!("is corrupt: {reason}"), "Restore it from a backup".to_string())
        }
    };
    let aside = if log {
        "skips it".to_string()
    } else {
        format!("moves it aside to {}", crate::util::pathtext::text(&persist::aside_path(path)))
    };
    format!(
        "{what} {shown} {problem}. `tailship run` does not start with it, and leaves it as it is: without the \
         positions in it, files already shipped would be read and sent again. {fix}; or start without it: \
         `tailship run --fresh-positions` (or positions.on_unreadable = \"start_fresh\" in the config) {aside} \
         and reads files again per start_at"
    )
}

/// One client's positions (see the module documentation). The positions
/// file ([`PositionsFile`]) holds every client's.
#[derive(Debug)]
pub struct Positions {
    state: Mutex<State>,
    /// Fired when an acknowledgement moved a position, so the agent writes the
    /// file soon (see `agent`), not only every `sync_period`. Shared by every
    /// client's positions in one file.
    acked: Arc<tokio::sync::Notify>,
    /// The write-ahead log and this client's name in it (none in memory).
    log: Option<(Arc<wal::Wal>, String)>,
    /// This run of the agent, for its records of lines in flight (see [`flight`]).
    epoch: u64,
}

fn now_ms() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0)
}

fn now_secs() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0)
}

impl Positions {
    /// Positions kept in memory only.
    pub fn in_memory() -> Self {
        Self::with_state(State::default(), Arc::new(tokio::sync::Notify::new()), None)
    }

    fn with_state(state: State, acked: Arc<tokio::sync::Notify>, log: Option<(Arc<wal::Wal>, String)>) -> Self {
        // After every earlier run's, even if the clock went back.
        let loaded = state.files.values().flat_map(|f| f.records().map(|r| r.epoch)).max().unwrap_or(0);
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64);
        let epoch = now.max(loaded + 1);
        Self { state: Mutex::new(state), acked, log, epoch }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Finds a known, not currently tailed file whose fingerprint matches a file
    /// starting with `prefix`; prefers one with the same device and inode.
    /// Returns its key and the offset to go on from, and marks it tailed again.
    /// That offset is the committed one, or, for a file a source of this
    /// process released (a reload), where that source had read to: its lines
    /// in flight are acknowledged under the same key, so none is sent twice.
    pub fn resume(&self, prefix: &[u8], path: &Path, dev: u64, ino: u64) -> Option<(u64, u64)> {
        let mut st = self.lock();
        let st = &mut *st;
        let candidates = st.index.get_or_insert_with(|| index::FpIndex::of(&st.files)).candidates(prefix);
        let mut best: Option<(u64, bool)> = None;
        for k in &candidates {
            let Some(f) = st.files.get(k) else { continue };
            if f.active || !f.fp.matches(prefix) {
                continue;
            }
            let same_inode = f.dev == dev && f.ino == ino;
            if best.is_none_or(|(_, b)| !b && same_inode) {
                best = Some((*k, same_inode));
            }
        }
        let (key, _) = best?;
        let f = st.files.get_mut(&key)?;
        f.active = true;
        if *f.path != *path {
            f.path = st.paths.get(path);
        }
        f.dev = dev;
        f.ino = ino;
        let old = f.fp;
        f.fp = Fingerprint::of(prefix).max_len(f.fp);
        f.end = None;
        f.updated_at = now_secs();
        f.seen_at_ms = now_ms();
        let (offset, fp) = (f.committed.max(f.read_to), f.fp);
        st.fingerprint_changed(key, Some(old), fp);
        st.dirty = true;
        Some((key, offset))
    }

    /// Starts tracking a newly seen file at `offset`.
    pub fn track(&self, path: &Path, fp: Fingerprint, dev: u64, ino: u64, offset: u64) -> u64 {
        let mut st = self.lock();
        let key = st.next_key;
        st.next_key += 1;
        let path = st.paths.get(path);
        st.files.insert(key, FileState::new(path, fp, dev, ino, offset));
        st.fingerprint_changed(key, None, fp);
        st.dirty = true;
        key
    }

    /// A tailed file was truncated or replaced in place: start it again at 0.
    pub fn reset(&self, key: u64, fp: Fingerprint) {
        let mut st = self.lock();
        if let Some(f) = st.files.get_mut(&key) {
            f.committed = 0;
            f.clear_lines();
            let old = std::mem::replace(&mut f.fp, fp);
            st.fingerprint_changed(key, Some(old), fp);
            st.dirty = true;
        }
    }

    /// A tailed file was truncated or rewritten in place while lines of its old
    /// content may still be queued or in flight: its new content is tracked
    /// under a new key from offset 0, and the old key stops being tailed. The old
    /// lines carry the old key, so their acknowledgements advance the old entry
    /// and never move the new content's position to an offset of the old one.
    /// Returns the new key.
    pub fn restart(&self, key: u64, fp: Fingerprint) -> u64 {
        let mut st = self.lock();
        let now = now_secs();
        let Some(old) = st.files.get_mut(&key) else { return key };
        old.active = false;
        old.updated_at = now;
        let (path, dev, ino) = (old.path.clone(), old.dev, old.ino);
        let new_key = st.next_key;
        st.next_key += 1;
        st.files.insert(new_key, FileState::new(path, fp, dev, ino, 0));
        st.fingerprint_changed(new_key, None, fp);
        st.dirty = true;
        new_key
    }

    /// The file grew past its fingerprint's length: remember the longer one.
    pub fn update_fingerprint(&self, key: u64, fp: Fingerprint) {
        let mut st = self.lock();
        if let Some(f) = st.files.get_mut(&key) {
            if fp.len > f.fp.len {
                let old = std::mem::replace(&mut f.fp, fp);
                st.fingerprint_changed(key, Some(old), fp);
                st.dirty = true;
            }
        }
    }

    /// The file was renamed (rotation) and is still tailed under `path`.
    pub fn renamed(&self, key: u64, path: &Path) {
        let mut st = self.lock();
        let st = &mut *st;
        if let Some(f) = st.files.get_mut(&key) {
            f.path = st.paths.get(path);
            st.dirty = true;
        }
    }

    /// The source stopped tailing the file (the source stopped, or the file
    /// is parked or gone); `size` is the last size seen, `read_to` how far its
    /// lines were handed on (see [`Positions::resume`]).
    pub fn release(&self, key: u64, size: u64, read_to: u64) {
        let mut st = self.lock();
        if let Some(f) = st.files.get_mut(&key) {
            f.active = false;
            f.size = f.size.max(size);
            f.read_to = read_to;
            f.updated_at = now_secs();
            st.dirty = true;
        }
    }

    /// A file rotated away or deleted was read to its end (`end`), or is gone:
    /// it is no longer followed, and no longer looked for.
    pub fn finish(&self, key: u64, end: u64) {
        let mut st = self.lock();
        if let Some(f) = st.files.get_mut(&key) {
            f.active = false;
            f.end = Some(end);
            // Everything up to `end` was handed on: a reload's source that
            // finds the file again goes on from there (see `adopt`).
            f.read_to = f.read_to.max(end);
            f.size = f.size.max(end);
            f.updated_at = now_secs();
            st.dirty = true;
        }
    }

    /// A finished file was deleted (its last name removed): nothing can find
    /// its content again, so its entry is forgotten once delivered to its end.
    pub fn deleted(&self, key: u64) {
        if let Some(f) = self.lock().files.get_mut(&key) {
            f.gone = f.end.is_some();
        }
    }

    /// Known files no source follows, whose lines may not all be delivered:
    /// not finished, or finished past what was delivered and handed on; with
    /// no batch of theirs in flight. Files of compressed (`.gz`) reads are not
    /// included.
    pub fn orphans(&self) -> Vec<Orphan> {
        let st = self.lock();
        st.files
            .iter()
            .filter(|(_, f)| !f.active && f.no_pending() && f.ino != 0)
            .filter(|(_, f)| f.end.is_none_or(|end| f.committed.max(f.read_to) < end))
            .map(|(k, f)| Orphan {
                key: *k,
                path: f.path.to_path_buf(),
                fp: f.fp,
                dev: f.dev,
                ino: f.ino,
                committed: f.committed,
                read_to: f.read_to,
                size: f.size,
            })
            .collect()
    }

    /// An orphan found again as another file (`dev`, `ino`) beside its path:
    /// followed again from its delivered offset, which is returned (or, when a
    /// source of this process released it, from where that source had read
    /// to: its lines may be queued or in flight, see [`Positions::resume`];
    /// going on from the delivered offset sent them twice after a SIGHUP that
    /// came just after a rename). The entry
    /// keeps the path the globs named, so that after a restart it is looked
    /// for again beside that path (the file it was found as may not match the
    /// globs).
    pub fn adopt(&self, key: u64, dev: u64, ino: u64) -> Option<u64> {
        let mut st = self.lock();
        let f = st.files.get_mut(&key)?;
        f.active = true;
        f.dev = dev;
        f.ino = ino;
        f.end = None;
        f.updated_at = now_secs();
        let offset = f.committed.max(f.read_to);
        st.dirty = true;
        Some(offset)
    }

    /// Records that batch `seq` carries lines of these files up to these offsets.
    /// Called in the order batches are sealed.
    /// With a log, the batch's records reach it now, before the batch is sent.
    pub fn register(&self, seq: u64, acks: &[AckRef]) {
        let mut st = self.lock();
        let mut files = Vec::new();
        for a in acks {
            if let Some(f) = st.files.get_mut(&a.file) {
                f.lines().pending.push_back((seq, a.offset, false));
                files.push((a.file, a.offset));
            } else if let Some(j) = st.journals.get_mut(&a.file) {
                j.register(seq, a.offset);
            }
        }
        drop(st);
        if let Some((wal, c)) = &self.log {
            wal.append(&wal::Record::Register { c: c.clone(), s: seq, a: files }, true);
        }
    }

    /// Batch `seq` was acknowledged (or dropped on purpose): advance what it completes.
    pub fn ack(&self, seq: u64, acks: &[AckRef]) {
        let mut st = self.lock();
        let mut changed = false;
        let mut cursors = Vec::new();
        for a in acks {
            if let Some(j) = st.journals.get_mut(&a.file) {
                if j.ack(seq) {
                    changed = true;
                    if let Some(saved) = j.to_saved(0) {
                        cursors.push(saved);
                    }
                }
                continue;
            }
            let Some(f) = st.files.get_mut(&a.file) else { continue };
            changed |= f.ack(seq);
        }
        drop(st);
        if let Some((wal, c)) = &self.log {
            for j in cursors {
                wal.append(
                    &wal::Record::Cursor { c: c.clone(), source: j.source, path: j.path, cursor: j.cursor },
                    false,
                );
            }
            wal.append(&wal::Record::Ack { c: c.clone(), s: seq }, true);
        }
        if changed {
            self.lock().dirty = true;
            self.acked.notify_one();
        }
    }

    /// True when an entry, followed or not, finished or not, was taken of a
    /// file that starts with `prefix` (finished entries are tombstones: the
    /// content they name was read, and is not to be read again).
    /// Through the fingerprint index: one hash per fingerprint length in use,
    /// not a pass over every entry (a mass rotation keeps 150,000 tombstones,
    /// and each generation that appears is asked about).
    pub fn knows(&self, prefix: &[u8]) -> bool {
        let mut st = self.lock();
        let st = &mut *st;
        let candidates = st.index.get_or_insert_with(|| index::FpIndex::of(&st.files)).candidates(prefix);
        // An entry whose first bytes are not known yet (a file followed from
        // a truncation while empty) knows no content: taken for knowing every
        // file, it hid a generation that appeared before its first read.
        candidates.iter().any(|k| st.files.get(k).is_some_and(|f| f.fp.len > 0 && f.fp.matches(prefix)))
    }

    /// Scans found these files at their paths now (see [`Positions::last_seen_by_path`]).
    pub fn seen_at_path(&self, keys: &[u64]) {
        if keys.is_empty() {
            return;
        }
        let now = now_ms();
        let mut st = self.lock();
        for k in keys {
            if let Some(f) = st.files.get_mut(k) {
                f.seen_at_ms = now;
            }
        }
    }

    /// For each path the store knows, when a scan last found a known file
    /// there (ms since the epoch; for entries of older files, when they were
    /// last written): files beside it that changed later are generations the
    /// agent may not have seen (see `source/file/generations.rs`). Not when an
    /// entry was last saved: a file rotated away unnoticed (its source
    /// blocked on a full queue) is saved as current until it is noticed, and a
    /// generation created and rotated away meanwhile would pass for history.
    pub fn last_seen_by_path(&self) -> HashMap<PathBuf, u64> {
        let st = self.lock();
        let mut out: HashMap<PathBuf, u64> = HashMap::new();
        for f in st.files.values().filter(|f| f.ino != 0) {
            let seen = if f.seen_at_ms > 0 { f.seen_at_ms } else { f.updated_at.saturating_mul(1000) };
            let t = out.entry(f.path.to_path_buf()).or_default();
            *t = (*t).max(seen);
        }
        out
    }

    /// The committed offset of a file.
    pub fn committed(&self, key: u64) -> Option<u64> {
        self.lock().files.get(&key).map(|f| f.committed)
    }
}

impl Fingerprint {
    /// Keeps the longer of two fingerprints of the same file.
    fn max_len(self, other: Fingerprint) -> Fingerprint {
        if other.len > self.len {
            other
        } else {
            self
        }
    }
}

#[cfg(test)]
mod replay_tests;
#[cfg(test)]
mod tests;
