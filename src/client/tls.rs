//! `client.tls.server_name`: the service's certificate is checked against a
//! name of the operator's choosing instead of the URL's host, as Go's
//! `tls.Config.ServerName` (Promtail's `tls_config.server_name`) does for a
//! service reached by IP address, through a tunnel or a load balancer whose
//! address is not in its certificate. reqwest checks against the URL's host
//! only, so the TLS configuration is built here (rustls, the same roots:
//! webpki's, the system's and the extra CAs) with a verifier that checks
//! the chain as rustls does and the name against `server_name`.
//!
//! The kafka source's TLS is built here too (rskafka takes a rustls
//! configuration): with `server_name`, or with `insecure_skip_verify` (no
//! check of the chain or the name; the handshake's signatures still are).

use std::sync::Arc;

use tokio_rustls::rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use tokio_rustls::rustls::client::WebPkiServerVerifier;
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use tokio_rustls::rustls::{self, DigitallySignedStruct, SignatureScheme};

/// Checks the chain as rustls's own verifier does, and the name against
/// `name` (None: the host connected to); with `insecure`, checks neither.
#[derive(Debug)]
struct NamedVerifier {
    inner: Arc<WebPkiServerVerifier>,
    name: Option<ServerName<'static>>,
    insecure: bool,
}

impl ServerCertVerifier for NamedVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        url_host: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        if self.insecure {
            return Ok(ServerCertVerified::assertion());
        }
        let name = self.name.as_ref().unwrap_or(url_host);
        self.inner.verify_server_cert(end_entity, intermediates, name, ocsp_response, now)
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.inner.supported_verify_schemes()
    }
}

/// What the TLS configuration is made of.
pub struct Settings<'a> {
    /// The name the certificate is checked against (None: the host connected to).
    pub server_name: Option<&'a str>,
    /// No check of the certificate at all (Go's `InsecureSkipVerify`).
    pub insecure_skip_verify: bool,
    /// Extra CA certificates (PEM).
    pub extra_ca: Option<&'a [u8]>,
    /// A client certificate chain and its key (PEM).
    pub identity: Option<(&'a [u8], &'a [u8])>,
    /// The ALPN protocols offered (none for a protocol other than HTTP).
    pub alpn: Vec<Vec<u8>>,
}

/// The TLS configuration of a client whose service's certificate is checked
/// against `s.server_name` (or not at all, `s.insecure_skip_verify`).
pub fn config(s: &Settings<'_>) -> Result<rustls::ClientConfig, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut roots = rustls::RootCertStore::empty();
    roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    for cert in rustls_native_certs::load_native_certs().certs {
        // A system certificate rustls cannot use is skipped, as reqwest does.
        let _ = roots.add(cert);
    }
    if let Some(pem) = s.extra_ca {
        for cert in CertificateDer::pem_slice_iter(pem) {
            let cert = cert.map_err(|e| format!("the extra CA is not PEM: {e}"))?;
            roots.add(cert).map_err(|e| format!("the extra CA cannot be used: {e}"))?;
        }
    }
    let inner = WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider.clone())
        .build()
        .map_err(|e| format!("cannot check certificates: {e}"))?;
    let name = match s.server_name {
        Some(n) => Some(
            ServerName::try_from(n.to_string())
                .map_err(|_| format!("tls.server_name: `{n}` is not a DNS name or an IP address"))?,
        ),
        None => None,
    };
    let builder = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(NamedVerifier { inner, name, insecure: s.insecure_skip_verify }));
    let mut config = match s.identity {
        Some((cert, key)) => {
            let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(cert)
                .collect::<Result<_, _>>()
                .map_err(|e| format!("the client certificate is not PEM: {e}"))?;
            let key = PrivateKeyDer::from_pem_slice(key).map_err(|e| format!("the client key is not PEM: {e}"))?;
            builder.with_client_auth_cert(chain, key).map_err(|e| format!("the client certificate and key: {e}"))?
        }
        None => builder.with_no_client_auth(),
    };
    config.alpn_protocols = s.alpn.clone();
    Ok(config)
}
