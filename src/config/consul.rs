//! A file source's targets from the Consul catalog (`sources[].consul`,
//! Promtail's `consul_sd_configs`): plain data and its checks.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::util::{HumanDuration, Secret};

/// Where the Consul catalog is and which services' instances become targets.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default)]
pub struct ConsulConfig {
    /// The Consul agent or server, `host:port`.
    pub server: String,
    /// `http` or `https`.
    pub scheme: String,
    /// A prefix of every API path (Consul behind a proxy).
    pub path_prefix: String,
    /// The datacenter asked; unset: the agent's own (`/v1/agent/self`).
    pub datacenter: Option<String>,
    /// Consul Enterprise namespace and admin partition.
    pub namespace: Option<String>,
    pub partition: Option<String>,
    /// The ACL token (`X-Consul-Token`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub token: Option<Secret>,
    /// A file holding the token, read at start.
    pub token_file: Option<PathBuf>,
    /// Services to watch; empty: every service (with all of `tags`).
    pub services: Vec<String>,
    /// Only instances carrying every one of these tags.
    pub tags: Vec<String>,
    /// Only instances on nodes with this metadata.
    pub node_meta: BTreeMap<String, String>,
    /// A filter expression of the catalog's service list (Consul's `filter`).
    pub filter: Option<String>,
    /// A filter expression of each service's instances (`filter` of the health API).
    pub health_filter: Option<String>,
    /// Joins the tags in `__meta_consul_tags` (and surrounds them).
    pub tag_separator: String,
    /// Let any server answer (Consul's `stale` consistency mode).
    pub allow_stale: bool,
    /// The catalog is watched with blocking queries of at most this long,
    /// and each service's instances are read again at least this often.
    pub refresh_interval: HumanDuration,
    /// Ask the local agent's API (Promtail's `consulagent_sd_configs`, labels
    /// `__meta_consulagent_*`) instead of the catalog.
    pub agent: bool,
    /// TLS to an `https` Consul: `client.tls`'s keys.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tls: Option<super::TlsConfig>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub basic_auth: Option<super::BasicAuth>,
}

impl Default for ConsulConfig {
    fn default() -> Self {
        Self {
            server: "localhost:8500".into(),
            scheme: "http".into(),
            path_prefix: String::new(),
            datacenter: None,
            namespace: None,
            partition: None,
            token: None,
            token_file: None,
            services: Vec::new(),
            tags: Vec::new(),
            node_meta: BTreeMap::new(),
            filter: None,
            health_filter: None,
            tag_separator: ",".into(),
            allow_stale: true,
            refresh_interval: HumanDuration::secs(30),
            agent: false,
            tls: None,
            basic_auth: None,
        }
    }
}

impl ConsulConfig {
    /// The base URL of the API: `scheme://server/path_prefix`.
    pub fn base_url(&self) -> String {
        let prefix = self.path_prefix.trim_matches('/');
        if prefix.is_empty() {
            format!("{}://{}", self.scheme, self.server)
        } else {
            format!("{}://{}/{prefix}", self.scheme, self.server)
        }
    }
}

impl super::SdTable for ConsulConfig {
    fn validate(&self, kk: &str, _: &super::SourceConfig, e: &mut dyn FnMut(&str, String)) {
        validate_consul(kk, self, e);
    }
}

/// Checks a source's `consul` table (`kk` is its key).
fn validate_consul(kk: &str, c: &ConsulConfig, e: &mut dyn FnMut(&str, String)) {
    if c.scheme != "http" && c.scheme != "https" {
        e(&format!("{kk}.scheme"), format!("`{}` is not http or https", c.scheme));
    }
    match reqwest::Url::parse(&c.base_url()) {
        Ok(u) if u.host_str().is_some() && !c.server.contains('/') => {}
        _ => e(&format!("{kk}.server"), format!("`{}` is not host:port", c.server)),
    }
    if c.refresh_interval.get().is_zero() {
        e(&format!("{kk}.refresh_interval"), "must be above 0".into());
    }
    if c.token.is_some() && c.token_file.is_some() {
        e(&format!("{kk}.token"), "set token or token_file, not both".into());
    }
    if let Some(p) = &c.token_file {
        if let Err(err) = crate::util::read_secret_file(p) {
            e(&format!("{kk}.token_file"), format!("cannot read {}: {err}", p.display()));
        }
    }
    if c.tls.is_some() && c.scheme != "https" {
        e(&format!("{kk}.tls"), "is for scheme = \"https\"".into());
    }
    if let Some(b) = &c.basic_auth {
        if b.password.is_none() && b.password_file.is_none() {
            e(&format!("{kk}.basic_auth"), "needs password or password_file".into());
        }
        if let Some(p) = &b.password_file {
            if let Err(err) = crate::util::read_secret_file(p) {
                e(&format!("{kk}.basic_auth.password_file"), format!("cannot read {}: {err}", p.display()));
            }
        }
    }
}
