//! Sources: where lines come from. `file` tails globs of files, `stdin` reads
//! standard input. Both turn bytes into lines (`lines`), optionally join
//! multiline entries (`multiline`), run the source's stages, and hand chunks
//! to the queue, waiting while it is full. `journal` reads the systemd
//! journal through journalctl, one entry per line, with labels of its own.

pub mod docker;
pub mod file;
pub mod fingerprint;
#[cfg(target_os = "linux")]
pub mod inotify;
pub mod journal;
pub mod lines;
pub mod multiline;
pub mod net;
pub mod replay;
pub mod stdin;
pub mod tailer;
pub mod target;
pub mod watch;

use std::time::{Duration, Instant};

use crate::config::SourceConfig;
use crate::pipeline::{FileContext, SourceStages};
use crate::queue::Chunk;
use lines::LineSplitter;
use multiline::{Joiner, MultilineRule};

pub use crate::discovery::FileMatch;

/// Where a source's chunks go, the token that tells it to stop, and the
/// status it shows its files and problems in.
#[derive(Debug, Clone)]
pub struct Outlet {
    pub sink: crate::queue::ChunkSink,
    /// The runtime the queue lives on (sources run on their own threads).
    pub handle: tokio::runtime::Handle,
    pub cancel: tokio_util::sync::CancellationToken,
    /// The agent's status (for a reader of a second client, one nobody
    /// serves: its first client's reader shows the files).
    pub status: std::sync::Arc<crate::status::Status>,
}

impl Outlet {
    /// Queues `chunk`, waiting while the queue is full; false when stopped.
    pub fn send(&self, chunk: Chunk) -> bool {
        self.sink.send_blocking(&self.handle, chunk, &self.cancel)
    }

    /// Queues `chunks` in order, in one wait on the runtime (one wake-up of
    /// the queue's reader for many small reads), calling `waiting` every
    /// `every` while the queue is full, so a source blocked by a service
    /// outage still reports on itself. Returns how many were queued (all,
    /// unless stopped).
    pub fn send_all_waiting(&self, chunks: Vec<Chunk>, every: std::time::Duration, mut waiting: impl FnMut()) -> usize {
        self.handle.block_on(async {
            let mut sent = 0;
            for chunk in chunks {
                let send = self.sink.send(chunk, &self.cancel);
                tokio::pin!(send);
                let ok = loop {
                    // Biased: a send with room completes on its first poll, and
                    // the timer is then never registered (this is the read path).
                    tokio::select! {
                        biased;
                        ok = &mut send => break ok,
                        _ = tokio::time::sleep(every) => waiting(),
                    }
                };
                if !ok {
                    break;
                }
                sent += 1;
            }
            sent
        })
    }

    pub fn stopped(&self) -> bool {
        self.cancel.is_cancelled()
    }
}

/// A source as `plan` compiled it: its config, its multiline rule and, for a
/// file source, its globs. Cloning is cheap (compiled regexes and globs are shared).
#[derive(Debug, Clone)]
pub struct SourceSpec {
    pub config: SourceConfig,
    pub multiline: Option<MultilineRule>,
    pub files: Option<std::sync::Arc<FileMatch>>,
    /// Relabel rules and discovered targets: which files are read, with which labels.
    pub labels: target::FileLabels,
}

impl SourceSpec {
    /// This source reading what its discovery `found`: the files of its
    /// targets (through the globs it keeps current, when it names files by
    /// glob), labelled from them.
    pub fn discovered(&self, found: crate::discovery::Found) -> Self {
        let mut spec = self.clone();
        spec.labels.targets = Some(found.targets);
        if let (Some(globs), Some(base)) = (found.globs, &self.files) {
            spec.files = Some(std::sync::Arc::new(base.with_live(globs)));
        }
        spec
    }
}

pub use crate::pool::READ_BLOCK;

/// The longest valid UTF-8 prefix of a read block, for lines to borrow as `str`.
struct ValidPrefix<'a> {
    base: usize,
    text: &'a str,
}

impl<'a> ValidPrefix<'a> {
    fn of(block: &'a [u8]) -> Self {
        let text = match simdutf8::basic::from_utf8(block) {
            Ok(text) => text,
            Err(_) => {
                let valid = simdutf8::compat::from_utf8(block).err().map_or(block.len(), |e| e.valid_up_to());
                // The prefix up to `valid_up_to` is valid UTF-8 by definition.
                std::str::from_utf8(&block[..valid]).unwrap_or_default()
            }
        };
        Self { base: block.as_ptr() as usize, text }
    }

    /// `line` as text when it lies inside the valid prefix, starting and
    /// ending on character boundaries (`str::get` checks both).
    fn get(&self, line: &[u8]) -> Option<&'a str> {
        let at = (line.as_ptr() as usize).checked_sub(self.base)?;
        self.text.get(at..at.checked_add(line.len())?)
    }
}

/// The context of a file (or stdin): its labels after the source's relabel
/// rules. A file they drop is not opened (see [`target::FileLabels::admits`]);
/// should one be opened anyway (its target went away in between), and for
/// stdin, whose lines cannot wait, the labels before the rules apply.
fn file_context(spec: &SourceSpec, stages: &SourceStages, filename: Option<&str>) -> crate::pipeline::FileContext {
    if !spec.labels.is_active() {
        // A static `__host__` (Promtail's) chose whether the source runs; no `__` label ships.
        let mut labels = stages.labels_of(filename);
        crate::relabel::strip_internal(&mut labels);
        return stages.context_for(labels);
    }
    match spec.labels.resolve(stages, filename) {
        Some(labels) => stages.context_for(labels),
        None => {
            tracing::warn!(source = %stages.name, file = filename.unwrap_or("<stdin>"),
                "the relabel rules drop this input's labels, but it is read already; it keeps the labels before the rules");
            let mut labels = stages.labels_of(filename);
            crate::relabel::strip_internal(&mut labels);
            stages.context_for(labels)
        }
    }
}

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
    pub fn new(spec: &SourceSpec, stages: &SourceStages, filename: Option<&str>, start_offset: u64) -> Self {
        Self::with_context(spec, file_context(spec, stages, filename), start_offset)
    }

    /// A feed whose lines carry `ctx` (labels decided by the caller).
    pub fn with_context(spec: &SourceSpec, ctx: FileContext, start_offset: u64) -> Self {
        let src = &spec.config;
        let max = src.max_line_bytes.get() as usize;
        let joiner = spec.multiline.as_ref().map(|m| Joiner::new(m.start.clone(), m.max_lines, m.max_wait, max));
        Self {
            splitter: LineSplitter::new(start_offset, max),
            joiner,
            ctx,
            partial_wait: src.partial_line_wait.get(),
            last_data: Instant::now(),
            seen: 0,
        }
    }

    /// Splits `data` into lines and processes them into `chunk`.
    ///
    /// `data` is checked for UTF-8 once, as a whole: a line that lies inside
    /// its valid part, ending on a character boundary, needs no check of its
    /// own. Other lines (those with bytes from an earlier read, joined
    /// entries, lines after an invalid byte) are checked one by one.
    pub fn feed(&mut self, stages: &SourceStages, data: &[u8], read_ts: i64, now: Instant, chunk: &mut Chunk) {
        let Self { splitter, joiner, ctx, seen, .. } = self;
        let valid = ValidPrefix::of(data);
        splitter.feed(data, |line, start, _| match joiner {
            Some(j) => j.push(line, start, now, |entry, at| {
                *seen += 1;
                ctx.line_start = at;
                stages.process(ctx, entry, read_ts, chunk);
            }),
            None => {
                *seen += 1;
                ctx.line_start = start;
                match valid.get(line) {
                    Some(text) => stages.process_valid(ctx, text, read_ts, chunk),
                    None => stages.process(ctx, line, read_ts, chunk),
                };
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
        let idle = eof_final || now.duration_since(*last_data) >= *partial_wait;
        if splitter.has_partial() && idle {
            splitter.flush(|line, start, _| match joiner {
                Some(j) => j.push(line, start, now, |entry, at| {
                    *seen += 1;
                    ctx.line_start = at;
                    stages.process(ctx, entry, read_ts, chunk);
                }),
                None => {
                    *seen += 1;
                    ctx.line_start = start;
                    stages.process(ctx, line, read_ts, chunk);
                }
            });
        }
        if let Some(j) = joiner {
            j.flush(now, eof_final, |entry, at| {
                *seen += 1;
                ctx.line_start = at;
                stages.process(ctx, entry, read_ts, chunk);
            });
        }
        // Container lines whose last part never came (the runtime died
        // mid-line) go on as they are once the file is idle.
        if ctx.has_held() && idle {
            stages.flush_held(ctx, read_ts, chunk);
        }
        // Blocks of `multiline` stages go on once no line joined them for their `max_wait`.
        if ctx.blocks_due().is_some() {
            stages.flush_blocks(ctx, now, eof_final, read_ts, chunk);
        }
    }

    /// When [`LineFeed::flush_idle`] next has something to do.
    pub fn due_at(&self) -> Option<Instant> {
        let partial = self.splitter.has_partial().then(|| self.last_data + self.partial_wait);
        let joined = match (self.joiner.as_ref().and_then(|j| j.due_at()), self.ctx.blocks_due()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        let held = self.ctx.has_held().then(|| self.last_data + self.partial_wait);
        let partial = match (partial, held) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        match (partial, joined) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// True when a partial line or a multiline entry is held.
    pub fn has_pending(&self) -> bool {
        self.splitter.has_partial()
            || self.joiner.as_ref().is_some_and(|j| j.due_at().is_some())
            || self.ctx.has_held()
            || self.ctx.blocks_due().is_some()
    }

    /// The offset up to which every line was handled (emitted or dropped).
    pub fn safe_offset(&self) -> u64 {
        let consumed = self.splitter.consumed();
        let handled = match &self.joiner {
            Some(j) => j.safe_offset(consumed),
            None => consumed,
        };
        self.ctx.held_from().map_or(handled, |held| handled.min(held))
    }

    /// Starts again at `offset` (truncation).
    pub fn reset(&mut self, offset: u64) {
        self.splitter.reset(offset);
        if let Some(j) = &mut self.joiner {
            j.reset();
        }
        self.ctx.reset();
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
            self.ctx.truncated += std::mem::take(&mut j.truncated);
        }
        self.ctx.truncated += std::mem::take(&mut self.splitter.truncated);
        self.ctx.flush_counts(source);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_valid_prefix_lends_only_lines_inside_it_that_end_on_a_character_boundary() {
        let block = "ab\ncdé\n".as_bytes().iter().chain(b"\xffx\n").copied().collect::<Vec<u8>>();
        let v = ValidPrefix::of(&block);
        assert_eq!(v.get(&block[0..2]), Some("ab"));
        assert_eq!(v.get(&block[3..7]), Some("cdé"));
        assert_eq!(v.get(&block[3..6]), None, "cut inside é");
        assert_eq!(v.get(&block[6..7]), None, "starts inside é");
        assert_eq!(v.get(&block[8..10]), None, "after the invalid byte");
        let elsewhere = b"ab".to_vec();
        assert_eq!(v.get(&elsewhere), None, "another buffer");
        let owned = "é".as_bytes().to_vec();
        let whole = ValidPrefix::of(&owned);
        assert_eq!(whole.get(&owned), Some("é"));
        let copy = owned.clone();
        assert_eq!(whole.get(&copy), None, "a different allocation of the same text");
    }

    #[test]
    fn lines_fed_in_blocks_cut_inside_characters_come_out_whole_and_valid() {
        let src = SourceConfig { host_label: false, ..Default::default() };
        let stages = SourceStages::new(
            std::sync::Arc::from("t"),
            &src,
            Vec::new(),
            None,
            crate::queue::Interner::new(),
            &Default::default(),
        );
        let spec = SourceSpec { config: src.clone(), multiline: None, files: None, labels: Default::default() };
        let text = "日本語のログ行\nzweite Zeile ü\nbad \u{fffd}\nlast\n";
        let mut raw = text.replace('\u{fffd}', "\u{1}").into_bytes();
        let at = raw.iter().position(|&b| b == 1).unwrap();
        raw[at] = 0xff;
        for cut in 1..raw.len() {
            let mut feed = LineFeed::new(&spec, &stages, Some("/x"), 0);
            let mut chunk = Chunk::default();
            let now = Instant::now();
            feed.feed(&stages, &raw[..cut], 1, now, &mut chunk);
            feed.feed(&stages, &raw[cut..], 1, now, &mut chunk);
            let lines: Vec<&str> = chunk.entries.iter().map(|e| chunk.line(e)).collect();
            assert_eq!(lines, ["日本語のログ行", "zweite Zeile ü", "bad \u{fffd}", "last"], "cut at {cut}");
        }
    }
}
