//! Client of the tenant admin API (`{admin_url}/admin/api/v2`): read, create
//! and update the tenants of a metrics cluster and their limits.
//!
//! Authentication is HTTP basic with an empty user and the API token as
//! password. The API removes a tenant's limits when an update omits them, so
//! [`update_body`] builds an update from the tenant as read, and only
//! `clear_limits` leaves them out. Limits are kept as a JSON map so members
//! the service knows and this client does not are sent back unchanged.

use std::time::Duration;

use reqwest::{Method, Url};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::client::auth::Auth;
use crate::client::http::{self, ClientOptions, HttpError};
use crate::client::retry::RetryPolicy;
use crate::util::Secret;

/// The seven limits the admin API can set, in the spec's order.
pub const LIMIT_KEYS: [&str; 7] = [
    "ingestion_rate",
    "ingestion_burst_size",
    "max_series_per_query",
    "max_global_series_per_user",
    "max_global_series_per_metric",
    "ruler_max_rules_per_rule_group",
    "ruler_max_rule_groups_per_tenant",
];

#[derive(Debug, thiserror::Error)]
pub enum AdminError {
    #[error("invalid request, nothing sent: {0}")]
    Invalid(String),
    #[error(
        "401 Unauthorized from {url}: the admin token is missing or invalid; \
         check --admin-token-file or TAILSHIP_ADMIN_TOKEN{}",
        detail(body)
    )]
    Unauthorized { url: String, body: String },
    #[error("403 Forbidden from {url}: the admin token may not {action}{}", detail(body))]
    Forbidden { url: String, action: String, body: String },
    #[error("404 Not Found: tenant `{name}` does not exist{}", detail(body))]
    NotFound { name: String, body: String },
    #[error("409 Conflict: cannot {action}{}", detail(body))]
    Conflict { action: String, body: String },
    #[error("cannot {action}: {source}")]
    Http { action: String, source: HttpError },
    #[error("cannot {action}: {message}")]
    Protocol { action: String, message: String },
}

impl AdminError {
    pub fn is_usage(&self) -> bool {
        matches!(self, Self::Invalid(_))
    }
}

fn detail(body: &str) -> String {
    if body.is_empty() {
        String::new()
    } else {
        format!(" (service said: {body})")
    }
}

/// A tenant as read. `limits` is absent when the tenant has none.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(default)]
pub struct Tenant {
    pub name: String,
    pub display_name: Option<String>,
    pub created_at: Option<String>,
    pub status: Option<String>,
    pub cluster: Option<String>,
    pub limits: Option<Map<String, Value>>,
}

/// Body of POST /tenants.
#[derive(Debug, Clone, Default, Serialize)]
pub struct NewTenant {
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub display_name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    pub cluster: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limits: Option<Map<String, Value>>,
}

/// Body of PUT /tenants/{name}. Omitting `limits` removes the tenant's limits.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct TenantUpdate {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub display_name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cluster: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limits: Option<Map<String, Value>>,
}

/// The changes an operator asks for.
#[derive(Debug, Clone, Default)]
pub struct TenantChanges {
    pub display_name: Option<String>,
    pub status: Option<String>,
    pub cluster: Option<String>,
    pub limits: Vec<(String, i64)>,
    pub clear_limits: bool,
}

/// Parses `KEY=VALUE` limit flags: one of the seven keys, an integer value.
pub fn parse_limits(flags: &[String]) -> Result<Vec<(String, i64)>, AdminError> {
    let mut out: Vec<(String, i64)> = Vec::new();
    for f in flags {
        let Some((k, v)) = f.split_once('=') else {
            return Err(AdminError::Invalid(format!("limits: `{f}` is not KEY=VALUE")));
        };
        if !LIMIT_KEYS.contains(&k) {
            return Err(AdminError::Invalid(format!(
                "limits.{k}: not a limit the admin API sets; use one of {}",
                LIMIT_KEYS.join(", ")
            )));
        }
        let n: i64 =
            v.trim().parse().map_err(|_| AdminError::Invalid(format!("limits.{k}: `{v}` is not an integer")))?;
        if out.iter().any(|(seen, _)| seen == k) {
            return Err(AdminError::Invalid(format!("limits.{k}: given twice")));
        }
        out.push((k.to_string(), n));
    }
    Ok(out)
}

/// The update body: the tenant as read, with the changes applied. Its limits
/// are sent back (with `changes.limits` on top) unless `clear_limits`.
pub fn update_body(current: &Tenant, changes: &TenantChanges) -> Result<TenantUpdate, AdminError> {
    if changes.clear_limits && !changes.limits.is_empty() {
        return Err(AdminError::Invalid("limits: --clear-limits and --limit exclude each other".into()));
    }
    let limits = if changes.clear_limits {
        None
    } else {
        let mut l = current.limits.clone();
        if !changes.limits.is_empty() {
            let m = l.get_or_insert_with(Map::new);
            for (k, v) in &changes.limits {
                m.insert(k.clone(), Value::from(*v));
            }
        }
        l
    };
    Ok(TenantUpdate {
        display_name: changes.display_name.clone().or_else(|| current.display_name.clone()),
        status: changes.status.clone().or_else(|| current.status.clone()),
        cluster: changes.cluster.clone().or_else(|| current.cluster.clone()),
        limits,
    })
}

fn limits_map(limits: &[(String, i64)]) -> Option<Map<String, Value>> {
    if limits.is_empty() {
        return None;
    }
    Some(limits.iter().map(|(k, v)| (k.clone(), Value::from(*v))).collect())
}

/// The tenant admin API client.
pub struct AdminClient {
    http: reqwest::Client,
    base: Url,
    auth: Auth,
    retry: RetryPolicy,
}

impl AdminClient {
    pub fn new(url: &str, token: Secret, retry: RetryPolicy) -> Result<Self, AdminError> {
        let base = match Url::parse(url) {
            Ok(u) if (u.scheme() == "http" || u.scheme() == "https") && u.host().is_some() => u,
            _ => {
                return Err(AdminError::Invalid(format!(
                    "--admin-url (TAILSHIP_ADMIN_URL): `{url}` is not an http or https URL"
                )))
            }
        };
        if token.is_empty() {
            return Err(AdminError::Invalid(
                "the admin token is empty: pass --admin-token-file FILE or set TAILSHIP_ADMIN_TOKEN".into(),
            ));
        }
        let http = http::build_client(&ClientOptions { timeout: Some(Duration::from_secs(30)), ..Default::default() })
            .map_err(|source| AdminError::Http { action: "start the HTTP client".into(), source })?;
        Ok(Self { http, base, auth: Auth::Basic { username: String::new(), password: token }, retry })
    }

    pub async fn get(&self, name: &str) -> Result<Value, AdminError> {
        check_name(name)?;
        self.send::<()>(Method::GET, name, None, &format!("read tenant `{name}`")).await
    }

    pub async fn create(&self, t: &NewTenant) -> Result<Value, AdminError> {
        check_name(&t.name)?;
        if t.cluster.is_empty() {
            return Err(AdminError::Invalid("cluster: is required (--cluster)".into()));
        }
        self.send(Method::POST, "", Some(t), &format!("create tenant `{}`", t.name)).await
    }

    /// Reads the tenant, then sends it back with `changes` applied.
    pub async fn update(&self, name: &str, changes: &TenantChanges) -> Result<Value, AdminError> {
        check_name(name)?;
        if changes.clear_limits && !changes.limits.is_empty() {
            return Err(AdminError::Invalid("limits: --clear-limits and --limit exclude each other".into()));
        }
        let raw = self.get(name).await?;
        let current: Tenant = serde_json::from_value(raw).map_err(|e| AdminError::Protocol {
            action: format!("read tenant `{name}`"),
            message: format!("unexpected answer shape ({e})"),
        })?;
        let body = update_body(&current, changes)?;
        if current.limits.is_some() && body.limits.is_none() {
            tracing::warn!(tenant = name, "--clear-limits: the tenant's limits are removed; global defaults apply");
        }
        self.send(Method::PUT, name, Some(&body), &format!("update tenant `{name}`")).await
    }

    /// Builds the body of a create from flags.
    pub fn new_tenant(
        name: &str,
        cluster: &str,
        display_name: Option<String>,
        status: Option<String>,
        limits: &[(String, i64)],
    ) -> NewTenant {
        NewTenant { name: name.into(), display_name, status, cluster: cluster.into(), limits: limits_map(limits) }
    }

    async fn send<B: Serialize>(
        &self,
        method: Method,
        name: &str,
        body: Option<&B>,
        action: &str,
    ) -> Result<Value, AdminError> {
        let mut url = self.base.clone();
        if let Ok(mut p) = url.path_segments_mut() {
            p.pop_if_empty().extend(["admin", "api", "v2", "tenants"]);
            if !name.is_empty() {
                p.push(name);
            }
        }
        // PUT sends the whole tenant: sending it again is safe.
        let idempotent = method == Method::GET || method == Method::PUT;
        let v = crate::cloud::call::send_json(self.retry, idempotent, action, || {
            let mut rb = self.http.request(method.clone(), url.clone());
            if let Some(b) = body {
                rb = rb.json(b);
            }
            let url = url.to_string();
            async move { http::send(self.auth.apply(rb).await?, &url).await.map(|r| (r, url)) }
        })
        .await
        .map_err(|e| map_error(e, action, name))?;
        Ok(v.unwrap_or(Value::Null))
    }
}

fn check_name(name: &str) -> Result<(), AdminError> {
    if name.is_empty() {
        return Err(AdminError::Invalid("name: a tenant name is required".into()));
    }
    Ok(())
}

fn map_error(err: HttpError, action: &str, name: &str) -> AdminError {
    let HttpError::Status { url, status, body, .. } = &err else {
        return AdminError::Http { action: action.into(), source: err };
    };
    let (url, body) = (url.clone(), body.clone());
    match status.as_u16() {
        401 => AdminError::Unauthorized { url, body },
        403 => AdminError::Forbidden { url, action: action.into(), body },
        404 if !name.is_empty() => AdminError::NotFound { name: name.into(), body },
        409 => AdminError::Conflict { action: action.into(), body },
        _ => AdminError::Http { action: action.into(), source: err },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tenant(limits: Option<Value>) -> Tenant {
        serde_json::from_value(serde_json::json!({
            "name": "t1", "display_name": "T one", "status": "active", "cluster": "c1",
            "created_at": "2024-01-01T00:00:00.123456789Z", "limits": limits,
        }))
        .unwrap()
    }

    #[test]
    fn update_keeps_limits_unless_cleared() {
        let all: Value = LIMIT_KEYS.iter().enumerate().map(|(i, k)| (k.to_string(), Value::from(i as i64))).collect();
        let t = tenant(Some(all.clone()));
        let b = update_body(&t, &TenantChanges { display_name: Some("X".into()), ..Default::default() }).unwrap();
        assert_eq!(b.display_name.as_deref(), Some("X"));
        assert_eq!(b.status.as_deref(), Some("active"));
        assert_eq!(b.cluster.as_deref(), Some("c1"));
        assert_eq!(Value::Object(b.limits.unwrap()), all);
        let b = update_body(&t, &TenantChanges { clear_limits: true, ..Default::default() }).unwrap();
        assert!(b.limits.is_none());
        let b = update_body(&t, &TenantChanges { limits: vec![("ingestion_rate".into(), 99)], ..Default::default() })
            .unwrap();
        assert_eq!(b.limits.as_ref().unwrap()["ingestion_rate"], 99);
        assert_eq!(b.limits.unwrap().len(), 7);
    }

    #[test]
    fn update_of_a_tenant_without_limits_sends_none() {
        let t = tenant(None);
        let b = update_body(&t, &TenantChanges { status: Some("active".into()), ..Default::default() }).unwrap();
        assert!(b.limits.is_none());
        assert_eq!(serde_json::to_value(&b).unwrap().get("limits"), None);
    }

    #[test]
    fn limit_flags() {
        assert_eq!(parse_limits(&["ingestion_rate=10".into()]).unwrap(), vec![("ingestion_rate".into(), 10)]);
        assert!(parse_limits(&["max_lines=1".into()]).is_err());
        assert!(parse_limits(&["ingestion_rate=ten".into()]).is_err());
        assert!(parse_limits(&["ingestion_rate".into()]).is_err());
        assert!(parse_limits(&["ingestion_rate=1".into(), "ingestion_rate=2".into()]).is_err());
    }
}
