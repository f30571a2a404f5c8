//! Private PKIs for the tests' HTTPS and TLS servers on loopback: a CA made
//! at test time, a server certificate it signed, and, where the server asks
//! for one, a client certificate of the same CA.
#![allow(dead_code)]

use std::sync::Arc;

use tokio_rustls::rustls;

/// A private CA's PEM, the PEMs of a client certificate it signed (cert, key)
/// when the server requires one, and the server's TLS config.
pub struct Pki {
    pub ca: String,
    pub client: Option<(String, String)>,
    pub server: Arc<rustls::ServerConfig>,
}

/// A CA, a server certificate for `server_name` signed by it, and with
/// `client_name` a client certificate of that CA, which the server then requires.
pub fn pki(server_name: &str, client_name: Option<&str>) -> Pki {
    let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    ca_params.distinguished_name.push(rcgen::DnType::CommonName, "tailship test CA");
    let ca_key = rcgen::KeyPair::generate().unwrap();
    let ca_cert = ca_params.self_signed(&ca_key).unwrap();
    let issuer = rcgen::Issuer::from_params(&ca_params, &ca_key);
    let signed = |name: &str| {
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = rcgen::CertificateParams::new(vec![name.to_string()]).unwrap().signed_by(&key, &issuer).unwrap();
        (cert, key)
    };
    let (cert, key) = signed(server_name);
    let key_der = rustls::pki_types::PrivateKeyDer::Pkcs8(key.serialize_der().into());
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder =
        rustls::ServerConfig::builder_with_provider(provider.clone()).with_safe_default_protocol_versions().unwrap();
    let (builder, client) = match client_name {
        Some(name) => {
            let (client_cert, client_key) = signed(name);
            let mut roots = rustls::RootCertStore::empty();
            roots.add(ca_cert.der().clone()).unwrap();
            let verifier =
                rustls::server::WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider).build().unwrap();
            (builder.with_client_cert_verifier(verifier), Some((client_cert.pem(), client_key.serialize_pem())))
        }
        None => (builder.with_no_client_auth(), None),
    };
    let server = Arc::new(builder.with_single_cert(vec![cert.der().clone()], key_der).unwrap());
    Pki { ca: ca_cert.pem(), client, server }
}

/// A CA and a server certificate for 127.0.0.1 signed by it: (CA PEM, server config).
pub fn private_ca() -> (String, Arc<rustls::ServerConfig>) {
    let p = pki("127.0.0.1", None);
    (p.ca, p.server)
}
