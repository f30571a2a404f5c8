//! The journal source: the systemd journal, read through `journalctl`.
//!
//! How it works, in plain words. One thread per journal source runs a child
//! `journalctl --output=json --follow --merge --all ...` (see [`command`]) and
//! reads its output, one JSON object per line:
//!
//! 1. **Start**: after the source's saved cursor (`--after-cursor`) when the
//!    positions file has one (with `cursor_max_age`, only when its entry is
//!    no older than `max_age`, as Promtail); otherwise per `start_at`:
//!    `beginning` reads the entries of the last `max_age` (all of them when
//!    it is 0), `end` the entries from the agent's start on.
//! 2. **Read**: each line is one entry ([`entry`]): `MESSAGE` is the line
//!    (a byte array, journalctl's form of binary or non-UTF-8 values, is
//!    decoded, repaired and counted), `__REALTIME_TIMESTAMP` its time in ns,
//!    and `unit`, `level` and `host` its labels (as `unit_label`,
//!    `level_label` and `host_label` say; an entry left with no label at all
//!    is dropped and counted, as Promtail drops it). The source's stages run
//!    on it as on a file's line; `multiline` stages hold entries, and while
//!    they do the cursor saved is the one before them (see [`held`]). Entries go into a chunk, and the chunk goes to
//!    the queue as soon as journalctl has no further whole line ready, or
//!    when it is full. While the queue is full the source waits and reads
//!    nothing: journalctl blocks on its full pipe and the entries wait in the
//!    journal. Nothing is held without bound: one line of output at most
//!    (lines over a cap are skipped and counted), one chunk, one pipe.
//! 3. **Acknowledge**: each chunk carries a mark under which the positions
//!    store remembers the cursor of its last entry; the cursor is saved only
//!    once every chunk up to it was acknowledged (see `positions::journal`).
//! 4. **Restart**: when journalctl ends (killed, the journal directory
//!    missing, a failure) or cannot be started, it is started again after a
//!    backoff (0.5 s doubling to 30 s; back to 0.5 s after a run that read
//!    entries) just after the last entry queued, so the gap is read and
//!    nothing is read twice. A saved cursor journalctl refuses is dropped
//!    (said once) and the reader starts per `start_at`. A journalctl that
//!    cannot follow ("Insufficient watch descriptors available. Reverting to
//!    -n.": the inotify limits are reached) prints what is there and exits;
//!    that is not a failure: the reader says so once, naming the limits, and
//!    runs it again every [`NO_WATCH_POLL`] (it follows again by itself once
//!    the limits allow it).
//!
//! Why journalctl and not the journal files: the file format (compression,
//! compact mode, rotation, interleaving several files by time, sealing) is
//! systemd's to change, and journalctl is its reader, present on every
//! systemd host; linking libsystemd would tie the binary to a C library.

mod command;
mod entry;
mod held;
mod lines;
mod relabel;

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::io::BufReader;

use lines::{collect_stderr, next_line, no_watch_limits, Line, LineBuf};

pub use command::{check_match, find_journalctl, Start};
pub use entry::{level_name, priority_keyword, Field, RawEntry};

use super::{Outlet, SourceSpec};
use crate::config::{SourceConfig, StageConfig, StartAt};
use crate::metrics::Metrics;
use crate::pipeline::{FileContext, SourceStages};
use crate::positions::{AckRef, Positions};
use crate::queue::Chunk;
use crate::relabel::Rules;
use crate::util::{cut_at_char, now_ns};

/// First wait before journalctl is started again.
const MIN_BACKOFF: Duration = Duration::from_millis(500);
/// Longest wait between starts.
const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// A reader that ran this long counts as healthy: its successor waits the least.
const HEALTHY_RUN: Duration = Duration::from_secs(60);
/// A chunk is queued at this many bytes of lines...
const CHUNK_MAX_BYTES: usize = 256 << 10;
/// ...or this many entries, if journalctl has more ready.
const CHUNK_MAX_ENTRIES: usize = 4096;
/// Label sets (unit, level, host) with a context of their own; past this,
/// the contexts are started afresh (their counts flushed first).
const MAX_CONTEXTS: usize = 4096;
/// journalctl's own messages logged per run; the rest at debug.
const STDERR_LINES_LOGGED: usize = 20;
/// The longest line of journalctl's stderr kept.
const STDERR_LINE_CAP: usize = 4096;
/// Label values longer than this are cut (real services refuse longer ones).
const MAX_LABEL_VALUE: usize = 2048;
/// journalctl still running this long after its output ended is killed.
const EXIT_WAIT: Duration = Duration::from_secs(5);
/// How often journalctl is run when it cannot follow for want of inotify watches.
const NO_WATCH_POLL: Duration = Duration::from_secs(2);
/// What journalctl (systemd 252) says when it cannot follow; it then reads to the end and exits.
const NO_WATCH: &str = "insufficient watch descriptors";

#[derive(Debug, thiserror::Error)]
pub enum JournalError {
    #[error(
        "journalctl was not found on PATH: a journal source reads the journal through it (install systemd's \
         journalctl, or remove the source)"
    )]
    NoJournalctl,
}

/// The journal source; see the module documentation.
pub struct JournalSource {
    cfg: SourceConfig,
    stages: Arc<SourceStages>,
    positions: Arc<Positions>,
    out: Outlet,
    follow: bool,
    program: PathBuf,
    /// Let the entry's `_HOSTNAME` be the `host` label (`host_label` on, no static `host`).
    entry_host: bool,
    /// Longest line of journalctl's output read; longer ones are skipped and counted.
    line_cap: usize,
    /// The source's `relabel` rules over each entry's fields (see [`relabel`]).
    relabel: Option<Arc<Rules>>,
    /// Its stages hold entries (`multiline`): see [`held`].
    joins: bool,
    /// The source has no label of its own (static or `host`): an entry
    /// that gets none from its fields is dropped, as Promtail drops it.
    unlabelled: bool,
}

/// How one run of journalctl ended.
enum Ended {
    /// The source was told to stop.
    Stopped,
    /// Its output ended: the process exited (or was killed).
    Exited { status: String, last_error: Option<String>, cursor_refused: bool, no_watch: bool, entries: u64 },
    /// It could not be started.
    NotStarted(String),
}

/// An entry's `unit`, `level` and `host`, and the labels its relabel rules made.
type LabelSet = (Option<String>, Option<String>, Option<String>, Vec<(String, String)>);

/// What a reader keeps across runs of journalctl.
struct ReadState {
    key: u64,
    /// Cursor of the last entry queued: the next run starts after it.
    cursor: Option<String>,
    /// Cursor of the last entry read.
    read: Option<String>,
    /// The last cursor marked for saving (all before it handed on).
    safe: Option<String>,
    held: held::Held,
    warned_unlabelled: bool,
    contexts: HashMap<LabelSet, FileContext>,
    line: LineBuf,
    warned_unparsable: bool,
}

impl JournalSource {
    /// A journal source over `cfg`; fails when journalctl is not on `PATH`.
    /// `follow` is false for a one-off read to the journal's end.
    pub fn new(
        spec: &SourceSpec,
        stages: Arc<SourceStages>,
        positions: Arc<Positions>,
        out: Outlet,
        follow: bool,
    ) -> Result<Self, JournalError> {
        let cfg = spec.config.clone();
        let relabel = spec.labels.relabel.clone();
        let program = find_journalctl().ok_or(JournalError::NoJournalctl)?;
        let entry_host = cfg.host_label && !cfg.labels.contains_key("host");
        let line_cap = (cfg.max_line_bytes.get() as usize).saturating_mul(8).saturating_add(64 << 10);
        let joins = has_multiline(&cfg.stages);
        let unlabelled = !entry_host && stages.labels_of(None).is_empty();
        Ok(Self { cfg, stages, positions, out, follow, program, entry_host, line_cap, relabel, joins, unlabelled })
    }

    /// Runs until the source is stopped (or, not following, the journal's end).
    pub fn run(self) {
        let handle = self.out.handle.clone();
        handle.block_on(self.run_async());
    }

    /// Where to start without a cursor, decided once so a restart keeps it.
    fn first_start(&self) -> Start {
        let now_us = (now_ns() / 1000) as i64;
        match self.cfg.start_at {
            StartAt::End => Start::Since(now_us),
            StartAt::Beginning if self.cfg.max_age.get().is_zero() => Start::Oldest,
            StartAt::Beginning => Start::Since(now_us.saturating_sub(self.cfg.max_age.get().as_micros() as i64)),
        }
    }

    async fn run_async(self) {
        let name = self.stages.name.clone();
        let (key, mut saved) = self.positions.journal_resume(&name, self.cfg.path.as_deref());
        let fallback = self.first_start();
        if let Some(age) = saved.as_deref().and_then(|c| self.too_old(c)) {
            tracing::info!(source = %name, age = ?age, max_age = ?self.cfg.max_age.get(),
                "the saved cursor's entry is older than max_age (cursor_max_age): starting as without a cursor");
            saved = None;
        }
        let journal = self.cfg.path.as_ref().map_or("the system journal".to_string(), |p| p.display().to_string());
        match &saved {
            Some(_) => tracing::info!(source = %name, %journal, "reading the journal after its saved cursor"),
            None => {
                tracing::info!(source = %name, %journal, start = ?fallback, "reading the journal (no saved cursor)")
            }
        }
        let mut st = ReadState {
            key,
            cursor: saved.clone(),
            read: saved.clone(),
            safe: saved,
            held: held::Held::new(self.joins),
            warned_unlabelled: false,
            contexts: HashMap::new(),
            line: LineBuf::default(),
            warned_unparsable: false,
        };
        let mut backoff = MIN_BACKOFF;
        let mut no_watch_said = false;
        let restarts = Metrics::get().journal_restarts.with_label_values(&[&name]);
        loop {
            if self.out.stopped() {
                break;
            }
            let start = st.cursor.clone().map_or_else(|| fallback.clone(), Start::After);
            let began = Instant::now();
            let why = match self.read_once(&start, &mut st).await {
                Ended::Stopped => break,
                Ended::Exited { status, .. } if !self.follow => {
                    tracing::info!(source = %name, %status, "journal read to its end");
                    break;
                }
                Ended::Exited { no_watch: true, .. } => {
                    if !std::mem::replace(&mut no_watch_said, true) {
                        tracing::warn!(source = %name, %journal, limits = %no_watch_limits(), every = ?NO_WATCH_POLL,
                            "journalctl cannot follow the journal: the inotify limits are reached (journalctl: \
                             \"Insufficient watch descriptors available\"); reading new entries every few seconds \
                             instead until they allow it");
                    }
                    tokio::select! {
                        _ = tokio::time::sleep(NO_WATCH_POLL) => {}
                        _ = self.out.cancel.cancelled() => break,
                    }
                    continue;
                }
                Ended::Exited { status, last_error, cursor_refused, entries, .. } => {
                    if cursor_refused && entries == 0 && matches!(start, Start::After(_)) {
                        tracing::warn!(source = %name, cursor = ?st.cursor,
                            "journalctl refused the saved cursor; starting per start_at instead");
                        st.cursor = None;
                    }
                    if entries > 0 || began.elapsed() >= HEALTHY_RUN {
                        backoff = MIN_BACKOFF;
                    }
                    match last_error {
                        Some(e) => format!("journalctl ended ({status}): {e}"),
                        None => format!("journalctl ended ({status})"),
                    }
                }
                Ended::NotStarted(e) if !self.follow => {
                    tracing::error!(source = %name, error = %e, "cannot start journalctl");
                    break;
                }
                Ended::NotStarted(e) => format!("cannot start journalctl: {e}"),
            };
            self.out.status.source_problem(&name, Some(format!("{why}; starting it again")));
            restarts.inc();
            tracing::warn!(source = %name, %journal, retry_in = ?backoff, "{why}; starting it again");
            tokio::select! {
                _ = tokio::time::sleep(backoff) => {}
                _ = self.out.cancel.cancelled() => break,
            }
            backoff = (backoff * 2).min(MAX_BACKOFF);
        }
        for ctx in st.contexts.values_mut() {
            ctx.flush_counts(&name);
        }
        // A stopped reader (shutdown, reload) is no longer a problem to report.
        self.out.status.source_problem(&name, None);
        // Held entries are read again by the next reader.
        self.positions.journal_release(key, if self.joins { st.safe } else { st.cursor });
    }

    /// How old the entry of a saved `cursor` is, when `cursor_max_age` is on
    /// and it is older than `max_age` (its time is the cursor's `t=`).
    fn too_old(&self, cursor: &str) -> Option<Duration> {
        let max = self.cfg.max_age.get();
        if !self.cfg.cursor_max_age || max.is_zero() {
            return None;
        }
        let t = command::cursor_time_us(cursor)?;
        let age = Duration::from_micros(((now_ns() / 1000) as i64).saturating_sub(t).max(0) as u64);
        (age > max).then_some(age)
    }

    /// Runs journalctl once from `start` and reads its output until it ends.
    async fn read_once(&self, start: &Start, st: &mut ReadState) -> Ended {
        let mut cmd = tokio::process::Command::new(&self.program);
        cmd.args(command::args(&self.cfg, start, self.follow))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        // SAFETY: prctl(2) is async-signal-safe and touches only the child.
        // The child is killed when the thread that started it (this source's)
        // ends, even by kill -9 of the agent. (journalctl 252 also exits when
        // its output closes; older ones might wait for the next entry.)
        unsafe {
            cmd.pre_exec(|| {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong);
                Ok(())
            });
        }
        let mut child = match cmd.spawn() {
            Ok(c) => c,
            Err(e) => return Ended::NotStarted(e.to_string()),
        };
        let (Some(stdout), Some(stderr)) = (child.stdout.take(), child.stderr.take()) else {
            let _ = child.start_kill();
            return Ended::NotStarted("no pipes to the child".into());
        };
        let errors = tokio::spawn(collect_stderr(stderr, self.stages.name.clone()));
        let read = self.read_output(stdout, st).await;
        let status = match read {
            None => {
                let _ = child.start_kill();
                let _ = child.wait().await;
                errors.abort();
                return Ended::Stopped;
            }
            Some(_) => match tokio::time::timeout(EXIT_WAIT, child.wait()).await {
                Ok(Ok(s)) => s.to_string(),
                Ok(Err(e)) => e.to_string(),
                Err(_) => {
                    let _ = child.start_kill();
                    let _ = child.wait().await;
                    "closed its output and did not exit; killed".to_string()
                }
            },
        };
        let (last_error, cursor_refused, no_watch) = errors.await.unwrap_or_default();
        Ended::Exited { status, last_error, cursor_refused, no_watch, entries: read.unwrap_or(0) }
    }

    /// Reads entries until the output ends (`Some(entries read)`) or the
    /// source is stopped (`None`).
    async fn read_output(&self, stdout: tokio::process::ChildStdout, st: &mut ReadState) -> Option<u64> {
        let name = self.stages.name.clone();
        let m = Metrics::get();
        let mut r = BufReader::with_capacity(64 << 10, stdout);
        let mut chunk = Chunk::new(name.clone());
        let mut last_cursor: Option<String> = None;
        let (mut entries, mut seen, mut bytes) = (0u64, 0u64, 0u64);
        loop {
            let due = if self.joins { st.contexts.values().filter_map(FileContext::blocks_due).min() } else { None };
            let next = tokio::select! {
                biased;
                _ = self.out.cancel.cancelled() => return None,
                _ = tokio::time::sleep_until(due.unwrap_or_else(Instant::now).into()), if due.is_some() => {
                    self.flush_blocks(false, &mut chunk, st);
                    let full_chunk = std::mem::replace(&mut chunk, Chunk::new(name.clone()));
                    if !self.send(full_chunk, last_cursor.take(), st).await {
                        return None;
                    }
                    continue;
                }
                n = next_line(&mut r, &mut st.line, self.line_cap) => n,
            };
            let ended = match next {
                Ok(Line::Whole(n)) => {
                    bytes += n as u64;
                    seen += 1;
                    let line = std::mem::take(&mut st.line.bytes);
                    self.entry(&line, &mut chunk, &mut last_cursor, st);
                    st.line.bytes = line;
                    false
                }
                Ok(Line::TooLong(n)) => {
                    bytes += n as u64;
                    seen += 1;
                    m.lines_dropped.with_label_values(&[&name, "journal_oversized"]).inc();
                    tracing::warn!(source = %name, bytes = n, cap = self.line_cap,
                        "a journal entry's JSON is over 8 x max_line_bytes; skipped and counted");
                    false
                }
                Ok(Line::End) => true,
                Err(e) => {
                    tracing::debug!(source = %name, error = %e, "reading journalctl's output failed");
                    true
                }
            };
            let more_ready = memchr::memchr(b'\n', r.buffer()).is_some();
            let full = chunk.buf.len() >= CHUNK_MAX_BYTES || chunk.entries.len() >= CHUNK_MAX_ENTRIES;
            if ended && !self.follow {
                // A one-off read: what the stages hold goes now.
                self.flush_blocks(true, &mut chunk, st);
            }
            if ended || full || !more_ready {
                if seen > 0 {
                    if entries == 0 {
                        // Reading again: whatever kept journalctl from it is over.
                        self.out.status.source_problem(&name, None);
                    }
                    m.lines_read.with_label_values(&[&name]).inc_by(seen);
                    m.bytes_read.with_label_values(&[&name]).inc_by(bytes);
                    entries += seen;
                    (seen, bytes) = (0, 0);
                }
                let full_chunk = std::mem::replace(&mut chunk, Chunk::new(name.clone()));
                if !self.send(full_chunk, last_cursor.take(), st).await {
                    return None;
                }
            }
            if ended {
                return Some(entries);
            }
        }
    }

    /// Queues `chunk` (waiting while the queue is full) with a mark for
    /// `cursor`, its last entry's; false when the source was stopped.
    /// With `multiline` stages, the mark is for the last cursor before any
    /// held entry instead (see [`held`]).
    async fn send(&self, mut chunk: Chunk, cursor: Option<String>, st: &mut ReadState) -> bool {
        let marked = match self.joins {
            false => cursor.clone(),
            true => {
                let held_from = st.contexts.values().filter_map(FileContext::held_from).min();
                st.held.safe(held_from, st.read.clone()).filter(|c| st.safe.as_ref() != Some(c))
            }
        };
        if let Some(c) = &marked {
            let mark = self.positions.journal_mark(st.key, c.clone());
            chunk.ack = Some(AckRef { file: st.key, offset: mark });
        }
        if chunk.is_empty() {
            return true;
        }
        if !self.out.sink.send(chunk, &self.out.cancel).await {
            return false;
        }
        if cursor.is_some() {
            st.cursor = cursor;
        }
        if marked.is_some() {
            st.safe = marked;
        }
        true
    }

    /// Hands on the blocks of `multiline` stages that are due (all, with `force`).
    fn flush_blocks(&self, force: bool, chunk: &mut Chunk, st: &mut ReadState) {
        let now = Instant::now();
        let read_ts = now_ns() as i64;
        for ctx in st.contexts.values_mut() {
            if ctx.blocks_due().is_some_and(|due| force || due <= now) {
                self.stages.flush_blocks(ctx, now, force, read_ts, chunk);
                ctx.flush_counts(&self.stages.name);
            }
        }
    }

    /// One line of journalctl's output into `chunk`.
    fn entry(&self, line: &[u8], chunk: &mut Chunk, last_cursor: &mut Option<String>, st: &mut ReadState) {
        let name = &self.stages.name;
        let m = Metrics::get();
        let e = match RawEntry::parse(line) {
            Ok(e) => e,
            Err(err) => {
                m.lines_dropped.with_label_values(&[name, "journal_unparsable"]).inc();
                if !std::mem::replace(&mut st.warned_unparsable, true) {
                    tracing::warn!(source = %name, error = %err, "journalctl printed a line that is not a JSON entry; skipped and counted (said once)");
                }
                return;
            }
        };
        let cursor = e.cursor();
        let seq = st.held.entry(cursor.as_deref());
        if let Some(c) = cursor {
            st.read = Some(c.clone());
            *last_cursor = Some(c);
        }
        let whole;
        let message: std::borrow::Cow<'_, [u8]> = if self.cfg.json {
            // `json`: the whole entry is the line, with or without a MESSAGE.
            whole = match entry::whole_entry_json(line, self.cfg.address_fields) {
                Ok(w) => w,
                Err(_) => {
                    m.lines_dropped.with_label_values(&[name, "journal_unparsable"]).inc();
                    return;
                }
            };
            std::borrow::Cow::Borrowed(whole.as_bytes())
        } else {
            let Some((message, binary)) = e.message.as_ref().and_then(Field::bytes) else {
                m.lines_dropped.with_label_values(&[name, "journal_no_message"]).inc();
                return;
            };
            if binary {
                m.lines_repaired.with_label_values(&[name, "journal_binary"]).inc();
            }
            message
        };
        let relabelled =
            match self.relabel.as_deref().map(|rules| relabel::labels_of(rules, line, self.cfg.address_fields)) {
                None => Vec::new(),
                Some(Ok(Some(labels))) => labels,
                Some(Ok(None)) => {
                    m.lines_dropped.with_label_values(&[name, "relabel"]).inc();
                    return;
                }
                Some(Err(_)) => {
                    m.lines_dropped.with_label_values(&[name, "journal_unparsable"]).inc();
                    return;
                }
            };
        let ts = e.timestamp_ns().unwrap_or_else(|| now_ns() as i64);
        let unit = e.unit_by(self.cfg.unit_label).map(|u| cut_at_char(&u, MAX_LABEL_VALUE).to_string());
        let level = if self.cfg.level_label { e.level() } else { None };
        let host = if self.entry_host { e.host().map(|h| cut_at_char(&h, MAX_LABEL_VALUE).to_string()) } else { None };
        if self.unlabelled && unit.is_none() && level.is_none() && host.is_none() && relabelled.is_empty() {
            // Promtail drops such an entry; a stream of no labels is refused by the log service too.
            m.lines_dropped.with_label_values(&[name, "journal_no_labels"]).inc();
            if !std::mem::replace(&mut st.warned_unlabelled, true) {
                tracing::warn!(source = %name, "a journal entry has no labels (the source has none of its own and \
                    its fields gave none): dropped and counted, as Promtail drops it (said once)");
            }
            return;
        }
        let key = (unit, level, host, relabelled);
        if st.contexts.len() >= MAX_CONTEXTS && !st.contexts.contains_key(&key) {
            let now = Instant::now();
            for ctx in st.contexts.values_mut() {
                // What `multiline` stages hold goes on before its context is dropped.
                if ctx.blocks_due().is_some() {
                    self.stages.flush_blocks(ctx, now, true, now_ns() as i64, chunk);
                }
                ctx.flush_counts(name);
            }
            st.contexts.clear();
        }
        if !st.contexts.contains_key(&key) {
            st.contexts.insert(key.clone(), self.stages.context(None));
        }
        let Some(ctx) = st.contexts.get_mut(&key) else { return };
        let mut labels: Vec<(&str, &str)> = Vec::with_capacity(3 + key.3.len());
        if let Some(u) = &key.0 {
            labels.push(("unit", u));
        }
        if let Some(l) = &key.1 {
            labels.push(("level", l));
        }
        if let Some(h) = &key.2 {
            labels.push(("host", h));
        }
        // What the rules made wins over the source's own labels of the same name.
        for (k, v) in &key.3 {
            labels.retain(|(n, _)| n != k);
            labels.push((k, v));
        }
        ctx.line_start = seq;
        self.stages.process_with_labels(ctx, &message, ts, &labels, chunk);
        ctx.flush_counts(name);
    }
}

/// Whether `stages` (or a `match`'s) hold entries: a `multiline` stage.
fn has_multiline(stages: &[StageConfig]) -> bool {
    stages.iter().any(|st| st.multiline.is_some() || st.match_.as_ref().is_some_and(|m| has_multiline(&m.stages)))
}

#[cfg(test)]
mod tests;
