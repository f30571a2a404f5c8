//! The positions file: versioned JSON, loaded at start (a corrupt file is
//! set aside, never crash-looped on) and written atomically: a temp file,
//! `fsync`, `rename`, then `fsync` of the directory.

use std::collections::VecDeque;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use super::{journal, now_secs, FileState, Fingerprint, Positions, PositionsError, State, FORGET_AFTER_SECS, VERSION};
use crate::metrics::Metrics;

#[derive(Debug, Serialize, Deserialize)]
pub(super) struct SavedFile {
    path: PathBuf,
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
}

fn is_zero(v: &u64) -> bool {
    *v == 0
}

#[derive(Debug, Serialize, Deserialize)]
struct SavedState {
    version: u32,
    files: Vec<SavedFile>,
    /// Journal cursors (absent in files written before journal sources).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    journals: Vec<journal::SavedJournal>,
}

impl Positions {
    /// Loads the positions file; a missing file is an empty store, a corrupt one
    /// is moved aside to `<path>.corrupt` (logged) and also gives an empty store.
    pub fn load(path: &Path) -> Self {
        let mut state = State::default();
        match std::fs::read(path) {
            Ok(bytes) => match serde_json::from_slice::<SavedState>(&bytes) {
                Ok(saved) if saved.version == VERSION => {
                    for f in saved.files {
                        let Ok(hash) = u64::from_str_radix(&f.fingerprint, 16) else { continue };
                        let key = state.next_key;
                        state.next_key += 1;
                        state.files.insert(
                            key,
                            FileState {
                                path: f.path,
                                fp: Fingerprint { hash, len: f.fingerprint_len },
                                dev: f.dev,
                                ino: f.ino,
                                committed: f.offset,
                                pending: VecDeque::new(),
                                active: false,
                                updated_at: f.updated_at,
                                size: f.size.max(f.offset),
                                end: f.end,
                                read_to: 0,
                                seen_at_ms: f.seen_at_ms,
                            },
                        );
                    }
                    for j in saved.journals {
                        let key = state.next_key;
                        state.next_key += 1;
                        state.journals.insert(key, journal::JournalState::from_saved(j));
                    }
                    tracing::info!(path = %path.display(), files = state.files.len(), journals = state.journals.len(), "loaded positions");
                }
                Ok(saved) => {
                    set_aside(path, &format!("unknown version {}", saved.version));
                }
                Err(e) => set_aside(path, &e.to_string()),
            },
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => {
                tracing::warn!(path = %path.display(), error = %e, "cannot read positions file; starting without positions");
            }
        }
        Self { path: Some(path.to_path_buf()), state: Mutex::new(state), acked: tokio::sync::Notify::new() }
    }

    /// Writes the file if anything changed. Keeps the old file intact on failure.
    pub fn save(&self) -> Result<(), PositionsError> {
        let Some(path) = &self.path else { return Ok(()) };
        let json = {
            let mut st = self.lock();
            if !st.dirty {
                return Ok(());
            }
            let now = now_secs();
            st.files.retain(|_, f| {
                f.active || !f.pending.is_empty() || now.saturating_sub(f.updated_at) < FORGET_AFTER_SECS
            });
            let mut files: Vec<SavedFile> = st
                .files
                .values()
                .map(|f| SavedFile {
                    path: f.path.clone(),
                    fingerprint: format!("{:016x}", f.fp.hash),
                    fingerprint_len: f.fp.len,
                    dev: f.dev,
                    ino: f.ino,
                    offset: f.committed,
                    updated_at: if f.active { now } else { f.updated_at },
                    size: f.size,
                    end: f.end,
                    seen_at_ms: f.seen_at_ms,
                })
                .collect();
            files.sort_by(|a, b| a.path.cmp(&b.path));
            st.journals.retain(|_, j| j.keep(now, FORGET_AFTER_SECS));
            let mut journals: Vec<journal::SavedJournal> =
                st.journals.values().filter_map(|j| j.to_saved(now)).collect();
            journals.sort_by(|a, b| (&a.source, &a.path).cmp(&(&b.source, &b.path)));
            st.dirty = false;
            serde_json::to_vec_pretty(&SavedState { version: VERSION, files, journals }).unwrap_or_default()
        };
        let r = write_atomically(path, &json);
        let m = Metrics::get();
        match &r {
            Ok(()) => {
                m.positions_writes.with_label_values(&["ok"]).inc();
                crate::status::Status::get().positions_written();
            }
            Err(_) => {
                m.positions_writes.with_label_values(&["error"]).inc();
                self.lock().dirty = true;
            }
        }
        r.map_err(|source| PositionsError::Write { path: path.clone(), source })
    }
}

fn set_aside(path: &Path, why: &str) {
    let aside = path.with_extension("json.corrupt");
    let aside = if path.extension().is_some_and(|e| e == "json") {
        aside
    } else {
        PathBuf::from(format!("{}.corrupt", path.display()))
    };
    match std::fs::rename(path, &aside) {
        Ok(()) => tracing::warn!(path = %path.display(), moved_to = %aside.display(), reason = why,
            "positions file is corrupt; moved it aside and starting without positions"),
        Err(e) => tracing::warn!(path = %path.display(), reason = why, error = %e,
            "positions file is corrupt and cannot be moved aside; starting without positions"),
    }
}

/// Writes `data` to `path` so that a crash leaves either the old or the new file:
/// temp file, fsync, rename, fsync of the directory.
pub fn write_atomically(path: &Path, data: &[u8]) -> std::io::Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    std::fs::create_dir_all(&dir)?;
    // A fresh temp file with a random name, created exclusively (O_EXCL, so a
    // planted file or symlink of any name is never followed or overwritten),
    // in the positions directory so the rename stays on one file system.
    let mut tmp = tempfile::Builder::new()
        .prefix(&format!(
            ".{}.",
            path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "positions".into())
        ))
        .suffix(".tmp")
        .tempfile_in(&dir)?;
    tmp.write_all(data)?;
    tmp.as_file().sync_all()?;
    // On failure the temp file is removed when `tmp` drops.
    tmp.persist(path).map_err(|e| e.error)?;
    if let Ok(d) = std::fs::File::open(&dir) {
        let _ = d.sync_all();
    }
    Ok(())
}
