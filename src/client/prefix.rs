//! Which log API a bare service URL serves: Loki's (`/loki/api/v1`) or the
//! spec's (`/logstore/api/v1`, what `tailship receive` serves).
//!
//! A client whose `api_prefix` is unset asks once, at start: `GET
//! {url}{prefix}/labels` under each prefix, the spec's first, until one
//! answers other than 404. Label names are a request both APIs define (the
//! spec's log API and Loki's), with no parameter required, that reads
//! nothing but the names: a prefix the service serves answers 200 (or 401 or
//! 403 when the credentials are wrong or may not read), one it does not
//! serve answers 404. So the spec's service sees only a request of its own
//! API (it answers the first one), and nothing is pushed. (The probe was an
//! `OPTIONS` of the push path, which the spec does not define: its service
//! answered 405 and logged a request outside its API at every start.)
//!
//! Nothing is asked where the config says which: an explicit `api_prefix`,
//! or a `url` that ends in a push path or in a known prefix (split by the
//! config's checks) is never second-guessed.

use std::time::Duration;

use crate::client::auth::Auth;
use crate::client::http::{self, HttpError};
use crate::config::{ClientConfig, LOKI_API_PREFIX, SPEC_API_PREFIX};

/// A probe waits at most this long for each answer (or `client.timeout` if shorter).
const PROBE_TIMEOUT: Duration = Duration::from_secs(5);

/// What asking the service found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Found {
    /// `api_prefix` was set: nothing was asked.
    Explicit,
    /// This prefix answered (the other one answered 404, or was not asked).
    Answered(&'static str),
    /// Both answered 404: the URL is not the service's.
    Neither,
    /// The service could not be asked (down, refused, TLS): the spec's prefix
    /// is kept, and a 404 later names the other one.
    Unreachable(String),
}

/// Asks the service at `c.url` which prefix it serves (see the module docs).
pub async fn probe(c: &ClientConfig) -> Found {
    if c.api_prefix.is_some() {
        return Found::Explicit;
    }
    let client = match http::client_for(c, &c.url) {
        Ok(client) => client,
        Err(e) => return Found::Unreachable(e.to_string()),
    };
    // OAuth 2.0: no token is fetched for the probe (a token endpoint may
    // count or limit them); the service's answer without one still tells a
    // route it serves (401) from one it does not (404) when nothing stands in front.
    let auth = match Auth::of(c) {
        Ok(Auth::OAuth2(_)) => Auth::None,
        Ok(a) => a,
        Err(e) => return Found::Unreachable(e.to_string()),
    };
    let timeout = c.timeout.get().min(PROBE_TIMEOUT);
    for prefix in [SPEC_API_PREFIX, LOKI_API_PREFIX] {
        let url = http::join_url(&c.url, prefix, "labels");
        let mut rb = client.get(&url).timeout(timeout);
        if let Some(t) = &c.tenant_id {
            rb = rb.header("X-Scope-OrgID", t);
        }
        let rb = match auth.apply(rb).await {
            Ok(rb) => rb,
            Err(e) => return Found::Unreachable(e.to_string()),
        };
        match rb.send().await {
            Ok(resp) if resp.status() == reqwest::StatusCode::NOT_FOUND => continue,
            Ok(_) => return Found::Answered(prefix),
            Err(e) => return Found::Unreachable(HttpError::transport(&url, &e).to_string()),
        }
    }
    Found::Neither
}

/// `c` with the prefix its service serves when `api_prefix` is unset, and
/// what was found; says which in the log (`who` names the client).
pub async fn resolve(c: &ClientConfig, who: &str) -> (ClientConfig, Found) {
    let found = probe(c).await;
    let mut c = c.clone();
    let url = http::redact_url(&c.url);
    match &found {
        Found::Explicit => {}
        Found::Answered(prefix) => {
            tracing::info!(client = %who, %url, api_prefix = %prefix, "the service answers at {prefix} (client.api_prefix unset; set it to skip this check)");
            c.api_prefix = Some((*prefix).to_string());
        }
        Found::Neither => tracing::warn!(
            client = %who,
            %url,
            "neither {SPEC_API_PREFIX} nor {LOKI_API_PREFIX} answers at this URL (404): check client.url, or set client.api_prefix"
        ),
        Found::Unreachable(why) => tracing::warn!(
            client = %who,
            %url,
            error = %why,
            "cannot ask the service which API prefix it serves; using {SPEC_API_PREFIX} (set client.api_prefix, /loki/api/v1 for Loki, to skip this check)"
        ),
    }
    (c, found)
}

/// A hint for a 404 at `prefix`: the other known prefix, and how to choose it.
pub fn hint_404(prefix: &str, setting: &str) -> String {
    match crate::config::other_api_prefix(prefix) {
        Some(other) if other == LOKI_API_PREFIX => {
            format!("nothing answers at {prefix}; a Loki serves its API under {other}: set {setting} {other}")
        }
        Some(other) => format!("nothing answers at {prefix}; the spec's log service uses {other}: set {setting} {other}"),
        None => format!(
            "nothing answers at {prefix}: a Loki serves its API under {LOKI_API_PREFIX}, the spec's log service under {SPEC_API_PREFIX}; check {setting}"
        ),
    }
}

/// The known prefix a push URL (`{url}{prefix}/push`) ends in.
fn prefix_of_push_url(url: &str) -> &str {
    let path = url.trim_end_matches("/push");
    [SPEC_API_PREFIX, LOKI_API_PREFIX].into_iter().find(|p| path.ends_with(p)).unwrap_or(path)
}

/// What the agent's log says to check when the service refuses pushes to
/// `url` with `status`: for a 404, the other prefix.
pub fn refusal_hint(status: Option<u16>, url: &str) -> String {
    match status {
        Some(404) => hint_404(prefix_of_push_url(url), "client.api_prefix"),
        _ => "check client.url, api_prefix and credentials".to_string(),
    }
}

/// `why` (the message of a refused push, `e`) with the other prefix named when it is a 404.
pub fn with_404_hint(why: String, e: &HttpError) -> String {
    match (e.status().map(|s| s.as_u16()), e) {
        (Some(404), HttpError::Status { url, .. }) => {
            format!("{why}; {}", hint_404(prefix_of_push_url(url), "--api-prefix"))
        }
        _ => why,
    }
}
