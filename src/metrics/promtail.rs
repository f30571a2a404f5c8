//! Promtail's own metrics, under Promtail's names, types and labels, so
//! that the dashboards and alerts of Promtail's mixin (and those people
//! wrote against Promtail) keep working after a move to tailship. Opt-in
//! (`server.promtail_metrics`, which `tailship convert promtail` sets).
//!
//! Fed from tailship's own counts, and shaped to cost nothing when off and
//! little when on:
//! - the client metrics (`promtail_sent_entries_total`,
//!   `promtail_request_duration_seconds`, ...) are counted by the pusher once
//!   per request or per batch, behind one relaxed load of the switch
//!   ([`get`] is `None` when off);
//! - the file metrics (`promtail_read_bytes_total`, `promtail_file_bytes_total`,
//!   `promtail_read_lines_total`, `promtail_files_active_total`,
//!   `promtail_targets_active_total`) are not counted at all: they are read
//!   from the files' live status ([`crate::status`]) when `/metrics` is
//!   scraped, as Promtail reads a tailer's position and size;
//! - `promtail_mutated_entries_total` (lines cut at `max_line_bytes`, which
//!   Promtail cuts per client) is the sources' own count of truncated lines,
//!   charged at scrape to each client the source ships to;
//! - `logentry_dropped_lines_total{reason}` (lines dropped by `drop`,
//!   `match` and `sampling` stages under their `drop_counter_reason`, and by
//!   `limit` stages as `ratelimit_drop_stage`) and
//!   `logentry_dropped_lines_by_label_total{label_name,label_value}` (a
//!   `limit` stage's `by_label_name` drops) are counted by the sources with
//!   their other drops, once per read block.
//!
//! Names, types and labels are those of Promtail 3.6 (its `client` and
//! `targets/file` packages): `read_bytes_total` and `file_bytes_total` are
//! gauges despite the suffix, as there; a request that got no answer has
//! `status_code="-1"`, as there.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock};

use prometheus::core::{Collector, Desc};
use prometheus::{proto, GaugeVec, HistogramOpts, HistogramVec, IntCounter, IntCounterVec, Opts};

use crate::status::report::FileState;

/// Promtail's reasons for a dropped or cut entry; each is shown at 0 from
/// the first batch of a tenant, as Promtail does.
pub const REASONS: [&str; 4] = ["ingester_error", "rate_limited", "stream_limited", "line_too_long"];

/// The `reason` of `logentry_dropped_lines_total` for a line over a
/// `limit` stage's rate (Promtail's `ratelimit_drop_stage`).
pub const LIMIT_REASON: &str = "ratelimit_drop_stage";

/// The most `(label_name, label_value)` series of
/// `logentry_dropped_lines_by_label_total`; one more forgets them all, as
/// Promtail forgets them when its limit stage's values reach
/// `max_distinct_labels` (at least 10,000): a label's values cannot grow
/// the series without bound.
const MAX_BY_LABEL: usize = 10_000;

/// Promtail's `promtail_*` metrics; see the module documentation.
pub struct PromtailMetrics {
    encoded_bytes: IntCounterVec,
    sent_bytes: IntCounterVec,
    sent_entries: IntCounterVec,
    dropped_bytes: IntCounterVec,
    dropped_entries: IntCounterVec,
    batch_retries: IntCounterVec,
    request_duration: HistogramVec,
    pub reload_success: IntCounter,
    pub reload_fail: IntCounter,
    stage_dropped: IntCounterVec,
    dropped_by_label: Mutex<BTreeMap<(String, String), u64>>,
    setup: Mutex<Setup>,
}

/// What the agent says about its plan, for the metrics read at scrape.
#[derive(Debug, Clone, Default)]
pub struct Setup {
    /// Per client: `host` (the push URL's host and port, Promtail's label)
    /// and its tenant ("" for none).
    pub clients: Vec<(String, String)>,
    /// Per source: its name and the indexes in `clients` it ships to.
    pub sources: Vec<(String, Vec<usize>)>,
    /// File targets that need no discovery: one per include glob of a
    /// plain file source (Promtail's static targets).
    pub static_targets: usize,
    /// The agent's status, which the file metrics are read from.
    pub status: Option<std::sync::Arc<crate::status::Status>>,
}

static ON: AtomicBool = AtomicBool::new(false);

fn counter_vec(name: &str, help: &str, labels: &[&str]) -> IntCounterVec {
    IntCounterVec::new(Opts::new(name, help), labels).expect("valid metric definition")
}

impl PromtailMetrics {
    fn new() -> Self {
        let (host, tenant, reason) = ("host", "tenant", "reason");
        Self {
            encoded_bytes: counter_vec(
                "promtail_encoded_bytes_total",
                "Number of bytes encoded and ready to send.",
                &[host],
            ),
            sent_bytes: counter_vec("promtail_sent_bytes_total", "Number of bytes sent.", &[host]),
            sent_entries: counter_vec(
                "promtail_sent_entries_total",
                "Number of log entries sent to the ingester.",
                &[host],
            ),
            dropped_bytes: counter_vec(
                "promtail_dropped_bytes_total",
                "Number of bytes dropped because failed to be sent to the ingester after all retries.",
                &[host, tenant, reason],
            ),
            dropped_entries: counter_vec(
                "promtail_dropped_entries_total",
                "Number of log entries dropped because failed to be sent to the ingester after all retries.",
                &[host, tenant, reason],
            ),
            batch_retries: counter_vec(
                "promtail_batch_retries_total",
                "Number of times batches has had to be retried.",
                &[host, tenant],
            ),
            request_duration: HistogramVec::new(
                HistogramOpts::new("promtail_request_duration_seconds", "Duration of send requests."),
                &["status_code", host],
            )
            .expect("valid metric definition"),
            reload_success: IntCounter::new("promtail_config_reload_success_total", "Number of reload success times.")
                .expect("valid metric definition"),
            reload_fail: IntCounter::new("promtail_config_reload_fail_total", "Number of reload fail times.")
                .expect("valid metric definition"),
            stage_dropped: counter_vec("logentry_dropped_lines_total", STAGE_DROPS_HELP, &[reason]),
            dropped_by_label: Mutex::new(BTreeMap::new()),
            setup: Mutex::new(Setup::default()),
        }
    }

    /// The process-wide set, whether it is on or not.
    pub fn all() -> &'static PromtailMetrics {
        static M: OnceLock<PromtailMetrics> = OnceLock::new();
        M.get_or_init(PromtailMetrics::new)
    }

    /// A batch of `bytes` (as sent: compressed) was encoded for `host`.
    pub fn encoded(&self, host: &str, bytes: usize) {
        self.encoded_bytes.with_label_values(&[host]).inc_by(bytes as u64);
    }

    /// A batch was delivered: `entries` lines, `bytes` on the wire.
    pub fn sent(&self, host: &str, entries: u64, bytes: usize) {
        self.sent_entries.with_label_values(&[host]).inc_by(entries);
        self.sent_bytes.with_label_values(&[host]).inc_by(bytes as u64);
    }

    /// `entries` lines (`bytes` of the batch on the wire) were not delivered, for `reason` (one of [`REASONS`]).
    pub fn dropped(&self, host: &str, tenant: &str, reason: &str, entries: u64, bytes: u64) {
        self.dropped_entries.with_label_values(&[host, tenant, reason]).inc_by(entries);
        self.dropped_bytes.with_label_values(&[host, tenant, reason]).inc_by(bytes);
    }

    /// `n` lines were dropped by a stage for `reason`.
    pub fn stage_dropped(&self, reason: &str, n: u64) {
        self.stage_dropped.with_label_values(&[reason]).inc_by(n);
    }

    /// `n` lines were over a `limit` stage's rate by label `name`, whose value was `value`.
    pub fn dropped_by_label(&self, name: &str, value: &str, n: u64) {
        let Ok(mut all) = self.dropped_by_label.lock() else { return };
        let key = (name.to_string(), value.to_string());
        if all.len() >= MAX_BY_LABEL && !all.contains_key(&key) {
            all.clear();
        }
        *all.entry(key).or_default() += n;
    }

    /// A batch is tried again.
    pub fn retried(&self, host: &str, tenant: &str) {
        self.batch_retries.with_label_values(&[host, tenant]).inc();
    }

    /// One request took `seconds`; `status` is the HTTP status, `None` when no answer came.
    pub fn request(&self, host: &str, status: Option<u16>, seconds: f64) {
        let code = status.map_or_else(|| "-1".to_string(), |s| s.to_string());
        self.request_duration.with_label_values(&[&code, host]).observe(seconds);
    }

    /// Takes the agent's plan (see [`Setup`]) and shows each client's
    /// series at 0, as Promtail does from a client's start.
    pub fn configure(&self, setup: Setup) {
        for (host, tenant) in &setup.clients {
            for c in [&self.encoded_bytes, &self.sent_bytes, &self.sent_entries] {
                c.with_label_values(&[host]);
            }
            self.batch_retries.with_label_values(&[host, tenant]);
            for reason in REASONS {
                self.dropped_entries.with_label_values(&[host, tenant, reason]);
                self.dropped_bytes.with_label_values(&[host, tenant, reason]);
            }
        }
        if let Ok(mut s) = self.setup.lock() {
            *s = setup;
        }
    }
}

/// The metrics to count into, or `None` when they are off (or on a thread
/// that reads for a second client, see [`super::mute_this_thread`]).
pub fn get() -> Option<&'static PromtailMetrics> {
    if !ON.load(Ordering::Relaxed) || super::thread_is_muted() {
        return None;
    }
    Some(PromtailMetrics::all())
}

/// Turns the metrics on or off (`server.promtail_metrics`; a reload may change it).
pub fn set_enabled(on: bool) {
    ON.store(on, Ordering::Relaxed);
}

/// The host and port of `url` as Promtail labels a client (`host`): the port
/// only when the URL names one.
pub fn host_of(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(u) => match (u.host_str(), u.port()) {
            (Some(h), Some(p)) => format!("{h}:{p}"),
            (Some(h), None) => h.to_string(),
            _ => String::new(),
        },
        Err(_) => String::new(),
    }
}

/// Serves the metrics on `/metrics` when they are on; registered once with
/// the agent's registry.
pub(super) struct Collect;

impl Collector for Collect {
    fn desc(&self) -> Vec<&Desc> {
        Vec::new()
    }

    fn collect(&self) -> Vec<proto::MetricFamily> {
        if !ON.load(Ordering::Relaxed) {
            return Vec::new();
        }
        let m = PromtailMetrics::all();
        let setup = m.setup.lock().map(|s| s.clone()).unwrap_or_default();
        let mut out = Vec::new();
        for c in [&m.encoded_bytes, &m.sent_bytes, &m.sent_entries, &m.dropped_bytes, &m.dropped_entries] {
            out.extend(c.collect());
        }
        out.extend(m.batch_retries.collect());
        out.extend(m.request_duration.collect());
        out.extend(m.reload_success.collect());
        out.extend(m.reload_fail.collect());
        out.extend(m.stage_dropped.collect());
        out.extend(by_label(m));
        out.extend(mutated(&setup));
        out.extend(files(&setup));
        out.extend(build_info());
        out
    }
}

/// Promtail's help text of both `logentry_dropped_lines*` families.
const STAGE_DROPS_HELP: &str = "A count of all log lines dropped as a result of a pipeline stage";

/// `logentry_dropped_lines_by_label_total`, from the counts kept (none
/// shown before the first drop, as in Promtail).
fn by_label(m: &PromtailMetrics) -> Vec<proto::MetricFamily> {
    let Ok(all) = m.dropped_by_label.lock() else { return Vec::new() };
    if all.is_empty() {
        return Vec::new();
    }
    let c = counter_vec("logentry_dropped_lines_by_label_total", STAGE_DROPS_HELP, &["label_name", "label_value"]);
    for ((name, value), n) in all.iter() {
        c.with_label_values(&[name, value]).inc_by(*n);
    }
    c.collect()
}

fn gauge_vec(name: &str, help: &str, labels: &[&str]) -> GaugeVec {
    GaugeVec::new(Opts::new(name, help), labels).expect("valid metric definition")
}

/// `promtail_mutated_{entries,bytes}_total`: lines cut at a source's
/// `max_line_bytes`, charged to each client it ships to (bytes are not
/// counted: a cut line's length is not kept).
fn mutated(setup: &Setup) -> Vec<proto::MetricFamily> {
    let entries = counter_vec(
        "promtail_mutated_entries_total",
        "The total number of log entries that have been mutated.",
        &["host", "tenant", "reason"],
    );
    let bytes = counter_vec(
        "promtail_mutated_bytes_total",
        "The total number of bytes that have been mutated.",
        &["host", "tenant", "reason"],
    );
    let served = super::Metrics::served();
    for (host, tenant) in &setup.clients {
        for reason in REASONS {
            entries.with_label_values(&[host, tenant, reason]);
            bytes.with_label_values(&[host, tenant, reason]);
        }
    }
    for (source, clients) in &setup.sources {
        let cut = served.lines_repaired.with_label_values(&[source, "truncated"]).get();
        for (host, tenant) in clients.iter().filter_map(|&i| setup.clients.get(i)) {
            entries.with_label_values(&[host, tenant, "line_too_long"]).inc_by(cut);
        }
    }
    let mut out = entries.collect();
    out.extend(bytes.collect());
    out
}

/// The file metrics, read from the files' status: per path the read offset
/// (`read_bytes_total`), the size (`file_bytes_total`, also for files the
/// globs match that cannot be opened: the mixin's `PromtailFileMissing`)
/// and the lines read; the files and targets followed.
fn files(setup: &Setup) -> Vec<proto::MetricFamily> {
    let read_bytes = gauge_vec("promtail_read_bytes_total", "Number of bytes read.", &["path"]);
    let file_bytes = gauge_vec("promtail_file_bytes_total", "Number of bytes total.", &["path"]);
    let read_lines = counter_vec("promtail_read_lines_total", "Number of lines read.", &["path"]);
    let status = setup.status.clone().unwrap_or_default();
    // Per path: (offset, size, followed at its path now) of the file
    // there, and the lines of every file read under it (a rotated file
    // still draining shares its path with the new one).
    let mut paths: BTreeMap<String, (u64, u64, bool, u64)> = BTreeMap::new();
    let mut targets: BTreeSet<std::sync::Arc<str>> = BTreeSet::new();
    for f in status.files() {
        let state = f.state();
        if matches!(state, FileState::Done | FileState::Skipped) {
            continue;
        }
        if let Some(t) = status.target_of(&f) {
            targets.insert(t);
        }
        let current = state != FileState::Draining;
        let e = paths.entry(f.path().to_string_lossy().into_owned()).or_default();
        if current || !e.2 {
            (e.0, e.1, e.2) = (f.offset(), f.size(), current);
        }
        e.3 += f.lines();
    }
    for (path, (offset, size, _, lines)) in &paths {
        read_bytes.with_label_values(&[path]).set(*offset as f64);
        file_bytes.with_label_values(&[path]).set(*size as f64);
        read_lines.with_label_values(&[path]).inc_by(*lines);
    }
    for path in status.unreadable_files() {
        if let Ok(meta) = std::fs::metadata(&path) {
            file_bytes.with_label_values(&[&path.to_string_lossy()]).set(meta.len() as f64);
        }
    }
    let gauge = |name: &str, help: &str, v: usize| {
        let g = prometheus::Gauge::new(name, help).expect("valid metric definition");
        g.set(v as f64);
        g.collect()
    };
    let mut out = read_bytes.collect();
    out.extend(file_bytes.collect());
    out.extend(read_lines.collect());
    out.extend(gauge("promtail_files_active_total", "Number of active files.", paths.len()));
    out.extend(gauge("promtail_targets_active_total", "Number of active total.", setup.static_targets + targets.len()));
    out
}

/// `promtail_build_info`, which the mixin's dashboard reads its cluster
/// and namespace choices from: Promtail's labels, with tailship's version.
fn build_info() -> Vec<proto::MetricFamily> {
    let g = gauge_vec(
        "promtail_build_info",
        "A metric with a constant '1' value labeled by version, revision, branch, goversion from which promtail \
         was built, and the goos and goarch for the build.",
        &["branch", "goarch", "goos", "goversion", "revision", "tags", "version"],
    );
    let arch = match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        "x86" => "386",
        other => other,
    };
    let version = env!("CARGO_PKG_VERSION");
    g.with_label_values(&["", arch, std::env::consts::OS, "", "", "tailship", version]).set(1.0);
    g.collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_is_promtails_url_host() {
        assert_eq!(host_of("http://loki:3100/loki/api/v1/push"), "loki:3100");
        assert_eq!(host_of("https://logs.example.com/loki/api/v1/push"), "logs.example.com");
        assert_eq!(host_of("http://[::1]:3100"), "[::1]:3100");
        assert_eq!(host_of("not a url"), "");
    }

    #[test]
    fn drops_by_label_are_forgotten_past_the_bound_as_promtail_forgets_them() {
        let m = PromtailMetrics::new();
        m.dropped_by_label("job", "app", 3);
        m.dropped_by_label("job", "app", 2);
        assert_eq!(m.dropped_by_label.lock().unwrap()[&("job".to_string(), "app".to_string())], 5);
        for i in 1..MAX_BY_LABEL {
            m.dropped_by_label("job", &i.to_string(), 1);
        }
        assert_eq!(m.dropped_by_label.lock().unwrap().len(), MAX_BY_LABEL);
        m.dropped_by_label("job", "one more", 1);
        let all = m.dropped_by_label.lock().unwrap();
        assert_eq!(all.len(), 1, "a value past the bound forgets the others");
        drop(all);
        let families = by_label(&m);
        assert_eq!(families[0].name(), "logentry_dropped_lines_by_label_total");
        assert!(by_label(&PromtailMetrics::new()).is_empty(), "nothing before the first drop");
    }
}
