//! Network sources: `syslog`, `loki_push` and `otlp` receivers. What they
//! receive is written to the spool (see [`crate::spool`]) and only then
//! acknowledged to the sender; each client's [`reader::SpoolReader`] then
//! ships it like a file, with its own offsets.
//!
//! Receivers are started once by the agent ([`Receivers::start`]) and keep
//! running across reloads; the readers belong to each client's lane.

pub mod http;
pub mod metrics;
pub mod otlp;
pub mod proto;
pub mod push;
pub mod reader;
pub mod syslog;
pub mod tls;

use std::sync::Arc;

use anyhow::Context;
use tokio_util::sync::CancellationToken;

use crate::config::{SourceConfig, SourceType};
use crate::spool::Spools;

/// A network source to start: its name, config and the names of its clients.
#[derive(Debug, Clone)]
pub struct NetSource {
    pub name: Arc<str>,
    pub config: SourceConfig,
    pub clients: Vec<String>,
    /// The source's relabel rules (syslog: over the `__syslog_*` labels).
    pub relabel: Option<Arc<crate::relabel::Rules>>,
}

/// The running receivers.
pub struct Receivers {
    pub spools: Arc<Spools>,
    stop: CancellationToken,
    tasks: Vec<tokio::task::JoinHandle<()>>,
    /// Each source's listening address (`listen` with port 0 resolved).
    pub bound: Vec<(Arc<str>, std::net::SocketAddr)>,
}

impl Receivers {
    /// Opens each source's spool and starts its listener. Fails when a
    /// spool cannot be opened or an address cannot be bound.
    pub async fn start(spools: Arc<Spools>, sources: Vec<NetSource>) -> anyhow::Result<Receivers> {
        let stop = CancellationToken::new();
        let mut tasks = Vec::new();
        let mut bound = Vec::new();
        for s in sources {
            let spool = spools.source(&s.name, s.clients.clone()).with_context(|| format!("source {}", s.name))?;
            let addr: std::net::SocketAddr =
                s.config.listen_addr().parse().with_context(|| format!("source {}: listen", s.name))?;
            let r = s.config.receiver.clone().unwrap_or_default();
            let limits = crate::util::serve::ServeLimits {
                header_timeout: r.idle_timeout.get(),
                max_connections: r.max_connections,
                shutdown_grace: std::time::Duration::from_secs(1),
            };
            let at = match s.config.kind {
                SourceType::LokiPush => {
                    let rx = Arc::new(http::HttpReceiver::new(s.name.clone(), &s.config, spool.clone())?);
                    let listener = bind(&s.name, addr).await?;
                    let at = listener.local_addr()?;
                    tasks.push(tokio::spawn(crate::util::serve::serve(
                        listener,
                        push::router(rx),
                        limits,
                        stop.clone(),
                    )));
                    at
                }
                SourceType::Otlp => {
                    let http = http::HttpReceiver::new(s.name.clone(), &s.config, spool.clone())?;
                    let rx = Arc::new(otlp::OtlpReceiver { http, attribute_labels: r.attribute_labels.clone() });
                    let listener = bind(&s.name, addr).await?;
                    let at = listener.local_addr()?;
                    tasks.push(tokio::spawn(crate::util::serve::serve(
                        listener,
                        otlp::router(rx),
                        limits,
                        stop.clone(),
                    )));
                    at
                }
                SourceType::Syslog => {
                    let rx = Arc::new(syslog::SyslogReceiver::new(&s, spool.clone()));
                    if s.config.protocol == Some(crate::config::NetProtocol::Udp) {
                        let socket = tokio::net::UdpSocket::bind(addr)
                            .await
                            .with_context(|| format!("source {}: cannot listen on {addr} (udp)", s.name))?;
                        let at = socket.local_addr()?;
                        tasks.push(tokio::spawn(rx.serve_udp(socket, stop.clone())));
                        at
                    } else {
                        let tls = match &r.tls {
                            Some(t) => Some(tls::acceptor(t).with_context(|| format!("source {}", s.name))?),
                            None => None,
                        };
                        let listener = bind(&s.name, addr).await?;
                        let at = listener.local_addr()?;
                        tasks.push(tokio::spawn(rx.serve_tcp(listener, tls, stop.clone())));
                        at
                    }
                }
                other => anyhow::bail!("source {}: type {} is not a network source", s.name, other.as_str()),
            };
            tracing::info!(source = %s.name, listen = %at, spool = %spool.dir.display(), "receiving");
            tasks.push(spool_gauge(s.name.clone(), spool, stop.clone()));
            bound.push((s.name, at));
        }
        Ok(Receivers { spools, stop, tasks, bound })
    }

    /// The clients each source's segments wait for (after a reload).
    pub fn set_clients(&self, sources: &[NetSource]) {
        for s in sources {
            if let Some(spool) = self.spools.get(&s.name) {
                spool.set_clients(s.clients.clone());
            }
        }
    }

    /// Stops listening; what was acknowledged is in the spool.
    pub async fn stop(self) {
        self.stop.cancel();
        for t in self.tasks {
            let _ = t.await;
        }
    }
}

async fn bind(name: &str, addr: std::net::SocketAddr) -> anyhow::Result<tokio::net::TcpListener> {
    tokio::net::TcpListener::bind(addr).await.with_context(|| format!("source {name}: cannot listen on {addr}"))
}

/// Keeps `tailship_spool_bytes{source}` current.
fn spool_gauge(
    name: Arc<str>,
    spool: Arc<crate::spool::SourceSpool>,
    stop: CancellationToken,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let g = metrics::NetMetrics::get().spool_bytes.with_label_values(&[&name]);
        loop {
            g.set(spool.bytes() as i64);
            tokio::select! {
                _ = tokio::time::sleep(std::time::Duration::from_secs(1)) => {}
                _ = stop.cancelled() => break,
            }
        }
    })
}
