//! The config file's shape: serde structs with a safe default for every key.
//!
//! Durations and sizes are parsed while deserializing ([`HumanDuration`],
//! [`HumanSize`]); regexes, label names and cross-key rules are checked in
//! [`super::validate`], which reports every problem at once.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::util::{HumanDuration, HumanSize, Secret};

/// The largest `client.batch.max_bytes` accepted: a real service fails
/// requests of a little over 4 MiB with 500 on every retry (DESIGN.md, 7).
pub const MAX_BATCH_BYTES: u64 = 4 << 20;

#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(default)]
pub struct Config {
    /// The agent's own HTTP endpoint (`/metrics`, `/healthz`, `/ready`).
    pub server: ServerConfig,
    /// Where and how lines are pushed.
    pub client: ClientConfig,
    /// The bounded queue between sources and the batcher.
    pub queue: QueueConfig,
    /// Where file offsets are remembered across restarts.
    pub positions: PositionsConfig,
    /// How long a SIGTERM may take to flush and wait for acknowledgements.
    pub shutdown_timeout: ShutdownTimeout,
    pub sources: Vec<SourceConfig>,
}

#[derive(Debug, Clone, Copy, Deserialize, Serialize)]
#[serde(transparent)]
pub struct ShutdownTimeout(pub HumanDuration);

impl Default for ShutdownTimeout {
    fn default() -> Self {
        Self(HumanDuration::secs(10))
    }
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default)]
pub struct ServerConfig {
    /// Address of the metrics and health endpoint; an empty string turns it off.
    pub listen: String,
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self { listen: "127.0.0.1:9080".into() }
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
    pub url: String,
    /// Path prefix of the log API: `/logstore/api/v1`, or `/loki/api/v1` for Loki.
    pub api_prefix: String,
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
    pub tls: TlsConfig,
    pub batch: BatchConfig,
    pub retry: RetryConfig,
    pub rate_limit: RateLimitConfig,
}

impl Default for ClientConfig {
    fn default() -> Self {
        Self {
            url: "http://127.0.0.1:3100".into(),
            api_prefix: "/logstore/api/v1".into(),
            tenant_id: None,
            compression: Compression::Gzip,
            compression_level: 1,
            timeout: HumanDuration::secs(10),
            basic_auth: None,
            bearer_token: None,
            bearer_token_file: None,
            tls: TlsConfig::default(),
            batch: BatchConfig::default(),
            retry: RetryConfig::default(),
            rate_limit: RateLimitConfig::default(),
        }
    }
}

#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(default)]
pub struct BasicAuth {
    pub username: String,
    pub password: Option<Secret>,
    pub password_file: Option<PathBuf>,
}

#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(default)]
pub struct TlsConfig {
    /// A PEM bundle of extra CA certificates to trust.
    pub ca_file: Option<PathBuf>,
    /// Accept any certificate: for self-signed test setups only (warned at start).
    pub insecure_skip_verify: bool,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
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

#[derive(Debug, Clone, Deserialize, Serialize)]
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
}

impl Default for PositionsConfig {
    fn default() -> Self {
        Self { path: PathBuf::from("/var/lib/tailship/positions.json"), sync_period: HumanDuration::secs(10) }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum SourceType {
    #[default]
    File,
    Stdin,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum StartAt {
    #[default]
    Beginning,
    End,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default)]
pub struct SourceConfig {
    #[serde(rename = "type")]
    pub kind: SourceType,
    /// Name used in metrics; defaults to `file-N` or `stdin-N` by position.
    pub name: Option<String>,
    /// Globs of files to tail (`*`, `?`, `[..]`, `**`).
    pub include: Vec<String>,
    /// Globs of paths (or file names) never to tail.
    pub exclude: Vec<String>,
    /// Static labels of every line from this source.
    pub labels: BTreeMap<String, String>,
    /// Overrides `client.tenant_id` for this source's lines.
    pub tenant_id: Option<String>,
    /// Where to start in a file with no saved position.
    pub start_at: StartAt,
    /// Skip files not modified for this long (0 turns it off).
    pub ignore_older: HumanDuration,
    /// How often globs are rescanned (file events wake the scan earlier).
    pub scan_interval: HumanDuration,
    /// Files held open at once; the rest wait their turn.
    pub max_open_files: usize,
    /// Longer lines are truncated to this many bytes and counted.
    pub max_line_bytes: HumanSize,
    /// A last line without a newline is shipped after this long idle.
    pub partial_line_wait: HumanDuration,
    /// Add a `host` label with this machine's hostname.
    pub host_label: bool,
    pub multiline: Option<MultilineConfig>,
    pub stages: Vec<StageConfig>,
}

impl Default for SourceConfig {
    fn default() -> Self {
        Self {
            kind: SourceType::File,
            name: None,
            include: Vec::new(),
            exclude: Vec::new(),
            labels: BTreeMap::new(),
            tenant_id: None,
            start_at: StartAt::Beginning,
            ignore_older: HumanDuration::secs(24 * 3600),
            scan_interval: HumanDuration::secs(10),
            max_open_files: 1024,
            max_line_bytes: HumanSize(256 << 10),
            partial_line_wait: HumanDuration::secs(3),
            host_label: true,
            multiline: None,
            stages: Vec::new(),
        }
    }
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default)]
pub struct MultilineConfig {
    /// A line matching this regex starts a new entry; others join the previous one.
    pub start: String,
    pub max_lines: usize,
    pub max_wait: HumanDuration,
}

impl Default for MultilineConfig {
    fn default() -> Self {
        Self { start: String::new(), max_lines: 128, max_wait: HumanDuration::secs(3) }
    }
}

/// One processing stage. Exactly one of `regex`, `drop` or `timestamp` is set.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(default)]
pub struct StageConfig {
    /// Named captures are extracted; those listed in `labels` become labels.
    pub regex: Option<String>,
    /// Which captures of `regex` become labels (all named captures when unset).
    pub labels: Option<Vec<String>>,
    /// Lines matching this regex are dropped and counted.
    pub drop: Option<String>,
    /// Take the entry's timestamp from an extracted value.
    pub timestamp: Option<TimestampStage>,
}

#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(default)]
pub struct TimestampStage {
    /// Name of a capture extracted by an earlier `regex` stage.
    pub source: String,
    /// `rfc3339`, `unix`, `unix_ms`, `unix_us`, `unix_ns`, or a strftime pattern.
    pub format: String,
}
