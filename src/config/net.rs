//! The network receivers' config: `[spool]` (where received lines wait on
//! disk until every client has them) and a `syslog`, `loki_push`, `otlp`,
//! `gelf` or `heroku_drain` source's `listen`, `protocol` and `receiver` keys.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::{SourceConfig, SourceType};
use crate::util::{HumanDuration, HumanSize};

/// `[spool]`: received lines are written here (and fsynced) before the
/// sender is told they were received.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(default)]
pub struct SpoolConfig {
    /// A directory; each network source writes segments in its own subdirectory.
    pub path: PathBuf,
    /// The most bytes all segments may take; past it, senders are refused or slowed.
    pub max_bytes: HumanSize,
    /// A segment is closed (and a new one begun) past this size.
    pub segment_bytes: HumanSize,
}

impl Default for SpoolConfig {
    fn default() -> Self {
        Self {
            path: PathBuf::from("/var/lib/tailship/spool"),
            max_bytes: HumanSize(1 << 30),
            segment_bytes: HumanSize(16 << 20),
        }
    }
}

/// `protocol` of a syslog source.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum NetProtocol {
    #[default]
    Tcp,
    Udp,
}

/// A receiver's TLS: its certificate and key (PEM).
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(default)]
pub struct ServerTls {
    pub cert_file: PathBuf,
    pub key_file: PathBuf,
    /// CA certificates (PEM): when set, a sender must present a certificate
    /// they signed (mutual TLS: how syslog over TLS authenticates senders).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_ca_file: Option<PathBuf>,
}

/// Basic auth a receiver asks of its senders.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(default)]
pub struct ReceiverBasicAuth {
    pub username: String,
    /// A file holding the password (read at start).
    pub password_file: PathBuf,
}

/// `receiver = { ... }` of a network source.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(default)]
pub struct ReceiverConfig {
    /// Senders must present these credentials (HTTP receivers).
    pub basic_auth: Option<ReceiverBasicAuth>,
    /// A file holding the bearer token senders must present (HTTP receivers).
    pub bearer_token_file: Option<PathBuf>,
    /// TLS on the listening socket (syslog over TCP, and the HTTP receivers).
    pub tls: Option<ServerTls>,
    /// A request body (HTTP) larger than this is refused; a message (syslog,
    /// GELF) larger is cut there and counted. Unset: 8 MiB for the HTTP
    /// receivers, 64 KiB for syslog, 1 MiB for GELF (see [`ReceiverConfig::message_bytes`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_message_bytes: Option<HumanSize>,
    /// Connections open at once. Past it, the connection idle longest is
    /// closed to make room for the new one; when none is idle, a new HTTP
    /// connection waits in the kernel's queue and a new syslog one is closed
    /// and counted.
    pub max_connections: usize,
    /// A connection that sends nothing for this long is closed.
    pub idle_timeout: HumanDuration,
    /// An HTTP request whose header and body do not arrive whole within this
    /// is refused (408): a slow sender cannot hold a connection for long.
    pub request_timeout: HumanDuration,
    /// Bytes the receiver may hold in memory before they are on disk, for
    /// all its connections together: request bodies and what they decode
    /// to, syslog messages not whole yet, GELF chunks waiting for the rest.
    /// Past it, input is refused (429, a count) until some is written.
    pub max_pending_bytes: HumanSize,
    /// Syslog, GELF, Heroku drains, Loki pushes: keep the message's own timestamp (else the time it was received).
    pub use_incoming_timestamp: bool,
    /// Syslog: structured data elements become labels (else structured metadata).
    pub label_structured_data: bool,
    /// OTLP: resource, scope or log attributes that become labels (dots
    /// become underscores; default `service.name`); the other attributes
    /// become structured metadata.
    pub attribute_labels: Vec<String>,
}

impl Default for ReceiverConfig {
    fn default() -> Self {
        Self {
            basic_auth: None,
            bearer_token_file: None,
            tls: None,
            max_message_bytes: None,
            max_connections: 256,
            idle_timeout: HumanDuration::secs(120),
            request_timeout: HumanDuration::secs(30),
            max_pending_bytes: HumanSize(64 << 20),
            use_incoming_timestamp: true,
            label_structured_data: false,
            attribute_labels: vec!["service.name".to_string()],
        }
    }
}

impl ReceiverConfig {
    /// `max_message_bytes`, or the default of a source of type `kind`.
    pub fn message_bytes(&self, kind: SourceType) -> u64 {
        if let Some(n) = self.max_message_bytes {
            return n.get();
        }
        match kind {
            // RFC 5425 asks receivers to take 8 KiB at least; Promtail's default is 8 KiB.
            SourceType::Syslog => 64 << 10,
            // 128 chunks of a GELF datagram are about 1 MiB.
            SourceType::Gelf => 1 << 20,
            _ => 8 << 20,
        }
    }
}

impl SourceType {
    /// True for sources that receive lines over the network (and spool them).
    pub fn receives(self) -> bool {
        self.reading() == super::Reading::Spooled
    }

    /// True for sources that read from Kafka brokers (and spool what they read).
    pub fn consumes(self) -> bool {
        matches!(self, Self::Kafka | Self::AzureEventHubs)
    }

    /// Where a receiver listens when `listen` is not set (loopback only).
    pub fn default_listen(self) -> &'static str {
        match self {
            Self::Syslog => "127.0.0.1:1514",
            Self::LokiPush => "127.0.0.1:3500",
            Self::Otlp => "127.0.0.1:4318",
            Self::Gelf => "127.0.0.1:12201",
            Self::HerokuDrain => "127.0.0.1:8514",
            Self::Gcplog => "127.0.0.1:8515",
            _ => "",
        }
    }
}

impl SourceConfig {
    /// A network source's listening address.
    pub fn listen_addr(&self) -> &str {
        self.listen.as_deref().unwrap_or(self.kind.default_listen())
    }
}

/// A network source's own keys, and the keys they do not take.
pub(super) fn validate_net_source(key: &str, s: &SourceConfig, e: &mut dyn FnMut(&str, String)) {
    if !s.kind.receives() && s.stream_idle_period.is_some() {
        e(
            &format!("{key}.stream_idle_period"),
            "stream_idle_period is for network and pulling sources (label sets they receive); a file source's \
             streams are freed with its files"
                .into(),
        );
    }
    if !s.kind.receives() || s.kind.consumes() {
        reject_receiver_keys(key, s, e);
        return;
    }
    validate_listener(key, s, e);
    let r = s.receiver.clone().unwrap_or_default();
    validate_receiver_limits(key, s, &r, e);
    validate_receiver_tls(key, s, &r, e);
    validate_receiver_auth(key, s, &r, e);
}

/// A source that does not listen (a file, stdin or pulling source) with a
/// network source's keys; a consuming source (kafka, cloudflare pulls)
/// with a file source's keys.
fn reject_receiver_keys(key: &str, s: &SourceConfig, e: &mut dyn FnMut(&str, String)) {
    for (k, set) in
        [("listen", s.listen.is_some()), ("protocol", s.protocol.is_some()), ("receiver", s.receiver.is_some())]
    {
        if set {
            e(
                &format!("{key}.{k}"),
                format!("{k} is for network sources (syslog, loki_push, otlp, gelf, heroku_drain, gcplog)"),
            );
        }
    }
    if s.kind.consumes() {
        if !s.include.is_empty() || !s.exclude.is_empty() {
            e(&format!("{key}.include"), "include and exclude are for file sources".into());
        }
        if s.multiline.is_some() {
            e(&format!("{key}.multiline"), "multiline is for file and stdin sources: a message is one entry".into());
        }
    }
}

/// A listening source's own keys beside `receiver`: `listen`, `protocol`,
/// `relabel`, and the file source's keys it does not take.
fn validate_listener(key: &str, s: &SourceConfig, e: &mut dyn FnMut(&str, String)) {
    if !s.include.is_empty() || !s.exclude.is_empty() {
        e(&format!("{key}.include"), "include and exclude are for file sources".into());
    }
    if s.multiline.is_some() {
        e(
            &format!("{key}.multiline"),
            "multiline is for file and stdin sources: a received message is one entry".into(),
        );
    }
    if s.kind != SourceType::Cloudflare && s.listen_addr().parse::<std::net::SocketAddr>().is_err() {
        e(
            &format!("{key}.listen"),
            format!("`{}` is not an address and port (such as 127.0.0.1:1514)", s.listen_addr()),
        );
    }
    if !s.relabel.is_empty()
        && !matches!(
            s.kind,
            SourceType::Syslog | SourceType::Gelf | SourceType::HerokuDrain | SourceType::Gcplog | SourceType::LokiPush
        )
    {
        e(
            &format!("{key}.relabel"),
            "relabel rules apply to the __syslog_*, __gelf_*, __heroku_drain_* and __gcp_* labels and to pushed \
             streams' labels"
                .into(),
        );
    }

    if s.protocol.is_some() && s.kind != SourceType::Syslog {
        e(&format!("{key}.protocol"), "protocol is for syslog sources (HTTP receivers use TCP)".into());
    }
}

/// `receiver`'s bounds: connections, message and pending bytes, timeouts.
fn validate_receiver_limits(key: &str, s: &SourceConfig, r: &ReceiverConfig, e: &mut dyn FnMut(&str, String)) {
    if r.max_connections == 0 {
        e(&format!("{key}.receiver.max_connections"), "must be at least 1".into());
    }
    if r.message_bytes(s.kind) < 64 {
        e(&format!("{key}.receiver.max_message_bytes"), "must be at least 64".into());
    }
    if r.max_pending_bytes.get() < r.message_bytes(s.kind) {
        e(
            &format!("{key}.receiver.max_pending_bytes"),
            format!(
                "must be at least max_message_bytes ({}): one whole message must fit",
                bytesize::ByteSize(r.message_bytes(s.kind))
            ),
        );
    }
    if r.idle_timeout.get().is_zero() {
        e(&format!("{key}.receiver.idle_timeout"), "must be above 0".into());
    }
    if r.request_timeout.get().is_zero() {
        e(&format!("{key}.receiver.request_timeout"), "must be above 0".into());
    }
}

/// `receiver.tls`: only over TCP, and its files readable.
fn validate_receiver_tls(key: &str, s: &SourceConfig, r: &ReceiverConfig, e: &mut dyn FnMut(&str, String)) {
    let Some(tls) = &r.tls else { return };
    if s.protocol == Some(NetProtocol::Udp) {
        e(&format!("{key}.receiver.tls"), "TLS is for TCP; a UDP syslog source cannot have it".into());
    }
    if s.kind == SourceType::Gelf {
        e(&format!("{key}.receiver.tls"), "GELF is received over UDP, which has no TLS".into());
    }
    let ca = tls.client_ca_file.as_ref().map(|p| ("client_ca_file", p));
    for (k, p) in [("cert_file", &tls.cert_file), ("key_file", &tls.key_file)].into_iter().chain(ca) {
        if let Err(err) = std::fs::metadata(p) {
            e(&format!("{key}.receiver.tls.{k}"), format!("cannot read {}: {err}", p.display()));
        }
    }
}

/// `receiver.basic_auth` and `receiver.bearer_token_file`: readable, and
/// only on HTTP receivers.
fn validate_receiver_auth(key: &str, s: &SourceConfig, r: &ReceiverConfig, e: &mut dyn FnMut(&str, String)) {
    if let Some(b) = &r.basic_auth {
        if b.username.is_empty() {
            e(&format!("{key}.receiver.basic_auth.username"), "must not be empty".into());
        }
        if let Err(err) = crate::util::read_secret_file(&b.password_file) {
            e(
                &format!("{key}.receiver.basic_auth.password_file"),
                format!("cannot read {}: {err}", b.password_file.display()),
            );
        }
    }
    if let Some(p) = &r.bearer_token_file {
        if let Err(err) = crate::util::read_secret_file(p) {
            e(&format!("{key}.receiver.bearer_token_file"), format!("cannot read {}: {err}", p.display()));
        }
    }
    if (r.basic_auth.is_some() || r.bearer_token_file.is_some())
        && matches!(s.kind, SourceType::Syslog | SourceType::Gelf)
    {
        e(
            &format!("{key}.receiver.basic_auth"),
            "auth is for HTTP receivers (loki_push, otlp, heroku_drain, gcplog push)".into(),
        );
    }
}

/// `[spool]` keys.
pub(super) fn validate_spool(s: &SpoolConfig, e: &mut dyn FnMut(&str, String)) {
    if s.path.as_os_str().is_empty() {
        e("spool.path", "must not be empty".into());
    }
    if s.segment_bytes.get() < 4096 {
        e("spool.segment_bytes", "must be at least 4096".into());
    }
    if s.max_bytes.get() < s.segment_bytes.get() * 2 {
        e("spool.max_bytes", "must be at least twice spool.segment_bytes".into());
    }
}
