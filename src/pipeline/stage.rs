//! One compiled stage and the per-file state some stages keep.

use std::borrow::Cow;
use std::time::Duration;

use regex::Regex;

use super::json::JsonField;
use super::template::GoTemplate;
use super::TimeFormat;
use crate::logql::LogSelector;

/// One compiled stage (made by `plan` from a `[[sources]].stages` entry):
/// what it does, then which values of the extracted map become labels and
/// structured metadata, as `(label, extracted name)` pairs.
#[derive(Debug, Clone)]
pub struct Stage {
    pub op: Op,
    pub labels: Vec<(String, String)>,
    pub metadata: Vec<(String, String)>,
}

impl Stage {
    /// A stage that picks no labels and no metadata.
    pub fn plain(op: Op) -> Self {
        Self { op, labels: Vec::new(), metadata: Vec::new() }
    }

    /// The stage's key in the config (`tailship inspect` names stages so).
    pub fn name(&self) -> &'static str {
        match self.op {
            Op::Labels if self.labels.is_empty() && !self.metadata.is_empty() => "structured_metadata",
            _ => self.op.name(),
        }
    }
}

#[derive(Debug, Clone)]
pub enum Op {
    /// Named captures are extracted (a capture that did not take part: "").
    Regex {
        re: Regex,
        names: Vec<String>,
        /// Read this extracted value instead of the line.
        source: Option<String>,
    },
    /// `(name, path)` pairs; empty: every top-level scalar field.
    Json {
        fields: Vec<(String, JsonField)>,
        source: Option<String>,
        /// A line that is not a JSON object is dropped (counted under `malformed_json`).
        drop_malformed: bool,
    },
    /// `(name, key)` pairs; empty: every key.
    Logfmt {
        fields: Vec<(String, String)>,
        source: Option<String>,
    },
    Drop(DropRule),
    /// The first of `formats` that reads the value sets the time. When none
    /// does (or the value is missing), `fudge` sets the time of the last line
    /// of the same labels that had one, plus 1 ns (Promtail's `fudge`);
    /// otherwise the line keeps its time.
    Timestamp {
        source: String,
        formats: Vec<TimeFormat>,
        fudge: bool,
    },
    /// The line becomes this extracted value.
    Output(String),
    /// With a `source`, the extracted value is rewritten instead of the line.
    Replace {
        re: Regex,
        with: String,
        source: Option<String>,
    },
    /// Promtail's `replace` with a Go template: each capture group of each
    /// match becomes the template rendered with `.Value` = the group's text;
    /// named groups are extracted with their rendered values.
    ReplaceGroups {
        re: Regex,
        template: GoTemplate,
        source: Option<String>,
    },
    /// CRI lines; a part (`P`) longer than this many bytes is cut before
    /// it is held; when a part comes while this many are held, they go on alone.
    Cri(Option<usize>, usize),
    Docker,
    /// Lines per second and burst for the whole source (one `bucket`
    /// shared by its files, as Promtail's is by a job's); with `by_label`,
    /// per value of that label at this stage. Without `drop`, a line over
    /// the limit waits for its token.
    Limit {
        rate: f64,
        burst: f64,
        by_label: Option<ByLabel>,
        drop: bool,
        bucket: SharedBucket,
    },
    /// The line's tenant from an extracted value or a label.
    Tenant(TenantFrom),
    /// Only the stage's label and metadata picks.
    Labels,
    /// Every label not listed is taken away.
    LabelAllow(Vec<String>),
    /// These labels are set on the line (Promtail's `static_labels`).
    StaticLabels(Vec<(String, String)>),
    /// These labels are taken off the line (Promtail's `labeldrop`).
    LabelDrop(Vec<String>),
    /// Terminal escape sequences (this regex) are removed from the line.
    Decolorize(Regex),
    /// The extracted value `source` becomes the rendered template (an empty
    /// result removes it).
    Template {
        source: String,
        template: GoTemplate,
    },
    /// A selector over the line's labels and text. Keep: the `skip` stages
    /// that follow run only on lines it selects. Drop: a line it selects is
    /// dropped, counted under `reason`.
    Match {
        selector: LogSelector,
        drop: bool,
        skip: usize,
        reason: String,
    },
    /// Values longer than `limit` bytes are cut so that, with `suffix`, they fit.
    Truncate {
        limit: usize,
        suffix: String,
        target: Truncated,
    },
    /// A line is kept with probability `rate`; others are dropped under `reason`.
    Sampling {
        rate: f64,
        reason: String,
    },
    /// See [`crate::config::PackStage`].
    Pack {
        labels: Vec<String>,
        ingest_timestamp: bool,
    },
    /// Counters, gauges and histograms updated from the line.
    Metrics(Vec<super::metrics::Metric>),
    /// Labels from a MaxMind database lookup of an extracted address.
    GeoIp(super::geoip::GeoIp),
    /// Lines joined into one from a line matching `start` (Promtail's
    /// `multiline` stage; see [`super::multiline`]).
    Multiline {
        start: Regex,
        max_lines: usize,
        max_wait: std::time::Duration,
    },
}

/// What a `truncate` stage cuts; the names empty: every one.
#[derive(Debug, Clone)]
pub enum Truncated {
    Line,
    Labels(Vec<String>),
    Metadata(Vec<String>),
    Extracted(Vec<String>),
}

/// Where a `tenant` stage finds the tenant.
#[derive(Debug, Clone)]
pub enum TenantFrom {
    Extracted(String),
    Label(String),
    Value(String),
}

/// A compiled `drop` stage: the line is dropped when every condition set holds.
#[derive(Debug, Clone, Default)]
pub struct DropRule {
    /// Extracted values joined by `separator`; empty: the line.
    pub sources: Vec<String>,
    pub separator: String,
    pub regex: Option<Regex>,
    pub value: Option<String>,
    /// Entries older than now minus this many ns.
    pub older_than_ns: Option<i64>,
    pub longer_than: Option<usize>,
    /// The `reason` label of the drop counter.
    pub reason: String,
}

impl Op {
    /// False for stages whose outcome depends on the moment or on chance.
    pub fn same_every_read(&self) -> bool {
        match self {
            Op::Sampling { .. } | Op::Limit { .. } => false,
            Op::Drop(rule) => rule.older_than_ns.is_none(),
            _ => true,
        }
    }

    /// The stage's key in the config (and the `stage` label of metrics).
    pub fn name(&self) -> &'static str {
        match self {
            Op::Regex { .. } => "regex",
            Op::Json { .. } => "json",
            Op::Logfmt { .. } => "logfmt",
            Op::Drop(_) => "drop",
            Op::Timestamp { .. } => "timestamp",
            Op::Output(_) => "output",
            Op::Replace { .. } | Op::ReplaceGroups { .. } => "replace",
            Op::Cri(..) => "cri",
            Op::Docker => "docker",
            Op::Limit { .. } => "limit",
            Op::Tenant(_) => "tenant",
            Op::Labels => "labels",
            Op::Decolorize(_) => "decolorize",
            Op::LabelAllow(_) => "labelallow",
            Op::StaticLabels(_) => "static_labels",
            Op::LabelDrop(_) => "labeldrop",
            Op::Template { .. } => "template",
            Op::Match { .. } => "match",
            Op::Truncate { .. } => "truncate",
            Op::Sampling { .. } => "sampling",
            Op::Pack { .. } => "pack",
            Op::Metrics(_) => "metrics",
            Op::Multiline { .. } => "multiline",
            Op::GeoIp(_) => "geoip",
        }
    }
}

/// A container line held until its last part arrives (CRI `P`, Docker
/// without a newline), per stream of one file.
#[derive(Debug)]
pub struct Held {
    /// The stage that holds it; the joined line goes on from the next one.
    pub stage: usize,
    pub stream: String,
    /// The timestamp of the first part.
    pub ts: i64,
    pub text: String,
    /// Offset of the first part's line in the file: the file's position
    /// cannot pass it until the joined line is handed on.
    pub start: u64,
}

/// The buckets of a `limit` stage by label value, shared by a source's files.
#[derive(Debug, Clone)]
pub struct ByLabel {
    pub name: String,
    /// Values remembered before all are forgotten.
    pub max_values: usize,
    pub buckets: std::sync::Arc<std::sync::Mutex<std::collections::HashMap<String, Bucket>>>,
}

impl ByLabel {
    /// Takes a token of `value`'s bucket; false when over the limit.
    pub fn take(&self, value: &str, rate: f64, burst: f64, now_ns: i64) -> bool {
        let Ok(mut all) = self.buckets.lock() else { return true };
        if all.len() >= self.max_values && !all.contains_key(value) {
            all.clear();
        }
        let b = match all.get_mut(value) {
            Some(b) => b,
            None => all.entry(value.to_string()).or_insert_with(|| Bucket::full(burst, now_ns)),
        };
        b.take(rate, burst, now_ns)
    }
}

/// The one bucket of a `limit` stage, shared by the source's files
/// (created full at its first line).
pub type SharedBucket = std::sync::Arc<std::sync::Mutex<Option<Bucket>>>;

/// Takes a token of `shared`: `None` when there is one, else (with `wait`)
/// the time to wait for the token reserved, or (without) `Some(ZERO)` when
/// the line is over the limit. A reserved token may take the bucket below
/// zero, as Go's `rate.Limiter.Wait` does: later lines wait behind it.
pub fn take_shared(shared: &SharedBucket, rate: f64, burst: f64, now_ns: i64, wait: bool) -> Option<Duration> {
    let Ok(mut b) = shared.lock() else { return None };
    let b = b.get_or_insert_with(|| Bucket::full(burst, now_ns));
    if b.take(rate, burst, now_ns) {
        return None;
    }
    if !wait {
        return Some(Duration::ZERO);
    }
    b.tokens -= 1.0;
    Some(Duration::from_secs_f64(-b.tokens / rate))
}

/// A token bucket of a `limit` stage.
#[derive(Debug, Clone, Copy)]
pub struct Bucket {
    tokens: f64,
    last_ns: i64,
}

impl Bucket {
    pub fn full(burst: f64, now_ns: i64) -> Self {
        Self { tokens: burst, last_ns: now_ns }
    }

    /// Takes a token if there is one; refills at `rate` per second up to `burst`.
    pub fn take(&mut self, rate: f64, burst: f64, now_ns: i64) -> bool {
        let elapsed = now_ns.saturating_sub(self.last_ns).max(0) as f64 / 1e9;
        self.tokens = (self.tokens + elapsed * rate).min(burst);
        self.last_ns = self.last_ns.max(now_ns);
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            true
        } else {
            false
        }
    }
}

/// `line` narrowed to `range`, borrowing when it can.
pub fn narrow<'a>(line: Cow<'a, str>, range: std::ops::Range<usize>) -> Cow<'a, str> {
    match line {
        Cow::Borrowed(s) => Cow::Borrowed(&s[range]),
        Cow::Owned(mut s) => {
            s.truncate(range.end);
            s.drain(..range.start);
            Cow::Owned(s)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bucket_allows_its_burst_then_its_rate() {
        let s = 1_000_000_000;
        let mut b = Bucket::full(2.0, 0);
        assert!(b.take(1.0, 2.0, 0));
        assert!(b.take(1.0, 2.0, 0));
        assert!(!b.take(1.0, 2.0, 0));
        assert!(!b.take(1.0, 2.0, s / 2));
        assert!(b.take(1.0, 2.0, s));
        assert!(!b.take(1.0, 2.0, s));
        // A long pause refills to the burst, not beyond.
        assert!(b.take(1.0, 2.0, 100 * s));
        assert!(b.take(1.0, 2.0, 100 * s));
        assert!(!b.take(1.0, 2.0, 100 * s));
    }

    #[test]
    fn narrowing_keeps_borrowed_text_borrowed() {
        assert!(matches!(narrow(Cow::Borrowed("abcdef"), 2..4), Cow::Borrowed("cd")));
        assert_eq!(narrow(Cow::Owned("abcdef".into()), 2..4), "cd");
    }
}
