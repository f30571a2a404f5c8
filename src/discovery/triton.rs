//! Targets from Triton's discovery endpoint (`sources[].triton`, Promtail's
//! `triton_sd_configs`), with Prometheus' `__meta_triton_*` labels.
//!
//! Each refresh reads `https://<endpoint>:<port>/v<version>/discover`
//! (role `container`, with `?groups=` when groups are given) or
//! `.../gz/discover` (role `cn`). A container is a target at
//! `<vm_uuid>.<dns_suffix>:<port>` with `__meta_triton_machine_id`,
//! `_machine_alias`, `_machine_brand`, `_machine_image`, `_server_id` and
//! `_groups` (`,a,b,`); a compute node at `<server_uuid>.<dns_suffix>:<port>`
//! with `_machine_id` and `_machine_alias` (its host name).

use serde::Deserialize;

use super::{Labels, Lister};
use crate::client::discovery::SdClient;
use crate::config::{HttpKeys, TritonConfig, TritonRole};

const P: &str = "__meta_triton_";

#[derive(Debug, Deserialize, Default)]
#[serde(default)]
pub struct Containers {
    pub containers: Vec<Container>,
}

#[derive(Debug, Deserialize, Default)]
#[serde(default)]
pub struct Container {
    pub groups: Vec<String>,
    pub server_uuid: String,
    pub vm_alias: String,
    pub vm_brand: String,
    pub vm_image_uuid: String,
    pub vm_uuid: String,
}

#[derive(Debug, Deserialize, Default)]
#[serde(default)]
pub struct ComputeNodes {
    pub cns: Vec<ComputeNode>,
}

#[derive(Debug, Deserialize, Default)]
#[serde(default)]
pub struct ComputeNode {
    pub server_uuid: String,
    pub server_hostname: String,
}

super::lister::listed_kind!(TritonConfig = Triton::new, every |c: &TritonConfig| c.refresh_interval.get());

/// The discovery endpoint of a `triton` section.
pub struct Triton {
    client: SdClient,
    url: String,
    cfg: TritonConfig,
}

impl Triton {
    pub fn new(cfg: &TritonConfig) -> Result<Self, crate::client::http::HttpError> {
        let keys = HttpKeys { tls: cfg.tls.as_ref(), ..HttpKeys::none() };
        let path = match cfg.role {
            TritonRole::Container => "discover",
            TritonRole::Cn => "gz/discover",
        };
        let mut url = format!("https://{}:{}/v{}/{path}", cfg.endpoint, cfg.port, cfg.version);
        if !cfg.groups.is_empty() && cfg.role == TritonRole::Container {
            let groups: String = url::form_urlencoded::byte_serialize(cfg.groups.join(",").as_bytes()).collect();
            url = format!("{url}?groups={groups}");
        }
        Ok(Self { client: SdClient::new(keys, false)?, url, cfg: cfg.clone() })
    }
}

impl Lister for Triton {
    fn describe(&self) -> String {
        format!("Triton at {}", self.url)
    }

    async fn list(&mut self) -> Result<Vec<Labels>, String> {
        let c = &self.cfg;
        let addr = |uuid: &str| format!("{uuid}.{}:{}", c.dns_suffix, c.port);
        let err = |e: crate::client::discovery::SdHttpError| e.to_string();
        Ok(match c.role {
            TritonRole::Container => {
                let found: Containers = self.client.get_json(&self.url, &[]).await.map_err(err)?;
                found.containers.iter().map(|v| container_target(v, &addr(&v.vm_uuid))).collect()
            }
            TritonRole::Cn => {
                let found: ComputeNodes = self.client.get_json(&self.url, &[]).await.map_err(err)?;
                found
                    .cns
                    .iter()
                    .map(|n| {
                        Labels::from([
                            ("__address__".to_string(), addr(&n.server_uuid)),
                            (format!("{P}machine_id"), n.server_uuid.clone()),
                            (format!("{P}machine_alias"), n.server_hostname.clone()),
                        ])
                    })
                    .collect()
            }
        })
    }
}

fn container_target(v: &Container, address: &str) -> Labels {
    let mut l = Labels::from([
        ("__address__".to_string(), address.to_string()),
        (format!("{P}machine_id"), v.vm_uuid.clone()),
        (format!("{P}machine_alias"), v.vm_alias.clone()),
        (format!("{P}machine_brand"), v.vm_brand.clone()),
        (format!("{P}machine_image"), v.vm_image_uuid.clone()),
        (format!("{P}server_id"), v.server_uuid.clone()),
    ]);
    if !v.groups.is_empty() {
        l.insert(format!("{P}groups"), format!(",{},", v.groups.join(",")));
    }
    l
}
