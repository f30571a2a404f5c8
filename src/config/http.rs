//! Prometheus' HTTP client keys of a table that reaches a service (a
//! discovery's, an `oauth2` table's), written once: `super::http_table`
//! writes a table's struct with the keys in place among its own and their
//! defaults; [`HttpKeys`] is the view every check and client builder reads
//! them through.
//!
//! The keys stay plain fields of each table (not a `#[serde(flatten)]`ed
//! struct), so an unknown key inside a discovery's table is still reported
//! by the loader's `serde_ignored` pass, and code reads `cfg.tls` as ever.

use std::collections::BTreeMap;
use std::path::PathBuf;

use super::{BasicAuth, OAuth2Config, TlsConfig};
use crate::util::Secret;

/// The HTTP client keys of a discovery's table, borrowed (Prometheus'
/// `HTTPClientConfig`): at most one credential, TLS, a proxy.
#[derive(Debug, Clone, Copy)]
pub struct HttpKeys<'a> {
    pub basic_auth: Option<&'a BasicAuth>,
    pub bearer_token: Option<&'a Secret>,
    pub bearer_token_file: Option<&'a PathBuf>,
    pub oauth2: Option<&'a OAuth2Config>,
    pub tls: Option<&'a TlsConfig>,
    pub proxy_url: Option<&'a Secret>,
    pub no_proxy: Option<&'a str>,
    pub proxy_connect_header: &'a BTreeMap<String, Secret>,
}

/// No proxy headers, for [`HttpKeys::none`].
static NO_HEADERS: BTreeMap<String, Secret> = BTreeMap::new();

impl HttpKeys<'_> {
    /// No credentials, the default TLS, the environment's proxy.
    pub fn none() -> HttpKeys<'static> {
        HttpKeys {
            basic_auth: None,
            bearer_token: None,
            bearer_token_file: None,
            oauth2: None,
            tls: None,
            proxy_url: None,
            no_proxy: None,
            proxy_connect_header: &NO_HEADERS,
        }
    }

    /// Checks the keys of the table at `kk`; `others` are credentials of
    /// the discovery's own (`auth_token`, ...) counted with them.
    pub fn validate(&self, kk: &str, others: &[(bool, &str)], e: &mut dyn FnMut(&str, String)) {
        let mut set = self.credentials().to_vec();
        set.extend_from_slice(others);
        let given: Vec<&str> = set.iter().filter(|(s, _)| *s).map(|(_, n)| *n).collect();
        if given.len() > 1 {
            let all: Vec<&str> = set.iter().map(|(_, n)| *n).collect();
            e(&format!("{kk}.{}", given[1]), format!("set one of {} (also set: {})", all.join(", "), given[0]));
        }
        if let Some(b) = self.basic_auth {
            super::client::validate_basic_auth(b, &format!("{kk}.basic_auth"), e);
        }
        self.validate_token_keys(kk, e);
        if let Some(t) = self.tls {
            super::tls::validate_tls(t, &format!("{kk}.tls"), e);
        }
        self.validate_proxy(kk, e);
    }

    /// Which of the four credentials are set, by key, in Prometheus' order.
    pub fn credentials(&self) -> [(bool, &'static str); 4] {
        [
            (self.basic_auth.is_some(), "basic_auth"),
            (self.bearer_token.is_some(), "bearer_token"),
            (self.bearer_token_file.is_some(), "bearer_token_file"),
            (self.oauth2.is_some(), "oauth2"),
        ]
    }

    /// `bearer_token_file` can be read; `oauth2` is a good table.
    pub(super) fn validate_token_keys(&self, kk: &str, e: &mut dyn FnMut(&str, String)) {
        if let Some(p) = self.bearer_token_file {
            if let Err(err) = crate::util::read_secret_file(p) {
                e(&format!("{kk}.bearer_token_file"), format!("cannot read {}: {err}", p.display()));
            }
        }
        if let Some(o) = self.oauth2 {
            super::oauth2::validate_oauth2(&mut o.clone(), &format!("{kk}.oauth2"), e);
        }
    }

    /// `proxy_url`, `no_proxy` and `proxy_connect_header` of the table at `kk`.
    pub(super) fn validate_proxy(&self, kk: &str, e: &mut dyn FnMut(&str, String)) {
        super::proxy::validate_proxy(self.proxy_url, self.no_proxy, self.proxy_connect_header, kk, e);
    }
}
