//! OAuth 2.0 client credentials (`client.oauth2`, RFC 6749 4.4): a token is
//! asked of the token endpoint with the client's id and secret, sent as
//! `Authorization: Bearer ...` on every request, and asked for again 10 s
//! before it expires or after the service answered 401 (a token revoked
//! early). The exchange itself is the `oauth2` crate's.
//!
//! The client authenticates to the token endpoint as Go's `oauth2` package
//! does when no style is set (Promtail's): HTTP Basic first; if the endpoint
//! refuses that, the id and secret in the form; whichever worked is kept.
//!
//! A token that cannot be had is a retriable error ([`HttpError::Token`]):
//! the lines wait on disk and the push is tried again with backoff.

use std::sync::atomic::{AtomicU8, Ordering};
use std::time::{Duration, Instant};

use oauth2::basic::{BasicClient, BasicRequestTokenError};
use oauth2::{AuthType, ClientId, ClientSecret, HttpClientError, Scope, TokenResponse, TokenUrl};
use reqwest::header::HeaderValue;

use super::http::{self, ClientOptions, HttpError};
use super::read::Cap;
use crate::config::OAuth2Config;

/// How long a token request may take when the client has no timeout of its own.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
/// A token this close to its expiry is not used (Go's `oauth2` expiry delta).
const EXPIRY_DELTA: Duration = Duration::from_secs(10);

/// How the client authenticates to the token endpoint, once known.
const STYLE_UNKNOWN: u8 = 0;
const STYLE_HEADER: u8 = 1;
const STYLE_BODY: u8 = 2;

/// Tokens of one client, fetched when needed and kept until they expire.
pub struct TokenSource {
    config: OAuth2Config,
    http: reqwest::Client,
    style: AtomicU8,
    cached: tokio::sync::Mutex<Option<Cached>>,
}

struct Cached {
    header: HeaderValue,
    /// Unset: the endpoint gave no `expires_in`; the token is kept until a 401.
    renew_at: Option<Instant>,
}

impl std::fmt::Debug for TokenSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenSource").field("token_url", &http::redact_url(&self.config.token_url)).finish()
    }
}

impl TokenSource {
    /// The token source of `o`, the `oauth2` table of a client whose own
    /// requests go with `base` (its TLS, proxy and timeout): the token
    /// endpoint is reached with `oauth2.tls` and `oauth2.proxy_url` (with its
    /// `no_proxy` and `proxy_connect_header`; unset: the client's own proxy
    /// keys), never with the client's extra headers, and
    /// redirects are not followed. A `client_secret_file` not read yet
    /// (a discovery source's) is read here.
    pub fn new(base: ClientOptions, o: &OAuth2Config) -> Result<Self, HttpError> {
        // The oauth2 table's own proxy comes with its own exceptions and headers.
        let (proxy_url, no_proxy, proxy_headers) = match &o.proxy_url {
            Some(p) => (
                Some(p.clone()),
                o.no_proxy.clone(),
                o.proxy_connect_header.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
            ),
            None => (base.proxy_url.clone(), base.no_proxy.clone(), base.proxy_headers.clone()),
        };
        let mut opts = ClientOptions {
            plain_http: http::is_plain_http(&o.token_url),
            proxy_url,
            no_proxy,
            proxy_headers,
            timeout: base.timeout.or(Some(DEFAULT_TIMEOUT)),
            headers: Vec::new(),
            no_redirects: true,
            ..base
        };
        if let Some(tls) = &o.tls {
            opts.ca = tls.ca_pem();
            opts.insecure_skip_verify = tls.insecure_skip_verify;
            opts.server_name = tls.server_name.clone();
            opts.identity = tls.identity();
        }
        let mut config = o.clone();
        if let (None, Some(p)) = (&config.client_secret, config.client_secret_file.take()) {
            let secret = crate::util::read_secret_file(&p).map_err(|e| {
                HttpError::Setting(format!("oauth2.client_secret_file: cannot read {}: {e}", p.display()))
            })?;
            config.client_secret = Some(secret);
        }
        Ok(Self {
            config,
            http: http::build_client(&opts)?,
            style: AtomicU8::new(STYLE_UNKNOWN),
            cached: tokio::sync::Mutex::new(None),
        })
    }

    /// The `Authorization` header of the current token, fetched first if
    /// there is none or it is about to expire.
    pub async fn header(&self) -> Result<HeaderValue, HttpError> {
        let mut cached = self.cached.lock().await;
        if let Some(c) = cached.as_ref() {
            if c.renew_at.is_none_or(|t| Instant::now() < t) {
                return Ok(c.header.clone());
            }
        }
        let fresh = self.fetch().await?;
        let header = fresh.header.clone();
        *cached = Some(fresh);
        Ok(header)
    }

    /// The service refused the token (401): the next request asks for a new one.
    pub fn forget(&self) {
        if let Ok(mut c) = self.cached.try_lock() {
            *c = None;
        }
    }

    async fn fetch(&self) -> Result<Cached, HttpError> {
        let style = self.style.load(Ordering::Relaxed);
        let in_body = style == STYLE_BODY;
        let first = if in_body { AuthType::RequestBody } else { AuthType::BasicAuth };
        let answer = match self.exchange(first).await {
            Err(e) if style == STYLE_UNKNOWN && refused(&e) => {
                let second = self.exchange(AuthType::RequestBody).await;
                if second.is_ok() {
                    self.style.store(STYLE_BODY, Ordering::Relaxed);
                }
                second.map_err(|_| e)
            }
            Ok(t) => {
                self.style.store(if in_body { STYLE_BODY } else { STYLE_HEADER }, Ordering::Relaxed);
                Ok(t)
            }
            Err(e) => Err(e),
        };
        let token = answer.map_err(|e| self.error(e))?;
        let secret = token.access_token().secret();
        crate::util::secrets::remember(secret);
        let mut header = HeaderValue::from_str(&format!("Bearer {secret}")).map_err(|_| HttpError::Token {
            url: http::redact_url(&self.config.token_url),
            message: "the access token is not a header value".into(),
            connect: false,
        })?;
        header.set_sensitive(true);
        let renew_at = token.expires_in().map(|d| Instant::now() + d.saturating_sub(EXPIRY_DELTA));
        Ok(Cached { header, renew_at })
    }

    async fn exchange(&self, style: AuthType) -> Result<oauth2::basic::BasicTokenResponse, TokenError> {
        let o = &self.config;
        let url = TokenUrl::new(o.token_url.clone()).map_err(|e| TokenError::Other(e.to_string()))?;
        let mut client = BasicClient::new(ClientId::new(o.client_id.clone())).set_token_uri(url).set_auth_type(style);
        if let Some(s) = &o.client_secret {
            client = client.set_client_secret(ClientSecret::new(s.expose().to_string()));
        }
        let mut request = client.exchange_client_credentials().add_scopes(o.scopes.iter().cloned().map(Scope::new));
        for (k, v) in &o.endpoint_params {
            request = request.add_extra_param(k.as_str(), v.as_str());
        }
        let (http, url) = (self.http.clone(), o.token_url.clone());
        let call = move |req: oauth2::HttpRequest| {
            let (http, url) = (http.clone(), url.clone());
            async move { capped_call(&http, req, &url).await }
        };
        request.request_async(&call).await.map_err(TokenError::Request)
    }

    fn error(&self, e: TokenError) -> HttpError {
        let url = http::redact_url(&self.config.token_url);
        match e {
            TokenError::Request(oauth2::RequestTokenError::Request(HttpClientError::Reqwest(r))) => {
                match HttpError::transport(&self.config.token_url, &r) {
                    HttpError::Transport { message, connect, .. } => HttpError::Token {
                        url,
                        message: format!("cannot reach the token endpoint: {message}"),
                        connect,
                    },
                    other => other,
                }
            }
            TokenError::Request(oauth2::RequestTokenError::ServerResponse(r)) => {
                let mut message = format!("the token endpoint refused: {}", r.error());
                if let Some(d) = r.error_description() {
                    message.push_str(&format!(" ({d})"));
                }
                HttpError::Token { url, message, connect: false }
            }
            TokenError::Request(oauth2::RequestTokenError::Parse(err, body)) => {
                let body = String::from_utf8_lossy(&body[..body.len().min(256)]).into_owned();
                HttpError::Token {
                    url,
                    message: format!("the token endpoint's answer is not a token ({err}): {body}"),
                    connect: false,
                }
            }
            TokenError::Request(other) => HttpError::Token { url, message: other.to_string(), connect: false },
            TokenError::Other(message) => HttpError::Token { url, message, connect: false },
        }
    }
}

/// One request of the token exchange, its answer read to [`Cap::Small`]
/// (the oauth2 crate's own client would read an endless answer whole).
async fn capped_call(
    http: &reqwest::Client,
    req: oauth2::HttpRequest,
    url: &str,
) -> Result<oauth2::HttpResponse, HttpClientError<reqwest::Error>> {
    let req: reqwest::Request = req.try_into().map_err(|e| HttpClientError::Reqwest(Box::new(e)))?;
    let resp = http.execute(req).await.map_err(|e| HttpClientError::Reqwest(Box::new(e)))?;
    let mut answer = oauth2::http::Response::builder().status(resp.status());
    for (name, value) in resp.headers() {
        answer = answer.header(name, value);
    }
    let body = super::read::body(resp, Cap::Small, url).await.map_err(|e| HttpClientError::Other(e.to_string()))?;
    answer.body(body.to_vec()).map_err(HttpClientError::Http)
}

enum TokenError {
    Request(BasicRequestTokenError<HttpClientError<reqwest::Error>>),
    Other(String),
}

/// The endpoint answered, refusing (not a transport failure): worth trying
/// the other way of sending the credentials.
fn refused(e: &TokenError) -> bool {
    matches!(
        e,
        TokenError::Request(oauth2::RequestTokenError::ServerResponse(_) | oauth2::RequestTokenError::Parse(..))
    )
}
