//! Per-file state of a source's stages: its stream, held container parts,
//! cached streams of extracted labels, `limit` buckets, the last good time
//! of `timestamp` stages (`fudge`), and counters flushed to the metrics.

use std::collections::{HashMap, HashSet};
use std::time::Instant;

use super::multiline::Block;
use super::stage::Held;
use crate::metrics::Metrics;
use crate::queue::StreamRef;

/// Streams a file remembers the last time of (Promtail keeps 10,000 in all).
const MAX_LAST_TIMES: usize = 10_000;

/// Stages that count lines they could not parse (passed on unchanged).
const PARSING: [&str; 4] = ["json", "logfmt", "cri", "docker"];

/// Per-file state of a source: its stream (labels with `filename`) and the
/// cache of streams with extracted labels. The labels themselves live only in
/// the interned stream: a thousand tailed files hold a thousand small streams.
pub struct FileContext {
    pub(super) stream: StreamRef,
    /// Container lines waiting for their last part.
    pub(super) held: Vec<Held>,
    /// Parts a `cri` stage let go at its `max_partial_lines`, to be passed on.
    pub(super) overflow: Vec<Held>,
    /// The last time a `cri` or `docker` stage read, by (stage, stream): a
    /// line whose time does not read gets it plus 1 ns (Promtail's `fudge`).
    pub(super) container_times: Vec<(usize, String, i64)>,
    /// Lines a `multiline` stage is joining, per (stage, labels).
    pub(super) blocks: Vec<Block>,
    /// The (stage, labels) of `multiline` stages that saw a start line:
    /// before it, lines pass one by one (as in Promtail).
    pub(super) started: HashSet<(usize, u64)>,
    /// Streams of lines whose stages set labels or a tenant.
    /// By the hash of the key (a line finds its stream without allocating);
    /// a key whose hash another holds is interned each time.
    pub(super) dynamic: HashMap<u64, (DynamicKey, StreamRef)>,
    /// `timestamp` stages with `fudge`: the last time set, by (stage, labels).
    pub(super) last_times: HashMap<(usize, u64), i64>,
    /// The file offset of the line being processed (set by the line feed).
    pub line_start: u64,
    /// Counters batched per context and flushed with [`FileContext::flush_counts`].
    pub invalid_utf8: u64,
    pub truncated: u64,
    /// Lines that kept their file's stream at `max_streams`.
    pub stream_limited: u64,
    /// Lines whose `tenant` stage found a value the service would refuse.
    pub invalid_tenant: u64,
    /// Lines dropped by `drop`, `match` and `sampling` stages, by reason
    /// (their `reason`, Promtail's `drop_counter_reason`).
    pub dropped: Vec<(String, u64)>,
    /// Lines a `json` stage dropped as malformed (`drop_malformed`; not
    /// among Promtail's stage drops).
    pub malformed_json: u64,
    /// Lines over a `limit` stage's rate.
    pub limited: u64,
    /// Of those, by the limiting label's (name, value), for Promtail's
    /// `logentry_dropped_lines_by_label_total`: counted only while
    /// Promtail's metrics are on.
    pub limited_by: Vec<(String, String, u64)>,
    /// Lines a parsing stage could not parse, by [`PARSING`] index.
    pub unparsed: [u64; 4],
}

impl FileContext {
    /// Adds the repaired and dropped counts to the metrics and zeroes them.
    pub fn flush_counts(&mut self, source: &str) {
        let m = Metrics::get();
        let promtail = crate::metrics::promtail::get();
        if self.invalid_utf8 > 0 {
            m.lines_repaired.with_label_values(&[source, "invalid_utf8"]).inc_by(self.invalid_utf8);
        }
        if self.truncated > 0 {
            m.lines_repaired.with_label_values(&[source, "truncated"]).inc_by(self.truncated);
        }
        if self.stream_limited > 0 {
            m.lines_repaired.with_label_values(&[source, "stream_limit"]).inc_by(self.stream_limited);
            self.stream_limited = 0;
        }
        if self.invalid_tenant > 0 {
            m.lines_repaired.with_label_values(&[source, "invalid_tenant"]).inc_by(self.invalid_tenant);
            self.invalid_tenant = 0;
        }
        for (reason, n) in &mut self.dropped {
            if *n > 0 {
                m.lines_dropped.with_label_values(&[source, reason]).inc_by(*n);
                if let Some(p) = promtail {
                    p.stage_dropped(reason, *n);
                }
                *n = 0;
            }
        }
        if self.malformed_json > 0 {
            m.lines_dropped.with_label_values(&[source, "malformed_json"]).inc_by(self.malformed_json);
            self.malformed_json = 0;
        }
        if self.limited > 0 {
            m.lines_dropped.with_label_values(&[source, "limit"]).inc_by(self.limited);
            if let Some(p) = promtail {
                p.stage_dropped(crate::metrics::promtail::LIMIT_REASON, self.limited);
            }
        }
        for (name, value, n) in self.limited_by.drain(..) {
            if let Some(p) = promtail {
                p.dropped_by_label(&name, &value, n);
            }
        }
        for (i, n) in self.unparsed.iter_mut().enumerate() {
            if *n > 0 {
                m.lines_unparsed.with_label_values(&[source, PARSING[i]]).inc_by(*n);
                *n = 0;
            }
        }
        self.invalid_utf8 = 0;
        self.truncated = 0;
        self.limited = 0;
    }

    /// The offset of the first held container part, if any: the file's
    /// position may not pass it.
    pub fn held_from(&self) -> Option<u64> {
        self.held.iter().map(|h| h.start).chain(self.blocks.iter().map(|b| b.start)).min()
    }

    /// When the first block of a `multiline` stage is due (no line joined it
    /// for its `max_wait`), if any is held.
    pub fn blocks_due(&self) -> Option<Instant> {
        self.blocks.iter().map(|b| b.last + b.max_wait).min()
    }

    /// True when a container line waits for its last part.
    pub fn has_held(&self) -> bool {
        !self.held.is_empty()
    }

    /// The last time a `timestamp` stage with `fudge` set, by (stage, labels).
    pub(super) fn last_time(&self, key: (usize, u64)) -> Option<i64> {
        self.last_times.get(&key).copied()
    }

    pub(super) fn remember_time(&mut self, key: (usize, u64), ts: i64) {
        if self.last_times.len() >= MAX_LAST_TIMES && !self.last_times.contains_key(&key) {
            self.last_times.clear();
        }
        self.last_times.insert(key, ts);
    }

    /// Forgets held parts (the file was truncated and is read again).
    pub fn reset(&mut self) {
        self.held.clear();
        self.blocks.clear();
    }
}

/// A line's label changes and tenant: the key of its stream in a file's cache.
pub(super) struct DynamicKey {
    pub(super) tenant: Option<String>,
    pub(super) labels: Vec<(String, Option<String>)>,
}

impl DynamicKey {
    /// The hash of a key made of `tenant` and `labels` (values as cut).
    pub(super) fn hash_of<'a>(tenant: Option<&str>, labels: impl Iterator<Item = (&'a str, Option<&'a str>)>) -> u64 {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        tenant.hash(&mut h);
        for (k, v) in labels {
            k.hash(&mut h);
            v.hash(&mut h);
        }
        h.finish()
    }

    /// Whether this is the key of `tenant` and `labels`.
    pub(super) fn is<'a>(
        &self,
        tenant: Option<&str>,
        mut labels: impl ExactSizeIterator<Item = (&'a str, Option<&'a str>)>,
    ) -> bool {
        self.tenant.as_deref() == tenant
            && self.labels.len() == labels.len()
            && self.labels.iter().all(|(k, v)| labels.next() == Some((k.as_str(), v.as_deref())))
    }
}
