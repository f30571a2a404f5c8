//! The config of relabelling and of the discovery sources (`docker`): plain
//! data, compiled by `crate::plan` into `crate::relabel` rules.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::util::HumanDuration;

/// One Prometheus relabel rule (`sources[].relabel`), as Promtail's
/// `relabel_configs` write it. Unset fields take Prometheus' defaults
/// (`separator = ";"`, `regex = "(.*)"`, `replacement = "$1"`, `action = "replace"`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(default)]
pub struct RelabelConfig {
    /// Labels whose values, joined by `separator`, the regex is matched against.
    pub source_labels: Vec<String>,
    pub separator: Option<String>,
    /// A regex anchored at both ends (`^(?:REGEX)$`).
    pub regex: Option<String>,
    /// The label written by `replace`, `hashmod`, `lowercase`, `uppercase`
    /// (`replace` may use `$1`/`${name}`), or compared by `keepequal`/`dropequal`.
    pub target_label: Option<String>,
    /// What `replace` writes and `labelmap` names (`$1`, `${1}`, `${name}`).
    pub replacement: Option<String>,
    /// `hashmod`: the target gets the MD5 of the value modulo this.
    pub modulus: Option<u64>,
    /// replace, keep, drop, keepequal, dropequal, hashmod, labelmap,
    /// labeldrop, labelkeep, lowercase, uppercase.
    pub action: Option<String>,
}

/// Where a `docker` source reaches the Docker Engine, and which containers it takes.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(default)]
pub struct DockerConfig {
    /// The Engine API: `unix:///path/to/docker.sock` (the only scheme: no
    /// network is needed to reach a local Engine).
    pub host: String,
    /// Engine API filters of the container list, as Promtail's
    /// `docker_sd_configs.filters`: `{ label = ["com.example=x"], name = ["web"] }`.
    pub filters: BTreeMap<String, Vec<String>>,
    /// How often the container list is read again in full (events update it in between).
    pub refresh_interval: HumanDuration,
}

/// Default `sources[].docker.host`.
pub const DEFAULT_DOCKER_HOST: &str = "unix:///var/run/docker.sock";

impl Default for DockerConfig {
    fn default() -> Self {
        Self { host: DEFAULT_DOCKER_HOST.into(), filters: BTreeMap::new(), refresh_interval: HumanDuration::secs(60) }
    }
}
