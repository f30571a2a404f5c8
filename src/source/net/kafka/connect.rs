//! How a `kafka` or `azure_event_hubs` source reaches its brokers: their
//! addresses, TLS (rustls: the system's roots, webpki's and `ca_file`; a
//! client certificate) and SASL (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512), as
//! an `rskafka` client builder.

use std::sync::Arc;
use std::time::Duration;

use rskafka::client::{ClientBuilder, Credentials, SaslConfig};
use tokio_rustls::rustls;
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};

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

/// The brokers' TLS: the system's and webpki's roots plus `ca_file`, and a
/// client certificate when `cert_file` is set.
fn tls_config(t: &KafkaTls) -> anyhow::Result<rustls::ClientConfig> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut roots = rustls::RootCertStore::empty();
    roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    for cert in rustls_native_certs::load_native_certs().certs {
        let _ = roots.add(cert);
    }
    if let Some(p) = &t.ca_file {
        let pem = std::fs::read(p).map_err(|e| anyhow::anyhow!("ca_file {}: {e}", p.display()))?;
        for cert in CertificateDer::pem_slice_iter(&pem) {
            let cert = cert.map_err(|e| anyhow::anyhow!("ca_file {} is not PEM: {e}", p.display()))?;
            roots.add(cert).map_err(|e| anyhow::anyhow!("ca_file {}: {e}", p.display()))?;
        }
    }
    let builder = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_root_certificates(roots);
    Ok(match (&t.cert_file, &t.key_file) {
        (Some(c), Some(k)) => {
            let pem = std::fs::read(c).map_err(|e| anyhow::anyhow!("cert_file {}: {e}", c.display()))?;
            let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(&pem)
                .collect::<Result<_, _>>()
                .map_err(|e| anyhow::anyhow!("cert_file {} is not PEM: {e}", c.display()))?;
            let key = PrivateKeyDer::from_pem_file(k).map_err(|e| anyhow::anyhow!("key_file {}: {e}", k.display()))?;
            builder.with_client_auth_cert(chain, key)?
        }
        _ => builder.with_no_client_auth(),
    })
}
