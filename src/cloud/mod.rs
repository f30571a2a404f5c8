//! Client of the cloud management API (spec: `cloud-management-api.md`):
//! access policies and tokens under `/api/v1`, stacks under `/api`.
//!
//! The client is careful by construction:
//! - every request is checked against the spec's rules ([`validate`]) before
//!   it is sent, and a broken rule sends nothing;
//! - lists follow `metadata.pagination.nextPage` to the end (or to a limit);
//! - access policy calls are paced under the service's 600 per hour ([`pace`]);
//! - 429 is retried with backoff on every call (the service did not act on
//!   it); 5xx and transport errors only on reads and deletes, so a create or
//!   update the service may have applied is never sent twice;
//! - error statuses become messages that say what to do ([`CloudError`]).
//!
//! It uses the shared HTTP layer (`crate::client::http`) for the reqwest
//! client, bearer auth, status errors and backoff.

pub mod call;
mod error;
pub mod model;
pub mod pace;
pub mod setup;
pub mod validate;

use std::collections::HashSet;
use std::time::Duration;

use reqwest::{Method, Url};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

use crate::client::auth::Auth;
use crate::client::http::{self, ClientOptions};
use crate::client::retry::RetryPolicy;
use crate::util::Secret;
use model::{NewPolicy, NewStack, NewToken, Page, PolicyStatus, PolicyUpdate, StackList, StackUpdate, TokenUpdate};
use pace::Pacer;
use validate::{Checks, Invalid};

use error::map_error;
pub use error::CloudError;

/// Retries of a retriable error before giving up (one-off commands should end).
pub const DEFAULT_MAX_RETRIES: usize = 5;

/// What a call does, for messages: `action` ("create access policy `x`"),
/// `what` (the thing a 404 did not find), and whether a 409 means delete protection.
#[derive(Debug, Clone)]
pub(crate) struct Call {
    pub(crate) action: String,
    pub(crate) what: String,
    pub(crate) stack_delete: Option<String>,
    /// Access policy endpoints are paced.
    paced: bool,
    /// Safe to send again after a 5xx or a transport error.
    idempotent: bool,
}

impl Call {
    fn new(action: impl Into<String>, what: impl Into<String>) -> Self {
        Self { action: action.into(), what: what.into(), stack_delete: None, paced: false, idempotent: false }
    }
    fn paced(mut self) -> Self {
        self.paced = true;
        self
    }
    fn idempotent(mut self) -> Self {
        self.idempotent = true;
        self
    }
}

/// Settings of a [`CloudClient`].
#[derive(Debug, Clone)]
pub struct CloudOptions {
    /// `{cloud_url}`, the base of `/api` and `/api/v1`.
    pub url: String,
    pub token: Secret,
    pub pace_per_hour: u32,
    pub pace_burst: u32,
    pub retry: RetryPolicy,
    pub timeout: Duration,
}

impl CloudOptions {
    pub fn new(url: impl Into<String>, token: Secret) -> Self {
        Self {
            url: url.into(),
            token,
            pace_per_hour: pace::DEFAULT_PER_HOUR,
            pace_burst: pace::DEFAULT_BURST,
            retry: RetryPolicy::one_off(Duration::from_millis(500), Duration::from_secs(30), DEFAULT_MAX_RETRIES),
            timeout: Duration::from_secs(30),
        }
    }
}

/// Filters of GET /accesspolicies.
#[derive(Debug, Clone, Default)]
pub struct PolicyFilter {
    pub name: Option<String>,
    pub realm_type: Option<String>,
    pub realm_identifier: Option<String>,
    pub status: Option<PolicyStatus>,
    pub page_size: Option<u32>,
}

/// Filters of GET /tokens.
#[derive(Debug, Clone, Default)]
pub struct TokenFilter {
    pub access_policy_id: Option<String>,
    pub access_policy_name: Option<String>,
    pub access_policy_realm_type: Option<String>,
    pub access_policy_realm_identifier: Option<String>,
    pub name: Option<String>,
    pub expires_before: Option<String>,
    pub expires_after: Option<String>,
    pub access_policy_status: Option<PolicyStatus>,
    pub page_size: Option<u32>,
}

/// The cloud management API client. One per process: its pacer is the
/// process's budget of access policy calls.
pub struct CloudClient {
    http: reqwest::Client,
    base: Url,
    auth: Auth,
    pacer: Pacer,
    retry: RetryPolicy,
}

type Query = Vec<(&'static str, String)>;

impl CloudClient {
    pub fn new(opts: CloudOptions) -> Result<Self, CloudError> {
        let base = parse_base(&opts.url, "--cloud-url (TAILSHIP_CLOUD_URL)")?;
        if opts.token.is_empty() {
            return Err(CloudError::Usage(
                "the cloud token is empty: pass --token-file FILE or set TAILSHIP_CLOUD_TOKEN".into(),
            ));
        }
        let http = http::build_client(&ClientOptions { timeout: Some(opts.timeout), ..Default::default() })
            .map_err(|source| CloudError::Http { action: "start the HTTP client".into(), source })?;
        let pacer = Pacer::new(opts.pace_per_hour, opts.pace_burst).map_err(|e| CloudError::Usage(e.to_string()))?;
        Ok(Self { http, base, auth: Auth::Bearer(opts.token), pacer, retry: opts.retry })
    }

    // ---- access policies ----

    pub async fn create_policy(&self, region: &str, p: &NewPolicy) -> Result<Value, CloudError> {
        let mut c = Checks::new();
        check_region(&mut c, region);
        c.check("name", validate::name(&p.name));
        check_display_name(&mut c, p.display_name.as_deref());
        validate::scopes(&mut c, &p.scopes);
        validate::realms(&mut c, &p.realms, &p.scopes);
        if let Some(cond) = &p.conditions {
            check_subnets(&mut c, &cond.allowed_subnets);
        }
        c.finish()?;
        let call = Call::new(format!("create access policy `{}`", p.name), "").paced();
        self.send_json(Method::POST, &["api", "v1", "accesspolicies"], region_query(region), Some(p), &call).await
    }

    pub async fn list_policies(
        &self,
        region: &str,
        f: &PolicyFilter,
        limit: Option<usize>,
    ) -> Result<Vec<Value>, CloudError> {
        let realm = (f.realm_type.as_deref(), f.realm_identifier.as_deref());
        let mut c = list_checks(region, ("realmType", "realmIdentifier"), realm);
        check_page_size(&mut c, f.page_size);
        c.finish()?;
        let mut q = region_query(region);
        push_opt(&mut q, "name", &f.name);
        push_opt(&mut q, "realmType", &f.realm_type);
        push_opt(&mut q, "realmIdentifier", &f.realm_identifier);
        push_opt(&mut q, "status", &f.status.map(|s| s.as_str().to_string()));
        push_opt(&mut q, "pageSize", &f.page_size.map(|n| n.to_string()));
        let call = Call::new(format!("list access policies in region `{region}`"), "").paced().idempotent();
        self.list_pages(&["api", "v1", "accesspolicies"], q, limit, &call).await
    }

    pub async fn get_policy(&self, region: &str, id: &str) -> Result<Value, CloudError> {
        check_id_and_region("accessPolicyId", id, region)?;
        let call =
            Call::new(format!("read access policy `{id}`"), format!("access policy `{id}` in region `{region}`"))
                .paced()
                .idempotent();
        self.send_json::<()>(Method::GET, &["api", "v1", "accesspolicies", id], region_query(region), None, &call).await
    }

    pub async fn update_policy(&self, region: &str, id: &str, u: &PolicyUpdate) -> Result<Value, CloudError> {
        let mut c = id_checks("accessPolicyId", id, region);
        check_display_name(&mut c, u.display_name.as_deref());
        validate::scopes(&mut c, &u.scopes);
        validate::realms(&mut c, &u.realms, &u.scopes);
        if let Some(model::ConditionsUpdate::Set(cond)) = &u.conditions {
            check_subnets(&mut c, &cond.allowed_subnets);
        }
        c.finish()?;
        let call =
            Call::new(format!("update access policy `{id}`"), format!("access policy `{id}` in region `{region}`"))
                .paced();
        self.send_json(Method::POST, &["api", "v1", "accesspolicies", id], region_query(region), Some(u), &call).await
    }

    pub async fn delete_policy(&self, region: &str, id: &str) -> Result<(), CloudError> {
        check_id_and_region("accessPolicyId", id, region)?;
        let call =
            Call::new(format!("delete access policy `{id}`"), format!("access policy `{id}` in region `{region}`"))
                .paced()
                .idempotent();
        self.send::<()>(Method::DELETE, &["api", "v1", "accesspolicies", id], region_query(region), None, &call)
            .await
            .map(|_| ())
    }

    // ---- tokens ----

    pub async fn create_token(&self, region: &str, t: &NewToken) -> Result<Value, CloudError> {
        let mut c = Checks::new();
        check_region(&mut c, region);
        if t.access_policy_id.is_empty() {
            c.fail("accessPolicyId", "is required");
        }
        c.check("name", validate::name(&t.name));
        check_display_name(&mut c, t.display_name.as_deref());
        if let Some(e) = &t.expires_at {
            c.check("expiresAt", validate::utc_time(e).map(|_| ()));
        }
        c.finish()?;
        let call = Call::new(format!("create token `{}`", t.name), "");
        self.send_json(Method::POST, &["api", "v1", "tokens"], region_query(region), Some(t), &call).await
    }

    pub async fn list_tokens(
        &self,
        region: &str,
        f: &TokenFilter,
        limit: Option<usize>,
    ) -> Result<Vec<Value>, CloudError> {
        let realm = (f.access_policy_realm_type.as_deref(), f.access_policy_realm_identifier.as_deref());
        let mut c = list_checks(region, ("accessPolicyRealmType", "accessPolicyRealmIdentifier"), realm);
        for (field, v) in [("expiresBefore", &f.expires_before), ("expiresAfter", &f.expires_after)] {
            if let Some(t) = v {
                c.check(field, validate::utc_time(t).map(|_| ()));
            }
        }
        check_page_size(&mut c, f.page_size);
        c.finish()?;
        let mut q = region_query(region);
        push_opt(&mut q, "accessPolicyId", &f.access_policy_id);
        push_opt(&mut q, "accessPolicyName", &f.access_policy_name);
        push_opt(&mut q, "accessPolicyRealmType", &f.access_policy_realm_type);
        push_opt(&mut q, "accessPolicyRealmIdentifier", &f.access_policy_realm_identifier);
        push_opt(&mut q, "name", &f.name);
        push_opt(&mut q, "expiresBefore", &f.expires_before);
        push_opt(&mut q, "expiresAfter", &f.expires_after);
        push_opt(&mut q, "accessPolicyStatus", &f.access_policy_status.map(|s| s.as_str().to_string()));
        push_opt(&mut q, "pageSize", &f.page_size.map(|n| n.to_string()));
        let call = Call::new(format!("list tokens in region `{region}`"), "").idempotent();
        self.list_pages(&["api", "v1", "tokens"], q, limit, &call).await
    }

    pub async fn get_token(&self, region: &str, id: &str) -> Result<Value, CloudError> {
        check_id_and_region("tokenId", id, region)?;
        let call = Call::new(format!("read token `{id}`"), format!("token `{id}` in region `{region}`")).idempotent();
        self.send_json::<()>(Method::GET, &["api", "v1", "tokens", id], region_query(region), None, &call).await
    }

    pub async fn update_token(&self, region: &str, id: &str, u: &TokenUpdate) -> Result<Value, CloudError> {
        let mut c = id_checks("tokenId", id, region);
        check_display_name(&mut c, u.display_name.as_deref());
        if let Some(Some(e)) = &u.expires_at {
            c.check("expiresAt", validate::utc_time(e).map(|_| ()));
        }
        if u.display_name.is_none() && u.expires_at.is_none() {
            c.fail("body", "nothing to update: give --display-name, --expires-at or --no-expiry");
        }
        c.finish()?;
        let call = Call::new(format!("update token `{id}`"), format!("token `{id}` in region `{region}`"));
        self.send_json(Method::POST, &["api", "v1", "tokens", id], region_query(region), Some(u), &call).await
    }

    pub async fn delete_token(&self, region: &str, id: &str) -> Result<(), CloudError> {
        check_id_and_region("tokenId", id, region)?;
        let call = Call::new(format!("delete token `{id}`"), format!("token `{id}` in region `{region}`")).idempotent();
        self.send::<()>(Method::DELETE, &["api", "v1", "tokens", id], region_query(region), None, &call)
            .await
            .map(|_| ())
    }

    // ---- stacks ----

    /// GET /orgs/{org}/instances: one request; the spec shows no paging
    /// parameters for it, so a list the service reports as longer is flagged
    /// by the caller (see [`StackList::total`]).
    pub async fn list_stacks(&self, org: &str) -> Result<StackList, CloudError> {
        if org.is_empty() {
            return Err(Invalid(vec![("org".into(), "must not be empty".into())]).into());
        }
        let call = Call::new(format!("list the stacks of org `{org}`"), format!("org `{org}`")).idempotent();
        let v = self.send_json::<()>(Method::GET, &["api", "orgs", org, "instances"], Vec::new(), None, &call).await?;
        decode(v, &call)
    }

    pub async fn create_stack(&self, s: &NewStack) -> Result<Value, CloudError> {
        let mut c = Checks::new();
        if s.name.is_empty() {
            c.fail("name", "is required");
        }
        if s.slug.is_empty() {
            c.fail("slug", "is required");
        }
        for (field, v) in [
            ("name", Some(&s.name)),
            ("slug", Some(&s.slug)),
            ("url", s.url.as_ref()),
            ("region", s.region.as_ref()),
            ("description", s.description.as_ref()),
        ] {
            if let Some(v) = v {
                c.check(field, validate::lowercase(v));
            }
        }
        if let Some(l) = &s.labels {
            validate::stack_labels(&mut c, l);
        }
        c.finish()?;
        let call = Call::new(format!("create stack `{}`", s.slug), "");
        self.send_json(Method::POST, &["api", "instances"], Vec::new(), Some(s), &call).await
    }

    pub async fn update_stack(&self, slug: &str, u: &StackUpdate) -> Result<Value, CloudError> {
        let mut c = Checks::new();
        if slug.is_empty() {
            c.fail("slug", "must not be empty");
        }
        for (field, v) in [("name", u.name.as_ref()), ("description", u.description.as_ref())] {
            if let Some(v) = v {
                c.check(field, validate::lowercase(v));
            }
        }
        if let Some(l) = &u.labels {
            validate::stack_labels(&mut c, l);
        }
        if u.is_empty() {
            c.fail(
                "body",
                "nothing to update: give --name, --description, --label, --clear-labels or --delete-protection",
            );
        }
        c.finish()?;
        let call = Call::new(format!("update stack `{slug}`"), format!("stack `{slug}`"));
        self.send_json(Method::POST, &["api", "instances", slug], Vec::new(), Some(u), &call).await
    }

    pub async fn delete_stack(&self, slug: &str) -> Result<(), CloudError> {
        check_slug(slug)?;
        let mut call = Call::new(format!("delete stack `{slug}`"), format!("stack `{slug}`")).idempotent();
        call.stack_delete = Some(slug.to_string());
        self.send::<()>(Method::DELETE, &["api", "instances", slug], Vec::new(), None, &call).await.map(|_| ())
    }

    pub async fn stack_connections(&self, slug: &str) -> Result<Value, CloudError> {
        check_slug(slug)?;
        let call = Call::new(format!("read the connections of stack `{slug}`"), format!("stack `{slug}`")).idempotent();
        self.send_json::<()>(Method::GET, &["api", "instances", slug, "connections"], Vec::new(), None, &call).await
    }

    // ---- plumbing ----

    /// Follows `metadata.pagination.nextPage` until it is null (or `limit`
    /// items were read). The next request repeats this one's query with the
    /// `pageCursor` taken from `nextPage`, so a `nextPage` relative to any
    /// base works; a cursor seen twice is an error rather than a loop.
    async fn list_pages(
        &self,
        segments: &[&str],
        query: Query,
        limit: Option<usize>,
        call: &Call,
    ) -> Result<Vec<Value>, CloudError> {
        let mut items = Vec::new();
        let mut cursor: Option<String> = None;
        let mut seen = HashSet::new();
        let mut pages = 0usize;
        loop {
            let mut q = query.clone();
            if let Some(c) = &cursor {
                q.push(("pageCursor", c.clone()));
            }
            let v = self.send_json::<()>(Method::GET, segments, q, None, call).await?;
            let page: Page = decode(v, call)?;
            pages += 1;
            items.extend(page.items);
            if let Some(l) = limit {
                if items.len() >= l {
                    items.truncate(l);
                    break;
                }
            }
            let next = match page.metadata.pagination.next_page.as_deref() {
                None | Some("") => break,
                Some(n) => n.to_string(),
            };
            let c = page_cursor_of(&self.base, &next).ok_or_else(|| CloudError::Protocol {
                action: call.action.clone(),
                message: format!("nextPage `{next}` carries no pageCursor"),
            })?;
            if !seen.insert(c.clone()) {
                return Err(CloudError::Protocol {
                    action: call.action.clone(),
                    message: format!("the service returned page cursor `{c}` twice"),
                });
            }
            cursor = Some(c);
        }
        tracing::debug!(pages, items = items.len(), "{}", call.action);
        Ok(items)
    }

    async fn send_json<B: Serialize>(
        &self,
        method: Method,
        segments: &[&str],
        query: Query,
        body: Option<&B>,
        call: &Call,
    ) -> Result<Value, CloudError> {
        self.send(method, segments, query, body, call).await?.ok_or_else(|| CloudError::Protocol {
            action: call.action.clone(),
            message: "the service answered with an empty body".into(),
        })
    }

    /// Sends one call: paced when it is an access policy call, retried on 429
    /// (and on 5xx or transport errors when idempotent), errors mapped.
    /// Returns the JSON body, or `None` for an empty one (204).
    async fn send<B: Serialize>(
        &self,
        method: Method,
        segments: &[&str],
        query: Query,
        body: Option<&B>,
        call: &Call,
    ) -> Result<Option<Value>, CloudError> {
        let url = self.url(segments);
        call::send_json(self.retry, call.idempotent, &call.action, || {
            let mut rb = self.http.request(method.clone(), url.clone());
            if !query.is_empty() {
                rb = rb.query(&query);
            }
            if let Some(b) = body {
                rb = rb.json(b);
            }
            let url = url.to_string();
            async move {
                if call.paced {
                    self.pacer.acquire().await;
                }
                http::send(self.auth.apply(rb).await?, &url).await.map(|r| (r, url))
            }
        })
        .await
        .map_err(|e| map_error(e, call))
    }

    fn url(&self, segments: &[&str]) -> Url {
        let mut u = self.base.clone();
        if let Ok(mut p) = u.path_segments_mut() {
            p.pop_if_empty().extend(segments);
        }
        u
    }
}

/// Parses a base URL: http or https, with a host.
pub fn parse_base(url: &str, flag: &str) -> Result<Url, CloudError> {
    if url.is_empty() {
        return Err(CloudError::Usage(format!("no base URL: set {flag}")));
    }
    match Url::parse(url) {
        Ok(u) if (u.scheme() == "http" || u.scheme() == "https") && u.host().is_some() => Ok(u),
        Ok(_) => Err(CloudError::Usage(format!("{flag}: `{url}` is not an http or https URL"))),
        Err(e) => Err(CloudError::Usage(format!("{flag}: `{url}` is not a URL ({e})"))),
    }
}

fn region_query(region: &str) -> Query {
    vec![("region", region.to_string())]
}

fn push_opt(q: &mut Query, key: &'static str, v: &Option<String>) {
    if let Some(v) = v {
        q.push((key, v.clone()));
    }
}

fn check_region(c: &mut Checks, region: &str) {
    if region.trim().is_empty() {
        c.fail("region", "is required on every access policy and token call (such as us, eu, au)");
    }
}

/// The checks a list starts with: the region, and a realm filter `realm`
/// (type and identifier) under the query keys `fields`.
fn list_checks(region: &str, fields: (&str, &str), realm: (Option<&str>, Option<&str>)) -> Checks {
    let mut c = Checks::new();
    check_region(&mut c, region);
    validate::realm_filter(&mut c, fields, realm.0, realm.1);
    c
}

/// The checks a call on one record starts with: the region, and its ID
/// (under the body or query key `field`).
fn id_checks(field: &str, id: &str, region: &str) -> Checks {
    let mut c = Checks::new();
    check_region(&mut c, region);
    if id.is_empty() {
        c.fail(field, "must not be empty");
    }
    c
}

fn check_id_and_region(field: &str, id: &str, region: &str) -> Result<(), Invalid> {
    id_checks(field, id, region).finish()
}

/// A policy's or token's `displayName`, when one is sent.
fn check_display_name(c: &mut Checks, display_name: Option<&str>) {
    if let Some(d) = display_name {
        c.check("displayName", validate::display_name(d));
    }
}

/// A list's `pageSize`, when one is asked for.
fn check_page_size(c: &mut Checks, page_size: Option<u32>) {
    if let Some(n) = page_size {
        c.check("pageSize", validate::page_size(n));
    }
}

/// A stack's slug in a call's path.
fn check_slug(slug: &str) -> Result<(), Invalid> {
    if slug.is_empty() {
        return Err(Invalid(vec![("slug".into(), "must not be empty".into())]));
    }
    Ok(())
}

fn check_subnets(c: &mut Checks, subnets: &[String]) {
    if subnets.is_empty() {
        c.fail("conditions.allowedSubnets", "is required inside conditions");
    }
    for (i, s) in subnets.iter().enumerate() {
        c.check(&format!("conditions.allowedSubnets[{i}]"), validate::cidr(s));
    }
}

/// The `pageCursor` query parameter of a (relative or absolute) `nextPage` URL.
fn page_cursor_of(base: &Url, next: &str) -> Option<String> {
    let u = base.join(next).ok()?;
    let c = u.query_pairs().find(|(k, _)| k == "pageCursor").map(|(_, v)| v.into_owned())?;
    (!c.is_empty()).then_some(c)
}

fn decode<T: DeserializeOwned>(v: Value, call: &Call) -> Result<T, CloudError> {
    serde_json::from_value(v).map_err(|e| CloudError::Protocol {
        action: call.action.clone(),
        message: format!("unexpected answer shape ({e})"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursor_from_next_page() {
        let base = Url::parse("http://h:1/").unwrap();
        assert_eq!(page_cursor_of(&base, "/api/v1/accesspolicies?pageCursor=abc&pageSize=2").unwrap(), "abc");
        assert_eq!(page_cursor_of(&base, "accesspolicies?region=us&pageCursor=a%2Bb").unwrap(), "a+b");
        assert_eq!(page_cursor_of(&base, "http://other/x?pageCursor=z").unwrap(), "z");
        assert!(page_cursor_of(&base, "/api/v1/accesspolicies?pageCursor=").is_none());
        assert!(page_cursor_of(&base, "/api/v1/accesspolicies").is_none());
    }

    #[test]
    fn urls_encode_segments_and_keep_a_base_path() {
        let c = CloudClient::new(CloudOptions::new("http://h:1/prefix/", Secret::new("t"))).unwrap();
        assert_eq!(c.url(&["api", "instances", "a/b"]).as_str(), "http://h:1/prefix/api/instances/a%2Fb");
        let c = CloudClient::new(CloudOptions::new("http://h:1", Secret::new("t"))).unwrap();
        assert_eq!(c.url(&["api", "v1", "tokens"]).as_str(), "http://h:1/api/v1/tokens");
    }
}
