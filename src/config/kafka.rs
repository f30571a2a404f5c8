//! A `kafka` source's `kafka = { ... }` and an `azure_event_hubs` source's
//! `azure_event_hubs = { ... }` (Promtail's `kafka` and `azure_event_hubs`
//! scrape configs): brokers, topics, authentication. Checked here; the topic
//! regexes are compiled by the plan.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::{SourceConfig, SourceType};
use crate::util::{HumanDuration, HumanSize, Secret};

/// The `group_id` unless set (Promtail's default): only a label value, see [`KafkaConfig::group_id`].
pub const DEFAULT_GROUP_ID: &str = "promtail";

/// `kafka = { ... }`.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct KafkaConfig {
    /// Bootstrap brokers, `host:port`.
    pub brokers: Vec<String>,
    /// Topics to read: a name, or a regex when it starts with `^` (every
    /// topic of the cluster it matches, looked for every `topic_refresh_interval`).
    pub topics: Vec<String>,
    /// The value of `__meta_kafka_group_id`. tailship keeps its own offsets
    /// (in the spool directory) and joins no consumer group: every agent
    /// reads every partition.
    pub group_id: String,
    /// The message's timestamp (else the time it was read).
    pub use_incoming_timestamp: bool,
    pub authentication: KafkaAuthentication,
    /// How often regex topics are looked for, and new partitions noticed.
    pub topic_refresh_interval: HumanDuration,
    /// The longest a fetch waits for new messages at the broker.
    pub max_wait: HumanDuration,
    /// The most bytes one fetch asks for, per partition.
    pub fetch_max_bytes: HumanSize,
}

impl Default for KafkaConfig {
    fn default() -> Self {
        Self {
            brokers: Vec::new(),
            topics: Vec::new(),
            group_id: DEFAULT_GROUP_ID.to_string(),
            use_incoming_timestamp: false,
            authentication: KafkaAuthentication::default(),
            topic_refresh_interval: HumanDuration::secs(30),
            max_wait: HumanDuration::millis(500),
            fetch_max_bytes: HumanSize(1 << 20),
        }
    }
}

/// `authentication.type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum KafkaAuthType {
    #[default]
    None,
    /// TLS (with a client certificate when `tls.cert_file` is set).
    Ssl,
    /// SASL (PLAIN or SCRAM), over TLS when `sasl.use_tls`.
    Sasl,
}

/// `authentication = { ... }`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct KafkaAuthentication {
    #[serde(rename = "type")]
    pub kind: KafkaAuthType,
    /// TLS for `type = "ssl"` (and for SASL with `sasl.use_tls`).
    pub tls: KafkaTls,
    pub sasl: KafkaSasl,
}

/// The brokers' TLS.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct KafkaTls {
    /// Extra CA certificates (PEM) to trust besides the system's.
    pub ca_file: Option<PathBuf>,
    /// A client certificate (PEM) for brokers that ask for one; needs `key_file`.
    pub cert_file: Option<PathBuf>,
    pub key_file: Option<PathBuf>,
    /// The name the brokers' certificates are checked against (unset: each broker's host).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_name: Option<String>,
    /// Accept any certificate (test setups only; logged as a warning).
    pub insecure_skip_verify: bool,
}

/// `sasl.mechanism`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
pub enum SaslMechanism {
    #[default]
    #[serde(rename = "PLAIN")]
    Plain,
    #[serde(rename = "SCRAM-SHA-256")]
    ScramSha256,
    #[serde(rename = "SCRAM-SHA-512")]
    ScramSha512,
}

/// `sasl = { ... }`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct KafkaSasl {
    pub mechanism: SaslMechanism,
    pub user: String,
    /// The password in the config itself (a secret); or `password_file`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub password: Option<Secret>,
    pub password_file: Option<PathBuf>,
    /// SASL over TLS (the `tls` keys).
    pub use_tls: bool,
}

/// `azure_event_hubs = { ... }`: Event Hubs through its Kafka endpoint
/// (port 9093, TLS, SASL PLAIN as `$ConnectionString`).
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct AzureEventHubsConfig {
    /// `<namespace>.servicebus.windows.net` (port 9093 unless given).
    pub fully_qualified_namespace: String,
    /// The namespace's connection string (a secret); or `connection_string_file`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub connection_string: Option<Secret>,
    pub connection_string_file: Option<PathBuf>,
    /// The event hubs to read (Kafka topics; a regex when starting with `^`).
    pub event_hubs: Vec<String>,
    /// The value of `__meta_kafka_group_id` (default `promtail`).
    pub group_id: Option<String>,
    /// Each record's `time` (else the time it was read).
    pub use_incoming_timestamp: bool,
    /// A message that is not `{"records": [...]}` of Azure resource logs is
    /// counted and skipped (else shipped whole as one line).
    pub disallow_custom_messages: bool,
    /// Extra CA certificates (PEM) to trust besides the system's.
    pub ca_file: Option<PathBuf>,
}

impl AzureEventHubsConfig {
    /// The broker: the namespace with port 9093 unless it has one.
    pub fn broker(&self) -> String {
        let ns = self.fully_qualified_namespace.trim();
        if ns.rsplit_once(':').is_some_and(|(_, p)| p.parse::<u16>().is_ok()) {
            ns.to_string()
        } else {
            format!("{ns}:9093")
        }
    }
}

/// A `kafka` or `azure_event_hubs` source's own keys.
pub(super) fn validate_kafka_source(key: &str, s: &SourceConfig, e: &mut dyn FnMut(&str, String)) {
    if s.kafka.is_some() && s.kind != SourceType::Kafka {
        e(&format!("{key}.kafka"), "`kafka` is for kafka sources (type = \"kafka\")".into());
    }
    if s.azure_event_hubs.is_some() && s.kind != SourceType::AzureEventHubs {
        e(
            &format!("{key}.azure_event_hubs"),
            "`azure_event_hubs` is for azure_event_hubs sources (type = \"azure_event_hubs\")".into(),
        );
    }
    match s.kind {
        SourceType::Kafka => {
            let Some(k) = &s.kafka else {
                e(&format!("{key}.kafka"), "a kafka source needs `kafka = { brokers = [...], topics = [...] }`".into());
                return;
            };
            validate_kafka(&format!("{key}.kafka"), k, e);
        }
        SourceType::AzureEventHubs => {
            let Some(a) = &s.azure_event_hubs else {
                e(
                    &format!("{key}.azure_event_hubs"),
                    "an azure_event_hubs source needs `azure_event_hubs = { fully_qualified_namespace = ..., event_hubs = [...] }`"
                        .into(),
                );
                return;
            };
            validate_event_hubs(&format!("{key}.azure_event_hubs"), a, e);
        }
        _ => {}
    }
}

/// A kafka source's `kafka` table: brokers, topics, fetching and authentication.
fn validate_kafka(key: &str, k: &KafkaConfig, e: &mut dyn FnMut(&str, String)) {
    if k.brokers.is_empty() {
        e(&format!("{key}.brokers"), "no Kafka bootstrap brokers given".into());
    }
    for (i, b) in k.brokers.iter().enumerate() {
        if !host_port(b) {
            e(&format!("{key}.brokers[{i}]"), format!("`{b}` is not host:port"));
        }
    }
    topics(&format!("{key}.topics"), &k.topics, e);
    if k.topic_refresh_interval.get().is_zero() {
        e(&format!("{key}.topic_refresh_interval"), "must be above 0".into());
    }
    if k.fetch_max_bytes.get() < 1024 {
        e(&format!("{key}.fetch_max_bytes"), "must be at least 1024".into());
    }
    let a = &k.authentication;
    let tls_used = a.kind == KafkaAuthType::Ssl || (a.kind == KafkaAuthType::Sasl && a.sasl.use_tls);
    if tls_used {
        tls(&format!("{key}.authentication.tls"), &a.tls, e);
    }
    if a.kind == KafkaAuthType::Sasl {
        sasl(&format!("{key}.authentication.sasl"), &a.sasl, e);
    }
}

/// `authentication.sasl`: a user, and one readable password.
fn sasl(key: &str, s: &KafkaSasl, e: &mut dyn FnMut(&str, String)) {
    if s.user.is_empty() {
        e(&format!("{key}.user"), "SASL needs a user".into());
    }
    match (&s.password, &s.password_file) {
        (Some(_), Some(_)) => e(key, "set password or password_file, not both".into()),
        (None, None) => e(&format!("{key}.password"), "SASL needs password or password_file".into()),
        (None, Some(p)) => {
            if let Err(err) = crate::util::read_secret_file(p) {
                e(&format!("{key}.password_file"), format!("cannot read {}: {err}", p.display()));
            }
        }
        (Some(_), None) => {}
    }
}

/// An azure_event_hubs source's `azure_event_hubs` table: the namespace,
/// the event hubs, one readable connection string and the CA file.
fn validate_event_hubs(key: &str, a: &AzureEventHubsConfig, e: &mut dyn FnMut(&str, String)) {
    if a.fully_qualified_namespace.trim().is_empty() {
        e(&format!("{key}.fully_qualified_namespace"), "no fully_qualified_namespace given".into());
    } else if !host_port(&a.broker()) {
        e(&format!("{key}.fully_qualified_namespace"), format!("`{}` is not a host name", a.broker()));
    }
    topics(&format!("{key}.event_hubs"), &a.event_hubs, e);
    match (&a.connection_string, &a.connection_string_file) {
        (Some(_), Some(_)) => e(key, "set connection_string or connection_string_file, not both".into()),
        (None, None) => {
            e(&format!("{key}.connection_string"), "needs connection_string or connection_string_file".into())
        }
        (None, Some(p)) => {
            if let Err(err) = crate::util::read_secret_file(p) {
                e(&format!("{key}.connection_string_file"), format!("cannot read {}: {err}", p.display()));
            }
        }
        (Some(_), None) => {}
    }
    if let Some(p) = &a.ca_file {
        if let Err(err) = std::fs::metadata(p) {
            e(&format!("{key}.ca_file"), format!("cannot read {}: {err}", p.display()));
        }
    }
}

fn topics(key: &str, topics: &[String], e: &mut dyn FnMut(&str, String)) {
    if topics.is_empty() {
        e(key, "no topics given to be consumed".into());
    }
    for (i, t) in topics.iter().enumerate() {
        if t.is_empty() {
            e(&format!("{key}[{i}]"), "must not be empty".into());
        } else if t.starts_with('^') {
            if let Err(err) = regex_syntax::Parser::new().parse(t) {
                let first = err.to_string().lines().last().unwrap_or_default().trim().to_string();
                e(&format!("{key}[{i}]"), format!("bad topic regex `{t}`: {first}"));
            }
        }
    }
}

fn tls(key: &str, t: &KafkaTls, e: &mut dyn FnMut(&str, String)) {
    if let Some(n) = &t.server_name {
        if tokio_rustls::rustls::pki_types::ServerName::try_from(n.as_str()).is_err() {
            e(&format!("{key}.server_name"), format!("`{n}` is not a DNS name or an IP address"));
        }
    }
    if t.cert_file.is_some() != t.key_file.is_some() {
        e(key, "cert_file and key_file go together".into());
    }
    for (k, p) in [("ca_file", &t.ca_file), ("cert_file", &t.cert_file), ("key_file", &t.key_file)] {
        if let Some(p) = p {
            if let Err(err) = std::fs::metadata(p) {
                e(&format!("{key}.{k}"), format!("cannot read {}: {err}", p.display()));
            }
        }
    }
}

/// True for `host:port` with a port number.
fn host_port(s: &str) -> bool {
    s.rsplit_once(':').is_some_and(|(h, p)| !h.is_empty() && p.parse::<u16>().is_ok_and(|p| p > 0))
}
