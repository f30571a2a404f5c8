//! Network sources: `syslog`, `loki_push`, `otlp`, `gelf`, `heroku_drain`
//! and `gcplog` receivers, the `cloudflare` puller (a `gcplog` pull
//! subscription pulls too, instead of listening), and the `kafka` and
//! `azure_event_hubs` consumers (which read from brokers). What they receive is written to the spool (see [`crate::spool`]) and only then
//! acknowledged to the sender; each client's [`reader::SpoolReader`] then
//! ships it like a file, with its own offsets.
//!
//! Receivers are started by the agent ([`Receivers::start`]); a reload
//! ([`Receivers::reload`]) restarts those whose settings changed and keeps
//! the others running. The readers belong to each client's lane.

pub mod budget;
pub mod cloudflare;
pub mod gcplog;
pub mod gelf;
pub mod heroku;
pub mod http;
pub mod kafka;
pub mod metrics;
pub mod otlp;
pub mod push;
pub mod reader;
pub mod receiver;
mod streams;
pub mod syslog;
pub mod tls;

use std::sync::Arc;

use anyhow::Context;
use tokio_util::sync::CancellationToken;

use crate::config::{ReceiverConfig, SourceConfig, SourceType};
use crate::spool::Spools;

/// A network source to start: its name, config and the names of its clients.
#[derive(Debug, Clone)]
pub struct NetSource {
    pub name: Arc<str>,
    pub config: SourceConfig,
    pub clients: Vec<String>,
    /// The source's relabel rules (over the `__syslog_*`, `__gelf_*` or `__heroku_drain_*` labels, or a
    /// pushed stream's).
    pub relabel: Option<Arc<crate::relabel::Rules>>,
}

/// What `/status` shows of a listener besides its counts.
#[derive(Debug, Clone)]
pub struct Listener {
    pub name: Arc<str>,
    /// `syslog`, `loki_push`, `otlp`, `gelf`, `heroku_drain`, `kafka` or `azure_event_hubs`.
    pub kind: &'static str,
    /// `tcp`, `udp`, `tls` (syslog), `http`, `https` or `kafka` (a consumer: it listens nowhere).
    pub protocol: &'static str,
    /// The address it listens on (`listen` with port 0 resolved).
    pub address: std::net::SocketAddr,
}

/// One source's running receiver.
struct Running {
    source: NetSource,
    /// What a reload compares: a change restarts the receiver.
    key: serde_json::Value,
    /// None for a source that listens nowhere (a pulled subscription).
    listener: Option<Listener>,
    stop: CancellationToken,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Running {
    async fn stop(self) -> NetSource {
        self.stop.cancel();
        for t in self.tasks {
            let _ = t.await;
        }
        self.source
    }
}

/// The running receivers.
pub struct Receivers {
    pub spools: Arc<Spools>,
    running: Vec<Running>,
}

/// The settings of `s` its receiver uses (the contents of its secret files
/// too): when they change, a reload restarts it.
fn key(s: &NetSource) -> serde_json::Value {
    let c = &s.config;
    let r = c.receiver.clone().unwrap_or_default();
    let secret = |p: Option<&std::path::Path>| {
        p.and_then(|p| crate::util::read_secret_file(p).ok()).map(|s| s.expose().to_string())
    };
    let secrets = (
        secret(r.basic_auth.as_ref().map(|b| b.password_file.as_path())),
        secret(r.bearer_token_file.as_deref()),
        r.tls.as_ref().map(|t| (std::fs::read(&t.cert_file).ok(), std::fs::read(&t.key_file).ok())),
    );
    let kafka = (
        &c.kafka,
        c.kafka.as_ref().and_then(|k| k.authentication.sasl.password.as_ref()).map(|p| p.expose().to_string()),
        secret(c.kafka.as_ref().and_then(|k| k.authentication.sasl.password_file.as_deref())),
        &c.azure_event_hubs,
        c.azure_event_hubs.as_ref().and_then(|a| a.connection_string.as_ref()).map(|p| p.expose().to_string()),
        secret(c.azure_event_hubs.as_ref().and_then(|a| a.connection_string_file.as_deref())),
    );
    let parts = (
        c.kind,
        c.listen_addr(),
        c.protocol,
        &r,
        &c.labels,
        &c.tenant_id,
        &c.relabel,
        secrets,
        &c.gcplog,
        &c.cloudflare,
        kafka,
    );
    serde_json::to_value(parts).unwrap_or_default()
}

impl Receivers {
    /// Opens each source's spool and starts its listener. Fails when a
    /// spool cannot be opened or an address cannot be bound.
    pub async fn start(spools: Arc<Spools>, sources: Vec<NetSource>) -> anyhow::Result<Receivers> {
        let mut r = Receivers { spools, running: Vec::new() };
        for s in sources {
            let one = start_one(&r.spools, s).await?;
            r.running.push(one);
        }
        Ok(r)
    }

    /// Applies a reload: receivers whose settings changed are stopped and
    /// started again with the new ones (one that cannot start is logged and
    /// its old settings start again); removed ones stop; added ones start;
    /// unchanged ones keep running, connections and all. What a stopped
    /// receiver acknowledged is in the spool.
    pub async fn reload(&mut self, sources: Vec<NetSource>) {
        self.set_clients(&sources);
        let mut kept = Vec::new();
        let mut old: Vec<Running> = std::mem::take(&mut self.running);
        for s in sources {
            let k = key(&s);
            if let Some(i) = old.iter().position(|r| r.source.name == s.name && r.key == k) {
                let mut r = old.swap_remove(i);
                r.source = s;
                kept.push(r);
                continue;
            }
            // The old receiver goes first: the new one may listen on its address.
            let previous = match old.iter().position(|r| r.source.name == s.name) {
                Some(i) => Some(old.swap_remove(i).stop().await),
                None => None,
            };
            let name = s.name.clone();
            match start_one(&self.spools, s).await {
                Ok(r) => {
                    let what =
                        if previous.is_some() { "receiver restarted with new settings" } else { "receiver added" };
                    tracing::info!(source = %name, listen = ?r.listener.as_ref().map(|l| l.address), "{what}");
                    kept.push(r);
                }
                Err(e) => {
                    tracing::error!(source = %name, error = format!("{e:#}"), "reload could not start the receiver");
                    if let Some(p) = previous {
                        match start_one(&self.spools, p).await {
                            Ok(r) => {
                                tracing::warn!(source = %name, "receiver kept with its previous settings");
                                kept.push(r);
                            }
                            Err(e) => tracing::error!(source = %name, error = format!("{e:#}"), "receiver stopped"),
                        }
                    }
                }
            }
        }
        for r in old {
            let name = r.source.name.clone();
            r.stop().await;
            tracing::info!(source = %name, "receiver removed by the reload");
        }
        self.running = kept;
    }

    /// The clients each source's segments wait for, and its `source.json` (after a reload).
    pub fn set_clients(&self, sources: &[NetSource]) {
        for s in sources {
            if let Some(spool) = self.spools.get(&s.name) {
                spool.set_clients(s.clients.clone());
                spool.describe(&about(s));
            }
        }
    }

    /// The listeners running.
    pub fn listeners(&self) -> Vec<Listener> {
        self.running.iter().filter_map(|r| r.listener.clone()).collect()
    }

    /// Stops listening; what was acknowledged is in the spool.
    pub async fn stop(self) {
        for r in self.running {
            r.stop().await;
        }
    }
}

/// Opens `s`'s spool and starts its listener.
async fn start_one(spools: &Spools, s: NetSource) -> anyhow::Result<Running> {
    let stop = CancellationToken::new();
    let mut tasks = Vec::new();
    let spool = spools.source(&s.name, s.clients.clone()).with_context(|| format!("source {}", s.name))?;
    spool.describe(&about(&s));
    let r = s.config.receiver.clone().unwrap_or_default();
    let limits = serve_limits(&r);
    let tls = match &r.tls {
        Some(t) => Some(tls::acceptor(t).with_context(|| format!("source {}", s.name))?),
        None => None,
    };
    let extras = serve_extras(&s.name, &tls);
    let (at, protocol) = match http_router(&s, &r, &spool)? {
        Some(router) => {
            let at = serve_http(&s.name, listen_addr(&s)?, router, limits, &stop, extras, &mut tasks).await?;
            (Some(at), if tls.is_some() { "https" } else { "http" })
        }
        None => start_other(&s, &r, &spool, tls, &stop, &mut tasks).await?,
    };
    match at {
        Some(at) => tracing::info!(source = %s.name, listen = %at, spool = %spool.dir.display(), "receiving"),
        None => tracing::info!(source = %s.name, spool = %spool.dir.display(), "receiving"),
    }
    tasks.push(spool_gauge(s.name.clone(), spool, stop.clone()));
    let listener = at.map(|address| Listener { name: s.name.clone(), kind: s.config.kind.as_str(), protocol, address });
    Ok(Running { key: key(&s), source: s, listener, stop, tasks })
}

/// `s`'s `listen` address.
fn listen_addr(s: &NetSource) -> anyhow::Result<std::net::SocketAddr> {
    s.config.listen_addr().parse().with_context(|| format!("source {}: listen", s.name))
}

/// An HTTP receiver's bounds from its `receiver` table.
fn serve_limits(r: &ReceiverConfig) -> crate::util::serve::ServeLimits {
    crate::util::serve::ServeLimits {
        // A request's header must arrive within request_timeout (its body too:
        // see http::HttpReceiver::read); an idle kept-alive connection goes then too.
        header_timeout: r.idle_timeout.get().min(r.request_timeout.get()),
        max_connections: r.max_connections,
        min_idle: crate::util::serve::MIN_IDLE,
        shutdown_grace: std::time::Duration::from_secs(1),
    }
}

/// An HTTP receiver's TLS and the metrics its server keeps for source `name`.
fn serve_extras(name: &str, tls: &Option<tokio_rustls::TlsAcceptor>) -> crate::util::serve::ServeExtras {
    let m = metrics::NetMetrics::get();
    crate::util::serve::ServeExtras {
        open: Some(m.connections.with_label_values(&[name])),
        tls: tls.clone(),
        tls_failed: tls.as_ref().map(|_| m.refused.with_label_values(&[name, "tls"])),
        evicted: Some(m.refused.with_label_values(&[name, "evicted_idle"])),
    }
}

/// The routes of a source received over HTTP (loki_push, otlp,
/// heroku_drain, a gcplog push subscription); `None` for the others.
fn http_router(
    s: &NetSource,
    r: &ReceiverConfig,
    spool: &Arc<crate::spool::SourceSpool>,
) -> anyhow::Result<Option<axum::Router>> {
    let receiver = || http::HttpReceiver::new(s.name.clone(), &s.config, spool.clone());
    Ok(Some(match s.config.kind {
        SourceType::LokiPush => push::router(Arc::new(push::PushReceiver {
            http: receiver()?,
            streams: push::StreamLabels { labels: s.config.labels.clone(), relabel: s.relabel.clone() },
        })),
        SourceType::Otlp => {
            let http = receiver()?;
            otlp::router(Arc::new(otlp::OtlpReceiver { http, attribute_labels: r.attribute_labels.clone() }))
        }
        SourceType::HerokuDrain => heroku::router(Arc::new(heroku::HerokuReceiver {
            http: receiver()?,
            labels: s.config.labels.clone(),
            relabel: s.relabel.clone(),
            use_incoming_timestamp: r.use_incoming_timestamp,
        })),
        SourceType::Gcplog if gcplog_push(s) => {
            let translator = gcplog_translator(s, r);
            gcplog::router(Arc::new(gcplog::PushReceiver { http: receiver()?, translator }))
        }
        _ => return Ok(None),
    }))
}

/// Starts a source not received over HTTP: a puller, a UDP or TCP
/// receiver, a consumer. Returns where it listens (`None`: nowhere) and how.
async fn start_other(
    s: &NetSource,
    r: &ReceiverConfig,
    spool: &Arc<crate::spool::SourceSpool>,
    tls: Option<tokio_rustls::TlsAcceptor>,
    stop: &CancellationToken,
    tasks: &mut Vec<tokio::task::JoinHandle<()>>,
) -> anyhow::Result<(Option<std::net::SocketAddr>, &'static str)> {
    Ok(match s.config.kind {
        SourceType::Gcplog => {
            // A pull subscription (a push one is served over HTTP).
            let puller = gcplog::pull::Puller::new(gcplog_translator(s, r), spool.clone(), &s.config)
                .with_context(|| format!("source {}", s.name))?;
            tasks.push(tokio::spawn(puller.run(stop.clone())));
            (None, "pull")
        }
        SourceType::Cloudflare => {
            let puller = cloudflare::Puller::new(s, spool.clone()).with_context(|| format!("source {}", s.name))?;
            tasks.push(tokio::spawn(puller.run(stop.clone())));
            (None, "pull")
        }
        SourceType::Gelf => {
            let rx = Arc::new(gelf::GelfReceiver::new(s, spool.clone()));
            let (socket, at) = bind_udp(&s.name, listen_addr(s)?).await?;
            tasks.push(tokio::spawn(rx.serve_udp(socket, stop.clone())));
            (Some(at), "udp")
        }
        SourceType::Syslog => {
            let rx = Arc::new(syslog::SyslogReceiver::new(s, spool.clone()));
            if s.config.protocol == Some(crate::config::NetProtocol::Udp) {
                let (socket, at) = bind_udp(&s.name, listen_addr(s)?).await?;
                tasks.push(tokio::spawn(rx.serve_udp(socket, stop.clone())));
                (Some(at), "udp")
            } else {
                let protocol = if tls.is_some() { "tls" } else { "tcp" };
                let listener = bind(&s.name, listen_addr(s)?).await?;
                let at = listener.local_addr()?;
                tasks.push(tokio::spawn(rx.serve_tcp(listener, tls, stop.clone())));
                (Some(at), protocol)
            }
        }
        SourceType::Kafka | SourceType::AzureEventHubs => {
            let c = kafka::Consumer::new(s.name.clone(), &s.config, s.relabel.clone(), spool.clone())
                .with_context(|| format!("source {}", s.name))?;
            tasks.push(tokio::spawn(std::sync::Arc::new(c).run(stop.clone())));
            // A consumer listens nowhere: no listener.
            (None, "kafka")
        }
        other => anyhow::bail!("source {}: type {} is not a network source", s.name, other.as_str()),
    })
}

/// True for a gcplog source with a push subscription (received over HTTP).
fn gcplog_push(s: &NetSource) -> bool {
    s.config.gcplog.clone().unwrap_or_default().subscription_type == crate::config::SubscriptionType::Push
}

/// What turns a gcplog source's messages into lines, for a push or a pull subscription.
fn gcplog_translator(s: &NetSource, r: &ReceiverConfig) -> gcplog::Translator {
    let g = s.config.gcplog.clone().unwrap_or_default();
    gcplog::Translator {
        name: s.name.clone(),
        labels: s.config.labels.clone(),
        relabel: s.relabel.clone(),
        use_incoming_timestamp: r.use_incoming_timestamp,
        use_full_line: g.use_full_line,
    }
}

/// What `s`'s spool records of it, so that it can be delivered if `s` is removed.
fn about(s: &NetSource) -> crate::spool::About {
    crate::spool::About { name: s.name.to_string(), config: s.config.clone(), clients: s.clients.clone() }
}

/// Serves `router` on `addr` (a task of `tasks`); the address bound.
async fn serve_http(
    name: &str,
    addr: std::net::SocketAddr,
    router: axum::Router,
    limits: crate::util::serve::ServeLimits,
    stop: &CancellationToken,
    extras: crate::util::serve::ServeExtras,
    tasks: &mut Vec<tokio::task::JoinHandle<()>>,
) -> anyhow::Result<std::net::SocketAddr> {
    let listener = bind(name, addr).await?;
    let at = listener.local_addr()?;
    tasks.push(tokio::spawn(crate::util::serve::serve_counted(listener, router, limits, stop.clone(), extras)));
    Ok(at)
}

/// A UDP socket of source `name` bound to `addr`, and the address it got.
async fn bind_udp(
    name: &str,
    addr: std::net::SocketAddr,
) -> anyhow::Result<(tokio::net::UdpSocket, std::net::SocketAddr)> {
    let socket = tokio::net::UdpSocket::bind(addr)
        .await
        .with_context(|| format!("source {name}: cannot listen on {addr} (udp)"))?;
    let at = socket.local_addr()?;
    Ok((socket, at))
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
