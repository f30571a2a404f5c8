//! `type = "cloudflare"`: a zone's HTTP request logs from Cloudflare's
//! Logpull API, as Promtail's `cloudflare` target pulls them.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::{SourceConfig, SourceType};
use crate::util::{read_secret_file, HumanDuration, Secret};

/// The fields asked for (`fields_type`), as Promtail's sets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum FieldsType {
    #[default]
    Default,
    Minimal,
    Extended,
    All,
    /// `additional_fields` alone.
    Custom,
}

/// `cloudflare = { ... }` of a cloudflare source.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(default)]
pub struct CloudflareConfig {
    /// An API token with the zone's Logs Read permission.
    pub api_token: Option<Secret>,
    /// A file holding the token (read at start and at reload).
    pub api_token_file: Option<PathBuf>,
    pub zone_id: String,
    /// Requests in flight at once; each pulls a part of the window.
    pub workers: usize,
    /// The window each pull covers (Cloudflare keeps the last minute back).
    pub pull_range: HumanDuration,
    pub fields_type: FieldsType,
    /// Fields added to `fields_type`'s.
    pub additional_fields: Vec<String>,
    /// The API (default `https://api.cloudflare.com/client/v4`).
    pub endpoint: String,
}

impl Default for CloudflareConfig {
    fn default() -> Self {
        Self {
            api_token: None,
            api_token_file: None,
            zone_id: String::new(),
            workers: 3,
            pull_range: HumanDuration::secs(60),
            fields_type: FieldsType::Default,
            additional_fields: Vec::new(),
            endpoint: "https://api.cloudflare.com/client/v4".into(),
        }
    }
}

const DEFAULT_FIELDS: &[&str] = &[
    "ClientIP",
    "ClientRequestHost",
    "ClientRequestMethod",
    "ClientRequestURI",
    "EdgeEndTimestamp",
    "EdgeResponseBytes",
    "EdgeRequestHost",
    "EdgeResponseStatus",
    "EdgeStartTimestamp",
    "RayID",
];
const MINIMAL_FIELDS: &[&str] = &[
    "ZoneID",
    "ClientSSLProtocol",
    "ClientRequestProtocol",
    "ClientRequestPath",
    "ClientRequestUserAgent",
    "ClientRequestReferer",
    "EdgeColoCode",
    "ClientCountry",
    "CacheCacheStatus",
    "CacheResponseStatus",
    "EdgeResponseContentType",
    "SecurityLevel",
    "WAFAction",
    "WAFProfile",
    "WAFRuleID",
    "WAFRuleMessage",
    "EdgeRateLimitID",
    "EdgeRateLimitAction",
];
const EXTENDED_FIELDS: &[&str] = &[
    "ClientSSLCipher",
    "ClientASN",
    "ClientIPClass",
    "CacheResponseBytes",
    "EdgePathingOp",
    "EdgePathingSrc",
    "EdgePathingStatus",
    "ParentRayID",
    "WorkerCPUTime",
    "WorkerStatus",
    "WorkerSubrequest",
    "WorkerSubrequestCount",
    "OriginIP",
    "OriginResponseStatus",
    "OriginSSLProtocol",
    "OriginResponseHTTPExpires",
    "OriginResponseHTTPLastModified",
];
const ALL_FIELDS: &[&str] = &[
    "BotScore",
    "BotScoreSrc",
    "BotTags",
    "ClientRequestBytes",
    "ClientSrcPort",
    "ClientXRequestedWith",
    "CacheTieredFill",
    "EdgeResponseCompressionRatio",
    "EdgeServerIP",
    "FirewallMatchesSources",
    "FirewallMatchesActions",
    "FirewallMatchesRuleIDs",
    "OriginResponseBytes",
    "OriginResponseTime",
    "ClientDeviceType",
    "WAFFlags",
    "WAFMatchedVar",
    "EdgeColoID",
    "RequestHeaders",
    "ResponseHeaders",
    "ClientRequestSource",
];

impl CloudflareConfig {
    /// The fields asked for: `fields_type`'s and `additional_fields`, sorted, each once.
    pub fn fields(&self) -> Vec<String> {
        let sets: &[&[&str]] = match self.fields_type {
            FieldsType::Default => &[DEFAULT_FIELDS],
            FieldsType::Minimal => &[DEFAULT_FIELDS, MINIMAL_FIELDS],
            FieldsType::Extended => &[DEFAULT_FIELDS, MINIMAL_FIELDS, EXTENDED_FIELDS],
            FieldsType::All => &[DEFAULT_FIELDS, MINIMAL_FIELDS, EXTENDED_FIELDS, ALL_FIELDS],
            FieldsType::Custom => &[],
        };
        let mut f: Vec<String> = sets.iter().flat_map(|s| s.iter().map(|f| f.to_string())).collect();
        f.extend(self.additional_fields.iter().cloned());
        f.sort();
        f.dedup();
        f
    }
}

/// A cloudflare source's keys; reads `api_token_file` into `api_token`.
pub(super) fn validate_cloudflare(key: &str, s: &mut SourceConfig, e: &mut dyn FnMut(&str, String)) {
    if s.kind != SourceType::Cloudflare {
        if s.cloudflare.is_some() {
            e(&format!("{key}.cloudflare"), "cloudflare is for cloudflare sources".into());
        }
        return;
    }
    for (k, set) in [("listen", s.listen.is_some()), ("receiver", s.receiver.is_some())] {
        if set {
            e(
                &format!("{key}.{k}"),
                "a cloudflare source pulls from the Logpull API and takes no {k}".replace("{k}", k),
            );
        }
    }
    let Some(c) = s.cloudflare.as_mut() else {
        e(&format!("{key}.cloudflare"), "needs zone_id and api_token (or api_token_file)".into());
        return;
    };
    if c.zone_id.is_empty() {
        e(&format!("{key}.cloudflare.zone_id"), "must not be empty".into());
    }
    match (&c.api_token, c.api_token_file.take()) {
        (Some(_), Some(_)) => e(&format!("{key}.cloudflare"), "set api_token or api_token_file, not both".into()),
        (None, Some(p)) => match read_secret_file(&p) {
            Ok(t) => c.api_token = Some(t),
            Err(err) => e(&format!("{key}.cloudflare.api_token_file"), format!("cannot read {}: {err}", p.display())),
        },
        (None, None) => e(&format!("{key}.cloudflare.api_token"), "needs api_token or api_token_file".into()),
        (Some(_), None) => {}
    }
    if c.workers == 0 {
        e(&format!("{key}.cloudflare.workers"), "must be at least 1".into());
    }
    if c.pull_range.get() < std::time::Duration::from_secs(1) {
        e(&format!("{key}.cloudflare.pull_range"), "must be at least 1s".into());
    }
    if c.fields_type == FieldsType::Custom && c.additional_fields.is_empty() {
        e(
            &format!("{key}.cloudflare.additional_fields"),
            "fields_type = \"custom\" asks for these fields alone: name some".into(),
        );
    }
    if !matches!(reqwest::Url::parse(&c.endpoint), Ok(u) if u.scheme() == "http" || u.scheme() == "https") {
        e(&format!("{key}.cloudflare.endpoint"), format!("`{}` is not an http or https URL", c.endpoint));
    }
}
