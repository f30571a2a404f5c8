//! The embedded log store served by `tailship receive`: a small, faithful
//! implementation of the log API (push, query_range, instant metric queries,
//! labels, label values) and of the formatted alert webhook, for local use,
//! tests, the demo and benchmarks. It is not a database: entries live in
//! memory, bounded by a count, or are only counted (`--store null`).
//!
//! Layout: [`crate::logql`] parses queries, [`crate::lokipush`] decodes and validates push
//! bodies, [`store`] keeps (or counts) entries and answers queries, `http`
//! maps all of that onto axum handlers, and `webhook` takes alerts.
//!
//! In-process use (the `demo` command, benchmarks):
//!
//! ```no_run
//! # async fn f() -> anyhow::Result<()> {
//! use tailship::receive::{EmbeddedStore, ReceiveOptions};
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
//! let store = EmbeddedStore::new(ReceiveOptions::default());
//! let shutdown = tokio_util::sync::CancellationToken::new();
//! tokio::spawn(store.clone().serve(listener, shutdown.clone()));
//! // ... push to it over HTTP, then read it back in-process:
//! let stats = store.stats();
//! let lines = store.query_range(None, r#"{job="demo"}"#, None, None, 10, false)?;
//! # Ok(()) }
//! ```

mod http;
mod metric;
mod reply;
pub mod store;
mod webhook;

use crate::logql;
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::util::Secret;

pub use store::{Labels, Sample, Stats, StoreKind, StreamResult, TENANT_LABEL};

/// The tenant everything goes to without `--multi-tenant` (Loki's name for it).
pub const SINGLE_TENANT: &str = "fake";
/// Default path prefix of the log API.
pub const DEFAULT_API_PREFIX: &str = "/logstore/api/v1";
/// Default bound of the memory store, in entries.
pub const DEFAULT_MAX_ENTRIES: usize = 1_000_000;
/// Default largest push body, after decompression.
pub const DEFAULT_MAX_BODY: usize = 16 << 20;
/// Default largest `limit` of a range query (Loki's `max_entries_limit_per_query`).
pub const DEFAULT_MAX_QUERY_LIMIT: usize = 5000;
/// Alerts kept per webhook key; older ones are dropped.
const MAX_ALERTS_PER_KEY: usize = 10_000;

/// Basic-auth credentials the server requires.
#[derive(Debug, Clone)]
pub struct BasicAuth {
    pub user: String,
    pub password: Secret,
}

/// Failures injected into push requests, so clients' retry paths can be tested.
#[derive(Debug, Clone)]
pub struct Faults {
    /// Every Nth push request fails (0: never).
    pub fail_every: u64,
    /// The first N push requests fail.
    pub fail_first: u64,
    /// Status of an injected failure.
    pub fail_status: u16,
    /// `Retry-After` seconds sent with an injected failure.
    pub retry_after: Option<u64>,
    /// Added before answering each push.
    pub latency: Duration,
    /// Added after storing each push, before answering: a sender that stops
    /// meanwhile never learns its lines were stored.
    pub answer_after_store: Duration,
}

impl Default for Faults {
    fn default() -> Self {
        Self {
            fail_every: 0,
            fail_first: 0,
            fail_status: 429,
            retry_after: None,
            latency: Duration::ZERO,
            answer_after_store: Duration::ZERO,
        }
    }
}

/// `--max-bytes`: line bytes the memory store holds.
pub const DEFAULT_MAX_BYTES: u64 = 256 << 20;
/// `--max-query-bytes`: line bytes of one query's answer.
pub const DEFAULT_MAX_QUERY_BYTES: usize = 64 << 20;
/// `--max-connections`: room for many agents and query clients, well under
/// the usual limit of 1,024 descriptors.
pub const DEFAULT_MAX_CONNECTIONS: usize = 512;
/// `--header-read-timeout`.
pub const DEFAULT_HEADER_TIMEOUT: Duration = Duration::from_secs(10);
/// A request in progress at shutdown gets this long to finish.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// Everything `tailship receive` can be told.
#[derive(Debug, Clone)]
pub struct ReceiveOptions {
    /// Path prefix of the log API endpoints.
    pub api_prefix: String,
    /// Require `X-Scope-OrgID` and keep data per tenant.
    pub multi_tenant: bool,
    /// Require basic auth on every endpoint but the webhook and `/stats`.
    pub basic_auth: Option<BasicAuth>,
    pub store: StoreKind,
    /// Bound of the memory store; the oldest entries are evicted past it.
    pub max_entries: usize,
    /// Bound of the memory store in line bytes; the oldest entries are evicted past it.
    pub max_bytes: u64,
    /// Largest answer of a range query, in line bytes (paging clients go on from its last entry).
    pub max_query_bytes: usize,
    /// Largest request body, checked after decompression too.
    pub max_body: usize,
    /// Largest `limit` a range query may ask for.
    pub max_query_limit: usize,
    pub faults: Faults,
    /// Webhook integration keys accepted; empty accepts any key.
    pub webhook_keys: Vec<Secret>,
    /// Print one line per alert received on stdout.
    pub print_alerts: bool,
    /// Most connections open at once; more wait in the kernel's queue.
    pub max_connections: usize,
    /// A client must send a whole request header within this (also the idle
    /// timeout of a kept-alive connection).
    pub header_timeout: Duration,
}

impl Default for ReceiveOptions {
    fn default() -> Self {
        Self {
            api_prefix: DEFAULT_API_PREFIX.to_string(),
            multi_tenant: false,
            basic_auth: None,
            store: StoreKind::Memory,
            max_entries: DEFAULT_MAX_ENTRIES,
            max_bytes: DEFAULT_MAX_BYTES,
            max_query_bytes: DEFAULT_MAX_QUERY_BYTES,
            max_body: DEFAULT_MAX_BODY,
            max_query_limit: DEFAULT_MAX_QUERY_LIMIT,
            faults: Faults::default(),
            webhook_keys: Vec::new(),
            print_alerts: true,
            max_connections: DEFAULT_MAX_CONNECTIONS,
            header_timeout: DEFAULT_HEADER_TIMEOUT,
        }
    }
}

/// State shared by every handler.
pub(crate) struct Shared {
    pub(crate) opts: ReceiveOptions,
    pub(crate) backend: store::Backend,
    pub(crate) counters: store::Counters,
    /// Push requests seen, for fault injection.
    pub(crate) push_seq: AtomicU64,
    /// Alerts per webhook key, oldest first.
    pub(crate) alerts: Mutex<HashMap<String, VecDeque<serde_json::Value>>>,
}

/// Why an in-process query failed.
#[derive(Debug, thiserror::Error)]
pub enum QueryError {
    #[error(transparent)]
    Parse(#[from] logql::ParseError),
    #[error("{0}")]
    Invalid(String),
}

/// A handle on a running (or about to run) store. Cloning is cheap and every
/// clone sees the same data.
#[derive(Clone)]
pub struct EmbeddedStore {
    shared: Arc<Shared>,
}

impl EmbeddedStore {
    pub fn new(opts: ReceiveOptions) -> Self {
        let backend = store::Backend::new(opts.store, opts.max_entries, opts.max_bytes);
        Self {
            shared: Arc::new(Shared {
                opts,
                backend,
                counters: store::Counters::default(),
                push_seq: AtomicU64::new(0),
                alerts: Mutex::new(HashMap::new()),
            }),
        }
    }

    /// The counters also served at `/stats`.
    pub fn stats(&self) -> Stats {
        self.shared.counters.snapshot()
    }

    /// Alerts received for one webhook key, oldest first.
    pub fn alerts(&self, key: &str) -> Vec<serde_json::Value> {
        webhook::stored(&self.shared, key)
    }

    /// Runs a range query in-process. `tenant` is `None` without multi-tenancy
    /// (or `a|b` for several); `start` defaults to `end` - 1h, `end` to now.
    pub fn query_range(
        &self,
        tenant: Option<&str>,
        query: &str,
        start: Option<i64>,
        end: Option<i64>,
        limit: usize,
        forward: bool,
    ) -> Result<Vec<StreamResult>, QueryError> {
        let selector = logql::parse_log_query(query)?;
        let tenants: Vec<String> = match tenant {
            Some(t) if self.shared.opts.multi_tenant => t.split('|').map(str::to_string).collect(),
            _ => vec![SINGLE_TENANT.to_string()],
        };
        let end = end.unwrap_or_else(|| crate::util::now_ns() as i64);
        let start = start.unwrap_or(end.saturating_sub(3_600_000_000_000));
        if end < start {
            return Err(QueryError::Invalid("end timestamp must not be before start time".into()));
        }
        let p = store::RangeParams {
            selector: &selector,
            start,
            end,
            limit,
            forward,
            max_bytes: self.shared.opts.max_query_bytes,
        };
        Ok(self.shared.backend.query_range(&tenants, tenants.len() > 1, p))
    }

    /// The axum router of every endpoint, for callers that serve it themselves.
    pub fn router(&self) -> axum::Router {
        http::router(self.shared.clone())
    }

    /// Serves until `shutdown` is cancelled, then finishes in-flight requests
    /// (for a few seconds at most; idle connections close at once).
    pub async fn serve(self, listener: tokio::net::TcpListener, shutdown: CancellationToken) -> anyhow::Result<()> {
        let addr = listener.local_addr()?;
        tracing::info!(%addr, store = ?self.shared.opts.store, multi_tenant = self.shared.opts.multi_tenant, "log store serving");
        let limits = crate::util::serve::ServeLimits {
            header_timeout: self.shared.opts.header_timeout,
            max_connections: self.shared.opts.max_connections,
            min_idle: crate::util::serve::MIN_IDLE,
            shutdown_grace: SHUTDOWN_GRACE,
        };
        crate::util::serve::serve(listener, self.router(), limits, shutdown).await;
        tracing::info!("log store stopped");
        Ok(())
    }
}

/// Serves a new store with `opts` on `listener` until `shutdown` is cancelled.
pub async fn serve(
    listener: tokio::net::TcpListener,
    opts: ReceiveOptions,
    shutdown: CancellationToken,
) -> anyhow::Result<()> {
    EmbeddedStore::new(opts).serve(listener, shutdown).await
}
