//! Stages: what happens to each line between reading and batching, in order:
//! UTF-8 repair, truncation to `max_line_bytes`, the configured `regex`,
//! `drop` and `timestamp` stages, then labels (static, `host`, `filename`,
//! extracted) resolved to an interned stream.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use regex::Regex;

use super::TimeFormat;
use crate::config::SourceConfig;
use crate::metrics::Metrics;
use crate::queue::{Chunk, Entry, Interner, StreamRef};
use crate::util::cut_at_char;

/// One compiled stage (made by `plan` from a `[[sources]].stages` entry).
#[derive(Debug, Clone)]
pub enum Stage {
    /// Named captures are extracted (`names`); `labels` lists which become labels.
    Regex {
        re: Regex,
        names: Vec<String>,
        labels: Vec<String>,
    },
    Drop(Regex),
    Timestamp {
        source: String,
        format: TimeFormat,
    },
}

/// A source's compiled stages and labels.
pub struct SourceStages {
    pub name: Arc<str>,
    base_labels: BTreeMap<String, String>,
    tenant: Option<Arc<str>>,
    stages: Vec<Stage>,
    max_line_bytes: usize,
    interner: Arc<Interner>,
    dynamic: bool,
}

/// What became of one line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Processed {
    Kept,
    Dropped,
}

/// Per-file state of a source: its stream (labels with `filename`) and the
/// cache of streams with extracted labels. The labels themselves live only in
/// the interned stream: a thousand tailed files hold a thousand small streams.
pub struct FileContext {
    stream: StreamRef,
    dynamic: HashMap<Vec<(String, String)>, StreamRef>,
    /// Counters batched per context and flushed with [`FileContext::flush_counts`].
    pub invalid_utf8: u64,
    pub truncated: u64,
    pub dropped: u64,
}

impl FileContext {
    /// Adds the repaired and dropped counts to the metrics and zeroes them.
    pub fn flush_counts(&mut self, source: &str) {
        let m = Metrics::get();
        if self.invalid_utf8 > 0 {
            m.lines_repaired.with_label_values(&[source, "invalid_utf8"]).inc_by(self.invalid_utf8);
        }
        if self.truncated > 0 {
            m.lines_repaired.with_label_values(&[source, "truncated"]).inc_by(self.truncated);
        }
        if self.dropped > 0 {
            m.lines_dropped.with_label_values(&[source, "drop_stage"]).inc_by(self.dropped);
        }
        self.invalid_utf8 = 0;
        self.truncated = 0;
        self.dropped = 0;
    }
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
        let mut base_labels = src.labels.clone();
        for (k, v) in extra_labels {
            base_labels.insert(k.clone(), v.clone());
        }
        if src.host_label && !base_labels.contains_key("host") {
            base_labels.insert("host".into(), gethostname::gethostname().to_string_lossy().into_owned());
        }
        let dynamic = stages.iter().any(|s| matches!(s, Stage::Regex { labels, .. } if !labels.is_empty()));
        let tenant = src.tenant_id.as_deref().or(default_tenant).map(Arc::from);
        Self { name, base_labels, tenant, stages, max_line_bytes: src.max_line_bytes.get() as usize, interner, dynamic }
    }

    /// The context for one file (`filename` label) or for stdin (`None`).
    pub fn context(&self, filename: Option<&str>) -> FileContext {
        let mut base = self.base_labels.clone();
        if let Some(f) = filename {
            base.entry("filename".into()).or_insert_with(|| f.to_string());
        }
        let stream = self.interner.intern(self.tenant.as_ref(), base);
        FileContext { stream, dynamic: HashMap::new(), invalid_utf8: 0, truncated: 0, dropped: 0 }
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
        self.process_str(ctx, line, read_ts, chunk)
    }

    /// [`SourceStages::process`] for a line already known to be UTF-8 (its
    /// whole read block was validated at once, which is cheaper than line by line).
    pub fn process_valid(&self, ctx: &mut FileContext, line: &str, read_ts: i64, chunk: &mut Chunk) -> Processed {
        self.process_str(ctx, Cow::Borrowed(line), read_ts, chunk)
    }

    fn process_str(&self, ctx: &mut FileContext, mut line: Cow<'_, str>, read_ts: i64, chunk: &mut Chunk) -> Processed {
        if line.len() > self.max_line_bytes {
            line = Cow::Owned(cut_at_char(&line, self.max_line_bytes).to_string());
            ctx.truncated += 1;
        }
        let mut ts = read_ts;
        let mut assigned = true;
        let mut stream = None;
        if !self.stages.is_empty() {
            let mut extracted: Vec<(&str, String)> = Vec::new();
            for stage in &self.stages {
                match stage {
                    Stage::Drop(re) => {
                        if re.is_match(&line) {
                            ctx.dropped += 1;
                            return Processed::Dropped;
                        }
                    }
                    Stage::Regex { re, names, .. } => {
                        if let Some(caps) = re.captures(&line) {
                            for n in names {
                                if let Some(m) = caps.name(n) {
                                    extracted.retain(|(k, _)| *k != n.as_str());
                                    extracted.push((n.as_str(), m.as_str().to_string()));
                                }
                            }
                        }
                    }
                    Stage::Timestamp { source, format } => {
                        if let Some((_, v)) = extracted.iter().find(|(k, _)| *k == source.as_str()) {
                            if let Some(t) = format.to_unix_ns(v) {
                                ts = t.clamp(0, i64::MAX as i128) as i64;
                                assigned = false;
                            }
                        }
                    }
                }
            }
            if self.dynamic {
                let mut key: Vec<(String, String)> = Vec::new();
                for stage in &self.stages {
                    if let Stage::Regex { labels, .. } = stage {
                        for l in labels {
                            if let Some((_, v)) = extracted.iter().find(|(k, _)| *k == l.as_str()) {
                                if !v.is_empty() {
                                    key.retain(|(k, _)| k != l);
                                    key.push((l.clone(), truncate_label_value(v)));
                                }
                            }
                        }
                    }
                }
                if !key.is_empty() {
                    let s = match ctx.dynamic.get(&key) {
                        Some(s) => s.clone(),
                        None => {
                            let mut labels: BTreeMap<String, String> = ctx.stream.labels.iter().cloned().collect();
                            for (k, v) in &key {
                                labels.insert(k.clone(), v.clone());
                            }
                            let s = self.interner.intern(self.tenant.as_ref(), labels);
                            if ctx.dynamic.len() < MAX_CACHED_STREAMS {
                                ctx.dynamic.insert(key, s.clone());
                            }
                            s
                        }
                    };
                    stream = Some(s);
                }
            }
        }
        let start = chunk.buf.len() as u32;
        chunk.buf.push_str(&line);
        let stream = chunk.stream_id(stream.as_ref().unwrap_or(&ctx.stream));
        chunk.entries.push(Entry { stream, ts, assigned_ts: assigned, start, len: line.len() as u32 });
        Processed::Kept
    }
}

/// Streams remembered per file before lookups go to the shared interner.
const MAX_CACHED_STREAMS: usize = 1024;

/// Label values longer than this are cut: real services refuse longer ones.
const MAX_LABEL_VALUE: usize = 2048;

fn truncate_label_value(v: &str) -> String {
    cut_at_char(v, MAX_LABEL_VALUE).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repairs_truncates_and_extracts() {
        let mut src = SourceConfig { host_label: false, ..Default::default() };
        src.max_line_bytes = crate::util::HumanSize(16);
        src.labels.insert("job".into(), "app".into());
        let level = Regex::new(r"(?P<level>ERROR|INFO)").unwrap();
        let stages = vec![
            Stage::Regex { re: level, names: vec!["level".into()], labels: vec!["level".into()] },
            Stage::Drop(Regex::new("healthcheck").unwrap()),
            Stage::Regex { re: Regex::new(r"^(?P<ts>\d+) ").unwrap(), names: vec!["ts".into()], labels: vec![] },
            Stage::Timestamp { source: "ts".into(), format: TimeFormat::parse("unix").unwrap() },
        ];
        let s = SourceStages::new(Arc::from("t"), &src, stages, None, Interner::new(), &BTreeMap::new());
        let mut ctx = s.context(Some("/var/log/a.log"));
        let mut chunk = Chunk::default();
        assert_eq!(s.process(&mut ctx, b"12 ERROR boom", 99, &mut chunk), Processed::Kept);
        assert_eq!(s.process(&mut ctx, b"GET /healthcheck", 99, &mut chunk), Processed::Dropped);
        assert_eq!(s.process(&mut ctx, b"bad \xff byte", 99, &mut chunk), Processed::Kept);
        assert_eq!(s.process(&mut ctx, b"INFO a very long line indeed", 99, &mut chunk), Processed::Kept);
        let e = &chunk.entries;
        assert_eq!(e.len(), 3);
        assert_eq!(e[0].ts, 12_000_000_000);
        assert!(!e[0].assigned_ts);
        assert_eq!(chunk.stream(&e[0]).labels_json, r#"{"filename":"/var/log/a.log","job":"app","level":"ERROR"}"#);
        assert_eq!(chunk.line(&e[1]), "bad \u{fffd} byte");
        assert_eq!(e[1].ts, 99);
        assert_eq!(chunk.stream(&e[1]).labels_json, r#"{"filename":"/var/log/a.log","job":"app"}"#);
        assert_eq!(chunk.line(&e[2]), "INFO a very long");
        assert_eq!((ctx.invalid_utf8, ctx.truncated, ctx.dropped), (1, 1, 1));
    }
}
