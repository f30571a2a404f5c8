//! The config file's shape: serde structs with a safe default for every key.
//!
//! Durations and sizes are parsed while deserializing ([`HumanDuration`],
//! [`HumanSize`]); regexes, label names and cross-key rules are checked in
//! [`super::validate`], which reports every problem at once.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::{SourceConfig, StartAt, TlsConfig};
use crate::util::{HumanDuration, HumanSize, Secret};

/// The largest `client.batch.max_bytes` accepted: a real service fails
/// requests of a little over 4 MiB with 500 on every retry (DESIGN.md, 7).
pub const MAX_BATCH_BYTES: u64 = 4 << 20;

#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(default)]
pub struct Config {
    /// The agent's own HTTP endpoint (`/metrics`, `/healthz`, `/ready`).
    pub server: ServerConfig,
    /// Where and how lines are pushed: the one-client form. With
    /// `[[clients]]`, this is the first of them (queries and alert webhooks use it).
    pub client: ClientConfig,
    /// Several log services at once, each with every key of `client` and a
    /// `name`; each keeps its own positions, queue budget, batches and
    /// pushes. Empty: `client` is the one. Read them with [`Config::clients`].
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub clients: Vec<ClientConfig>,
    /// The bounded queue between sources and the batcher.
    pub queue: QueueConfig,
    /// Where file offsets are remembered across restarts.
    pub positions: PositionsConfig,
    /// Where network sources' lines wait on disk until every client has them.
    pub spool: super::SpoolConfig,
    /// How long a SIGTERM may take to flush and wait for acknowledgements.
    pub shutdown_timeout: ShutdownTimeout,
    pub sources: Vec<SourceConfig>,
    /// Rules that turn matching lines into formatted-webhook alerts (see `crate::alert`).
    pub alerts: Vec<AlertConfig>,
    /// The agent's own spans as OTLP traces (read at start; a reload keeps them).
    pub tracing: super::TracingConfig,
}

impl Config {
    /// The clients lines go to: `[[clients]]`, or the one `[client]`.
    pub fn clients(&self) -> &[ClientConfig] {
        if self.clients.is_empty() {
            std::slice::from_ref(&self.client)
        } else {
            &self.clients
        }
    }

    /// The names of the clients a source's lines go to (its `clients`, or all).
    pub fn clients_of<'a>(&'a self, source: &'a SourceConfig) -> impl Iterator<Item = &'a ClientConfig> + 'a {
        self.clients().iter().filter(move |c| source.clients.is_empty() || source.clients.contains(&c.name))
    }
}

#[derive(Debug, Clone, Copy, Deserialize, Serialize)]
#[serde(transparent)]
pub struct ShutdownTimeout(pub HumanDuration);

impl Default for ShutdownTimeout {
    fn default() -> Self {
        Self(HumanDuration::secs(10))
    }
}

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(default)]
pub struct ServerConfig {
    /// Address of the metrics and health endpoint; an empty string turns it off.
    pub listen: String,
    /// Most connections open at once; more wait in the kernel's queue.
    pub max_connections: usize,
    /// A client must send a whole request header within this (also the idle
    /// timeout of a kept-alive connection).
    pub header_read_timeout: HumanDuration,
    /// Also serve Promtail's metrics under their names and labels
    /// (`promtail_sent_entries_total`, ...), for Promtail's dashboards and alerts.
    pub promtail_metrics: bool,
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            listen: "127.0.0.1:9080".into(),
            max_connections: 64,
            header_read_timeout: HumanDuration::secs(10),
            promtail_metrics: false,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Compression {
    #[default]
    Gzip,
    None,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default)]
pub struct ClientConfig {
    /// The client's name in `sources[].clients`, metrics (`client` label),
    /// `/status` and the positions file.
    pub name: String,
    pub url: String,
    /// Path prefix of the log API: `/logstore/api/v1`, or `/loki/api/v1` for
    /// Loki. Unset: the agent and the commands ask the service which of the
    /// two answers (see `crate::client::prefix`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub api_prefix: Option<String>,
    /// Sent as `X-Scope-OrgID` on every push; unset for a single-tenant service.
    pub tenant_id: Option<String>,
    pub compression: Compression,
    /// gzip level, 1 (fastest) to 9 (smallest).
    pub compression_level: u32,
    pub timeout: HumanDuration,
    pub basic_auth: Option<BasicAuth>,
    /// Sent as `Authorization: Bearer ...`.
    pub bearer_token: Option<Secret>,
    pub bearer_token_file: Option<PathBuf>,
    /// OAuth 2.0 client credentials: a token fetched from `token_url`, sent
    /// as `Authorization: Bearer ...` and fetched again before it expires.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub oauth2: Option<super::OAuth2Config>,
    pub tls: TlsConfig,
    /// An HTTP(S) proxy for every request, such as `http://proxy:3128`
    /// (credentials in the URL are a secret). Without it, `HTTPS_PROXY`,
    /// `HTTP_PROXY`, `ALL_PROXY` and `NO_PROXY` apply.
    pub proxy_url: Option<Secret>,
    /// Hosts reached without the proxy (`example.com,.internal,10.0.0.0/8`);
    /// needs `proxy_url` (without it, `NO_PROXY` of the environment).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub no_proxy: Option<String>,
    /// Headers sent to the proxy (such as `Proxy-Authorization`); values are
    /// secrets. Needs `proxy_url`.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub proxy_connect_header: BTreeMap<String, Secret>,
    /// Extra headers on every request to the log service (push, query,
    /// labels); their values are secrets, redacted in `check` and logs.
    pub headers: BTreeMap<String, Secret>,
    /// Send values named by a stage's `structured_metadata` as Loki 3
    /// structured metadata (a third element of each value). Off by default:
    /// the service in spec/ documents `[timestamp, line]` pairs only.
    pub structured_metadata: bool,
    pub batch: BatchConfig,
    pub retry: RetryConfig,
    pub rate_limit: RateLimitConfig,
    /// Labels added to every line this client pushes (a source's own label
    /// of the same name wins).
    pub external_labels: BTreeMap<String, String>,
    /// Standard input never waits for this client: when its queue is full,
    /// stdin's lines for it are dropped and counted (`reason="best_effort"`).
    /// Files and the journal always wait on disk.
    pub best_effort: bool,
    /// Where a client with no saved positions starts (one added to a
    /// running agent, or to a config whose other clients have positions).
    /// Unset: where the others are (history is not sent again); `beginning`
    /// or `end`: as a source's `start_at`.
    pub start_at: Option<StartAt>,
    /// After a restart, lines that were in flight are looked up in the
    /// service before they are sent again (`auto`: when this client's
    /// credentials can query; `off`: never, they go again with the
    /// timestamps they first had).
    pub reconcile: Reconcile,
    /// Follow a redirect the service answers with (up to 10). Off: a 3xx is
    /// a misconfiguration, said once, and the lines wait on disk.
    pub follow_redirects: bool,
    /// Offer HTTP/2 over TLS (off: HTTP/1.1 only).
    pub http2: bool,
    /// `url` was not given (in the file or by `TAILSHIP_CLIENT__URL`): the
    /// default is used, which `check` and `run` say.
    #[serde(skip)]
    pub url_defaulted: bool,
}

/// See [`ClientConfig::reconcile`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Reconcile {
    #[default]
    Auto,
    Off,
}

pub use crate::util::DEFAULT_CLIENT;

/// The log API prefix of the service of `spec/` (`tailship receive` serves it).
pub const SPEC_API_PREFIX: &str = "/logstore/api/v1";
/// Loki's log API prefix.
pub const LOKI_API_PREFIX: &str = "/loki/api/v1";

impl ClientConfig {
    /// The API prefix requests use: `api_prefix`, else the spec's (until
    /// the service was asked which one it serves).
    pub fn prefix(&self) -> &str {
        self.api_prefix.as_deref().unwrap_or(SPEC_API_PREFIX)
    }
}

/// The other of the two known prefixes (`None` for any other prefix).
pub fn other_api_prefix(prefix: &str) -> Option<&'static str> {
    match prefix.trim_end_matches('/') {
        SPEC_API_PREFIX => Some(LOKI_API_PREFIX),
        LOKI_API_PREFIX => Some(SPEC_API_PREFIX),
        _ => None,
    }
}

impl Default for ClientConfig {
    fn default() -> Self {
        Self {
            name: DEFAULT_CLIENT.into(),
            url: "http://127.0.0.1:3100".into(),
            api_prefix: None,
            tenant_id: None,
            compression: Compression::Gzip,
            compression_level: 1,
            timeout: HumanDuration::secs(10),
            basic_auth: None,
            bearer_token: None,
            bearer_token_file: None,
            oauth2: None,
            tls: TlsConfig::default(),
            proxy_url: None,
            no_proxy: None,
            proxy_connect_header: BTreeMap::new(),
            headers: BTreeMap::new(),
            structured_metadata: false,
            batch: BatchConfig::default(),
            retry: RetryConfig::default(),
            rate_limit: RateLimitConfig::default(),
            external_labels: BTreeMap::new(),
            best_effort: false,
            start_at: None,
            reconcile: Reconcile::Auto,
            follow_redirects: true,
            http2: true,
            url_defaulted: false,
        }
    }
}

#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(default)]
pub struct BasicAuth {
    pub username: String,
    /// A file holding the username (read at start and at reload).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub username_file: Option<PathBuf>,
    pub password: Option<Secret>,
    pub password_file: Option<PathBuf>,
}

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(default)]
pub struct BatchConfig {
    /// A batch is sent when its encoded lines reach this size (at most 4 MiB).
    pub max_bytes: HumanSize,
    /// ...or when its oldest line has waited this long.
    pub max_wait: HumanDuration,
    /// Pushes in flight at once.
    pub max_in_flight: usize,
}

impl Default for BatchConfig {
    fn default() -> Self {
        Self { max_bytes: HumanSize(1 << 20), max_wait: HumanDuration::secs(1), max_in_flight: 4 }
    }
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default)]
pub struct RetryConfig {
    pub min_backoff: HumanDuration,
    pub max_backoff: HumanDuration,
    /// 0 retries until delivered (files wait on disk meanwhile).
    pub max_retries: usize,
}

impl Default for RetryConfig {
    fn default() -> Self {
        Self { min_backoff: HumanDuration::millis(500), max_backoff: HumanDuration::secs(300), max_retries: 0 }
    }
}

#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(default)]
pub struct RateLimitConfig {
    /// Bytes on the wire per second; 0 turns the limit off.
    pub bytes_per_second: HumanSize,
    /// Largest burst; 0 means one second's worth (or one batch, if larger).
    pub burst_bytes: HumanSize,
}

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(default)]
pub struct QueueConfig {
    /// Bytes of lines held between the sources and the pushes.
    pub max_bytes: HumanSize,
}

impl Default for QueueConfig {
    fn default() -> Self {
        Self { max_bytes: HumanSize(16 << 20) }
    }
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default)]
pub struct PositionsConfig {
    pub path: PathBuf,
    pub sync_period: HumanDuration,
    /// What `run` does with a positions file (or a log beside it) that exists
    /// but cannot be read (permissions, a directory in its place) or is
    /// corrupt: `stop` (exit 2 naming it: nothing is read again behind the
    /// operator's back) or `start_fresh` (moved aside to `.corrupt`; files are
    /// read again per `start_at`). `run --fresh-positions` is `start_fresh` once.
    pub on_unreadable: OnUnreadable,
}

impl Default for PositionsConfig {
    fn default() -> Self {
        Self {
            path: PathBuf::from("/var/lib/tailship/positions.json"),
            sync_period: HumanDuration::secs(10),
            on_unreadable: OnUnreadable::Stop,
        }
    }
}

/// `positions.on_unreadable`: see [`PositionsConfig`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum OnUnreadable {
    /// `run` exits 2 naming the file and how to start without it.
    #[default]
    Stop,
    /// The file is moved aside to `<path>.corrupt` and the agent starts without positions.
    StartFresh,
}

/// Which streams a rule watches: a table of label equalities (`{ job = "app" }`),
/// or a stream selector string (`'{job="app", level=~"ERROR|WARN"}'`, with `=`,
/// `!=`, `=~`, `!~`; regexes are fully anchored). Empty: every stream.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(untagged)]
pub enum AlertSelector {
    Labels(BTreeMap<String, String>),
    Query(String),
}

impl Default for AlertSelector {
    fn default() -> Self {
        Self::Labels(BTreeMap::new())
    }
}

/// Default `alerts[].title`.
pub const DEFAULT_ALERT_TITLE: &str = "{{rule}}: {{matches}}";
/// Default `alerts[].message`.
pub const DEFAULT_ALERT_MESSAGE: &str =
    "{{matches}} since {{since}} ({{total}} since the alert opened) in {{selector}}\nfirst: {{first_line}}\nlast: {{last_line}}";
/// Default `alerts[].resolved_title`.
pub const DEFAULT_ALERT_RESOLVED_TITLE: &str = "{{rule}}: resolved";
/// Default `alerts[].resolved_message`.
pub const DEFAULT_ALERT_RESOLVED_MESSAGE: &str =
    "No matching line since {{last_match}} in {{selector}} ({{total_matches}} while open).";
/// Default `alerts[].webhook_limit`: updates per 5 minutes to one webhook URL. The
/// service answers 429 past about 300 per 5 minutes per integration; the
/// limiter's worst 5-minute window holds exactly this many.
pub const DEFAULT_WEBHOOK_LIMIT: u32 = 250;

/// One `[[alerts]]` rule.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default)]
pub struct AlertConfig {
    /// Names the rule in metrics, logs, and (with the labels) the alert_uid.
    pub name: String,
    pub selector: AlertSelector,
    /// A line matching this regex (unanchored) counts as a match.
    #[serde(rename = "match")]
    pub pattern: String,
    /// ...unless it also matches this one.
    pub exclude: Option<String>,
    /// The formatted webhook URL; its path holds the integration key, a secret.
    pub webhook_url: Option<Secret>,
    /// A file holding the URL (read at start).
    pub webhook_url_file: Option<PathBuf>,
    /// Labels that identify one alert group; unset: all labels of the stream.
    pub group_by: Option<Vec<String>>,
    /// Further matches of an open group are folded into one update per interval.
    pub group_interval: HumanDuration,
    /// A group with no match for this long is sent with `state: ok`.
    pub resolve_after: HumanDuration,
    /// Also resolve every open group when the agent stops.
    pub resolve_on_shutdown: bool,
    /// Webhook requests of this rule per minute (any 60 s window).
    pub max_per_minute: u32,
    /// Requests per 5 minutes to this rule's webhook URL, shared by every rule
    /// posting to the same URL (the smallest value among them applies).
    pub webhook_limit: u32,
    /// Templates of the payload (see the `{{...}}` variables in `config/tailship.toml`).
    pub title: String,
    pub message: String,
    pub resolved_title: String,
    pub resolved_message: String,
    /// `link_to_upstream_details`, e.g. a query URL built from `{{selector|urlencode}}`.
    pub link: Option<String>,
    pub image_url: Option<String>,
    /// Also annotate the hosted instance when an alert group opens.
    pub annotations: Option<AnnotationsConfig>,
}

impl Default for AlertConfig {
    fn default() -> Self {
        Self {
            name: String::new(),
            selector: AlertSelector::default(),
            pattern: String::new(),
            exclude: None,
            webhook_url: None,
            webhook_url_file: None,
            group_by: None,
            group_interval: HumanDuration::secs(60),
            resolve_after: HumanDuration::secs(300),
            resolve_on_shutdown: false,
            max_per_minute: 10,
            webhook_limit: DEFAULT_WEBHOOK_LIMIT,
            title: DEFAULT_ALERT_TITLE.into(),
            message: DEFAULT_ALERT_MESSAGE.into(),
            resolved_title: DEFAULT_ALERT_RESOLVED_TITLE.into(),
            resolved_message: DEFAULT_ALERT_RESOLVED_MESSAGE.into(),
            link: None,
            image_url: None,
            annotations: None,
        }
    }
}

/// `alerts[].annotations`: an annotation through the instance's HTTP API
/// (`POST {url}/api/annotations`, service-account bearer token).
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(default)]
pub struct AnnotationsConfig {
    /// Base URL of the instance, such as `https://myorg.example.net`.
    pub url: String,
    /// Service-account token (`Authorization: Bearer ...`).
    pub token: Option<Secret>,
    pub token_file: Option<PathBuf>,
    /// Sent as `X-Service-Org-Id`; unset: the token's own org.
    pub org_id: Option<i64>,
    /// Extra tags; the rule name, `tailship` and the group's `name:value` labels are always added.
    pub tags: Vec<String>,
}
