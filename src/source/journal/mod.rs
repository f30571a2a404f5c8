//! The journal source: the systemd journal, read through `journalctl`.
//!
//! How it works, in plain words. One thread per journal source runs a child
//! `journalctl --output=json --follow --merge --all ...` (see [`command`]) and
//! reads its output, one JSON object per line:
//!
//! 1. **Start**: after the source's saved cursor (`--after-cursor`) when the
//!    positions file has one; otherwise per `start_at`: `beginning` reads the
//!    entries of the last `max_age` (all of them when it is 0), `end` the
//!    entries from the agent's start on.
//! 2. **Read**: each line is one entry ([`entry`]): `MESSAGE` is the line
//!    (a byte array, journalctl's form of binary or non-UTF-8 values, is
//!    decoded, repaired and counted), `__REALTIME_TIMESTAMP` its time in ns,
//!    and `unit`, `level` and `host` its labels. The source's stages run on
//!    it as on a file's line. Entries go into a chunk, and the chunk goes to
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
mod relabel;

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::io::{AsyncBufRead, AsyncBufReadExt, BufReader};

pub use command::{check_match, find_journalctl, Start};
pub use entry::{level_name, Field, RawEntry};

use super::{Outlet, SourceSpec};
use crate::config::{SourceConfig, StartAt};
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
type LabelSet = (Option<String>, Option<&'static str>, Option<String>, Vec<(String, String)>);

/// What a reader keeps across runs of journalctl.
struct ReadState {
    key: u64,
    /// Cursor of the last entry queued: the next run starts after it.
    cursor: Option<String>,
    contexts: HashMap<LabelSet, FileContext>,
    line: Vec<u8>,
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
        Ok(Self { cfg, stages, positions, out, follow, program, entry_host, line_cap, relabel })
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
        let (key, saved) = self.positions.journal_resume(&name, self.cfg.path.as_deref());
        let fallback = self.first_start();
        let journal = self.cfg.path.as_ref().map_or("the system journal".to_string(), |p| p.display().to_string());
        match &saved {
            Some(_) => tracing::info!(source = %name, %journal, "reading the journal after its saved cursor"),
            None => {
                tracing::info!(source = %name, %journal, start = ?fallback, "reading the journal (no saved cursor)")
            }
        }
        let mut st =
            ReadState { key, cursor: saved, contexts: HashMap::new(), line: Vec::new(), warned_unparsable: false };
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
            crate::status::Status::get().source_problem(&name, Some(format!("{why}; starting it again")));
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
        crate::status::Status::get().source_problem(&name, None);
        self.positions.journal_release(key, st.cursor);
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
            let next = tokio::select! {
                biased;
                _ = self.out.cancel.cancelled() => return None,
                n = next_line(&mut r, &mut st.line, self.line_cap) => n,
            };
            let ended = match next {
                Ok(Line::Whole(n)) => {
                    bytes += n as u64;
                    seen += 1;
                    let line = std::mem::take(&mut st.line);
                    self.entry(&line, &mut chunk, &mut last_cursor, st);
                    st.line = line;
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
            if ended || full || !more_ready {
                if seen > 0 {
                    if entries == 0 {
                        // Reading again: whatever kept journalctl from it is over.
                        crate::status::Status::get().source_problem(&name, None);
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
    async fn send(&self, mut chunk: Chunk, cursor: Option<String>, st: &mut ReadState) -> bool {
        if let Some(c) = &cursor {
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
        true
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
        if let Some(c) = e.cursor() {
            *last_cursor = Some(c);
        }
        let whole;
        let message: std::borrow::Cow<'_, [u8]> = if self.cfg.json {
            // `json`: the whole entry is the line, with or without a MESSAGE.
            whole = match entry::whole_entry_json(line) {
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
        let relabelled = match self.relabel.as_deref().map(|rules| relabel::labels_of(rules, line)) {
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
        let unit = e.unit().map(|u| cut_at_char(&u, MAX_LABEL_VALUE).to_string());
        let level = e.level();
        let host = if self.entry_host { e.host().map(|h| cut_at_char(&h, MAX_LABEL_VALUE).to_string()) } else { None };
        let key = (unit, level, host, relabelled);
        if st.contexts.len() >= MAX_CONTEXTS && !st.contexts.contains_key(&key) {
            for ctx in st.contexts.values_mut() {
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
        if let Some(l) = key.1 {
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
        self.stages.process_with_labels(ctx, &message, ts, &labels, chunk);
        ctx.flush_counts(name);
    }
}

/// One line of a child's output.
enum Line {
    /// A whole line is in the buffer (this many bytes read, newline included).
    Whole(usize),
    /// A line over the cap was skipped (this many bytes).
    TooLong(usize),
    /// The output ended (a last line without newline is dropped: cut off).
    End,
}

/// Reads one line into `line` (without its newline), holding at most `cap`
/// bytes of it.
async fn next_line(r: &mut (impl AsyncBufRead + Unpin), line: &mut Vec<u8>, cap: usize) -> std::io::Result<Line> {
    line.clear();
    let mut total = 0usize;
    let mut over = false;
    loop {
        let buf = r.fill_buf().await?;
        if buf.is_empty() {
            return Ok(Line::End);
        }
        let (take, done) = match memchr::memchr(b'\n', buf) {
            Some(i) => (i, true),
            None => (buf.len(), false),
        };
        if !over && line.len() + take <= cap {
            line.extend_from_slice(&buf[..take]);
        } else if !over {
            over = true;
            line.clear();
        }
        let used = if done { take + 1 } else { take };
        total += used;
        r.consume(used);
        if done {
            return Ok(if over { Line::TooLong(total) } else { Line::Whole(total) });
        }
    }
}

/// Logs journalctl's messages; returns its last one, whether any concerned
/// the cursor (a refused `--after-cursor`), and whether it could not follow
/// for want of inotify watches (said by the reader, once).
async fn collect_stderr(stderr: tokio::process::ChildStderr, name: Arc<str>) -> (Option<String>, bool, bool) {
    let mut r = BufReader::new(stderr);
    let mut line = Vec::new();
    let (mut last, mut cursor, mut no_watch, mut n) = (None, false, false, 0usize);
    while let Ok(Line::Whole(_) | Line::TooLong(_)) = next_line(&mut r, &mut line, STDERR_LINE_CAP).await {
        let text = String::from_utf8_lossy(&line).trim().to_string();
        if text.is_empty() {
            continue;
        }
        if text.to_ascii_lowercase().contains(NO_WATCH) {
            no_watch = true;
            tracing::debug!(source = %name, "journalctl: {text}");
            continue;
        }
        n += 1;
        if n <= STDERR_LINES_LOGGED {
            tracing::warn!(source = %name, "journalctl: {text}");
        } else {
            tracing::debug!(source = %name, "journalctl: {text}");
        }
        cursor |= text.to_ascii_lowercase().contains("cursor");
        last = Some(text);
    }
    (last, cursor, no_watch)
}

/// The inotify limits journalctl ran into, with their values and sysctl.
fn no_watch_limits() -> String {
    let value = |name: &str| {
        std::fs::read_to_string(format!("/proc/sys/fs/inotify/{name}")).map_or("?".into(), |s| s.trim().to_string())
    };
    format!(
        "fs.inotify.max_user_instances = {}, fs.inotify.max_user_watches = {} (other programs of this user hold \
         them; raise them with sysctl -w and in /etc/sysctl.d/)",
        value("max_user_instances"),
        value("max_user_watches")
    )
}

#[cfg(test)]
mod tests;
