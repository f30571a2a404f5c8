//! What a file's lines in flight went out as, so that after a crash they go
//! out again exactly as they went, or not at all.
//!
//! The batcher gives each line of a file its final timestamp (the read time,
//! bumped to keep a stream increasing) and puts it in a batch. Before the
//! batch is sent, what it holds of each file is recorded here as a
//! [`Flight`]: the stretch of the file (`from`..`to`, the chunk's
//! acknowledgement offset) and, line by line in file order, the batch each
//! line went into and its timestamp, as [`Run`]s (a run is lines of one batch
//! whose timestamps go up by 1 ns, the usual case: one run per read). The
//! records reach the write-ahead log (`wal.rs`) before the batch is sent, and
//! acknowledgements mark their runs delivered.
//!
//! After a restart, a file resumes at its delivered offset, and the records
//! past it become a [`Replay`]: the file's source reads the same lines again,
//! skips those of batches that were acknowledged, and gives the others the
//! timestamps they had, so a service that kept the first copy drops the
//! second (or `client.reconcile` finds it stored and skips it). Lines are
//! matched to records by their order, so this holds while the stages do the
//! same to the same bytes (not for `sampling`, a rate `limit` or
//! `drop.older_than`, whose outcome depends on the moment).

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

/// Lines of one batch in file order; see the module documentation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Run {
    /// The batch's sequence number (unique across restarts: see `batch`).
    #[serde(rename = "b")]
    pub batch: u64,
    /// The first line's timestamp; the next ones are 1 ns apart. `None`:
    /// each line kept its own (from a stage).
    #[serde(rename = "t")]
    pub ts: Option<i64>,
    #[serde(rename = "n")]
    pub count: u32,
    #[serde(rename = "d", default, skip_serializing_if = "is_false")]
    pub delivered: bool,
}

fn is_false(v: &bool) -> bool {
    !*v
}

impl Run {
    /// Adds a line of `batch` with timestamp `ts` to `runs`, extending the last run when it can.
    #[inline]
    pub fn push(runs: &mut Vec<Run>, batch: u64, ts: Option<i64>) {
        if let Some(last) = runs.last_mut() {
            let follows = match (last.ts, ts) {
                (Some(a), Some(b)) => a.checked_add(i64::from(last.count)) == Some(b),
                (None, None) => true,
                _ => false,
            };
            if last.batch == batch && follows && last.count < u32::MAX {
                last.count += 1;
                return;
            }
        }
        runs.push(Run { batch, ts, count: 1, delivered: false });
    }
}

/// One chunk's lines of a file, as they went into batches.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Flight {
    pub from: u64,
    /// The chunk's acknowledgement offset: once the file is delivered to
    /// here, the record is done with.
    pub to: u64,
    pub runs: Vec<Run>,
}

/// What a file's source does with the lines it reads again after a
/// restart, in order (see the module documentation).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Replay {
    pub(super) runs: VecDeque<Run>,
    /// Where the last record ends.
    pub end: u64,
}

/// What the next line read again is to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Again {
    /// Delivered before the crash: not sent again.
    Skip,
    /// Sent again with this timestamp (`None`: its own).
    Send(Option<i64>),
}

impl Replay {
    pub(super) fn of(flights: &[Flight]) -> Option<Replay> {
        let runs: VecDeque<Run> = flights.iter().flat_map(|f| f.runs.iter().copied()).collect();
        let end = flights.last()?.to;
        (!runs.is_empty()).then_some(Replay { runs, end })
    }

    /// The fate of the next line, or `None` once every recorded line was read again.
    #[inline]
    pub fn next_line(&mut self) -> Option<Again> {
        let run = self.runs.front_mut()?;
        let again = if run.delivered { Again::Skip } else { Again::Send(run.ts) };
        run.count -= 1;
        match &mut run.ts {
            Some(t) if run.count > 0 => *t += 1,
            _ => {}
        }
        if run.count == 0 {
            self.runs.pop_front();
        }
        Some(again)
    }

    /// The lines still to come, as a record (for a positions file written meanwhile).
    pub(super) fn as_flight(&self, from: u64) -> Flight {
        Flight { from, to: self.end, runs: self.runs.iter().copied().collect() }
    }

    pub fn is_done(&self) -> bool {
        self.runs.is_empty()
    }

    /// Lines still to come.
    pub fn remaining(&self) -> u64 {
        self.runs.iter().map(|r| u64::from(r.count)).sum()
    }
}

/// Marks the runs of batch `seq` delivered.
pub(super) fn delivered(flights: &mut VecDeque<Flight>, seq: u64) {
    for f in flights.iter_mut() {
        for r in f.runs.iter_mut().filter(|r| r.batch == seq) {
            r.delivered = true;
        }
    }
}

/// Drops the records the file was delivered past.
pub(super) fn prune(flights: &mut VecDeque<Flight>, committed: u64) {
    while flights.front().is_some_and(|f| f.to <= committed) {
        flights.pop_front();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_join_lines_one_nanosecond_apart_in_one_batch_and_replay_them_in_order() {
        let mut runs = Vec::new();
        for t in [100, 101, 102] {
            Run::push(&mut runs, 7, Some(t));
        }
        Run::push(&mut runs, 7, Some(200));
        Run::push(&mut runs, 8, Some(201));
        Run::push(&mut runs, 8, None);
        Run::push(&mut runs, 8, None);
        assert_eq!(runs.len(), 4);
        assert_eq!((runs[0].count, runs[3].count), (3, 2));
        let mut flights = VecDeque::from([Flight { from: 0, to: 50, runs }]);
        delivered(&mut flights, 7);
        let mut r = Replay::of(flights.make_contiguous()).unwrap();
        assert_eq!(r.remaining(), 7);
        let got: Vec<Again> = std::iter::from_fn(|| r.next_line()).collect();
        use Again::*;
        assert_eq!(got, [Skip, Skip, Skip, Skip, Send(Some(201)), Send(None), Send(None)]);
        assert!(r.is_done());
        prune(&mut flights, 50);
        assert!(flights.is_empty());
    }
}
