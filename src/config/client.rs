//! Checking the `client` section (shared by `run` and the one-off commands):
//! URL, auth, TLS (CA, client certificate), proxy, extra headers, batching
//! and retry. Secret files are read into their values here.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::schema::{ClientConfig, MAX_BATCH_BYTES};
use crate::util::{read_secret_file, Secret};

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

/// `client.tls`: how the log service's TLS is checked, and the client's own certificate.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(default)]
pub struct TlsConfig {
    /// A PEM bundle of extra CA certificates to trust.
    pub ca_file: Option<PathBuf>,
    /// `ca_file`'s PEM given in the config itself.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ca: Option<String>,
    /// A client certificate (PEM, with its chain) for services that ask for
    /// one (mutual TLS); needs `key_file`.
    pub cert_file: Option<PathBuf>,
    /// `cert_file`'s PEM given in the config itself.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cert: Option<String>,
    /// The PEM private key of `cert_file` (PKCS#8, PKCS#1 or SEC1).
    pub key_file: Option<PathBuf>,
    /// `key_file`'s PEM given in the config itself (a secret).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key: Option<Secret>,
    /// The name the service's certificate is checked against, instead of
    /// the URL's host (a service reached by IP address or through a tunnel).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_name: Option<String>,
    /// Accept any certificate: for self-signed test setups only (warned at start).
    pub insecure_skip_verify: bool,
}

/// Where a PEM of `client.tls` comes from: a file, or the config itself.
#[derive(Debug, Clone)]
pub enum Pem {
    File(PathBuf),
    Inline(Secret),
}

impl Pem {
    /// `inline` if given, else `file`.
    pub fn of(file: &Option<PathBuf>, inline: Option<&str>) -> Option<Pem> {
        match (inline, file) {
            (Some(text), _) => Some(Pem::Inline(Secret::new(text))),
            (None, Some(path)) => Some(Pem::File(path.clone())),
            (None, None) => None,
        }
    }

    /// Its bytes; `what` names it in the error (`key_file`, ...).
    pub fn read(&self, what: &str) -> Result<Vec<u8>, String> {
        match self {
            Pem::File(path) => {
                std::fs::read(path).map_err(|err| format!("cannot read {what} {}: {err}", path.display()))
            }
            Pem::Inline(text) => Ok(text.expose().as_bytes().to_vec()),
        }
    }

    fn describe(&self, key: &str) -> String {
        match self {
            Pem::File(path) => path.display().to_string(),
            Pem::Inline(_) => format!("`{key}`"),
        }
    }
}

/// The client certificate and key of `client.tls` as one PEM, checked.
pub fn client_identity(cert: &Pem, key: &Pem) -> Result<reqwest::Identity, String> {
    let mut pem = cert.read("cert_file")?;
    pem.push(b'\n');
    pem.extend(key.read("key_file")?);
    reqwest::Identity::from_pem(&pem).map_err(|err| {
        format!("{} and {} are not a PEM certificate and its key: {err}", cert.describe("cert"), key.describe("key"))
    })
}

impl TlsConfig {
    /// The extra CAs (`ca`, else `ca_file`).
    pub fn ca_pem(&self) -> Option<Pem> {
        Pem::of(&self.ca_file, self.ca.as_deref())
    }

    /// The client certificate and key (`cert`/`cert_file`, `key`/`key_file`).
    pub fn identity(&self) -> Option<(Pem, Pem)> {
        Pem::of(&self.cert_file, self.cert.as_deref())
            .zip(Pem::of(&self.key_file, self.key.as_ref().map(Secret::expose)))
    }
}

/// Checks the `client` section (shared by `run` and the one-off commands).
pub fn validate_client(c: &mut ClientConfig, e: &mut dyn FnMut(&str, String)) {
    match reqwest::Url::parse(&c.url) {
        Ok(u) if u.scheme() == "http" || u.scheme() == "https" => {
            if let Some(p) = u.password() {
                // A password in the URL is a secret too: scrubbed wherever text is printed.
                let decoded = percent_decode(p);
                crate::util::secrets::remember(p);
                crate::util::secrets::remember(&decoded);
                crate::util::secrets::remember_basic(&percent_decode(u.username()), &decoded);
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
    if !c.api_prefix.is_empty() && !c.api_prefix.starts_with('/') {
        e("client.api_prefix", format!("`{}` must start with `/`", c.api_prefix));
    }
    if let Some(t) = &c.tenant_id {
        if t.is_empty() || t.contains('|') {
            e("client.tenant_id", "must be one non-empty tenant (a push cannot carry `a|b`)".into());
        }
    }
    if !(1..=9).contains(&c.compression_level) {
        e("client.compression_level", format!("{} is not between 1 and 9", c.compression_level));
    }
    if c.timeout.get().is_zero() {
        e("client.timeout", "must be more than 0".into());
    }
    if let Some(b) = &mut c.basic_auth {
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
    validate_tls(&c.tls, e);
    if let Some(p) = &c.proxy_url {
        match reqwest::Url::parse(p.expose()) {
            Ok(u) if u.scheme() == "http" || u.scheme() == "https" => {
                if let Some(pw) = u.password() {
                    crate::util::secrets::remember(pw);
                    crate::util::secrets::remember(&percent_decode(pw));
                }
            }
            Ok(u) => e("client.proxy_url", format!("scheme `{}` is not http or https", u.scheme())),
            Err(err) => e("client.proxy_url", format!("not a URL ({err})")),
        }
    }
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
/// path before `/push` becomes `api_prefix`.
fn split_push_url(c: &mut ClientConfig, u: &reqwest::Url) {
    let path = u.path().trim_end_matches('/');
    let Some(prefix) = path.strip_suffix("/push") else { return };
    let mut base = u.clone();
    base.set_path("");
    base.set_query(None);
    c.url = base.as_str().trim_end_matches('/').to_string();
    c.api_prefix = prefix.to_string();
}

/// `%XX` escapes of a URL's userinfo decoded (the password as sent).
fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            if let Ok(Ok(v)) = std::str::from_utf8(&b[i + 1..i + 3]).map(|h| u8::from_str_radix(h, 16)) {
                out.push(v);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// `client.tls`: each PEM given once (in a file or inline), readable, the
/// certificate with its key, `server_name` a DNS name or an IP address.
fn validate_tls(t: &TlsConfig, e: &mut dyn FnMut(&str, String)) {
    for (file, inline, name) in [
        (t.ca_file.is_some(), t.ca.is_some(), "ca"),
        (t.cert_file.is_some(), t.cert.is_some(), "cert"),
        (t.key_file.is_some(), t.key.is_some(), "key"),
    ] {
        if file && inline {
            e(&format!("client.tls.{name}"), format!("set {name} or {name}_file, not both"));
        }
    }
    if let Some(p) = &t.ca_file {
        if let Err(err) = std::fs::metadata(p) {
            e("client.tls.ca_file", format!("cannot read {}: {err}", p.display()));
        }
    }
    if let Some(ca) = &t.ca {
        if reqwest::Certificate::from_pem_bundle(ca.as_bytes()).map_or(true, |c| c.is_empty()) {
            e("client.tls.ca", "not a PEM certificate (-----BEGIN CERTIFICATE----- ...)".into());
        }
    }
    let (cert_key, key_key) = (
        if t.cert.is_some() { "client.tls.cert" } else { "client.tls.cert_file" },
        if t.key.is_some() { "client.tls.key" } else { "client.tls.key_file" },
    );
    let cert = Pem::of(&t.cert_file, t.cert.as_deref());
    let key = Pem::of(&t.key_file, t.key.as_ref().map(Secret::expose));
    match (cert, key) {
        (Some(cert), Some(key)) => {
            if let Err(err) = client_identity(&cert, &key) {
                e(cert_key, err);
            }
        }
        (Some(_), None) => e(key_key, "a client certificate needs its private key (key_file or key)".into()),
        (None, Some(_)) => e(cert_key, "a private key needs its client certificate (cert_file or cert)".into()),
        (None, None) => {}
    }
    if let Some(name) = &t.server_name {
        if tokio_rustls::rustls::pki_types::ServerName::try_from(name.as_str()).is_err() {
            e("client.tls.server_name", format!("`{name}` is not a DNS name or an IP address"));
        }
    }
}
