//! sprig's certificate functions: `genCA`, `genCAWithKey`,
//! `genSelfSignedCert`, `genSelfSignedCertWithKey`, `genSignedCert`,
//! `genSignedCertWithKey`, `buildCustomCert`. Each gives what sprig's gives:
//! a dict with `.Cert` (the certificate in PEM) and `.Key` (its private key
//! in PEM, in sprig's form: RSA as PKCS#1, P-256 as SEC 1, Ed25519 as
//! PKCS#8). Certificates are made by rcgen (on ring) with sprig's template:
//! the common name, a random 128-bit serial, valid from now for the days
//! given, key usages digital signature and key encipherment (and cert sign
//! for a CA), extended usages server and client auth. New keys are RSA 2048
//! bits, as sprig's; a `...WithKey` function takes an RSA, P-256 or Ed25519
//! key in PEM.

use std::collections::HashMap;

use base64::Engine;
use gtmpl::Value;
use p256::pkcs8::{DecodePrivateKey, EncodePrivateKey};
use rand_core::{OsRng, RngCore};
use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose, SanType, SerialNumber,
};
use rsa::pkcs1::{DecodeRsaPrivateKey, EncodeRsaPrivateKey};

use super::{arity, err, text, to_i64, Out};

pub(super) const FUNCS: &[(&str, gtmpl::Func)] = &[
    ("genCA", gen_ca),
    ("genCAWithKey", gen_ca_with_key),
    ("genSelfSignedCert", gen_self_signed),
    ("genSelfSignedCertWithKey", gen_self_signed_with_key),
    ("genSignedCert", gen_signed),
    ("genSignedCertWithKey", gen_signed_with_key),
    ("buildCustomCert", build_custom_cert),
];

/// A private key of a kind sprig makes and reads.
pub(super) enum Key {
    Rsa(Box<rsa::RsaPrivateKey>),
    Ec(p256::SecretKey),
    /// PKCS#8 DER.
    Ed(Vec<u8>),
}

const LF: pem::EncodeConfig = pem::EncodeConfig::new().set_line_ending(pem::LineEnding::LF);

impl Key {
    pub(super) fn rsa(bits: usize) -> Result<Self, String> {
        rsa::RsaPrivateKey::new(&mut OsRng, bits).map(|k| Self::Rsa(Box::new(k))).map_err(|e| e.to_string())
    }

    pub(super) fn ecdsa() -> Result<Self, String> {
        Ok(Self::Ec(p256::SecretKey::random(&mut OsRng)))
    }

    pub(super) fn ed25519() -> Result<Self, String> {
        let kp = KeyPair::generate_for(&rcgen::PKCS_ED25519).map_err(|e| e.to_string())?;
        Ok(Self::Ed(kp.serialize_der()))
    }

    /// Reads a key in PEM as sprig's `parsePrivateKeyPEM` does.
    pub(super) fn parse(text: &str) -> Result<Self, String> {
        let block = pem::parse(text).map_err(|_| "no PEM data in input".to_string())?;
        let der = block.contents();
        match block.tag() {
            "PRIVATE KEY" => {
                if let Ok(k) = rsa::RsaPrivateKey::from_pkcs8_der(der) {
                    Ok(Self::Rsa(Box::new(k)))
                } else if let Ok(k) = p256::SecretKey::from_pkcs8_der(der) {
                    Ok(Self::Ec(k))
                } else if KeyPair::from_pkcs8_der_and_sign_algo(&der.to_vec().into(), &rcgen::PKCS_ED25519).is_ok() {
                    Ok(Self::Ed(der.to_vec()))
                } else {
                    Err("decoding PEM as PKCS#8: not an RSA, P-256 or Ed25519 key".into())
                }
            }
            "RSA PRIVATE KEY" => rsa::RsaPrivateKey::from_pkcs1_der(der)
                .map(|k| Self::Rsa(Box::new(k)))
                .map_err(|e| format!("parsing RSA private key from PEM: {e}")),
            "EC PRIVATE KEY" => p256::SecretKey::from_sec1_der(der)
                .map(Self::Ec)
                .map_err(|e| format!("parsing EC private key from PEM (P-256 only): {e}")),
            "DSA PRIVATE KEY" => Err("DSA keys are not read by tailship (see the book: stages/templates.md)".into()),
            t if t.ends_with(" PRIVATE KEY") => Err(format!("invalid private key type {t}")),
            t => Err(format!("no private key data in PEM block of type {t}")),
        }
    }

    /// The key in PEM, in the form sprig writes it.
    pub(super) fn pem(&self) -> Result<String, String> {
        match self {
            Self::Rsa(k) => {
                k.to_pkcs1_pem(rsa::pkcs8::LineEnding::LF).map(|s| s.to_string()).map_err(|e| e.to_string())
            }
            Self::Ec(k) => k.to_sec1_pem(p256::pkcs8::LineEnding::LF).map(|s| s.to_string()).map_err(|e| e.to_string()),
            Self::Ed(der) => Ok(pem::encode_config(&pem::Pem::new("PRIVATE KEY", der.clone()), LF)),
        }
    }

    /// The key as rcgen signs with it (SHA-256 signatures for RSA and P-256, as Go's x509 picks).
    fn key_pair(&self) -> Result<KeyPair, String> {
        let (der, alg) = match self {
            Self::Rsa(k) => (k.to_pkcs8_der().map_err(|e| e.to_string())?.as_bytes().to_vec(), &rcgen::PKCS_RSA_SHA256),
            Self::Ec(k) => {
                (k.to_pkcs8_der().map_err(|e| e.to_string())?.as_bytes().to_vec(), &rcgen::PKCS_ECDSA_P256_SHA256)
            }
            Self::Ed(der) => (der.clone(), &rcgen::PKCS_ED25519),
        };
        KeyPair::from_pkcs8_der_and_sign_algo(&der.into(), alg).map_err(|e| e.to_string())
    }
}

/// sprig's `certificate`: `.Cert` and `.Key`.
fn certificate(cert: String, key: String) -> Out {
    let mut m = HashMap::new();
    m.insert("Cert".to_string(), Value::String(cert));
    m.insert("Key".to_string(), Value::String(key));
    Ok(Value::Map(m))
}

/// A list argument of strings (IP addresses or DNS names); nil is none.
fn strings(name: &str, args: &[Value], i: usize) -> Result<Vec<String>, gtmpl::FuncError> {
    match args.get(i) {
        Some(Value::Array(a)) => a
            .iter()
            .map(|v| match v {
                Value::String(s) => Ok(s.clone()),
                other => Err(err(name, format!("{other} is not a string"))),
            })
            .collect(),
        Some(Value::Nil | Value::NoValue) | None => Ok(Vec::new()),
        Some(_) => Err(err(name, "a list of IP addresses or DNS names is needed")),
    }
}

/// sprig's certificate template.
fn base_params(
    name: &str,
    cn: &str,
    ips: &[String],
    dns: &[String],
    days: i64,
) -> Result<CertificateParams, gtmpl::FuncError> {
    let mut p = CertificateParams::default();
    p.distinguished_name = DistinguishedName::new();
    p.distinguished_name.push(DnType::CommonName, cn);
    let mut serial = [0u8; 16];
    OsRng.fill_bytes(&mut serial);
    serial[0] &= 0x7f;
    p.serial_number = Some(SerialNumber::from_slice(&serial));
    for ip in ips {
        let addr = ip.parse().map_err(|_| err(name, format!("error parsing ip: {ip}")))?;
        p.subject_alt_names.push(SanType::IpAddress(addr));
    }
    for d in dns {
        let ia5 = d.clone().try_into().map_err(|_| err(name, format!("error processing alternate dns name: {d}")))?;
        p.subject_alt_names.push(SanType::DnsName(ia5));
    }
    let now = time::OffsetDateTime::now_utc();
    p.not_before = now;
    p.not_after = now + time::Duration::days(days);
    p.key_usages = vec![KeyUsagePurpose::KeyEncipherment, KeyUsagePurpose::DigitalSignature];
    p.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth, ExtendedKeyUsagePurpose::ClientAuth];
    p.is_ca = IsCa::ExplicitNoCa;
    Ok(p)
}

/// A certificate for `key`, signed by itself or by the CA `ca` (`.Cert`, `.Key`).
fn make(name: &str, params: CertificateParams, key: Key, ca: Option<&Value>) -> Out {
    let kp = key.key_pair().map_err(|e| err(name, e))?;
    let cert = match ca {
        None => params.self_signed(&kp),
        Some(ca) => {
            let (ca_cert, ca_key) = cert_of(name, ca)?;
            let signer = Key::parse(&ca_key)
                .and_then(|k| k.key_pair())
                .map_err(|e| err(name, format!("error parsing private key: {e}")))?;
            let issuer = Issuer::from_ca_cert_pem(&ca_cert, signer)
                .map_err(|e| err(name, format!("error parsing certificate: {e}")))?;
            params.signed_by(&kp, &issuer)
        }
    }
    .map_err(|e| err(name, format!("error creating certificate: {e}")))?;
    certificate(cert.pem(), key.pem().map_err(|e| err(name, e))?)
}

/// `.Cert` and `.Key` of a certificate value.
fn cert_of(name: &str, v: &Value) -> Result<(String, String), gtmpl::FuncError> {
    let field = |m: &HashMap<String, Value>, k: &str| match m.get(k) {
        Some(Value::String(s)) => Ok(s.clone()),
        _ => Err(err(name, format!("the CA has no {k}"))),
    };
    match v {
        Value::Map(m) | Value::Object(m) => Ok((field(m, "Cert")?, field(m, "Key")?)),
        _ => Err(err(name, "a certificate (.Cert and .Key) is needed as the CA")),
    }
}

fn rsa2048(name: &str) -> Result<Key, gtmpl::FuncError> {
    Key::rsa(2048).map_err(|e| err(name, format!("error generating rsa key: {e}")))
}

fn pem_key(name: &str, args: &[Value], i: usize) -> Result<Key, gtmpl::FuncError> {
    Key::parse(&text(name, args, i)?).map_err(|e| err(name, format!("parsing private key: {e}")))
}

fn ca_params(name: &str, args: &[Value]) -> Result<CertificateParams, gtmpl::FuncError> {
    let mut p = base_params(name, &text(name, args, 0)?, &[], &[], to_i64(&args[1]))?;
    p.key_usages.push(KeyUsagePurpose::KeyCertSign);
    p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    Ok(p)
}

fn gen_ca(args: &[Value]) -> Out {
    arity("genCA", args, 2)?;
    make("genCA", ca_params("genCA", args)?, rsa2048("genCA")?, None)
}

fn gen_ca_with_key(args: &[Value]) -> Out {
    arity("genCAWithKey", args, 3)?;
    make("genCAWithKey", ca_params("genCAWithKey", args)?, pem_key("genCAWithKey", args, 2)?, None)
}

/// The template of the `cn ips dns days` functions.
fn leaf_params(name: &str, args: &[Value]) -> Result<CertificateParams, gtmpl::FuncError> {
    let (ips, dns) = (strings(name, args, 1)?, strings(name, args, 2)?);
    base_params(name, &text(name, args, 0)?, &ips, &dns, to_i64(&args[3]))
}

fn gen_self_signed(args: &[Value]) -> Out {
    let name = "genSelfSignedCert";
    arity(name, args, 4)?;
    make(name, leaf_params(name, args)?, rsa2048(name)?, None)
}

fn gen_self_signed_with_key(args: &[Value]) -> Out {
    let name = "genSelfSignedCertWithKey";
    arity(name, args, 5)?;
    make(name, leaf_params(name, args)?, pem_key(name, args, 4)?, None)
}

fn gen_signed(args: &[Value]) -> Out {
    let name = "genSignedCert";
    arity(name, args, 5)?;
    make(name, leaf_params(name, args)?, rsa2048(name)?, Some(&args[4]))
}

fn gen_signed_with_key(args: &[Value]) -> Out {
    let name = "genSignedCertWithKey";
    arity(name, args, 6)?;
    make(name, leaf_params(name, args)?, pem_key(name, args, 5)?, Some(&args[4]))
}

/// A certificate value from a base64 PEM certificate and key, both checked.
fn build_custom_cert(args: &[Value]) -> Out {
    let name = "buildCustomCert";
    arity(name, args, 2)?;
    let b64 = base64::engine::general_purpose::STANDARD;
    let cert = b64.decode(text(name, args, 0)?).map_err(|_| err(name, "unable to decode base64 certificate"))?;
    let key = b64.decode(text(name, args, 1)?).map_err(|_| err(name, "unable to decode base64 private key"))?;
    let block = pem::parse(&cert).map_err(|_| err(name, "unable to decode certificate"))?;
    x509_parser::parse_x509_certificate(block.contents())
        .map_err(|e| err(name, format!("error parsing certificate: {e}")))?;
    let (cert, key) = (String::from_utf8_lossy(&cert).into_owned(), String::from_utf8_lossy(&key).into_owned());
    Key::parse(&key).map_err(|e| err(name, format!("error parsing private key: {e}")))?;
    certificate(cert, key)
}
