//! Sources: where lines come from. `file` tails globs of files, `stdin` reads
//! standard input. Both turn bytes into lines (`lines`), optionally join
//! multiline entries (`multiline`), run the source's stages, and hand chunks
//! to the queue, waiting while it is full.

pub mod file;
pub mod lines;
pub mod multiline;
pub mod stdin;

use std::time::{Duration, Instant};

use crate::config::SourceConfig;
use crate::pipeline::{Chunk, FileContext, SourceStages};
use lines::LineSplitter;
use multiline::Joiner;

/// Bytes read from a file or stdin at once.
pub const READ_BLOCK: usize = 256 << 10;

/// Lines of one file (or stdin) on their way to a chunk: splitter, joiner, labels.
pub struct LineFeed {
    splitter: LineSplitter,
    joiner: Option<Joiner>,
    ctx: FileContext,
    partial_wait: Duration,
    last_data: Instant,
    /// Lines (or joined entries) handed to the stages since the last [`LineFeed::take_seen`].
    seen: u64,
}

impl LineFeed {
    pub fn new(src: &SourceConfig, stages: &SourceStages, filename: Option<&str>, start_offset: u64) -> Self {
        let max = src.max_line_bytes.get() as usize;
        let joiner = src.multiline.as_ref().and_then(|m| {
            // Validated at load; a failure here only disables joining.
            regex::bytes::Regex::new(&m.start).ok().map(|re| Joiner::new(re, m.max_lines, m.max_wait.get(), max))
        });
        Self {
            splitter: LineSplitter::new(start_offset, max),
            joiner,
            ctx: stages.context(filename),
            partial_wait: src.partial_line_wait.get(),
            last_data: Instant::now(),
            seen: 0,
        }
    }

    /// Splits `data` into lines and processes them into `chunk`.
    pub fn feed(&mut self, stages: &SourceStages, data: &[u8], read_ts: i64, now: Instant, chunk: &mut Chunk) {
        let Self { splitter, joiner, ctx, seen, .. } = self;
        splitter.feed(data, |line, start, end| match joiner {
            Some(j) => j.push(line, start, end, now, |entry, _| {
                *seen += 1;
                stages.process(ctx, entry, read_ts, chunk);
            }),
            None => {
                *seen += 1;
                stages.process(ctx, line, read_ts, chunk);
            }
        });
        if !data.is_empty() {
            self.last_data = now;
        }
    }

    /// Emits what waited too long: a multiline entry past `max_wait`, and a
    /// last line without newline past `partial_line_wait`. With `eof_final`
    /// (a one-off read reached the end) both are emitted at once.
    pub fn flush_idle(
        &mut self,
        stages: &SourceStages,
        read_ts: i64,
        now: Instant,
        eof_final: bool,
        chunk: &mut Chunk,
    ) {
        let Self { splitter, joiner, ctx, partial_wait, last_data, seen } = self;
        if splitter.has_partial() && (eof_final || now.duration_since(*last_data) >= *partial_wait) {
            splitter.flush(|line, start, end| match joiner {
                Some(j) => j.push(line, start, end, now, |entry, _| {
                    *seen += 1;
                    stages.process(ctx, entry, read_ts, chunk);
                }),
                None => {
                    *seen += 1;
                    stages.process(ctx, line, read_ts, chunk);
                }
            });
        }
        if let Some(j) = joiner {
            j.flush(now, eof_final, |entry, _| {
                *seen += 1;
                stages.process(ctx, entry, read_ts, chunk);
            });
        }
    }

    /// When [`LineFeed::flush_idle`] next has something to do.
    pub fn due_at(&self) -> Option<Instant> {
        let partial = self.splitter.has_partial().then(|| self.last_data + self.partial_wait);
        let joined = self.joiner.as_ref().and_then(|j| j.due_at());
        match (partial, joined) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// True when a partial line or a multiline entry is held.
    pub fn has_pending(&self) -> bool {
        self.splitter.has_partial() || self.joiner.as_ref().is_some_and(|j| j.due_at().is_some())
    }

    /// The offset up to which every line was handled (emitted or dropped).
    pub fn safe_offset(&self) -> u64 {
        let consumed = self.splitter.consumed();
        match &self.joiner {
            Some(j) => j.safe_offset(consumed),
            None => consumed,
        }
    }

    /// Starts again at `offset` (truncation).
    pub fn reset(&mut self, offset: u64) {
        self.splitter.reset(offset);
        if let Some(j) = &mut self.joiner {
            j.reset();
        }
    }

    /// Lines handed to the stages since the last call (kept or dropped).
    pub fn take_seen(&mut self) -> u64 {
        std::mem::take(&mut self.seen)
    }

    /// Adds this feed's line, repaired and dropped counts to the metrics.
    pub fn flush_counts(&mut self, source: &str) {
        let seen = self.take_seen();
        if seen > 0 {
            crate::metrics::Metrics::get().lines_read.with_label_values(&[source]).inc_by(seen);
        }
        if let Some(j) = &mut self.joiner {
            if j.cut > 0 {
                crate::metrics::Metrics::get()
                    .lines_repaired
                    .with_label_values(&[source, "multiline_max"])
                    .inc_by(j.cut);
                j.cut = 0;
            }
        }
        self.ctx.truncated += std::mem::take(&mut self.splitter.truncated);
        self.ctx.flush_counts(source);
    }
}
