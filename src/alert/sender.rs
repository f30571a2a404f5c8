//! Delivery: the formatted-webhook POST and the instance annotation, with the
//! shared retry policy, and redaction of the integration key.
//!
//! The webhook URL's path holds the integration key, so neither the URL nor
//! any text that might quote it (`HttpError` messages, a 404 page echoing the
//! path) is logged as is: [`Redactor`] keeps the scheme and host and replaces
//! the path, and scrubs the URL, its path and its key-like segments out of any
//! message before it reaches a log line.
//!
//! 429, 5xx and connection errors retry with `client.retry`'s backoff,
//! honouring `Retry-After`; other statuses are final, logged once per rule
//! and status, and counted.

use std::collections::HashSet;
use std::sync::Mutex;

use serde::Serialize;
use tokio_util::sync::CancellationToken;

use super::rule::Annotations;
use crate::client::http::{self, HttpError};
use crate::client::retry::{self, RetryPolicy};
use crate::config::ClientConfig;
use crate::metrics::Metrics;
use crate::util::Secret;

/// The formatted webhook payload (spec: every field optional).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Payload {
    pub alert_uid: String,
    pub title: String,
    pub message: String,
    pub state: &'static str,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub link_to_upstream_details: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub image_url: Option<String>,
}

pub const STATE_ALERTING: &str = "alerting";
pub const STATE_OK: &str = "ok";

/// Hides a secret URL in anything printed.
#[derive(Debug, Clone)]
pub struct Redactor {
    shown: String,
    fragments: Vec<String>,
}

/// Path segments every formatted webhook URL has: not secret, kept for readability.
const KNOWN_SEGMENTS: &[&str] = &["integrations", "v1", "formatted_webhook", "api"];

impl Redactor {
    pub fn new(url: &Secret) -> Self {
        let raw = url.expose();
        let (shown, mut fragments) = match reqwest::Url::parse(raw) {
            Ok(u) => {
                let origin = u.origin().ascii_serialization();
                let segments: Vec<&str> = u.path().split('/').filter(|s| !s.is_empty()).collect();
                let mut path = String::new();
                let mut fragments = vec![u.path().to_string()];
                for s in &segments {
                    path.push('/');
                    if KNOWN_SEGMENTS.contains(s) {
                        path.push_str(s);
                    } else {
                        path.push_str("<redacted>");
                        fragments.push((*s).to_string());
                    }
                }
                if u.path().ends_with('/') && !segments.is_empty() {
                    path.push('/');
                }
                if let Some(q) = u.query() {
                    fragments.push(q.to_string());
                }
                if let Some(p) = u.password() {
                    fragments.push(p.to_string());
                }
                (format!("{origin}{path}"), fragments)
            }
            Err(_) => ("<webhook url>".to_string(), Vec::new()),
        };
        fragments.push(raw.to_string());
        fragments.retain(|f| f.len() >= 4 && f != "/");
        // Longest first, so the whole URL goes before its parts.
        fragments.sort_by_key(|f| std::cmp::Reverse(f.len()));
        Self { shown, fragments }
    }

    /// The URL with its path hidden: `https://host/integrations/v1/formatted_webhook/<redacted>/`.
    pub fn shown(&self) -> &str {
        &self.shown
    }

    /// `text` with every trace of the URL replaced.
    pub fn scrub(&self, text: &str) -> String {
        let mut out = text.to_string();
        for f in &self.fragments {
            if out.contains(f.as_str()) {
                out = out.replace(f.as_str(), "<redacted>");
            }
        }
        out
    }

    /// A log-safe description of a delivery error (never `HttpError`'s own text, which quotes the URL).
    pub fn describe(&self, e: &HttpError) -> String {
        let text = match e {
            HttpError::Status { status, body, .. } => format!("{status}: {body}"),
            HttpError::Transport { message, .. } => message.clone(),
            other => other.to_string(),
        };
        self.scrub(&text)
    }
}

/// The `status` label of a failed attempt: the code, or `error` for transport failures.
pub fn status_label(e: &HttpError) -> String {
    e.status().map(|s| s.as_u16().to_string()).unwrap_or_else(|| "error".to_string())
}

/// How one delivery ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Delivered,
    /// A final status (4xx other than 429), or retries ran out.
    Failed {
        reason: &'static str,
    },
    Cancelled,
}

/// Sends webhooks and annotations for every rule.
pub struct Sender {
    client: reqwest::Client,
    retry: RetryPolicy,
    /// `(rule, status)` pairs already logged.
    logged: Mutex<HashSet<(String, String)>>,
}

impl Sender {
    /// A sender under the `client` section's TLS settings (`ca_file`,
    /// `insecure_skip_verify`) and timeout, as every request of the agent.
    pub fn new(client: &ClientConfig, retry: RetryPolicy) -> Result<Self, HttpError> {
        let client = http::webhook_client(client)?;
        Ok(Self { client, retry, logged: Mutex::new(HashSet::new()) })
    }

    /// One attempt, no retry (`tailship alert test`): the status and body, or the error, redacted.
    pub async fn post_once(&self, url: &Secret, payload: &Payload) -> Result<(u16, String), String> {
        let red = Redactor::new(url);
        let resp = self.client.post(url.expose()).json(payload).send().await;
        match resp {
            Ok(r) => {
                let status = r.status().as_u16();
                let body = crate::client::read::error_text(r).await;
                Ok((status, red.scrub(body.trim())))
            }
            Err(e) => Err(red.describe(&HttpError::transport("", &e))),
        }
    }

    /// Posts `payload` to the rule's webhook, retrying 429, 5xx and connection errors.
    pub async fn post_webhook(
        &self,
        rule: &str,
        url: &Secret,
        payload: &Payload,
        cancel: &CancellationToken,
    ) -> Outcome {
        let red = Redactor::new(url);
        let m = Metrics::get();
        let body = match serde_json::to_vec(payload) {
            Ok(b) => b,
            Err(_) => return Outcome::Failed { reason: "encode" },
        };
        let result = retry::with_retry(
            self.retry,
            cancel,
            |e, wait| {
                m.alert_delivery_failures.with_label_values(&[rule, "webhook", &status_label(e)]).inc();
                tracing::warn!(
                    rule,
                    webhook = red.shown(),
                    error = %red.describe(e),
                    retry_in_ms = wait.as_millis() as u64,
                    "alert webhook failed; retrying"
                );
            },
            || {
                let rb = self
                    .client
                    .post(url.expose())
                    .header(reqwest::header::CONTENT_TYPE, "application/json")
                    .body(body.clone());
                // The URL given to `send` only ever appears in its errors, which are
                // never printed raw; an empty one keeps it out of them altogether.
                async move { http::send(rb, "").await.map(|_| ()) }
            },
        )
        .await;
        match result {
            Ok(()) => Outcome::Delivered,
            Err(HttpError::Cancelled) => Outcome::Cancelled,
            Err(e) => {
                let label = status_label(&e);
                m.alert_delivery_failures.with_label_values(&[rule, "webhook", &label]).inc();
                let reason = if e.is_retriable() { "retries_exhausted" } else { "rejected" };
                self.log_once(rule, &label, || {
                    tracing::error!(
                        rule,
                        webhook = red.shown(),
                        error = %red.describe(&e),
                        "alert webhook refused the update; it is dropped (logged once per rule and status)"
                    );
                });
                Outcome::Failed { reason }
            }
        }
    }

    /// Posts an annotation (`POST {url}/api/annotations`).
    pub async fn post_annotation(
        &self,
        rule: &str,
        a: &Annotations,
        text: &str,
        tags: Vec<String>,
        time_ms: i64,
        cancel: &CancellationToken,
    ) -> Outcome {
        let m = Metrics::get();
        let body = serde_json::json!({ "time": time_ms, "tags": tags, "text": text });
        let result = retry::with_retry(
            self.retry,
            cancel,
            |e, wait| {
                m.alert_delivery_failures.with_label_values(&[rule, "annotation", &status_label(e)]).inc();
                tracing::warn!(rule, error = %e, retry_in_ms = wait.as_millis() as u64, "annotation failed; retrying");
            },
            || {
                let mut rb = self.client.post(&a.endpoint).bearer_auth(a.token.expose()).json(&body);
                if let Some(org) = a.org_id {
                    rb = rb.header("X-Service-Org-Id", org.to_string());
                }
                let url = a.endpoint.clone();
                async move { http::send(rb, &url).await.map(|_| ()) }
            },
        )
        .await;
        match result {
            Ok(()) => {
                m.alert_annotations.with_label_values(&[rule]).inc();
                Outcome::Delivered
            }
            Err(HttpError::Cancelled) => Outcome::Cancelled,
            Err(e) => {
                let label = status_label(&e);
                m.alert_delivery_failures.with_label_values(&[rule, "annotation", &label]).inc();
                self.log_once(rule, &format!("annotation-{label}"), || {
                    tracing::error!(rule, error = %e, "annotation refused (logged once per rule and status)");
                });
                Outcome::Failed { reason: if e.is_retriable() { "retries_exhausted" } else { "rejected" } }
            }
        }
    }

    fn log_once(&self, rule: &str, key: &str, log: impl FnOnce()) {
        let first = self.logged.lock().map(|mut l| l.insert((rule.to_string(), key.to_string()))).unwrap_or(true);
        if first {
            log();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redaction_hides_the_key_everywhere() {
        let url = Secret::new("https://oncall.example.com/integrations/v1/formatted_webhook/Zx81kQ2pAbc/");
        let r = Redactor::new(&url);
        assert_eq!(r.shown(), "https://oncall.example.com/integrations/v1/formatted_webhook/<redacted>/");
        let msg = "404 Not Found: cannot POST /integrations/v1/formatted_webhook/Zx81kQ2pAbc/ (key Zx81kQ2pAbc)";
        let s = r.scrub(msg);
        assert!(!s.contains("Zx81kQ2pAbc"), "{s}");
        let e = HttpError::Status {
            url: url.expose().to_string(),
            status: reqwest::StatusCode::NOT_FOUND,
            body: "no such key Zx81kQ2pAbc".into(),
            retry_after: None,
        };
        assert!(!r.describe(&e).contains("Zx81kQ2pAbc"));
        let odd = Redactor::new(&Secret::new("http://h:8/hook?token=abcdef"));
        assert_eq!(odd.shown(), "http://h:8/<redacted>");
        assert!(!odd.scrub("x http://h:8/hook?token=abcdef token=abcdef").contains("abcdef"));
    }

    #[test]
    fn payload_omits_empty_optional_fields() {
        let p = Payload {
            alert_uid: "u".into(),
            title: "t".into(),
            message: "m".into(),
            state: STATE_OK,
            link_to_upstream_details: String::new(),
            image_url: None,
        };
        assert_eq!(serde_json::to_string(&p).unwrap(), r#"{"alert_uid":"u","title":"t","message":"m","state":"ok"}"#);
    }
}
