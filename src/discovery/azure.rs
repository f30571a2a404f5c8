//! Targets from Azure (`sources[].azure`, Promtail's `azure_sd_configs`),
//! with Prometheus' `__meta_azure_*` labels.
//!
//! Each refresh gets a token for the resource manager of `environment`
//! (`authentication_method`: `OAuth`, a client secret; `ManagedIdentity`, the
//! instance metadata service; `WorkloadIdentity`, the federated token of
//! `AZURE_FEDERATED_TOKEN_FILE`; `SDK`, the first of a client secret in
//! `AZURE_CLIENT_SECRET`, a workload identity, a managed identity), lists the
//! subscription's (or `resource_group`'s) virtual machines and scale sets'
//! machines (page after page, `nextLink`), and reads each machine's network
//! interfaces (kept between refreshes). A machine is a target at the first
//! private IP of its primary interface and `port`, with
//! `__meta_azure_subscription_id`, `_tenant_id`, `_machine_id`,
//! `_machine_name`, `_machine_computer_name`, `_machine_os_type`,
//! `_machine_location`, `_machine_resource_group`, `_machine_size`,
//! `_machine_scale_set`, `_machine_tag_<key>`, `_machine_private_ip` and
//! `_machine_public_ip`. A machine whose interface is gone (deallocated) is
//! no target.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::{join_host_port, Labels, Lister};
use crate::client::discovery::{SdClient, SdHttpError};
use crate::config::{AzureConfig, AZURE_CLOUDS};
use crate::discovery::sanitize;

const P: &str = "__meta_azure_";
const COMPUTE_API: &str = "2023-09-01";
const NETWORK_API: &str = "2018-10-01";
const IMDS: &str = "http://169.254.169.254/metadata/identity/oauth2/token";
/// The most pages read of one list, should `nextLink` go in a circle.
const MAX_PAGES: usize = 10_000;
/// Network interfaces kept between refreshes (Prometheus keeps 5000).
const NIC_CACHE: usize = 5000;

super::lister::listed_kind!(AzureConfig = Azure::new, every |c: &AzureConfig| c.refresh_interval.get());

/// A subscription of an `azure` section.
pub struct Azure {
    client: SdClient,
    cfg: AzureConfig,
    manager: String,
    login: String,
    token: Option<(String, Instant)>,
    nics: HashMap<String, Value>,
}

impl Azure {
    pub fn new(cfg: &AzureConfig) -> Result<Self, crate::client::http::HttpError> {
        let (_, manager, login) = AZURE_CLOUDS
            .iter()
            .find(|(n, ..)| n.eq_ignore_ascii_case(&cfg.environment))
            .copied()
            .unwrap_or(AZURE_CLOUDS[0]);
        Ok(Self {
            client: SdClient::new(cfg.http(), false)?,
            cfg: cfg.clone(),
            manager: manager.to_string(),
            login: std::env::var("AZURE_AUTHORITY_HOST").ok().filter(|h| !h.is_empty()).unwrap_or(login.into()),
            token: None,
            nics: HashMap::new(),
        })
    }

    /// A token of the resource manager, got again a minute before it expires.
    async fn token(&mut self) -> Result<String, String> {
        if let Some((t, until)) = self.token.as_ref().filter(|(_, u)| *u > Instant::now()) {
            let _ = until;
            return Ok(t.clone());
        }
        let env = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
        let c = &self.cfg;
        let tenant =
            if c.tenant_id.is_empty() { env("AZURE_TENANT_ID").unwrap_or_default() } else { c.tenant_id.clone() };
        let client_id = if c.client_id.is_empty() { env("AZURE_CLIENT_ID") } else { Some(c.client_id.clone()) };
        let scope = format!("{}/.default", self.manager);
        let answer: Value = match c.authentication_method.as_str() {
            "OAuth" => {
                let secret = c.client_secret.as_ref().map(|s| s.expose().to_string()).unwrap_or_default();
                self.client_credentials(
                    &tenant,
                    client_id.as_deref().unwrap_or(""),
                    &[("client_secret", secret)],
                    &scope,
                )
                .await?
            }
            "WorkloadIdentity" => self.workload(&tenant, client_id.as_deref(), &scope).await?,
            "ManagedIdentity" => self.managed(client_id.as_deref()).await?,
            _ => match (env("AZURE_CLIENT_SECRET"), env("AZURE_FEDERATED_TOKEN_FILE")) {
                (Some(secret), _) => {
                    let id = client_id.clone().unwrap_or_default();
                    self.client_credentials(&tenant, &id, &[("client_secret", secret)], &scope).await?
                }
                (None, Some(_)) => self.workload(&tenant, client_id.as_deref(), &scope).await?,
                (None, None) => self.managed(client_id.as_deref()).await?,
            },
        };
        let token = answer["access_token"].as_str().ok_or("the token answer has no access_token")?.to_string();
        let secs = match &answer["expires_in"] {
            Value::Number(n) => n.as_u64().unwrap_or(300),
            Value::String(s) => s.parse().unwrap_or(300),
            _ => 300,
        };
        crate::util::secrets::remember(&token);
        let until = Instant::now() + Duration::from_secs(secs.saturating_sub(60));
        self.token = Some((token.clone(), until));
        Ok(token)
    }

    async fn client_credentials(
        &self,
        tenant: &str,
        client_id: &str,
        extra: &[(&str, String)],
        scope: &str,
    ) -> Result<Value, String> {
        let url = format!("{}/{tenant}/oauth2/v2.0/token", self.login.trim_end_matches('/'));
        let mut form = vec![("grant_type", "client_credentials".to_string()), ("client_id", client_id.to_string())];
        form.extend(extra.iter().cloned());
        form.push(("scope", scope.to_string()));
        let resp =
            self.client.http.post(&url).form(&form).send().await.map_err(|e| format!("cannot reach {url}: {e}"))?;
        let (status, text) = crate::client::read::answer(resp, crate::client::read::Cap::Small, &url)
            .await
            .map_err(|e| format!("{url}: {e}"))?;
        let text = String::from_utf8_lossy(&text);
        if !status.is_success() {
            let short: String = text.chars().take(300).collect();
            return Err(format!("{url} answered {status}: {short}"));
        }
        serde_json::from_str(&text).map_err(|e| format!("{url}: {e}"))
    }

    async fn workload(&self, tenant: &str, client_id: Option<&str>, scope: &str) -> Result<Value, String> {
        let file = std::env::var("AZURE_FEDERATED_TOKEN_FILE").map_err(|_| "AZURE_FEDERATED_TOKEN_FILE is not set")?;
        let assertion = std::fs::read_to_string(&file).map_err(|e| format!("cannot read {file}: {e}"))?;
        let extra = [
            ("client_assertion_type", "urn:ietf:params:oauth:client-assertion-type:jwt-bearer".to_string()),
            ("client_assertion", assertion.trim().to_string()),
        ];
        self.client_credentials(tenant, client_id.unwrap_or(""), &extra, scope).await
    }

    async fn managed(&self, client_id: Option<&str>) -> Result<Value, String> {
        let mut q = vec![("api-version", "2018-02-01".to_string()), ("resource", format!("{}/", self.manager))];
        if let Some(id) = client_id {
            q.push(("client_id", id.to_string()));
        }
        let resp = self
            .client
            .http
            .get(IMDS)
            .query(&q)
            .header("Metadata", "true")
            .send()
            .await
            .map_err(|e| format!("the managed identity endpoint cannot be reached: {e}"))?;
        let (status, text) = crate::client::read::answer(resp, crate::client::read::Cap::Small, IMDS)
            .await
            .map_err(|e| format!("the managed identity endpoint: {e}"))?;
        let text = String::from_utf8_lossy(&text);
        if !status.is_success() {
            return Err(format!(
                "the managed identity endpoint answered {status}: {}",
                text.chars().take(300).collect::<String>()
            ));
        }
        serde_json::from_str(&text).map_err(|e| format!("the managed identity's token: {e}"))
    }

    /// Every item of the list at `path` of the resource manager (`nextLink` followed).
    async fn all(&self, token: &str, path: &str) -> Result<Vec<Value>, String> {
        let auth = [("Authorization", format!("Bearer {token}"))];
        let mut out = Vec::new();
        let mut next = Some(format!("{}{path}", self.manager));
        for _ in 0..MAX_PAGES {
            let Some(url) = next.take() else { break };
            let page: Value = self.client.get_json(&url, &auth).await.map_err(|e| e.to_string())?;
            out.extend(page["value"].as_array().cloned().unwrap_or_default());
            next = page["nextLink"].as_str().filter(|l| l.starts_with(&self.manager)).map(str::to_string);
        }
        Ok(out)
    }

    /// A network interface (kept); None when it is gone.
    async fn nic(&mut self, token: &str, id: &str) -> Result<Option<Value>, String> {
        if let Some(n) = self.nics.get(id) {
            return Ok(Some(n.clone()));
        }
        let url = format!("{}{id}?api-version={NETWORK_API}", self.manager);
        match self.client.get_json::<Value>(&url, &[("Authorization", format!("Bearer {token}"))]).await {
            Ok(n) => {
                if self.nics.len() >= NIC_CACHE {
                    self.nics.clear();
                }
                self.nics.insert(id.to_string(), n.clone());
                Ok(Some(n))
            }
            Err(SdHttpError::Status { status: 404, .. }) => Ok(None),
            Err(e) => Err(e.to_string()),
        }
    }
}

impl Lister for Azure {
    fn describe(&self) -> String {
        format!("Azure subscription {}", self.cfg.subscription_id)
    }

    async fn list(&mut self) -> Result<Vec<Labels>, String> {
        let token = self.token().await?;
        let sub = format!("/subscriptions/{}", self.cfg.subscription_id);
        let scope = match &self.cfg.resource_group {
            Some(rg) => format!("{sub}/resourceGroups/{rg}"),
            None => sub,
        };
        let mut machines: Vec<(Value, String)> = self
            .all(&token, &format!("{scope}/providers/Microsoft.Compute/virtualMachines?api-version={COMPUTE_API}"))
            .await?
            .into_iter()
            .map(|v| (v, String::new()))
            .collect();
        let sets = self
            .all(
                &token,
                &format!("{scope}/providers/Microsoft.Compute/virtualMachineScaleSets?api-version={COMPUTE_API}"),
            )
            .await?;
        for set in &sets {
            let (Some(id), Some(name)) = (set["id"].as_str(), set["name"].as_str()) else { continue };
            let vms = self.all(&token, &format!("{id}/virtualMachines?api-version={COMPUTE_API}")).await?;
            machines.extend(vms.into_iter().map(|v| (v, name.to_string())));
        }
        let mut out = Vec::new();
        for (vm, set) in &machines {
            let mut labels = machine_labels(vm, set, &self.cfg);
            let nics: Vec<String> = vm["properties"]["networkProfile"]["networkInterfaces"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|n| n["id"].as_str().map(str::to_string))
                .collect();
            for id in nics {
                let Some(nic) = self.nic(&token, &id).await? else { break };
                let primary = &nic["properties"]["primary"];
                if primary.is_null() {
                    // A deallocated machine: no target.
                    break;
                }
                if primary.as_bool() != Some(true) {
                    continue;
                }
                let configs = nic["properties"]["ipConfigurations"].as_array().cloned().unwrap_or_default();
                if let Some(ip) = configs.first() {
                    if let Some(public) = ip["properties"]["publicIPAddress"]["properties"]["ipAddress"].as_str() {
                        labels.insert(format!("{P}machine_public_ip"), public.to_string());
                    }
                    match ip["properties"]["privateIPAddress"].as_str() {
                        Some(private) => {
                            labels.insert(format!("{P}machine_private_ip"), private.to_string());
                            labels.insert("__address__".into(), join_host_port(private, self.cfg.port));
                            out.push(labels.clone());
                        }
                        None => {
                            let name = vm["name"].as_str().unwrap_or("");
                            return Err(format!("no private IP for the machine {name}"));
                        }
                    }
                }
                break;
            }
        }
        Ok(out)
    }
}

/// A machine's labels but its addresses (`set`: its scale set, or "").
fn machine_labels(vm: &Value, set: &str, cfg: &AzureConfig) -> Labels {
    let text = |v: &Value| v.as_str().unwrap_or_default().to_string();
    let id = text(&vm["id"]);
    let props = &vm["properties"];
    let size = props["hardwareProfile"]["vmSize"].as_str().or(vm["sku"]["name"].as_str()).unwrap_or_default();
    let group = id
        .split('/')
        .collect::<Vec<_>>()
        .windows(2)
        .find(|w| w[0].eq_ignore_ascii_case("resourceGroups"))
        .map(|w| w[1].to_string())
        .unwrap_or_default();
    let mut l = Labels::from([
        (format!("{P}subscription_id"), cfg.subscription_id.clone()),
        (format!("{P}tenant_id"), cfg.tenant_id.clone()),
        (format!("{P}machine_id"), id),
        (format!("{P}machine_name"), text(&vm["name"])),
        (format!("{P}machine_computer_name"), text(&props["osProfile"]["computerName"])),
        (format!("{P}machine_os_type"), text(&props["storageProfile"]["osDisk"]["osType"])),
        (format!("{P}machine_location"), text(&vm["location"])),
        (format!("{P}machine_resource_group"), group),
        (format!("{P}machine_size"), size.to_string()),
    ]);
    if !set.is_empty() {
        l.insert(format!("{P}machine_scale_set"), set.to_string());
    }
    for (k, v) in vm["tags"].as_object().into_iter().flatten() {
        l.insert(format!("{P}machine_tag_{}", sanitize(k)), text(v));
    }
    l
}
