//! Targets from Google Compute Engine (`sources[].gce`, Promtail's
//! `gce_sd_configs`), with Prometheus' `__meta_gce_*` labels.
//!
//! Each refresh lists the zone's instances (`GET
//! https://compute.googleapis.com/compute/v1/projects/<project>/zones/<zone>/instances`,
//! with `filter`, page after page) with a token of Google's Application
//! Default Credentials (`GOOGLE_APPLICATION_CREDENTIALS`, gcloud's, or the
//! metadata server's; scope `compute.readonly`). An instance with a network
//! interface is a target at its first interface's address and `port`, with
//! `__meta_gce_project`, `_zone`, `_instance_id`, `_instance_name`,
//! `_instance_status`, `_machine_type`, `_network`, `_subnetwork`,
//! `_private_ip`, `_public_ip` (a one-to-one NAT of the first interface),
//! `_interface_ipv4_<name>`, `_tags` (joined and surrounded by
//! `tag_separator`), `_metadata_<key>` and `_label_<name>`.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::Deserialize;

use super::{Labels, Lister};
use crate::client::discovery::SdClient;
use crate::config::{GceConfig, HttpKeys};
use crate::discovery::sanitize;

const P: &str = "__meta_gce_";
/// The Compute API.
pub const API: &str = "https://compute.googleapis.com/compute/v1";
const SCOPE: &str = "https://www.googleapis.com/auth/compute.readonly";

#[derive(Debug, Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
pub struct InstanceList {
    pub items: Vec<Instance>,
    pub next_page_token: Option<String>,
}

#[derive(Debug, Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
pub struct Instance {
    /// A 64-bit number, written as a string by the API.
    pub id: serde_json::Value,
    pub name: String,
    pub zone: String,
    pub status: String,
    pub machine_type: String,
    pub network_interfaces: Vec<NetworkInterface>,
    pub tags: Option<Tags>,
    pub metadata: Option<Metadata>,
    pub labels: BTreeMap<String, String>,
}

#[derive(Debug, Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
pub struct NetworkInterface {
    pub name: String,
    pub network: String,
    pub subnetwork: String,
    #[serde(rename = "networkIP")]
    pub network_ip: String,
    pub access_configs: Vec<AccessConfig>,
}

#[derive(Debug, Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
pub struct AccessConfig {
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(rename = "natIP")]
    pub nat_ip: String,
}

#[derive(Debug, Deserialize, Default)]
#[serde(default)]
pub struct Tags {
    pub items: Vec<String>,
}

#[derive(Debug, Deserialize, Default)]
#[serde(default)]
pub struct Metadata {
    pub items: Vec<MetadataItem>,
}

#[derive(Debug, Deserialize, Default)]
#[serde(default)]
pub struct MetadataItem {
    pub key: String,
    pub value: Option<String>,
}

super::lister::listed_kind!(GceConfig = Gce::new, every |c: &GceConfig| c.refresh_interval.get());

/// The project and zone of a `gce` section.
pub struct Gce {
    client: SdClient,
    cfg: GceConfig,
    credentials: Option<Arc<dyn gcp_auth::TokenProvider>>,
}

impl Gce {
    pub fn new(cfg: &GceConfig) -> Result<Self, crate::client::http::HttpError> {
        Ok(Self { client: SdClient::new(HttpKeys::none(), false)?, cfg: cfg.clone(), credentials: None })
    }

    async fn token(&mut self) -> Result<String, String> {
        let provider = match &self.credentials {
            Some(p) => p.clone(),
            None => {
                let p = gcp_auth::provider().await.map_err(|e| format!("no Google credentials: {e}"))?;
                self.credentials = Some(p.clone());
                p
            }
        };
        let token = provider.token(&[SCOPE]).await.map_err(|e| format!("no Google token: {e}"))?;
        crate::util::secrets::remember(token.as_str());
        Ok(token.as_str().to_string())
    }
}

impl Lister for Gce {
    fn describe(&self) -> String {
        format!("GCE project {} zone {}", self.cfg.project, self.cfg.zone)
    }

    async fn list(&mut self) -> Result<Vec<Labels>, String> {
        let base = format!("{API}/projects/{}/zones/{}/instances", self.cfg.project, self.cfg.zone);
        let mut out = Vec::new();
        let mut page: Option<String> = None;
        // A bound on the pages read, should the API hand the same token back.
        for _ in 0..10_000 {
            let mut url = reqwest::Url::parse(&base).map_err(|e| e.to_string())?;
            if let Some(f) = &self.cfg.filter {
                url.query_pairs_mut().append_pair("filter", f);
            }
            if let Some(p) = &page {
                url.query_pairs_mut().append_pair("pageToken", p);
            }
            let auth = vec![("Authorization", format!("Bearer {}", self.token().await?))];
            let list: InstanceList = self.client.get_json(url.as_str(), &auth).await.map_err(|e| e.to_string())?;
            out.extend(list.items.iter().filter_map(|i| instance_target(i, &self.cfg)));
            match list.next_page_token.filter(|t| !t.is_empty()) {
                Some(t) => page = Some(t),
                None => break,
            }
        }
        Ok(out)
    }
}

/// An instance's target; None without a network interface.
pub fn instance_target(i: &Instance, cfg: &GceConfig) -> Option<Labels> {
    let first = i.network_interfaces.first()?;
    let id = match &i.id {
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    let mut l = Labels::from([
        ("__address__".to_string(), format!("{}:{}", first.network_ip, cfg.port)),
        (format!("{P}project"), cfg.project.clone()),
        (format!("{P}zone"), i.zone.clone()),
        (format!("{P}instance_id"), id),
        (format!("{P}instance_name"), i.name.clone()),
        (format!("{P}instance_status"), i.status.clone()),
        (format!("{P}machine_type"), i.machine_type.clone()),
        (format!("{P}network"), first.network.clone()),
        (format!("{P}subnetwork"), first.subnetwork.clone()),
        (format!("{P}private_ip"), first.network_ip.clone()),
    ]);
    for n in &i.network_interfaces {
        l.insert(format!("{P}interface_ipv4_{}", sanitize(&n.name)), n.network_ip.clone());
    }
    if let Some(t) = i.tags.as_ref().filter(|t| !t.items.is_empty()) {
        let sep = &cfg.tag_separator;
        l.insert(format!("{P}tags"), format!("{sep}{}{sep}", t.items.join(sep)));
    }
    for m in i.metadata.iter().flat_map(|m| &m.items) {
        if let Some(v) = &m.value {
            l.insert(format!("{P}metadata_{}", sanitize(&m.key)), v.clone());
        }
    }
    for (k, v) in &i.labels {
        l.insert(format!("{P}label_{}", sanitize(k)), v.clone());
    }
    if let Some(ac) = first.access_configs.first().filter(|a| a.kind == "ONE_TO_ONE_NAT") {
        l.insert(format!("{P}public_ip"), ac.nat_ip.clone());
    }
    Some(l)
}
