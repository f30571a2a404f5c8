//! Cloud providers' discoveries of a file source's targets (`ec2`, `gce`,
//! `azure`, `openstack`): plain data and its checks.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::http_table::http_table;
use super::sd::validate_urls;
use super::TlsConfig;
use crate::util::{HumanDuration, Secret};

super::discoveries::checked_by!(
    GceConfig => validate_gce,
    OpenstackConfig => validate_openstack,
    Ec2Config => validate_ec2,
    AzureConfig => validate_azure,
);

/// Google Compute Engine instances as targets (`sources[].gce`, Promtail's
/// `gce_sd_configs`), with Google's Application Default Credentials.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default)]
pub struct GceConfig {
    pub project: String,
    pub zone: String,
    /// A filter expression of the Compute API's instance list.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub filter: Option<String>,
    pub refresh_interval: HumanDuration,
    /// The port of each instance's `__address__`.
    pub port: u16,
    /// Joins (and surrounds) the network tags in `__meta_gce_tags`.
    pub tag_separator: String,
}

impl Default for GceConfig {
    fn default() -> Self {
        Self {
            project: String::new(),
            zone: String::new(),
            filter: None,
            refresh_interval: HumanDuration::secs(60),
            port: 80,
            tag_separator: ",".into(),
        }
    }
}

pub(super) fn validate_gce(kk: &str, g: &GceConfig, e: &mut dyn FnMut(&str, String)) {
    for (k, v) in [("project", &g.project), ("zone", &g.zone)] {
        if v.is_empty() {
            e(&format!("{kk}.{k}"), "is required".into());
        } else if v.contains(['/', '?', '#']) {
            e(&format!("{kk}.{k}"), format!("`{v}` is not a GCE {k} name"));
        }
    }
    if g.refresh_interval.get().is_zero() {
        e(&format!("{kk}.refresh_interval"), "must be above 0".into());
    }
}

/// OpenStack's hypervisors, instances or load balancers as targets
/// (`sources[].openstack`, Promtail's `openstack_sd_configs`).
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default)]
pub struct OpenstackConfig {
    /// Keystone's URL (`https://keystone:5000/v3`); unset: `OS_AUTH_URL` and
    /// the other `OS_*` variables of the environment give every credential.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub identity_endpoint: Option<String>,
    pub username: String,
    pub userid: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub password: Option<Secret>,
    pub project_name: String,
    pub project_id: String,
    pub domain_name: String,
    pub domain_id: String,
    pub application_credential_name: String,
    pub application_credential_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub application_credential_secret: Option<Secret>,
    /// `instance`, `hypervisor` or `loadbalancer`.
    pub role: Option<OpenstackRole>,
    pub region: String,
    pub refresh_interval: HumanDuration,
    /// The port of an instance's or hypervisor's `__address__`.
    pub port: u16,
    /// Instances of every project (an admin's).
    pub all_tenants: bool,
    /// Which endpoints of the catalog: `public`, `internal` or `admin`.
    pub availability: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tls: Option<TlsConfig>,
}

/// What an `openstack` source's targets are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum OpenstackRole {
    Instance,
    Hypervisor,
    Loadbalancer,
}

impl Default for OpenstackConfig {
    fn default() -> Self {
        Self {
            identity_endpoint: None,
            username: String::new(),
            userid: String::new(),
            password: None,
            project_name: String::new(),
            project_id: String::new(),
            domain_name: String::new(),
            domain_id: String::new(),
            application_credential_name: String::new(),
            application_credential_id: String::new(),
            application_credential_secret: None,
            role: None,
            region: String::new(),
            refresh_interval: HumanDuration::secs(60),
            port: 80,
            all_tenants: false,
            availability: "public".into(),
            tls: None,
        }
    }
}

pub(super) fn validate_openstack(kk: &str, o: &OpenstackConfig, e: &mut dyn FnMut(&str, String)) {
    if o.role.is_none() {
        e(&format!("{kk}.role"), "is required: instance, hypervisor or loadbalancer".into());
    }
    if o.region.is_empty() {
        e(&format!("{kk}.region"), "is required".into());
    }
    if !["public", "internal", "admin"].contains(&o.availability.as_str()) {
        e(&format!("{kk}.availability"), format!("`{}` is not public, internal or admin", o.availability));
    }
    if let Some(u) = &o.identity_endpoint {
        match reqwest::Url::parse(u) {
            Ok(p) if (p.scheme() == "http" || p.scheme() == "https") && p.host_str().is_some() => {}
            _ => e(&format!("{kk}.identity_endpoint"), format!("`{u}` is not an http:// or https:// URL")),
        }
        let app = !o.application_credential_id.is_empty() || !o.application_credential_name.is_empty();
        if app && o.application_credential_secret.is_none() {
            e(&format!("{kk}.application_credential_secret"), "is required with an application credential".into());
        }
        if !app && (o.username.is_empty() && o.userid.is_empty() || o.password.is_none()) {
            e(
                &format!("{kk}.password"),
                "Keystone needs username (or userid) and password, or an application credential".into(),
            );
        }
    }
    if o.refresh_interval.get().is_zero() {
        e(&format!("{kk}.refresh_interval"), "must be above 0".into());
    }
    if let Some(t) = &o.tls {
        super::tls::validate_tls(t, &format!("{kk}.tls"), e);
    }
}

http_table! {
    /// Amazon EC2 instances as targets (`sources[].ec2`, Promtail's
    /// `ec2_sd_configs`); EC2 signs its requests itself (no credential keys).
    #[derive(Debug, Clone, Deserialize, Serialize)]
    #[serde(default)]
    pub struct Ec2Config {
        /// The EC2 API's URL; unset: `https://ec2.<region>.amazonaws.com`.
        #[serde(skip_serializing_if = "Option::is_none")]
        pub endpoint: Option<String> = None,
        /// The region; unset: `AWS_REGION`, else the instance's own (its metadata).
        pub region: String = String::new(),
        pub access_key: String = String::new(),
        #[serde(skip_serializing_if = "Option::is_none")]
        pub secret_key: Option<Secret> = None,
        /// A profile of the shared credentials file (`~/.aws/credentials`).
        pub profile: String = String::new(),
        /// A role assumed (STS `AssumeRole`) with the credentials found.
        pub role_arn: String = String::new(),
        pub external_id: String = String::new(),
        pub refresh_interval: HumanDuration = HumanDuration::secs(60),
        /// The port of each instance's `__address__`.
        pub port: u16 = 80,
        /// EC2 filters of `DescribeInstances`: `{ "tag:env" = ["prod"] }`.
        #[serde(skip_serializing_if = "BTreeMap::is_empty")]
        pub filters: BTreeMap<String, Vec<String>> = BTreeMap::new(),
        tls;
        proxy;
    }
}

pub(super) fn validate_ec2(kk: &str, c: &Ec2Config, e: &mut dyn FnMut(&str, String)) {
    if let Some(u) = &c.endpoint {
        validate_urls(&format!("{kk}.endpoint"), std::slice::from_ref(u), e);
    }
    if c.access_key.is_empty() != c.secret_key.is_none() {
        e(&format!("{kk}.secret_key"), "give access_key and secret_key together".into());
    }
    for (name, values) in &c.filters {
        if values.is_empty() {
            e(&format!("{kk}.filters.{name}"), "needs at least one value".into());
        }
    }
    if c.refresh_interval.get().is_zero() {
        e(&format!("{kk}.refresh_interval"), "must be above 0".into());
    }
    c.http().validate(kk, &[], e);
}

http_table! {
    /// Azure's virtual machines (and scale sets') as targets (`sources[].azure`,
    /// Promtail's `azure_sd_configs`); the token is Azure's own (no credential keys).
    #[derive(Debug, Clone, Deserialize, Serialize)]
    #[serde(default)]
    pub struct AzureConfig {
        /// `AzurePublicCloud` (the default), `AzureChinaCloud` or `AzureUSGovernmentCloud`.
        pub environment: String = "AzurePublicCloud".into(),
        pub subscription_id: String = String::new(),
        pub tenant_id: String = String::new(),
        pub client_id: String = String::new(),
        #[serde(skip_serializing_if = "Option::is_none")]
        pub client_secret: Option<Secret> = None,
        /// `OAuth` (a client secret, the default), `ManagedIdentity`,
        /// `WorkloadIdentity` or `SDK` (the `AZURE_*` environment, then those).
        pub authentication_method: String = "OAuth".into(),
        /// Only this resource group's machines.
        #[serde(skip_serializing_if = "Option::is_none")]
        pub resource_group: Option<String> = None,
        pub refresh_interval: HumanDuration = HumanDuration::secs(300),
        /// The port of each machine's `__address__`.
        pub port: u16 = 80,
        tls;
        proxy;
    }
}

/// Azure's clouds by the names Prometheus takes (upper case): the resource
/// manager and the login authority.
pub const AZURE_CLOUDS: &[(&str, &str, &str)] = &[
    ("AZUREPUBLICCLOUD", "https://management.azure.com", "https://login.microsoftonline.com"),
    ("AZURECLOUD", "https://management.azure.com", "https://login.microsoftonline.com"),
    ("AZUREGERMANCLOUD", "https://management.azure.com", "https://login.microsoftonline.com"),
    ("AZURECHINACLOUD", "https://management.chinacloudapi.cn", "https://login.chinacloudapi.cn"),
    ("AZUREUSGOVERNMENT", "https://management.usgovcloudapi.net", "https://login.microsoftonline.us"),
    ("AZUREUSGOVERNMENTCLOUD", "https://management.usgovcloudapi.net", "https://login.microsoftonline.us"),
];

pub(super) fn validate_azure(kk: &str, a: &AzureConfig, e: &mut dyn FnMut(&str, String)) {
    if a.subscription_id.is_empty() {
        e(&format!("{kk}.subscription_id"), "is required".into());
    }
    if !AZURE_CLOUDS.iter().any(|(n, ..)| n.eq_ignore_ascii_case(&a.environment)) {
        e(
            &format!("{kk}.environment"),
            format!("`{}` is not AzurePublicCloud, AzureChinaCloud or AzureUSGovernmentCloud", a.environment),
        );
    }
    match a.authentication_method.as_str() {
        "OAuth" => {
            for (k, missing) in [
                ("tenant_id", a.tenant_id.is_empty()),
                ("client_id", a.client_id.is_empty()),
                ("client_secret", a.client_secret.is_none()),
            ] {
                if missing {
                    e(&format!("{kk}.{k}"), "is required with authentication_method = \"OAuth\"".into());
                }
            }
        }
        "ManagedIdentity" | "WorkloadIdentity" | "SDK" => {}
        other => e(
            &format!("{kk}.authentication_method"),
            format!("`{other}` is not OAuth, ManagedIdentity, WorkloadIdentity or SDK"),
        ),
    }
    if a.refresh_interval.get().is_zero() {
        e(&format!("{kk}.refresh_interval"), "must be above 0".into());
    }
    a.http().validate(kk, &[], e);
}
