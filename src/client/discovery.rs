//! The HTTP client of a discovery that asks a service's API ([`HttpKeys`]:
//! Prometheus' `HTTPClientConfig`): its TLS, proxy and credentials, and a
//! JSON GET that says what went wrong in the service's words. Every
//! discovery's client settings come from [`options`] (its keys and a few
//! [`Overrides`] of its own) into `super::http::build_client`, and its
//! credentials from [`auth`].

use std::time::Duration;

use super::auth::Auth;
use super::http::{ClientOptions, HttpError};
use super::oauth2::TokenSource;
use crate::config::HttpKeys;

/// How long one request of a discovery may take.
pub const CALL: Duration = Duration::from_secs(30);

/// A discovery's HTTP client and its credentials.
#[derive(Debug, Clone)]
pub struct SdClient {
    pub http: reqwest::Client,
    pub auth: Auth,
}

/// A request of a discovery that failed.
#[derive(Debug, thiserror::Error)]
pub enum SdHttpError {
    #[error("cannot reach {url}: {source}")]
    Unreachable { url: String, source: reqwest::Error },
    #[error("{url} answered {status}: {body}")]
    Status { url: String, status: u16, body: String },
    #[error("the answer of {url} is not what its API documents: {source}")]
    Decode { url: String, source: serde_json::Error },
    #[error(transparent)]
    Client(#[from] HttpError),
}

/// What a discovery sets of its client beyond its [`HttpKeys`].
#[derive(Debug, Clone, Copy)]
pub struct Overrides {
    /// The service is reached over `http://` only (no TLS roots loaded).
    pub plain_http: bool,
    /// How long one request may take (None: streams and blocking queries
    /// stay open; their calls bound themselves).
    pub timeout: Option<Duration>,
    /// Redirects are refused rather than followed.
    pub no_redirects: bool,
    pub http1_only: bool,
}

impl Default for Overrides {
    /// A service's API: `https://`, [`CALL`] per request, no redirects.
    fn default() -> Self {
        Self { plain_http: false, timeout: Some(CALL), no_redirects: true, http1_only: false }
    }
}

/// The client settings of a discovery: `keys`' TLS and proxy, and `o`.
pub fn options(keys: HttpKeys<'_>, o: Overrides) -> ClientOptions {
    let tls = keys.tls.cloned().unwrap_or_default();
    ClientOptions {
        ca: tls.ca_pem(),
        insecure_skip_verify: tls.insecure_skip_verify,
        server_name: tls.server_name.clone(),
        plain_http: o.plain_http,
        identity: tls.identity(),
        proxy_url: keys.proxy_url.cloned(),
        no_proxy: keys.no_proxy.map(str::to_string),
        proxy_headers: keys.proxy_connect_header.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
        timeout: o.timeout,
        headers: Vec::new(),
        no_redirects: o.no_redirects,
        http1_only: o.http1_only,
    }
}

impl SdClient {
    /// The client `keys` describe; `plain_http`: the service is reached
    /// over `http://` only (no TLS roots loaded).
    pub fn new(keys: HttpKeys<'_>, plain_http: bool) -> Result<Self, HttpError> {
        let opts = options(keys, Overrides { plain_http, ..Overrides::default() });
        let http = super::http::build_client(&opts)?;
        let auth = auth(keys, opts)?;
        Ok(Self { http, auth })
    }

    /// GETs `url` with the credentials and `headers`, and reads its JSON answer.
    pub async fn get_json<T: serde::de::DeserializeOwned>(
        &self,
        url: &str,
        headers: &[(&str, String)],
    ) -> Result<T, SdHttpError> {
        let shown = super::http::redact_url(url);
        let mut rb = self.auth.apply(self.http.get(url)).await?;
        for (k, v) in headers {
            rb = rb.header(*k, v);
        }
        let resp = rb.send().await.map_err(|source| SdHttpError::Unreachable { url: shown.clone(), source })?;
        self.auth.answered_with(Some(resp.status()));
        let (status, body) = super::read::answer(resp, super::read::Cap::Discovery, url).await?;
        let status = status.as_u16();
        if !(200..300).contains(&status) {
            let body = String::from_utf8_lossy(&body).chars().take(300).collect();
            return Err(SdHttpError::Status { url: shown, status, body });
        }
        serde_json::from_slice(&body).map_err(|source| SdHttpError::Decode { url: shown, source })
    }
}

/// The credentials of `keys` (files of basic auth read now; a bearer
/// token file for every request); an OAuth 2.0 token is asked for with
/// `opts`' TLS and proxy.
pub fn auth(keys: HttpKeys<'_>, opts: ClientOptions) -> Result<Auth, HttpError> {
    Ok(match (keys.basic_auth, keys.bearer_token, keys.bearer_token_file, keys.oauth2) {
        (Some(b), ..) => basic_auth(b)?,
        (None, Some(t), ..) => Auth::Bearer(t.clone()),
        (None, None, Some(p), _) => Auth::BearerFile(p.clone()),
        (None, None, None, Some(o)) => {
            let base = ClientOptions { timeout: Some(CALL), http1_only: false, ..opts };
            Auth::OAuth2(std::sync::Arc::new(TokenSource::new(base, o)?))
        }
        (None, None, None, None) => Auth::None,
    })
}

/// `basic_auth` with its secret files read.
fn basic_auth(b: &crate::config::BasicAuth) -> Result<Auth, HttpError> {
    let read = |p: &std::path::Path, what: &str| {
        crate::util::read_secret_file(p)
            .map_err(|e| HttpError::Setting(format!("basic_auth.{what}: cannot read {}: {e}", p.display())))
    };
    let username = match &b.username_file {
        Some(p) => read(p, "username_file")?.expose().trim().to_string(),
        None => b.username.clone(),
    };
    let password = match (&b.password, &b.password_file) {
        (Some(p), _) => p.clone(),
        (None, Some(p)) => read(p, "password_file")?,
        (None, None) => Default::default(),
    };
    crate::util::secrets::remember_basic(&username, password.expose());
    Ok(Auth::Basic { username, password })
}
