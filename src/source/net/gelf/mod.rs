//! `type = "gelf"`: GELF over UDP, as Promtail's `gelf` target takes it
//! (Docker's `gelf` log driver, Graylog senders). Each message (see
//! [`chunk`] for the framing) becomes a spooled line: the message's JSON as
//! it came (decompressed), its `timestamp` when
//! `receiver.use_incoming_timestamp`, and labels from Promtail's
//! `__gelf_message_level`, `__gelf_message_host`, `__gelf_message_version`
//! and `__gelf_message_facility` through the source's `relabel` rules. A
//! message that is not a JSON object is kept as it came, labelled
//! `gelf_unparsed="true"`, and counted. UDP has no way to slow a sender:
//! while the spool is full, messages are dropped and counted.

pub mod chunk;

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

use super::metrics::NetMetrics;
use super::receiver::ReceiverBase;
use super::NetSource;
use crate::spool::{stream_key, Record, SourceSpool, SpoolError};
use chunk::Assembler;

/// GELF's levels (syslog severities) by number, as Promtail names them.
const LEVELS: [&str; 8] = ["emergency", "alert", "critical", "error", "warning", "notice", "informational", "debug"];

/// One GELF listener's state.
pub struct GelfReceiver {
    /// The source: name, spool, settings, labels, tenant.
    base: ReceiverBase,
}

impl GelfReceiver {
    pub fn new(s: &NetSource, spool: Arc<SourceSpool>) -> Self {
        Self { base: ReceiverBase::new(s, spool) }
    }

    /// One whole message as a spool record appended to `out`; false when relabelling dropped it.
    pub fn record(&self, raw: &[u8], out: &mut Vec<u8>) -> bool {
        let m = NetMetrics::get();
        let text = String::from_utf8_lossy(raw);
        let line = text.trim_end_matches(['\n', '\r', '\0']);
        let now = crate::util::now_ns() as i64;
        let tenant = self.base.tenant.as_deref().map(Into::into);
        let Ok(serde_json::Value::Object(msg)) = serde_json::from_str::<serde_json::Value>(line) else {
            m.unparsed.with_label_values(&[&self.base.name]).inc();
            let mut labels: Vec<_> =
                self.base.labels.iter().map(|(k, v)| (k.as_str().into(), v.as_str().into())).collect();
            labels.push(("gelf_unparsed".into(), "true".into()));
            let ts = self.base.stamps.stamp(stream_key(tenant.as_deref(), &labels), now);
            Record { ts, tenant, labels, line: line.into(), ..Default::default() }.encode(out);
            return true;
        };
        let mut labels = self.base.labels.clone();
        // GELF's default level is 1 (alert).
        let level = msg.get("level").and_then(serde_json::Value::as_u64).unwrap_or(1);
        if let Some(l) = LEVELS.get(level as usize) {
            labels.insert("__gelf_message_level".into(), l.to_string());
        }
        for (key, field) in [("host", "host"), ("version", "version"), ("facility", "_facility")] {
            // Docker and GELF 1.0 senders put `facility` at the top level; 1.1 ones `_facility`.
            let v = msg.get(key).or_else(|| msg.get(field)).and_then(serde_json::Value::as_str);
            if let Some(v) = v.filter(|v| !v.is_empty()) {
                labels.insert(format!("__gelf_message_{key}"), v.to_string());
            }
        }
        if let Some(rules) = &self.base.relabel {
            if !rules.apply(&mut labels) {
                m.refused.with_label_values(&[&self.base.name, "relabel_drop"]).inc();
                return false;
            }
        }
        crate::relabel::strip_internal(&mut labels);
        let sent = msg.get("timestamp").and_then(serde_json::Value::as_f64).filter(|t| *t > 0.0);
        let ts = match sent {
            // To the microsecond: a float of seconds since 1970 carries no finer.
            Some(t) if self.base.config.use_incoming_timestamp => (t * 1e6).round() as i64 * 1000,
            _ => now,
        };
        let labels: Vec<_> = labels.iter().map(|(k, v)| (k.as_str().into(), v.as_str().into())).collect();
        let ts = self.base.stamps.stamp(stream_key(tenant.as_deref(), &labels), ts);
        Record { ts, tenant, labels, line: line.into(), ..Default::default() }.encode(out);
        true
    }

    /// Receives datagrams until `stop` fires: messages whole are spooled
    /// (what arrived meanwhile in the same write); chunks wait for the rest
    /// of their message, which expires after 5 s (`reason="incomplete"`).
    pub async fn serve_udp(self: Arc<Self>, socket: tokio::net::UdpSocket, stop: CancellationToken) {
        let max = self.base.config.message_bytes(crate::config::SourceType::Gelf) as usize;
        let pending = self.base.config.max_pending_bytes.get() as usize;
        let mut chunks = Assembler::new(max, pending);
        let mut buf = vec![0u8; 65_536];
        let mut tick = tokio::time::interval(Duration::from_millis(500));
        let m = NetMetrics::get();
        let pending = m.pending_bytes.with_label_values(&[&self.base.name]);
        loop {
            let first = tokio::select! {
                r = socket.recv_from(&mut buf) => match r {
                    Ok((n, _)) => n,
                    Err(e) => {
                        tracing::debug!(source = %self.base.name, error = %e, "GELF datagram not received");
                        continue;
                    }
                },
                _ = tick.tick() => {
                    pending.set(chunks.held() as i64);
                    let expired = chunks.expire(Instant::now());
                    if expired > 0 {
                        m.refused.with_label_values(&[&self.base.name, "incomplete"]).inc_by(expired as u64);
                        tracing::debug!(source = %self.base.name, expired, "GELF messages not whole within 5s");
                    }
                    continue;
                }
                _ = stop.cancelled() => break,
            };
            let mut out = Vec::new();
            let mut count = 0u64;
            let mut take = |data: &[u8], out: &mut Vec<u8>| match chunks.datagram(data, Instant::now()) {
                Ok(Some(msg)) => {
                    if self.record(&msg, out) {
                        count += 1;
                    }
                }
                Ok(None) => {}
                Err(e) => {
                    m.refused.with_label_values(&[&self.base.name, e.reason()]).inc();
                    tracing::debug!(source = %self.base.name, error = %e, "GELF datagram refused");
                }
            };
            take(&buf[..first], &mut out);
            for _ in 0..255 {
                if out.len() as u64 >= self.base.spool.batch_bytes() / 2 {
                    break;
                }
                match socket.try_recv_from(&mut buf) {
                    Ok((n, _)) => take(&buf[..n], &mut out),
                    Err(_) => break,
                }
            }
            let evicted = chunks.take_evicted();
            if evicted > 0 {
                m.refused.with_label_values(&[&self.base.name, "chunks_pending_limit"]).inc_by(evicted as u64);
            }
            if count == 0 {
                continue;
            }
            self.spool_now(out, count).await;
        }
    }

    async fn spool_now(&self, out: Vec<u8>, count: u64) {
        let m = NetMetrics::get();
        match self.base.spool.append(out).await {
            Ok(()) => m.received.with_label_values(&[&self.base.name]).inc_by(count),
            Err(e) => {
                let reason = if matches!(e, SpoolError::Full { .. }) { "spool_full" } else { "spool_error" };
                m.refused.with_label_values(&[&self.base.name, reason]).inc_by(count);
            }
        }
    }
}
