//! The positions store's side of lines in flight (see `flight.rs`): the
//! batcher's records of how a file's lines went out, and the source's replay
//! of them after a restart.

use super::flight::{self, Flight, Replay, Run};
use super::{wal, Positions};

impl Positions {
    /// The `lines` lines of file `key` up to `to` (a chunk's acknowledgement
    /// offset) went into batches as `runs` (see [`flight`]); recorded before
    /// any of those batches is registered. A chunk split over batches is recorded
    /// when each is sealed: the later calls add to the chunk's record.
    pub fn flight(&self, key: u64, to: u64, lines: u32, runs: Vec<Run>) {
        let mut st = self.lock();
        let Some(f) = st.files.get_mut(&key) else { return };
        let committed = f.committed;
        let flights = &mut f.lines().flight;
        match flights.back_mut() {
            Some(b) if b.to == to => b.runs.extend(runs),
            back => {
                let from = back.map_or(committed, |b| b.to);
                flights.push_back(Flight { epoch: self.epoch, from, to, runs, lines: Some(lines) });
            }
        }
        let Some((wal, c)) = &self.log else { return };
        let Some(last) = f.flights().last() else { return };
        // The whole record each time: loading keeps the longest of a stretch's records.
        let record = wal::Record::Flight {
            c: c.clone(),
            k: key,
            id: wal::Ident {
                path: crate::util::pathtext::text(&f.path).into_owned(),
                px: crate::util::pathtext::is_escaped(&f.path),
                fp: format!("{:016x}", { f.fp.hash }),
                fl: f.fp.len,
                dev: f.dev,
                ino: f.ino,
            },
            flight: last.clone(),
        };
        drop(st);
        wal.append(&record, false);
    }

    /// What the source of file `key`, reading from `start`, does with the
    /// lines it reads again after a restart (records of earlier runs past the
    /// delivered offset); taken once.
    pub fn take_replay(&self, key: u64, start: u64) -> Option<Replay> {
        let mut st = self.lock();
        let f = st.files.get_mut(&key)?;
        let committed = f.committed;
        let lines = f.lines();
        flight::prune(&mut lines.replay, committed);
        let r = Replay::of(lines.replay.make_contiguous(), start);
        // Saved still (see `InFlight::taken`), never handed out twice.
        for record in std::mem::take(&mut lines.replay) {
            flight::add(&mut lines.taken, record);
        }
        f.tidy();
        r
    }

    /// A source stops following file `key`, having read to `at`, before it
    /// read all its lines in flight at the last stop again: the next one
    /// (reading from `at`) goes on with `left`.
    pub fn keep_replay(&self, key: u64, left: Option<Replay>, at: u64) {
        let mut st = self.lock();
        if let (Some(left), Some(f)) = (left, st.files.get_mut(&key)) {
            for r in left.into_flights(at) {
                flight::add(&mut f.lines().replay, r);
            }
            st.dirty = true;
        }
    }
}
