//! Targets from OpenStack (`sources[].openstack`, Promtail's
//! `openstack_sd_configs`), with Prometheus' `__meta_openstack_*` labels.
//!
//! Each refresh asks Keystone (v3) for a token (`POST /auth/tokens`: a user's
//! password, scoped to the project, else the domain; or an application
//! credential), takes the endpoints of the region and `availability` from
//! the token's catalog, and lists, page after page:
//! - `instance`: Nova's `servers/detail` (`all_tenants`), Neutron's ports and
//!   floating IPs. Every fixed address of an instance is a target at it and
//!   `port`, with `__meta_openstack_instance_id`, `_instance_name`,
//!   `_instance_status`, `_instance_flavor`, `_instance_image`, `_project_id`,
//!   `_user_id`, `_tag_<key>` (its metadata), `_address_pool`, `_private_ip`
//!   and `_public_ip` (the floating IP of that address);
//! - `hypervisor`: Nova's `os-hypervisors/detail`; a target at the host IP and
//!   `port`, with `_hypervisor_id`, `_hypervisor_hostname`,
//!   `_hypervisor_host_ip`, `_hypervisor_status`, `_hypervisor_state`,
//!   `_hypervisor_type`;
//! - `loadbalancer`: Octavia's load balancers with a `PROMETHEUS` listener, at
//!   the VIP and that listener's port, with `_loadbalancer_id`, `_name`,
//!   `_operating_status`, `_provisioning_status`, `_availability_zone`, `_vip`,
//!   `_provider`, `_tags`, `_floating_ip` and `_project_id`.

use std::collections::{BTreeMap, HashMap, HashSet};

use serde::Deserialize;
use serde_json::{json, Value};

use super::{join_host_port, Labels, Lister};
use crate::client::discovery::SdClient;
use crate::config::{HttpKeys, OpenstackConfig, OpenstackRole};
use crate::discovery::sanitize;

const P: &str = "__meta_openstack_";
/// The most pages read of one list, should an API link pages in a circle.
const MAX_PAGES: usize = 10_000;

/// The credentials Keystone is asked with (the config's, or `OS_*` of the environment).
#[derive(Debug, Clone, Default)]
struct Credentials {
    endpoint: String,
    username: String,
    userid: String,
    password: String,
    project_name: String,
    project_id: String,
    domain_name: String,
    domain_id: String,
    app_name: String,
    app_id: String,
    app_secret: String,
}

impl Credentials {
    fn of(c: &OpenstackConfig) -> Self {
        match &c.identity_endpoint {
            Some(endpoint) => Self {
                endpoint: endpoint.clone(),
                username: c.username.clone(),
                userid: c.userid.clone(),
                password: c.password.as_ref().map(|p| p.expose().to_string()).unwrap_or_default(),
                project_name: c.project_name.clone(),
                project_id: c.project_id.clone(),
                domain_name: c.domain_name.clone(),
                domain_id: c.domain_id.clone(),
                app_name: c.application_credential_name.clone(),
                app_id: c.application_credential_id.clone(),
                app_secret: c
                    .application_credential_secret
                    .as_ref()
                    .map(|p| p.expose().to_string())
                    .unwrap_or_default(),
            },
            None => {
                let env = |names: &[&str]| {
                    names.iter().find_map(|n| std::env::var(n).ok().filter(|v| !v.is_empty())).unwrap_or_default()
                };
                Self {
                    endpoint: env(&["OS_AUTH_URL"]),
                    username: env(&["OS_USERNAME"]),
                    userid: env(&["OS_USERID", "OS_USER_ID"]),
                    password: env(&["OS_PASSWORD"]),
                    project_name: env(&["OS_PROJECT_NAME", "OS_TENANT_NAME"]),
                    project_id: env(&["OS_PROJECT_ID", "OS_TENANT_ID"]),
                    domain_name: env(&["OS_DOMAIN_NAME", "OS_USER_DOMAIN_NAME"]),
                    domain_id: env(&["OS_DOMAIN_ID", "OS_USER_DOMAIN_ID"]),
                    app_name: env(&["OS_APPLICATION_CREDENTIAL_NAME"]),
                    app_id: env(&["OS_APPLICATION_CREDENTIAL_ID"]),
                    app_secret: env(&["OS_APPLICATION_CREDENTIAL_SECRET"]),
                }
            }
        }
    }

    /// Keystone's v3 base (`.../v3`).
    fn v3(&self) -> String {
        let e = self.endpoint.trim_end_matches('/');
        if e.ends_with("/v3") {
            e.to_string()
        } else {
            format!("{e}/v3")
        }
    }

    fn domain(&self) -> Option<Value> {
        if !self.domain_id.is_empty() {
            Some(json!({ "id": self.domain_id }))
        } else if !self.domain_name.is_empty() {
            Some(json!({ "name": self.domain_name }))
        } else {
            None
        }
    }

    /// The body of `POST /v3/auth/tokens`.
    fn request(&self) -> Value {
        if !self.app_id.is_empty() || !self.app_name.is_empty() {
            let mut app = json!({ "secret": self.app_secret });
            if !self.app_id.is_empty() {
                app["id"] = json!(self.app_id);
            } else {
                app["name"] = json!(self.app_name);
                app["user"] = self.user();
            }
            return json!({ "auth": { "identity": { "methods": ["application_credential"], "application_credential": app } } });
        }
        let mut user = self.user();
        user["password"] = json!(self.password);
        let mut auth = json!({ "identity": { "methods": ["password"], "password": { "user": user } } });
        if !self.project_id.is_empty() {
            auth["scope"] = json!({ "project": { "id": self.project_id } });
        } else if !self.project_name.is_empty() {
            let mut project = json!({ "name": self.project_name });
            if let Some(d) = self.domain() {
                project["domain"] = d;
            }
            auth["scope"] = json!({ "project": project });
        } else if let Some(d) = self.domain() {
            auth["scope"] = json!({ "domain": d });
        }
        json!({ "auth": auth })
    }

    fn user(&self) -> Value {
        if !self.userid.is_empty() {
            return json!({ "id": self.userid });
        }
        let mut user = json!({ "name": self.username });
        if let Some(d) = self.domain() {
            user["domain"] = d;
        }
        user
    }
}

#[derive(Debug, Deserialize, Default)]
#[serde(default)]
struct TokenBody {
    token: Token,
}

#[derive(Debug, Deserialize, Default)]
#[serde(default)]
struct Token {
    catalog: Vec<Service>,
}

#[derive(Debug, Deserialize, Default)]
#[serde(default)]
struct Service {
    #[serde(rename = "type")]
    kind: String,
    endpoints: Vec<CatalogEndpoint>,
}

#[derive(Debug, Deserialize, Default)]
#[serde(default)]
struct CatalogEndpoint {
    interface: String,
    region: String,
    region_id: String,
    url: String,
}

/// A token and the endpoints of the services the role asks.
struct Session {
    token: String,
    catalog: Vec<Service>,
}

super::lister::listed_kind!(OpenstackConfig = Openstack::new, every |c: &OpenstackConfig| c.refresh_interval.get());

/// The cloud of an `openstack` section.
pub struct Openstack {
    client: SdClient,
    cfg: OpenstackConfig,
}

impl Openstack {
    pub fn new(cfg: &OpenstackConfig) -> Result<Self, crate::client::http::HttpError> {
        let keys = HttpKeys { tls: cfg.tls.as_ref(), ..HttpKeys::none() };
        Ok(Self { client: SdClient::new(keys, false)?, cfg: cfg.clone() })
    }

    async fn authenticate(&self) -> Result<Session, String> {
        let creds = Credentials::of(&self.cfg);
        if creds.endpoint.is_empty() {
            return Err("no identity_endpoint, and OS_AUTH_URL is not set".into());
        }
        let url = format!("{}/auth/tokens", creds.v3());
        let resp = self
            .client
            .http
            .post(&url)
            .json(&creds.request())
            .send()
            .await
            .map_err(|e| format!("cannot reach Keystone at {url}: {e}"))?;
        let status = resp.status();
        let token = resp.headers().get("X-Subject-Token").and_then(|v| v.to_str().ok()).map(str::to_string);
        let (_, body) = crate::client::read::answer(resp, crate::client::read::Cap::Small, &url)
            .await
            .map_err(|e| format!("cannot read Keystone's answer: {e}"))?;
        if !status.is_success() {
            let text: String = String::from_utf8_lossy(&body).chars().take(300).collect();
            return Err(format!("Keystone answered {status}: {text}"));
        }
        let token = token.ok_or("Keystone's answer has no X-Subject-Token")?;
        crate::util::secrets::remember(&token);
        let parsed: TokenBody = serde_json::from_slice(&body).map_err(|e| format!("Keystone's token: {e}"))?;
        Ok(Session { token, catalog: parsed.token.catalog })
    }

    /// The URL of service `kind` in the region, for `availability`.
    fn endpoint(&self, s: &Session, kind: &str) -> Result<String, String> {
        s.catalog
            .iter()
            .filter(|svc| svc.kind == kind)
            .flat_map(|svc| &svc.endpoints)
            .find(|e| {
                e.interface == self.cfg.availability && (e.region == self.cfg.region || e.region_id == self.cfg.region)
            })
            .map(|e| e.url.trim_end_matches('/').to_string())
            .ok_or_else(|| {
                format!("the catalog has no {} {kind} endpoint in region {}", self.cfg.availability, self.cfg.region)
            })
    }

    /// Every item of the list at `url` under `key`, following `<key>_links` next.
    async fn all(&self, s: &Session, url: String, key: &str) -> Result<Vec<Value>, String> {
        let auth = [("X-Auth-Token", s.token.clone())];
        let mut out = Vec::new();
        let mut next = Some(url);
        for _ in 0..MAX_PAGES {
            let Some(url) = next.take() else { break };
            let page: Value = self.client.get_json(&url, &auth).await.map_err(|e| e.to_string())?;
            out.extend(page.get(key).and_then(Value::as_array).cloned().unwrap_or_default());
            next = page
                .get(format!("{key}_links"))
                .and_then(Value::as_array)
                .and_then(|links| links.iter().find(|l| l["rel"] == "next"))
                .and_then(|l| l["href"].as_str())
                .map(str::to_string);
        }
        Ok(out)
    }

    async fn instances(&self, s: &Session) -> Result<Vec<Labels>, String> {
        let compute = self.endpoint(s, "compute")?;
        let network = self.endpoint(s, "network")?;
        let ports = self.all(s, format!("{network}/v2.0/ports"), "ports").await?;
        let device: HashMap<&str, &str> =
            ports.iter().filter_map(|p| Some((p["id"].as_str()?, p["device_id"].as_str()?))).collect();
        let fips = self.all(s, format!("{network}/v2.0/floatingips"), "floatingips").await?;
        let mut floating: HashMap<(String, String), String> = HashMap::new();
        let mut floating_ips: HashSet<String> = HashSet::new();
        for f in &fips {
            let (Some(port), Some(fixed), Some(ip)) =
                (f["port_id"].as_str(), f["fixed_ip_address"].as_str(), f["floating_ip_address"].as_str())
            else {
                continue;
            };
            if let Some(dev) = device.get(port) {
                floating.insert((dev.to_string(), fixed.to_string()), ip.to_string());
                floating_ips.insert(ip.to_string());
            }
        }
        let mut url = format!("{compute}/servers/detail");
        if self.cfg.all_tenants {
            url.push_str("?all_tenants=true");
        }
        let servers = self.all(s, url, "servers").await?;
        Ok(servers.iter().flat_map(|v| instance_targets(v, &floating, &floating_ips, self.cfg.port)).collect())
    }

    async fn hypervisors(&self, s: &Session) -> Result<Vec<Labels>, String> {
        let compute = self.endpoint(s, "compute")?;
        let list = self.all(s, format!("{compute}/os-hypervisors/detail"), "hypervisors").await?;
        Ok(list
            .iter()
            .map(|h| {
                let ip = text(h, "host_ip");
                Labels::from([
                    ("__address__".to_string(), join_host_port(&ip, self.cfg.port)),
                    (format!("{P}hypervisor_id"), text(h, "id")),
                    (format!("{P}hypervisor_hostname"), text(h, "hypervisor_hostname")),
                    (format!("{P}hypervisor_host_ip"), ip),
                    (format!("{P}hypervisor_status"), text(h, "status")),
                    (format!("{P}hypervisor_state"), text(h, "state")),
                    (format!("{P}hypervisor_type"), text(h, "hypervisor_type")),
                ])
            })
            .collect())
    }

    async fn loadbalancers(&self, s: &Session) -> Result<Vec<Labels>, String> {
        let lb = self.endpoint(s, "load-balancer")?;
        let network = self.endpoint(s, "network")?;
        let lbs = self.all(s, format!("{lb}/v2.0/lbaas/loadbalancers"), "loadbalancers").await?;
        let listeners = self.all(s, format!("{lb}/v2.0/lbaas/listeners"), "listeners").await?;
        let fips = self.all(s, format!("{network}/v2.0/floatingips"), "floatingips").await?;
        let fip: HashMap<String, String> = fips
            .iter()
            .filter_map(|f| Some((f["port_id"].as_str()?.to_string(), f["floating_ip_address"].as_str()?.to_string())))
            .collect();
        let mut out = Vec::new();
        for b in &lbs {
            let id = text(b, "id");
            let port = listeners.iter().find_map(|l| {
                let mine = l["loadbalancers"].as_array()?.iter().any(|x| x["id"].as_str() == Some(id.as_str()));
                (mine && l["protocol"] == "PROMETHEUS").then(|| l["protocol_port"].as_u64()).flatten()
            });
            let Some(port) = port else { continue };
            let vip = text(b, "vip_address");
            let mut l = Labels::from([
                ("__address__".to_string(), join_host_port(&vip, port)),
                (format!("{P}loadbalancer_id"), id),
                (format!("{P}loadbalancer_name"), text(b, "name")),
                (format!("{P}loadbalancer_operating_status"), text(b, "operating_status")),
                (format!("{P}loadbalancer_provisioning_status"), text(b, "provisioning_status")),
                (format!("{P}loadbalancer_availability_zone"), text(b, "availability_zone")),
                (format!("{P}loadbalancer_vip"), vip),
                (format!("{P}loadbalancer_provider"), text(b, "provider")),
                (format!("{P}project_id"), text(b, "project_id")),
            ]);
            let tags: Vec<&str> = b["tags"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
            if !tags.is_empty() {
                l.insert(format!("{P}loadbalancer_tags"), tags.join(","));
            }
            if let Some(f) = fip.get(&text(b, "vip_port_id")) {
                l.insert(format!("{P}loadbalancer_floating_ip"), f.clone());
            }
            out.push(l);
        }
        Ok(out)
    }
}

impl Lister for Openstack {
    fn describe(&self) -> String {
        let at = self.cfg.identity_endpoint.as_deref().unwrap_or("OS_AUTH_URL");
        format!("OpenStack at {at} (region {})", self.cfg.region)
    }

    async fn list(&mut self) -> Result<Vec<Labels>, String> {
        let s = self.authenticate().await?;
        match self.cfg.role.unwrap_or(OpenstackRole::Instance) {
            OpenstackRole::Instance => self.instances(&s).await,
            OpenstackRole::Hypervisor => self.hypervisors(&s).await,
            OpenstackRole::Loadbalancer => self.loadbalancers(&s).await,
        }
    }
}

/// A field as text (a number written out), "" when absent.
fn text(v: &Value, key: &str) -> String {
    match &v[key] {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// An instance's targets: one per fixed address (a floating one is not a target of its own).
fn instance_targets(
    s: &Value,
    floating: &HashMap<(String, String), String>,
    floating_ips: &HashSet<String>,
    port: u16,
) -> Vec<Labels> {
    let Some(addresses) = s["addresses"].as_object().filter(|a| !a.is_empty()) else { return Vec::new() };
    let id = text(s, "id");
    let mut common = Labels::from([
        (format!("{P}instance_id"), id.clone()),
        (format!("{P}instance_status"), text(s, "status")),
        (format!("{P}instance_name"), text(s, "name")),
        (format!("{P}project_id"), text(s, "tenant_id")),
        (format!("{P}user_id"), text(s, "user_id")),
    ]);
    let flavor = s["flavor"]["original_name"].as_str().or(s["flavor"]["id"].as_str());
    match flavor {
        Some(f) => common.insert(format!("{P}instance_flavor"), f.to_string()),
        None => return Vec::new(),
    };
    if let Some(image) = s["image"]["id"].as_str() {
        common.insert(format!("{P}instance_image"), image.to_string());
    }
    let metadata: BTreeMap<String, String> = serde_json::from_value(s["metadata"].clone()).unwrap_or_default();
    for (k, v) in metadata {
        common.insert(format!("{P}tag_{}", sanitize(&k)), v);
    }
    let mut out = Vec::new();
    for (pool, list) in addresses {
        for a in list.as_array().into_iter().flatten() {
            let Some(addr) = a["addr"].as_str() else { continue };
            if floating_ips.contains(addr) {
                continue;
            }
            let mut l = common.clone();
            l.insert(format!("{P}address_pool"), pool.clone());
            l.insert(format!("{P}private_ip"), addr.to_string());
            if let Some(f) = floating.get(&(id.clone(), addr.to_string())) {
                l.insert(format!("{P}public_ip"), f.clone());
            }
            l.insert("__address__".into(), join_host_port(addr, port));
            out.push(l);
        }
    }
    out
}
