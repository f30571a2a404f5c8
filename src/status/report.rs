//! The shape of `/status.json`: what the agent serves and `tailship top`
//! reads. Rates say so in their names (`_per_s`, over the last 10 s); times
//! are Unix milliseconds (`_ms`); sizes and offsets are bytes.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The whole status at one moment.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Report {
    pub version: String,
    /// When the report was made.
    pub now_ms: u64,
    /// When the agent started.
    pub started_ms: u64,
    /// `/ready`'s answer: `None` when ready, else why not.
    pub not_ready: Option<String>,
    pub sources: Vec<SourceReport>,
    /// Every client's together (the URL: each client's, comma-separated).
    pub queue: QueueReport,
    pub push: PushReport,
    /// Each client's own: its queue, its pushes, why it is not ready.
    #[serde(default)]
    pub clients: Vec<ClientReport>,
    pub positions: PositionsReport,
    pub alerts: Vec<AlertReport>,
    /// The network sources' listeners.
    #[serde(default)]
    pub listeners: Vec<ListenerReport>,
}

/// One network source's listener (`syslog`, `loki_push`, `otlp`).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ListenerReport {
    /// The source's name.
    pub name: String,
    #[serde(rename = "type")]
    pub kind: String,
    /// `tcp`, `udp`, `tls` or `http`.
    pub protocol: String,
    /// Where it listens.
    pub address: String,
    pub connections: u64,
    /// Lines received and spooled (the sender was told), in total.
    pub lines_received: u64,
    /// Requests, messages, datagrams or connections refused or dropped, by reason.
    pub refused: BTreeMap<String, u64>,
    /// Messages that did not parse, kept as their raw line.
    pub unparsed: u64,
    /// Bytes of the source's spool segments on disk.
    pub spool_bytes: u64,
}

/// One source of the config.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct SourceReport {
    pub name: String,
    /// `file`, `stdin` or `kubernetes`.
    #[serde(rename = "type")]
    pub kind: String,
    pub lines_per_s: f64,
    pub bytes_per_s: f64,
    /// A file source's files; empty for stdin.
    pub files: Vec<FileReport>,
}

/// What a file is doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
#[repr(u8)]
pub enum FileState {
    /// Open at its path; new lines are read as they come.
    #[default]
    Following = 0,
    /// Rotated away or deleted: read to its end, then closed.
    Draining = 1,
    /// Closed to stay under `max_open_files`; reopened when it grows.
    Parked = 2,
    /// Read to its end and closed (drained after rotation, or read once).
    Done = 3,
    /// Not read: untouched for longer than `ignore_older` (read once it is written to again).
    Skipped = 4,
}

impl FileState {
    pub fn from_u8(v: u8) -> Self {
        match v {
            1 => Self::Draining,
            2 => Self::Parked,
            3 => Self::Done,
            4 => Self::Skipped,
            _ => Self::Following,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Following => "following",
            Self::Draining => "draining",
            Self::Parked => "parked",
            Self::Done => "done",
            Self::Skipped => "skipped",
        }
    }
}

/// One file of a file source.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct FileReport {
    pub path: String,
    /// What the file is the log of, when a discovery knows: `container NAME`
    /// (Docker) or `pod NAMESPACE/POD/CONTAINER` (Kubernetes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    pub state: FileState,
    /// Up to here every line was acknowledged by the service (or dropped on purpose).
    pub delivered_offset: u64,
    /// Where the next read starts.
    pub read_offset: u64,
    pub size: u64,
    /// `size - delivered_offset`: bytes not yet delivered.
    pub lag_bytes: u64,
    pub lines_per_s: f64,
    pub bytes_per_s: f64,
}

/// One client (`[client]`, or one of `[[clients]]`).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ClientReport {
    pub name: String,
    /// Why this client is not ready (its last push failed), or `None`.
    pub not_ready: Option<String>,
    pub queue: QueueReport,
    pub push: PushReport,
}

/// The queue between the sources and the pushes.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct QueueReport {
    /// Bytes of lines read and not yet acknowledged.
    pub bytes_used: u64,
    /// `queue.max_bytes`.
    pub bytes_max: u64,
    pub lines: u64,
    pub batches_in_flight: u64,
    /// Age of the oldest line read and not yet acknowledged.
    pub oldest_unacknowledged_s: u64,
}

/// Pushes to the log service.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct PushReport {
    /// Where pushes go (credentials never appear here).
    pub url: String,
    /// Requests sent, and of those that failed (transport error or non-2xx).
    pub requests: u64,
    pub failures: u64,
    pub retries: u64,
    pub lines_total: u64,
    /// Lines and raw bytes acknowledged per second.
    pub lines_per_s: f64,
    pub bytes_per_s: f64,
    /// Latency of the recent requests (the last 1,024, at most 5 minutes old).
    pub latency_p50_ms: Option<f64>,
    pub latency_p99_ms: Option<f64>,
    pub last_error: Option<LastError>,
}

/// The last failure, and when.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct LastError {
    pub message: String,
    pub at_ms: u64,
}

/// The positions file.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct PositionsReport {
    pub path: String,
    /// When it was last written in this run (`None`: not yet).
    pub written_ms: Option<u64>,
}

/// One alert rule.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct AlertReport {
    pub rule: String,
    /// Groups sent as alerting and not yet resolved.
    pub open_groups: Vec<AlertGroup>,
    pub last_send: Option<AlertSend>,
}

/// An open alert group, by its labels.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct AlertGroup {
    pub labels: BTreeMap<String, String>,
}

/// The last webhook call of a rule.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct AlertSend {
    pub at_ms: u64,
    /// `alerting` or `ok`.
    pub state: String,
    /// Why it failed; `None` when it was delivered.
    pub error: Option<String>,
}

impl Report {
    /// Every file of every source, the most behind first.
    pub fn files_by_lag(&self) -> Vec<(&SourceReport, &FileReport)> {
        let mut all: Vec<_> = self.sources.iter().flat_map(|s| s.files.iter().map(move |f| (s, f))).collect();
        all.sort_by(|a, b| b.1.lag_bytes.cmp(&a.1.lag_bytes).then_with(|| a.1.path.cmp(&b.1.path)));
        all
    }
}
