//! The one HTTP layer every client uses: a reqwest client with rustls (extra
//! CA file, optional insecure mode), authentication, typed errors that know
//! whether they may be retried, and retry with exponential backoff and jitter
//! (`backon`) that honours `Retry-After`.
//!
//! [`client_for`] is the one builder of clients from the `client` config
//! section: push, query, alert webhooks and annotations all take their TLS
//! settings, timeouts, authentication ([`Auth::of`]) and retry policy
//! ([`RetryPolicy::of`]) from it, so a setting such as `client.tls.ca_file`
//! holds for every request the agent makes. (The cloud and admin clients
//! have their own URLs and tokens and call [`build_client`] directly.)

use std::path::Path;
use std::time::Duration;

use backon::BackoffBuilder;
use reqwest::header::HeaderMap;
use reqwest::{RequestBuilder, StatusCode};
use tokio_util::sync::CancellationToken;

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
    #[error("cannot decode the answer of {url}: {message}")]
    Decode { url: String, message: String },
    #[error("cancelled")]
    Cancelled,
}

impl HttpError {
    /// 429, 5xx and transport errors may succeed later; other statuses will not.
    pub fn is_retriable(&self) -> bool {
        match self {
            Self::Transport { .. } => true,
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
        Self::Transport { url: redact_url(url), message, connect: e.is_connect() }
    }

    /// No connection could be made at all (see [`HttpError::Transport`]).
    pub fn is_connect(&self) -> bool {
        matches!(self, Self::Transport { connect: true, .. })
    }
}

/// How requests authenticate.
#[derive(Debug, Clone, Default)]
pub enum Auth {
    #[default]
    None,
    Basic {
        username: String,
        password: Secret,
    },
    Bearer(Secret),
}

impl Auth {
    /// `client.basic_auth` or `client.bearer_token`.
    pub fn of(c: &ClientConfig) -> Self {
        match (&c.basic_auth, &c.bearer_token) {
            (Some(b), _) => {
                let password = b.password.clone().unwrap_or_default();
                crate::util::secrets::remember_basic(&b.username, password.expose());
                Auth::Basic { username: b.username.clone(), password }
            }
            (None, Some(t)) => Auth::Bearer(t.clone()),
            (None, None) => Auth::None,
        }
    }

    pub fn apply(&self, rb: RequestBuilder) -> RequestBuilder {
        match self {
            Auth::None => rb,
            Auth::Basic { username, password } => rb.basic_auth(username, Some(password.expose())),
            Auth::Bearer(token) => rb.bearer_auth(token.expose()),
        }
    }
}

/// TLS and timeout settings of a client.
#[derive(Debug, Clone, Default)]
pub struct ClientOptions {
    pub ca_file: Option<std::path::PathBuf>,
    pub insecure_skip_verify: bool,
    pub timeout: Option<Duration>,
    /// The service is reached over plain `http://`: the system's and the
    /// built-in TLS root certificates are not loaded (parsing them costs a
    /// few milliseconds and a few hundred KiB held for the agent's lifetime).
    pub plain_http: bool,
    /// `client.tls.cert_file` and `key_file`: a client certificate (mTLS).
    pub identity: Option<(std::path::PathBuf, std::path::PathBuf)>,
    /// `client.proxy_url`; without it the usual proxy environment variables apply.
    pub proxy_url: Option<Secret>,
    /// `client.headers`, sent on every request of this client.
    pub headers: Vec<(String, Secret)>,
}

impl ClientOptions {
    /// `client.tls`, `client.proxy_url`, `client.headers` and
    /// `client.timeout`, for requests to the log service at `url` (TLS roots
    /// are loaded unless `url` is plain `http://`).
    pub fn of(c: &ClientConfig, url: &str) -> Self {
        Self {
            ca_file: c.tls.ca_file.clone(),
            insecure_skip_verify: c.tls.insecure_skip_verify,
            timeout: Some(c.timeout.get()),
            plain_http: is_plain_http(url),
            identity: c.tls.cert_file.clone().zip(c.tls.key_file.clone()),
            proxy_url: c.proxy_url.clone(),
            headers: c.headers.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
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
    if let Some(path) = &opts.ca_file {
        for cert in read_ca_file(path)? {
            b = b.add_root_certificate(cert);
        }
    }
    if opts.plain_http {
        b = b.tls_built_in_root_certs(false);
    }
    if let Some((cert, key)) = &opts.identity {
        let id = crate::config::client_identity(cert, key).map_err(HttpError::Setting)?;
        b = b.identity(id);
    }
    if let Some(p) = &opts.proxy_url {
        let proxy = reqwest::Proxy::all(p.expose())
            .map_err(|e| HttpError::Setting(format!("client.proxy_url: {e}")))?
            .no_proxy(reqwest::NoProxy::from_env());
        b = b.proxy(proxy);
    }
    if !opts.headers.is_empty() {
        let mut map = reqwest::header::HeaderMap::new();
        for (k, v) in &opts.headers {
            let name = reqwest::header::HeaderName::from_bytes(k.as_bytes())
                .map_err(|_| HttpError::Setting(format!("client.headers: `{k}` is not a header name")))?;
            let mut value = reqwest::header::HeaderValue::from_str(v.expose())
                .map_err(|_| HttpError::Setting(format!("client.headers.{k}: not a header value")))?;
            value.set_sensitive(true);
            map.insert(name, value);
        }
        b = b.default_headers(map);
    }
    if opts.insecure_skip_verify {
        tracing::warn!(
            "TLS certificate verification is off (insecure_skip_verify): use this only for self-signed test setups"
        );
        b = b.danger_accept_invalid_certs(true);
    }
    b.build().map_err(HttpError::Build)
}

fn read_ca_file(path: &Path) -> Result<Vec<reqwest::Certificate>, HttpError> {
    let pem = std::fs::read(path).map_err(|source| HttpError::CaFile { path: path.display().to_string(), source })?;
    reqwest::Certificate::from_pem_bundle(&pem)
        .map_err(|source| HttpError::CaCert { path: path.display().to_string(), source })
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
/// (shortened) body and any `Retry-After`.
pub async fn send(rb: RequestBuilder, url: &str) -> Result<reqwest::Response, HttpError> {
    let resp = rb.send().await.map_err(|e| HttpError::transport(url, &e))?;
    let status = resp.status();
    if status.is_success() {
        return Ok(resp);
    }
    let retry_after = parse_retry_after(resp.headers());
    let body = resp.text().await.unwrap_or_default();
    Err(HttpError::Status { url: redact_url(url), status, body: shorten(body.trim()), retry_after })
}

fn shorten(s: &str) -> String {
    let cut = crate::util::cut_at_char(s, MAX_ERROR_BODY);
    if cut.len() == s.len() {
        s.to_string()
    } else {
        format!("{cut}...")
    }
}

/// When and how often to retry.
#[derive(Debug, Clone, Copy)]
pub struct RetryPolicy {
    pub min_backoff: Duration,
    pub max_backoff: Duration,
    /// 0 retries for ever.
    pub max_retries: usize,
    /// Failed connections (nothing listening) retried at most this many
    /// times, quickly (100 ms, then 200 ms, ...), apart from `max_retries`:
    /// one-off commands say "connection refused" within a second instead of
    /// backing off for tens of seconds. `None`: like any other error.
    pub connect_retries: Option<usize>,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            min_backoff: Duration::from_millis(500),
            max_backoff: Duration::from_secs(300),
            max_retries: 0,
            connect_retries: None,
        }
    }
}

impl RetryPolicy {
    /// `client.retry`.
    pub fn of(c: &ClientConfig) -> Self {
        Self {
            min_backoff: c.retry.min_backoff.get(),
            max_backoff: c.retry.max_backoff.get(),
            max_retries: c.retry.max_retries,
            connect_retries: None,
        }
    }

    /// The policy of one-off commands (query, labels, cloud, admin): a few
    /// retries, and refused connections reported soon.
    pub fn one_off(min_backoff: Duration, max_backoff: Duration, max_retries: usize) -> Self {
        Self { min_backoff, max_backoff, max_retries, connect_retries: Some(ONE_OFF_CONNECT_RETRIES) }
    }

    /// The waits between attempts: exponential from `min_backoff`, doubled each
    /// time, with up to 100% jitter, capped at `max_backoff`.
    pub fn schedule(&self) -> Backoff {
        let b = backon::ExponentialBuilder::default()
            .with_min_delay(self.min_backoff)
            .with_max_delay(self.max_backoff)
            .with_factor(2.0)
            .with_jitter()
            // backon without its `std` feature seeds every schedule alike, so every
            // batch would retry at the same instants: seed each one apart.
            .with_jitter_seed(jitter_seed())
            .without_max_times()
            .build();
        Backoff { inner: b, policy: *self, attempts: 0, connect_attempts: 0 }
    }
}

/// A seed that differs between calls (std's per-process random hash keys).
fn jitter_seed() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    std::collections::hash_map::RandomState::new().build_hasher().finish()
}

/// `connect_retries` of one-off commands (query, labels, cloud, admin): two
/// quick retries ride out a service restarting, then "connection refused".
pub const ONE_OFF_CONNECT_RETRIES: usize = 2;

/// The first wait after a failed connection when `connect_retries` is set.
const CONNECT_RETRY_WAIT: Duration = Duration::from_millis(100);

/// An iterator of waits (see [`RetryPolicy::schedule`]).
pub struct Backoff {
    inner: backon::ExponentialBackoff,
    policy: RetryPolicy,
    attempts: usize,
    connect_attempts: u32,
}

impl Backoff {
    /// The wait before the next retry after `err`, or `None` when retries are used up.
    /// `Retry-After` lengthens the wait, never shortens it, and is itself capped at `max_backoff`.
    pub fn next_wait(&mut self, err: &HttpError) -> Option<Duration> {
        if let (Some(n), true) = (self.policy.connect_retries, err.is_connect()) {
            if self.connect_attempts as usize >= n {
                return None;
            }
            self.connect_attempts += 1;
            return Some(CONNECT_RETRY_WAIT * 2u32.saturating_pow(self.connect_attempts - 1));
        }
        if self.policy.max_retries != 0 && self.attempts >= self.policy.max_retries {
            return None;
        }
        self.attempts += 1;
        let base = self.inner.next().unwrap_or(self.policy.max_backoff).min(self.policy.max_backoff);
        Some(match err.retry_after() {
            Some(ra) => base.max(ra.min(self.policy.max_backoff)),
            None => base,
        })
    }

    pub fn attempts(&self) -> usize {
        self.attempts
    }
}

/// Runs `op` until it succeeds, fails with an error that must not be retried,
/// runs out of retries, or `cancel` fires. `on_retry` sees each retriable error
/// and the wait chosen.
pub async fn with_retry<T, F, Fut>(
    policy: RetryPolicy,
    cancel: &CancellationToken,
    on_retry: impl FnMut(&HttpError, Duration),
    op: F,
) -> Result<T, HttpError>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, HttpError>>,
{
    with_retry_if(policy, cancel, HttpError::is_retriable, on_retry, op).await
}

/// [`with_retry`] with the caller's judgement of which errors to retry.
pub async fn with_retry_if<T, F, Fut>(
    policy: RetryPolicy,
    cancel: &CancellationToken,
    retriable: impl Fn(&HttpError) -> bool,
    mut on_retry: impl FnMut(&HttpError, Duration),
    mut op: F,
) -> Result<T, HttpError>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, HttpError>>,
{
    let mut backoff = policy.schedule();
    loop {
        let err = tokio::select! {
            r = op() => match r {
                Ok(v) => return Ok(v),
                Err(e) => e,
            },
            _ = cancel.cancelled() => return Err(HttpError::Cancelled),
        };
        if !retriable(&err) {
            return Err(err);
        }
        let Some(wait) = backoff.next_wait(&err) else { return Err(err) };
        on_retry(&err, wait);
        tokio::select! {
            _ = tokio::time::sleep(wait) => {}
            _ = cancel.cancelled() => return Err(HttpError::Cancelled),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(code: u16, ra: Option<u64>) -> HttpError {
        HttpError::Status {
            url: "u".into(),
            status: StatusCode::from_u16(code).unwrap(),
            body: String::new(),
            retry_after: ra.map(Duration::from_secs),
        }
    }

    /// Found in the chaos run's agent logs: every batch retried after the same
    /// "random" waits (29.6 ms, 77.9 ms, 122.3 ms...), all at once after an
    /// outage, because the jitter generator had one fixed seed.
    #[test]
    fn retry_jitter_differs_between_batches() {
        let policy = RetryPolicy {
            min_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_secs(60),
            max_retries: 0,
            connect_retries: None,
        };
        let err = status(500, None);
        let waits = |_| {
            let mut b = policy.schedule();
            (0..6).map(|_| b.next_wait(&err).unwrap()).collect::<Vec<_>>()
        };
        let runs: Vec<Vec<Duration>> = (0..4).map(waits).collect();
        assert!(runs.windows(2).all(|w| w[0] != w[1]), "identical retry waits: {runs:?}");
    }

    #[test]
    fn retriable_statuses() {
        assert!(status(429, None).is_retriable());
        assert!(status(503, None).is_retriable());
        assert!(!status(400, None).is_retriable());
        assert!(!status(401, None).is_retriable());
    }

    #[test]
    fn backoff_grows_caps_and_honours_retry_after() {
        let p = RetryPolicy {
            min_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_secs(2),
            max_retries: 0,
            connect_retries: None,
        };
        let mut b = p.schedule();
        let e = status(500, None);
        let waits: Vec<_> = (0..10).map(|_| b.next_wait(&e).unwrap()).collect();
        assert!(waits[0] >= Duration::from_millis(100) && waits[0] <= Duration::from_millis(200));
        assert!(waits.iter().all(|w| *w <= Duration::from_secs(2)));
        assert_eq!(*waits.last().unwrap(), Duration::from_secs(2));
        let mut b = p.schedule();
        assert_eq!(b.next_wait(&status(429, Some(1))).unwrap(), Duration::from_secs(1));
        assert_eq!(b.next_wait(&status(429, Some(100))).unwrap(), Duration::from_secs(2));
    }

    #[test]
    fn refused_connections_get_quick_retries_of_their_own() {
        let p = RetryPolicy {
            min_backoff: Duration::from_secs(3600),
            max_backoff: Duration::from_secs(7200),
            max_retries: 0,
            connect_retries: Some(2),
        };
        let refused = HttpError::Transport { url: "u".into(), message: "refused".into(), connect: true };
        let mut b = p.schedule();
        assert_eq!(b.next_wait(&refused), Some(Duration::from_millis(100)));
        assert_eq!(b.next_wait(&refused), Some(Duration::from_millis(200)));
        assert_eq!(b.next_wait(&refused), None);
        // Timeouts and statuses keep the configured backoff.
        let timeout = HttpError::Transport { url: "u".into(), message: "timed out".into(), connect: false };
        assert!(p.schedule().next_wait(&timeout).is_some_and(|w| w >= Duration::from_secs(1800)));
        assert!(p.schedule().next_wait(&status(503, None)).is_some_and(|w| w >= Duration::from_secs(1800)));
    }

    #[test]
    fn max_retries_ends() {
        let p = RetryPolicy { max_retries: 2, ..Default::default() };
        let mut b = p.schedule();
        let e = status(500, None);
        assert!(b.next_wait(&e).is_some());
        assert!(b.next_wait(&e).is_some());
        assert!(b.next_wait(&e).is_none());
    }

    #[test]
    fn urls() {
        assert_eq!(join_url("http://h:1/", "/loki/api/v1/", "/push"), "http://h:1/loki/api/v1/push");
        assert_eq!(join_url("http://h:1", "", "push"), "http://h:1/push");
        assert_eq!(redact_url("http://u:p@h/x?k=secret"), "http://h/x");
    }

    #[tokio::test(start_paused = true)]
    async fn with_retry_waits_without_real_time() {
        let cancel = CancellationToken::new();
        let mut calls = 0;
        let p = RetryPolicy {
            min_backoff: Duration::from_secs(60),
            max_backoff: Duration::from_secs(600),
            max_retries: 0,
            connect_retries: None,
        };
        let mut seen = Vec::new();
        let r: Result<u32, _> = with_retry(
            p,
            &cancel,
            |_, w| seen.push(w),
            || {
                calls += 1;
                let n = calls;
                async move {
                    if n < 4 {
                        Err(status(503, None))
                    } else {
                        Ok(n)
                    }
                }
            },
        )
        .await;
        assert_eq!(r.unwrap(), 4);
        assert_eq!(seen.len(), 3);
    }
}
