//! How a `kafka` or `azure_event_hubs` source reaches its brokers: their
//! addresses, TLS (rustls: the system's roots, webpki's and `ca_file`; a
//! client certificate) and SASL (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512), as
//! an `rskafka` client builder.

use std::sync::Arc;
use std::time::Duration;

use rskafka::client::{ClientBuilder, Credentials, SaslConfig};
use tokio_rustls::rustls;

use crate::config::{KafkaAuthType, KafkaTls, SaslMechanism, SourceConfig, SourceType};

/// Where and how to connect, read once at start.
#[derive(Clone)]
pub struct Connection {
    pub brokers: Vec<String>,
    tls: Option<Arc<rustls::ClientConfig>>,
    sasl: Option<SaslConfig>,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection").field("brokers", &self.brokers).field("tls", &self.tls.is_some()).finish()
    }
}

impl Connection {
    /// The connection of a kafka or azure_event_hubs source (its secret files read).
    pub fn of(c: &SourceConfig) -> anyhow::Result<Connection> {
        match c.kind {
            SourceType::Kafka => {
                let k = c.kafka.clone().unwrap_or_default();
                let a = &k.authentication;
                let use_tls = a.kind == KafkaAuthType::Ssl || (a.kind == KafkaAuthType::Sasl && a.sasl.use_tls);
                let tls = if use_tls { Some(Arc::new(tls_config(&a.tls)?)) } else { None };
                let sasl = if a.kind == KafkaAuthType::Sasl {
                    let password = match (&a.sasl.password, &a.sasl.password_file) {
                        (Some(p), _) => p.expose().to_string(),
                        (None, Some(f)) => crate::util::read_secret_file(f)
                            .map_err(|e| anyhow::anyhow!("kafka.authentication.sasl.password_file: {e}"))?
                            .expose()
                            .to_string(),
                        (None, None) => String::new(),
                    };
                    let creds = Credentials::new(a.sasl.user.clone(), password);
                    Some(match a.sasl.mechanism {
                        SaslMechanism::Plain => SaslConfig::Plain(creds),
                        SaslMechanism::ScramSha256 => SaslConfig::ScramSha256(creds),
                        SaslMechanism::ScramSha512 => SaslConfig::ScramSha512(creds),
                    })
                } else {
                    None
                };
                Ok(Connection { brokers: k.brokers.clone(), tls, sasl })
            }
            SourceType::AzureEventHubs => {
                let a = c.azure_event_hubs.clone().unwrap_or_default();
                let conn = match (&a.connection_string, &a.connection_string_file) {
                    (Some(s), _) => s.expose().to_string(),
                    (None, Some(f)) => crate::util::read_secret_file(f)
                        .map_err(|e| anyhow::anyhow!("azure_event_hubs.connection_string_file: {e}"))?
                        .expose()
                        .to_string(),
                    (None, None) => String::new(),
                };
                let tls = KafkaTls { ca_file: a.ca_file.clone(), ..Default::default() };
                Ok(Connection {
                    brokers: vec![a.broker()],
                    tls: Some(Arc::new(tls_config(&tls)?)),
                    // Event Hubs' Kafka endpoint: the connection string is the password.
                    sasl: Some(SaslConfig::Plain(Credentials::new("$ConnectionString".into(), conn))),
                })
            }
            other => anyhow::bail!("type {} does not read from Kafka", other.as_str()),
        }
    }

    /// A client builder: rskafka's own retries give up after `deadline`, so
    /// that the source's backoff (and its one message) takes over.
    pub fn builder(&self, deadline: Duration) -> ClientBuilder {
        let backoff = rskafka::BackoffConfig {
            init_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_secs(2),
            base: 2.0,
            deadline: Some(deadline),
        };
        let mut b = ClientBuilder::new(self.brokers.clone()).client_id("tailship").backoff_config(backoff);
        if let Some(t) = &self.tls {
            b = b.tls_config(t.clone());
        }
        if let Some(s) = &self.sasl {
            b = b.sasl_config(s.clone());
        }
        b
    }
}

/// The brokers' TLS: the system's and webpki's roots plus `ca_file`, a
/// client certificate when `cert_file` is set, the name checked being
/// `server_name` if set, and no check at all with `insecure_skip_verify`.
fn tls_config(t: &KafkaTls) -> anyhow::Result<rustls::ClientConfig> {
    let read =
        |p: &std::path::Path, what: &str| std::fs::read(p).map_err(|e| anyhow::anyhow!("{what} {}: {e}", p.display()));
    let ca = t.ca_file.as_deref().map(|p| read(p, "ca_file")).transpose()?;
    let identity = match (&t.cert_file, &t.key_file) {
        (Some(c), Some(k)) => Some((read(c, "cert_file")?, read(k, "key_file")?)),
        _ => None,
    };
    if t.insecure_skip_verify {
        tracing::warn!(
            "kafka: TLS certificate verification is off (insecure_skip_verify): use this only for test setups"
        );
    }
    let settings = crate::client::tls::Settings {
        server_name: t.server_name.as_deref(),
        insecure_skip_verify: t.insecure_skip_verify,
        extra_ca: ca.as_deref(),
        identity: identity.as_ref().map(|(c, k)| (c.as_slice(), k.as_slice())),
        alpn: Vec::new(),
    };
    crate::client::tls::config(&settings).map_err(|e| anyhow::anyhow!("tls: {e}"))
}
