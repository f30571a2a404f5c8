//! `type = "kafka"` and `type = "azure_event_hubs"`: Kafka topics read from
//! their brokers (Promtail's `kafka` and `azure_event_hubs` targets), with
//! `rskafka` (pure Rust, rustls).
//!
//! How it works: the source connects to its brokers, lists the cluster's
//! topics, and starts one reader per partition of each topic it names (a
//! name, or a regex when it starts with `^`); every `topic_refresh_interval`
//! it looks again for new topics and partitions. A reader fetches from its
//! next offset (the saved one, see [`offsets`], else the partition's
//! earliest), turns the messages into spool records, appends them to the
//! source's spool (fsynced), and only then saves the offset after them. The
//! spool then ships like a file, so a restart neither loses nor repeats a
//! message. A broker that cannot be reached is retried with backoff, said
//! once, and said again when it is reached.
//!
//! Each message is labelled through the source's `relabel` rules from its
//! static labels and `__meta_kafka_topic`, `__meta_kafka_partition`,
//! `__meta_kafka_member_id`, `__meta_kafka_group_id` and
//! `__meta_kafka_message_key` (`none` when it has no key); an Event Hubs
//! record also from `__azure_event_hubs_category` (see [`azure`]). Its
//! timestamp is the message's with `use_incoming_timestamp`, else the time
//! it was read. A value that is not UTF-8 is shipped with replacement
//! characters and counted (`tailship_lines_repaired_total{reason="invalid_utf8"}`).

pub mod azure;
pub mod connect;
pub mod offsets;
mod reader;

use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::config::{SourceConfig, SourceType};
use crate::spool::SourceSpool;

pub use connect::Connection;
pub use offsets::Offsets;

/// A topic as configured: a name, or a regex over the cluster's topics.
#[derive(Debug, Clone)]
pub enum Topic {
    Name(String),
    Pattern(regex::Regex),
}

impl Topic {
    fn matches(&self, name: &str) -> bool {
        match self {
            Topic::Name(n) => n == name,
            Topic::Pattern(r) => r.is_match(name),
        }
    }
}

/// What a kafka source reads and how it labels it.
#[derive(Debug)]
pub struct Consumer {
    pub name: Arc<str>,
    pub connection: Connection,
    pub topics: Vec<Topic>,
    pub group_id: String,
    /// `__meta_kafka_member_id`: this agent (`tailship@<host>`).
    pub member_id: String,
    pub use_incoming_timestamp: bool,
    pub labels: crate::relabel::Labels,
    pub relabel: Option<Arc<crate::relabel::Rules>>,
    pub tenant: Option<String>,
    /// Event Hubs: split `{"records": [...]}`; `Some(disallow_custom_messages)`.
    pub azure: Option<bool>,
    pub refresh: Duration,
    pub max_wait: Duration,
    pub fetch_max_bytes: i32,
    pub spool: Arc<SourceSpool>,
    pub offsets: Offsets,
}

impl Consumer {
    /// The consumer of source `config` (secret files read, topic regexes compiled).
    pub fn new(
        name: Arc<str>,
        config: &SourceConfig,
        relabel: Option<Arc<crate::relabel::Rules>>,
        spool: Arc<SourceSpool>,
    ) -> anyhow::Result<Consumer> {
        let connection = Connection::of(config)?;
        let (topics, group_id, incoming, azure, k) = match config.kind {
            SourceType::Kafka => {
                let k = config.kafka.clone().unwrap_or_default();
                (k.topics.clone(), k.group_id.clone(), k.use_incoming_timestamp, None, k)
            }
            SourceType::AzureEventHubs => {
                let a = config.azure_event_hubs.clone().unwrap_or_default();
                let group = a.group_id.clone().unwrap_or_else(|| crate::config::DEFAULT_GROUP_ID.to_string());
                (
                    a.event_hubs.clone(),
                    group,
                    a.use_incoming_timestamp,
                    Some(a.disallow_custom_messages),
                    Default::default(),
                )
            }
            other => anyhow::bail!("type {} does not read from Kafka", other.as_str()),
        };
        let topics = topics
            .iter()
            .map(|t| {
                if t.starts_with('^') {
                    regex::Regex::new(t).map(Topic::Pattern).map_err(|e| anyhow::anyhow!("topic regex `{t}`: {e}"))
                } else {
                    Ok(Topic::Name(t.clone()))
                }
            })
            .collect::<anyhow::Result<Vec<_>>>()?;
        let host = gethostname::gethostname().to_string_lossy().into_owned();
        let offsets = Offsets::load(&spool.dir);
        // The newest segments (a new one was begun at this start) hold the
        // marks of the last appends, written before the offsets file was.
        match offsets.catch_up(&spool.marks(3)) {
            Ok(0) => {}
            Ok(n) => {
                tracing::info!(source = %name, partitions = n, "Kafka offsets taken from the spool (the agent stopped before saving them)")
            }
            Err(e) => anyhow::bail!("cannot write the Kafka offsets in {}: {e}", spool.dir.display()),
        }
        Ok(Consumer {
            name,
            connection,
            topics,
            group_id,
            member_id: format!("tailship@{host}"),
            use_incoming_timestamp: incoming,
            labels: config.labels.clone(),
            relabel,
            tenant: config.tenant_id.clone(),
            azure,
            refresh: k.topic_refresh_interval.get(),
            max_wait: k.max_wait.get(),
            fetch_max_bytes: k.fetch_max_bytes.get().min(i32::MAX as u64) as i32,
            spool,
            offsets,
        })
    }

    /// Reads until `stop`: connects (retrying with backoff), then keeps one
    /// reader per partition of the topics it names.
    pub async fn run(self: Arc<Self>, stop: CancellationToken) {
        let mut readers: std::collections::HashMap<(String, i32), tokio::task::JoinHandle<()>> = Default::default();
        let mut down = reader::Down::new(&self.name, "brokers");
        let mut client: Option<Arc<rskafka::client::Client>> = None;
        loop {
            if client.is_none() {
                match self.connection.builder(Duration::from_secs(5)).build().await {
                    Ok(c) => {
                        down.up();
                        tracing::info!(source = %self.name, brokers = self.connection.brokers.join(","), "connected to the Kafka brokers");
                        client = Some(Arc::new(c));
                    }
                    Err(e) => {
                        let wait = down.failed(&e.to_string());
                        tokio::select! {
                            _ = tokio::time::sleep(wait) => continue,
                            _ = stop.cancelled() => break,
                        }
                    }
                }
            }
            let Some(c) = client.clone() else { continue };
            match c.list_topics().await {
                Ok(list) => {
                    down.up();
                    for t in list.iter().filter(|t| self.topics.iter().any(|s| s.matches(&t.name))) {
                        for &p in &t.partitions {
                            let key = (t.name.clone(), p);
                            if readers.get(&key).is_some_and(|h| !h.is_finished()) {
                                continue;
                            }
                            tracing::info!(source = %self.name, topic = %t.name, partition = p, "reading a partition");
                            let r = reader::Reader::new(self.clone(), c.clone(), t.name.clone(), p);
                            readers.insert(key, tokio::spawn(r.run(stop.clone())));
                        }
                    }
                }
                Err(e) => {
                    down.failed(&e.to_string());
                }
            }
            tokio::select! {
                _ = tokio::time::sleep(self.refresh) => {}
                _ = stop.cancelled() => break,
            }
        }
        for (_, h) in readers {
            let _ = h.await;
        }
    }
}
