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

/// A `kubernetes` source's pod metadata: where the API server is and which
/// node's pods to watch. Without it, pods are labelled from their log path only.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(default)]
pub struct KubernetesConfig {
    /// The API server's URL; unset: in-cluster (`KUBERNETES_SERVICE_HOST` and
    /// `_PORT`), or the current context of `kubeconfig`.
    pub api_server: Option<String>,
    /// A kubeconfig file (its current context's server, CA and token);
    /// unset: the in-cluster service account.
    pub kubeconfig: Option<std::path::PathBuf>,
    /// The service account token, read again for every request (tokens rotate).
    pub token_file: std::path::PathBuf,
    /// The CA bundle the API server's certificate is checked against.
    pub ca_file: std::path::PathBuf,
    /// Whose pods to watch; unset: `$NODE_NAME` (the DaemonSet sets it from
    /// `spec.nodeName`), else this machine's hostname.
    pub node_name: Option<String>,
    /// A log file whose pod is not known yet waits this long for it, then
    /// ships with its path labels only (counted as `pod_unknown`).
    pub wait_for_pod: HumanDuration,
}

/// The in-cluster service account's files.
pub const SERVICE_ACCOUNT_DIR: &str = "/var/run/secrets/kubernetes.io/serviceaccount";

impl Default for KubernetesConfig {
    fn default() -> Self {
        Self {
            api_server: None,
            kubeconfig: None,
            token_file: std::path::Path::new(SERVICE_ACCOUNT_DIR).join("token"),
            ca_file: std::path::Path::new(SERVICE_ACCOUNT_DIR).join("ca.crt"),
            node_name: None,
            wait_for_pod: HumanDuration::secs(5),
        }
    }
}
