//! The agent's live status: what `/status.json`, the `/status` page and
//! `tailship top` show (see [`report`] for the shape).
//!
//! The agent makes one [`Status`] and hands it down to the layers that
//! write into it (its sources, batch delivery, positions, the alert engine;
//! the client layer sees it only as an observer of its pushes); it reads it
//! once a second ([`Status::tick`], for the rates) and when someone asks
//! (`agent::status` assembles the report, adding what only it knows:
//! delivered offsets, the queue's size, the sources of the plan). There is
//! no process-wide status: a reader for a second client is handed one
//! nobody serves, so what it reads is listed once.
//!
//! Writes are cheap and rare on purpose. A file source holds a [`FileHandle`]
//! per open file and updates it once per read block (a few relaxed atomic
//! stores, no lock, nothing per line). A push records its latency and outcome
//! under a short lock, once per request; alert deliveries once per webhook
//! call. Rates over the last 10 s are not counted as they happen: the
//! once-a-second tick samples the running totals into a small ring, and a
//! rate is the difference between now and the oldest sample of the window.

pub mod report;
mod ring;
pub mod view;

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering::Relaxed};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use report::{AlertGroup, AlertSend, FileState, LastError};
pub use ring::Ring;

/// Files done (drained after rotation, or read once) stay listed this long.
const DONE_KEEP: Duration = Duration::from_secs(300);
/// At most this many done files stay listed (the oldest go first).
const DONE_MAX: usize = 200;
/// Done files held between looks at `/status`, at most.
const DONE_HELD: usize = 1000;
/// Push latencies kept for the percentiles (the most recent requests).
const LATENCIES: usize = 1024;
/// Latencies older than this are not in the percentiles.
const LATENCY_WINDOW: Duration = Duration::from_secs(300);

/// Wall-clock time in Unix milliseconds.
pub fn now_ms() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0)
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// One file a file source follows (or followed: see [`DONE_KEEP`]).
#[derive(Debug)]
pub struct FileStatus {
    /// Its place in the list (the order files were first tracked).
    seq: u64,
    pub source: Arc<str>,
    path: Mutex<Box<Path>>,
    /// Device and inode: the size of a followed file is looked up by path,
    /// and counts only while the path still names this file.
    pub dev: u64,
    pub ino: u64,
    /// The file's key in the positions store (it changes on truncation).
    key: AtomicU64,
    /// Where the next read starts.
    offset: AtomicU64,
    /// The last size seen by the source.
    size: AtomicU64,
    /// Lines (kept by the stages) and bytes read, in total.
    lines: AtomicU64,
    bytes: AtomicU64,
    state: AtomicU8,
    /// When the file was done (Unix ms; 0 while it is not).
    done_at: AtomicU64,
    /// Samples of (lines, bytes) for the rates; touched by the tick and reports only.
    ring: Mutex<Ring<2>>,
}

impl FileStatus {
    pub fn path(&self) -> PathBuf {
        lock(&self.path).to_path_buf()
    }
    pub fn key(&self) -> u64 {
        self.key.load(Relaxed)
    }
    pub fn offset(&self) -> u64 {
        self.offset.load(Relaxed)
    }
    pub fn size(&self) -> u64 {
        self.size.load(Relaxed)
    }
    pub fn state(&self) -> FileState {
        FileState::from_u8(self.state.load(Relaxed))
    }
    pub fn done_at(&self) -> u64 {
        self.done_at.load(Relaxed)
    }
    /// Lines read (kept by the stages), in total.
    pub fn lines(&self) -> u64 {
        self.lines.load(Relaxed)
    }
    /// Lines and bytes per second over the last 10 s.
    pub fn rates(&self, now: Instant) -> [f64; 2] {
        lock(&self.ring).rates(now, [self.lines.load(Relaxed), self.bytes.load(Relaxed)])
    }
}

/// A file source's handle on one file's status. Dropping it forgets the
/// file, unless it was [`FileState::Done`]: done files stay listed a while.
#[derive(Debug)]
pub struct FileHandle(Arc<FileStatus>, Arc<Mutex<Files>>);

impl FileHandle {
    /// `lines` lines and `bytes` bytes were read; the file is now at `offset` of `size`.
    pub fn read(&self, bytes: u64, lines: u64, offset: u64, size: u64) {
        let s = &self.0;
        s.bytes.fetch_add(bytes, Relaxed);
        s.lines.fetch_add(lines, Relaxed);
        s.offset.store(offset, Relaxed);
        s.size.store(size, Relaxed);
    }

    /// The file's size, seen at its end.
    pub fn size(&self, size: u64) {
        self.0.size.store(size, Relaxed);
    }

    pub fn set_state(&self, state: FileState) {
        self.0.state.store(state as u8, Relaxed);
        if state == FileState::Done {
            self.0.done_at.store(now_ms(), Relaxed);
        }
    }

    /// The file starts again at 0 under a new positions key (truncation).
    pub fn restart(&self, key: u64) {
        self.0.key.store(key, Relaxed);
        self.0.offset.store(0, Relaxed);
    }

    pub fn renamed(&self, path: &Path) {
        *lock(&self.0.path) = path.into();
    }

    /// The file's path (the last it was renamed to).
    pub fn path(&self) -> PathBuf {
        self.0.path()
    }

    /// True when the file's path is `path`.
    pub fn is_at(&self, path: &Path) -> bool {
        &**lock(&self.0.path) == path
    }

    /// Names what the file is the log of (a Docker container, a Kubernetes
    /// pod's container): `/status` and `top` show that before its path.
    pub fn name_target(&self, name: &str) {
        lock(&self.1).targets.insert(self.0.seq, Arc::from(name));
    }
}

impl Drop for FileHandle {
    fn drop(&mut self) {
        let mut files = lock(&self.1);
        if self.0.state() != FileState::Done {
            files.all.remove(&self.0.seq);
            files.targets.remove(&self.0.seq);
        } else {
            files.done.entry((self.0.dev, self.0.ino)).or_default().push(self.0.seq);
            files.forget_done(self.0.seq);
        }
    }
}

impl Files {
    /// File `seq` is done: the oldest done past [`DONE_HELD`] are forgotten
    /// now, not at the next look at `/status` (which may never come: a mass
    /// rotation left 150,000 done entries, some 50 MiB).
    fn forget_done(&mut self, seq: u64) {
        self.done_order.push_back(seq);
        while self.done_order.len() > DONE_HELD {
            let Some(old) = self.done_order.pop_front() else { break };
            let Some(f) = self.all.get(&old).filter(|f| f.state() == FileState::Done).cloned() else { continue };
            self.all.remove(&old);
            self.targets.remove(&old);
            if let Some(seqs) = self.done.get_mut(&(f.dev, f.ino)) {
                seqs.retain(|s| *s != old);
                if seqs.is_empty() {
                    self.done.remove(&(f.dev, f.ino));
                }
            }
        }
    }
}

/// The files listed, in the order they were tracked; done ones (whose
/// handle is gone) also by device and inode, so a file taken over again
/// replaces its done entry without a look at every file (100,000 files:
/// a walk of the whole list per file opened was quadratic).
#[derive(Debug, Default)]
struct Files {
    next: u64,
    all: BTreeMap<u64, Arc<FileStatus>>,
    done: HashMap<(u64, u64), Vec<u64>>,
    /// Done files in the order they were done (see [`Files::forget_done`]).
    done_order: std::collections::VecDeque<u64>,
    /// What the files of discovered containers and pods are the logs of
    /// (few files have one: kept beside, not in every [`FileStatus`]).
    targets: HashMap<u64, Arc<str>>,
}

/// What pushes did lately.
#[derive(Debug, Default)]
struct PushStats {
    requests: u64,
    failures: u64,
    /// (when, latency) of the most recent requests.
    latencies: VecDeque<(Instant, Duration)>,
    last_error: Option<LastError>,
    /// Batches being pushed (set by the deliverer's gauge loop).
    in_flight: u64,
}

/// A client's pushes, or every client's: requests, failures, p50 and p99
/// latency (ms) of the recent ones, the last error, batches in flight.
pub type PushSummary = (u64, u64, Option<f64>, Option<f64>, Option<LastError>, u64);

/// One alert rule: its open groups (by uid) and its last webhook call.
#[derive(Debug, Default, Clone)]
struct AlertStats {
    open: BTreeMap<String, Vec<(String, String)>>,
    last_send: Option<AlertSend>,
}

/// The agent's status; see the module documentation.
#[derive(Debug)]
pub struct Status {
    /// Shared with the [`FileHandle`]s, which leave the list when dropped.
    files: Arc<Mutex<Files>>,
    /// Per client.
    push: Mutex<BTreeMap<String, PushStats>>,
    /// When the positions file was last written (Unix ms; 0: not in this run).
    positions_written: AtomicU64,
    alerts: Mutex<BTreeMap<String, AlertStats>>,
    /// Sources that cannot read, by name: why (a journal reader whose journalctl keeps failing).
    problems: Mutex<BTreeMap<String, String>>,
    /// Rings of named running totals (push lines, per-source lines), sampled by the tick.
    totals: Mutex<BTreeMap<String, Ring<2>>>,
    /// Files the globs match that cannot be opened (by path): Promtail's
    /// metrics show their size without a read offset.
    unreadable: Mutex<HashSet<PathBuf>>,
    /// When it was made (the agent makes it as it starts).
    started: Instant,
}

impl Default for Status {
    fn default() -> Self {
        Self {
            files: Arc::default(),
            push: Mutex::default(),
            positions_written: AtomicU64::default(),
            alerts: Mutex::default(),
            problems: Mutex::default(),
            totals: Mutex::default(),
            unreadable: Mutex::default(),
            started: Instant::now(),
        }
    }
}

impl Status {
    /// A file source opened `path` (positions key `key`) at `offset` of `size`.
    #[allow(clippy::too_many_arguments)]
    pub fn track(
        &self,
        source: &Arc<str>,
        path: &Path,
        key: u64,
        dev: u64,
        ino: u64,
        offset: u64,
        size: u64,
        state: FileState,
    ) -> FileHandle {
        let now = Instant::now();
        let mut files = lock(&self.files);
        let seq = files.next;
        files.next += 1;
        let f = Arc::new(FileStatus {
            seq,
            source: source.clone(),
            path: Mutex::new(path.into()),
            dev,
            ino,
            key: AtomicU64::new(key),
            offset: AtomicU64::new(offset),
            size: AtomicU64::new(size),
            lines: AtomicU64::new(0),
            bytes: AtomicU64::new(0),
            state: AtomicU8::new(state as u8),
            done_at: AtomicU64::new(0),
            ring: Mutex::new(Ring::new(now, [0, 0])),
        });
        // The same file taken over again (a reload) replaces its done entry.
        for old in files.done.remove(&(dev, ino)).unwrap_or_default() {
            files.all.remove(&old);
            files.targets.remove(&old);
        }
        files.all.insert(seq, f.clone());
        FileHandle(f, self.files.clone())
    }

    /// The files listed now (done ones past [`DONE_KEEP`] are forgotten here).
    pub fn files(&self) -> Vec<Arc<FileStatus>> {
        let mut files = lock(&self.files);
        let files = &mut *files;
        let now = now_ms();
        let keep = |f: &FileStatus| now.saturating_sub(f.done_at()) < DONE_KEEP.as_millis() as u64;
        let mut done: Vec<(u64, u64)> = Vec::new();
        files.all.retain(|seq, f| {
            if f.state() != FileState::Done {
                return true;
            }
            let kept = keep(f);
            if kept {
                done.push((f.done_at(), *seq));
            }
            kept
        });
        if done.len() > DONE_MAX {
            done.sort_unstable();
            for (_, seq) in &done[..done.len() - DONE_MAX] {
                files.all.remove(seq);
            }
        }
        let all = &files.all;
        files.done.retain(|_, seqs| {
            seqs.retain(|s| all.contains_key(s));
            !seqs.is_empty()
        });
        files.targets.retain(|s, _| all.contains_key(s));
        files.all.values().cloned().collect()
    }

    /// Whether the file at `path`, which a file source's globs match, can
    /// be opened (it is listed while it cannot).
    pub fn file_unreadable(&self, path: &Path, unreadable: bool) {
        let mut u = lock(&self.unreadable);
        if unreadable {
            u.insert(path.to_path_buf());
        } else if !u.is_empty() {
            u.remove(path);
        }
    }

    /// The files listed by [`Status::file_unreadable`] that are still there.
    pub fn unreadable_files(&self) -> Vec<PathBuf> {
        let mut u = lock(&self.unreadable);
        u.retain(|p| p.exists());
        u.iter().cloned().collect()
    }

    /// What file `f` is the log of, if a discovery named it (see [`FileHandle::name_target`]).
    pub fn target_of(&self, f: &FileStatus) -> Option<Arc<str>> {
        lock(&self.files).targets.get(&f.seq).cloned()
    }

    /// One push request of `client` took `latency`; `error` says why it failed.
    pub fn push_request(&self, client: &str, latency: Duration, error: Option<String>) {
        let now = Instant::now();
        let mut all = lock(&self.push);
        let p = all.entry(client.to_string()).or_default();
        p.requests += 1;
        if p.latencies.len() == LATENCIES {
            p.latencies.pop_front();
        }
        p.latencies.push_back((now, latency));
        if let Some(message) = error {
            p.failures += 1;
            p.last_error = Some(LastError { message, at_ms: now_ms() });
        }
    }

    /// `client` has `n` batches being pushed.
    pub fn batches_in_flight(&self, client: &str, n: u64) {
        lock(&self.push).entry(client.to_string()).or_default().in_flight = n;
    }

    /// The pushes of `client`, or of every client (the latest error of any).
    pub fn push(&self, client: Option<&str>) -> PushSummary {
        let all = lock(&self.push);
        let now = Instant::now();
        let chosen: Vec<&PushStats> =
            all.iter().filter(|(k, _)| client.is_none_or(|c| c == *k)).map(|(_, p)| p).collect();
        let mut recent: Vec<Duration> = chosen
            .iter()
            .flat_map(|p| p.latencies.iter())
            .filter(|(t, _)| now.duration_since(*t) <= LATENCY_WINDOW)
            .map(|(_, d)| *d)
            .collect();
        recent.sort_unstable();
        let pct = |q: f64| {
            (!recent.is_empty()).then(|| {
                let i = ((recent.len() as f64 * q).ceil() as usize).clamp(1, recent.len()) - 1;
                recent[i].as_secs_f64() * 1000.0
            })
        };
        let last = chosen.iter().filter_map(|p| p.last_error.clone()).max_by_key(|e| e.at_ms);
        (
            chosen.iter().map(|p| p.requests).sum(),
            chosen.iter().map(|p| p.failures).sum(),
            pct(0.50),
            pct(0.99),
            last,
            chosen.iter().map(|p| p.in_flight).sum(),
        )
    }

    /// Source `name` cannot read (`Some(why)`), or reads again (`None`).
    pub fn source_problem(&self, name: &str, why: Option<String>) {
        let mut p = lock(&self.problems);
        match why {
            Some(w) => {
                p.insert(name.to_string(), w);
            }
            None => {
                p.remove(name);
            }
        }
    }

    /// The sources that cannot read, with why.
    pub fn source_problems(&self) -> Vec<(String, String)> {
        lock(&self.problems).iter().map(|(k, v)| (k.clone(), v.clone())).collect()
    }

    /// The positions file was written just now.
    pub fn positions_written(&self) {
        self.positions_written.store(now_ms(), Relaxed);
    }

    /// When the positions file was last written (Unix ms), if it was in this run.
    pub fn positions_written_at(&self) -> Option<u64> {
        Some(self.positions_written.load(Relaxed)).filter(|t| *t > 0)
    }

    /// A webhook call of `rule` for group `uid` ended: `state` is `alerting`
    /// or `ok`; `error` is why it failed. A delivered `alerting` opens the
    /// group, a delivered `ok` closes it.
    pub fn alert_sent(&self, rule: &str, uid: &str, labels: &[(String, String)], state: &str, error: Option<&str>) {
        let mut a = lock(&self.alerts);
        let r = a.entry(rule.to_string()).or_default();
        if error.is_none() {
            if state == "ok" {
                r.open.remove(uid);
            } else {
                r.open.insert(uid.to_string(), labels.to_vec());
            }
        }
        r.last_send = Some(AlertSend { at_ms: now_ms(), state: state.to_string(), error: error.map(str::to_string) });
    }

    /// Every group is forgotten (the engine gave up at shutdown).
    pub fn alerts_cleared(&self) {
        for r in lock(&self.alerts).values_mut() {
            r.open.clear();
        }
    }

    /// Open groups and the last send of `rule`.
    pub fn alert(&self, rule: &str) -> (Vec<AlertGroup>, Option<AlertSend>) {
        let a = lock(&self.alerts);
        let Some(r) = a.get(rule) else { return (Vec::new(), None) };
        let groups = r.open.values().map(|labels| AlertGroup { labels: labels.iter().cloned().collect() }).collect();
        (groups, r.last_send.clone())
    }

    /// Samples the running totals for the rates: every file's, and the named
    /// ones given (`(name, [lines, bytes])`). Called once a second.
    pub fn tick(&self, named: &[(String, [u64; 2])]) {
        let now = Instant::now();
        for f in self.files() {
            let v = [f.lines.load(Relaxed), f.bytes.load(Relaxed)];
            lock(&f.ring).sample(now, v);
        }
        let mut totals = lock(&self.totals);
        for (name, v) in named {
            // Totals count from the start of the agent: a total first seen
            // now starts from 0 then, so what it counted before the first tick
            // (a short run delivered within a second) shows as a rate.
            // Credited over at most the window (less a second, so the start
            // stays in it when read a moment later): in a process that ran
            // longer before its first tick, the start would be out of the
            // window at once and the rate 0.
            let start =
                now.checked_sub(ring::RATE_WINDOW - Duration::from_secs(1)).map_or(now, |w| w.max(self.started));
            totals.entry(name.clone()).or_insert_with(|| Ring::new(start, [0, 0])).sample(now, *v);
        }
    }

    /// Per-second rates of a named total whose current value is `v`.
    pub fn rates(&self, name: &str, v: [u64; 2]) -> [f64; 2] {
        lock(&self.totals).get(name).map(|r| r.rates(Instant::now(), v)).unwrap_or([0.0, 0.0])
    }
}

#[cfg(test)]
mod tests;
