//! sprig's crypto functions (sprig's crypto_test.go vectors and checks),
//! Go's printing of lists and dicts, and `set`/`unset` in place.

use std::borrow::Cow;

use base64::Engine;

use crate::pipeline::line::Extracted;
use crate::pipeline::GoTemplate;

fn render(t: &str) -> String {
    let mut e = Extracted::default();
    e.set(Cow::Borrowed("v"), "Hello World".to_string());
    let t = GoTemplate::parse(t).unwrap_or_else(|e| panic!("{t}: {e}"));
    t.render(&e, "v", "the line").unwrap_or_else(|e| format!("ERROR {e}"))
}

#[test]
fn derive_password_gives_sprigs_vectors() {
    for (t, want) in [
        (r#"{{derivePassword 1 "long" "password" "user" "example.com"}}"#, "ZedaFaxcZaso9*"),
        (r#"{{derivePassword 2 "long" "password" "user" "example.com"}}"#, "Fovi2@JifpTupx"),
        (r#"{{derivePassword 1 "maximum" "password" "user" "example.com"}}"#, "pf4zS1LjCg&LjhsZ7T2~"),
        (r#"{{derivePassword 1 "medium" "password" "user" "example.com"}}"#, "ZedJuz8$"),
        (r#"{{derivePassword 1 "basic" "password" "user" "example.com"}}"#, "pIS54PLs"),
        (r#"{{derivePassword 1 "short" "password" "user" "example.com"}}"#, "Zed5"),
        (r#"{{derivePassword 1 "pin" "password" "user" "example.com"}}"#, "6685"),
        (r#"{{derivePassword 1 "nope" "password" "user" "example.com"}}"#, "cannot find password template nope"),
    ] {
        assert_eq!(render(t), want, "{t}");
    }
}

#[test]
fn aes_round_trips_and_reads_sprigs_cipher_text() {
    assert_eq!(render(r#"{{ "plaintext" | encryptAES "secretkey" | decryptAES "secretkey" }}"#), "plaintext");
    // The example of sprig's documentation (docs/crypto.md), made by sprig.
    assert_eq!(render(r#"{{ "30tEfhuJSVRhpG97XCuWgz2okj7L8vQ1s6V9zVUPeDQ=" | decryptAES "secretkey" }}"#), "plaintext");
    // A password longer than 32 bytes is cut; a block-long text gets a whole block of padding.
    let long = "k".repeat(40);
    let t = format!(r#"{{{{ "0123456789abcdef" | encryptAES "{long}" | decryptAES "{}" }}}}"#, &long[..32]);
    assert_eq!(render(&t), "0123456789abcdef");
    let sealed = render(r#"{{ .v | encryptAES "k" }}"#);
    let raw = base64::engine::general_purpose::STANDARD.decode(&sealed).unwrap();
    assert_eq!(raw.len(), 16 + 16, "IV and one block");
    assert_ne!(sealed, render(r#"{{ .v | encryptAES "k" }}"#), "a random IV each time");
    assert_eq!(render(r#"{{ "" | encryptAES "k" }}|{{ "" | decryptAES "k" }}"#), "|");
    assert!(render(r#"{{ "bm90IGJsb2Nrcw==" | decryptAES "k" }}"#).starts_with("ERROR"));
}

#[test]
fn bcrypt_htpasswd_and_rand_bytes() {
    let h = render(r#"{{ "abc" | bcrypt }}"#);
    assert!(h.starts_with("$2a$10$"), "{h}");
    assert!(bcrypt::verify("abc", &h).unwrap());
    let line = render(r#"{{ htpasswd "myUser" "myPassword" }}"#);
    let (user, hash) = line.split_once(':').unwrap();
    assert_eq!(user, "myUser");
    assert!(bcrypt::verify("myPassword", hash).unwrap());
    assert_eq!(render(r#"{{ htpasswd "wrongus:er" "x" }}"#), "invalid username: wrongus:er");
    // sprig 3.3's `sha`: base64 of the SHA-1.
    assert_eq!(render(r#"{{ htpasswd "u" "password" "sha" }}"#), "u:{SHA}W6ph5Mm5Pz8GgiULbPgzG37mj9g=");
    let b = render("{{ randBytes 12 }}");
    assert_eq!(base64::engine::general_purpose::STANDARD.decode(&b).unwrap().len(), 12);
    assert_ne!(b, render("{{ randBytes 12 }}"));
}

fn cert_fields(t: &str) -> (String, String) {
    let out = render(&format!("{t}{{{{ $c.Cert }}}}|{{{{ $c.Key }}}}"));
    let (c, k) = out.split_once('|').unwrap_or_else(|| panic!("{t}: {out}"));
    (c.to_string(), k.to_string())
}

fn parsed(pem_text: &str) -> Vec<u8> {
    let p = pem::parse(pem_text).unwrap();
    assert_eq!(p.tag(), "CERTIFICATE");
    p.contents().to_vec()
}

#[test]
fn private_keys_of_each_kind() {
    let ec = render(r#"{{ genPrivateKey "ecdsa" }}"#);
    assert!(ec.starts_with("-----BEGIN EC PRIVATE KEY-----\n"), "{ec}");
    let ed = render(r#"{{ genPrivateKey "ed25519" }}"#);
    assert!(ed.starts_with("-----BEGIN PRIVATE KEY-----\n"), "{ed}");
    assert_eq!(render(r#"{{ genPrivateKey "bad" }}"#), "Unknown type bad");
    assert!(render(r#"{{ genPrivateKey "dsa" }}"#).starts_with("ERROR"));
    // Each kind signs certificates, CA and leaf.
    for key in [ec, ed] {
        let (c, k) = cert_fields(&format!(r#"{{{{ $c := genCAWithKey "ca" 365 `{key}` }}}}"#));
        assert_eq!(k, key);
        let der = parsed(&c);
        let (_, x) = x509_parser::parse_x509_certificate(&der).unwrap();
        assert!(x.is_ca());
        assert_eq!(x.subject().to_string(), "CN=ca");
    }
}

#[test]
fn certificates_as_sprig_makes_them() {
    let ca = r#"{{ $ca := genCA "foo-ca" 365 }}"#;
    let (c, k) = cert_fields(&format!("{ca}{{{{ $c := $ca }}}}"));
    assert!(k.starts_with("-----BEGIN RSA PRIVATE KEY-----\n"), "{k}");
    let der = parsed(&c);
    let (_, x) = x509_parser::parse_x509_certificate(&der).unwrap();
    assert!(x.is_ca());
    let days = (x.validity().not_after.timestamp() - x.validity().not_before.timestamp()) / 86_400;
    assert_eq!(days, 365);

    let leaf = format!(
        r#"{ca}{{{{ $c := genSignedCert "foo.com" (list "10.0.0.1" "10.0.0.2") (list "bar.com" "bat.com") 365 $ca }}}}"#
    );
    let (c, k) = cert_fields(&leaf);
    assert!(k.starts_with("-----BEGIN RSA PRIVATE KEY-----\n"));
    let der = parsed(&c);
    let (_, x) = x509_parser::parse_x509_certificate(&der).unwrap();
    assert!(!x.is_ca());
    assert_eq!(x.subject().to_string(), "CN=foo.com");
    assert_eq!(x.issuer().to_string(), "CN=foo-ca");
    let san = x.subject_alternative_name().unwrap().unwrap().value;
    let names: Vec<String> = san.general_names.iter().map(|n| format!("{n:?}")).collect();
    let want = [
        r#"IPAddress([10, 0, 0, 1])"#,
        r#"IPAddress([10, 0, 0, 2])"#,
        r#"DNSName("bar.com")"#,
        r#"DNSName("bat.com")"#,
    ];
    assert_eq!(names, want);
    let eku = x.extended_key_usage().unwrap().unwrap().value;
    assert!(eku.server_auth && eku.client_auth);

    let (c, _) = cert_fields(r#"{{ $c := genSelfSignedCert "self.com" (list) (list "self.com") 30 }}"#);
    let der = parsed(&c);
    let (_, x) = x509_parser::parse_x509_certificate(&der).unwrap();
    assert_eq!(x.issuer().to_string(), "CN=self.com");

    // buildCustomCert takes base64 PEMs back; a bad one fails.
    let b64 = base64::engine::general_purpose::STANDARD;
    let key = render(r#"{{ genPrivateKey "ecdsa" }}"#);
    let (c, k) = cert_fields(&format!(
        r#"{{{{ $s := genSelfSignedCertWithKey "x" (list "127.0.0.1") (list) 1 `{key}` }}}}{{{{ $c := buildCustomCert ($s.Cert | b64enc) ($s.Key | b64enc) }}}}"#
    ));
    assert_eq!(k, key);
    let signed = cert_fields(&format!(
        r#"{ca}{{{{ $c := genSignedCertWithKey "w" (list) (list) 1 (buildCustomCert "{}" "{}") `{key}` }}}}"#,
        b64.encode(&c),
        b64.encode(&k)
    ));
    assert_eq!(signed.1, key);
    assert!(render(r#"{{ buildCustomCert "eA==" "eA==" }}"#).starts_with("ERROR"));
}

#[test]
fn lists_and_dicts_print_as_go_prints_them() {
    assert_eq!(render(r#"{{ list "a" "b" "c" }}"#), "[a b c]");
    assert_eq!(render(r#"{{ dict "b" 2 "a" 1 }}"#), "map[a:1 b:2]");
    assert_eq!(render(r#"{{ list 1 (list 2 3) (dict "k" "v") }}"#), "[1 [2 3] map[k:v]]");
    assert_eq!(render(r#"{{- list "a" | join "," -}}|{{ .v }}|{{ "}}" }}"#), "a|Hello World|}}");
    assert_eq!(render("{{ .nope }}|{{ 1 }}|{{ true }}|{{-3}}|{{ `}}` }}"), "<no value>|1|true|-3|}}");
    assert_eq!(render(r#"{{ $x := list "a" }}{{ $x }}{{ range $i, $e := $x }}{{ $i }}{{ $e }}{{ end }}"#), "[a]0a");
    assert_eq!(
        super::rewrite(r#"{{ .Value }}{{ ToUpper .Value }}{{ .a | lower }}{{ list .a }}"#),
        r#"{{ .Value }}{{ ToUpper .Value }}{{ .a | lower }}{{ list .a | _goPrint }}"#
    );
    assert_eq!(
        render(
            r#"{{ range list (dict "a" (list 1 2)) }}{{ .a }}{{ end }}{{ with dict "a" (list 3) }}{{ .a }}{{ end }}"#
        ),
        "[1 2][3]"
    );
    assert_eq!(render(r#"{{/* a comment */}}{{ if .v }}{{ .v }}{{ else }}no{{ end }}"#), "Hello World");
}

#[test]
fn set_and_unset_change_the_dict_in_place() {
    assert_eq!(render(r#"{{ $d := dict "a" 1 }}{{ $_ := set $d "b" 2 }}{{ $d.b }}"#), "2");
    assert_eq!(render(r#"{{ $d := dict "a" 1 "b" 2 }}{{ $_ := unset $d "a" }}{{ $d }}"#), "map[b:2]");
    // Printed, and piped on, the changed dict.
    assert_eq!(render(r#"{{ $d := dict }}{{ set $d "x" "y" }}|{{ $d.x }}"#), "map[x:y]|y");
    assert_eq!(render(r#"{{ $d := dict }}{{ $k := set $d "x" "y" | keys | join "," }}{{ $k }}{{ $d.x }}"#), "xy");
    // Inside an `if`, the change outlives the block, as in Go.
    assert_eq!(render(r#"{{ $d := dict }}{{ if true }}{{ $_ := set $d "x" 1 }}{{ end }}{{ $d.x }}"#), "1");
}
