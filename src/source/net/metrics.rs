//! The receivers' metrics, per source: connections, lines received, refusals,
//! unparsed messages, spool bytes.

use std::sync::OnceLock;

use prometheus::{IntCounterVec, IntGaugeVec, Opts};

pub struct NetMetrics {
    pub connections: IntGaugeVec,
    pub received: IntCounterVec,
    pub refused: IntCounterVec,
    pub unparsed: IntCounterVec,
    pub spool_bytes: IntGaugeVec,
    pub metadata_dropped: IntCounterVec,
    pub pending_bytes: IntGaugeVec,
}

impl NetMetrics {
    /// What source `name` refused, by reason.
    pub fn refused_by_reason(&self, name: &str) -> std::collections::BTreeMap<String, u64> {
        use prometheus::core::Collector;
        let mut out = std::collections::BTreeMap::new();
        for family in self.refused.collect() {
            for m in family.get_metric() {
                let label = |k: &str| m.get_label().iter().find(|l| l.name() == k).map(|l| l.value().to_string());
                if label("source").as_deref() == Some(name) {
                    let n = m.get_counter().value() as u64;
                    if let (Some(reason), true) = (label("reason"), n > 0) {
                        *out.entry(reason).or_default() += n;
                    }
                }
            }
        }
        out
    }

    /// The receivers' metrics, registered with the agent's on first use.
    pub fn get() -> &'static NetMetrics {
        static M: OnceLock<NetMetrics> = OnceLock::new();
        M.get_or_init(|| {
            let r = &crate::metrics::Metrics::get().registry;
            let gauge = |name: &str, help: &str, labels: &[&str]| {
                let g = IntGaugeVec::new(Opts::new(name, help), labels).expect("valid metric definition");
                let _ = r.register(Box::new(g.clone()));
                g
            };
            let counter = |name: &str, help: &str, labels: &[&str]| {
                let c = IntCounterVec::new(Opts::new(name, help), labels).expect("valid metric definition");
                let _ = r.register(Box::new(c.clone()));
                c
            };
            NetMetrics {
                connections: gauge(
                    "tailship_receiver_connections",
                    "Open connections, per network source.",
                    &["source"],
                ),
                received: counter(
                    "tailship_receiver_lines_total",
                    "Lines received and spooled (the sender was told), per network source.",
                    &["source"],
                ),
                refused: counter(
                    "tailship_receiver_refused_total",
                    "Requests, messages or datagrams refused or dropped, per network source and reason.",
                    &["source", "reason"],
                ),
                unparsed: counter(
                    "tailship_receiver_unparsed_total",
                    "Messages that did not parse, kept as their raw line, per network source.",
                    &["source"],
                ),
                spool_bytes: gauge(
                    "tailship_spool_bytes",
                    "Bytes of spool segments on disk, per network source.",
                    &["source"],
                ),
                metadata_dropped: counter(
                    "tailship_receiver_metadata_dropped_total",
                    "Received lines shipped without their structured metadata (the client has \
                     structured_metadata = false), per network source and client.",
                    &["source", "client"],
                ),
                pending_bytes: gauge(
                    "tailship_receiver_pending_bytes",
                    "Bytes of requests, partial messages and chunks a receiver holds in memory, per network source.",
                    &["source"],
                ),
            }
        })
    }
}
