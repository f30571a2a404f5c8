//! Serving an axum router so that slow or idle clients cannot hold the
//! process: the agent's `/metrics` endpoint and `tailship receive` both go
//! through [`serve`].
//!
//! - A connection must send a whole request header within `header_timeout`,
//!   also between requests on a kept-alive connection (hyper's header read
//!   timeout, started whenever the connection waits for a request); then it
//!   is closed. That is the idle timeout as well.
//! - At most `max_connections` are open at once. A new client past it
//!   closes the connection silent longest (silent `min_idle` at least, and
//!   not in the middle of a request: see [`super::conns`]); when none is,
//!   it waits in the kernel's accept queue, holding no descriptor of ours,
//!   so a flood of connections cannot take the descriptors log files and
//!   positions need, and idle ones cannot shut out a health probe. The
//!   receivers give a new connection [`MIN_IDLE`] to say something (a TLS
//!   handshake, a syslog sender that connects before it has a message); the
//!   agent's own endpoint gives none, so its probes never wait on idle
//!   connections, however many.
//! - On shutdown the listener closes at once, idle connections close at once,
//!   and a request in progress gets `shutdown_grace` to finish; nothing waits
//!   longer on a client.

use std::sync::Arc;
use std::time::Duration;

use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use super::conns::{Activity, Conns, Tracked};

/// How long clients may take and how many may be connected.
#[derive(Debug, Clone, Copy)]
pub struct ServeLimits {
    pub header_timeout: Duration,
    pub max_connections: usize,
    /// How long a connection must have been silent to be closed for a new one.
    pub min_idle: Duration,
    pub shutdown_grace: Duration,
}

/// The wait after `accept` fails (out of descriptors, most likely) before
/// trying again, so the loop does not spin.
const ACCEPT_ERROR_PAUSE: Duration = Duration::from_millis(100);

/// Serves `router` on `listener` until `shutdown` fires, then returns once
/// every connection is closed (at most `shutdown_grace` later).
pub async fn serve(listener: TcpListener, router: axum::Router, limits: ServeLimits, shutdown: CancellationToken) {
    serve_counted(listener, router, limits, shutdown, ServeExtras::default()).await
}

/// What a receiver adds to [`serve`]: its connections counted, TLS.
#[derive(Clone, Default)]
pub struct ServeExtras {
    /// Kept at the number of connections open.
    pub open: Option<prometheus::IntGauge>,
    /// TLS on every connection (the handshake within `header_timeout`).
    pub tls: Option<tokio_rustls::TlsAcceptor>,
    /// Counts failed handshakes.
    pub tls_failed: Option<prometheus::IntCounter>,
    /// Counts idle connections closed to make room for a new one.
    pub evicted: Option<prometheus::IntCounter>,
}

/// How long a receiver's connection must have been silent to be closed for a new one.
pub const MIN_IDLE: Duration = Duration::from_secs(1);

/// [`serve`] with [`ServeExtras`].
pub async fn serve_counted(
    listener: TcpListener,
    router: axum::Router,
    limits: ServeLimits,
    shutdown: CancellationToken,
    extras: ServeExtras,
) {
    let conns = Conns::new(limits.max_connections, limits.min_idle);
    let mut connections = JoinSet::new();
    let mut accept_errors = 0u64;
    loop {
        let stream = tokio::select! {
            r = listener.accept() => match r {
                Ok((stream, _)) => stream,
                Err(e) => {
                    accept_errors += 1;
                    if accept_errors.is_power_of_two() {
                        tracing::warn!(error = %e, count = accept_errors, "cannot accept a connection");
                    }
                    tokio::select! {
                        _ = tokio::time::sleep(ACCEPT_ERROR_PAUSE) => continue,
                        _ = shutdown.cancelled() => break,
                    }
                }
            },
            _ = shutdown.cancelled() => break,
        };
        // At the limit, the connection silent longest makes room; while every
        // one is busy this one waits (and the accept queue behind it).
        let evicted = extras.evicted.clone();
        let Some(conn) = conns
            .admit_waiting(&shutdown, || {
                if let Some(c) = &evicted {
                    c.inc();
                }
            })
            .await
        else {
            break;
        };
        let service = TowerToHyperService::new(MarkBusy { inner: router.clone(), activity: conn.activity.clone() });
        let stop = shutdown.clone();
        let extras = extras.clone();
        connections.spawn(async move {
            let _open = extras.open.map(OpenConnection::new);
            let stream = Tracked::new(stream, conn.activity.clone());
            match extras.tls {
                None => serve_one(stream, service, limits, stop, &conn.close).await,
                Some(tls) => match tokio::time::timeout(limits.header_timeout, tls.accept(stream)).await {
                    Ok(Ok(stream)) => serve_one(stream, service, limits, stop, &conn.close).await,
                    failed => {
                        if let Ok(Err(e)) = failed {
                            tracing::debug!(error = %e, "TLS handshake failed");
                        }
                        if let Some(c) = extras.tls_failed {
                            c.inc();
                        }
                    }
                },
            }
            drop(conn);
        });
        // Reap finished connections as we go.
        while connections.try_join_next().is_some() {}
    }
    drop(listener);
    while connections.join_next().await.is_some() {}
}

/// A service that marks its connection busy while a request is handled
/// (a connection in the middle of a request is never closed for room).
#[derive(Clone)]
struct MarkBusy<S> {
    inner: S,
    activity: Arc<Activity>,
}

impl<S, B> tower_service::Service<axum::http::Request<B>> for MarkBusy<S>
where
    S: tower_service::Service<axum::http::Request<B>>,
    S::Future: Send + 'static,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = std::pin::Pin<Box<dyn std::future::Future<Output = Result<S::Response, S::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut std::task::Context<'_>) -> std::task::Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: axum::http::Request<B>) -> Self::Future {
        let busy = self.activity.busy();
        let fut = self.inner.call(req);
        Box::pin(async move {
            let r = fut.await;
            drop(busy);
            r
        })
    }
}

/// Serves the requests of one connection until it closes or `stop` fires
/// (then a request in progress gets `shutdown_grace`), or `close` fires
/// (it was closed to make room: it was idle).
async fn serve_one<S, T>(
    stream: S,
    service: TowerToHyperService<T>,
    limits: ServeLimits,
    stop: CancellationToken,
    close: &CancellationToken,
) where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
    T: tower_service::Service<axum::http::Request<hyper::body::Incoming>, Response = axum::response::Response>
        + Clone
        + Send
        + 'static,
    T::Future: Send + 'static,
    T::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder.timer(TokioTimer::new()).header_read_timeout(limits.header_timeout);
    let conn = builder.serve_connection(TokioIo::new(stream), service);
    tokio::pin!(conn);
    tokio::select! {
        r = conn.as_mut() => {
            if let Err(e) = r {
                tracing::debug!(error = %e, "connection ended");
            }
        }
        _ = stop.cancelled() => {
            conn.as_mut().graceful_shutdown();
            // Dropping the connection after the grace closes it.
            let _ = tokio::time::timeout(limits.shutdown_grace, conn).await;
        }
        _ = close.cancelled() => {
            conn.as_mut().graceful_shutdown();
            let _ = tokio::time::timeout(limits.shutdown_grace, conn).await;
        }
    }
}

/// One open connection counted in a gauge while it lives.
struct OpenConnection(prometheus::IntGauge);

impl OpenConnection {
    fn new(g: prometheus::IntGauge) -> Self {
        g.inc();
        Self(g)
    }
}

impl Drop for OpenConnection {
    fn drop(&mut self) {
        self.0.dec();
    }
}
