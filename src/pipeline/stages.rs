//! Stages: what happens to each line between reading and batching, in order:
//! UTF-8 repair, truncation to `max_line_bytes`, the configured stages
//! (`regex`, `json`, `logfmt`, `drop`, `timestamp`, `output`, `replace`,
//! `cri`, `docker`, `limit`, `tenant`, `labels`), then labels (static,
//! `host`, `filename`, the Kubernetes path labels, those the stages set)
//! resolved to an interned stream.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Instant;

use super::apply;
use super::context::DynamicKey;
pub use super::context::FileContext;
use super::inspect::{Inspector, LineState, Stopped};
use super::line::{Extracted, Line};
use super::multiline::{self, Block};
use super::stage::{Op, Stage};
use crate::config::{SourceConfig, SourceType};
use crate::queue::{Chunk, Interner, StreamRef};
use crate::util::cut_at_char;

#[cfg(test)]
mod allocs;
mod container;
mod step;

use step::Flow;

/// A source's compiled stages and labels.
pub struct SourceStages {
    pub name: Arc<str>,
    base_labels: BTreeMap<String, String>,
    tenant: Option<Arc<str>>,
    stages: Vec<Stage>,
    max_line_bytes: usize,
    interner: Arc<Interner>,
    /// A `kubernetes` source's pod log root: files below it get `namespace`,
    /// `pod` and `container` labels from their path.
    pod_root: Option<std::path::PathBuf>,
    /// Fired at shutdown: a line waiting at a `limit` stops waiting.
    stop: Option<tokio_util::sync::CancellationToken>,
    /// `max_streams` (see `stream_limit`).
    streams: super::stream_limit::StreamLimit,
    /// Told what each stage does to each line (`tailship inspect`).
    inspector: Option<Arc<dyn Inspector>>,
}

/// What became of one line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Processed {
    Kept,
    Dropped,
    /// A part of a longer container line, held until its last part.
    Held,
}

impl SourceStages {
    /// A source's stages, compiled by `plan`, with its labels: the
    /// source's own, `extra_labels` (`tailship push --label`) and `host`.
    /// `default_tenant` is `client.tenant_id`, for sources without their own.
    pub fn new(
        name: Arc<str>,
        src: &SourceConfig,
        stages: Vec<Stage>,
        default_tenant: Option<&str>,
        interner: Arc<Interner>,
        extra_labels: &BTreeMap<String, String>,
    ) -> Self {
        let mut stages = stages;
        // Each reader of the source (one per client) has its own limits.
        for s in &mut stages {
            if let Op::Limit { bucket, by_label, .. } = &mut s.op {
                *bucket = Default::default();
                if let Some(by) = by_label {
                    by.buckets = Default::default();
                }
            }
        }
        let mut base_labels = src.labels.clone();
        for (k, v) in extra_labels {
            base_labels.insert(k.clone(), v.clone());
        }
        if src.host_label && !base_labels.contains_key("host") {
            base_labels.insert("host".into(), gethostname::gethostname().to_string_lossy().into_owned());
        }
        let tenant = src.tenant_id.as_deref().or(default_tenant).map(Arc::from);
        let pod_root = (src.kind == SourceType::Kubernetes).then(|| src.pod_root());
        Self {
            name,
            base_labels,
            tenant,
            stages,
            max_line_bytes: src.max_line_bytes.get() as usize,
            interner,
            pod_root,
            stop: None,
            streams: super::stream_limit::StreamLimit::new(src.stream_bound()),
            inspector: None,
        }
    }

    /// Tells `inspector` what each stage does to each line (`tailship inspect`).
    pub fn with_inspector(mut self, inspector: Arc<dyn Inspector>) -> Self {
        self.inspector = Some(inspector);
        self
    }

    /// Lines waiting at a `limit` stage (`drop = false`) stop waiting when `stop` fires.
    pub fn with_stop(mut self, stop: tokio_util::sync::CancellationToken) -> Self {
        self.stop = Some(stop);
        self
    }

    /// Waits `d`, or less when the source is stopping.
    fn wait(&self, d: std::time::Duration) {
        let until = Instant::now() + d;
        loop {
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() || self.stop.as_ref().is_some_and(|s| s.is_cancelled()) {
                return;
            }
            std::thread::sleep(left.min(std::time::Duration::from_millis(100)));
        }
    }

    /// The context for one file (`filename` label) or for stdin (`None`).
    /// Whether reading the same lines again gives the same lines out (no
    /// `sampling`, rate `limit` or `drop.older_than`): lines in flight at a
    /// crash are matched to their records by order only then.
    pub fn same_every_read(&self) -> bool {
        self.stages.iter().all(|s| s.op.same_every_read())
    }

    pub fn context(&self, filename: Option<&str>) -> FileContext {
        self.context_for(self.labels_of(filename))
    }

    /// The labels [`SourceStages::context`] gives a file (or stdin, `None`):
    /// the source's, `filename` and a kubernetes source's path labels.
    pub fn labels_of(&self, filename: Option<&str>) -> BTreeMap<String, String> {
        let mut base = self.base_labels.clone();
        if let Some(f) = filename {
            base.entry("filename".into()).or_insert_with(|| f.to_string());
            if let Some(root) = &self.pod_root {
                for (k, v) in pod_labels(root, f) {
                    base.entry(k.into()).or_insert(v);
                }
            }
        }
        base
    }

    /// A context whose stream has exactly `labels` (a file's labels after
    /// its source's relabel rules).
    pub fn context_for(&self, labels: BTreeMap<String, String>) -> FileContext {
        let labels = labels.into_iter().map(|(k, v)| (k, truncate_label_value(&v))).collect();
        let stream = self.interner.intern(self.tenant.as_ref(), labels);
        FileContext {
            stream,
            dynamic: HashMap::new(),
            held: Vec::new(),
            overflow: Vec::new(),
            blocks: Vec::new(),
            started: Default::default(),
            container_times: Vec::new(),
            last_times: HashMap::new(),
            line_start: 0,
            invalid_utf8: 0,
            truncated: 0,
            stream_limited: 0,
            invalid_tenant: 0,
            dropped: Vec::new(),
            malformed_json: 0,
            limited: 0,
            limited_by: Vec::new(),
            unparsed: [0; 4],
        }
    }

    /// Runs one line through the stages and appends it to `chunk` unless dropped.
    /// `read_ts` is the read time, used when no stage sets the timestamp.
    pub fn process(&self, ctx: &mut FileContext, raw: &[u8], read_ts: i64, chunk: &mut Chunk) -> Processed {
        let line: Cow<'_, str> = match simdutf8::basic::from_utf8(raw) {
            Ok(s) => Cow::Borrowed(s),
            Err(_) => {
                ctx.invalid_utf8 += 1;
                String::from_utf8_lossy(raw)
            }
        };
        self.process_str(ctx, line, read_ts, None, chunk)
    }

    /// [`SourceStages::process`] for a line that comes with labels of its own
    /// and a real timestamp: a journal entry's `unit`, `level` and `host`, and
    /// its `__REALTIME_TIMESTAMP` in ns. The labels are merged into the
    /// source's (over its static ones; labels the stages extract win over
    /// them), and `ts` is kept as the entry's time (the batcher never bumps
    /// it) unless a `timestamp` stage sets another. The same stages run, at
    /// the read time (the clock of a `limit` stage).
    ///
    /// `ctx` is moved onto the stream of these labels when they differ from
    /// the ones it holds, so a caller keeps one context per label set (each
    /// with its own cache of extracted-label streams) and pays nothing here.
    pub fn process_with_labels(
        &self,
        ctx: &mut FileContext,
        line: &[u8],
        ts: i64,
        labels: &[(&str, &str)],
        chunk: &mut Chunk,
    ) -> Processed {
        let held = &ctx.stream.labels;
        let added = labels.iter().filter(|(k, _)| !self.base_labels.contains_key(*k)).count();
        let same = held.len() == self.base_labels.len() + added
            && held.iter().all(|(k, v)| match labels.iter().find(|(name, _)| *name == k) {
                Some((_, value)) => value == v,
                None => self.base_labels.get(k) == Some(v),
            });
        if !same {
            let mut all = self.base_labels.clone();
            for (k, v) in labels {
                all.insert((*k).to_string(), truncate_label_value(v));
            }
            ctx.stream = self.interner.intern(self.tenant.as_ref(), all);
            ctx.dynamic.clear();
        }
        // The stages run at the read time (a `limit` stage's clock); the
        // entry then takes its own time unless a `timestamp` stage set one
        // (a `multiline` block: its first entry's).
        let text: Cow<'_, str> = match simdutf8::basic::from_utf8(line) {
            Ok(s) => Cow::Borrowed(s),
            Err(_) => {
                ctx.invalid_utf8 += 1;
                String::from_utf8_lossy(line)
            }
        };
        self.process_str(ctx, text, crate::util::now_ns() as i64, Some(ts), chunk)
    }

    /// [`SourceStages::process`] for a line already known to be UTF-8 (its
    /// whole read block was validated at once, which is cheaper than line by line).
    pub fn process_valid(&self, ctx: &mut FileContext, line: &str, read_ts: i64, chunk: &mut Chunk) -> Processed {
        self.process_str(ctx, Cow::Borrowed(line), read_ts, None, chunk)
    }

    /// `own`: the line's own time (see [`Line::own_ts`]).
    fn process_str(
        &self,
        ctx: &mut FileContext,
        mut line: Cow<'_, str>,
        read_ts: i64,
        own: Option<i64>,
        chunk: &mut Chunk,
    ) -> Processed {
        if line.len() > self.max_line_bytes {
            line = Cow::Owned(cut_at_char(&line, self.max_line_bytes).to_string());
            ctx.truncated += 1;
        }
        if self.stages.is_empty() {
            chunk.push_entry(&ctx.stream, &line, own.unwrap_or(read_ts), own.is_none(), None);
            return Processed::Kept;
        }
        let mut line = Line::new(line, read_ts, true);
        line.own_ts = own;
        line.extracted = Extracted::seeded(ctx.stream.clone());
        self.run(ctx, &mut line, 0, read_ts, chunk)
    }

    /// Hands on container lines whose last part did not come: those of a
    /// file idle for `partial_line_wait`, or all at the end of a one-off read.
    pub fn flush_held(&self, ctx: &mut FileContext, read_ts: i64, chunk: &mut Chunk) {
        let held = std::mem::take(&mut ctx.held);
        self.pass_held(ctx, held, read_ts, chunk);
    }

    /// Held parts through the stages after their own, each a line.
    fn pass_held(&self, ctx: &mut FileContext, held: Vec<super::stage::Held>, read_ts: i64, chunk: &mut Chunk) {
        for h in held {
            let mut line = Line::new(Cow::Owned(h.text), h.ts, false);
            line.extracted = Extracted::seeded(ctx.stream.clone());
            if !h.stream.is_empty() {
                line.extracted.set(Cow::Borrowed("stream"), h.stream);
            }
            // The labels of the stage that held it (its `stream`), as a line
            // it passed on at once has them.
            if let Some(stage) = self.stages.get(h.stage) {
                apply::picks(&mut line, stage, &ctx.stream.labels);
            }
            self.run(ctx, &mut line, h.stage + 1, read_ts, chunk);
        }
    }

    /// Runs stages `from..` on `line`, then resolves its stream and appends it.
    fn run<'s, 'l>(
        &'s self,
        ctx: &mut FileContext,
        line: &mut Line<'s, 'l>,
        from: usize,
        read_ts: i64,
        chunk: &mut Chunk,
    ) -> Processed {
        let inspect = self.inspector.as_deref();
        if let Some(o) = inspect {
            o.begin(from, LineState::of(line, &ctx.stream));
        }
        let mut next = from;
        while let Some(stage) = self.stages.get(next) {
            let i = next;
            next += 1;
            match self.step(ctx, line, stage, i, &mut next, read_ts, chunk) {
                Flow::Next => {}
                Flow::Stop(p) => {
                    if let Some(o) = inspect {
                        let how = if p == Processed::Held { Stopped::Held } else { Stopped::Dropped };
                        o.stopped(i, stage.name(), how);
                    }
                    return p;
                }
                Flow::Blocks(done) => {
                    if let Some(o) = inspect {
                        o.stopped(i, stage.name(), Stopped::Held);
                    }
                    return self.hand_on(ctx, done, read_ts, chunk);
                }
            }
            if !(stage.labels.is_empty() && stage.metadata.is_empty()) {
                apply::picks(line, stage, &ctx.stream.labels);
            }
            if let Some(o) = inspect {
                o.stage(i, stage.name(), LineState::of(line, &ctx.stream));
            }
        }
        let stream = self.stream_of(ctx, line);
        if line.text.len() > self.max_line_bytes {
            line.text = Cow::Owned(cut_at_char(&line.text, self.max_line_bytes).to_string());
            ctx.truncated += 1;
        }
        let meta = metadata_of(line);
        let stream = stream.as_ref().unwrap_or(&ctx.stream);
        if let Some(o) = inspect {
            o.sent(stream, LineState::of(line, stream));
        }
        // A line the source gave a time of its own takes it unless a stage set one.
        let (ts, assigned) = match (line.assigned, line.own_ts) {
            (true, Some(own)) => (own, false),
            _ => (line.ts, line.assigned),
        };
        chunk.push_entry(stream, &line.text, ts, assigned, meta.as_deref());
        Processed::Kept
    }

    /// Hands on the blocks of `multiline` stages that are due (all, with `force`).
    pub fn flush_blocks(&self, ctx: &mut FileContext, now: Instant, force: bool, read_ts: i64, chunk: &mut Chunk) {
        let done = multiline::due(&mut ctx.blocks, now, force);
        self.hand_on(ctx, done, read_ts, chunk);
    }

    /// The joined lines of `done` through the stages after their own (each
    /// at its first line's offset); `Held` when there are none.
    fn hand_on(&self, ctx: &mut FileContext, done: Vec<Block>, read_ts: i64, chunk: &mut Chunk) -> Processed {
        let mut out = Processed::Held;
        for b in done {
            ctx.truncated += u64::from(b.cut);
            let (from, at) = (b.stage() + 1, std::mem::replace(&mut ctx.line_start, b.start));
            let mut line = b.into_line(ctx.stream.clone());
            out = self.run(ctx, &mut line, from, read_ts, chunk);
            ctx.line_start = at;
        }
        out
    }

    /// The stream of a line whose stages set labels or a tenant.
    fn stream_of(&self, ctx: &mut FileContext, line: &mut Line<'_, '_>) -> Option<StreamRef> {
        if line.labels.is_empty() && line.tenant.is_none() {
            return None;
        }
        let changes = || line.labels.iter().map(|(k, v)| (k.as_ref(), v.as_deref().map(cut_label_value)));
        let hash = DynamicKey::hash_of(line.tenant.as_deref(), changes());
        if let Some((key, s)) = ctx.dynamic.get(&hash) {
            if key.is(line.tenant.as_deref(), changes()) {
                line.labels.clear();
                line.tenant = None;
                return Some(s.clone());
            }
        }
        if !self.streams.admit(hash, &self.name) {
            line.labels.clear();
            line.tenant = None;
            ctx.stream_limited += 1;
            return None;
        }
        let key = DynamicKey {
            tenant: line.tenant.take(),
            labels: line.labels.drain(..).map(|(k, v)| (k.to_string(), v.map(|v| truncate_label_value(&v)))).collect(),
        };
        let mut labels: BTreeMap<String, String> = ctx.stream.labels.iter().cloned().collect();
        for (k, v) in &key.labels {
            match v {
                Some(v) => labels.insert(k.clone(), v.clone()),
                None => labels.remove(k),
            };
        }
        let tenant = key.tenant.as_deref().map(Arc::from).or_else(|| self.tenant.clone());
        let s = self.interner.intern(tenant.as_ref(), labels);
        if ctx.dynamic.len() < MAX_CACHED_STREAMS && !ctx.dynamic.contains_key(&hash) {
            ctx.dynamic.insert(hash, (key, s.clone()));
        }
        Some(s)
    }
}

/// Adds one to the drop count of `reason`.
/// A line over a `limit` stage's rate by label `name`, whose value is `value`.
fn count_limited_by(slots: &mut Vec<(String, String, u64)>, name: &str, value: &str) {
    match slots.iter_mut().find(|(n, v, _)| n == name && v == value) {
        Some(slot) => slot.2 += 1,
        None => slots.push((name.to_string(), value.to_string(), 1)),
    }
}

fn count_drop(ctx: &mut FileContext, reason: &str) {
    match ctx.dropped.iter_mut().find(|(r, _)| r == reason) {
        Some(slot) => slot.1 += 1,
        None => ctx.dropped.push((reason.to_string(), 1)),
    }
}

/// The structured metadata of a line as a JSON object, if it has any.
fn metadata_of(line: &Line<'_, '_>) -> Option<String> {
    if line.metadata.is_empty() {
        return None;
    }
    let mut map = serde_json::Map::new();
    for (name, v) in &line.metadata {
        map.insert(name.to_string(), serde_json::Value::String(truncate_label_value(v)));
    }
    Some(serde_json::Value::Object(map).to_string())
}

/// `namespace`, `pod` and `container` of a pod log file below `root`
/// (`<root>/<namespace>_<pod>_<uid>/<container>/<n>.log`).
pub fn pod_labels(root: &std::path::Path, file: &str) -> Vec<(&'static str, String)> {
    let Ok(rel) = std::path::Path::new(file).strip_prefix(root) else { return Vec::new() };
    let parts: Vec<&str> = rel.iter().filter_map(|p| p.to_str()).collect();
    let [pod_dir, container, _file] = parts.as_slice() else { return Vec::new() };
    let mut it = pod_dir.splitn(3, '_');
    match (it.next(), it.next(), it.next()) {
        (Some(ns), Some(pod), Some(_uid)) if !ns.is_empty() && !pod.is_empty() => {
            vec![("namespace", ns.to_string()), ("pod", pod.to_string()), ("container", container.to_string())]
        }
        _ => Vec::new(),
    }
}

/// Streams remembered per file before lookups go to the shared interner.
const MAX_CACHED_STREAMS: usize = 1024;

/// Label values longer than this are cut: real services refuse longer ones.
const MAX_LABEL_VALUE: usize = 2048;

fn truncate_label_value(v: &str) -> String {
    cut_label_value(v).to_string()
}

fn cut_label_value(v: &str) -> &str {
    cut_at_char(v, MAX_LABEL_VALUE)
}

#[cfg(test)]
mod tests;
