//! Checking the `client` section (shared by `run` and the one-off commands):
//! URL, auth, TLS (CA, client certificate), proxy, extra headers, batching
//! and retry. Secret files are read into their values here.

use super::schema::{BasicAuth, ClientConfig, LOKI_API_PREFIX, MAX_BATCH_BYTES, SPEC_API_PREFIX};
use super::tls::validate_tls;
use crate::util::read_secret_file;

/// Headers tailship sets itself, refused in `client.headers`.
const RESERVED_HEADERS: &[&str] = &[
    "host",
    "content-type",
    "content-encoding",
    "content-length",
    "transfer-encoding",
    "authorization",
    "x-scope-orgid",
];

/// Checks the `client` section (shared by `run` and the one-off commands).
pub fn validate_client(c: &mut ClientConfig, e: &mut dyn FnMut(&str, String)) {
    validate_url(c, e);
    if let Some(t) = &c.tenant_id {
        if t.contains('|') {
            e("client.tenant_id", "must be one tenant (a push cannot carry `a|b`)".into());
        } else if let Some(why) = crate::util::tenant_problem(t) {
            e("client.tenant_id", format!("`{}`: {why}", t.escape_debug()));
        }
    }
    if !(1..=9).contains(&c.compression_level) {
        e("client.compression_level", format!("{} is not between 1 and 9", c.compression_level));
    }
    if c.timeout.get().is_zero() {
        e("client.timeout", "must be more than 0".into());
    }
    if let Some(b) = &mut c.basic_auth {
        read_basic_auth(b, e);
    }
    match (&c.bearer_token, &c.bearer_token_file) {
        (Some(_), Some(_)) => e("client.bearer_token", "set bearer_token or bearer_token_file, not both".into()),
        (None, Some(p)) => match read_secret_file(p) {
            Ok(s) => c.bearer_token = Some(s),
            Err(err) => e("client.bearer_token_file", format!("cannot read {}: {err}", p.display())),
        },
        _ => {}
    }
    if c.basic_auth.is_some() && c.bearer_token.is_some() {
        e("client.bearer_token", "set basic_auth or a bearer token, not both".into());
    }
    validate_tls(&c.tls, "client.tls", e);
    if let Some(o) = &mut c.oauth2 {
        if c.basic_auth.is_some() || c.bearer_token.is_some() {
            e("client.oauth2", "set one of basic_auth, a bearer token and oauth2".into());
        }
        super::oauth2::validate_oauth2(o, "client.oauth2", e);
    }
    super::proxy::validate_proxy(c.proxy_url.as_ref(), c.no_proxy.as_deref(), &c.proxy_connect_header, "client", e);
    validate_headers(c, e);
    validate_batch_and_retry(c, e);
}

/// `client.url` and `client.api_prefix`: an http(s) URL without a query
/// string (a full push URL split into URL and prefix), its password kept
/// out of printed text.
fn validate_url(c: &mut ClientConfig, e: &mut dyn FnMut(&str, String)) {
    match reqwest::Url::parse(&c.url) {
        Ok(u) if u.scheme() == "http" || u.scheme() == "https" => {
            if let Some(p) = u.password() {
                // A password in the URL is a secret too: scrubbed wherever text is printed.
                let decoded = super::proxy::percent_decode(p);
                crate::util::secrets::remember(p);
                crate::util::secrets::remember(&decoded);
                crate::util::secrets::remember_basic(&super::proxy::percent_decode(u.username()), &decoded);
            }
            if u.query().is_some() {
                // It would not be sent with pushes (the push URL is rebuilt from
                // url + api_prefix), and it often carries a key: refused, not dropped.
                e(
                    "client.url",
                    "a query string (`?...`) is not sent with pushes; give a key through headers, basic_auth or bearer_token".into(),
                );
            }
            split_push_url(c, &u);
        }
        Ok(u) => e("client.url", format!("scheme `{}` is not http or https", u.scheme())),
        Err(err) => e("client.url", format!("`{}` is not a URL ({err})", c.url)),
    }
    if let Some(p) = c.api_prefix.as_deref().filter(|p| !p.is_empty() && !p.starts_with('/')) {
        e("client.api_prefix", format!("`{p}` must start with `/`"));
    }
}

/// `client.basic_auth`: a username or its file and a password or its
/// file, each once; the files are read into the values here.
fn read_basic_auth(b: &mut BasicAuth, e: &mut dyn FnMut(&str, String)) {
    // Read once: the file's name is not kept (the check runs again on the result).
    match (b.username_file.take(), b.username.is_empty()) {
        (Some(_), false) => e("client.basic_auth", "set username or username_file, not both".into()),
        (Some(p), true) => match read_secret_file(&p) {
            Ok(s) if !s.expose().is_empty() => b.username = s.expose().to_string(),
            Ok(_) => e("client.basic_auth.username_file", format!("{} is empty", p.display())),
            Err(err) => e("client.basic_auth.username_file", format!("cannot read {}: {err}", p.display())),
        },
        (None, true) => e("client.basic_auth.username", "must not be empty".into()),
        (None, false) => {}
    }
    match (&b.password, &b.password_file) {
        (Some(_), Some(_)) => e("client.basic_auth", "set password or password_file, not both".into()),
        (None, None) => e("client.basic_auth", "needs password or password_file".into()),
        (None, Some(p)) => match read_secret_file(p) {
            Ok(s) => b.password = Some(s),
            Err(err) => e("client.basic_auth.password_file", format!("cannot read {}: {err}", p.display())),
        },
        (Some(_), None) => {}
    }
}

/// `client.headers`: valid names and values, none that tailship sets itself.
fn validate_headers(c: &ClientConfig, e: &mut dyn FnMut(&str, String)) {
    for (name, value) in &c.headers {
        let key = format!("client.headers.{name}");
        match reqwest::header::HeaderName::from_bytes(name.as_bytes()) {
            Err(_) => e(&key, "not a valid header name".into()),
            Ok(h) if RESERVED_HEADERS.contains(&h.as_str()) => {
                e(&key, "tailship sets this header itself; use client settings (basic_auth, tenant_id, ...)".into())
            }
            Ok(_) => {}
        }
        if reqwest::header::HeaderValue::from_str(value.expose()).is_err() {
            e(&key, "the value holds characters a header cannot carry (such as a newline)".into());
        }
    }
}

/// `client.batch` and `client.retry`: sizes, waits and backoffs.
fn validate_batch_and_retry(c: &ClientConfig, e: &mut dyn FnMut(&str, String)) {
    let mb = c.batch.max_bytes.get();
    if mb == 0 {
        e("client.batch.max_bytes", "must be more than 0".into());
    } else if mb > MAX_BATCH_BYTES {
        e("client.batch.max_bytes", format!("{mb} is over 4 MiB; real services fail such requests on every retry"));
    }
    if c.batch.max_wait.get().is_zero() {
        e("client.batch.max_wait", "must be more than 0".into());
    }
    if c.batch.max_in_flight == 0 {
        e("client.batch.max_in_flight", "must be at least 1".into());
    }
    if c.retry.min_backoff.get().is_zero() {
        e("client.retry.min_backoff", "must be more than 0".into());
    }
    if c.retry.max_backoff < c.retry.min_backoff {
        e("client.retry.max_backoff", "must be at least client.retry.min_backoff".into());
    }
}

/// A full push URL (`.../loki/api/v1/push`, as Promtail users write it) in
/// `client.url`: the URL keeps scheme, credentials, host and port, and the
/// path before `/push` becomes `api_prefix`. So does a URL whose path ends
/// in a known prefix (`http://loki:3100/loki/api/v1`), unless `api_prefix`
/// is set: the URL says which API it is, and nobody needs to ask.
fn split_push_url(c: &mut ClientConfig, u: &reqwest::Url) {
    let path = u.path().trim_end_matches('/');
    let prefix = match path.strip_suffix("/push") {
        Some(prefix) => prefix,
        None if c.api_prefix.is_none() && [SPEC_API_PREFIX, LOKI_API_PREFIX].iter().any(|p| path.ends_with(p)) => path,
        None => return,
    };
    let mut base = u.clone();
    base.set_path("");
    base.set_query(None);
    c.url = base.as_str().trim_end_matches('/').to_string();
    c.api_prefix = Some(prefix.to_string());
}

/// Checks a discovery source's `basic_auth` at `key` (its files are read
/// again when used): a username or its file, a password or its file, each
/// once, the files readable.
pub(super) fn validate_basic_auth(b: &super::BasicAuth, key: &str, e: &mut dyn FnMut(&str, String)) {
    match (&b.username_file, b.username.is_empty()) {
        (None, true) => e(&format!("{key}.username"), "must not be empty".into()),
        (Some(_), false) => e(key, "set username or username_file, not both".into()),
        _ => {}
    }
    match (&b.password, &b.password_file) {
        (Some(_), Some(_)) => e(key, "set password or password_file, not both".into()),
        (None, None) => e(key, "needs password or password_file".into()),
        _ => {}
    }
    for (name, file) in [("username_file", &b.username_file), ("password_file", &b.password_file)] {
        if let Some(p) = file {
            if let Err(err) = read_secret_file(p) {
                e(&format!("{key}.{name}"), format!("cannot read {}: {err}", p.display()));
            }
        }
    }
}
