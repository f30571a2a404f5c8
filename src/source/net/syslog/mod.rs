//! `type = "syslog"`: RFC 5424 and RFC 3164 over TCP (octet counting or
//! newline framing) and UDP. Each message becomes a spooled line: its
//! message part as the line, its time (`receiver.use_incoming_timestamp`),
//! and labels from Promtail's `__syslog_*` fields through the source's
//! `relabel` rules. A message that does not parse is kept as it came, with
//! the label `syslog_unparsed="true"`, and counted; one with no message
//! text is dropped and counted (`refused`, reason `empty`), as Promtail
//! drops it. Over TCP, while the
//! spool is full the socket is not read (the sender slows down); over UDP
//! the datagram is dropped and counted.

mod frame;
pub mod parse;
mod peer;

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt};
use tokio_util::sync::CancellationToken;

use super::budget::Budget;
use super::metrics::NetMetrics;
use super::receiver::ReceiverBase;
use super::NetSource;
use crate::spool::{stream_key, Record, SourceSpool, SpoolError};
use crate::util::conns::{Conn, Conns, Tracked};
use frame::Framer;
use parse::{FACILITIES, SEVERITIES};

/// How long a connection waits before trying a full spool again.
const FULL_WAIT: Duration = Duration::from_millis(200);
/// How long a connection waits before trying again a spool it could not write.
const ERROR_WAIT: Duration = Duration::from_secs(1);

/// One syslog listener's state.
pub struct SyslogReceiver {
    /// The source: name, spool, settings, labels, tenant.
    base: ReceiverBase,
    /// Messages not whole yet, on every connection together.
    budget: Arc<Budget>,
    /// Senders' names (`__syslog_connection_hostname`).
    peers: peer::PeerNames,
}

impl SyslogReceiver {
    pub fn new(s: &NetSource, spool: Arc<SourceSpool>) -> Self {
        let base = ReceiverBase::new(s, spool);
        let budget = Budget::new(&s.name, base.config.max_pending_bytes.get() as usize);
        Self { base, budget, peers: peer::PeerNames::default() }
    }

    fn max(&self) -> usize {
        self.base.config.message_bytes(crate::config::SourceType::Syslog) as usize
    }

    /// One message as a spool record appended to `out`; false when relabelling dropped it.
    pub fn record(&self, raw: &[u8], peer: IpAddr, truncated: bool, out: &mut Vec<u8>) -> bool {
        let m = NetMetrics::get();
        if truncated {
            m.refused.with_label_values(&[&self.base.name, "truncated"]).inc();
        }
        let text = String::from_utf8_lossy(raw);
        let now = crate::util::now_ns() as i64;
        let tenant = self.base.tenant.as_deref().map(Into::into);
        let Some(msg) = parse::parse(&text, now) else {
            m.unparsed.with_label_values(&[&self.base.name]).inc();
            let mut labels: Vec<_> =
                self.base.labels.iter().map(|(k, v)| (k.as_str().into(), v.as_str().into())).collect();
            labels.push(("syslog_unparsed".into(), "true".into()));
            let line = text.trim_end_matches(['\n', '\r', '\0']);
            let ts = self.base.stamps.stamp(stream_key(tenant.as_deref(), &labels), now);
            Record { ts, tenant, labels, line: line.into(), ..Default::default() }.encode(out);
            return true;
        };
        if msg.message.is_empty() {
            m.refused.with_label_values(&[&self.base.name, "empty"]).inc();
            return false;
        }
        let mut labels = self.base.labels.clone();
        let mut set = |k: &str, v: Option<&str>| {
            if let Some(v) = v {
                labels.insert(format!("__syslog_{k}"), v.to_string());
            }
        };
        set("connection_ip_address", Some(&peer.to_string()));
        set("connection_hostname", self.peers.of(peer).as_deref());
        set("message_severity", msg.severity.map(|s| SEVERITIES[s as usize]));
        set("message_facility", msg.facility.and_then(|f| FACILITIES.get(f as usize).copied()));
        set("message_hostname", msg.hostname);
        set("message_app_name", msg.app_name);
        set("message_proc_id", msg.proc_id);
        set("message_msg_id", msg.msg_id);
        let mut metadata = Vec::new();
        for (id, name, value) in &msg.structured {
            let key = crate::util::sanitize_label_name(&format!("{id}_{name}"));
            labels.insert(format!("__syslog_message_sd_{key}"), value.clone());
            if self.base.config.label_structured_data {
                labels.insert(key, value.clone());
            } else {
                metadata.push((key.into(), value.as_str().into()));
            }
        }
        if let Some(rules) = &self.base.relabel {
            if !rules.apply(&mut labels) {
                m.refused.with_label_values(&[&self.base.name, "relabel_drop"]).inc();
                return false;
            }
        }
        crate::relabel::strip_internal(&mut labels);
        let ts = if self.base.config.use_incoming_timestamp { msg.ts.unwrap_or(now) } else { now };
        let labels: Vec<_> = labels.iter().map(|(k, v)| (k.as_str().into(), v.as_str().into())).collect();
        let ts = self.base.stamps.stamp(stream_key(tenant.as_deref(), &labels), ts);
        Record { ts, tenant, labels, line: msg.message.into(), metadata, ..Default::default() }.encode(out);
        true
    }

    /// Spools `encoded` (`n` messages), waiting while the spool is full or
    /// cannot be written (the connection is not read meanwhile). False when
    /// stopped or the spool's writer is gone.
    async fn spool_waiting(&self, encoded: Vec<u8>, n: u64, stop: &CancellationToken) -> bool {
        if n == 0 {
            return true;
        }
        let mut failing = false;
        for piece in crate::spool::pieces(&encoded, self.base.spool.batch_bytes() as usize) {
            loop {
                if self.base.spool.is_full(piece.len() as u64) {
                    // Room comes when a delivered segment is deleted (the spool says so).
                    let mut changed = self.base.spool.watch();
                    tokio::select! {
                        _ = changed.changed() => {}
                        _ = tokio::time::sleep(FULL_WAIT) => {}
                        _ = stop.cancelled() => return false,
                    }
                    continue;
                }
                match self.base.spool.append(piece.to_vec()).await {
                    Ok(()) => {
                        if failing {
                            tracing::info!(source = %self.base.name, "the spool takes syslog messages again");
                        }
                        break;
                    }
                    Err(SpoolError::Full { .. }) => continue,
                    Err(e @ SpoolError::Io { .. }) => {
                        // The disk full, most likely: the connection is not read
                        // meanwhile (as when the spool is full), and nothing is lost.
                        if !failing {
                            tracing::error!(source = %self.base.name, error = %e, "cannot write the spool; syslog connections wait and try again every second");
                        }
                        failing = true;
                        tokio::select! {
                            _ = tokio::time::sleep(ERROR_WAIT) => {}
                            _ = stop.cancelled() => return false,
                        }
                    }
                    Err(e @ SpoolError::TooLarge { .. }) => {
                        // One message larger than a spool write may hold (max_message_bytes
                        // over a quarter of spool.max_bytes): it is counted, the rest go on.
                        tracing::error!(source = %self.base.name, error = %e, "a syslog message too large for the spool; dropped and counted (lower receiver.max_message_bytes)");
                        NetMetrics::get().refused.with_label_values(&[&self.base.name, "too_large"]).inc();
                        break;
                    }
                    Err(e) => {
                        tracing::error!(source = %self.base.name, error = %e, "cannot spool syslog messages; closing the connection");
                        NetMetrics::get().refused.with_label_values(&[&self.base.name, "spool_error"]).inc_by(n);
                        return false;
                    }
                }
            }
        }
        NetMetrics::get().received.with_label_values(&[&self.base.name]).inc_by(n);
        true
    }

    /// Reads one connection until it closes, idles out or `stop` fires.
    pub async fn connection<S: AsyncRead + Unpin>(
        &self,
        mut stream: S,
        peer: SocketAddr,
        conn: &Conn,
        stop: CancellationToken,
    ) {
        let gauge = NetMetrics::get().connections.with_label_values(&[&self.base.name]);
        gauge.inc();
        let mut framer = Framer::new(self.max());
        let mut buf = vec![0u8; 64 << 10];
        let mut held = self.budget.hold();
        let idle = self.base.config.idle_timeout.get();
        loop {
            let mut stopped = false;
            let n = tokio::select! {
                r = tokio::time::timeout(idle, stream.read(&mut buf)) => match r {
                    Ok(Ok(n)) => n,
                    Ok(Err(e)) => {
                        tracing::debug!(source = %self.base.name, %peer, error = %e, "syslog connection failed");
                        0
                    }
                    Err(_) => {
                        tracing::debug!(source = %self.base.name, %peer, "syslog connection idle; closed");
                        0
                    }
                },
                _ = stop.cancelled() => {
                    stopped = true;
                    0
                }
                _ = conn.close.cancelled() => {
                    tracing::debug!(source = %self.base.name, %peer, "idle syslog connection closed to make room for a new one");
                    stopped = true;
                    0
                }
            };
            let mut out = Vec::new();
            let mut count = 0;
            let mut handle = |msg: &[u8], truncated: bool| {
                if self.record(msg, peer.ip(), truncated, &mut out) {
                    count += 1;
                }
            };
            // Stopped: a message not whole yet was not received (not taken as whole).
            let mut over_budget = false;
            if n > 0 {
                framer.feed(&buf[..n], &mut handle);
                if !held.set(framer.pending()) {
                    // Every connection's unfinished messages together are past the budget:
                    // this one's is cut here (kept, flagged) and the connection closed.
                    framer.finish(&mut handle);
                    over_budget = true;
                }
            } else if !stopped {
                framer.finish(&mut handle);
            }
            if over_budget {
                NetMetrics::get().refused.with_label_values(&[&self.base.name, "pending_limit"]).inc();
                tracing::warn!(source = %self.base.name, %peer, pending = self.budget.used(),
                    "syslog connections hold more unfinished messages than receiver.max_pending_bytes; this one is closed");
            }
            let spooled = {
                let _busy = conn.activity.busy();
                self.spool_waiting(out, count, &stop).await
            };
            if !spooled || n == 0 || over_budget {
                break;
            }
        }
        gauge.dec();
    }

    /// Accepts TCP connections until `stop` fires. Past `max_connections`
    /// open at once, the connection silent longest (a second at least, and
    /// not spooling) is closed for the new one (`reason="evicted_idle"`); the
    /// new one waits for that (newer ones wait in the kernel's queue), and is
    /// closed and counted (`reason="connection_limit"`) only when none is
    /// idle within `request_timeout`.
    pub async fn serve_tcp(
        self: Arc<Self>,
        listener: tokio::net::TcpListener,
        tls: Option<tokio_rustls::TlsAcceptor>,
        stop: CancellationToken,
    ) {
        let table = Conns::new(self.base.config.max_connections, crate::util::serve::MIN_IDLE);
        let mut conns = tokio::task::JoinSet::new();
        loop {
            let (stream, peer) = tokio::select! {
                r = listener.accept() => match r {
                    Ok(x) => x,
                    Err(e) => {
                        tracing::warn!(source = %self.base.name, error = %e, "cannot accept a syslog connection");
                        tokio::time::sleep(Duration::from_millis(100)).await;
                        continue;
                    }
                },
                _ = stop.cancelled() => break,
            };
            // At the limit, the new connection waits (what it sends waits in the
            // kernel) until one open is idle enough to close, or one closes.
            let evicted = || NetMetrics::get().refused.with_label_values(&[&self.base.name, "evicted_idle"]).inc();
            let wait = self.base.config.request_timeout.get();
            let admitted = tokio::time::timeout(wait, table.admit_waiting(&stop, evicted)).await;
            let conn = match admitted {
                Ok(Some(conn)) => conn,
                Ok(None) => break,
                Err(_) => {
                    NetMetrics::get().refused.with_label_values(&[&self.base.name, "connection_limit"]).inc();
                    tracing::debug!(source = %self.base.name, %peer, "connection limit reached and none idle; connection closed");
                    drop(stream);
                    continue;
                }
            };
            let rx = self.clone();
            let stop = stop.clone();
            let tls = tls.clone();
            conns.spawn(async move {
                let stream = Tracked::new(stream, conn.activity.clone());
                match tls {
                    None => rx.connection(stream, peer, &conn, stop).await,
                    Some(tls) => {
                        match tokio::time::timeout(rx.base.config.request_timeout.get(), tls.accept(stream)).await {
                            Ok(Ok(stream)) => rx.connection(stream, peer, &conn, stop).await,
                            Ok(Err(e)) => {
                                NetMetrics::get().refused.with_label_values(&[&rx.base.name, "tls"]).inc();
                                tracing::debug!(source = %rx.base.name, %peer, error = %e, "TLS handshake failed");
                            }
                            Err(_) => NetMetrics::get().refused.with_label_values(&[&rx.base.name, "tls"]).inc(),
                        }
                    }
                }
            });
            while conns.try_join_next().is_some() {}
        }
        while conns.join_next().await.is_some() {}
    }

    /// Receives UDP datagrams (one message each) until `stop` fires; while
    /// the spool is full they are dropped and counted.
    pub async fn serve_udp(self: Arc<Self>, socket: tokio::net::UdpSocket, stop: CancellationToken) {
        let mut buf = vec![0u8; 65_536];
        loop {
            let (n, peer) = tokio::select! {
                r = socket.recv_from(&mut buf) => match r {
                    Ok(x) => x,
                    Err(e) => {
                        tracing::debug!(source = %self.base.name, error = %e, "syslog datagram not received");
                        continue;
                    }
                },
                _ = stop.cancelled() => break,
            };
            let mut out = Vec::new();
            let mut count = 0u64;
            let max = self.max();
            let mut take = |data: &[u8], peer: SocketAddr, out: &mut Vec<u8>| {
                let cut = data.len() > max;
                if self.record(&data[..data.len().min(max)], peer.ip(), cut, out) {
                    count += 1;
                }
            };
            take(&buf[..n], peer, &mut out);
            // What else arrived meanwhile goes in the same write.
            for _ in 0..255 {
                if out.len() as u64 >= self.base.spool.batch_bytes() / 2 {
                    break;
                }
                match socket.try_recv_from(&mut buf) {
                    Ok((n, peer)) => take(&buf[..n], peer, &mut out),
                    Err(_) => break,
                }
            }
            if count == 0 {
                continue;
            }
            match self.base.spool.append(out).await {
                Ok(()) => NetMetrics::get().received.with_label_values(&[&self.base.name]).inc_by(count),
                Err(e) => {
                    let reason = if matches!(e, SpoolError::Full { .. }) { "spool_full" } else { "spool_error" };
                    NetMetrics::get().refused.with_label_values(&[&self.base.name, reason]).inc_by(count);
                }
            }
        }
    }
}
