//! The status endpoints on `server.listen`: `/status.json` (the
//! [`Report`]) and `/status` (a self-contained page that polls it). Both
//! only read; any method but GET (and HEAD) gets 405.
//!
//! The layers below write into the agent's [`Status`]; this adds what
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
use crate::source::net::metrics::NetMetrics;
use crate::source::net::Listener;
use crate::spool::Spools;
use crate::status::report::{
    AlertReport, ClientReport, FileReport, FileState, ListenerReport, PositionsReport, PushReport, QueueReport, Report,
    SourceReport,
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

/// The plan's sources (name, type, first client) and alert rules (names).
type Names = (Vec<(String, String, String)>, Vec<String>);

/// A client as the board sees it.
struct LaneView {
    name: String,
    pusher: Arc<Pusher>,
    positions: Arc<Positions>,
}

/// What the report needs beyond [`Status`].
pub struct Board {
    started_ms: u64,
    health: Arc<Health>,
    status: Arc<Status>,
    /// The clients (updated on reload).
    lanes: Mutex<Vec<LaneView>>,
    queue_max: u64,
    positions_path: String,
    /// (name, type) of the sources, and the alert rules' names: the plan's (updated on reload).
    plan: Mutex<Names>,
    /// When `/status.json` was last asked for (Unix ms; 0: never).
    watched: std::sync::atomic::AtomicU64,
    /// Wakes the tick when someone starts watching.
    wake: tokio::sync::Notify,
    /// The network sources' listeners and their spools (updated on reload).
    listeners: Mutex<(Vec<Listener>, Option<Arc<Spools>>)>,
}

impl Board {
    pub fn new(plan: &Plan, health: Arc<Health>, status: Arc<Status>) -> Arc<Self> {
        let board = Arc::new(Self {
            started_ms: now_ms(),
            health,
            status,
            lanes: Mutex::default(),
            queue_max: plan.config.queue.max_bytes.get(),
            positions_path: crate::util::pathtext::text(&plan.config.positions.path).into_owned(),
            plan: Mutex::default(),
            watched: Default::default(),
            wake: tokio::sync::Notify::new(),
            listeners: Mutex::default(),
        });
        board.set_plan(plan);
        board
    }

    /// The clients (at start and after a reload).
    pub(super) fn set_lanes(&self, lanes: &[super::Lane]) {
        let views = lanes
            .iter()
            .map(|l| LaneView { name: l.name().to_string(), pusher: l.pusher.clone(), positions: l.positions.clone() })
            .collect();
        if let Ok(mut l) = self.lanes.lock() {
            *l = views;
        }
    }

    /// The network sources' listeners (at start and after a reload).
    pub(super) fn set_listeners(&self, listeners: Vec<Listener>, spools: Arc<Spools>) {
        if let Ok(mut l) = self.listeners.lock() {
            *l = (listeners, Some(spools));
        }
    }

    /// Each listener with its counts.
    fn listeners(&self) -> Vec<ListenerReport> {
        let Ok(l) = self.listeners.lock() else { return Vec::new() };
        let (listeners, spools) = &*l;
        let m = NetMetrics::get();
        listeners
            .iter()
            .map(|l| {
                let name: &str = &l.name;
                ListenerReport {
                    name: name.to_string(),
                    kind: l.kind.to_string(),
                    protocol: l.protocol.to_string(),
                    address: l.address.to_string(),
                    connections: m.connections.with_label_values(&[name]).get().max(0) as u64,
                    lines_received: m.received.with_label_values(&[name]).get(),
                    refused: m.refused_by_reason(name),
                    unparsed: m.unparsed.with_label_values(&[name]).get(),
                    spool_bytes: spools.as_ref().and_then(|s| s.get(name)).map_or(0, |s| s.bytes()),
                }
            })
            .collect()
    }

    /// The sources and rules of `plan` (at start and after a reload).
    pub fn set_plan(&self, plan: &Plan) {
        let sources = plan
            .sources
            .iter()
            .map(|s| {
                let first = plan.config.clients_of(&s.spec.config).next().map(|c| c.name.clone()).unwrap_or_default();
                (s.name.to_string(), s.spec.config.kind.as_str().to_string(), first)
            })
            .collect();
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

    fn push_totals(client: &str) -> [u64; 2] {
        let m = Metrics::get();
        [m.lines_pushed.with_label_values(&[client]).get(), m.bytes_pushed.with_label_values(&[client, "raw"]).get()]
    }

    fn client_names(&self) -> Vec<String> {
        self.lanes.lock().map(|l| l.iter().map(|v| v.name.clone()).collect()).unwrap_or_default()
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
            sources.iter().map(|(name, _, _)| (format!("source:{name}"), Self::source_totals(name))).collect();
        for client in self.client_names() {
            named.push((format!("{PUSHED}:{client}"), Self::push_totals(&client)));
        }
        self.status.tick(&named);
    }

    /// One client's queue and pushes (`None`: every client's together).
    fn client(&self, lanes: &[&LaneView]) -> (QueueReport, PushReport) {
        let status = &self.status;
        let m = Metrics::get();
        let (mut queue, mut push) = (QueueReport { bytes_max: 0, ..Default::default() }, PushReport::default());
        let mut urls = Vec::new();
        for l in lanes {
            let name = l.name.as_str();
            queue.bytes_used += m.queue_bytes.with_label_values(&[name]).get().max(0) as u64;
            queue.bytes_max += self.queue_max;
            queue.lines += m.queue_lines.with_label_values(&[name]).get().max(0) as u64;
            queue.oldest_unacknowledged_s = queue
                .oldest_unacknowledged_s
                .max(m.oldest_unacked_seconds.with_label_values(&[name]).get().max(0) as u64);
            push.retries += m.push_retries.with_label_values(&[name]).get();
            push.lines_total += m.lines_pushed.with_label_values(&[name]).get();
            let [lines_per_s, bytes_per_s] = status.rates(&format!("{PUSHED}:{name}"), Self::push_totals(name));
            push.lines_per_s += lines_per_s;
            push.bytes_per_s += bytes_per_s;
            urls.push(l.pusher.url());
        }
        let one = (lanes.len() == 1).then(|| lanes[0].name.as_str());
        let (requests, failures, p50, p99, last_error, in_flight) = status.push(one);
        queue.batches_in_flight = in_flight;
        push.url = urls.join(", ");
        push.requests = requests;
        push.failures = failures;
        push.latency_p50_ms = p50;
        push.latency_p99_ms = p99;
        push.last_error = last_error.map(|mut e| {
            e.message = crate::util::secrets::scrub(&e.message).into_owned();
            e
        });
        (queue, push)
    }

    /// The status now.
    pub fn report(&self) -> Report {
        let status = &self.status;
        let now = std::time::Instant::now();
        let (sources, rules) = self.plan();
        let files = status.files();
        let lanes = self.lanes.lock();
        let lanes: Vec<&LaneView> = lanes.as_ref().map(|l| l.iter().collect()).unwrap_or_default();
        let sources = sources
            .into_iter()
            .map(|(name, kind, first)| {
                let [lines_per_s, bytes_per_s] = status.rates(&format!("source:{name}"), Self::source_totals(&name));
                let positions = lanes.iter().find(|l| l.name == first).map(|l| &l.positions);
                let files = files.iter().filter(|f| *f.source == *name).map(|f| self.file(f, positions, now)).collect();
                SourceReport { name, kind, lines_per_s, bytes_per_s, files }
            })
            .collect();
        let alerts = rules
            .into_iter()
            .map(|rule| {
                let (open_groups, last_send) = status.alert(&rule);
                AlertReport { rule, open_groups, last_send }
            })
            .collect();
        let (queue, push) = self.client(&lanes);
        let clients = lanes
            .iter()
            .map(|l| {
                let (queue, push) = self.client(&[l]);
                ClientReport { name: l.name.clone(), not_ready: self.health.push_error_of(&l.name), queue, push }
            })
            .collect();
        Report {
            version: env!("CARGO_PKG_VERSION").to_string(),
            now_ms: now_ms(),
            started_ms: self.started_ms,
            not_ready: self.health.ready().err(),
            sources,
            queue,
            push,
            clients,
            positions: PositionsReport { path: self.positions_path.clone(), written_ms: status.positions_written_at() },
            alerts,
            listeners: self.listeners(),
        }
    }

    fn file(
        &self,
        f: &crate::status::FileStatus,
        positions: Option<&Arc<Positions>>,
        now: std::time::Instant,
    ) -> FileReport {
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
        let delivered_offset = match positions.and_then(|p| p.committed(f.key())) {
            Some(c) => c,
            None if state == FileState::Done => read_offset,
            None => 0,
        };
        let [lines_per_s, bytes_per_s] = f.rates(now);
        FileReport {
            target: self.status.target_of(f).map(|t| t.to_string()),
            path: crate::util::pathtext::text(&path).into_owned(),
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

/// The status page hears of each push request (the client layer knows it only as this).
impl crate::client::push::PushObserver for Status {
    fn push_request(&self, client: &str, latency: Duration, error: Option<&str>) {
        Status::push_request(self, client, latency, error.map(str::to_string));
    }
}
