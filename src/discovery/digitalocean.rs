//! Targets from DigitalOcean (`sources[].digitalocean`, Promtail's
//! `digitalocean_sd_configs`), with Prometheus' `__meta_digitalocean_*` labels.
//!
//! Each refresh lists the account's droplets (`GET /v2/droplets`, page after
//! page while the answer links a next one). A droplet with an IPv4 network is
//! a target at its public IPv4 and `port`, with `__meta_digitalocean_droplet_id`,
//! `_droplet_name`, `_image`, `_image_name`, `_private_ipv4`, `_public_ipv4`,
//! `_public_ipv6`, `_region`, `_size`, `_status`, `_vpc`, and `_features` and
//! `_tags` (joined and surrounded by `,`) when it has any.

use serde::Deserialize;

use super::{join_host_port, Labels, Lister};
use crate::client::discovery::SdClient;
use crate::config::DigitalOceanConfig;

const P: &str = "__meta_digitalocean_";
/// DigitalOcean's API.
pub const API: &str = "https://api.digitalocean.com";

#[derive(Debug, Deserialize, Default)]
#[serde(default)]
pub struct Page {
    pub droplets: Vec<Droplet>,
    pub links: Links,
}

#[derive(Debug, Deserialize, Default)]
#[serde(default)]
pub struct Links {
    pub pages: Option<Pages>,
}

#[derive(Debug, Deserialize, Default)]
#[serde(default)]
pub struct Pages {
    pub next: Option<String>,
}

#[derive(Debug, Deserialize, Default)]
#[serde(default)]
pub struct Droplet {
    pub id: u64,
    pub name: String,
    pub status: String,
    pub size_slug: String,
    pub features: Vec<String>,
    pub tags: Vec<String>,
    pub vpc_uuid: String,
    pub image: Slugged,
    pub region: Slugged,
    pub networks: Option<Networks>,
}

#[derive(Debug, Deserialize, Default)]
#[serde(default)]
pub struct Slugged {
    pub slug: String,
    pub name: String,
}

#[derive(Debug, Deserialize, Default)]
#[serde(default)]
pub struct Networks {
    pub v4: Vec<Address>,
    pub v6: Vec<Address>,
}

#[derive(Debug, Deserialize, Default)]
#[serde(default)]
pub struct Address {
    pub ip_address: String,
    #[serde(rename = "type")]
    pub kind: String,
}

super::lister::listed_kind!(DigitalOceanConfig = DigitalOcean::new, every |c: &DigitalOceanConfig| c.refresh_interval.get());

/// The DigitalOcean account of a `digitalocean` section.
pub struct DigitalOcean {
    client: SdClient,
    port: u16,
}

impl DigitalOcean {
    pub fn new(cfg: &DigitalOceanConfig) -> Result<Self, crate::client::http::HttpError> {
        Ok(Self { client: SdClient::new(cfg.http(), false)?, port: cfg.port })
    }
}

impl Lister for DigitalOcean {
    fn describe(&self) -> String {
        format!("DigitalOcean at {API}")
    }

    async fn list(&mut self) -> Result<Vec<Labels>, String> {
        let mut out = Vec::new();
        let mut url = format!("{API}/v2/droplets?page=1&per_page=200");
        // A bound on the pages read, should the API link pages in a circle.
        for _ in 0..10_000 {
            let page: Page = self.client.get_json(&url, &[]).await.map_err(|e| e.to_string())?;
            out.extend(page.droplets.iter().filter_map(|d| droplet_target(d, self.port)));
            match page.links.pages.and_then(|p| p.next) {
                // Only DigitalOcean's own API is followed (the token goes with every request).
                Some(next) if next.starts_with(&format!("{API}/")) => url = next,
                _ => break,
            }
        }
        Ok(out)
    }
}

/// The first address of `kind` (`public`, `private`) among `addrs`, or "".
fn first(addrs: &[Address], kind: &str) -> String {
    addrs.iter().find(|a| a.kind == kind).map(|a| a.ip_address.clone()).unwrap_or_default()
}

/// A droplet's target; None without an IPv4 network (as Prometheus skips it).
pub fn droplet_target(d: &Droplet, port: u16) -> Option<Labels> {
    let nets = d.networks.as_ref().filter(|n| !n.v4.is_empty())?;
    let public = first(&nets.v4, "public");
    let mut l = Labels::from([
        ("__address__".to_string(), join_host_port(&public, port)),
        (format!("{P}droplet_id"), d.id.to_string()),
        (format!("{P}droplet_name"), d.name.clone()),
        (format!("{P}image"), d.image.slug.clone()),
        (format!("{P}image_name"), d.image.name.clone()),
        (format!("{P}private_ipv4"), first(&nets.v4, "private")),
        (format!("{P}public_ipv4"), public),
        (format!("{P}public_ipv6"), first(&nets.v6, "public")),
        (format!("{P}region"), d.region.slug.clone()),
        (format!("{P}size"), d.size_slug.clone()),
        (format!("{P}status"), d.status.clone()),
        (format!("{P}vpc"), d.vpc_uuid.clone()),
    ]);
    if !d.features.is_empty() {
        l.insert(format!("{P}features"), format!(",{},", d.features.join(",")));
    }
    if !d.tags.is_empty() {
        l.insert(format!("{P}tags"), format!(",{},", d.tags.join(",")));
    }
    Some(l)
}
