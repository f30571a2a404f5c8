//! TLS settings (`client.tls`, and the same shape wherever a peer is
//! reached over TLS): a CA bundle, a client certificate, a name to check,
//! each PEM from a file or the config itself.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::util::Secret;

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

/// `client.tls`: each PEM given once (in a file or inline), readable, the
/// certificate with its key, `server_name` a DNS name or an IP address.
pub(super) fn validate_tls(t: &TlsConfig, at: &str, e: &mut dyn FnMut(&str, String)) {
    for (file, inline, name) in [
        (t.ca_file.is_some(), t.ca.is_some(), "ca"),
        (t.cert_file.is_some(), t.cert.is_some(), "cert"),
        (t.key_file.is_some(), t.key.is_some(), "key"),
    ] {
        if file && inline {
            e(&format!("{at}.{name}"), format!("set {name} or {name}_file, not both"));
        }
    }
    if let Some(p) = &t.ca_file {
        if let Err(err) = std::fs::metadata(p) {
            e(&format!("{at}.ca_file"), format!("cannot read {}: {err}", p.display()));
        }
    }
    if let Some(ca) = &t.ca {
        if reqwest::Certificate::from_pem_bundle(ca.as_bytes()).map_or(true, |c| c.is_empty()) {
            e(&format!("{at}.ca"), "not a PEM certificate (-----BEGIN CERTIFICATE----- ...)".into());
        }
    }
    let (cert_key, key_key) = (
        format!("{at}.{}", if t.cert.is_some() { "cert" } else { "cert_file" }),
        format!("{at}.{}", if t.key.is_some() { "key" } else { "key_file" }),
    );
    let cert = Pem::of(&t.cert_file, t.cert.as_deref());
    let key = Pem::of(&t.key_file, t.key.as_ref().map(Secret::expose));
    match (cert, key) {
        (Some(cert), Some(key)) => {
            if let Err(err) = client_identity(&cert, &key) {
                e(&cert_key, err);
            }
        }
        (Some(_), None) => e(&key_key, "a client certificate needs its private key (key_file or key)".into()),
        (None, Some(_)) => e(&cert_key, "a private key needs its client certificate (cert_file or cert)".into()),
        (None, None) => {}
    }
    if let Some(name) = &t.server_name {
        if tokio_rustls::rustls::pki_types::ServerName::try_from(name.as_str()).is_err() {
            e(&format!("{at}.server_name"), format!("`{name}` is not a DNS name or an IP address"));
        }
    }
}
