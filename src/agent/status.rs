//! The status endpoints on `server.listen`: `/status.json` (the
//! [`Report`]) and `/status` (a self-contained page that polls it). Both
//! only read; any method but GET (and HEAD) gets 405.
//!
//! The layers below write into [`crate::status::Status`]; this adds what
//! only the agent knows (delivered offsets from the positions store, the
//! queue's limit, the plan's sources and rules) and samples the running
//! totals once a second for the rates, while someone watches: from the first
//! `/status.json` request until [`WATCHED_FOR`] after the last one. An agent
//! nobody looks at does no work for its status (no wake-up at all).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::http::{header, StatusCode};
use axum::response::IntoResponse;
use tokio_util::sync::CancellationToken;

use crate::client::push::Pusher;
use crate::metrics::{Health, Metrics};
use crate::plan::Plan;
use crate::positions::Positions;
use crate::status::report::{
    AlertReport, FileReport, FileState, PositionsReport, PushReport, QueueReport, Report, SourceReport,
};
use crate::status::{now_ms, Status};

/// The page: one file, no external scripts, styles or fonts.
const PAGE: &str = include_str!("status.html");

/// The page may run its own inline script and style and fetch from its own origin, nothing else.
const PAGE_POLICY: &str = "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; \
     connect-src 'self'; img-src data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/// The tick samples this long after the last `/status.json` request.
const WATCHED_FOR: Duration = Duration::from_secs(600);

/// The named total the tick keeps for the push rates.
const PUSHED: &str = "push";

/// The plan's sources (name, type) and alert rules (names).
type Names = (Vec<(String, String)>, Vec<String>);

/// What the report needs beyond [`Status`].
pub struct Board {
    started_ms: u64,
    positions: Arc<Positions>,
    health: Arc<Health>,
    pusher: Arc<Pusher>,
    queue_max: u64,
    positions_path: String,
    /// (name, type) of the sources, and the alert rules' names: the plan's (updated on reload).
    plan: Mutex<Names>,
    /// When `/status.json` was last asked for (Unix ms; 0: never).
    watched: std::sync::atomic::AtomicU64,
    /// Wakes the tick when someone starts watching.
    wake: tokio::sync::Notify,
}

impl Board {
    pub fn new(plan: &Plan, positions: Arc<Positions>, health: Arc<Health>, pusher: Arc<Pusher>) -> Arc<Self> {
        let board = Arc::new(Self {
            started_ms: now_ms(),
            positions,
            health,
            pusher,
            queue_max: plan.config.queue.max_bytes.get(),
            positions_path: plan.config.positions.path.display().to_string(),
            plan: Mutex::default(),
            watched: Default::default(),
            wake: tokio::sync::Notify::new(),
        });
        board.set_plan(plan);
        board
    }

    /// The sources and rules of `plan` (at start and after a reload).
    pub fn set_plan(&self, plan: &Plan) {
        let sources =
            plan.sources.iter().map(|s| (s.name.to_string(), s.spec.config.kind.as_str().to_string())).collect();
        let rules = plan.rules.iter().map(|r| r.name.clone()).collect();
        if let Ok(mut p) = self.plan.lock() {
            *p = (sources, rules);
        }
    }

    fn plan(&self) -> Names {
        self.plan.lock().map(|p| p.clone()).unwrap_or_default()
    }

    fn source_totals(name: &str) -> [u64; 2] {
        let m = Metrics::get();
        [m.lines_read.with_label_values(&[name]).get(), m.bytes_read.with_label_values(&[name]).get()]
    }

    fn push_totals() -> [u64; 2] {
        let m = Metrics::get();
        [m.lines_pushed.get(), m.bytes_pushed.with_label_values(&["raw"]).get()]
    }

    /// Someone asked for the status: the tick samples (again) from now on.
    fn watch(&self) {
        let now = now_ms();
        let last = self.watched.swap(now, std::sync::atomic::Ordering::Relaxed);
        if last == 0 || now.saturating_sub(last) >= WATCHED_FOR.as_millis() as u64 {
            self.wake.notify_one();
        }
    }

    fn is_watched(&self) -> bool {
        let last = self.watched.load(std::sync::atomic::Ordering::Relaxed);
        last > 0 && now_ms().saturating_sub(last) < WATCHED_FOR.as_millis() as u64
    }

    /// Samples the running totals once a second (for the rates) while
    /// someone watches, until `stop`.
    pub fn start_tick(self: &Arc<Self>, stop: CancellationToken) -> tokio::task::JoinHandle<()> {
        let board = self.clone();
        tokio::spawn(async move {
            let mut every = tokio::time::interval(Duration::from_secs(1));
            every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            // One sample at start: rates asked for before the next are averages since then.
            board.sample();
            loop {
                if !board.is_watched() {
                    tokio::select! {
                        _ = board.wake.notified() => every.reset_immediately(),
                        _ = stop.cancelled() => break,
                    }
                }
                tokio::select! {
                    _ = every.tick() => {}
                    _ = stop.cancelled() => break,
                }
                board.sample();
            }
        })
    }

    fn sample(&self) {
        let (sources, _) = self.plan();
        let mut named: Vec<(String, [u64; 2])> =
            sources.iter().map(|(name, _)| (format!("source:{name}"), Self::source_totals(name))).collect();
        named.push((PUSHED.to_string(), Self::push_totals()));
        Status::get().tick(&named);
    }

    /// The status now.
    pub fn report(&self) -> Report {
        let status = Status::get();
        let m = Metrics::get();
        let now = std::time::Instant::now();
        let (sources, rules) = self.plan();
        let files = status.files();
        let sources = sources
            .into_iter()
            .map(|(name, kind)| {
                let [lines_per_s, bytes_per_s] = status.rates(&format!("source:{name}"), Self::source_totals(&name));
                let files = files.iter().filter(|f| *f.source == *name).map(|f| self.file(f, now)).collect();
                SourceReport { name, kind, lines_per_s, bytes_per_s, files }
            })
            .collect();
        let (requests, failures, p50, p99, last_error) = status.push();
        let [lines_per_s, bytes_per_s] = status.rates(PUSHED, Self::push_totals());
        let alerts = rules
            .into_iter()
            .map(|rule| {
                let (open_groups, last_send) = status.alert(&rule);
                AlertReport { rule, open_groups, last_send }
            })
            .collect();
        Report {
            version: env!("CARGO_PKG_VERSION").to_string(),
            now_ms: now_ms(),
            started_ms: self.started_ms,
            not_ready: self.health.ready().err(),
            sources,
            queue: QueueReport {
                bytes_used: m.queue_bytes.get().max(0) as u64,
                bytes_max: self.queue_max,
                lines: m.queue_lines.get().max(0) as u64,
                batches_in_flight: status.batches_in_flight.load(std::sync::atomic::Ordering::Relaxed),
                oldest_unacknowledged_s: m.oldest_unacked_seconds.get().max(0) as u64,
            },
            push: PushReport {
                url: self.pusher.url(),
                requests,
                failures,
                retries: m.push_retries.get(),
                lines_total: m.lines_pushed.get(),
                lines_per_s,
                bytes_per_s,
                latency_p50_ms: p50,
                latency_p99_ms: p99,
                last_error: last_error.map(|mut e| {
                    e.message = crate::util::secrets::scrub(&e.message).into_owned();
                    e
                }),
            },
            positions: PositionsReport { path: self.positions_path.clone(), written_ms: status.positions_written_at() },
            alerts,
        }
    }

    fn file(&self, f: &crate::status::FileStatus, now: std::time::Instant) -> FileReport {
        use std::os::unix::fs::MetadataExt;
        let path = f.path();
        let state = f.state();
        let read_offset = f.offset();
        // A followed file's size is looked up now (it may have grown since the
        // source last looked, while the queue was full), if its path still names it.
        let mut size = f.size();
        if state == FileState::Following {
            if let Ok(meta) = std::fs::metadata(&path) {
                if (meta.dev(), meta.ino()) == (f.dev, f.ino) {
                    size = meta.len();
                }
            }
        }
        let delivered_offset = match self.positions.committed(f.key()) {
            Some(c) => c,
            None if state == FileState::Done => read_offset,
            None => 0,
        };
        let [lines_per_s, bytes_per_s] = f.rates(now);
        FileReport {
            path: path.display().to_string(),
            state,
            delivered_offset,
            read_offset,
            size,
            lag_bytes: size.saturating_sub(delivered_offset),
            lines_per_s,
            bytes_per_s,
        }
    }

    /// `/status.json` and `/status`.
    pub fn router(self: &Arc<Self>) -> axum::Router {
        use axum::routing::get;
        let board = self.clone();
        axum::Router::new()
            // `GET /` shows the status page; the relative Location keeps a
            // reverse proxy's path prefix (`/agent/` -> `/agent/status`).
            .route("/", get(|| async { (StatusCode::FOUND, [(header::LOCATION, "status")]) }))
            .route(
                "/status.json",
                get(move || {
                    let board = board.clone();
                    async move {
                        board.watch();
                        let report = board.report();
                        ([(header::CACHE_CONTROL, "no-store")], axum::Json(report)).into_response()
                    }
                }),
            )
            .route(
                "/status",
                get(|| async {
                    (
                        [
                            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
                            (header::CONTENT_SECURITY_POLICY, PAGE_POLICY),
                            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
                            (header::CACHE_CONTROL, "no-store"),
                        ],
                        PAGE,
                    )
                }),
            )
    }
}
