//! The positions file: every client's positions in one file.
//!
//! Each client keeps its own [`Positions`] (delivered offsets, journal
//! cursors): a client that is down never holds back another's. They are
//! written together, atomically, in one file: version 1 (one client's
//! positions at the top level) for the one client of the `[client]` form,
//! as earlier versions wrote it; version 2 (`clients`, by name) otherwise.
//!
//! A client with nothing saved under its name starts where the others are:
//! each file at the furthest any of them delivered (a version-1 file counts
//! as every client's, so moving from `[client]` to `[[clients]]` re-sends
//! nothing); unless its `start_at` says `beginning` or `end`, which then
//! applies as a source's `start_at` does. A client no longer configured is
//! not written again: its positions are dropped.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use super::persist;
use super::wal::{self, Wal};
use super::{Positions, PositionsError, State};
use crate::config::StartAt;

/// How a client's positions began.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Start {
    /// From its own saved positions, or an earlier call in this process.
    Saved,
    /// From the other clients' (where they are).
    Others,
    /// Empty: its sources start as its `start_at` says.
    Fresh(StartAt),
}

/// See the module documentation.
#[derive(Debug)]
pub struct PositionsFile {
    /// `None` keeps positions in memory only.
    path: Option<PathBuf>,
    /// As read at start: by client name (`None`: a version-1 file, every client's).
    loaded: Mutex<Loaded>,
    clients: Mutex<BTreeMap<String, Arc<Positions>>>,
    /// Fired when an acknowledgement moved a position of any client.
    pub acked: Arc<tokio::sync::Notify>,
    /// What changed since the file was written (none in memory).
    wal: Option<Arc<Wal>>,
    /// Where a write is shown (the agent's status).
    status: Option<Arc<crate::status::Status>>,
}

#[derive(Debug, Default)]
struct Loaded {
    one: Option<State>,
    by_client: BTreeMap<String, State>,
}

impl PositionsFile {
    /// Reads the file and the logs beside it; a missing file is empty. A
    /// file (or log) that exists but cannot be read, or is corrupt, is an
    /// error naming it and what to do, and is left as it is; unless `fresh`
    /// (`positions.on_unreadable = "start_fresh"`, `run --fresh-positions`):
    /// then it is moved aside to `<path>.corrupt` (logged) and is empty.
    /// Starting without positions the operator did not ask for sent
    /// everything again (issue 50).
    pub fn load(path: &Path, fresh: bool) -> Result<Self, PositionsError> {
        let mut loaded = Loaded::default();
        let mut first_log = 0;
        let saved = match persist::read(path) {
            Ok(saved) => saved,
            Err(why) if fresh => {
                persist::set_aside(path, &why);
                None
            }
            Err(why) => return Err(PositionsError::Unreadable { path: path.to_path_buf(), why }),
        };
        if let Some(saved) = saved {
            first_log = saved.wal;
            let (files, journals);
            if let Some(one) = saved.one.filter(|_| saved.clients.is_none()) {
                let st = one.into_state();
                (files, journals) = (st.files.len(), st.journals.len());
                loaded.one = Some(st);
            } else {
                loaded.by_client =
                    saved.clients.unwrap_or_default().into_iter().map(|(k, v)| (k, v.into_state())).collect();
                files = loaded.by_client.values().map(|s| s.files.len()).sum();
                journals = loaded.by_client.values().map(|s| s.journals.len()).sum();
            }
            tracing::info!(path = %crate::util::pathtext::text(path), files, journals, clients = loaded.by_client.len().max(1), "loaded positions");
        }
        let (records, logs) = match wal::read(path, first_log, fresh) {
            Ok(read) => read,
            Err((log, e)) => {
                return Err(PositionsError::Unreadable { path: log, why: persist::Unreadable::Io(e) });
            }
        };
        if !records.is_empty() {
            tracing::info!(path = %crate::util::pathtext::text(path), records = records.len(), "applied the positions log written since");
        }
        for r in &records {
            let state = match (&mut loaded.one, r.client()) {
                (Some(one), crate::config::DEFAULT_CLIENT) => one,
                (None, crate::config::DEFAULT_CLIENT) if loaded.by_client.is_empty() => {
                    loaded.one.get_or_insert_with(State::default)
                }
                (_, c) => loaded.by_client.entry(c.to_string()).or_default(),
            };
            wal::apply(state, r);
        }
        persist::remove_stale_temps(path);
        Ok(Self {
            path: Some(path.to_path_buf()),
            loaded: Mutex::new(loaded),
            clients: Mutex::default(),
            acked: Arc::new(tokio::sync::Notify::new()),
            wal: Some(Arc::new(Wal::open(path, first_log, &logs))),
            status: None,
        })
    }

    /// Shows each write of the file in `status` (when it was last written).
    pub fn shown_in(mut self, status: Arc<crate::status::Status>) -> Self {
        self.status = Some(status);
        self
    }

    /// Reads the positions file at `path` and the logs beside it as
    /// [`PositionsFile::load`] does, changing nothing: `check`'s test that
    /// `run` can load them.
    pub fn probe(path: &Path) -> Result<(), PositionsError> {
        let saved = persist::read(path).map_err(|why| PositionsError::Unreadable { path: path.to_path_buf(), why })?;
        wal::read(path, saved.map_or(0, |s| s.wal), false)
            .map_err(|(log, e)| PositionsError::Unreadable { path: log, why: persist::Unreadable::Io(e) })?;
        Ok(())
    }

    /// Positions kept in memory only.
    pub fn in_memory() -> Self {
        Self {
            path: None,
            loaded: Mutex::default(),
            clients: Mutex::default(),
            acked: Arc::new(tokio::sync::Notify::new()),
            wal: None,
            status: None,
        }
    }

    fn lock_clients(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, Arc<Positions>>> {
        self.clients.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The positions of client `name`, made on first use (see the module
    /// documentation for where a client without saved positions starts).
    pub fn client(&self, name: &str, start_at: Option<StartAt>) -> (Arc<Positions>, Start) {
        let mut clients = self.lock_clients();
        if let Some(p) = clients.get(name) {
            return (p.clone(), Start::Saved);
        }
        let mut loaded = self.loaded.lock().unwrap_or_else(|p| p.into_inner());
        // Its own saved positions; else its start_at; else where the others
        // are now (the running clients, then those saved but not configured
        // yet); else a one-client file's (loaded at start: once a client runs,
        // its positions are newer than the file's).
        let (state, start) = if let Some(st) = loaded.by_client.remove(name) {
            (st, Start::Saved)
        } else if let Some(at) = start_at {
            (State::default(), Start::Fresh(at))
        } else if !clients.is_empty() || !loaded.by_client.is_empty() {
            let others: Vec<State> =
                loaded.by_client.values().cloned().chain(clients.values().map(|p| p.lock().clone())).collect();
            (furthest(others), Start::Others)
        } else if let Some(one) = &loaded.one {
            (one.clone(), Start::Saved)
        } else {
            (State::default(), Start::Saved)
        };
        let mut state = state;
        state.dirty = true;
        // Batches of another client never reach this one; batches of an
        // earlier process are never acknowledged now (what they held is in
        // the files' loaded records, `replay`).
        for f in state.files.values_mut() {
            f.active = false;
            f.clear_pending(start == Start::Others);
        }
        for j in state.journals.values_mut() {
            j.forget_in_flight();
        }
        let log = self.wal.as_ref().map(|w| (w.clone(), name.to_string()));
        let p = Arc::new(Positions::with_state(state, self.acked.clone(), log));
        clients.insert(name.to_string(), p.clone());
        (p, start)
    }

    /// Client `name` is no longer configured: its positions are not written again.
    pub fn remove(&self, name: &str) {
        self.lock_clients().remove(name);
        self.loaded.lock().unwrap_or_else(|p| p.into_inner()).by_client.remove(name);
    }

    /// Writes the file if any client's positions changed. Keeps the old file
    /// intact on failure.
    pub fn save(&self) -> Result<(), PositionsError> {
        let Some(path) = &self.path else { return Ok(()) };
        let clients: Vec<(String, Arc<Positions>)> =
            self.lock_clients().iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        // Every client's flag is taken (not short-circuited), so each is cleared.
        let dirty = clients.iter().fold(false, |any, (_, p)| p.take_dirty() | any);
        if !dirty {
            return Ok(());
        }
        // A new log first (none after a failed save, until one succeeds):
        // the state taken next holds everything the older ones say.
        let gen = self.wal.as_ref().map_or(0, |w| w.next_generation());
        let saved: BTreeMap<String, persist::Saving<'_>> =
            clients.iter().map(|(k, p)| (k.clone(), p.saving())).collect();
        let r = persist::write(path, saved, gen);
        if let (Ok(()), Some(s)) = (&r, &self.status) {
            s.positions_written();
        }
        match (&r, &self.wal) {
            (Ok(()), Some(w)) => w.saved(gen),
            (Ok(()), None) => {}
            (Err(_), w) => {
                if let Some(w) = w {
                    w.failed(gen);
                }
                for (_, p) in &clients {
                    p.set_dirty();
                }
            }
        }
        r
    }
}

/// One state with each file at the furthest any of `states` delivered (files
/// matched by path, device and inode), and each journal's cursor from the
/// first state that has one.
fn furthest(states: Vec<State>) -> State {
    let mut files: HashMap<(PathBuf, u64, u64), super::FileState> = HashMap::new();
    let mut journals: HashMap<(String, Option<PathBuf>), super::journal::JournalState> = HashMap::new();
    for st in states {
        for f in st.files.into_values() {
            let id = (f.path.to_path_buf(), f.dev, f.ino);
            match files.get_mut(&id) {
                Some(have) if have.committed >= f.committed => {}
                _ => {
                    files.insert(id, f);
                }
            }
        }
        for j in st.journals.into_values() {
            journals.entry((j.source.clone(), j.path.clone())).or_insert(j);
        }
    }
    let mut out = State::default();
    for f in files.into_values() {
        out.files.insert(out.next_key, f);
        out.next_key += 1;
    }
    for j in journals.into_values() {
        out.journals.insert(out.next_key, j);
        out.next_key += 1;
    }
    out
}

/// A file's position carried over from another agent (`tailship convert
/// promtail --positions`): known by its first bytes now, delivered to `offset`.
#[derive(Debug, Clone)]
pub struct Imported {
    pub path: PathBuf,
    pub fp: super::Fingerprint,
    pub dev: u64,
    pub ino: u64,
    pub size: u64,
    pub offset: u64,
}

/// Writes a positions file (version 1: every client loads it) holding these
/// files and journal cursors (`(source name, cursor)` of the system journal).
pub fn write_imported(path: &Path, files: &[Imported], journals: &[(String, String)]) -> Result<(), PositionsError> {
    let p = Positions::in_memory();
    for f in files {
        let key = p.track(&f.path, f.fp, f.dev, f.ino, f.offset);
        p.release(key, f.size, f.offset);
    }
    {
        let mut st = p.lock();
        for (source, cursor) in journals {
            let saved = super::journal::SavedJournal {
                source: source.clone(),
                path: None,
                cursor: cursor.clone(),
                updated_at: super::now_secs(),
            };
            let key = st.next_key;
            st.next_key += 1;
            st.journals.insert(key, super::journal::JournalState::from_saved(saved));
        }
    }
    let saved = BTreeMap::from([(crate::config::DEFAULT_CLIENT.to_string(), p.saved())]);
    persist::write(path, saved, 0)
}
