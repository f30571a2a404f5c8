//! The positions file: versioned JSON, loaded at start (a file that cannot
//! be read or is corrupt is an error, left as it is, or set aside when asked:
//! see `PositionsFile::load`) and written atomically: a temp file, `fsync`,
//! `rename`, then `fsync` of the directory.

use std::collections::VecDeque;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::entries::Entries;
use super::entry::InFlight;
use super::{journal, now_secs, FileState, Fingerprint, Positions, PositionsError, State, FORGET_AFTER_SECS};
use crate::metrics::Metrics;

#[derive(Debug, Serialize, Deserialize)]
pub(super) struct SavedFile {
    /// The path as text (`util::pathtext`): escaped when it is not UTF-8.
    path: String,
    /// Set when `path` is escaped (a name that is not UTF-8): serde cannot
    /// write such a path as a JSON string, and every save failed on it.
    #[serde(default, skip_serializing_if = "is_false")]
    path_escaped: bool,
    fingerprint: String,
    fingerprint_len: u32,
    #[serde(default)]
    dev: u64,
    #[serde(default)]
    ino: u64,
    offset: u64,
    #[serde(default)]
    updated_at: u64,
    /// The file's size when it was last seen.
    #[serde(default)]
    size: u64,
    /// Set once the file was read to this end after it was rotated away or
    /// deleted (or found gone): nothing more is to come from it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    end: Option<u64>,
    /// When a scan last found the file at `path` (ms since the epoch; 0 in
    /// files written before): see [`Positions::last_seen_by_path`].
    #[serde(default, skip_serializing_if = "is_zero")]
    seen_at_ms: u64,
    /// The entry's key, which the positions log's records name (absent in
    /// files written before it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    key: Option<u64>,
    /// Batches holding lines of the file, not all acknowledged: (sequence,
    /// offset their acknowledgement moves to, acknowledged).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pending: Vec<(u64, u64, bool)>,
    /// What its lines in flight went out as (see `flight.rs`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    flight: Vec<super::Flight>,
}

fn is_zero(v: &u64) -> bool {
    *v == 0
}

fn is_false(v: &bool) -> bool {
    !*v
}

/// One client's positions as saved: the whole file in version 1 (one
/// client), one entry of `clients` in version 2.
#[derive(Debug, Default, Serialize, Deserialize)]
pub(super) struct SavedState {
    files: Vec<SavedFile>,
    /// Journal cursors (absent in files written before journal sources).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    journals: Vec<journal::SavedJournal>,
}

/// The file's shape: version 1 is one client's [`SavedState`] at the top
/// level (what the one-client form writes, so an older agent reads it);
/// version 2 has each client's under its name.
#[derive(Debug, Serialize, Deserialize)]
pub(super) struct SavedFileV {
    pub(super) version: u32,
    #[serde(flatten)]
    pub(super) one: Option<SavedState>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) clients: Option<std::collections::BTreeMap<String, SavedState>>,
    /// The first positions log (`wal.rs`) holding what changed after this file was written.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub(super) wal: u64,
}

/// [`SavedFileV`] as written, of any client state that serializes as a [`SavedState`].
#[derive(Serialize)]
struct Writing<'a, S> {
    version: u32,
    #[serde(flatten)]
    one: Option<&'a S>,
    #[serde(skip_serializing_if = "Option::is_none")]
    clients: Option<&'a std::collections::BTreeMap<String, S>>,
    #[serde(skip_serializing_if = "is_zero")]
    wal: u64,
}

/// The version of a file with one client's positions at the top level.
pub(super) const ONE_CLIENT: u32 = 1;
/// The version of a file with positions per client.
pub(super) const PER_CLIENT: u32 = 2;

impl SavedState {
    pub(super) fn into_state(self) -> State {
        // Saved keys are kept (the positions log names them); files saved
        // without one get keys after every saved one.
        let next_key = self.files.iter().filter_map(|f| f.key).max().map_or(0, |k| k + 1);
        let mut state = State { next_key, ..Default::default() };
        let mut entries: Vec<(Option<u64>, FileState)> = Vec::with_capacity(self.files.len());
        for f in self.files {
            let Ok(hash) = u64::from_str_radix(&f.fingerprint, 16) else { continue };
            let fp = Fingerprint { hash, len: f.fingerprint_len };
            let path = crate::util::pathtext::from_text(&f.path, f.path_escaped);
            let mut entry = FileState::new(state.paths.get(&path), fp, f.dev, f.ino, f.offset);
            entry.active = false;
            entry.updated_at = f.updated_at;
            entry.size = f.size.max(f.offset);
            entry.end = f.end;
            entry.seen_at_ms = f.seen_at_ms;
            entry.set_lines(InFlight {
                pending: f.pending.into(),
                flight: VecDeque::new(),
                replay: f.flight.into_iter().fold(VecDeque::new(), |mut all, r| {
                    super::flight::add(&mut all, r);
                    all
                }),
                taken: VecDeque::new(),
            });
            entries.push((f.key, entry));
        }
        // Saved keys are kept; of two entries saved with one key (not
        // written so, but read all the same) the first keeps it.
        entries.sort_by_key(|(k, _)| k.is_none());
        let mut keyed: Vec<(u64, FileState)> = Vec::with_capacity(entries.len());
        let mut again = Vec::new();
        let mut taken = std::collections::HashSet::with_capacity(entries.len());
        for (k, entry) in entries {
            match k.filter(|k| taken.insert(*k)) {
                Some(k) => keyed.push((k, entry)),
                None => again.push(entry),
            }
        }
        drop(taken);
        for entry in again {
            keyed.push((state.next_key, entry));
            state.next_key += 1;
        }
        state.files = Entries::from_unordered(keyed);
        for j in self.journals {
            let key = state.next_key;
            state.next_key += 1;
            state.journals.insert(key, journal::JournalState::from_saved(j));
        }
        state
    }
}

/// Forgets entries not seen for [`FORGET_AFTER_SECS`], and those of deleted
/// files delivered to their end (no tombstone is needed: no copy of their
/// content is left to be found again). With files made and deleted all day,
/// the store kept an entry per file for a week (#29 item 8).
fn forget(st: &mut State, now: u64) {
    let mut forgotten = Vec::new();
    st.files.retain(|k, f| {
        let stale = now.saturating_sub(f.updated_at) >= FORGET_AFTER_SECS;
        let done = f.gone && f.end.is_some_and(|e| f.committed >= e) && f.records().next().is_none();
        let keep = f.active || !f.no_pending() || !(stale || done);
        if !keep {
            forgotten.push((*k, f.fp));
        }
        keep
    });
    if let Some(ix) = st.index.as_mut() {
        for (k, fp) in forgotten {
            ix.remove(k, fp);
        }
    }
    st.paths.tidy();
    st.journals.retain(|_, j| j.keep(now, FORGET_AFTER_SECS));
}

fn saved_file(k: u64, f: &FileState, now: u64) -> SavedFile {
    SavedFile {
        key: Some(k),
        pending: f.pending().copied().collect(),
        flight: f.records().cloned().collect(),
        path: crate::util::pathtext::text(&f.path).into_owned(),
        path_escaped: crate::util::pathtext::is_escaped(&f.path),
        fingerprint: format!("{:016x}", { f.fp.hash }),
        fingerprint_len: f.fp.len,
        dev: f.dev,
        ino: f.ino,
        offset: f.committed,
        updated_at: if f.active { now } else { f.updated_at },
        size: f.size,
        end: f.end,
        seen_at_ms: f.seen_at_ms,
    }
}

fn saved_journals(st: &State, now: u64) -> Vec<journal::SavedJournal> {
    let mut journals: Vec<journal::SavedJournal> = st.journals.values().filter_map(|j| j.to_saved(now)).collect();
    journals.sort_by(|a, b| (&a.source, &a.path).cmp(&(&b.source, &b.path)));
    journals
}

/// Entries copied out of the store at a time while it is written.
const SAVE_PART: usize = 512;

/// One client's positions as they are written: the entries are copied out
/// [`SAVE_PART`] at a time, each part written before the next is taken
/// (with 100,000 files, a copy of the whole store was some 25 MiB at every
/// save). Each entry is as it was when its part was taken; the positions log
/// started before holds every change after (see [`super::file`]).
pub(super) struct Saving<'a> {
    positions: &'a Positions,
    /// In the order written: by key (the order the files were first seen).
    keys: Vec<u64>,
    journals: Vec<journal::SavedJournal>,
    now: u64,
}

struct SavingFiles<'a>(&'a Saving<'a>);

impl Serialize for Saving<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut st = s.serialize_struct("SavedState", 2)?;
        st.serialize_field("files", &SavingFiles(self))?;
        if !self.journals.is_empty() {
            st.serialize_field("journals", &self.journals)?;
        }
        st.end()
    }
}

impl Serialize for SavingFiles<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeSeq;
        let saving = self.0;
        let mut seq = s.serialize_seq(None)?;
        for part in saving.keys.chunks(SAVE_PART) {
            let files: Vec<SavedFile> = {
                let st = saving.positions.lock();
                part.iter().filter_map(|k| st.files.get(k).map(|f| saved_file(*k, f, saving.now))).collect()
            };
            for f in &files {
                seq.serialize_element(f)?;
            }
        }
        seq.end()
    }
}

impl Positions {
    /// What to save now (forgetting entries, see [`forget`]).
    pub(super) fn saved(&self) -> SavedState {
        let mut st = self.lock();
        let now = now_secs();
        forget(&mut st, now);
        let mut files: Vec<SavedFile> = st.files.iter().map(|(k, f)| saved_file(*k, f, now)).collect();
        files.sort_by(|a, b| a.path.cmp(&b.path));
        SavedState { files, journals: saved_journals(&st, now) }
    }

    /// What to save now, to be written as it is taken (see [`Saving`]).
    pub(super) fn saving(&self) -> Saving<'_> {
        let mut st = self.lock();
        let now = now_secs();
        forget(&mut st, now);
        let mut keys: Vec<u64> = st.files.keys().copied().collect();
        keys.sort_unstable();
        Saving { positions: self, keys, journals: saved_journals(&st, now), now }
    }

    /// True when something changed since the last save; clears the mark.
    pub(super) fn take_dirty(&self) -> bool {
        std::mem::take(&mut self.lock().dirty)
    }

    /// A save failed: what changed is written next time.
    pub(super) fn set_dirty(&self) {
        self.lock().dirty = true;
    }
}

/// Reads a positions file: `None` for a missing one; an error for one
/// that exists but cannot be read or is corrupt (it is left as it is: see
/// [`set_aside`] and `PositionsFile::load`).
pub(super) fn read(path: &Path) -> Result<Option<SavedFileV>, Unreadable> {
    let bytes = match std::fs::read(path) {
        Ok(bytes) => bytes,
        // Missing, or a file in place of a directory on its way: there is none.
        Err(e) if matches!(e.kind(), std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory) => {
            return Ok(None)
        }
        Err(e) => return Err(Unreadable::Io(e)),
    };
    match serde_json::from_slice::<SavedFileV>(&bytes) {
        Ok(saved) if saved.version == ONE_CLIENT && saved.one.is_some() => Ok(Some(saved)),
        Ok(saved) if saved.version == PER_CLIENT && saved.clients.is_some() => Ok(Some(saved)),
        Ok(saved) if saved.version == ONE_CLIENT || saved.version == PER_CLIENT => {
            Err(Unreadable::Corrupt("no positions in it".into()))
        }
        Ok(saved) => Err(Unreadable::Corrupt(format!(
            "version {} (this tailship reads versions {ONE_CLIENT} and {PER_CLIENT}: was it written by a newer one?)",
            saved.version
        ))),
        Err(e) if bytes.is_empty() => Err(Unreadable::Corrupt(format!("empty ({e})"))),
        Err(e) => Err(Unreadable::Corrupt(e.to_string())),
    }
}

/// Writes the positions of `clients` to `path` (version 1 for the one
/// client of the `[client]` form, else version 2), counting the write.
pub(super) fn write<S: Serialize>(
    path: &Path,
    clients: std::collections::BTreeMap<String, S>,
    wal: u64,
) -> Result<(), PositionsError> {
    let one = clients.len() == 1 && clients.contains_key(crate::config::DEFAULT_CLIENT);
    let file = if one {
        Writing { version: ONE_CLIENT, one: clients.values().next(), clients: None, wal }
    } else {
        Writing { version: PER_CLIENT, one: None, clients: Some(&clients), wal }
    };
    // Written as it is serialized: with 100,000 files the whole text in
    // memory first was some 40 MiB more at every save.
    let r = write_atomically_with(path, |w| {
        let mut w = std::io::BufWriter::with_capacity(64 << 10, w);
        serde_json::to_writer_pretty(&mut w, &file).map_err(std::io::Error::other)?;
        w.flush()
    });
    let m = Metrics::get();
    match &r {
        Ok(()) => m.positions_writes.with_label_values(&["ok"]).inc(),
        Err(_) => m.positions_writes.with_label_values(&["error"]).inc(),
    }
    r.map_err(|source| PositionsError::Write { path: path.to_path_buf(), source })
}

/// Where [`set_aside`] moves the positions file at `path`: `<name>.corrupt`.
pub(super) fn aside_path(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_os_string();
    name.push(".corrupt");
    PathBuf::from(name)
}

/// Moves a positions file that cannot be read aside to `<path>.corrupt`
/// (`positions.on_unreadable = "start_fresh"` or `run --fresh-positions`),
/// replacing an older one there. Logged.
pub(super) fn set_aside(path: &Path, why: &Unreadable) {
    let aside = aside_path(path);
    let shown = crate::util::pathtext::text(path);
    match std::fs::rename(path, &aside) {
        Ok(()) => tracing::warn!(path = %shown, moved_to = %crate::util::pathtext::text(&aside), reason = %why,
            "positions file cannot be read; moved it aside and starting without positions, as asked (files are read again per start_at)"),
        Err(e) => tracing::warn!(path = %shown, reason = %why, error = %e,
            "positions file cannot be read nor moved aside; starting without positions, as asked (files are read again per start_at)"),
    }
}

/// Why a positions file (or a log beside it) that exists was not read.
#[derive(Debug, thiserror::Error)]
pub enum Unreadable {
    #[error("{0}")]
    Io(std::io::Error),
    #[error("it is corrupt: {0}")]
    Corrupt(String),
}

/// The prefix of the temp files [`write_atomically_with`] writes `path` through.
fn temp_prefix(path: &Path) -> String {
    format!(".{}.", path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "positions".into()))
}

/// Removes temp files of `path` left by a process killed while it wrote
/// them (one at each such kill, never removed before: the disk the
/// positions use stays bounded). Called at load, before any is written.
pub(super) fn remove_stale_temps(path: &Path) {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let prefix = temp_prefix(path);
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for e in entries.filter_map(Result::ok) {
        let name = e.file_name();
        let name = name.to_string_lossy();
        // tempfile's random part: 6 characters.
        let ours = name.len() == prefix.len() + 6 + ".tmp".len() && name.starts_with(&prefix) && name.ends_with(".tmp");
        if ours && e.file_type().is_ok_and(|t| t.is_file()) {
            let _ = std::fs::remove_file(e.path());
        }
    }
}

/// Writes `data` to `path` so that a crash leaves either the old or the new file:
/// temp file, fsync, rename, fsync of the directory.
/// The content is written by `fill`.
pub fn write_atomically_with(
    path: &Path,
    fill: impl FnOnce(&mut std::fs::File) -> std::io::Result<()>,
) -> std::io::Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    std::fs::create_dir_all(&dir)?;
    // A fresh temp file with a random name, created exclusively (O_EXCL, so a
    // planted file or symlink of any name is never followed or overwritten),
    // in the positions directory so the rename stays on one file system.
    let mut tmp = tempfile::Builder::new().prefix(&temp_prefix(path)).rand_bytes(6).suffix(".tmp").tempfile_in(&dir)?;
    fill(tmp.as_file_mut())?;
    tmp.as_file().sync_all()?;
    // On failure the temp file is removed when `tmp` drops.
    tmp.persist(path).map_err(|e| e.error)?;
    if let Ok(d) = std::fs::File::open(&dir) {
        let _ = d.sync_all();
    }
    Ok(())
}
