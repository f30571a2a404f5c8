//! Targets from Amazon EC2 (`sources[].ec2`, Promtail's `ec2_sd_configs`),
//! with Prometheus' `__meta_ec2_*` labels.
//!
//! Each refresh asks `DescribeInstances` (with `filters`, page after page;
//! signed as [`crate::client::aws`] says, the first time after
//! `DescribeAvailabilityZones` for the zones' ids). An instance with a private
//! IPv4 (or else an IPv6) address is a target at it and `port`, with
//! `__meta_ec2_instance_id`, `_region`, `_owner_id`, `_private_ip`,
//! `_private_dns_name`, `_public_ip`, `_public_dns_name`, `_platform`,
//! `_ami`, `_availability_zone`, `_availability_zone_id`, `_instance_state`,
//! `_instance_type`, `_instance_lifecycle`, `_architecture`, `_vpc_id`,
//! `_primary_subnet_id`, `_subnet_id`, `_ipv6_addresses`,
//! `_primary_ipv6_addresses`, `_default_ipv6_address` and `_tag_<key>`.

use std::collections::HashMap;

use serde::Deserialize;

use super::{join_host_port, Labels, Lister};
use crate::client::aws::{CredentialSource, Signer};
use crate::client::discovery::SdClient;
use crate::config::Ec2Config;
use crate::discovery::sanitize;

const P: &str = "__meta_ec2_";
const VERSION: &str = "2016-11-15";
/// The most pages read, should the API hand the same token back.
const MAX_PAGES: usize = 10_000;

#[derive(Debug, Deserialize)]
#[serde(bound = "T: Deserialize<'de>")]
pub struct Items<T> {
    #[serde(default)]
    pub item: Vec<T>,
}

impl<T> Default for Items<T> {
    fn default() -> Self {
        Self { item: Vec::new() }
    }
}

#[derive(Debug, Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
pub struct DescribeInstances {
    pub reservation_set: Items<Reservation>,
    pub next_token: Option<String>,
}

#[derive(Debug, Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
pub struct Reservation {
    pub owner_id: Option<String>,
    pub instances_set: Items<Instance>,
}

#[derive(Debug, Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
pub struct Instance {
    pub instance_id: String,
    pub image_id: String,
    pub instance_state: State,
    pub private_dns_name: Option<String>,
    pub dns_name: Option<String>,
    pub instance_type: String,
    pub placement: Placement,
    pub platform: Option<String>,
    pub subnet_id: Option<String>,
    pub vpc_id: Option<String>,
    pub private_ip_address: Option<String>,
    pub ip_address: Option<String>,
    pub architecture: Option<String>,
    pub instance_lifecycle: Option<String>,
    pub tag_set: Items<Tag>,
    pub network_interface_set: Items<Eni>,
}

#[derive(Debug, Deserialize, Default)]
#[serde(default)]
pub struct State {
    pub name: String,
}

#[derive(Debug, Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
pub struct Placement {
    pub availability_zone: String,
}

#[derive(Debug, Deserialize, Default)]
#[serde(default)]
pub struct Tag {
    pub key: String,
    pub value: String,
}

#[derive(Debug, Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
pub struct Eni {
    pub subnet_id: Option<String>,
    pub attachment: Option<Attachment>,
    pub ipv6_addresses_set: Items<Ipv6>,
}

#[derive(Debug, Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
pub struct Attachment {
    pub device_index: usize,
}

#[derive(Debug, Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
pub struct Ipv6 {
    pub ipv6_address: String,
    pub is_primary_ipv6: bool,
}

#[derive(Debug, Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct DescribeZones {
    availability_zone_info: Items<Zone>,
}

#[derive(Debug, Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct Zone {
    zone_name: String,
    zone_id: String,
}

super::lister::listed_kind!(Ec2Config = Ec2::new, every |c: &Ec2Config| c.refresh_interval.get());

/// The account and region of an `ec2` section.
pub struct Ec2 {
    http: reqwest::Client,
    cfg: Ec2Config,
    signer: Option<Signer>,
    zone_ids: Option<HashMap<String, String>>,
}

impl Ec2 {
    pub fn new(cfg: &Ec2Config) -> Result<Self, crate::client::http::HttpError> {
        let http = SdClient::new(cfg.http(), false)?.http;
        Ok(Self { http, cfg: cfg.clone(), signer: None, zone_ids: None })
    }

    /// The signer, with the region found the first time.
    async fn signer(&mut self) -> Result<&mut Signer, String> {
        if self.signer.is_none() {
            let region = Signer::region(&self.http, &self.cfg.region).await?;
            let source = CredentialSource {
                access_key: self.cfg.access_key.clone(),
                secret_key: self.cfg.secret_key.as_ref().map(|s| s.expose().to_string()).unwrap_or_default(),
                profile: self.cfg.profile.clone(),
                role_arn: self.cfg.role_arn.clone(),
                external_id: self.cfg.external_id.clone(),
            };
            self.signer = Some(Signer::new(self.http.clone(), source, region));
        }
        self.signer.as_mut().ok_or_else(|| "no signer".to_string())
    }
}

impl Lister for Ec2 {
    fn describe(&self) -> String {
        format!("EC2 at {}", self.cfg.endpoint.as_deref().unwrap_or("ec2.<region>.amazonaws.com"))
    }

    async fn list(&mut self) -> Result<Vec<Labels>, String> {
        let mut filters = Vec::new();
        for (i, (name, values)) in self.cfg.filters.iter().enumerate() {
            filters.push((format!("Filter.{}.Name", i + 1), name.clone()));
            for (j, v) in values.iter().enumerate() {
                filters.push((format!("Filter.{}.Value.{}", i + 1, j + 1), v.clone()));
            }
        }
        let port = self.cfg.port;
        let need_zones = self.zone_ids.is_none();
        let signer = self.signer().await?;
        let region = signer.region.clone();
        let url = match &self.cfg.endpoint {
            Some(e) => e.clone(),
            None => format!("https://ec2.{region}.amazonaws.com/"),
        };
        let signer = self.signer.as_mut().ok_or("no signer")?;
        if need_zones {
            let params =
                [("Action", "DescribeAvailabilityZones"), ("Version", VERSION)].map(|(k, v)| (k.into(), v.into()));
            // As Prometheus: without the zones' ids the labels are empty, and the instances still come.
            if let Ok(text) = signer.post(&url, "ec2", &params).await {
                if let Ok(z) = quick_xml::de::from_str::<DescribeZones>(&text) {
                    self.zone_ids =
                        Some(z.availability_zone_info.item.into_iter().map(|z| (z.zone_name, z.zone_id)).collect());
                }
            }
        }
        let zones = self.zone_ids.clone().unwrap_or_default();
        let mut out = Vec::new();
        let mut next: Option<String> = None;
        for _ in 0..MAX_PAGES {
            let mut params: Vec<(String, String)> =
                vec![("Action".into(), "DescribeInstances".into()), ("Version".into(), VERSION.into())];
            params.extend(filters.iter().cloned());
            if let Some(t) = &next {
                params.push(("NextToken".into(), t.clone()));
            }
            let text = signer.post(&url, "ec2", &params).await?;
            let page: DescribeInstances =
                quick_xml::de::from_str(&text).map_err(|e| format!("EC2's DescribeInstances answer: {e}"))?;
            for r in &page.reservation_set.item {
                for i in &r.instances_set.item {
                    out.extend(instance_target(i, r.owner_id.as_deref(), &region, &zones, port));
                }
            }
            match page.next_token.filter(|t| !t.is_empty()) {
                Some(t) => next = Some(t),
                None => break,
            }
        }
        Ok(out)
    }
}

/// An instance's IPv6 addresses: the default one, the primary one of each
/// interface (by device index), and all (Prometheus' reading).
fn ipv6(i: &Instance) -> (Option<String>, Vec<String>, Vec<String>) {
    let (mut primary, mut all) = (Vec::<String>::new(), Vec::new());
    if i.vpc_id.is_none() {
        return (None, primary, all);
    }
    for eni in i.network_interface_set.item.iter().filter(|e| e.subnet_id.is_some()) {
        for a in &eni.ipv6_addresses_set.item {
            all.push(a.ipv6_address.clone());
            if a.is_primary_ipv6 {
                let idx = eni.attachment.as_ref().map(|a| a.device_index).unwrap_or(0);
                if primary.len() <= idx {
                    primary.resize(idx + 1, String::new());
                }
                primary[idx] = a.ipv6_address.clone();
            }
        }
    }
    let default = primary.iter().chain(all.iter()).find(|a| !a.is_empty()).cloned();
    (default, primary, all)
}

/// An instance's target; None without a private IPv4 or an IPv6 address.
pub fn instance_target(
    i: &Instance,
    owner: Option<&str>,
    region: &str,
    zones: &HashMap<String, String>,
    port: u16,
) -> Option<Labels> {
    let (default6, primary6, all6) = ipv6(i);
    let address = match (&i.private_ip_address, &default6) {
        (Some(ip), _) => join_host_port(ip, port),
        (None, Some(ip6)) => join_host_port(ip6, port),
        (None, None) => return None,
    };
    let mut l = Labels::from([
        ("__address__".to_string(), address),
        (format!("{P}instance_id"), i.instance_id.clone()),
        (format!("{P}region"), region.to_string()),
        (format!("{P}ami"), i.image_id.clone()),
        (format!("{P}availability_zone"), i.placement.availability_zone.clone()),
        (format!("{P}availability_zone_id"), zones.get(&i.placement.availability_zone).cloned().unwrap_or_default()),
        (format!("{P}instance_state"), i.instance_state.name.clone()),
        (format!("{P}instance_type"), i.instance_type.clone()),
    ]);
    let mut put = |k: &str, v: &Option<String>| {
        if let Some(v) = v {
            l.insert(format!("{P}{k}"), v.clone());
        }
    };
    put("owner_id", &owner.map(str::to_string));
    put("default_ipv6_address", &default6);
    put("private_ip", &i.private_ip_address);
    put("private_dns_name", &i.private_dns_name);
    put("platform", &i.platform.clone().filter(|p| !p.is_empty()));
    if i.ip_address.is_some() {
        put("public_ip", &i.ip_address);
        put("public_dns_name", &Some(i.dns_name.clone().unwrap_or_default()));
    }
    put("instance_lifecycle", &i.instance_lifecycle.clone().filter(|p| !p.is_empty()));
    put("architecture", &i.architecture.clone().filter(|p| !p.is_empty()));
    let join = |v: &[String]| format!(",{},", v.join(","));
    if !primary6.is_empty() {
        l.insert(format!("{P}primary_ipv6_addresses"), join(&primary6));
    }
    if !all6.is_empty() {
        l.insert(format!("{P}ipv6_addresses"), join(&all6));
    }
    if let Some(vpc) = &i.vpc_id {
        l.insert(format!("{P}vpc_id"), vpc.clone());
        l.insert(format!("{P}primary_subnet_id"), i.subnet_id.clone().unwrap_or_default());
        let mut subnets: Vec<String> = Vec::new();
        for s in i.network_interface_set.item.iter().filter_map(|e| e.subnet_id.clone()) {
            if !subnets.contains(&s) {
                subnets.push(s);
            }
        }
        l.insert(format!("{P}subnet_id"), join(&subnets));
    }
    for t in &i.tag_set.item {
        l.insert(format!("{P}tag_{}", sanitize(&t.key)), t.value.clone());
    }
    Some(l)
}
