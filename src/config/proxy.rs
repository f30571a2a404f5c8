//! The proxy keys of the tables that reach a service over HTTP (`client`,
//! a discovery's, an `oauth2` table's): `proxy_url`, `no_proxy`,
//! `proxy_connect_header`.

/// `%XX` escapes of a URL's userinfo decoded (the password as sent).
pub(super) fn percent_decode(s: &str) -> String {
    percent_encoding::percent_decode_str(s).decode_utf8_lossy().into_owned()
}

/// Checks the proxy keys of the table at `at` (`client`, `sources[0].docker`, ...):
/// `proxy_url`, and `no_proxy` and `proxy_connect_header`, which need it.
pub(super) fn validate_proxy(
    url: Option<&crate::util::Secret>,
    no_proxy: Option<&str>,
    headers: &std::collections::BTreeMap<String, crate::util::Secret>,
    at: &str,
    e: &mut dyn FnMut(&str, String),
) {
    if let Some(p) = url {
        validate_proxy_url(p, &format!("{at}.proxy_url"), e);
    }
    if no_proxy.is_some() && url.is_none() {
        e(&format!("{at}.no_proxy"), "needs proxy_url (without it, NO_PROXY of the environment applies)".into());
    }
    if !headers.is_empty() && url.is_none() {
        e(&format!("{at}.proxy_connect_header"), "needs proxy_url".into());
    }
    for (name, value) in headers {
        let key = format!("{at}.proxy_connect_header.{name}");
        if reqwest::header::HeaderName::from_bytes(name.as_bytes()).is_err() {
            e(&key, "not a valid header name".into());
        } else if reqwest::header::HeaderValue::from_str(value.expose()).is_err() {
            e(&key, "not a valid header value".into());
        }
    }
}

/// Checks a `proxy_url` at `key` (an http or https URL) and remembers its
/// password as a secret, kept out of logs.
fn validate_proxy_url(p: &crate::util::Secret, key: &str, e: &mut dyn FnMut(&str, String)) {
    match reqwest::Url::parse(p.expose()) {
        Ok(u) if u.scheme() == "http" || u.scheme() == "https" => {
            if let Some(pw) = u.password() {
                crate::util::secrets::remember(pw);
                crate::util::secrets::remember(&percent_decode(pw));
            }
        }
        Ok(u) => e(key, format!("scheme `{}` is not http or https", u.scheme())),
        Err(err) => e(key, format!("not a URL ({err})")),
    }
}
