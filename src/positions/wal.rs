//! The positions write-ahead log: what changed since the positions file was
//! last written, appended as it happens.
//!
//! The positions file is written whole (and `fsync`ed) at most once a second
//! and every `sync_period`; between two writes, a kill -9 used to lose the
//! last second of acknowledgements, and those lines were sent again. Now
//! each change that matters to what is sent again reaches the file system
//! (a `write`, which survives the process; no `fsync`) as one line of JSON
//! in `<positions>.wal-<N>`:
//!
//! - `f`: a chunk's lines in flight ([`Flight`]), buffered and written with
//!   the next `r`, so before the batch holding them is sent;
//! - `r`: batch `s` was sealed and, when acknowledged, moves these files to
//!   these offsets;
//! - `a`: batch `s` was acknowledged (written at once, on the 2xx);
//! - `j`: a journal's delivered cursor moved (with the `a` that moved it).
//!
//! Writing the positions file starts a new log (`N + 1`) first and records
//! that number in the file; once the file is on disk the older logs are
//! removed. Loading reads the positions file, then every log from its number
//! on, in order (records already in the file are recognised, so applying one
//! twice changes nothing). A line torn by a crash is skipped.
//!
//! The disk the logs take is bounded whatever fails: a save that fails
//! leaves no log of its own (what reached the log it started is appended to
//! the one before, and it is removed; the saves after stay with that one
//! until one succeeds), a start goes on with the newest log rather than
//! adding one, and a log stops growing at [`MAX_LOG_BYTES`] (its records are
//! then held, as when it cannot be written). Every failed save used to leave
//! a new log with 4 MiB reserved, never removed (issue 50: 120 MiB in 30 s).
//!
//! A full disk loses no record: each log is given [`RESERVE_BYTES`] of room
//! when it is created (`fallocate`, its size unchanged), so its appends
//! need no new blocks; a write that fails all the same is cut back off the
//! file (no torn line before the next) and its records are held, to be
//! written with the next (up to [`MAX_HELD_BYTES`]).

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use super::flight::Flight;

/// A file's identity in an `f` record, for a file the positions file did not know yet.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) struct Ident {
    /// The path as text (`util::pathtext`).
    pub(super) path: String,
    /// `path` is escaped (a name that is not UTF-8).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub(super) px: bool,
    pub(super) fp: String,
    pub(super) fl: u32,
    pub(super) dev: u64,
    pub(super) ino: u64,
}

/// One line of the log.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "t")]
pub(super) enum Record {
    #[serde(rename = "f")]
    Flight {
        c: String,
        k: u64,
        id: Ident,
        #[serde(flatten)]
        flight: Flight,
    },
    #[serde(rename = "r")]
    Register { c: String, s: u64, a: Vec<(u64, u64)> },
    #[serde(rename = "a")]
    Ack { c: String, s: u64 },
    /// A journal's delivered cursor moved.
    #[serde(rename = "j")]
    Cursor { c: String, source: String, path: Option<PathBuf>, cursor: String },
}

impl Record {
    pub(super) fn client(&self) -> &str {
        match self {
            Record::Flight { c, .. }
            | Record::Register { c, .. }
            | Record::Ack { c, .. }
            | Record::Cursor { c, .. } => c,
        }
    }
}

/// The open log; see the module documentation.
#[derive(Debug)]
pub struct Wal {
    base: PathBuf,
    inner: Mutex<Inner>,
}

#[derive(Debug)]
struct Inner {
    gen: u64,
    file: Option<File>,
    /// The log's length: what a failed write is cut back to.
    len: u64,
    /// Records not written yet (`f` records wait for the next `r`).
    buf: Vec<u8>,
    /// Said once: the log cannot be written (lines may be sent twice after a crash).
    warned: bool,
    /// A save failed on this generation: the saves after stay with it
    /// (start no other) until one succeeds.
    unsaved: bool,
    /// The log before the current one, while the save that started the
    /// current one is under way: a failed save goes back to it.
    prev: Option<(u64, File, u64)>,
}

/// Buffered records past this many bytes are written at once.
const WRITE_AT: usize = 64 << 10;

/// Room reserved on disk for each log as it is created (less when the disk
/// has less: each of these is tried in turn).
const RESERVE_BYTES: [i64; 4] = [4 << 20, 1 << 20, 256 << 10, 64 << 10];
/// Records held while the log cannot be written, at most (past it the oldest go: lines may then be sent twice).
const MAX_HELD_BYTES: usize = 64 << 20;
/// A log grows to this size at most: past it, records are held (see
/// [`MAX_HELD_BYTES`]) until a save starts another. Written every second,
/// the positions file keeps logs far smaller; only saves failing for long
/// (a directory made read-only under an open log) reach it.
#[cfg(not(test))]
pub(super) const MAX_LOG_BYTES: u64 = 64 << 20;
#[cfg(test)]
pub(super) const MAX_LOG_BYTES: u64 = 64 << 10;

/// The log file of generation `gen` beside the positions file `base`.
fn path_of(base: &Path, gen: u64) -> PathBuf {
    let mut name = base.file_name().map_or_else(|| "positions".into(), |n| n.to_os_string());
    name.push(format!(".wal-{gen:08}"));
    base.with_file_name(name)
}

/// The generations of logs beside `base`, in order.
fn generations(base: &Path) -> Vec<u64> {
    use std::os::unix::ffi::OsStrExt;
    let Some(dir) = base.parent().map(|d| if d.as_os_str().is_empty() { Path::new(".") } else { d }) else {
        return Vec::new();
    };
    let mut prefix = base.file_name().map(|n| n.as_bytes().to_vec()).unwrap_or_default();
    prefix.extend_from_slice(b".wal-");
    let mut gens: Vec<u64> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .filter_map(|e| {
                    let name = e.file_name();
                    let gen = name.as_bytes().strip_prefix(prefix.as_slice())?;
                    std::str::from_utf8(gen).ok()?.parse().ok()
                })
                .collect()
        })
        .unwrap_or_default();
    gens.sort_unstable();
    gens
}

/// The records of every log from generation `from` on, in order, and the
/// generations of every log found. A log that exists but cannot be read is
/// an error (its path), or skipped with `skip_unreadable`.
pub(super) fn read(
    base: &Path,
    from: u64,
    skip_unreadable: bool,
) -> Result<(Vec<Record>, Vec<u64>), (PathBuf, std::io::Error)> {
    let gens = generations(base);
    let mut out = Vec::new();
    for g in gens.iter().copied().filter(|g| *g >= from) {
        let path = path_of(base, g);
        let bytes = match std::fs::read(&path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) if skip_unreadable => {
                tracing::warn!(path = %crate::util::pathtext::text(&path), error = %e,
                    "cannot read the positions log; going on without it, as asked (its lines may be sent again)");
                continue;
            }
            Err(e) => return Err((path, e)),
        };
        for line in bytes.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
            // A line torn by a crash (or by a full disk) is skipped.
            if let Ok(r) = serde_json::from_slice::<Record>(line) {
                out.push(r);
            }
        }
    }
    Ok((out, gens))
}

impl Wal {
    /// The log to append to, beside `base`, whose positions file names
    /// generation `first` (`gens`: the generations found, read at load).
    /// Logs before `first` are held by the positions file and removed; the
    /// newest of the others is gone on with (a start adds no log: an agent
    /// restarted again and again before it could save used to leave one
    /// more each time); else a new one is made.
    pub(super) fn open(base: &Path, first: u64, gens: &[u64]) -> Wal {
        for g in gens.iter().filter(|g| **g < first) {
            let _ = std::fs::remove_file(path_of(base, *g));
        }
        let wal = Wal {
            base: base.to_path_buf(),
            inner: Mutex::new(Inner {
                gen: 0,
                file: None,
                len: 0,
                buf: Vec::with_capacity(4096),
                warned: false,
                unsaved: false,
                prev: None,
            }),
        };
        let newest = gens.iter().copied().filter(|g| *g >= first).max();
        let (gen, file) = match newest.and_then(|g| wal.continue_log(g).map(|f| (g, f))) {
            Some((g, f)) => (g, Some(f)),
            None => {
                let g = gens.last().copied().unwrap_or(0).max(first) + 1;
                (g, wal.create(g, false))
            }
        };
        let mut inner = wal.lock();
        inner.gen = gen;
        inner.len = file.as_ref().and_then(|f| f.metadata().ok()).map_or(0, |m| m.len());
        inner.file = file;
        drop(inner);
        wal
    }

    /// Opens the existing log of generation `gen` to go on with it (ended
    /// with a line end, so a line a crash tore stays alone and skipped).
    fn continue_log(&self, gen: u64) -> Option<File> {
        use std::io::{Read, Seek, SeekFrom};
        let path = path_of(&self.base, gen);
        let mut f = std::fs::OpenOptions::new().read(true).append(true).open(&path).ok()?;
        let len = f.metadata().ok()?.len();
        if len >= MAX_LOG_BYTES {
            return None;
        }
        if len > 0 {
            let mut last = [0u8];
            f.seek(SeekFrom::Start(len - 1)).ok()?;
            f.read_exact(&mut last).ok()?;
            if last[0] != b'\n' {
                f.write_all(b"\n").ok()?;
            }
        }
        reserve(&f);
        Some(f)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Creates the log of generation `gen`; `reserved`: only when room could be reserved for it.
    fn create(&self, gen: u64, reserved: bool) -> Option<File> {
        let path = path_of(&self.base, gen);
        match std::fs::OpenOptions::new().create(true).append(true).open(&path) {
            Ok(f) => {
                if !reserve(&f) && reserved {
                    // The disk full: the current log, with room of its own, goes on.
                    let _ = std::fs::remove_file(&path);
                    return None;
                }
                Some(f)
            }
            Err(e) => {
                tracing::warn!(path = %path.display(), error = %e, "cannot open the positions log; a crash may send lines twice");
                None
            }
        }
    }

    /// Appends `record`; with `now`, writes what waits (this record included).
    pub(super) fn append(&self, record: &Record, now: bool) {
        let mut inner = self.lock();
        let at = inner.buf.len();
        match serde_json::to_writer(&mut inner.buf, record) {
            Ok(()) => inner.buf.push(b'\n'),
            // Nothing of it stays: a record cut where serializing stopped
            // tore the next one too (issue 50, a path that was not UTF-8).
            Err(e) => {
                inner.buf.truncate(at);
                tracing::warn!(error = %e, "a positions log record cannot be written; a crash may send its lines twice");
            }
        }
        // A burst of records (thousands of files starting at once) is
        // written as it comes rather than held in one growing buffer (but
        // not retried at every record while writes fail).
        if now || (inner.buf.len() >= WRITE_AT && !inner.warned) {
            Self::write_out(&mut inner);
        }
    }

    fn write_out(inner: &mut Inner) {
        if inner.buf.is_empty() {
            return;
        }
        let full = inner.len + inner.buf.len() as u64 > MAX_LOG_BYTES;
        let r = match inner.file.as_mut() {
            Some(_) if full => Err(std::io::Error::other(format!(
                "the log reached its limit of {} (the positions file has not been written for long)",
                crate::util::format_size(MAX_LOG_BYTES)
            ))),
            Some(f) => {
                let r = f.write_all(&inner.buf);
                if r.is_err() {
                    // No torn record stays before the next.
                    let _ = f.set_len(inner.len);
                }
                r
            }
            None => Err(std::io::Error::other("not open")),
        };
        match r {
            Ok(()) => {
                inner.len += inner.buf.len() as u64;
                if std::mem::take(&mut inner.warned) {
                    tracing::info!("the positions log is written again; the records held meanwhile are in it");
                }
                inner.buf.clear();
                // What a burst grew is given back.
                inner.buf.shrink_to(WRITE_AT);
            }
            Err(e) => {
                if !std::mem::replace(&mut inner.warned, true) {
                    tracing::warn!(error = %e, "cannot write the positions log (the disk full?); its records are held and written once it can be");
                }
                if inner.buf.len() > MAX_HELD_BYTES {
                    // Whole records only: from the first line end past the excess.
                    let excess = inner.buf.len() - MAX_HELD_BYTES;
                    let cut = memchr::memchr(b'\n', &inner.buf[excess..]).map_or(inner.buf.len(), |i| excess + i + 1);
                    inner.buf.drain(..cut);
                    tracing::warn!("the positions log has been unwritable for long; its oldest held records are dropped (a crash may send lines twice)");
                }
            }
        }
    }

    /// Starts the next generation (what waits goes to the current one first)
    /// and returns its number: a positions file written from now on holds
    /// everything the earlier ones say. After a failed save, none is
    /// started until a save succeeds: the current one is returned
    /// (applying its records again changes nothing).
    pub(super) fn next_generation(&self) -> u64 {
        let mut inner = self.lock();
        Self::write_out(&mut inner);
        if inner.unsaved {
            return inner.gen;
        }
        let full = inner.file.is_some() && inner.len + inner.buf.len() as u64 > MAX_LOG_BYTES;
        if !inner.buf.is_empty() && !full {
            // The current log cannot be written: stay with it, so what it holds
            // and what is held go together once there is room.
            return inner.gen;
        }
        let gen = inner.gen + 1;
        match self.create(gen, inner.file.is_some() && !full) {
            Some(f) => {
                let len = f.metadata().map_or(0, |m| m.len());
                let old = inner.file.replace(f);
                inner.prev = old.map(|o| (inner.gen, o, inner.len));
                inner.gen = gen;
                inner.len = len;
                // Records held while the last one was full: in the new one
                // (the state saved next holds them too).
                Self::write_out(&mut inner);
            }
            // Not created (the disk full): the current one goes on.
            None if inner.file.is_some() => {}
            None => inner.gen = gen,
        }
        inner.gen
    }

    /// The positions file holding generation `gen`'s start is on disk:
    /// earlier logs go, and the next save starts a new one.
    pub(super) fn saved(&self, gen: u64) {
        let mut inner = self.lock();
        inner.prev = None;
        inner.unsaved = false;
        drop(inner);
        self.remove_before(gen);
    }

    /// The save that started generation `gen` failed: what reached its log
    /// is appended to the log before it, which goes on (the saves after stay
    /// with it until one succeeds), and its log is removed. A failed save so
    /// leaves no log of its own (each used to leave one, with 4 MiB set
    /// aside). When that cannot be done (the disk full), its log goes on.
    pub(super) fn failed(&self, gen: u64) {
        let mut inner = self.lock();
        inner.unsaved = true;
        let Some((pgen, mut pfile, plen)) = inner.prev.take() else { return };
        if inner.gen != gen {
            return;
        }
        Self::write_out(&mut inner);
        let path = path_of(&self.base, gen);
        let moved = match std::fs::read(&path) {
            Ok(bytes) if inner.buf.is_empty() && bytes.len() as u64 == inner.len => {
                let r = pfile.write_all(&bytes);
                if r.is_err() {
                    let _ = pfile.set_len(plen);
                }
                r.is_ok().then_some(bytes.len() as u64)
            }
            _ => None,
        };
        let Some(n) = moved else { return };
        inner.file = Some(pfile);
        inner.gen = pgen;
        inner.len = plen + n;
        let _ = std::fs::remove_file(&path);
    }

    /// Earlier logs than `gen` go.
    fn remove_before(&self, gen: u64) {
        for g in generations(&self.base).into_iter().filter(|g| *g < gen) {
            let _ = std::fs::remove_file(path_of(&self.base, g));
        }
    }
}

/// Reserves [`RESERVE_BYTES`] (the most that fits) on disk for `f` without changing its size, so
/// appends within it succeed on a full disk (best effort: a file system
/// without `fallocate` goes without).
/// False when none fits (a file system that cannot reserve counts as done).
fn reserve(f: &File) -> bool {
    use std::os::fd::AsRawFd;
    // Past its end: a log gone on with after a start has room for what comes.
    let at = f.metadata().map_or(0, |m| m.len()) as i64;
    for bytes in RESERVE_BYTES {
        // SAFETY: fallocate on an open descriptor; KEEP_SIZE leaves the file's length alone.
        if unsafe { libc::fallocate(f.as_raw_fd(), libc::FALLOC_FL_KEEP_SIZE, at, bytes) } == 0 {
            return true;
        }
        if std::io::Error::last_os_error().raw_os_error() == Some(libc::EOPNOTSUPP) {
            return true;
        }
    }
    false
}

/// Applies one record to a client's loaded positions (see the module
/// documentation): a record the positions file already holds changes nothing.
pub(super) fn apply(state: &mut super::State, record: &Record) {
    match record {
        Record::Flight { k, id, flight, .. } => {
            state.next_key = state.next_key.max(k + 1);
            // Journals get keys when a file is loaded, not from the log: one
            // that took this file's key moves to a free one.
            if let Some(j) = state.journals.remove(k) {
                state.journals.insert(state.next_key, j);
                state.next_key += 1;
            }
            let paths = &mut state.paths;
            let f = state.files.get_or_insert_with(*k, || {
                let fp = super::Fingerprint { hash: u64::from_str_radix(&id.fp, 16).unwrap_or(0), len: id.fl };
                let path = crate::util::pathtext::from_text(&id.path, id.px);
                let mut f = super::FileState::new(paths.get(&path), fp, id.dev, id.ino, flight.from);
                f.active = false;
                f.size = flight.to;
                f
            });
            if flight.to > f.committed {
                super::flight::add(&mut f.lines().replay, flight.clone());
            }
        }
        Record::Register { s, a, .. } => {
            for (k, off) in a {
                state.next_key = state.next_key.max(k + 1);
                if let Some(f) = state.files.get_mut(k) {
                    f.lines().pending.push_back((*s, *off, false));
                }
            }
        }
        Record::Ack { s, .. } => {
            for f in state.files.values_mut() {
                // Moves `committed` and marks the loaded records' runs of the batch delivered.
                f.ack(*s);
            }
        }
        Record::Cursor { source, path, cursor, .. } => {
            let saved = super::journal::SavedJournal {
                source: source.clone(),
                path: path.clone(),
                cursor: cursor.clone(),
                updated_at: super::now_secs(),
            };
            match state.journals.values_mut().find(|j| j.source == *source && j.path == *path) {
                Some(j) => *j = super::journal::JournalState::from_saved(saved),
                None => {
                    let key = state.next_key;
                    state.next_key += 1;
                    state.journals.insert(key, super::journal::JournalState::from_saved(saved));
                }
            }
        }
    }
}
