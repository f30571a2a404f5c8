//! One topic partition's reader: fetch from the next offset, spool, save
//! the offset; and [`Down`], how an unreachable broker is said once and
//! retried with backoff.

use std::sync::Arc;
use std::time::Duration;

use backon::BackoffBuilder;
use rskafka::client::error::{Error as KafkaError, ProtocolError};
use rskafka::client::partition::{OffsetAt, PartitionClient, UnknownTopicHandling};
use rskafka::record::RecordAndOffset;
use tokio_util::sync::CancellationToken;

use super::Consumer;
use crate::source::net::metrics::NetMetrics;
use crate::spool::{Record, SpoolError};

/// Something the source needs that fails: logged when it starts failing
/// (a warning) and when it works again (info), not at every retry; the
/// waits between retries grow (backon, with jitter) up to 30 s.
pub(super) struct Down {
    source: Arc<str>,
    what: String,
    failing: bool,
    waits: backon::ExponentialBackoff,
}

impl Down {
    pub(super) fn new(source: &Arc<str>, what: &str) -> Down {
        Down { source: source.clone(), what: what.to_string(), failing: false, waits: Self::waits() }
    }

    fn waits() -> backon::ExponentialBackoff {
        backon::ExponentialBuilder::default()
            .with_min_delay(Duration::from_millis(200))
            .with_max_delay(Duration::from_secs(30))
            .with_jitter()
            .without_max_times()
            .build()
    }

    /// It failed with `error`: how long to wait before trying again.
    pub(super) fn failed(&mut self, error: &str) -> Duration {
        if !self.failing {
            self.failing = true;
            tracing::warn!(source = %self.source, error, "Kafka {} cannot be reached; retrying with backoff", self.what);
        } else {
            tracing::debug!(source = %self.source, error, "Kafka {} still cannot be reached", self.what);
        }
        self.waits.next().unwrap_or(Duration::from_secs(30))
    }

    /// It works (again).
    pub(super) fn up(&mut self) {
        if self.failing {
            self.failing = false;
            tracing::info!(source = %self.source, "Kafka {} reached again", self.what);
        }
        self.waits = Self::waits();
    }
}

pub(super) struct Reader {
    c: Arc<Consumer>,
    client: Arc<rskafka::client::Client>,
    topic: String,
    partition: i32,
    down: Down,
}

impl Reader {
    pub(super) fn new(c: Arc<Consumer>, client: Arc<rskafka::client::Client>, topic: String, partition: i32) -> Reader {
        let down = Down::new(&c.name, &format!("partition {topic}/{partition}"));
        Reader { c, client, topic, partition, down }
    }

    /// Waits `d`; false when stopped meanwhile.
    async fn pause(d: Duration, stop: &CancellationToken) -> bool {
        tokio::select! {
            _ = tokio::time::sleep(d) => true,
            _ = stop.cancelled() => false,
        }
    }

    pub(super) async fn run(mut self, stop: CancellationToken) {
        let pc = loop {
            match self.client.partition_client(self.topic.clone(), self.partition, UnknownTopicHandling::Retry).await {
                Ok(pc) => break pc,
                Err(e) => {
                    let wait = self.down.failed(&e.to_string());
                    if !Self::pause(wait, &stop).await {
                        return;
                    }
                }
            }
        };
        let mut next = match self.c.offsets.get(&self.topic, self.partition) {
            Some(o) => o,
            None => match self.earliest(&pc, &stop).await {
                Some(o) => o,
                None => return,
            },
        };
        let max_wait = self.c.max_wait.as_millis().min(i32::MAX as u128) as i32;
        loop {
            if stop.is_cancelled() {
                return;
            }
            let fetched = tokio::select! {
                r = pc.fetch_records(next, 1..self.c.fetch_max_bytes, max_wait) => r,
                _ = stop.cancelled() => return,
            };
            match fetched {
                Ok((records, _high)) => {
                    self.down.up();
                    if records.is_empty() {
                        continue;
                    }
                    match self.spool_all(&records, &stop).await {
                        Some(n) => next = n,
                        None => return,
                    }
                }
                Err(KafkaError::ServerError { protocol_error: ProtocolError::OffsetOutOfRange, .. }) => {
                    let Some(earliest) = self.earliest(&pc, &stop).await else { return };
                    if earliest > next {
                        tracing::warn!(source = %self.c.name, topic = %self.topic, partition = self.partition,
                            lost = earliest - next, "messages were removed by the brokers' retention before they were read");
                    }
                    next = earliest.max(0);
                }
                Err(e) => {
                    let wait = self.down.failed(&e.to_string());
                    if !Self::pause(wait, &stop).await {
                        return;
                    }
                }
            }
        }
    }

    async fn earliest(&mut self, pc: &PartitionClient, stop: &CancellationToken) -> Option<i64> {
        loop {
            match pc.get_offset(OffsetAt::Earliest).await {
                Ok(o) => return Some(o),
                Err(e) => {
                    let wait = self.down.failed(&e.to_string());
                    if !Self::pause(wait, stop).await {
                        return None;
                    }
                }
            }
        }
    }

    /// Spools `records` in pieces at message ends, saving the offset after
    /// each piece; the next offset, or `None` when stopped before all were spooled.
    async fn spool_all(&self, records: &[RecordAndOffset], stop: &CancellationToken) -> Option<i64> {
        let max = (self.c.spool.batch_bytes() / 2).max(1) as usize;
        let mut out = Vec::new();
        let mut lines = 0u64;
        let mut next = None;
        for (i, r) in records.iter().enumerate() {
            lines += self.encode(r, &mut out);
            next = Some(r.offset + 1);
            if out.len() >= max || i + 1 == records.len() {
                // Where this piece ends, in the same append as its records:
                // after a crash before the offsets file is written, the
                // spool still says it (see `Consumer::new`).
                super::offsets::mark(&self.topic, self.partition, r.offset + 1, &mut out);
                let piece = std::mem::take(&mut out);
                if !self.append(piece, lines, stop).await {
                    return None;
                }
                lines = 0;
                if let Some(n) = next {
                    if let Err(e) = self.c.offsets.set(&self.topic, self.partition, n) {
                        tracing::error!(source = %self.c.name, error = %e,
                            "cannot save the Kafka offsets; after a restart the messages since the last save are read again");
                    }
                }
            }
        }
        next
    }

    /// Appends `piece` (its `lines`), waiting while the spool is full; false when stopped first.
    async fn append(&self, piece: Vec<u8>, lines: u64, stop: &CancellationToken) -> bool {
        let m = NetMetrics::get();
        let mut said = false;
        loop {
            match self.c.spool.append(piece.clone()).await {
                Ok(()) => {
                    m.received.with_label_values(&[&self.c.name]).inc_by(lines);
                    return true;
                }
                Err(e) => {
                    if !said {
                        said = true;
                        let full = matches!(e, SpoolError::Full { .. });
                        tracing::warn!(source = %self.c.name, error = %e, full,
                            "cannot spool what was read from Kafka; reading waits");
                    }
                    if !Self::pause(Duration::from_millis(200), stop).await {
                        return false;
                    }
                }
            }
        }
    }

    /// One message as spool records appended to `out`: how many lines.
    fn encode(&self, r: &RecordAndOffset, out: &mut Vec<u8>) -> u64 {
        let c = &self.c;
        let value = r.record.value.as_deref().unwrap_or_default();
        let text = match std::str::from_utf8(value) {
            Ok(s) => std::borrow::Cow::Borrowed(s),
            Err(_) => {
                crate::metrics::Metrics::get().lines_repaired.with_label_values(&[&c.name, "invalid_utf8"]).inc();
                String::from_utf8_lossy(value)
            }
        };
        let now = crate::util::now_ns() as i64;
        let sent = r.record.timestamp.timestamp_nanos_opt().unwrap_or(now);
        let message_ts = if c.use_incoming_timestamp { sent } else { now };
        let key = match r.record.key.as_deref() {
            Some(k) if !k.is_empty() => String::from_utf8_lossy(k).into_owned(),
            _ => "none".to_string(),
        };
        let mut base = c.labels.clone();
        for (k, v) in [
            ("__meta_kafka_topic", self.topic.clone()),
            ("__meta_kafka_partition", self.partition.to_string()),
            ("__meta_kafka_member_id", c.member_id.clone()),
            ("__meta_kafka_group_id", c.group_id.clone()),
            ("__meta_kafka_message_key", key),
        ] {
            base.insert(k.to_string(), v);
        }
        let lines: Vec<super::azure::Line> = match c.azure {
            None => vec![super::azure::Line { text: text.into_owned(), category: None, ts: None }],
            Some(disallow) => match super::azure::lines(&text, disallow) {
                Ok(l) => l,
                Err(why) => {
                    tracing::debug!(source = %c.name, why, "custom message skipped (disallow_custom_messages)");
                    NetMetrics::get().refused.with_label_values(&[&c.name, "custom_message"]).inc();
                    return 0;
                }
            },
        };
        let mut n = 0;
        for l in lines {
            let mut labels = base.clone();
            if let Some(cat) = &l.category {
                labels.insert("__azure_event_hubs_category".into(), cat.clone());
            }
            if let Some(rules) = &c.relabel {
                if !rules.apply(&mut labels) {
                    NetMetrics::get().refused.with_label_values(&[&c.name, "relabel_drop"]).inc();
                    continue;
                }
            }
            crate::relabel::strip_internal(&mut labels);
            let ts = match (c.use_incoming_timestamp, l.ts) {
                (true, Some(t)) => t,
                _ => message_ts,
            };
            Record {
                ts,
                tenant: c.tenant.as_deref().map(Into::into),
                labels: labels.iter().map(|(k, v)| (k.as_str().into(), v.as_str().into())).collect(),
                line: l.text.as_str().into(),
                metadata: Vec::new(),
                stream: None,
            }
            .encode(out);
            n += 1;
        }
        n
    }
}
