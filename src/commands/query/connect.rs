//! logcli's habits for connecting: its environment (`LOKI_ADDR`,
//! `LOKI_USERNAME`, `LOKI_PASSWORD`, `LOKI_ORG_ID`, `LOKI_BEARER_TOKEN`)
//! under tailship's own flags and variables, and a service that answers 404
//! at the default prefix tried once more at Loki's.

use crate::cli::ClientArgs;
use crate::client::http::HttpError;
use crate::config::ClientConfig;

/// Loki's API prefix.
pub(super) const LOKI_PREFIX: &str = "/loki/api/v1";

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

/// `args` with what the flags (and `TAILSHIP_*`) leave unset taken from
/// logcli's variables. A `LOKI_ADDR` is a Loki: its prefix is Loki's unless
/// `--api-prefix` says otherwise.
pub(super) fn with_logcli_env(args: &ClientArgs) -> ClientArgs {
    let mut a = args.clone();
    if a.url.is_none() && a.config.is_none() {
        if let Some(addr) = env("LOKI_ADDR") {
            a.url = Some(addr);
            a.api_prefix.get_or_insert_with(|| LOKI_PREFIX.to_string());
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
    a
}

/// Whether the prefix was chosen (flag, variable or config file), and
/// whether it was already switched to Loki's after a 404.
pub(super) struct Prefix {
    chosen: bool,
    switched: bool,
}

impl Prefix {
    pub(super) fn of(args: &ClientArgs) -> Self {
        Self { chosen: args.api_prefix.is_some() || args.config.is_some(), switched: false }
    }

    /// On a 404 at the default prefix: switches `c` to Loki's, says so, and
    /// returns true (the caller asks again).
    pub(super) fn retry_as_loki(&mut self, e: &HttpError, c: &mut ClientConfig) -> bool {
        if self.chosen || self.switched || !is_404(e) || c.api_prefix == LOKI_PREFIX {
            return false;
        }
        tracing::info!(
            "404 at {}: trying Loki's prefix {LOKI_PREFIX} (--api-prefix {LOKI_PREFIX} skips this)",
            c.api_prefix
        );
        c.api_prefix = LOKI_PREFIX.to_string();
        self.switched = true;
        true
    }

    /// `e` with a hint when it is a 404 a prefix could explain.
    pub(super) fn explain(&self, e: HttpError, c: &ClientConfig) -> anyhow::Error {
        if !is_404(&e) {
            return e.into();
        }
        let hint = if c.api_prefix == LOKI_PREFIX && self.switched {
            "neither the default prefix /logstore/api/v1 nor Loki's /loki/api/v1 answers here: check --url \
             (--addr) and --api-prefix"
                .to_string()
        } else if c.api_prefix == LOKI_PREFIX {
            "check --url (--addr), and --api-prefix (the log service of tailship uses /logstore/api/v1)".to_string()
        } else {
            format!("a Loki serves its API under {LOKI_PREFIX}: add --api-prefix {LOKI_PREFIX}")
        };
        anyhow::Error::from(e).context(hint)
    }
}

fn is_404(e: &HttpError) -> bool {
    e.status().is_some_and(|s| s.as_u16() == 404)
}
