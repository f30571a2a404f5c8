//! Prometheus service discoveries a file source takes its targets from
//! (besides `consul`, `dockerswarm` and `kubernetes`): plain data and its
//! checks. Each has Prometheus' HTTP client keys (`super::http`) flat in its
//! table, as Promtail's config has them.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::http_table::http_table;
use super::TlsConfig;
use crate::util::{HumanDuration, Secret};

super::discoveries::checked_by!(
    MarathonConfig => validate_marathon,
    TritonConfig => validate_triton,
    DigitalOceanConfig => validate_digitalocean,
    DnsConfig => validate_dns,
    ServersetConfig => validate_zookeeper,
    NerveConfig => validate_zookeeper,
);

/// Checks that each URL of `urls` at `key` is http(s) with a host.
pub(super) fn validate_urls(key: &str, urls: &[String], e: &mut dyn FnMut(&str, String)) {
    for (i, u) in urls.iter().enumerate() {
        match reqwest::Url::parse(u) {
            Ok(p) if (p.scheme() == "http" || p.scheme() == "https") && p.host_str().is_some() => {}
            _ => e(&format!("{key}[{i}]"), format!("`{u}` is not an http:// or https:// URL")),
        }
    }
}

http_table! {
    /// Marathon's apps as targets (`sources[].marathon`, Promtail's `marathon_sd_configs`).
    #[derive(Debug, Clone, Deserialize, Serialize)]
    #[serde(default)]
    pub struct MarathonConfig {
        /// Marathon's URLs (`http://marathon:8080`); each refresh asks them in
        /// turn until one answers.
        pub servers: Vec<String> = Vec::new(),
        pub refresh_interval: HumanDuration = HumanDuration::secs(30),
        /// DC/OS's token, sent as `Authorization: token=<token>` (a secret).
        #[serde(skip_serializing_if = "Option::is_none")]
        pub auth_token: Option<Secret> = None,
        /// A file holding it, read again for every request.
        #[serde(skip_serializing_if = "Option::is_none")]
        pub auth_token_file: Option<PathBuf> = None,
        auth;
        tls;
        proxy;
    }
}

pub(super) fn validate_marathon(kk: &str, m: &MarathonConfig, e: &mut dyn FnMut(&str, String)) {
    if m.servers.is_empty() {
        e(&format!("{kk}.servers"), "needs at least one Marathon URL".into());
    }
    validate_urls(&format!("{kk}.servers"), &m.servers, e);
    if m.refresh_interval.get().is_zero() {
        e(&format!("{kk}.refresh_interval"), "must be above 0".into());
    }
    if let Some(p) = &m.auth_token_file {
        if let Err(err) = crate::util::read_secret_file(p) {
            e(&format!("{kk}.auth_token_file"), format!("cannot read {}: {err}", p.display()));
        }
    }
    let own = [(m.auth_token.is_some(), "auth_token"), (m.auth_token_file.is_some(), "auth_token_file")];
    m.http().validate(kk, &own, e);
}

/// Triton's containers or compute nodes as targets (`sources[].triton`,
/// Promtail's `triton_sd_configs`).
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default)]
pub struct TritonConfig {
    /// The account the discovery endpoint is asked for.
    pub account: String,
    /// `container` (the account's containers) or `cn` (compute nodes).
    pub role: TritonRole,
    /// The DNS suffix of a target's address (`<uuid>.<dns_suffix>:<port>`).
    pub dns_suffix: String,
    /// The discovery endpoint's host (asked over HTTPS).
    pub endpoint: String,
    /// Only containers in these groups.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<String>,
    /// The endpoint's port, and the targets' port.
    pub port: u16,
    pub refresh_interval: HumanDuration,
    /// The discovery API's version (`/v<version>/discover`).
    pub version: u32,
    /// TLS to the endpoint: a client certificate, usually (`client.tls`'s keys).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tls: Option<TlsConfig>,
}

/// What a `triton` source's targets are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TritonRole {
    Container,
    Cn,
}

impl Default for TritonConfig {
    fn default() -> Self {
        Self {
            account: String::new(),
            role: TritonRole::Container,
            dns_suffix: String::new(),
            endpoint: String::new(),
            groups: Vec::new(),
            port: 9163,
            refresh_interval: HumanDuration::secs(60),
            version: 1,
            tls: None,
        }
    }
}

pub(super) fn validate_triton(kk: &str, t: &TritonConfig, e: &mut dyn FnMut(&str, String)) {
    for (k, v) in [("account", &t.account), ("dns_suffix", &t.dns_suffix), ("endpoint", &t.endpoint)] {
        if v.is_empty() {
            e(&format!("{kk}.{k}"), "is required".into());
        }
    }
    if !t.endpoint.is_empty() && reqwest::Url::parse(&format!("https://{}:{}/", t.endpoint, t.port)).is_err() {
        e(&format!("{kk}.endpoint"), format!("`{}` is not a host name", t.endpoint));
    }
    if t.refresh_interval.get().is_zero() {
        e(&format!("{kk}.refresh_interval"), "must be above 0".into());
    }
    if let Some(tls) = &t.tls {
        super::tls::validate_tls(tls, &format!("{kk}.tls"), e);
    }
}

http_table! {
    /// DigitalOcean's droplets as targets (`sources[].digitalocean`, Promtail's
    /// `digitalocean_sd_configs`): the API at `https://api.digitalocean.com`,
    /// with a token (`bearer_token`, `bearer_token_file` or `oauth2`).
    #[derive(Debug, Clone, Deserialize, Serialize)]
    #[serde(default)]
    pub struct DigitalOceanConfig {
        pub refresh_interval: HumanDuration = HumanDuration::secs(60),
        /// The port of each droplet's `__address__`.
        pub port: u16 = 80,
        auth;
        tls;
        proxy;
    }
}

pub(super) fn validate_digitalocean(kk: &str, d: &DigitalOceanConfig, e: &mut dyn FnMut(&str, String)) {
    if d.refresh_interval.get().is_zero() {
        e(&format!("{kk}.refresh_interval"), "must be above 0".into());
    }
    d.http().validate(kk, &[], e);
}

/// DNS records as targets (`sources[].dns`, Promtail's `dns_sd_configs`),
/// asked of the resolvers of `/etc/resolv.conf`.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default)]
pub struct DnsConfig {
    /// The names looked up.
    pub names: Vec<String>,
    /// `SRV` (the default), `A`, `AAAA`, `MX` or `NS`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The port of each target but an SRV record's (which has its own).
    pub port: u16,
    pub refresh_interval: HumanDuration,
}

impl Default for DnsConfig {
    fn default() -> Self {
        Self { names: Vec::new(), kind: "SRV".into(), port: 0, refresh_interval: HumanDuration::secs(30) }
    }
}

pub(super) fn validate_dns(kk: &str, d: &DnsConfig, e: &mut dyn FnMut(&str, String)) {
    if d.names.is_empty() {
        e(&format!("{kk}.names"), "needs at least one name to look up".into());
    }
    match d.kind.to_ascii_uppercase().as_str() {
        "SRV" => {}
        "A" | "AAAA" | "MX" | "NS" if d.port == 0 => {
            e(&format!("{kk}.port"), format!("is required with type = \"{}\" (only SRV records carry a port)", d.kind))
        }
        "A" | "AAAA" | "MX" | "NS" => {}
        _ => e(&format!("{kk}.type"), format!("`{}` is not SRV, A, AAAA, MX or NS", d.kind)),
    }
    if d.refresh_interval.get().is_zero() {
        e(&format!("{kk}.refresh_interval"), "must be above 0".into());
    }
}

/// ZooKeeper znodes as targets: `sources[].serverset` (Promtail's
/// `serverset_sd_configs`, Finagle/Aurora serverset members) or
/// `sources[].nerve` (Promtail's `nerve_sd_configs`, AirBnB Nerve members).
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default)]
pub struct ZookeeperConfig {
    /// The ensemble, `host:port` each.
    pub servers: Vec<String>,
    /// The znodes under which the members are (each beginning with `/`).
    pub paths: Vec<String>,
    /// The session timeout.
    pub timeout: HumanDuration,
}

/// A source's `serverset` table (a [`ZookeeperConfig`]).
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(transparent)]
pub struct ServersetConfig(pub ZookeeperConfig);

/// A source's `nerve` table (a [`ZookeeperConfig`]).
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(transparent)]
pub struct NerveConfig(pub ZookeeperConfig);

impl std::ops::Deref for ServersetConfig {
    type Target = ZookeeperConfig;
    fn deref(&self) -> &ZookeeperConfig {
        &self.0
    }
}

impl std::ops::Deref for NerveConfig {
    type Target = ZookeeperConfig;
    fn deref(&self) -> &ZookeeperConfig {
        &self.0
    }
}

impl Default for ZookeeperConfig {
    fn default() -> Self {
        Self { servers: Vec::new(), paths: Vec::new(), timeout: HumanDuration::secs(10) }
    }
}

pub(super) fn validate_zookeeper(kk: &str, z: &ZookeeperConfig, e: &mut dyn FnMut(&str, String)) {
    if z.servers.is_empty() {
        e(&format!("{kk}.servers"), "needs at least one ZooKeeper server (host:port)".into());
    }
    for (i, s) in z.servers.iter().enumerate() {
        let ok = s.rsplit_once(':').is_some_and(|(h, p)| !h.is_empty() && p.parse::<u16>().is_ok());
        if !ok {
            e(&format!("{kk}.servers[{i}]"), format!("`{s}` is not host:port"));
        }
    }
    if z.paths.is_empty() {
        e(&format!("{kk}.paths"), "needs at least one znode path".into());
    }
    for (i, p) in z.paths.iter().enumerate() {
        if !p.starts_with('/') {
            e(&format!("{kk}.paths[{i}]"), format!("`{p}` does not begin with /"));
        }
    }
    if z.timeout.get().is_zero() {
        e(&format!("{kk}.timeout"), "must be above 0".into());
    }
}
