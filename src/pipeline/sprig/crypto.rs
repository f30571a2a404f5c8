//! sprig's crypto functions without certificates (those are in
//! [`super::certs`]): `bcrypt`, `htpasswd`, `derivePassword`,
//! `genPrivateKey`, `encryptAES`, `decryptAES`, `randBytes`. Each gives
//! what sprig's gives, in the same format: `encryptAES` output is read by
//! sprig's `decryptAES` and the reverse (AES-256-CBC, the key the password's
//! bytes cut or padded with zeros to 32, a random IV before the cipher text,
//! PKCS#7 padding, standard base64).

use aes::cipher::{block_padding::NoPadding, block_padding::Pkcs7, BlockDecryptMut, BlockEncryptMut, KeyIvInit};
use base64::Engine;
use gtmpl::Value;
use hmac::Mac;
use rand_core::{OsRng, RngCore};
use sha1::Digest;

use super::{arity, err, string, text, to_i64, Out};

pub(super) const FUNCS: &[(&str, gtmpl::Func)] = &[
    ("bcrypt", bcrypt),
    ("htpasswd", htpasswd),
    ("derivePassword", derive_password),
    ("genPrivateKey", gen_private_key),
    ("encryptAES", encrypt_aes),
    ("decryptAES", decrypt_aes),
    ("randBytes", rand_bytes),
];

const B64: base64::engine::GeneralPurpose = base64::engine::general_purpose::STANDARD;

/// Go's `bcrypt.DefaultCost`.
const BCRYPT_COST: u32 = 10;

/// The hash as Go's x/crypto makes it (`$2a$10$...`); like sprig, a
/// failure is the text of the error rather than a template error.
fn bcrypt_text(password: &str) -> String {
    if password.len() > 72 {
        return "failed to encrypt string with bcrypt: bcrypt: password length exceeds 72 bytes".into();
    }
    match bcrypt::hash_with_result(password, BCRYPT_COST) {
        Ok(h) => h.format_for_version(bcrypt::Version::TwoA),
        Err(e) => format!("failed to encrypt string with bcrypt: {e}"),
    }
}

fn bcrypt(args: &[Value]) -> Out {
    arity("bcrypt", args, 1)?;
    string(bcrypt_text(&text("bcrypt", args, 0)?))
}

/// `user:hash`, bcrypt's, or with a third argument `"sha"` (sprig 3.3's
/// option) `user:{SHA}` and the base64 SHA-1.
fn htpasswd(args: &[Value]) -> Out {
    if args.len() != 2 && args.len() != 3 {
        return Err(gtmpl::FuncError::AtLeastXArgs("htpasswd".into(), 2));
    }
    let user = text("htpasswd", args, 0)?;
    let password = text("htpasswd", args, 1)?;
    if user.contains(':') {
        return string(format!("invalid username: {user}"));
    }
    let sha = args.len() == 3 && text("htpasswd", args, 2)? == "sha";
    if sha {
        string(format!("{user}:{{SHA}}{}", B64.encode(sha1::Sha1::digest(password.as_bytes()))))
    } else {
        string(format!("{user}:{}", bcrypt_text(&password)))
    }
}

fn rand_bytes(args: &[Value]) -> Out {
    arity("randBytes", args, 1)?;
    let n = usize::try_from(to_i64(&args[0])).map_err(|_| err("randBytes", "a negative count"))?;
    if n > 1 << 20 {
        return Err(err("randBytes", "more than 1 MiB asked"));
    }
    let mut buf = vec![0u8; n];
    OsRng.fill_bytes(&mut buf);
    string(B64.encode(buf))
}

/// The 32-byte AES key sprig makes of a password.
fn aes_key(password: &str) -> [u8; 32] {
    let mut key = [0u8; 32];
    let b = password.as_bytes();
    let n = b.len().min(32);
    key[..n].copy_from_slice(&b[..n]);
    key
}

type Enc = cbc::Encryptor<aes::Aes256>;
type Dec = cbc::Decryptor<aes::Aes256>;

fn encrypt_aes(args: &[Value]) -> Out {
    arity("encryptAES", args, 2)?;
    let (password, plain) = (text("encryptAES", args, 0)?, text("encryptAES", args, 1)?);
    if plain.is_empty() {
        return string("");
    }
    let mut iv = [0u8; 16];
    OsRng.fill_bytes(&mut iv);
    let sealed = Enc::new(&aes_key(&password).into(), &iv.into()).encrypt_padded_vec_mut::<Pkcs7>(plain.as_bytes());
    let mut out = iv.to_vec();
    out.extend_from_slice(&sealed);
    string(B64.encode(out))
}

/// As sprig: the padding's length is read from the last byte and cut off,
/// its bytes not checked (a wrong password gives garbage, or an error
/// where sprig's would panic on a length past the text).
fn decrypt_aes(args: &[Value]) -> Out {
    arity("decryptAES", args, 2)?;
    let (password, b64) = (text("decryptAES", args, 0)?, text("decryptAES", args, 1)?);
    if b64.is_empty() {
        return string("");
    }
    let raw = B64.decode(b64.as_bytes()).map_err(|e| err("decryptAES", e))?;
    if raw.len() < 32 || raw.len() % 16 != 0 {
        return Err(err("decryptAES", "the cipher text is not whole AES blocks after a 16-byte IV"));
    }
    let (iv, sealed) = raw.split_at(16);
    let iv: [u8; 16] = iv.try_into().map_err(|_| err("decryptAES", "no IV"))?;
    let mut plain = Dec::new(&aes_key(&password).into(), &iv.into())
        .decrypt_padded_vec_mut::<NoPadding>(sealed)
        .map_err(|e| err("decryptAES", e))?;
    let pad = usize::from(plain.last().copied().unwrap_or(0));
    if pad > plain.len() {
        return Err(err("decryptAES", "bad padding (a wrong password?)"));
    }
    plain.truncate(plain.len() - pad);
    string(String::from_utf8_lossy(&plain).into_owned())
}

/// Master Password's site password templates, by `passwordType`.
fn templates(kind: &str) -> Option<&'static [&'static str]> {
    Some(match kind {
        "maximum" => &["anoxxxxxxxxxxxxxxxxx", "axxxxxxxxxxxxxxxxxno"],
        "long" => &[
            "CvcvnoCvcvCvcv",
            "CvcvCvcvnoCvcv",
            "CvcvCvcvCvcvno",
            "CvccnoCvcvCvcv",
            "CvccCvcvnoCvcv",
            "CvccCvcvCvcvno",
            "CvcvnoCvccCvcv",
            "CvcvCvccnoCvcv",
            "CvcvCvccCvcvno",
            "CvcvnoCvcvCvcc",
            "CvcvCvcvnoCvcc",
            "CvcvCvcvCvccno",
            "CvccnoCvccCvcv",
            "CvccCvccnoCvcv",
            "CvccCvccCvcvno",
            "CvcvnoCvccCvcc",
            "CvcvCvccnoCvcc",
            "CvcvCvccCvccno",
            "CvccnoCvcvCvcc",
            "CvccCvcvnoCvcc",
            "CvccCvcvCvccno",
        ],
        "medium" => &["CvcnoCvc", "CvcCvcno"],
        "short" => &["Cvcn"],
        "basic" => &["aaanaaan", "aannaaan", "aaannaaa"],
        "pin" => &["nnnn"],
        _ => return None,
    })
}

/// The characters a template's letter stands for.
fn class(c: u8) -> &'static [u8] {
    match c {
        b'V' => b"AEIOU",
        b'C' => b"BCDFGHJKLMNPQRSTVWXYZ",
        b'v' => b"aeiou",
        b'c' => b"bcdfghjklmnpqrstvwxyz",
        b'A' => b"AEIOUBCDFGHJKLMNPQRSTVWXYZ",
        b'a' => b"AEIOUaeiouBCDFGHJKLMNPQRSTVWXYZbcdfghjklmnpqrstvwxyz",
        b'n' => b"0123456789",
        b'o' => b"@&%?,=[]_:-+*$#!'^~;()/.",
        _ => b"AEIOUaeiouBCDFGHJKLMNPQRSTVWXYZbcdfghjklmnpqrstvwxyz0123456789!@#$%^&*()",
    }
}

const MASTER_PASSWORD_SEED: &[u8] = b"com.lyndir.masterpassword";

/// Master Password's algorithm as sprig has it: scrypt (N 32768, r 8, p 2)
/// of the password salted with the user gives the key, whose HMAC-SHA256
/// of the site and counter picks the template and each character.
fn derive_password(args: &[Value]) -> Out {
    arity("derivePassword", args, 5)?;
    let counter = to_i64(&args[0]) as u32;
    let kind = text("derivePassword", args, 1)?;
    let (password, user, site) =
        (text("derivePassword", args, 2)?, text("derivePassword", args, 3)?, text("derivePassword", args, 4)?);
    let Some(templates) = templates(&kind) else {
        return string(format!("cannot find password template {kind}"));
    };
    let mut salt = MASTER_PASSWORD_SEED.to_vec();
    salt.extend_from_slice(&(user.len() as u32).to_be_bytes());
    salt.extend_from_slice(user.as_bytes());
    let params = scrypt::Params::new(15, 8, 2, 64).map_err(|e| err("derivePassword", e))?;
    let mut key = [0u8; 64];
    scrypt::scrypt(password.as_bytes(), &salt, &params, &mut key).map_err(|e| err("derivePassword", e))?;
    let mut mac = hmac::Hmac::<sha2::Sha256>::new_from_slice(&key).map_err(|e| err("derivePassword", e))?;
    mac.update(MASTER_PASSWORD_SEED);
    mac.update(&(site.len() as u32).to_be_bytes());
    mac.update(site.as_bytes());
    mac.update(&counter.to_be_bytes());
    let seed = mac.finalize().into_bytes();
    let template = templates[usize::from(seed[0]) % templates.len()];
    let out: String = template
        .bytes()
        .enumerate()
        .map(|(i, c)| {
            let chars = class(c);
            char::from(chars[usize::from(seed[i + 1]) % chars.len()])
        })
        .collect();
    string(out)
}

/// A new private key in PEM, of sprig's kinds and forms: `rsa` (the
/// default; 4096 bits, PKCS#1), `ecdsa` (P-256, SEC 1), `ed25519` (PKCS#8).
/// `dsa` is refused: no well-kept Rust crate writes sprig's DSA form, and
/// nothing tailship talks to accepts DSA keys.
fn gen_private_key(args: &[Value]) -> Out {
    arity("genPrivateKey", args, 1)?;
    let kind = text("genPrivateKey", args, 0)?;
    let key = match kind.as_str() {
        "" | "rsa" => super::certs::Key::rsa(4096),
        "ecdsa" => super::certs::Key::ecdsa(),
        "ed25519" => super::certs::Key::ed25519(),
        "dsa" => {
            return Err(err("genPrivateKey", "dsa keys are not made by tailship (see the book: stages/templates.md)"))
        }
        _ => return string(format!("Unknown type {kind}")),
    };
    let key = key.map_err(|e| err("genPrivateKey", e))?;
    string(key.pem().map_err(|e| err("genPrivateKey", e))?)
}
