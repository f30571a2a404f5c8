//! Journal cursors in the positions store.
//!
//! A journal source has no byte offset: where it is, is the `__CURSOR` of an
//! entry, an opaque string. It is tracked with the same acknowledgement
//! machinery as a file: each chunk the source queues gets a *mark* (a number
//! that grows by one per chunk) as its [`AckRef::offset`](super::AckRef),
//! and the cursor of the chunk's last entry is remembered under that mark.
//! When every batch up to a mark is acknowledged, the mark is committed and
//! its cursor becomes the saved one. So the cursor on disk is always that of
//! an entry whose every predecessor was delivered (or dropped on purpose).
//!
//! A journal is known by its source's name and its `path` (none: the system
//! journal). The marks waiting for acknowledgement are one per chunk in the
//! queue, so they are bounded by the queue's byte budget like the chunks.

use std::collections::VecDeque;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::{now_secs, Positions};

/// One journal's cursor as saved in the positions file.
#[derive(Debug, Serialize, Deserialize)]
pub(super) struct SavedJournal {
    /// The source's `name`.
    pub(super) source: String,
    /// The journal directory; absent for the system journal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) path: Option<PathBuf>,
    /// `__CURSOR` of the last entry delivered with all before it.
    pub(super) cursor: String,
    #[serde(default)]
    pub(super) updated_at: u64,
}

#[derive(Debug, Clone)]
pub(super) struct JournalState {
    pub(super) source: String,
    pub(super) path: Option<PathBuf>,
    /// The delivered cursor.
    committed: Option<String>,
    committed_mark: u64,
    /// Marks handed out so far (the next is one more; 0 is never one, so the
    /// batcher's offset-0 marks of split chunks never commit anything).
    last_mark: u64,
    /// (mark, cursor of the chunk's last entry), in the order queued.
    marks: VecDeque<(u64, String)>,
    /// (batch sequence, mark, acknowledged), as for files.
    pending: VecDeque<(u64, u64, bool)>,
    active: bool,
    pub(super) updated_at: u64,
    /// Where a source of this process that released the journal had read to
    /// (a reload): its successor goes on from there. Not saved.
    read_to: Option<String>,
}

impl JournalState {
    pub(super) fn from_saved(s: SavedJournal) -> Self {
        Self {
            source: s.source,
            path: s.path,
            committed: Some(s.cursor),
            committed_mark: 0,
            last_mark: 0,
            marks: VecDeque::new(),
            pending: VecDeque::new(),
            active: false,
            updated_at: s.updated_at,
            read_to: None,
        }
    }

    /// The saved form, when there is a delivered cursor to save.
    pub(super) fn to_saved(&self, now: u64) -> Option<SavedJournal> {
        Some(SavedJournal {
            source: self.source.clone(),
            path: self.path.clone(),
            cursor: self.committed.clone()?,
            updated_at: if self.active { now } else { self.updated_at },
        })
    }

    /// Kept by a save: followed now, waiting for acknowledgements, or seen lately.
    pub(super) fn keep(&self, now: u64, forget_after: u64) -> bool {
        self.active || !self.pending.is_empty() || now.saturating_sub(self.updated_at) < forget_after
    }

    pub(super) fn register(&mut self, seq: u64, mark: u64) {
        self.pending.push_back((seq, mark, false));
    }

    /// Nothing of this journal is queued or in flight (a copy for another client).
    pub(super) fn forget_in_flight(&mut self) {
        self.marks.clear();
        self.pending.clear();
        self.active = false;
        self.read_to = None;
    }

    /// Batch `seq` was acknowledged; true when the delivered cursor moved.
    pub(super) fn ack(&mut self, seq: u64) -> bool {
        for p in self.pending.iter_mut() {
            if p.0 == seq {
                p.2 = true;
            }
        }
        let mut moved = false;
        while let Some(&(_, mark, true)) = self.pending.front() {
            self.committed_mark = self.committed_mark.max(mark);
            self.pending.pop_front();
        }
        while let Some((mark, _)) = self.marks.front() {
            if *mark > self.committed_mark {
                break;
            }
            if let Some((_, cursor)) = self.marks.pop_front() {
                self.committed = Some(cursor);
                moved = true;
            }
        }
        moved
    }
}

impl Positions {
    /// Starts following the journal of source `source` at `path` (`None`:
    /// the system journal). Returns its key and the cursor to go on after:
    /// where a source of this process that released it had read to (a
    /// reload), else the delivered cursor, else `None` (start per `start_at`).
    pub fn journal_resume(&self, source: &str, path: Option<&std::path::Path>) -> (u64, Option<String>) {
        let mut st = self.lock();
        let found = st
            .journals
            .iter()
            .find(|(_, j)| !j.active && j.source == source && j.path.as_deref() == path)
            .map(|(k, _)| *k);
        let key = match found {
            Some(k) => k,
            None => {
                let k = st.next_key;
                st.next_key += 1;
                st.journals.insert(
                    k,
                    JournalState {
                        source: source.to_string(),
                        path: path.map(|p| p.to_path_buf()),
                        committed: None,
                        committed_mark: 0,
                        last_mark: 0,
                        marks: VecDeque::new(),
                        pending: VecDeque::new(),
                        active: false,
                        updated_at: now_secs(),
                        read_to: None,
                    },
                );
                k
            }
        };
        st.dirty = true;
        let Some(j) = st.journals.get_mut(&key) else { return (key, None) };
        j.active = true;
        j.updated_at = now_secs();
        (key, j.read_to.take().or_else(|| j.committed.clone()))
    }

    /// A chunk whose last entry has `cursor` is about to be queued: returns
    /// the mark to put in its [`super::AckRef::offset`].
    pub fn journal_mark(&self, key: u64, cursor: String) -> u64 {
        let mut st = self.lock();
        let Some(j) = st.journals.get_mut(&key) else { return 0 };
        j.last_mark += 1;
        let mark = j.last_mark;
        j.marks.push_back((mark, cursor));
        mark
    }

    /// The source stopped following the journal; `read_to` is the cursor of
    /// the last entry it queued (see [`Positions::journal_resume`]).
    pub fn journal_release(&self, key: u64, read_to: Option<String>) {
        let mut st = self.lock();
        if let Some(j) = st.journals.get_mut(&key) {
            j.active = false;
            j.read_to = read_to;
            j.updated_at = now_secs();
            st.dirty = true;
        }
    }

    /// The delivered cursor of a journal.
    pub fn journal_cursor(&self, key: u64) -> Option<String> {
        self.lock().journals.get(&key).and_then(|j| j.committed.clone())
    }
}
