//! TLS on a receiver's socket: its certificate chain and key (PEM), and,
//! with `client_ca_file`, the CA a sender's certificate must chain to.

use std::sync::Arc;

use anyhow::Context;
use tokio_rustls::rustls;
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};

use crate::config::ServerTls;

/// An acceptor for `tls`, or an error naming the file that is wrong.
pub fn acceptor(tls: &ServerTls) -> anyhow::Result<tokio_rustls::TlsAcceptor> {
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(&tls.cert_file)
        .and_then(|it| it.collect::<Result<_, _>>())
        .with_context(|| format!("receiver.tls.cert_file {}", tls.cert_file.display()))?;
    anyhow::ensure!(!certs.is_empty(), "receiver.tls.cert_file {}: no certificate", tls.cert_file.display());
    let key = PrivateKeyDer::from_pem_file(&tls.key_file)
        .with_context(|| format!("receiver.tls.key_file {}", tls.key_file.display()))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder =
        rustls::ServerConfig::builder_with_provider(provider.clone()).with_safe_default_protocol_versions()?;
    let builder = match &tls.client_ca_file {
        None => builder.with_no_client_auth(),
        Some(path) => {
            let what = || format!("receiver.tls.client_ca_file {}", path.display());
            let mut roots = rustls::RootCertStore::empty();
            for cert in CertificateDer::pem_file_iter(path).with_context(what)? {
                roots.add(cert.with_context(what)?).with_context(what)?;
            }
            anyhow::ensure!(!roots.is_empty(), "{}: no certificate", what());
            let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
                .build()
                .with_context(what)?;
            builder.with_client_cert_verifier(verifier)
        }
    };
    let config =
        builder.with_single_cert(certs, key).context("receiver.tls: the key does not go with the certificate")?;
    Ok(tokio_rustls::TlsAcceptor::from(Arc::new(config)))
}
