//! Pushing batches: the JSON body (each line escaped once, straight into the
//! body or the compressor, see `body`), gzip, the request with tenant and auth headers,
//! the client-side rate limit, and retries until delivered.

use std::collections::HashSet;
use std::num::NonZeroU32;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use governor::{Quota, RateLimiter};
use reqwest::header::{HeaderValue, CONTENT_ENCODING, CONTENT_TYPE};
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use super::auth::Auth;
use super::body::{encode_whole, Body};
pub use super::gzip::{gzip, gzip_body_with, gzip_parts, gzip_parts_with};
use super::http::{self, HttpError};
use super::lookup::{self, Found, Lookup};
pub use super::refusal::refuses_content;
use super::refusal::{misconfigured, partly_stored};
use super::retry::{self, RetryPolicy};
use crate::config::{ClientConfig, Compression};
use crate::metrics::{promtail, Health, Metrics};
use crate::pool::{self, Pool, Pooled};

use super::gzip::PIECE as GZIP_PIECE;

/// How a batch ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PushOutcome {
    /// 2xx: delivered.
    Delivered,
    /// The service refused the content (a 4xx that is not about the
    /// endpoint or credentials), or it could not be encoded: dropped on
    /// purpose, with the service's message.
    Rejected {
        status: Option<u16>,
        message: String,
        /// `(ignored, total)` when the service said it stored the rest (Loki
        /// ends a partial refusal with `total ignored: N out of M`).
        ignored: Option<(u64, u64)>,
    },
    /// `client.retry.max_retries` ran out: not delivered, with the last
    /// error and its HTTP status (none when no answer came).
    GaveUp { message: String, status: Option<u16> },
    /// Shutdown came before delivery: not acknowledged, will be sent again after a restart.
    Aborted,
}

/// Where pushes go and how they authenticate: replaced as a whole on reload
/// (SIGHUP), so a corrected URL or password applies to batches already
/// waiting for a retry.
struct Target {
    client: reqwest::Client,
    url: String,
    /// The URL's host and port: Promtail's `host` label.
    host: Arc<str>,
    auth: Auth,
    /// Looks a push up before it is sent again after its answer was lost.
    lookup: Option<Lookup>,
}

impl Target {
    fn of(c: &ClientConfig) -> Result<Self, HttpError> {
        let url = http::join_url(&c.url, c.prefix(), "push");
        Ok(Self {
            client: http::client_for(c, &c.url)?,
            host: Arc::from(promtail::host_of(&url).as_str()),
            url,
            auth: Auth::of(c)?,
            lookup: Lookup::new(c),
        })
    }
}

/// Lookups of one push the service may refuse with 429 or 5xx before it
/// is sent again as it was (see `lookup`); while the service cannot be
/// reached at all, the push waits.
const LOOKUP_TRIES: u32 = 3;

/// What the attempts of one push share: what the next attempt sends (less
/// than the first when a lookup found part of it stored, see `lookup`),
/// `unsure` after an attempt whose answer was lost.
struct Resend {
    wire: Mutex<Bytes>,
    unsure: AtomicBool,
    failed_lookups: AtomicU32,
    /// The last attempt's error was its lookup's, not a push's.
    lookup_failed: AtomicBool,
    tenant_header: Option<HeaderValue>,
}

/// Hears of every push request: whose, how long it took and, when it
/// failed, why (the agent's status page keeps them; the client layer
/// knows nothing of it beyond this).
pub trait PushObserver: Send + Sync {
    fn push_request(&self, client: &str, latency: Duration, error: Option<&str>);
}

/// Sends push requests for one service.
pub struct Pusher {
    /// The client's name (`client.name`): metrics, status and health say whose pushes.
    name: Arc<str>,
    target: std::sync::RwLock<Arc<Target>>,
    compression: Compression,
    compression_level: u32,
    retry: RetryPolicy,
    limiter: Option<Limiter>,
    health: Arc<Health>,
    observer: Option<Arc<dyn PushObserver>>,
    /// Statuses whose message was already logged (logged once per status).
    logged: Mutex<HashSet<u16>>,
    /// Where batch bodies and compressed bodies go back once sent.
    bodies: &'static Pool<u8>,
    gzipped: &'static Pool<u8>,
    /// Compressors kept for reuse (one per batch compressed at once), each
    /// with its buffer for the pieces of a body (see [`gzip_body_with`]).
    compressors: Arc<Mutex<Vec<Compressor>>>,
    /// Batches compressed at once: one per CPU. More would not finish sooner,
    /// but each would hold its uncompressed body meanwhile.
    compress_slots: Arc<tokio::sync::Semaphore>,
    /// Fired by a reload: batches waiting for a retry try again at once.
    reconfigured: tokio::sync::Notify,
    /// One-off commands (`tailship push`): a refusal no retry cures (401,
    /// 403, 404, ...) is final: it is kept here and this token stops the
    /// pipeline, instead of the daemon's retrying until a reload fixes it.
    stop_on_refusal: Option<CancellationToken>,
    final_refusal: Mutex<Option<String>>,
}

/// A compressor and its buffer for the pieces of a body.
type Compressor = (flate2::Compress, Vec<u8>);

type Limiter =
    (RateLimiter<governor::state::NotKeyed, governor::state::InMemoryState, governor::clock::DefaultClock>, u32);

impl Pusher {
    pub fn new(c: &ClientConfig, health: Arc<Health>) -> Result<Self, HttpError> {
        let limiter = NonZeroU32::new(c.rate_limit.bytes_per_second.get().min(u32::MAX as u64) as u32).map(|rate| {
            let burst =
                c.rate_limit.burst_bytes.get().max(c.rate_limit.bytes_per_second.get()).max(c.batch.max_bytes.get());
            let burst = NonZeroU32::new(burst.min(u32::MAX as u64) as u32).unwrap_or(rate);
            (RateLimiter::direct(Quota::per_second(rate).allow_burst(burst)), burst.get())
        });
        Ok(Self {
            name: Arc::from(c.name.as_str()),
            target: std::sync::RwLock::new(Arc::new(Target::of(c)?)),
            compression: c.compression,
            compression_level: c.compression_level,
            retry: RetryPolicy::of(c),
            limiter,
            health,
            observer: None,
            logged: Mutex::new(HashSet::new()),
            bodies: pool::bodies(c.batch.max_bytes.get() as usize, c.batch.max_in_flight),
            gzipped: pool::gzip_out(c.batch.max_bytes.get() as usize, c.batch.max_in_flight),
            compressors: Arc::default(),
            compress_slots: Arc::new(tokio::sync::Semaphore::new(
                std::thread::available_parallelism().map_or(2, |n| n.get()).clamp(1, c.batch.max_in_flight.max(1)),
            )),
            reconfigured: tokio::sync::Notify::new(),
            stop_on_refusal: None,
            final_refusal: Mutex::new(None),
        })
    }

    /// Tells `observer` of every push request.
    pub fn observed_by(mut self, observer: Arc<dyn PushObserver>) -> Self {
        self.observer = Some(observer);
        self
    }

    /// For a one-off command: a refusal that says the agent is misconfigured
    /// or not allowed ends the run (`stop` is cancelled) instead of being
    /// retried; [`Pusher::final_refusal`] then tells it.
    pub fn one_off(mut self, stop: CancellationToken) -> Self {
        self.stop_on_refusal = Some(stop);
        self
    }

    /// The service's refusal that ended a one-off run (scrubbed of secrets).
    pub fn final_refusal(&self) -> Option<String> {
        self.final_refusal.lock().ok().and_then(|r| r.clone())
    }

    /// Applies a reloaded `client` section's URL, API prefix, authentication
    /// and TLS settings to every push from now on, retries included.
    pub fn reconfigure(&self, c: &ClientConfig) -> Result<(), HttpError> {
        let t = Arc::new(Target::of(c)?);
        if let Ok(mut cur) = self.target.write() {
            *cur = t;
        }
        if let Ok(mut l) = self.logged.lock() {
            l.clear();
        }
        self.reconfigured.notify_waiters();
        Ok(())
    }

    fn target(&self) -> Arc<Target> {
        match self.target.read() {
            Ok(t) => t.clone(),
            Err(p) => p.into_inner().clone(),
        }
    }

    /// Waits for a turn to compress a batch (one per CPU), when compressing.
    /// Taking it before starting a batch's push keeps uncompressed bodies
    /// from piling up in pushes that wait to compress.
    pub async fn compress_permit(&self) -> Option<tokio::sync::OwnedSemaphorePermit> {
        match self.compression {
            Compression::Gzip => self.compress_slots.clone().acquire_owned().await.ok(),
            Compression::None => None,
        }
    }

    /// Encodes and sends one batch body until it is delivered, refused, or `abort` fires.
    /// Returns the outcome and the bytes sent on the wire.
    /// `body` is encoded as JSON when it is sent. `permit` is a turn to
    /// compress taken before (see [`Pusher::compress_permit`]); without one,
    /// the push waits for a turn itself. It is given back once the body is compressed.
    /// `slot`, the batch's push slot, is given back while a 429 is waited out
    /// and taken again for the next attempt (see [`super::slot`]).
    pub async fn push(
        &self,
        tenant: Option<&str>,
        body: Body,
        abort: &CancellationToken,
        permit: Option<tokio::sync::OwnedSemaphorePermit>,
        slot: Option<&super::slot::PushSlot>,
    ) -> (PushOutcome, usize) {
        let (wire, gzipped) = match self.encode(body, permit).await {
            Ok(encoded) => encoded,
            Err(message) => return (PushOutcome::Rejected { status: None, message, ignored: None }, 0),
        };
        let wire_len = wire.len();
        if let Some(p) = promtail::get() {
            p.encoded(&self.target().host, wire_len);
        }
        self.throttle(wire_len).await;
        let result = self.send_until_done(tenant, wire, gzipped, abort, slot).await;
        (self.outcome_of(result), wire_len)
    }

    /// The body as it goes on the wire, and whether it is gzipped; an error
    /// says why it could not be compressed.
    async fn encode(
        &self,
        body: Body,
        permit: Option<tokio::sync::OwnedSemaphorePermit>,
    ) -> Result<(Bytes, bool), String> {
        if self.compression == Compression::None {
            // One buffer of the body's exact length, each line copied into it once.
            let out = encode_whole(&*body, self.bodies);
            return Ok((Pooled::new(out, self.bodies).into_bytes(), false));
        }
        let (level, gzipped) = (self.compression_level, self.gzipped);
        let compressors = self.compressors.clone();
        // The semaphore lives as long as the pusher and is never closed.
        let _slot = match permit {
            Some(p) => Some(p),
            None => self.compress_slots.clone().acquire_owned().await.ok(),
        };
        let z = tokio::task::spawn_blocking(move || {
            let (mut z, mut scratch) = compressors.lock().ok().and_then(|mut c| c.pop()).unwrap_or_else(|| {
                (flate2::Compress::new(flate2::Compression::new(level), false), Vec::with_capacity(2 * GZIP_PIECE))
            });
            let out = gzip_body_with(&mut z, &*body, &mut scratch, gzipped.take());
            // The chunks' texts go back to their pool now.
            drop(body);
            // A piece grows past its size only for a line longer than it.
            scratch.shrink_to(2 * GZIP_PIECE);
            if let Ok(mut c) = compressors.lock() {
                c.push((z, scratch));
            }
            out
        })
        .await;
        match z.map_err(|e| e.to_string()).and_then(|r| r.map_err(|e| e.to_string())) {
            Ok(z) => Ok((Pooled::new(z, gzipped).into_bytes(), true)),
            Err(e) => Err(format!("compression failed: {e}")),
        }
    }

    /// Waits for the client-side rate limit to let `wire_len` bytes through.
    async fn throttle(&self, wire_len: usize) {
        let Some((limiter, burst)) = &self.limiter else { return };
        let mut left = wire_len as u64;
        while left > 0 {
            let n = left.min(*burst as u64) as u32;
            if let Some(n) = NonZeroU32::new(n) {
                let _ = limiter.until_n_ready(n).await;
            }
            left -= n as u64;
        }
    }

    /// True when an error is retried: a passing one, or (in the daemon) a
    /// misconfiguration a reload may fix.
    fn retriable(&self, e: &HttpError) -> bool {
        e.is_retriable() || (misconfigured(e) && self.stop_on_refusal.is_none())
    }

    /// Sends `wire` until it is delivered, refused, given up or aborted.
    async fn send_until_done(
        &self,
        tenant: Option<&str>,
        wire: Bytes,
        gzipped: bool,
        abort: &CancellationToken,
        slot: Option<&super::slot::PushSlot>,
    ) -> Result<(), HttpError> {
        let resend = Resend {
            wire: Mutex::new(wire),
            unsure: AtomicBool::new(false),
            failed_lookups: AtomicU32::new(0),
            lookup_failed: AtomicBool::new(false),
            tenant_header: tenant.and_then(|t| match HeaderValue::from_str(t) {
                Ok(h) => Some(h),
                Err(_) => {
                    // Every way a tenant comes in is checked against the service's rules first.
                    tracing::error!(client = %self.name, tenant = %t.escape_debug(), "a tenant that is not a header value; pushed without one");
                    None
                }
            }),
        };
        let m = Metrics::get();
        retry::with_retry_woken(
            self.retry,
            abort,
            Some(&self.reconfigured),
            |e| self.retriable(e),
            |err, wait| {
                m.push_retries.with_label_values(&[&self.name]).inc();
                if let Some(p) = promtail::get() {
                    p.retried(&self.target().host, tenant.unwrap_or(""));
                }
                let lookup = resend.lookup_failed.swap(false, Ordering::Relaxed);
                self.on_retry(err, wait, slot, tenant, lookup);
            },
            || self.attempt(&resend, gzipped, tenant, abort, slot),
        )
        .await
    }

    /// Before a retry: a 429, or a 401/403 of one tenant's batch, gives
    /// the push slot back meanwhile (see [`super::slot`]); a
    /// misconfiguration is logged once per status.
    fn on_retry(
        &self,
        err: &HttpError,
        wait: std::time::Duration,
        slot: Option<&super::slot::PushSlot>,
        tenant: Option<&str>,
        lookup: bool,
    ) {
        let status = err.status().map(|s| s.as_u16());
        if let Some(slot) = slot {
            if super::slot::gives_back(status, tenant.is_some()) {
                slot.release();
            }
        }
        if lookup {
            tracing::warn!(client = %self.name, error = %err, retry_in = ?wait,
                "cannot look up a push whose answer was lost (it is not sent again before it is); retrying the lookup");
            return;
        }
        if status.is_some_and(|s| (300..500).contains(&s) && s != 429) {
            // Misconfigured or not allowed: say so once per status; the lines wait on disk.
            let first = self.logged.lock().map(|mut l| l.insert(status.unwrap_or(0))).unwrap_or(true);
            if first {
                let hint = super::prefix::refusal_hint(status, &self.target().url);
                tracing::error!(error = %err, "the service refuses pushes: {hint} (SIGHUP reloads them); lines wait on disk and are retried");
            }
        } else {
            tracing::warn!(error = %err, retry_in = ?wait, "push failed; retrying");
        }
    }

    /// One attempt: the push slot, a lookup first when the last answer was
    /// lost, then the request.
    async fn attempt(
        &self,
        resend: &Resend,
        gzipped: bool,
        tenant: Option<&str>,
        abort: &CancellationToken,
        slot: Option<&super::slot::PushSlot>,
    ) -> Result<(), HttpError> {
        let target = self.target();
        if let Some(slot) = slot {
            if !slot.take().await {
                return Err(HttpError::Cancelled);
            }
        }
        if resend.unsure.swap(false, Ordering::Relaxed) {
            // The last attempt may have been stored: look it up first.
            let sent = resend.wire.lock().map(|w| w.clone()).unwrap_or_default();
            match self.look_up(&target, &sent, gzipped, tenant, abort).await {
                Ok(None) => {}
                Ok(Some(Found::All { .. })) => return Ok(()),
                Ok(Some(left)) => {
                    if let (Found::Some { body, .. }, Ok(mut w)) = (left, resend.wire.lock()) {
                        *w = Bytes::from(body);
                    }
                }
                // The service cannot be read just now: the next attempt
                // asks again. Unreachable, it cannot take the push
                // either; but a read path that answers with errors for
                // long (Loki's queriers down, say) must not hold
                // pushes back for ever.
                Err(e)
                    if e.status().is_none() || resend.failed_lookups.fetch_add(1, Ordering::Relaxed) < LOOKUP_TRIES =>
                {
                    resend.unsure.store(true, Ordering::Relaxed);
                    resend.lookup_failed.store(true, Ordering::Relaxed);
                    return Err(e);
                }
                Err(e) => {
                    tracing::warn!(client = %self.name, error = %e,
                        "cannot look up a push whose answer was lost; it is sent again as it was");
                }
            }
        }
        let body = resend.wire.lock().map(|w| w.clone()).unwrap_or_default();
        let r = self.send_once(&target, body, gzipped, tenant, resend.tenant_header.as_ref()).await;
        if r.as_ref().is_err_and(lookup::answer_lost) {
            resend.unsure.store(true, Ordering::Relaxed);
        }
        r
    }

    /// How the pushes of a batch ended, logged.
    fn outcome_of(&self, result: Result<(), HttpError>) -> PushOutcome {
        let one_off = self.stop_on_refusal.is_some();
        match result {
            Ok(()) => PushOutcome::Delivered,
            Err(HttpError::Cancelled) => PushOutcome::Aborted,
            Err(e) if one_off && misconfigured(&e) => {
                // Not the data's fault and nothing stored: the run ends,
                // saying why, and the lines count as not delivered.
                let why = super::prefix::with_404_hint(crate::util::secrets::scrub(&e.to_string()).into_owned(), &e);
                if let Ok(mut r) = self.final_refusal.lock() {
                    r.get_or_insert(why);
                }
                if let Some(stop) = &self.stop_on_refusal {
                    stop.cancel();
                }
                PushOutcome::Aborted
            }
            Err(e) if self.retriable(&e) => {
                let message = format!("gave up after {} retries: {e}", self.retry.max_retries);
                tracing::error!(error = %e, retries = self.retry.max_retries, "client.retry.max_retries ran out; the batch's lines are dropped and counted");
                PushOutcome::GaveUp { message, status: e.status().map(|s| s.as_u16()) }
            }
            Err(e) => {
                let status = e.status().map(|s| s.as_u16());
                let first = self.logged.lock().map(|mut l| l.insert(status.unwrap_or(0))).unwrap_or(true);
                if first {
                    tracing::error!(error = %e, "the service refused a batch; its lines are dropped and counted (further refusals with this status are counted, not logged)");
                }
                let message = e.to_string();
                PushOutcome::Rejected { status, ignored: partly_stored(&message), message }
            }
        }
    }

    /// One push request of `body`, with its metrics, status and health.
    async fn send_once(
        &self,
        target: &Target,
        body: Bytes,
        gzipped: bool,
        tenant_name: Option<&str>,
        tenant: Option<&HeaderValue>,
    ) -> Result<(), HttpError> {
        let m = Metrics::get();
        let body_len = body.len();
        let mut rb = target.client.post(&target.url).header(CONTENT_TYPE, "application/json").body(body);
        if gzipped {
            rb = rb.header(CONTENT_ENCODING, "gzip");
        }
        if let Some(t) = tenant {
            rb = rb.header("X-Scope-OrgID", t.clone());
        }
        let started = Instant::now();
        // A span per request, for `[tracing]` (log lines show no spans).
        let span = tracing::info_span!("push", client = %self.name, bytes = body_len, status = tracing::field::Empty);
        let r = async {
            match target.auth.apply(rb).await {
                Ok(rb) => http::send(rb, &target.url).await,
                Err(e) => Err(e),
            }
        }
        .instrument(span.clone())
        .await;
        target.auth.answered(&r);
        m.push_duration.with_label_values(&[&*self.name]).observe(started.elapsed().as_secs_f64());
        // A refusal of one tenant names it (on `/ready` and `/status`).
        let error = r.as_ref().err().map(|e| match (tenant_name, e.status().map(|s| s.as_u16())) {
            (Some(t), Some(401 | 403 | 429)) => format!("tenant {t}: {e}"),
            _ => e.to_string(),
        });
        if let Some(o) = &self.observer {
            o.push_request(&self.name, started.elapsed(), error.as_deref());
        }
        let label = match &r {
            Ok(resp) => resp.status().as_u16().to_string(),
            Err(HttpError::Status { status, .. }) => status.as_u16().to_string(),
            Err(_) => "error".to_string(),
        };
        span.record("status", label.as_str());
        if let Some(p) = promtail::get() {
            let status = match &r {
                Ok(resp) => Some(resp.status().as_u16()),
                Err(e) => e.status().map(|s| s.as_u16()),
            };
            p.request(&target.host, status, started.elapsed().as_secs_f64());
        }
        m.push_requests.with_label_values(&[&*self.name, label.as_str()]).inc();
        let failed_before = self.health.push_error_of(&self.name).is_some();
        self.health.push_result(&self.name, error);
        if failed_before && r.is_ok() {
            tracing::info!(client = %self.name, url = %crate::util::secrets::scrub(&target.url), "pushes succeed again");
        }
        r.map(|_| ())
    }

    /// Looks up `sent`, whose answer was lost: `None` to send it as it is
    /// (nothing found, or lookups off), else what was found, a smaller body
    /// ready for the wire. An error that may pass is the attempt's error.
    async fn look_up(
        &self,
        target: &Target,
        sent: &[u8],
        gzipped: bool,
        tenant: Option<&str>,
        abort: &CancellationToken,
    ) -> Result<Option<Found>, HttpError> {
        let Some(lookup) = target.lookup.as_ref().filter(|l| !l.is_off()) else { return Ok(None) };
        let found = lookup.push_body(sent, gzipped, tenant, abort).await?;
        let n = match &found {
            Found::Nothing => return Ok(None),
            Found::Some { found, .. } | Found::All { found } => *found,
        };
        Metrics::get().push_lines_found.with_label_values(&[&self.name]).inc_by(n);
        tracing::info!(client = %self.name, found = n, all = matches!(found, Found::All { .. }),
            "a push whose answer was lost was looked up: the lines found stored are not sent again");
        match found {
            Found::Some { body, found } if gzipped => match gzip(&body, self.compression_level) {
                Ok(z) => Ok(Some(Found::Some { body: z, found })),
                Err(_) => Ok(None),
            },
            other => Ok(Some(other)),
        }
    }

    /// The host and port pushes go to (Promtail's `host` label).
    pub fn host(&self) -> Arc<str> {
        self.target().host.clone()
    }

    /// The client's name (`client.name`).
    pub fn name(&self) -> &Arc<str> {
        &self.name
    }

    /// The push URL (without credentials).
    pub fn url(&self) -> String {
        http::redact_url(&self.target().url)
    }
}
