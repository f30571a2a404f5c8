//! A source's config (`[[sources]]`): its type, what it reads and the keys
//! each kind of source takes, and their check.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::StageConfig;
use crate::util::{is_valid_label_name, HumanDuration, HumanSize};

/// A source's `max_streams` unless set: far more than a sane label set
/// gives, far fewer than Loki's per-tenant stream limit (5,000 by default)
/// lets one bad label take.
pub const DEFAULT_MAX_STREAMS: usize = 1000;
/// A receiver's `max_streams` per tenant unless set: Loki's own per-tenant
/// stream limit (`max_global_streams_per_user`), so a relay never merges
/// streams the service would have kept.
pub const DEFAULT_RECEIVED_STREAMS: usize = 5000;
/// A receiver's `stream_idle_period` unless set: Loki's own stream idle
/// time, its ingester's `chunk_idle_period` (30m by default in Loki's
/// configuration reference, `-ingester.chunks-idle-period`; its
/// `chunk_retain_period` after the flush is 0s by default): a stream that
/// went that long without a line is flushed and stops counting toward the
/// tenant's stream limit.
pub const DEFAULT_STREAM_IDLE: HumanDuration = HumanDuration::secs(30 * 60);

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum SourceType {
    #[default]
    File,
    Stdin,
    /// Pod logs of a Kubernetes node (`root`), read as CRI lines and
    /// labelled `namespace`, `pod`, `container` and `stream`.
    Kubernetes,
    /// The systemd journal, read through `journalctl` (see `crate::source::journal`).
    Journal,
    /// The json-file logs of the containers of a Docker Engine, found
    /// through its API (see `crate::source::docker`).
    Docker,
    /// Syslog over TCP or UDP (RFC 5424 and RFC 3164), spooled (see `crate::source::net`).
    Syslog,
    /// The Loki push API (`POST /loki/api/v1/push`): a relay, spooled.
    LokiPush,
    /// OTLP/HTTP logs (`POST /v1/logs`), spooled.
    Otlp,
    /// GELF over UDP (plain, gzip or zlib, chunked), spooled (see `crate::source::net::gelf`).
    Gelf,
    /// Heroku HTTPS log drains (`POST /heroku/api/v1/drain`, logplex frames), spooled.
    HerokuDrain,
    /// Kafka topics read from their brokers (`kafka = { ... }`), spooled (see `crate::source::net::kafka`).
    Kafka,
    /// Azure Event Hubs through its Kafka endpoint (`azure_event_hubs = { ... }`), spooled.
    AzureEventHubs,
    /// Google Cloud Logging entries from a Pub/Sub subscription (pulled, or
    /// pushed to `POST /gcp/api/v1/push`), spooled.
    Gcplog,
    /// A zone's HTTP request logs pulled from Cloudflare's Logpull API, spooled.
    Cloudflare,
}

/// Where kubelet keeps pod logs.
pub const DEFAULT_POD_ROOT: &str = "/var/log/pods";

impl SourceConfig {
    /// A `kubernetes` source's pod log directory.
    pub fn pod_root(&self) -> PathBuf {
        self.root.clone().unwrap_or_else(|| PathBuf::from(DEFAULT_POD_ROOT))
    }

    /// `max_streams`, or the default of this kind of source (0: no bound).
    pub fn stream_bound(&self) -> usize {
        match self.max_streams {
            Some(n) => n,
            None if self.kind.receives() => DEFAULT_RECEIVED_STREAMS,
            None => DEFAULT_MAX_STREAMS,
        }
    }

    /// `stream_idle_period`, or Loki's stream idle time (zero: never forgotten).
    pub fn stream_idle(&self) -> std::time::Duration {
        self.stream_idle_period.unwrap_or(DEFAULT_STREAM_IDLE).get()
    }
}

/// How the agent reads a source of a type. [`SourceType::reading`] is the
/// one place that sorts the types this way, so that the agent that starts a
/// source, the plan that compiles it and the checks agree on each new type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reading {
    /// Files found by `include` globs (`file`, `kubernetes`).
    Globs,
    /// The json-file logs of the containers a Docker Engine names.
    Docker,
    /// The systemd journal.
    Journal,
    /// Standard input.
    Stdin,
    /// Lines received (or pulled) over the network and spooled before they
    /// are read.
    Spooled,
}

impl SourceType {
    /// True for sources that tail files (`file`, `kubernetes`, `docker`).
    pub fn reads_files(self) -> bool {
        matches!(self, Self::File | Self::Kubernetes | Self::Docker)
    }

    /// How the agent reads a source of this type.
    pub fn reading(self) -> Reading {
        match self {
            Self::File | Self::Kubernetes => Reading::Globs,
            Self::Docker => Reading::Docker,
            Self::Journal => Reading::Journal,
            Self::Stdin => Reading::Stdin,
            Self::Syslog
            | Self::LokiPush
            | Self::Otlp
            | Self::Gelf
            | Self::HerokuDrain
            | Self::Kafka
            | Self::AzureEventHubs
            | Self::Gcplog
            | Self::Cloudflare => Reading::Spooled,
        }
    }

    /// The name of the type in the config.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::File => "file",
            Self::Stdin => "stdin",
            Self::Kubernetes => "kubernetes",
            Self::Journal => "journal",
            Self::Docker => "docker",
            Self::Syslog => "syslog",
            Self::LokiPush => "loki_push",
            Self::Otlp => "otlp",
            Self::Gelf => "gelf",
            Self::HerokuDrain => "heroku_drain",
            Self::Kafka => "kafka",
            Self::AzureEventHubs => "azure_event_hubs",
            Self::Gcplog => "gcplog",
            Self::Cloudflare => "cloudflare",
        }
    }
}

/// Default `sources[].max_age` of a journal source: Promtail's default, so a
/// first start reads the last few hours, not a journal of months that the
/// service would refuse as too old (over 7 days).
pub const DEFAULT_JOURNAL_MAX_AGE: HumanDuration = HumanDuration::secs(7 * 3600);

/// A journal source's `unit` label.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum UnitLabel {
    /// `_SYSTEMD_UNIT`, else `SYSLOG_IDENTIFIER` (kernel messages: `kernel`).
    #[default]
    UnitOrIdentifier,
    /// `_SYSTEMD_UNIT` only, as Promtail's `__journal__systemd_unit` rule gives it.
    SystemdUnit,
    /// No `unit` label.
    None,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum StartAt {
    #[default]
    Beginning,
    End,
}

/// Writes [`SourceConfig`] and its `Default`: its own keys (`name: Type =
/// default,`), then an optional table per discovery of `super::discoveries!`.
macro_rules! source_table {
    ([$(#[$m:meta])* pub struct $name:ident {
        $($(#[$fm:meta])* pub $f:ident: $t:ty = $d:expr,)*
    }] $($(#[$doc:meta])* $key:ident: $variant:ident($ty:ty),)*) => {
        $(#[$m])*
        pub struct $name {
            $($(#[$fm])* pub $f: $t,)*
            $($(#[$doc])* pub $key: Option<$ty>,)*
        }

        impl Default for $name {
            fn default() -> Self {
                Self { $($f: $d,)* $($key: None,)* }
            }
        }
    };
}

super::discoveries!(source_table[
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default)]
pub struct SourceConfig {
    #[serde(rename = "type")]
    pub kind: SourceType = SourceType::File,
    /// Name used in metrics; defaults to `file-N`, `stdin-N` or `journal-N` by position.
    pub name: Option<String> = None,
    /// Globs of files to tail (`*`, `?`, `[..]`, `**`).
    pub include: Vec<String> = Vec::new(),
    /// Globs of paths (or file names) never to tail.
    pub exclude: Vec<String> = Vec::new(),
    /// A `kubernetes` source's pod log directory
    /// (`<root>/<namespace>_<pod>_<uid>/<container>/<n>.log`; default `/var/log/pods`).
    pub root: Option<PathBuf> = None,
    /// Static labels of every line from this source.
    pub labels: BTreeMap<String, String> = BTreeMap::new(),
    /// Overrides `client.tenant_id` for this source's lines.
    pub tenant_id: Option<String> = None,
    /// The names of the clients this source's lines go to (empty: every client).
    pub clients: Vec<String> = Vec::new(),
    /// Where to start in a file with no saved position (a journal: with no saved cursor).
    pub start_at: StartAt = StartAt::Beginning,
    /// Journal: the journal directory to read (`journalctl --directory`);
    /// unset: the system journal.
    pub path: Option<PathBuf> = None,
    /// Journal: `FIELD=value` matches as journalctl takes them (the same
    /// field ORed, different fields ANDed); empty: every entry.
    pub matches: Vec<String> = Vec::new(),
    /// Journal: without journalctl on `PATH`, leave the source out (said
    /// once) instead of refusing to run.
    pub optional: bool = false,
    /// Journal: each line is the whole entry as a JSON object of its fields
    /// (Promtail's `journal.json`) instead of its `MESSAGE`.
    pub json: bool = false,
    /// Journal: with no saved cursor and `start_at = "beginning"`, entries
    /// older than this are skipped (0: the whole journal).
    pub max_age: HumanDuration = DEFAULT_JOURNAL_MAX_AGE,
    /// Journal: a saved cursor whose entry is older than `max_age` is not
    /// resumed from; the source starts as without one (Promtail's journal
    /// target does so; off by default: a cursor is resumed from however old).
    pub cursor_max_age: bool = false,
    /// Journal: where the `unit` label comes from (see [`UnitLabel`]).
    pub unit_label: UnitLabel = UnitLabel::UnitOrIdentifier,
    /// Journal: add a `level` label, the syslog name of `PRIORITY`.
    pub level_label: bool = true,
    /// Journal: the entry's address fields (`__CURSOR`,
    /// `__REALTIME_TIMESTAMP`, `__MONOTONIC_TIMESTAMP`) in the `json` line
    /// and offered to `relabel` rules as `__journal___cursor`, ...;
    /// Promtail 3.6 shows neither.
    pub address_fields: bool = true,
    /// Skip files not modified for this long (0 turns it off).
    pub ignore_older: HumanDuration = HumanDuration::secs(24 * 3600),
    /// How often globs are rescanned (file events wake the scan earlier).
    pub scan_interval: HumanDuration = HumanDuration::secs(10),
    /// Files held open at once; the rest wait their turn.
    pub max_open_files: usize = 1024,
    /// Longer lines are truncated to this many bytes and counted.
    pub max_line_bytes: HumanSize = HumanSize(256 << 10),
    /// Distinct label sets the source's stages may make (0: no bound); see
    /// `pipeline::stream_limit`. A receiver's bound is per tenant and counts
    /// the label sets it receives too. Unset: see [`SourceConfig::stream_bound`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_streams: Option<usize> = None,
    /// Network and pulling sources: a received label set that brings no
    /// line for this long no longer counts toward `max_streams`, as Loki
    /// forgets an idle stream (0: never forgotten). Unset: 30m, Loki's
    /// `chunk_idle_period`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stream_idle_period: Option<HumanDuration> = None,
    /// A last line without a newline is shipped after this long idle.
    pub partial_line_wait: HumanDuration = HumanDuration::secs(3),
    /// Add a `host` label with this machine's hostname.
    pub host_label: bool = true,
    pub multiline: Option<MultilineConfig> = None,
    /// A file source's compressed files: formats and the delay before reading one.
    pub decompression: Option<super::DecompressionConfig> = None,
    /// Prometheus relabel rules over the labels of each file (or of stdin):
    /// the static ones, `host`, `filename`, `__path__` and a discovery
    /// source's `__meta_*` labels. A file they drop is not read; labels
    /// starting `__` are removed after them.
    pub relabel: Vec<super::RelabelConfig> = Vec::new(),
    pub stages: Vec<StageConfig> = Vec::new(),
    /// A network source's address (default: loopback, see [`SourceType::default_listen`]).
    pub listen: Option<String> = None,
    /// A syslog source's transport (`tcp`, the default, or `udp`).
    pub protocol: Option<super::NetProtocol> = None,
    /// A network source's limits, TLS and auth.
    pub receiver: Option<super::ReceiverConfig> = None,
    /// A `kafka` source's brokers, topics and authentication.
    pub kafka: Option<super::KafkaConfig> = None,
    /// An `azure_event_hubs` source's namespace, event hubs and connection string.
    pub azure_event_hubs: Option<super::AzureEventHubsConfig> = None,
    /// A `gcplog` source's subscription.
    pub gcplog: Option<super::GcplogConfig> = None,
    /// A `cloudflare` source's zone and token.
    pub cloudflare: Option<super::CloudflareConfig> = None,
}]);

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

pub(super) fn validate_source(key: &str, s: &SourceConfig, e: &mut dyn FnMut(&str, String)) {
    if let Some(name) = &s.name {
        if name.is_empty() || name.chars().any(char::is_control) {
            e(&format!("{key}.name"), format!("{name:?} is not a source name (one line of printable text)"));
        }
    }
    for name in s.labels.keys() {
        if !is_valid_label_name(name) {
            e(&format!("{key}.labels.{name}"), format!("`{name}` is not a valid label name ([a-zA-Z_][a-zA-Z0-9_]*)"));
        }
    }
    if s.root.is_some() && s.kind != SourceType::Kubernetes {
        e(&format!("{key}.root"), "`root` is for kubernetes sources (type = \"kubernetes\")".into());
    }
    match s.kind {
        SourceType::File | SourceType::Kubernetes | SourceType::Docker => validate_file_reading(key, s, e),
        SourceType::Stdin => {
            if !s.include.is_empty() || !s.exclude.is_empty() {
                e(&format!("{key}.include"), "include and exclude are for file sources".into());
            }
        }
        SourceType::Journal => validate_journal(key, s, e),
        SourceType::Syslog
        | SourceType::LokiPush
        | SourceType::Otlp
        | SourceType::Gelf
        | SourceType::HerokuDrain
        | SourceType::Gcplog
        | SourceType::Cloudflare
        | SourceType::Kafka
        | SourceType::AzureEventHubs => {}
    }
    super::discoveries::validate_discoveries(key, s, e);
    journal_only_keys(key, s, e);
    validate_delivery(key, s, e);
}

/// What a source that tails files (`file`, `kubernetes`, `docker`) reads.
fn validate_file_reading(key: &str, s: &SourceConfig, e: &mut dyn FnMut(&str, String)) {
    match s.kind {
        SourceType::File => {
            if s.include.is_empty() && s.discoveries().is_empty() {
                e(
                    &format!("{key}.include"),
                    "a file source needs at least one glob (or `targets_from`, or a discovery such as `consul`)".into(),
                );
            }
        }
        SourceType::Kubernetes => {
            if !s.include.is_empty() {
                e(
                    &format!("{key}.include"),
                    "a kubernetes source reads every pod log below `root`; use `exclude` to skip some".into(),
                );
            }
            if !s.pod_root().is_absolute() {
                e(&format!("{key}.root"), format!("`{}` is not an absolute path", s.pod_root().display()));
            }
        }
        SourceType::Docker => {
            if !s.include.is_empty() {
                e(
                    &format!("{key}.include"),
                    "a docker source reads the logs of the containers the Engine lists; use `docker.filters` or \
                     `relabel` to choose them"
                        .into(),
                );
            }
        }
        _ => return,
    }
    if s.max_open_files == 0 {
        e(&format!("{key}.max_open_files"), "must be at least 1".into());
    }
}

/// What a journal source reads, and keys of file sources set on it.
fn validate_journal(key: &str, s: &SourceConfig, e: &mut dyn FnMut(&str, String)) {
    if !s.include.is_empty() {
        e(&format!("{key}.include"), "include is for file sources; a journal source reads `path`".into());
    }
    if !s.exclude.is_empty() {
        e(&format!("{key}.exclude"), "exclude is for file sources; a journal source filters with `matches`".into());
    }
    if s.multiline.is_some() {
        e(
            &format!("{key}.multiline"),
            "multiline is for file and stdin sources: a journal source joins entries with a `multiline` \
             stage in its `stages`"
                .into(),
        );
    }
    if s.path.as_ref().is_some_and(|p| p.as_os_str().is_empty()) {
        e(&format!("{key}.path"), "must not be empty (leave it out for the system journal)".into());
    }
}

/// The tenant, line size and multiline rule of what the source sends.
fn validate_delivery(key: &str, s: &SourceConfig, e: &mut dyn FnMut(&str, String)) {
    if let Some(t) = &s.tenant_id {
        if t.contains('|') {
            e(&format!("{key}.tenant_id"), "must be one tenant (a push cannot carry `a|b`)".into());
        } else if let Some(why) = crate::util::tenant_problem(t) {
            e(&format!("{key}.tenant_id"), format!("`{}`: {why}", t.escape_debug()));
        }
    }
    if s.max_line_bytes.get() < 16 {
        e(&format!("{key}.max_line_bytes"), "must be at least 16".into());
    }
    if let Some(m) = &s.multiline {
        if m.start.is_empty() {
            e(&format!("{key}.multiline.start"), "a multiline source needs a start regex".into());
        }
        if m.max_lines == 0 {
            e(&format!("{key}.multiline.max_lines"), "must be at least 1".into());
        }
    }
}

/// Keys only a journal source takes, set on another source.
fn journal_only_keys(key: &str, s: &SourceConfig, e: &mut dyn FnMut(&str, String)) {
    if s.kind != SourceType::Journal {
        if s.path.is_some() {
            e(&format!("{key}.path"), "path is for journal sources (a file source takes include globs)".into());
        }
        for (k, set) in [
            ("matches", !s.matches.is_empty()),
            ("optional", s.optional),
            ("json", s.json),
            ("cursor_max_age", s.cursor_max_age),
            ("unit_label", s.unit_label != UnitLabel::UnitOrIdentifier),
            ("level_label", !s.level_label),
            ("address_fields", !s.address_fields),
        ] {
            if set {
                e(&format!("{key}.{k}"), format!("{k} is for journal sources"));
            }
        }
    }
}
