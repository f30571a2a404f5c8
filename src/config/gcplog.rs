//! `type = "gcplog"`: Google Cloud Logging entries from a Pub/Sub
//! subscription, as Promtail's `gcplog` target takes them: pulled from the
//! subscription, or pushed by it to the source's listener.

use serde::{Deserialize, Serialize};

use super::SourceConfig;

/// How the subscription delivers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum SubscriptionType {
    /// tailship asks the Pub/Sub API for messages and acknowledges them once spooled.
    #[default]
    Pull,
    /// Pub/Sub posts each message to `POST /gcp/api/v1/push` on the source's `listen`.
    Push,
}

/// `gcplog = { ... }` of a gcplog source.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(default)]
pub struct GcplogConfig {
    pub subscription_type: SubscriptionType,
    /// Pull: the project of the subscription.
    pub project_id: String,
    /// Pull: the subscription's name (its id, not its full path).
    pub subscription: String,
    /// Pull: the Pub/Sub API. Unset: `PUBSUB_EMULATOR_HOST` (plain HTTP,
    /// no credentials) when it is set, else `https://pubsub.googleapis.com`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<String>,
    /// Pull: messages asked for at once.
    pub max_messages: u32,
    /// The whole entry as the line even when it has a `textPayload`.
    pub use_full_line: bool,
}

impl Default for GcplogConfig {
    fn default() -> Self {
        Self {
            subscription_type: SubscriptionType::Pull,
            project_id: String::new(),
            subscription: String::new(),
            endpoint: None,
            max_messages: 1000,
            use_full_line: false,
        }
    }
}

impl GcplogConfig {
    /// The Pub/Sub API's base URL and whether it is an emulator (no credentials).
    pub fn api(&self) -> (String, bool) {
        match (&self.endpoint, std::env::var("PUBSUB_EMULATOR_HOST")) {
            (Some(e), _) => (e.trim_end_matches('/').to_string(), false),
            (None, Ok(host)) if !host.is_empty() => (format!("http://{host}"), true),
            _ => ("https://pubsub.googleapis.com".to_string(), false),
        }
    }
}

/// A gcplog source's keys.
pub(super) fn validate_gcplog(key: &str, s: &SourceConfig, e: &mut dyn FnMut(&str, String)) {
    if s.kind != super::SourceType::Gcplog {
        if s.gcplog.is_some() {
            e(&format!("{key}.gcplog"), "gcplog is for gcplog sources".into());
        }
        return;
    }
    let g = s.gcplog.clone().unwrap_or_default();
    if g.subscription_type == SubscriptionType::Push {
        return;
    }
    for (k, v) in [("project_id", &g.project_id), ("subscription", &g.subscription)] {
        if v.is_empty() {
            e(&format!("{key}.gcplog.{k}"), "a pull subscription needs it".into());
        } else if v.contains('/') {
            e(&format!("{key}.gcplog.{k}"), format!("`{v}` is a path; give the id alone"));
        }
    }
    if let Some(ep) = &g.endpoint {
        if !matches!(reqwest::Url::parse(ep), Ok(u) if u.scheme() == "http" || u.scheme() == "https") {
            e(&format!("{key}.gcplog.endpoint"), format!("`{ep}` is not an http or https URL"));
        }
    }
    if g.max_messages == 0 {
        e(&format!("{key}.gcplog.max_messages"), "must be at least 1".into());
    }
    if s.listen.is_some() {
        e(
            &format!("{key}.listen"),
            "a pull subscription listens nowhere; listen is for subscription_type = \"push\"".into(),
        );
    }
    if let Some(r) = &s.receiver {
        let only_stamp =
            super::ReceiverConfig { use_incoming_timestamp: r.use_incoming_timestamp, ..Default::default() };
        if *r != only_stamp {
            e(
                &format!("{key}.receiver"),
                "a pull subscription takes only receiver.use_incoming_timestamp (the rest is for a listener)".into(),
            );
        }
    }
}
