//! The agent's own metrics (one registry for the process) and its HTTP
//! endpoint: `/metrics` in Prometheus text, `/healthz` and `/ready` (the
//! agent adds `/status` and `/status.json`). Every route is GET only.
//!
//! Hot paths count per chunk (`inc_by`), never per line.
//!
//! Metric names and help texts are in `defs.rs`, the `metrics` stages'
//! metrics in `custom.rs`, Promtail's names in `promtail.rs`. Not here: the
//! status page (`crate::status`).

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

use prometheus::{
    Encoder, HistogramOpts, HistogramVec, IntCounterVec, IntGauge, IntGaugeVec, Opts, Registry, TextEncoder,
};
use tokio_util::sync::CancellationToken;

pub mod custom;
mod defs;
pub mod promtail;

use defs::*;

thread_local! {
    static MUTED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Marks this thread as reading for a second client what another thread
/// reads for the first (each client reads its files itself, at its own
/// pace): what it counts in [`Metrics`] (and Promtail's metrics) goes to a
/// set nobody serves, so lines read, files and events are counted once.
/// (Its status is handed to it: one nobody serves.)
pub fn mute_this_thread() {
    MUTED.with(|m| m.set(true));
}

/// See [`mute_this_thread`].
pub fn thread_is_muted() -> bool {
    MUTED.with(|m| m.get())
}

/// Every metric the agent exports.
pub struct Metrics {
    pub registry: Registry,
    pub lines_read: IntCounterVec,
    pub bytes_read: IntCounterVec,
    pub lines_dropped: IntCounterVec,
    pub lines_repaired: IntCounterVec,
    pub lines_unparsed: IntCounterVec,
    pub lines_pushed: IntCounterVec,
    pub bytes_pushed: IntCounterVec,
    pub push_requests: IntCounterVec,
    pub push_retries: IntCounterVec,
    pub push_lines_found: IntCounterVec,
    pub lookups: IntCounterVec,
    pub push_duration: HistogramVec,
    pub queue_bytes: IntGaugeVec,
    pub queue_lines: IntGaugeVec,
    pub queue_max_bytes: IntGaugeVec,
    pub ready: IntGauge,
    pub files_open: IntGaugeVec,
    pub streams: IntGauge,
    pub dirs_polled: IntGaugeVec,
    pub files_unread_bytes: IntGaugeVec,
    pub file_events: IntCounterVec,
    pub files_recovered: IntCounterVec,
    pub lines_replayed: IntCounterVec,
    pub files_lost: IntCounterVec,
    pub files_skipped: IntCounterVec,
    pub journal_restarts: IntCounterVec,
    pub oldest_unacked_seconds: IntGaugeVec,
    pub positions_writes: IntCounterVec,
    pub alert_matches: IntCounterVec,
    pub alerts_sent: IntCounterVec,
    pub alert_delivery_failures: IntCounterVec,
    pub alert_updates_dropped: IntCounterVec,
    pub alert_groups_open: IntGaugeVec,
    pub alert_annotations: IntCounterVec,
}

fn counter_vec(r: &Registry, d: &Def) -> IntCounterVec {
    let c = IntCounterVec::new(Opts::new(d.name, d.help), d.labels).expect("valid metric definition");
    r.register(Box::new(c.clone())).expect("metric registered once");
    c
}

fn gauge(r: &Registry, d: &Def) -> IntGauge {
    let g = IntGauge::new(d.name, d.help).expect("valid metric definition");
    r.register(Box::new(g.clone())).expect("metric registered once");
    g
}

fn gauge_vec(r: &Registry, d: &Def) -> IntGaugeVec {
    let g = IntGaugeVec::new(Opts::new(d.name, d.help), d.labels).expect("valid metric definition");
    r.register(Box::new(g.clone())).expect("metric registered once");
    g
}

/// The metrics whose series are known only when scraped: those `metrics`
/// stages define, and Promtail's (one collector: a registry tells
/// collectors apart by their descriptions, and these have none).
struct Scraped;

impl prometheus::core::Collector for Scraped {
    fn desc(&self) -> Vec<&prometheus::core::Desc> {
        Vec::new()
    }

    fn collect(&self) -> Vec<prometheus::proto::MetricFamily> {
        let mut out = custom::Custom.collect();
        out.extend(promtail::Collect.collect());
        out
    }
}

/// The `process_*` metrics, with `process_cpu_seconds_total` to the clock
/// tick: the crate's own counter holds whole seconds (integer division of
/// clock ticks), so an agent that had used 0.2 s of CPU showed 0.
#[cfg(target_os = "linux")]
struct ProcessMetrics(prometheus::process_collector::ProcessCollector);

#[cfg(target_os = "linux")]
impl prometheus::core::Collector for ProcessMetrics {
    fn desc(&self) -> Vec<&prometheus::core::Desc> {
        self.0.desc()
    }

    fn collect(&self) -> Vec<prometheus::proto::MetricFamily> {
        let mut families = self.0.collect();
        if let Some(secs) = cpu_seconds() {
            for f in families.iter_mut().filter(|f| f.name() == "process_cpu_seconds_total") {
                for m in f.mut_metric() {
                    let mut c = prometheus::proto::Counter::default();
                    c.set_value(secs);
                    m.set_counter(c);
                }
            }
        }
        families
    }
}

/// User and system CPU time of this process, in seconds (from `/proc/self/stat`).
#[cfg(target_os = "linux")]
pub fn cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the command name (which may hold spaces and parentheses):
    // state is field 3, utime 14 and stime 15.
    let rest = stat.rsplit_once(')')?.1;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks: f64 = fields.get(11)?.parse::<f64>().ok()? + fields.get(12)?.parse::<f64>().ok()?;
    // SAFETY: sysconf only reads a constant.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    (hz > 0).then(|| ticks / hz as f64)
}

impl Metrics {
    fn new() -> Self {
        let r = Registry::new();
        let build = IntGaugeVec::new(Opts::new("tailship_build_info", "Build information; always 1."), &["version"])
            .expect("valid metric definition");
        build.with_label_values(&[env!("CARGO_PKG_VERSION")]).set(1);
        r.register(Box::new(build)).expect("metric registered once");
        r.register(Box::new(Scraped)).expect("metric registered once");
        #[cfg(target_os = "linux")]
        {
            let _ = r.register(Box::new(ProcessMetrics(prometheus::process_collector::ProcessCollector::for_self())));
        }
        let push_duration = HistogramVec::new(
            HistogramOpts::new(
                "tailship_push_duration_seconds",
                "Duration of one push request of a client, retries excluded.",
            )
            .buckets(vec![0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0]),
            &["client"],
        )
        .expect("valid metric definition");
        r.register(Box::new(push_duration.clone())).expect("metric registered once");
        Self {
            lines_read: counter_vec(&r, &LINES_READ),
            bytes_read: counter_vec(&r, &BYTES_READ),
            lines_dropped: counter_vec(&r, &LINES_DROPPED),
            lines_repaired: counter_vec(&r, &LINES_REPAIRED),
            lines_unparsed: counter_vec(&r, &LINES_UNPARSED),
            lines_pushed: counter_vec(&r, &LINES_PUSHED),
            bytes_pushed: counter_vec(&r, &BYTES_PUSHED),
            push_requests: counter_vec(&r, &PUSH_REQUESTS),
            push_retries: counter_vec(&r, &PUSH_RETRIES),
            push_lines_found: counter_vec(&r, &PUSH_LINES_FOUND),
            lookups: counter_vec(&r, &LOOKUPS),
            push_duration,
            queue_bytes: gauge_vec(&r, &QUEUE_BYTES),
            queue_lines: gauge_vec(&r, &QUEUE_LINES),
            queue_max_bytes: gauge_vec(&r, &QUEUE_MAX_BYTES),
            ready: gauge(&r, &READY),
            files_open: gauge_vec(&r, &FILES_OPEN),
            streams: gauge(&r, &STREAMS),
            dirs_polled: gauge_vec(&r, &DIRS_POLLED),
            files_unread_bytes: gauge_vec(&r, &FILES_UNREAD_BYTES),
            file_events: counter_vec(&r, &FILE_EVENTS),
            files_recovered: counter_vec(&r, &FILES_RECOVERED),
            lines_replayed: counter_vec(&r, &LINES_REPLAYED),
            files_skipped: counter_vec(&r, &FILES_SKIPPED),
            files_lost: counter_vec(&r, &FILES_LOST),
            journal_restarts: counter_vec(&r, &JOURNAL_RESTARTS),
            oldest_unacked_seconds: gauge_vec(&r, &OLDEST_UNACKED_SECONDS),
            positions_writes: counter_vec(&r, &POSITIONS_WRITES),
            alert_matches: counter_vec(&r, &ALERT_MATCHES),
            alerts_sent: counter_vec(&r, &ALERTS_SENT),
            alert_delivery_failures: counter_vec(&r, &ALERT_DELIVERY_FAILURES),
            alert_updates_dropped: counter_vec(&r, &ALERT_UPDATES_DROPPED),
            alert_groups_open: gauge_vec(&r, &ALERT_GROUPS_OPEN),
            alert_annotations: counter_vec(&r, &ALERT_ANNOTATIONS),
            registry: r,
        }
    }

    /// The process-wide metrics (on a thread marked by [`mute_this_thread`],
    /// a set nobody serves).
    pub fn get() -> &'static Metrics {
        static MUTED: OnceLock<Metrics> = OnceLock::new();
        if thread_is_muted() {
            return MUTED.get_or_init(Metrics::new);
        }
        Self::served()
    }

    /// The metrics `/metrics` serves, on any thread (for what is counted
    /// once whichever thread does it: streams made and freed).
    pub fn served() -> &'static Metrics {
        static M: OnceLock<Metrics> = OnceLock::new();
        M.get_or_init(Metrics::new)
    }

    /// Makes the series that alert rules and dashboards watch exist at 0
    /// before their first event (so `rate()` and `increase()` see the first
    /// one): per client `clients`, per source `sources`, and the positions
    /// writes. `queue_max` is each client's queue budget in bytes.
    pub fn prepare(&self, clients: &[&str], sources: &[&str], queue_max: u64) {
        for c in clients {
            self.lines_pushed.with_label_values(&[c]);
            self.push_retries.with_label_values(&[c]);
            self.lookups.with_label_values(&[c]);
            self.push_duration.with_label_values(&[c]);
            for kind in ["raw", "wire"] {
                self.bytes_pushed.with_label_values(&[c, kind]);
            }
            self.queue_bytes.with_label_values(&[c]);
            self.queue_lines.with_label_values(&[c]);
            self.oldest_unacked_seconds.with_label_values(&[c]);
            self.queue_max_bytes.with_label_values(&[c]).set(i64::try_from(queue_max).unwrap_or(i64::MAX));
        }
        for s in sources {
            self.lines_read.with_label_values(&[s]);
            self.bytes_read.with_label_values(&[s]);
            for reason in ["rejected", "retries_exhausted"] {
                self.lines_dropped.with_label_values(&[s, reason]);
            }
            for reason in ["gone", "truncated"] {
                self.files_lost.with_label_values(&[s, reason]);
            }
            self.files_skipped.with_label_values(&[s, "ignore_older"]);
            for reason in ["invalid_utf8", "truncated"] {
                self.lines_repaired.with_label_values(&[s, reason]);
            }
            for event in ["opened", "rotated", "truncated", "deleted", "closed", "unreadable"] {
                self.file_events.with_label_values(&[s, event]);
            }
            for how in ["rotated", "copy", "unseen"] {
                self.files_recovered.with_label_values(&[s, how]);
            }
            for outcome in ["skipped", "resent", "reconciled"] {
                self.lines_replayed.with_label_values(&[s, outcome]);
            }
            self.files_open.with_label_values(&[s]);
            self.files_unread_bytes.with_label_values(&[s]);
            self.dirs_polled.with_label_values(&[s]);
        }
        for outcome in ["ok", "error"] {
            self.positions_writes.with_label_values(&[outcome]);
        }
    }

    /// The registry in Prometheus text format.
    pub fn render(&self) -> String {
        let mut buf = Vec::new();
        let _ = TextEncoder::new().encode(&self.registry.gather(), &mut buf);
        String::from_utf8_lossy(&buf).into_owned()
    }
}

/// What `/ready` reports: sources started, and the last push succeeded (or none was due).
#[derive(Debug, Default)]
pub struct Health {
    pub sources_started: AtomicBool,
    /// Per client: why its last push attempt failed (status and URL); absent after a success.
    last_push_error: std::sync::Mutex<std::collections::BTreeMap<String, String>>,
    /// The most recent failure of any client, kept after later successes.
    last_failure: std::sync::Mutex<Option<String>>,
    /// Why the positions file could not be written the last time, or `None`.
    positions_error: std::sync::Mutex<Option<String>>,
    /// The agent's status, whose sources that cannot read are not ready (none: no sources reported).
    status: Option<Arc<crate::status::Status>>,
}

impl Health {
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    /// The daemon's health: also not ready while a source of `status` cannot read.
    pub fn with_sources_of(status: Arc<crate::status::Status>) -> Arc<Self> {
        Arc::new(Self { status: Some(status), ..Self::default() })
    }

    /// Records the outcome of a push attempt of `client`: `None` for success, else the error.
    pub fn push_result(&self, client: &str, error: Option<String>) {
        if let (Some(err), Ok(mut f)) = (&error, self.last_failure.lock()) {
            *f = Some(err.clone());
        }
        if let Ok(mut e) = self.last_push_error.lock() {
            match error {
                Some(err) => {
                    e.insert(client.to_string(), err);
                }
                None => {
                    e.remove(client);
                }
            }
        }
    }

    /// The most recent push failure (scrubbed), even if pushes succeeded since.
    pub fn last_push_failure(&self) -> Option<String> {
        self.last_failure.lock().ok().and_then(|e| e.clone()).map(|e| crate::util::secrets::scrub(&e).into_owned())
    }

    /// Why the last push attempt of any client failed (scrubbed of secrets), or `None`.
    pub fn last_push_error(&self) -> Option<String> {
        let e = self.last_push_error.lock().ok()?;
        e.values().next().map(|e| crate::util::secrets::scrub(e).into_owned())
    }

    /// Why `client`'s last push attempt failed (scrubbed of secrets), or `None` after a success.
    pub fn push_error_of(&self, client: &str) -> Option<String> {
        let e = self.last_push_error.lock().ok()?;
        e.get(client).map(|e| crate::util::secrets::scrub(e).into_owned())
    }

    /// Records whether the positions file was written: `None` after a write, else why not.
    pub fn positions_result(&self, error: Option<String>) {
        if let Ok(mut e) = self.positions_error.lock() {
            *e = error;
        }
    }

    /// Ready once the sources started, while the positions file can be
    /// written and every client's last push
    /// succeeded; otherwise why not, naming each failing client (the one
    /// client of the `[client]` form is not named).
    pub fn ready(&self) -> Result<(), String> {
        if !self.sources_started.load(Ordering::Relaxed) {
            return Err("sources are starting".into());
        }
        let mut failing: Vec<String> = self
            .status
            .iter()
            .flat_map(|s| s.source_problems())
            .map(|(source, why)| format!("source {source}: {why}"))
            .collect();
        failing.extend(match self.positions_error.lock() {
            Ok(e) => e.iter().map(|e| format!("{e}; retrying")).collect::<Vec<_>>(),
            Err(_) => Vec::new(),
        });
        failing.extend(match self.last_push_error.lock() {
            Ok(e) => e
                .iter()
                .map(|(client, err)| {
                    let why = format!("the last push failed ({}); retrying", crate::util::secrets::scrub(err));
                    if client == crate::util::DEFAULT_CLIENT {
                        why
                    } else {
                        format!("client {client}: {why}")
                    }
                })
                .collect::<Vec<_>>(),
            Err(_) => Vec::new(),
        });
        if failing.is_empty() {
            Ok(())
        } else {
            Err(failing.join("; "))
        }
    }
}

/// Binds the endpoint now (so a bad address fails at start) and serves it,
/// with the routes of `extra` (the agent's status), until `shutdown`.
pub async fn serve(
    addr: SocketAddr,
    limits: crate::util::serve::ServeLimits,
    health: Arc<Health>,
    extra: axum::Router,
    shutdown: CancellationToken,
) -> std::io::Result<tokio::task::JoinHandle<()>> {
    use axum::http::StatusCode;
    use axum::routing::get;
    let listener = tokio::net::TcpListener::bind(addr).await?;
    let h = health.clone();
    let scraped = health.clone();
    let app = axum::Router::new()
        .route(
            "/metrics",
            get(move || {
                let health = scraped.clone();
                async move {
                    let m = Metrics::get();
                    m.ready.set(i64::from(health.ready().is_ok()));
                    ([(axum::http::header::CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8")], m.render())
                }
            }),
        )
        .route("/healthz", get(|| async { "ok\n" }))
        .route(
            "/ready",
            get(move || {
                let h = h.clone();
                async move {
                    match h.ready() {
                        Ok(()) => (StatusCode::OK, "ready\n".to_string()),
                        Err(why) => (StatusCode::SERVICE_UNAVAILABLE, format!("not ready: {why}\n")),
                    }
                }
            }),
        )
        .merge(extra);
    tracing::info!(%addr, "metrics endpoint listening");
    Ok(tokio::spawn(crate::util::serve::serve(listener, app, limits, shutdown)))
}
