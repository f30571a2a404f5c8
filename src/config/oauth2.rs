//! `oauth2` tables (`client.oauth2`, a docker or kubernetes source's): the OAuth 2.0 client credentials grant (RFC 6749, 4.4),
//! as Promtail's clients take it (Prometheus's `oauth2` block).

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::http_table::http_table;
use super::tls::validate_tls;
use crate::util::{read_secret_file, Secret};

/// Form fields the token request sets itself, refused in `endpoint_params`.
const RESERVED_PARAMS: &[&str] = &["grant_type", "client_id", "client_secret", "scope"];

http_table! {
    /// An `oauth2` table; its `tls` and proxy keys are the token endpoint's
    /// (unset: `client.tls` and `client.proxy_url`).
    #[derive(Debug, Clone, Deserialize, Serialize)]
    #[serde(default)]
    pub struct OAuth2Config {
        pub client_id: String = String::new(),
        pub client_secret: Option<Secret> = None,
        /// A file holding the client secret (read at start and at reload).
        pub client_secret_file: Option<PathBuf> = None,
        /// Scopes asked for, sent space-separated as `scope`.
        pub scopes: Vec<String> = Vec::new(),
        /// The token endpoint (`http` or `https`).
        pub token_url: String = String::new(),
        /// Extra form fields of the token request (such as `audience`).
        pub endpoint_params: BTreeMap<String, String> = BTreeMap::new(),
        tls;
        proxy;
    }
}

/// Checks the `oauth2` table at `key` (`client.oauth2`,
/// `sources[0].docker.oauth2`, ...) and reads its secret file into `client_secret`.
pub(super) fn validate_oauth2(o: &mut OAuth2Config, key: &str, e: &mut dyn FnMut(&str, String)) {
    if o.client_id.is_empty() {
        e(&format!("{key}.client_id"), "must not be empty".into());
    }
    match reqwest::Url::parse(&o.token_url) {
        Ok(u) if u.scheme() == "http" || u.scheme() == "https" => {}
        Ok(u) => e(&format!("{key}.token_url"), format!("scheme `{}` is not http or https", u.scheme())),
        Err(err) => e(&format!("{key}.token_url"), format!("`{}` is not a URL ({err})", o.token_url)),
    }
    match (&o.client_secret, o.client_secret_file.take()) {
        (Some(_), Some(_)) => e(key, "set client_secret or client_secret_file, not both".into()),
        (None, Some(p)) => match read_secret_file(&p) {
            Ok(s) => o.client_secret = Some(s),
            Err(err) => e(&format!("{key}.client_secret_file"), format!("cannot read {}: {err}", p.display())),
        },
        // A public client: RFC 6749 lets it authenticate with its id alone.
        _ => {}
    }
    for k in o.endpoint_params.keys() {
        if RESERVED_PARAMS.contains(&k.as_str()) {
            e(
                &format!("{key}.endpoint_params.{k}"),
                "set by tailship itself; use client_id, client_secret or scopes".into(),
            );
        }
    }
    if let Some(t) = &o.tls {
        validate_tls(t, &format!("{key}.tls"), e);
    }
    o.http().validate_proxy(key, e);
}
