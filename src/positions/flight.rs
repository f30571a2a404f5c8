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

/// The batch number of lines a restarted agent read again and did not send
/// (their batch was acknowledged before the restart): recorded as delivered,
/// so the records of a file count every line in it (see [`Replay`]).
pub const SKIPPED: u64 = 0;

impl Run {
    /// Adds a line that was not sent again (see [`SKIPPED`]).
    #[inline]
    pub fn push_skipped(runs: &mut Vec<Run>) {
        match runs.last_mut() {
            Some(last) if last.batch == SKIPPED && last.count < u32::MAX => last.count += 1,
            _ => runs.push(Run { batch: SKIPPED, ts: None, count: 1, delivered: true }),
        }
    }
}

/// One chunk's lines of a file, as they went into batches.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Flight {
    /// Which run of the agent made the record (its start time): a later
    /// one's record of the same stretch replaces an earlier one's, as the
    /// later agent read those lines again and knows what became of them.
    #[serde(rename = "e", default)]
    pub epoch: u64,
    pub from: u64,
    /// The chunk's acknowledgement offset: once the file is delivered to
    /// here, the record is done with.
    pub to: u64,
    pub runs: Vec<Run>,
    /// How many lines the chunk has (its runs may count fewer: a chunk split
    /// over two batches, killed before the second was sealed, has only the
    /// first batch's lines recorded, and the rest were never sent). `None`
    /// in records of tailship before 2026-11-25: the runs count them all.
    #[serde(rename = "l", default, skip_serializing_if = "Option::is_none")]
    pub lines: Option<u32>,
}

impl Flight {
    /// Lines recorded in runs.
    fn recorded(&self) -> u64 {
        self.runs.iter().map(|r| u64::from(r.count)).sum()
    }

    /// Lines of the chunk: those recorded, and those of a later batch not
    /// sealed when the agent stopped.
    fn lines(&self) -> u64 {
        self.lines.map_or(0, u64::from).max(self.recorded())
    }
}

/// Adds a record loaded from disk (the positions file or its log) to a
/// file's records. The same stretch recorded twice by one run of the agent
/// (a chunk split over two batches is recorded when each is sealed, and a
/// record may be both in the positions file and in the log) keeps the
/// longer record, with every delivered mark of both.
pub(super) fn add(flights: &mut VecDeque<Flight>, f: Flight) {
    let Some(old) = flights.iter_mut().find(|o| o.epoch == f.epoch && o.from == f.from && o.to == f.to) else {
        flights.push_back(f);
        return;
    };
    let delivered: Vec<u64> =
        old.runs.iter().chain(f.runs.iter()).filter(|r| r.delivered && r.batch != SKIPPED).map(|r| r.batch).collect();
    if f.recorded() > old.recorded() {
        *old = f;
    }
    for r in old.runs.iter_mut().filter(|r| delivered.contains(&r.batch)) {
        r.delivered = true;
    }
}

/// What a file's source does with the lines it reads again after a
/// restart, in order: a chain of records from the offset it starts at, each
/// beginning where the one before ends (of two records of the same stretch,
/// the later agent's).
///
/// Lines are matched to records by their order. A read during a replay
/// stops at the current record's end, so each chunk lies within one record,
/// and a chunk is matched only when its lines fit the record ([`Replay::fits`]);
/// a record's lines are only given to the lines of chunks that end within it
/// (a shorter record, cut by a crash, leaves the rest of its stretch to be
/// sent as read, never to take the next record's fates).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Replay {
    flights: VecDeque<Flight>,
    /// Into the first record: the run and the lines of it already read, and
    /// every line of it read (past its runs too, see [`Flight::lines`]).
    run: usize,
    used: u32,
    taken: u64,
    /// A line of the first record was read again.
    entered: bool,
    /// Where the last chunk read ended (the start, before the first).
    at: u64,
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
    /// The chain of `flights` from `start`, or `None` when there is none.
    pub(super) fn of(flights: &[Flight], start: u64) -> Option<Replay> {
        let mut chain = VecDeque::new();
        let mut at = start;
        while let Some(f) = flights.iter().filter(|f| f.from == at && f.to > at).max_by_key(|f| f.epoch) {
            chain.push_back(f.clone());
            at = f.to;
        }
        chain.iter().any(|f| !f.runs.is_empty()).then_some(Replay { flights: chain, at: start, ..Replay::default() })
    }

    /// Where the current record ends: a read goes no further (see the type's documentation).
    pub fn boundary(&self) -> Option<u64> {
        self.flights.front().map(|f| f.to)
    }

    /// Whether the chunk just read (`lines` lines, ending at the file's safe
    /// offset `end`) can be matched to the current record: it ends at the
    /// record's end with as many lines as the record has left, or before it
    /// with no more. Otherwise the lines were cut or joined otherwise than
    /// the first time (a partial line written slowly, a multiline block
    /// ended by its wait), and the replay must stop: no line may take the
    /// fate of another.
    pub fn fits(&self, lines: usize, end: u64) -> bool {
        let Some(f) = self.flights.front() else { return false };
        let left = f.lines().saturating_sub(self.taken);
        let lines = lines as u64;
        match end.cmp(&f.to) {
            std::cmp::Ordering::Equal => lines == left,
            std::cmp::Ordering::Less => lines <= left,
            std::cmp::Ordering::Greater => false,
        }
    }

    /// The fate of the next line of the chunk being read; `None`: sent as read
    /// (the current record has no more lines: a chunk never takes the next
    /// record's, see the type's documentation).
    #[inline]
    pub fn next_line(&mut self) -> Option<Again> {
        let f = self.flights.front()?;
        self.entered = true;
        self.taken += 1;
        // Past the runs: lines of a batch not sealed when the agent stopped, never sent.
        let run = f.runs.get(self.run)?;
        let again = if run.delivered { Again::Skip } else { Again::Send(run.ts.map(|t| t + i64::from(self.used))) };
        self.used += 1;
        if self.used == run.count {
            self.run += 1;
            self.used = 0;
        }
        Some(again)
    }

    /// The chunk just read ends at `end` (the file's safe offset; its lines
    /// are those between the previous chunk's end and this one). Drops the
    /// records it went past, and one it went into without reading any of its
    /// lines again (a chunk that spanned records: that record's first lines
    /// were sent as read, so the rest cannot be matched). Returns false when
    /// a record read again had more lines than its stretch held: the records
    /// do not describe the file's lines (the caller stops the replay).
    pub fn chunk_done(&mut self, end: u64) -> bool {
        self.at = end;
        let mut consistent = true;
        while let Some(f) = self.flights.front() {
            if f.to > end && (self.entered || f.from >= end) {
                break;
            }
            if self.entered && f.to <= end {
                let left: u32 = f.runs.get(self.run..).unwrap_or_default().iter().map(|r| r.count).sum();
                consistent &= left <= self.used;
            }
            self.flights.pop_front();
            (self.run, self.used, self.taken, self.entered) = (0, 0, 0, false);
        }
        consistent
    }

    /// The records still to come, the first one starting at `at` (where the
    /// source that stops now had queued its lines to), to be kept for the
    /// next one. None when the source read past `at` (chunks read and not
    /// queued): the lines between would take the wrong records.
    pub(super) fn into_flights(mut self, at: u64) -> VecDeque<Flight> {
        if at != self.at {
            return VecDeque::new();
        }
        if let Some(f) = self.flights.front_mut() {
            let left = f.lines().saturating_sub(self.taken);
            let mut runs: Vec<Run> = f.runs.get(self.run..).unwrap_or_default().to_vec();
            if let Some(first) = runs.first_mut() {
                first.count -= self.used;
                first.ts = first.ts.map(|t| t + i64::from(self.used));
            }
            runs.retain(|r| r.count > 0);
            f.runs = runs;
            f.lines = f.lines.map(|_| u32::try_from(left).unwrap_or(u32::MAX));
            f.from = at;
        }
        self.flights.retain(|f| f.to > f.from);
        self.flights
    }

    pub fn is_done(&self) -> bool {
        self.flights.is_empty()
    }

    /// Lines still to come.
    pub fn remaining(&self) -> u64 {
        let all: u64 = self.flights.iter().map(Flight::lines).sum();
        all.saturating_sub(self.taken)
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
    flights.retain(|f| f.to > committed);
}

#[cfg(test)]
mod tests {
    use super::*;
    use Again::*;

    fn run(batch: u64, ts: Option<i64>, count: u32) -> Run {
        Run { batch, ts, count, delivered: false }
    }

    fn fates(r: &mut Replay) -> Vec<Again> {
        std::iter::from_fn(|| r.next_line()).collect()
    }

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
        Run::push_skipped(&mut runs);
        Run::push_skipped(&mut runs);
        assert_eq!(runs.len(), 5);
        assert_eq!((runs[0].count, runs[3].count, runs[4].count), (3, 2, 2));
        let mut flights = VecDeque::from([Flight { lines: None, epoch: 1, from: 0, to: 50, runs }]);
        delivered(&mut flights, 7);
        let mut r = Replay::of(flights.make_contiguous(), 0).unwrap();
        assert_eq!(r.remaining(), 9);
        assert_eq!(fates(&mut r), [Skip, Skip, Skip, Skip, Send(Some(201)), Send(None), Send(None), Skip, Skip]);
        assert!(r.chunk_done(50));
        assert!(r.is_done());
        prune(&mut flights, 50);
        assert!(flights.is_empty());
    }

    /// The loss found by the chaos test in CI (2026-11-24): an agent
    /// restarted twice before it wrote its positions file loaded the first
    /// agent's records and the second's of the same lines, one after the
    /// other, and matched lines to the wrong ones: a block of lines took
    /// the fates of lines further on, delivered ones, and was never sent.
    #[test]
    fn records_of_the_same_lines_by_two_restarts_are_not_chained_one_after_the_other() {
        // The first agent: lines 0..4 in batch 1 (acknowledged), 4..8 in batch 2 (lost with it).
        let first = [
            Flight {
                lines: None,
                epoch: 1,
                from: 0,
                to: 40,
                runs: vec![Run { delivered: true, ..run(1, Some(10), 4) }],
            },
            Flight { lines: None, epoch: 1, from: 40, to: 80, runs: vec![run(2, Some(20), 4)] },
        ];
        // The second read them again: skipped 0..4, sent 4..8 again in batch 9 (not acknowledged).
        let second = [
            Flight {
                lines: None,
                epoch: 2,
                from: 0,
                to: 40,
                runs: vec![Run { batch: SKIPPED, ts: None, count: 4, delivered: true }],
            },
            Flight { lines: None, epoch: 2, from: 40, to: 80, runs: vec![run(9, Some(20), 4)] },
        ];
        let mut all = VecDeque::new();
        for f in first.iter().chain(&second) {
            add(&mut all, f.clone());
        }
        let mut r = Replay::of(all.make_contiguous(), 0).unwrap();
        assert_eq!(fates(&mut r), [Skip; 4]);
        assert!(r.chunk_done(40));
        assert_eq!(fates(&mut r), [Send(Some(20)), Send(Some(21)), Send(Some(22)), Send(Some(23))]);
        assert!(r.chunk_done(80));
        assert!(r.is_done());
    }

    /// A record cut short (the second half of a chunk split over two batches
    /// was never recorded) leaves the rest of its stretch to be sent as read.
    #[test]
    fn a_record_cut_short_never_gives_its_lines_the_next_records_fates() {
        let flights = [
            Flight { lines: None, epoch: 1, from: 0, to: 40, runs: vec![run(1, Some(10), 2)] },
            Flight {
                lines: None,
                epoch: 1,
                from: 40,
                to: 80,
                runs: vec![Run { delivered: true, ..run(2, Some(20), 4) }],
            },
        ];
        let mut r = Replay::of(&flights, 0).unwrap();
        assert_eq!(r.boundary(), Some(40));
        assert!(!r.fits(4, 40), "more lines than the record");
        assert!(r.fits(2, 40) && r.fits(1, 30) && !r.fits(2, 50));
        // Were the chunk up to 40 matched anyway: 2 recorded, 2 sent as read.
        let chunk: Vec<Option<Again>> = (0..4).map(|_| r.next_line()).collect();
        assert_eq!(chunk, [Some(Send(Some(10))), Some(Send(Some(11))), None, None]);
        assert!(r.chunk_done(40));
        assert_eq!(fates(&mut r), [Skip; 4]);
        // Records that do not start where the file is read from are not used.
        assert!(Replay::of(&flights, 10).is_none());
    }

    /// A chunk split over two batches, the agent killed before the second
    /// was sealed: its record has only the first batch's lines, and says how
    /// many the chunk had. The CI run of 2026-11-24 showed 1,396 lines twice
    /// with new timestamps: such a record's chunk did not fit, and the whole
    /// replay was given up, so the next records' lines (sent, stored) went
    /// again as read.
    #[test]
    fn a_record_cut_by_a_kill_gives_its_lines_their_fates_and_the_replay_goes_on() {
        let flights = [
            Flight { lines: Some(4), epoch: 1, from: 0, to: 40, runs: vec![run(1, Some(10), 2)] },
            Flight { lines: Some(2), epoch: 1, from: 40, to: 60, runs: vec![run(2, Some(20), 2)] },
        ];
        let mut r = Replay::of(&flights, 0).unwrap();
        assert_eq!(r.remaining(), 6);
        assert!(r.fits(4, 40) && r.fits(3, 30) && !r.fits(3, 40) && !r.fits(5, 40));
        let chunk: Vec<Option<Again>> = (0..4).map(|_| r.next_line()).collect();
        assert_eq!(chunk, [Some(Send(Some(10))), Some(Send(Some(11))), None, None]);
        assert!(r.chunk_done(40));
        assert!(r.fits(2, 60));
        assert_eq!(fates(&mut r), [Send(Some(20)), Send(Some(21))]);
        assert!(r.chunk_done(60));
        assert!(r.is_done());
    }

    /// What a stopped source had not read again of a cut record is kept with
    /// the lines it has left, past its runs too.
    #[test]
    fn the_rest_of_a_cut_record_keeps_its_line_count() {
        let flights = [Flight { lines: Some(5), epoch: 1, from: 0, to: 50, runs: vec![run(1, Some(10), 2)] }];
        let mut r = Replay::of(&flights, 0).unwrap();
        assert!(r.fits(3, 30));
        assert_eq!(
            (0..3).map(|_| r.next_line()).collect::<Vec<_>>(),
            [Some(Send(Some(10))), Some(Send(Some(11))), None]
        );
        assert!(r.chunk_done(30));
        let left = r.into_flights(30);
        assert_eq!(left, [Flight { lines: Some(2), epoch: 1, from: 30, to: 50, runs: vec![] }]);
    }

    /// A chunk that went past a record's end without reading its lines (a
    /// read not cut at the record's end) drops it, and a record with more
    /// lines than its stretch held is reported.
    #[test]
    fn records_a_chunk_went_past_are_dropped_and_a_mismatch_is_reported() {
        let flights = [
            Flight { lines: None, epoch: 1, from: 0, to: 40, runs: vec![run(1, Some(10), 2)] },
            Flight { lines: None, epoch: 1, from: 40, to: 80, runs: vec![run(2, Some(20), 2)] },
            Flight { lines: None, epoch: 1, from: 80, to: 120, runs: vec![run(3, Some(30), 2)] },
        ];
        let mut r = Replay::of(&flights, 0).unwrap();
        r.next_line();
        r.next_line();
        // One chunk up to 60: the second record's first lines were sent as read.
        assert_eq!(r.next_line(), None);
        assert!(r.chunk_done(60));
        assert_eq!(r.boundary(), Some(120), "the record gone into is dropped");
        assert_eq!(r.next_line(), Some(Send(Some(30))));
        assert!(!r.chunk_done(120), "one line of two read in its stretch");
    }

    /// The same stretch recorded twice by one agent (once per batch of a split
    /// chunk, or in the positions file and in its log) keeps the longer record
    /// with the delivered marks of both.
    #[test]
    fn the_same_record_loaded_twice_keeps_the_longer_one_with_both_marks() {
        let mut all = VecDeque::new();
        add(
            &mut all,
            Flight {
                lines: None,
                epoch: 3,
                from: 0,
                to: 40,
                runs: vec![Run { delivered: true, ..run(5, Some(1), 2) }],
            },
        );
        add(
            &mut all,
            Flight { lines: None, epoch: 3, from: 0, to: 40, runs: vec![run(5, Some(1), 2), run(6, Some(3), 1)] },
        );
        add(&mut all, Flight { lines: None, epoch: 3, from: 0, to: 40, runs: vec![run(5, Some(1), 2)] });
        assert_eq!(all.len(), 1);
        let mut r = Replay::of(all.make_contiguous(), 0).unwrap();
        assert_eq!(fates(&mut r), [Skip, Skip, Send(Some(3))]);
    }

    /// What a stopped source had not read again is kept from where it stopped.
    #[test]
    fn the_rest_of_a_replay_starts_where_its_source_stopped() {
        let flights = [Flight { lines: None, epoch: 1, from: 0, to: 40, runs: vec![run(1, Some(10), 3)] }];
        let mut r = Replay::of(&flights, 0).unwrap();
        r.next_line();
        assert!(r.chunk_done(12));
        assert!(r.clone().into_flights(30).is_empty(), "read past what was queued");
        let left = r.into_flights(12);
        assert_eq!(left, [Flight { lines: None, epoch: 1, from: 12, to: 40, runs: vec![run(1, Some(11), 2)] }]);
    }
}
