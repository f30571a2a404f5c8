//! logcli's habits for connecting: its environment (`LOKI_ADDR`,
//! `LOKI_USERNAME`, `LOKI_PASSWORD`, `LOKI_ORG_ID`, `LOKI_BEARER_TOKEN`)
//! under tailship's own flags and variables, and a service that answers 404
//! at one of the two known prefixes (the spec's, or Loki's first for a
//! `LOKI_ADDR`) tried once more at the other, unless a prefix was given.

use crate::cli::ClientArgs;
use crate::client::http::HttpError;
use crate::client::prefix::hint_404;
use crate::config::{other_api_prefix, ClientConfig, LOKI_API_PREFIX};

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

/// `args` with what the flags (and `TAILSHIP_*`) leave unset taken from
/// logcli's variables, and whether the URL is `LOKI_ADDR` (a Loki: its
/// prefix is tried first unless `--api-prefix` says which).
pub(super) fn with_logcli_env(args: &ClientArgs) -> (ClientArgs, bool) {
    let mut a = args.clone();
    let mut loki_addr = false;
    if a.url.is_none() && a.config.is_none() {
        if let Some(addr) = env("LOKI_ADDR") {
            a.url = Some(addr);
            loki_addr = true;
        }
    }
    if a.username.is_none() {
        a.username = env("LOKI_USERNAME");
    }
    if a.password.is_none() && a.password_file.is_none() && a.username.is_some() {
        a.password = env("LOKI_PASSWORD");
    }
    if a.org_id.is_none() {
        a.org_id = env("LOKI_ORG_ID");
    }
    if a.bearer_token.is_none() && a.bearer_token_file.is_none() && a.username.is_none() {
        a.bearer_token = env("LOKI_BEARER_TOKEN");
    }
    (a, loki_addr)
}

/// Whether the prefix was chosen (flag, variable or the config file's
/// `client.api_prefix`), and whether it was already switched to the other
/// one after a 404.
pub(super) struct Prefix {
    chosen: bool,
    switched: bool,
}

impl Prefix {
    /// For client `c` (flags and config merged); `loki_first`: the URL came
    /// from `LOKI_ADDR`, so Loki's prefix is asked first.
    pub(super) fn of(loki_first: bool, c: &mut ClientConfig) -> Self {
        let chosen = c.api_prefix.is_some();
        if !chosen && loki_first {
            c.api_prefix = Some(LOKI_API_PREFIX.to_string());
        }
        Self { chosen, switched: false }
    }

    /// On a 404 at one of the two known prefixes, when none was chosen:
    /// switches `c` to the other, and returns true (the caller asks again).
    pub(super) fn retry_other(&mut self, e: &HttpError, c: &mut ClientConfig) -> bool {
        if self.chosen || self.switched || !is_404(e) {
            return false;
        }
        let Some(other) = other_api_prefix(c.prefix()) else { return false };
        tracing::debug!("404 at {}: trying {other} (--api-prefix {other} skips this)", c.prefix());
        c.api_prefix = Some(other.to_string());
        self.switched = true;
        true
    }

    /// `e` with a hint when it is a 404 a prefix could explain.
    pub(super) fn explain(&self, e: HttpError, c: &ClientConfig) -> anyhow::Error {
        if !is_404(&e) {
            return e.into();
        }
        let hint = match other_api_prefix(c.prefix()) {
            Some(other) if self.switched => format!(
                "neither {other} nor {} answers here (404 at both): check --url (--addr), or give --api-prefix",
                c.prefix()
            ),
            _ => format!("check --url (--addr); {}", hint_404(c.prefix(), "--api-prefix")),
        };
        anyhow::Error::from(e).context(hint)
    }
}

fn is_404(e: &HttpError) -> bool {
    e.status().is_some_and(|s| s.as_u16() == 404)
}
