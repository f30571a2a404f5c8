//! The one HTTP layer every client uses: a reqwest client with rustls (extra
//! CA file, optional insecure mode), authentication, and typed errors that
//! know whether they may be retried (the retries themselves, with
//! exponential backoff and jitter that honours `Retry-After`, are in
//! [`super::retry`]).
//!
//! [`client_for`] is the one builder of clients from the `client` config
//! section: push, query, alert webhooks and annotations all take their TLS
//! settings, timeouts, authentication ([`super::auth::Auth::of`]) and retry policy
//! ([`super::retry::RetryPolicy::of`]) from it, so a setting such as `client.tls.ca_file`
//! holds for every request the agent makes. (The cloud and admin clients
//! have their own URLs and tokens and call [`build_client`] directly.)

use std::time::Duration;

use reqwest::header::HeaderMap;
use reqwest::{RequestBuilder, StatusCode};

use crate::config::ClientConfig;
use crate::util::Secret;

/// User-Agent of every request.
pub const USER_AGENT: &str = concat!("tailship/", env!("CARGO_PKG_VERSION"));

/// The largest part of an error body kept for messages.
const MAX_ERROR_BODY: usize = 1024;

#[derive(Debug, thiserror::Error)]
pub enum HttpError {
    #[error("cannot read CA file {path}: {source}")]
    CaFile { path: String, source: std::io::Error },
    #[error("CA file {path} holds no usable PEM certificate: {source}")]
    CaCert { path: String, source: reqwest::Error },
    #[error("cannot build the HTTP client: {0}")]
    Build(reqwest::Error),
    /// A client certificate, proxy or header setting that cannot be used.
    #[error("{0}")]
    Setting(String),
    /// Connection refused, reset, DNS or TLS failure, or a timeout.
    /// `connect` is set when no connection could be made (refused, no route,
    /// DNS): nobody is listening, which a one-off command should say soon.
    #[error("request to {url} failed: {message}")]
    Transport { url: String, message: String, connect: bool },
    /// The service answered with a non-2xx status.
    #[error("{status} from {url}: {body}")]
    Status { url: String, status: StatusCode, body: String, retry_after: Option<Duration> },
    /// No OAuth 2.0 token could be had (`client.oauth2`): retried, as the
    /// service's own failures are.
    #[error("no OAuth 2.0 token from {url}: {message}")]
    Token { url: String, message: String, connect: bool },
    #[error("cannot decode the answer of {url}: {message}")]
    Decode { url: String, message: String },
    /// The answer is larger than its use allows (see [`super::read::Cap`]): not read further.
    #[error("the answer of {url} is larger than {} MiB; it was not read further", .cap >> 20)]
    TooLarge { url: String, cap: usize },
    #[error("cancelled")]
    Cancelled,
}

impl HttpError {
    /// 429, 5xx and transport errors may succeed later; other statuses will not.
    pub fn is_retriable(&self) -> bool {
        match self {
            Self::Transport { .. } | Self::Token { .. } => true,
            Self::Status { status, .. } => *status == StatusCode::TOO_MANY_REQUESTS || status.is_server_error(),
            _ => false,
        }
    }

    pub fn status(&self) -> Option<StatusCode> {
        match self {
            Self::Status { status, .. } => Some(*status),
            _ => None,
        }
    }

    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            Self::Status { retry_after, .. } => *retry_after,
            _ => None,
        }
    }

    /// Turns a reqwest error into a transport error without its URL's query
    /// string or credentials.
    pub fn transport(url: &str, e: &reqwest::Error) -> Self {
        let mut message = if e.is_timeout() {
            "timed out".to_string()
        } else if e.is_connect() {
            "connection failed".to_string()
        } else {
            "transport error".to_string()
        };
        let mut src: Option<&dyn std::error::Error> = std::error::Error::source(e);
        while let Some(s) = src {
            message.push_str(": ");
            message.push_str(&s.to_string());
            src = s.source();
        }
        if let Some(hint) = transport_hint(url, &message) {
            message.push_str(" (");
            message.push_str(hint);
            message.push(')');
        }
        Self::Transport { url: redact_url(url), message, connect: e.is_connect() }
    }

    /// No connection could be made at all (see [`HttpError::Transport`]).
    pub fn is_connect(&self) -> bool {
        matches!(self, Self::Transport { connect: true, .. } | Self::Token { connect: true, .. })
    }
}

/// TLS and timeout settings of a client.
#[derive(Debug, Clone, Default)]
pub struct ClientOptions {
    /// Extra CA certificates (`client.tls.ca_file` or `ca`).
    pub ca: Option<crate::config::Pem>,
    pub insecure_skip_verify: bool,
    /// `client.tls.server_name`: the certificate is checked against it.
    pub server_name: Option<String>,
    pub timeout: Option<Duration>,
    /// The service is reached over plain `http://`: the system's and the
    /// built-in TLS root certificates are not loaded (parsing them costs a
    /// few milliseconds and a few hundred KiB held for the agent's lifetime).
    pub plain_http: bool,
    /// `client.tls.cert_file` and `key_file` (or `cert` and `key`): a client certificate (mTLS).
    pub identity: Option<(crate::config::Pem, crate::config::Pem)>,
    /// `client.proxy_url`; without it the usual proxy environment variables apply.
    pub proxy_url: Option<Secret>,
    /// `client.no_proxy`: hosts reached without `proxy_url` (unset: `NO_PROXY`).
    pub no_proxy: Option<String>,
    /// `client.proxy_connect_header`: headers sent to the proxy.
    pub proxy_headers: Vec<(String, Secret)>,
    /// `client.headers`, sent on every request of this client.
    pub headers: Vec<(String, Secret)>,
    /// `client.follow_redirects` (false: a 3xx is answered as it is).
    pub no_redirects: bool,
    /// `client.http2 = false`: HTTP/1.1 only.
    pub http1_only: bool,
}

impl ClientOptions {
    /// `client.tls`, `client.proxy_url`, `client.headers` and
    /// `client.timeout`, for requests to the log service at `url` (TLS roots
    /// are loaded unless `url` is plain `http://`).
    pub fn of(c: &ClientConfig, url: &str) -> Self {
        Self {
            ca: c.tls.ca_pem(),
            insecure_skip_verify: c.tls.insecure_skip_verify,
            server_name: c.tls.server_name.clone(),
            timeout: Some(c.timeout.get()),
            plain_http: is_plain_http(url),
            identity: c.tls.identity(),
            proxy_url: c.proxy_url.clone(),
            no_proxy: c.no_proxy.clone(),
            proxy_headers: c.proxy_connect_header.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
            headers: c.headers.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
            no_redirects: !c.follow_redirects,
            http1_only: !c.http2,
        }
    }
}

/// The HTTP client for requests to the log service at `url` under the
/// `client` config section.
pub fn client_for(c: &ClientConfig, url: &str) -> Result<reqwest::Client, HttpError> {
    build_client(&ClientOptions::of(c, url))
}

/// The HTTP client for alert webhooks and annotations (many URLs, not the
/// log service): `client`'s TLS, proxy and timeout, without its extra headers,
/// which are meant for the log service only.
pub fn webhook_client(c: &ClientConfig) -> Result<reqwest::Client, HttpError> {
    build_client(&ClientOptions { headers: Vec::new(), ..ClientOptions::of(c, "") })
}

/// True for an `http://` URL (no TLS).
pub fn is_plain_http(url: &str) -> bool {
    url.get(..7).is_some_and(|s| s.eq_ignore_ascii_case("http://"))
}

/// A client of a local service on a Unix socket (the Docker Engine API):
/// every request goes to `socket`, whatever the URL's host. No timeout on
/// the whole request: an event stream stays open; connecting has `connect`.
pub fn unix_socket_client(socket: &std::path::Path, connect: Duration) -> Result<reqwest::Client, HttpError> {
    reqwest::Client::builder()
        .user_agent(USER_AGENT)
        .unix_socket(socket)
        .connect_timeout(connect)
        .redirect(super::redirect::policy(false))
        .referer(false)
        .pool_idle_timeout(Duration::from_secs(60))
        .build()
        .map_err(|e| HttpError::Setting(format!("cannot build a client of {}: {e}", socket.display())))
}

/// Builds the reqwest client (rustls, optional extra CA, optional insecure mode).
pub fn build_client(opts: &ClientOptions) -> Result<reqwest::Client, HttpError> {
    let mut b = reqwest::Client::builder().user_agent(USER_AGENT).pool_idle_timeout(Duration::from_secs(60));
    if let Some(t) = opts.timeout {
        b = b.timeout(t).connect_timeout(t.min(Duration::from_secs(10)));
    }
    let ca = opts.ca.as_ref().map(read_ca).transpose()?;
    match &opts.server_name {
        Some(name) if !opts.plain_http && !opts.insecure_skip_verify => {
            let identity = match &opts.identity {
                Some((cert, key)) => Some((
                    cert.read("cert_file").map_err(HttpError::Setting)?,
                    key.read("key_file").map_err(HttpError::Setting)?,
                )),
                None => None,
            };
            let settings = super::tls::Settings {
                server_name: Some(name),
                insecure_skip_verify: false,
                extra_ca: ca.as_ref().map(|(pem, _)| pem.as_slice()),
                identity: identity.as_ref().map(|(c, k)| (c.as_slice(), k.as_slice())),
                alpn: if opts.http1_only {
                    vec![b"http/1.1".to_vec()]
                } else {
                    vec![b"h2".to_vec(), b"http/1.1".to_vec()]
                },
            };
            b = b.use_preconfigured_tls(super::tls::config(&settings).map_err(HttpError::Setting)?);
        }
        _ => {
            for cert in ca.into_iter().flat_map(|(_, certs)| certs) {
                b = b.add_root_certificate(cert);
            }
            if opts.plain_http {
                b = b.tls_built_in_root_certs(false);
            }
            if let Some((cert, key)) = &opts.identity {
                let id = crate::config::client_identity(cert, key).map_err(HttpError::Setting)?;
                b = b.identity(id);
            }
        }
    }
    if let Some(p) = &opts.proxy_url {
        let no_proxy = match &opts.no_proxy {
            Some(list) => reqwest::NoProxy::from_string(list),
            None => reqwest::NoProxy::from_env(),
        };
        let mut proxy = reqwest::Proxy::all(p.expose())
            .map_err(|e| HttpError::Setting(format!("proxy_url: {e}")))?
            .no_proxy(no_proxy);
        if !opts.proxy_headers.is_empty() {
            proxy = proxy.headers(header_map(&opts.proxy_headers, "proxy_connect_header")?);
        }
        b = b.proxy(proxy);
    }
    if !opts.headers.is_empty() {
        b = b.default_headers(header_map(&opts.headers, "client.headers")?);
    }
    b = b.redirect(super::redirect::policy(!opts.no_redirects)).referer(false);
    if opts.http1_only {
        b = b.http1_only();
    }
    if opts.insecure_skip_verify {
        tracing::warn!(
            "TLS certificate verification is off (insecure_skip_verify): use this only for self-signed test setups"
        );
        b = b.danger_accept_invalid_certs(true);
    }
    b.build().map_err(HttpError::Build)
}

/// Headers whose values are secrets (`what` names the key in errors).
fn header_map(headers: &[(String, Secret)], what: &str) -> Result<reqwest::header::HeaderMap, HttpError> {
    let mut map = reqwest::header::HeaderMap::new();
    for (k, v) in headers {
        let name = reqwest::header::HeaderName::from_bytes(k.as_bytes())
            .map_err(|_| HttpError::Setting(format!("{what}: `{k}` is not a header name")))?;
        let mut value = reqwest::header::HeaderValue::from_str(v.expose())
            .map_err(|_| HttpError::Setting(format!("{what}.{k}: not a header value")))?;
        value.set_sensitive(true);
        map.append(name, value);
    }
    Ok(map)
}

/// The extra CAs' PEM and certificates.
fn read_ca(ca: &crate::config::Pem) -> Result<(Vec<u8>, Vec<reqwest::Certificate>), HttpError> {
    let name = match ca {
        crate::config::Pem::File(path) => path.display().to_string(),
        crate::config::Pem::Inline(_) => "client.tls.ca".to_string(),
    };
    let pem = match ca {
        crate::config::Pem::File(path) => {
            std::fs::read(path).map_err(|source| HttpError::CaFile { path: name.clone(), source })?
        }
        crate::config::Pem::Inline(text) => text.expose().as_bytes().to_vec(),
    };
    let certs =
        reqwest::Certificate::from_pem_bundle(&pem).map_err(|source| HttpError::CaCert { path: name, source })?;
    Ok((pem, certs))
}

/// Joins a base URL, an API prefix and a path without doubled slashes.
pub fn join_url(base: &str, prefix: &str, path: &str) -> String {
    let base = base.trim_end_matches('/');
    let prefix = prefix.trim_matches('/');
    let path = path.trim_start_matches('/');
    if prefix.is_empty() {
        format!("{base}/{path}")
    } else {
        format!("{base}/{prefix}/{path}")
    }
}

/// A URL without credentials or query string, safe for logs.
pub fn redact_url(url: &str) -> String {
    match reqwest::Url::parse(url) {
        Ok(mut u) => {
            let _ = u.set_username("");
            let _ = u.set_password(None);
            u.set_query(None);
            u.to_string()
        }
        Err(_) => "<url>".to_string(),
    }
}

/// Reads `Retry-After` as seconds (the HTTP-date form is rare for APIs and is ignored).
pub fn parse_retry_after(headers: &HeaderMap) -> Option<Duration> {
    let v = headers.get(reqwest::header::RETRY_AFTER)?.to_str().ok()?.trim();
    v.parse::<f64>().ok().filter(|s| s.is_finite() && *s >= 0.0).map(|s| Duration::from_secs_f64(s.min(86_400.0)))
}

/// Sends a request; a non-2xx status becomes [`HttpError::Status`] with the
/// (shortened) start of its body and any `Retry-After`. A 3xx is a redirect
/// not followed (see [`super::redirect`]): its "body" says why.
pub async fn send(rb: RequestBuilder, url: &str) -> Result<reqwest::Response, HttpError> {
    let resp = rb.send().await.map_err(|e| HttpError::transport(url, &e))?;
    let status = resp.status();
    if status.is_success() {
        return Ok(resp);
    }
    let retry_after = parse_retry_after(resp.headers());
    let body = if status.is_redirection() {
        let location = resp.headers().get(reqwest::header::LOCATION).and_then(|v| v.to_str().ok());
        super::redirect::refusal(status, location, url)
    } else {
        super::read::error_text(resp).await
    };
    Err(HttpError::Status { url: redact_url(url), status, body: shorten(body.trim()), retry_after })
}

/// Sends a request and reads its whole answer, at most `cap`.
pub async fn fetch(rb: RequestBuilder, url: &str, cap: super::read::Cap) -> Result<bytes::Bytes, HttpError> {
    super::read::body(send(rb, url).await?, cap, url).await
}

/// What a TLS library's words mean for the operator, where they are cryptic.
fn transport_hint(url: &str, message: &str) -> Option<&'static str> {
    let https = url.get(..8).is_some_and(|p| p.eq_ignore_ascii_case("https://"));
    if https && (message.contains("InvalidContentType") || message.contains("corrupt message")) {
        // rustls read plain HTTP where a TLS record was due.
        return Some("the server answered in plain HTTP, not TLS: use http:// in the URL, or the server's TLS port");
    }
    if message.contains("UnknownIssuer") {
        return Some(
            "the server's certificate is not signed by a trusted CA: set client.tls.ca_file (--ca-file) to its CA",
        );
    }
    if message.contains("NotValidForName") {
        return Some("the server's certificate does not name the host in the URL");
    }
    None
}

/// `s` scrubbed of secrets, then cut to [`MAX_ERROR_BODY`]: scrubbed whole
/// first, as a secret the service echoes across the cut would be cut to a
/// piece that matches no secret.
fn shorten(s: &str) -> String {
    let s = crate::util::secrets::scrub(s);
    let s = s.as_ref();
    let cut = crate::util::cut_at_char(s, MAX_ERROR_BODY);
    if cut.len() == s.len() {
        s.to_string()
    } else {
        format!("{cut}...")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cryptic_tls_errors_say_what_they_mean() {
        let plain = "transport error: error sending request: client error (Connect): received corrupt message of type InvalidContentType";
        assert!(transport_hint("https://h:3100", plain).unwrap().contains("plain HTTP"));
        assert!(transport_hint("http://h:3100", plain).is_none());
        assert!(transport_hint("https://h", "invalid peer certificate: UnknownIssuer").unwrap().contains("ca_file"));
        assert!(transport_hint("https://h", "connection refused").is_none());
    }

    #[test]
    fn urls() {
        assert_eq!(join_url("http://h:1/", "/loki/api/v1/", "/push"), "http://h:1/loki/api/v1/push");
        assert_eq!(join_url("http://h:1", "", "push"), "http://h:1/push");
        assert_eq!(redact_url("http://u:p@h/x?k=secret"), "http://h/x");
    }
}
