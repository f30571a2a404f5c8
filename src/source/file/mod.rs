//! The file source: `tail -F` over globs, with delivered positions.
//!
//! How it works, in plain words. One thread per file source runs a loop:
//!
//! 1. **Scan** (every `scan_interval`, and early when a file-system event says
//!    something was created, renamed or removed, at most every 100 ms):
//!    expand the `include` globs,
//!    drop `exclude` matches and anything that is not a regular file, and look
//!    at each candidate. A candidate whose device and inode belong to a file
//!    already open is the same file (perhaps renamed by rotation) and is left
//!    alone. Otherwise its first bytes are fingerprinted and looked up in the
//!    positions store: a known file resumes at its delivered offset, a new one
//!    starts at the beginning (or the end, for `start_at = "end"` at startup).
//!    An open file whose path now names another file, or nothing, was rotated
//!    or deleted: it is read to its end, then closed once it stays idle. A
//!    file found empty is held open until it has data (`open`); generations
//!    of a path the agent never read are found beside it (`generations`),
//!    among the entries that appeared since the last scan (`arrivals`).
//!    Between listings every `scan_interval`, the paths a scan looks at are
//!    the last listing's and the arrivals since (`named`).
//!    Known files no source follows whose path names another file now are
//!    looked for beside it (`rotated`).
//! 2. **Read** every open file from its offset with `pread` in large blocks,
//!    split lines with memchr, run the stages, and queue each block's lines as
//!    one chunk, waiting while the queue is full (the data waits on disk).
//!    A file that got smaller than its offset, or whose first bytes changed
//!    (checked after every read, before anything read is handed on), was
//!    truncated (copytruncate): the rest of its old content is read from
//!    logrotate's copy, and it starts again at 0; the event is counted.
//! 3. **Wait** for a file-system event or the poll interval. Without working
//!    events (unsupported file system, watch limit reached) the loop polls,
//!    says so once, and rescans when a directory's modification time changed.
//!
//! A chunk carries the offset just after its last handled line; that offset
//! is written to the positions file only once the service acknowledged it.

use std::collections::{HashMap, HashSet};
use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use super::fingerprint::open_regular;
use super::tailer::{Step, Tailer};
use super::watch::{Events, PolledDirs, Wake};
use super::{FileMatch, Outlet, SourceSpec, READ_BLOCK};
use crate::config::SourceConfig;
use crate::metrics::Metrics;
use crate::pipeline::SourceStages;
use crate::positions::Positions;
use crate::queue::Chunk;
use crate::status::report::FileState;

mod arrivals;
mod compressed;
mod generations;
mod moved;
mod named;
mod open;
mod park;
mod rotated;
mod scan;
mod untarget;

use open::Newborn;
use park::Parked;

/// Poll interval when file-system events work (a safety net for missed events).
const POLL_WITH_EVENTS: Duration = Duration::from_millis(1000);
/// Poll interval without events.
const POLL_WITHOUT_EVENTS: Duration = Duration::from_millis(250);
/// At most this much is read from one file before the others get a turn.
const MAX_READ_PER_TURN: u64 = 4 << 20;
/// After a write event, wait this long so more writes gather before reading
/// (and, while write events are off, the time between reads of the open
/// files). Lines wait in the batcher up to `batch.max_wait` (1 s by default)
/// anyway; at 20,000 lines/s over 10 files a 10 ms window cost 1.7 CPU-s per
/// million lines, 100 ms 0.8 (benches/daemon).
const READ_COALESCE: Duration = Duration::from_millis(100);
/// A create, rename or remove event rescans at most this often.
const RESCAN_ON_EVENT: Duration = Duration::from_millis(100);
/// A write event rescans (for parked or still-empty files) at most this often.
const RESCAN_ON_WRITE: Duration = Duration::from_millis(250);
/// How the source runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// The daemon: follow files for ever.
    Follow,
    /// `tailship push`: read each file once to its end, then stop.
    Once,
}

/// What a source that tails files is made of: its spec, its stages, the
/// positions it keeps, where its chunks go and whether it follows. A docker
/// source holds them until its Engine says where the files are, then makes
/// its file source of them.
pub struct Tailing {
    pub spec: SourceSpec,
    pub stages: Arc<SourceStages>,
    pub positions: Arc<Positions>,
    pub out: Outlet,
    pub mode: Mode,
}

/// The file source; see the module documentation.
pub struct FileSource {
    spec: SourceSpec,
    cfg: SourceConfig,
    files: Arc<FileMatch>,
    stages: Arc<SourceStages>,
    positions: Arc<Positions>,
    out: Outlet,
    mode: Mode,
    tailers: Vec<Tailer>,
    /// Files closed to stay under `max_open_files`, by device and inode.
    parked: HashMap<(u64, u64), Parked>,
    /// Paths already warned about (unreadable, too many open files), to warn once.
    warned: HashSet<PathBuf>,
    /// Files not read for their age (`ignore_older`), by device and inode:
    /// said once each, and listed in `/status` while they are skipped.
    too_old: HashMap<(u64, u64), crate::status::FileHandle>,
    /// Compressed files already read in this run (by fingerprint).
    gz_done: HashSet<u64>,
    first_scan: bool,
    /// When this source started: a file that appears at a path afterwards is
    /// no history, and neither are its rotations (see `generations`).
    started: SystemTime,
    /// Files found empty, held open until they have data (see `open`).
    newborn: Vec<Newborn>,
    /// When each path's rotations were last listed (by a hash of the path),
    /// and the generations found waiting to be opened: (modified, path,
    /// label) (see `generations`).
    looked: HashMap<u128, SystemTime>,
    unseen: std::collections::BTreeSet<(SystemTime, PathBuf, PathBuf)>,
    /// The last scan found an empty file it could not hold: looked at again
    /// at the next scan.
    saw_empty: bool,
    /// What appeared in the source's directories (see `arrivals`).
    arrivals: arrivals::Arrivals,
    /// The paths the globs named at the last listing (see `named`).
    named: named::Named,
    /// Where parked files renamed away went (see `moved`).
    moved_to: moved::MovedTo,
    buf: Vec<u8>,
    /// Chunks read this round, queued together (one runtime wake-up for
    /// many small reads): with the tailer index and key each came from.
    pending: Vec<(usize, u64, Chunk)>,
    /// Queue-budget cost of `pending`.
    pending_cost: usize,
}

/// What a file's turn found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Turn {
    /// Nothing new.
    Idle,
    /// Lines read or flushed, up to the file's end.
    Read,
    /// Lines read, and more wait (the turn's share was used up).
    More,
}

impl FileSource {
    /// A file source of `parts` (whose spec's `files` holds the compiled globs).
    pub fn new(parts: Tailing) -> Result<Self, String> {
        let Tailing { spec, stages, positions, out, mode } = parts;
        let files = spec.files.clone().ok_or_else(|| format!("source {}: no include globs", stages.name))?;
        Ok(Self {
            cfg: spec.config.clone(),
            spec,
            files,
            stages,
            positions,
            out,
            mode,
            tailers: Vec::new(),
            parked: HashMap::new(),
            warned: HashSet::new(),
            too_old: HashMap::new(),
            gz_done: HashSet::new(),
            first_scan: true,
            started: SystemTime::now(),
            newborn: Vec::new(),
            looked: HashMap::new(),
            unseen: Default::default(),
            saw_empty: false,
            arrivals: Default::default(),
            named: Default::default(),
            moved_to: Default::default(),
            buf: vec![0u8; READ_BLOCK],
            pending: Vec::new(),
            pending_cost: 0,
        })
    }

    fn name(&self) -> Arc<str> {
        self.stages.name.clone()
    }

    /// Runs until cancelled (follow mode) or until every file was read (once mode).
    pub fn run(mut self) {
        let mut events = match self.mode {
            Mode::Follow => Events::start(&self.files.watch_dirs(), &self.name()),
            Mode::Once => None,
        };
        // Directories without events (all of them when there are none) are
        // polled: their files read at each poll, and a change of their entries
        // rescanned at the next poll, not the next scan, so a file created and
        // renamed away within a scan interval is seen (see `watch::PolledDirs`).
        let mut polled_dirs = PolledDirs::default();
        let mut next_scan = Instant::now();
        let mut last_scan = Instant::now();
        let mut rescan = true;
        // The discovery's targets as last scanned: a change (a pod listed,
        // a target added) is looked at at once, not at the next scan.
        let targets = self.spec.labels.targets.clone();
        let mut targets_seen = targets.as_ref().map_or(0, |t| t.changes());
        // Set after a wait that ended with no event: with events working, an
        // open file that raised none has nothing new, and is not touched
        // (no read, no stat) until an event, a scan or its partial line is due.
        let mut quiet_tick = false;
        // Write events are off: the open files are read every window instead
        // (see `watch`); `polled` is set when this round follows such a wait.
        let mut polling = false;
        let mut polled = false;
        let name = self.name();
        loop {
            if self.out.stopped() {
                break;
            }
            if self.mode == Mode::Follow {
                polled_dirs.refresh(events.as_ref(), || self.files.watch_dirs(), &name);
            }
            let poll = if events.is_some() && polled_dirs.is_empty() { POLL_WITH_EVENTS } else { POLL_WITHOUT_EVENTS };
            if let Some(t) = &targets {
                let now = t.changes();
                rescan |= now != targets_seen;
                targets_seen = now;
            }
            if rescan || Instant::now() >= next_scan {
                last_scan = Instant::now();
                self.arrivals.take(events.as_mut(), &polled_dirs);
                self.scan();
                next_scan = Instant::now() + self.cfg.scan_interval.get().max(Duration::from_millis(100));
                if let Some(at) = self.arrivals.recheck_at() {
                    next_scan = next_scan.min(at);
                }
                rescan = false;
                quiet_tick = false;
            }
            if !quiet_tick && !self.newborn.is_empty() {
                self.check_newborn();
            }
            let (found, more) = self.read_round(quiet_tick, &polled_dirs);
            if self.mode == Mode::Once {
                if !found {
                    break;
                }
                continue;
            }
            if more {
                continue;
            }
            if polling && polled && !found {
                // The writers paused: events again, then one more look for
                // what was written between the last read and the switch.
                if let Some(ev) = &mut events {
                    ev.writes(true);
                }
                (polling, polled, quiet_tick) = (false, false, false);
                continue;
            }
            let wait = self.wait_time(poll, next_scan);
            let wake = self.wait(events.as_mut(), &mut polling, &mut polled_dirs, wait);
            polled = polling;
            quiet_tick = wake == Wake::Timeout && events.is_some() && !polling;
            next_scan = self.scan_after(wake, last_scan, next_scan);
        }
        drop(events);
        self.release_all();
    }

    /// When the next scan is due, after a wait that `wake` ended (the last
    /// scan at `last_scan`, the next one due at `next_scan` so far). A
    /// throttled look is not skipped: it is moved up to when it is allowed.
    fn scan_after(&self, wake: Wake, last_scan: Instant, next_scan: Instant) -> Instant {
        let mut next = next_scan;
        if wake == Wake::Structural {
            // Something was created, renamed or removed: a scan at once, but
            // not sooner than RESCAN_ON_EVENT after the last (a mass rotation
            // sends thousands of events a second, and each scan looks at
            // every path the globs name).
            next = next.min(last_scan + RESCAN_ON_EVENT);
        }
        if wake != Wake::Timeout && (!self.parked.is_empty() || self.saw_empty) {
            // A write may be to a parked file, or to a file that was empty at
            // the last scan (not yet tailed): look again, at most every 250 ms.
            next = next.min(last_scan + RESCAN_ON_WRITE);
        }
        next
    }

    /// At the end of `run`: every open and parked file's position released.
    fn release_all(&mut self) {
        for t in self.tailers.drain(..) {
            self.positions.keep_replay(t.key, t.replay, t.queued);
            self.positions.release(t.key, t.size, t.queued);
        }
        for (_, p) in self.parked.drain() {
            self.positions.release(p.key, p.offset, p.offset);
        }
        Metrics::get().files_open.with_label_values(&[&self.name()]).set(0);
    }

    /// One round over the open files (with events working, after a quiet
    /// wait, only those due: see `run`), then what a round ends with.
    /// Returns whether anything was read, and whether more waits.
    fn read_round(&mut self, quiet_tick: bool, polled_dirs: &PolledDirs) -> (bool, bool) {
        let (mut found, mut more) = (false, false);
        let now = Instant::now();
        for i in 0..self.tailers.len() {
            if self.out.stopped() {
                break;
            }
            if quiet_tick && !self.tailers[i].needs_poll(now) && !polled_dirs.covers(&self.tailers[i].path) {
                continue;
            }
            match self.read_turn(i) {
                Turn::Idle => {}
                Turn::Read => found = true,
                Turn::More => (found, more) = (true, true),
            }
        }
        self.flush();
        self.close_finished();
        more |= self.open_unseen();
        let (m, name) = (Metrics::get(), self.name());
        m.files_open.with_label_values(&[&name]).set(self.tailers.len() as i64);
        m.files_unread_bytes
            .with_label_values(&[&name])
            .set(self.tailers.iter().map(|t| t.size.saturating_sub(t.offset)).sum::<u64>() as i64);
        (found, more)
    }

    /// How long to wait: until the poll, the next scan or the first partial
    /// line due, whichever comes first (at least 5 ms).
    fn wait_time(&self, poll: Duration, next_scan: Instant) -> Duration {
        let due = self.tailers.iter().filter_map(|t| t.feed.due_at()).min();
        let mut wait = poll.min(next_scan.saturating_duration_since(Instant::now()));
        if let Some(d) = due {
            wait = wait.min(d.saturating_duration_since(Instant::now()));
        }
        wait.max(Duration::from_millis(5))
    }

    /// Waits up to `wait` for a file-system event (or sleeps, without
    /// events); turns write events off (`polling`) when writes outnumber
    /// the open files.
    fn wait(
        &self,
        events: Option<&mut Events>,
        polling: &mut bool,
        polled_dirs: &mut PolledDirs,
        wait: Duration,
    ) -> Wake {
        match events {
            // Write events off: the open files are read after each window.
            Some(ev) if *polling => ev.wait(READ_COALESCE.min(wait), Duration::ZERO),
            // Writers append line by line: a wake-up after writes takes
            // the writes of a short window at once (see `watch`).
            Some(ev) => {
                let mut wake = ev.wait(wait, READ_COALESCE);
                if wake == Wake::Timeout && polled_dirs.changed() {
                    wake = Wake::Structural;
                }
                // More writes than open files: reading each open file once
                // a window costs less than their events (see `watch`).
                if wake == Wake::Data
                    && ev.last_writes() > self.tailers.len()
                    && self.parked.is_empty()
                    && !self.saw_empty
                {
                    *polling = ev.writes(false);
                }
                wake
            }
            None => {
                std::thread::sleep(wait);
                if polled_dirs.changed() {
                    Wake::Structural
                } else {
                    Wake::Timeout
                }
            }
        }
    }

    /// Watches the base directories of the include globs. Sends `true` for
    /// events that may add or remove files, `false` for writes.
    fn event(&self, event: &str) {
        Metrics::get().file_events.with_label_values(&[&self.name(), event]).inc();
    }

    /// Reads what is new in tailer `i` (in follow mode, up to a read that
    /// reaches the file's end) and queues it, with this round's other chunks.
    fn read_turn(&mut self, i: usize) -> Turn {
        let once = self.mode == Mode::Once;
        // (A file rewritten in place since the last read is found by the read
        // itself, before anything of it is handed on: see `Tailer::step`.)
        let mut read_total = 0u64;
        let mut turn = Turn::Idle;
        loop {
            if read_total >= MAX_READ_PER_TURN || self.out.stopped() {
                return Turn::More;
            }
            let fp_len = self.tailers[i].fp.len;
            let (chunk, at_end) = match self.tailers[i].step(&mut self.buf, &self.stages, &self.positions, once) {
                Step::Read { chunk, bytes, at_end } => {
                    read_total += bytes as u64;
                    // A read that got less than it asked for reached the end:
                    // in follow mode the next look is the next round's. (One
                    // cut at a record's end during a replay did not: taken
                    // for the end, a rotated file's turn ended there and, idle
                    // while the queue was full, it was closed half read.)
                    (chunk, !once && at_end)
                }
                Step::AtEnd(last) => {
                    if let Some(c) = last {
                        self.queue(i, c);
                    }
                    return turn;
                }
                Step::Truncated => {
                    self.truncated(i);
                    return Turn::More;
                }
                Step::Failed => return turn,
            };
            self.queue(i, chunk);
            let t = &self.tailers[i];
            if t.fp.len > fp_len && (fp_len == 0 || t.restarted) {
                // The look may open generations and park files: this turn ends.
                self.look_after_fingerprint_grew(i);
                return Turn::More;
            }
            turn = Turn::Read;
            if at_end {
                self.tailers[i].idle_since = Some(Instant::now());
                return turn;
            }
        }
    }

    /// Adds a chunk of tailer `i` to this round's, queueing them all first if
    /// they would hold more than a read block outside the queue's budget.
    fn queue(&mut self, i: usize, chunk: Chunk) {
        let cost = chunk.cost();
        if self.pending_cost + cost > READ_BLOCK {
            self.flush();
        }
        self.pending_cost += cost;
        self.pending.push((i, self.tailers[i].key, chunk));
    }

    /// Queues this round's chunks in one go, waiting while the queue is
    /// full; each tailer then goes on from what its queued chunks account for.
    fn flush(&mut self) {
        if self.pending.is_empty() {
            return;
        }
        self.pending_cost = 0;
        let mut queued: Vec<(usize, u64, Option<u64>)> = Vec::with_capacity(self.pending.len());
        let chunks: Vec<Chunk> = self
            .pending
            .drain(..)
            .map(|(i, key, c)| {
                queued.push((i, key, c.ack.map(|a| a.offset)));
                c
            })
            .collect();
        // While the queue is full (the service is down or slow), the files
        // grow unread: keep `tailship_files_unread_bytes` true meanwhile.
        let (tailers, name) = (&self.tailers, &self.stages.name);
        let sent = self.out.send_all_waiting(chunks, UNREAD_REFRESH, || report_unread(tailers, name));
        for &(i, key, q) in &queued[..sent] {
            if let (Some(t), Some(q)) = (self.tailers.get_mut(i), q) {
                if t.key == key {
                    t.queued = q;
                }
            }
        }
    }

    /// Closes drained files that were rotated away or deleted (or, in once mode, every drained file).
    fn close_finished(&mut self) {
        let now = Instant::now();
        let once = self.mode == Mode::Once;
        let mut i = 0;
        while i < self.tailers.len() {
            let t = &self.tailers[i];
            let done = t.detached_done(now) || (once && t.idle_since.is_some());
            if done {
                let t = self.tailers.swap_remove(i);
                t.status.set_state(FileState::Done);
                tracing::debug!(path = %t.path.display(), "closing file");
                if t.detached {
                    // Rotated away or deleted, and read to its end: nothing more will come.
                    self.positions.finish(t.key, t.offset);
                    if t.file.metadata().is_ok_and(|m| m.nlink() == 0) {
                        self.positions.deleted(t.key);
                    }
                } else {
                    self.positions.release(t.key, t.size, t.queued);
                }
                Metrics::get().file_events.with_label_values(&[&self.stages.name, "closed"]).inc();
            } else {
                i += 1;
            }
        }
    }
}

/// How often a source waiting on a full queue looks at its files' sizes.
const UNREAD_REFRESH: Duration = Duration::from_secs(1);

/// Sets `tailship_files_unread_bytes` from the open files' current sizes
/// (one `fstat` each).
fn report_unread(tailers: &[Tailer], name: &str) {
    let unread: u64 =
        tailers.iter().map(|t| t.file.metadata().map(|m| m.len()).unwrap_or(t.size).saturating_sub(t.offset)).sum();
    Metrics::get().files_unread_bytes.with_label_values(&[name]).set(unread as i64);
}
