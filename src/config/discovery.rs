//! The config of relabelling and of the `docker` discovery source: plain
//! data, compiled by `crate::plan` into `crate::relabel` rules.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::http_table::http_table;
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

http_table! {
    /// Where a `docker` source reaches the Docker Engine, and which containers
    /// it takes. The HTTP client keys are for an Engine reached over the
    /// network: `tls` (`tcp://` with `tls` set is spoken over TLS), one
    /// credential (for an Engine behind a proxy that asks for it), a proxy.
    #[derive(Debug, Clone, Deserialize, Serialize)]
    #[serde(default)]
    pub struct DockerConfig {
        /// The Engine API: `unix:///path/to/docker.sock` (logs read from the
        /// Engine's json-file logs on this machine's disk), or `tcp://host:port`,
        /// `http://host:port` or `https://host:port` (an Engine elsewhere: logs
        /// read through the API's `/containers/{id}/logs`).
        pub host: String = DEFAULT_DOCKER_HOST.into(),
        /// Engine API filters of the container list, as Promtail's
        /// `docker_sd_configs.filters`: `{ label = ["com.example=x"], name = ["web"] }`.
        pub filters: BTreeMap<String, Vec<String>> = BTreeMap::new(),
        /// How often the container list is read again in full (events update it in between).
        pub refresh_interval: HumanDuration = HumanDuration::secs(60),
        tls;
        auth;
        proxy;
        /// The host in `__address__` of containers on the host network (Prometheus' `host_networking_host`).
        pub host_networking_host: String = "localhost".into(),
        /// The port in `__address__` of containers that expose none (Prometheus' `port`).
        pub port: u16 = 80,
        /// `dockerswarm` only: which swarm objects are the targets.
        #[serde(skip_serializing_if = "Option::is_none")]
        pub role: Option<SwarmRole> = None,
    }
}

/// What a `dockerswarm` source's targets are (Prometheus' `role`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SwarmRole {
    /// One target per task (a service's container) and network address.
    Tasks,
    /// One target per service and virtual IP.
    Services,
    /// One target per node of the swarm.
    Nodes,
}

/// Default `sources[].docker.host`.
pub const DEFAULT_DOCKER_HOST: &str = "unix:///var/run/docker.sock";

/// Where a `docker.host` is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DockerHost {
    /// A local Engine's socket: logs are read from disk.
    Socket(std::path::PathBuf),
    /// An Engine reached over the network at this base URL (`http://` or `https://`).
    Url(String),
}

impl DockerConfig {
    /// `host` read: `unix:///path`, `tcp://h:p` (`https://` when `tls` is
    /// set, else `http://`), `http://h:p` or `https://h:p`.
    pub fn endpoint(&self) -> Result<DockerHost, String> {
        let h = self.host.as_str();
        if let Some(p) = h.strip_prefix("unix://") {
            return if p.starts_with('/') {
                Ok(DockerHost::Socket(p.into()))
            } else {
                Err(format!("`{h}` is not unix:///absolute/path/to/docker.sock"))
            };
        }
        let url = match h.strip_prefix("tcp://") {
            Some(rest) if self.tls.is_some() => format!("https://{rest}"),
            Some(rest) => format!("http://{rest}"),
            None => h.to_string(),
        };
        match reqwest::Url::parse(&url) {
            Ok(u) if (u.scheme() == "http" || u.scheme() == "https") && u.host_str().is_some() => {
                Ok(DockerHost::Url(url.trim_end_matches('/').to_string()))
            }
            _ => Err(format!(
                "`{h}` is not unix:///path/to/docker.sock, tcp://host:port, http://host:port or https://host:port"
            )),
        }
    }
}

impl super::SdTable for DockerConfig {
    fn validate(&self, kk: &str, s: &super::SourceConfig, e: &mut dyn FnMut(&str, String)) {
        match s.kind {
            super::SourceType::Docker => validate_docker(kk, self, e),
            _ => e(kk, "`docker` is for docker sources (type = \"docker\")".into()),
        }
    }
}

/// Checks a docker source's `docker` table (`kk` is its key).
fn validate_docker(kk: &str, d: &DockerConfig, e: &mut dyn FnMut(&str, String)) {
    if d.role.is_some() {
        e(&format!("{kk}.role"), "is for `dockerswarm` (a file source's Docker Swarm targets)".into());
    }
    validate_engine(kk, d, e);
}

/// A file source's `dockerswarm` table: a Docker Engine's keys, and the
/// swarm objects that are the targets (`role`).
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(transparent)]
pub struct SwarmConfig(pub DockerConfig);

impl std::ops::Deref for SwarmConfig {
    type Target = DockerConfig;
    fn deref(&self) -> &DockerConfig {
        &self.0
    }
}

impl super::SdTable for SwarmConfig {
    fn validate(&self, kk: &str, _: &super::SourceConfig, e: &mut dyn FnMut(&str, String)) {
        validate_dockerswarm(kk, self, e);
    }
}

/// Checks a file source's `dockerswarm` table (`kk` is its key).
fn validate_dockerswarm(kk: &str, d: &DockerConfig, e: &mut dyn FnMut(&str, String)) {
    if d.role.is_none() {
        e(&format!("{kk}.role"), "is required: tasks, services or nodes".into());
    }
    if d.host_networking_host != DockerConfig::default().host_networking_host {
        e(&format!("{kk}.host_networking_host"), "is for docker sources; swarm targets have no host network".into());
    }
    validate_engine(kk, d, e);
}

/// Checks the Engine settings of `d`, whose key is `kk`.
fn validate_engine(kk: &str, d: &DockerConfig, e: &mut dyn FnMut(&str, String)) {
    let endpoint = d.endpoint();
    if let Err(m) = &endpoint {
        e(&format!("{kk}.host"), m.clone());
    }
    if d.refresh_interval.get().is_zero() {
        e(&format!("{kk}.refresh_interval"), "must be above 0".into());
    }
    let remote = matches!(endpoint, Ok(DockerHost::Url(_)));
    if let Some(t) = &d.tls {
        if !remote {
            e(&format!("{kk}.tls"), "is for an Engine reached over tcp:// or https://".into());
        }
        if let Ok(DockerHost::Url(u)) = &endpoint {
            if u.starts_with("http://") {
                e(&format!("{kk}.tls"), format!("`{}` is plain http://: use tcp:// or https://", d.host));
            }
        }
        let pems = [("ca_file", &t.ca_file, t.ca.is_some()), ("cert_file", &t.cert_file, t.cert.is_some())];
        for (name, file, inline) in pems {
            if file.is_some() && inline {
                e(&format!("{kk}.tls.{name}"), "give the PEM once: as a file or inline".into());
            }
            if let Some(p) = file {
                if let Err(err) = std::fs::metadata(p) {
                    e(&format!("{kk}.tls.{name}"), format!("cannot read {}: {err}", p.display()));
                }
            }
        }
        if let Some(p) = &t.key_file {
            if let Err(err) = std::fs::metadata(p) {
                e(&format!("{kk}.tls.key_file"), format!("cannot read {}: {err}", p.display()));
            }
        }
        if t.identity().is_none()
            && (t.cert_file.is_some() || t.cert.is_some() || t.key_file.is_some() || t.key.is_some())
        {
            e(&format!("{kk}.tls"), "a client certificate needs both cert (or cert_file) and key (or key_file)".into());
        }
    }
    if let Some(b) = &d.basic_auth {
        if !remote {
            e(&format!("{kk}.basic_auth"), "is for an Engine reached over tcp:// or http(s)://".into());
        }
        super::client::validate_basic_auth(b, &format!("{kk}.basic_auth"), e);
    }
    let set = d.http().credentials();
    let given: Vec<&str> = set.iter().filter(|(s, _)| *s).map(|(_, n)| *n).collect();
    if given.len() > 1 {
        e(
            &format!("{kk}.{}", given[1]),
            format!("set one of basic_auth, bearer_token, bearer_token_file and oauth2 (also set: {})", given[0]),
        );
    }
    for (name, is_set) in [
        ("bearer_token", d.bearer_token.is_some()),
        ("bearer_token_file", d.bearer_token_file.is_some()),
        ("oauth2", d.oauth2.is_some()),
        ("proxy_url", d.proxy_url.is_some()),
    ] {
        if is_set && !remote {
            e(&format!("{kk}.{name}"), "is for an Engine reached over tcp:// or http(s)://".into());
        }
    }
    d.http().validate_token_keys(kk, e);
    d.http().validate_proxy(kk, e);
    if d.host_networking_host.is_empty() {
        e(&format!("{kk}.host_networking_host"), "must not be empty".into());
    }
}
