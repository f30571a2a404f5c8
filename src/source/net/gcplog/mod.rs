//! `type = "gcplog"`: Google Cloud Logging entries (the `LogEntry` JSON a
//! log sink writes to a Pub/Sub topic), as Promtail's `gcplog` target
//! reads them, from a subscription that is pulled ([`pull`]) or that pushes
//! to `POST /gcp/api/v1/push` on the source's listener (here).
//!
//! Each message becomes one spooled line: the entry's `textPayload` when
//! it has one (unless `use_full_line`), else the whole entry. Labels for the
//! source's `relabel` rules: `__gcp_logname`, `__gcp_resource_type`,
//! `__gcp_severity`, `__gcp_resource_labels_<name>` and `__gcp_labels_<name>`,
//! and for a push also `__gcp_message_id`, `__gcp_subscription_name` and
//! `__gcp_attributes_<name>` (names with `.`, `-` and `/` as `_`, then
//! snake_case, as Promtail writes them). The timestamp is the entry's
//! `timestamp` (else `receiveTimestamp`) with `receiver.use_incoming_timestamp`,
//! else the time received.
//!
//! Where Promtail refuses a message (push: 400, which Pub/Sub delivers
//! again for ever) or drops it (pull: acknowledged and lost) because its
//! data is not a `LogEntry`, tailship ships the data as the line, labelled
//! from the message alone, and counts it (`tailship_receiver_unparsed_total`).

pub mod pull;

use std::sync::Arc;

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use base64::Engine;
use serde::Deserialize;

use super::http::HttpReceiver;
use super::metrics::NetMetrics;
use crate::relabel::{Labels, Rules};
use crate::spool::Record;

/// The fields of a Cloud Logging `LogEntry` that label and stamp a line.
#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct LogEntry {
    log_name: String,
    resource: Resource,
    timestamp: String,
    receive_timestamp: String,
    severity: String,
    labels: std::collections::BTreeMap<String, String>,
    text_payload: String,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Resource {
    #[serde(rename = "type")]
    kind: String,
    labels: std::collections::BTreeMap<String, String>,
}

/// What turns a message's data into a spool record.
#[derive(Debug, Clone)]
pub struct Translator {
    pub name: Arc<str>,
    pub labels: Labels,
    pub relabel: Option<Arc<Rules>>,
    pub use_incoming_timestamp: bool,
    pub use_full_line: bool,
}

impl Translator {
    /// One message's data (the entry's JSON) as a record appended to `out`,
    /// with `extra` labels of the message; false when relabelling dropped it.
    pub fn append(&self, data: &[u8], extra: Vec<(String, String)>, tenant: Option<&str>, out: &mut Vec<u8>) -> bool {
        let now = crate::util::now_ns() as i64;
        let mut labels = self.labels.clone();
        for (k, v) in extra {
            labels.insert(k, v);
        }
        let (line, ts) = match serde_json::from_slice::<LogEntry>(data) {
            Ok(e) => {
                for (k, v) in [
                    ("__gcp_logname", &e.log_name),
                    ("__gcp_resource_type", &e.resource.kind),
                    ("__gcp_severity", &e.severity),
                ] {
                    labels.insert(k.into(), v.clone());
                }
                for (k, v) in &e.resource.labels {
                    labels.insert(format!("__gcp_resource_labels_{}", label_name(k)), v.clone());
                }
                for (k, v) in &e.labels {
                    labels.insert(format!("__gcp_labels_{}", label_name(k)), v.clone());
                }
                let stamp = if e.timestamp.is_empty() { &e.receive_timestamp } else { &e.timestamp };
                let ts = chrono::DateTime::parse_from_rfc3339(stamp).ok().and_then(|t| t.timestamp_nanos_opt());
                let line = if !self.use_full_line && !e.text_payload.trim().is_empty() {
                    e.text_payload
                } else {
                    String::from_utf8_lossy(data).into_owned()
                };
                (line, ts)
            }
            Err(_) => {
                NetMetrics::get().unparsed.with_label_values(&[&self.name]).inc();
                (String::from_utf8_lossy(data).into_owned(), None)
            }
        };
        if let Some(rules) = &self.relabel {
            if !rules.apply(&mut labels) {
                return false;
            }
        }
        crate::relabel::strip_internal(&mut labels);
        let ts = if self.use_incoming_timestamp { ts.unwrap_or(now) } else { now };
        Record {
            ts,
            tenant: tenant.map(Into::into),
            labels: labels.iter().map(|(k, v)| (k.as_str().into(), v.as_str().into())).collect(),
            line: line.into(),
            metadata: Vec::new(),
            stream: None,
        }
        .encode(out);
        true
    }
}

/// A Pub/Sub attribute or label name as Promtail writes it in a label name:
/// `.`, `-` and `/` become `_`, then snake_case (`_` before an upper-case
/// letter not after `_`, all lower-cased).
pub fn label_name(k: &str) -> String {
    let k: String = k.chars().map(|c| if matches!(c, '.' | '-' | '/') { '_' } else { c }).collect();
    let mut out = String::with_capacity(k.len() + 4);
    let mut prev = None;
    for c in k.chars() {
        if c.is_uppercase() && prev.is_some_and(|p| p != '_') {
            out.push('_');
        }
        out.extend(c.to_lowercase());
        prev = Some(c);
    }
    crate::util::sanitize_label_name(&out)
}

/// A push subscription's receiver.
pub struct PushReceiver {
    pub http: HttpReceiver,
    pub translator: Translator,
}

/// The routes of a push receiver.
pub fn router(rx: Arc<PushReceiver>) -> axum::Router {
    axum::Router::new()
        .route("/gcp/api/v1/push", axum::routing::post(push))
        .route("/ready", axum::routing::get(|| async { "ready\n" }))
        .with_state(rx)
}

/// The body Pub/Sub posts for each message of a push subscription.
#[derive(Debug, Deserialize)]
struct PushBody {
    message: PushMessage,
    #[serde(default)]
    subscription: String,
}

#[derive(Debug, Deserialize)]
struct PushMessage {
    #[serde(default)]
    attributes: std::collections::BTreeMap<String, String>,
    #[serde(default)]
    data: String,
    /// Pub/Sub sends the id under both names.
    #[serde(default)]
    message_id: String,
    #[serde(default, rename = "messageId")]
    message_id_camel: String,
}

async fn push(State(rx): State<Arc<PushReceiver>>, headers: HeaderMap, body: axum::body::Body) -> Response {
    let http = &rx.http;
    let (tenant, body, _held) = match http.accept(&headers, body).await {
        Ok(a) => a,
        Err(r) => return *r,
    };
    let mut m: PushBody = match serde_json::from_slice(&body) {
        Ok(m) => m,
        Err(e) => return http.refuse(StatusCode::BAD_REQUEST, "bad_request", &format!("not a push message: {e}")),
    };
    if m.message.message_id.is_empty() {
        m.message.message_id = std::mem::take(&mut m.message.message_id_camel);
    }
    let missing = [("message.data", &m.message.data), ("message.message_id", &m.message.message_id)]
        .into_iter()
        .chain([("subscription", &m.subscription)])
        .find(|(_, v)| v.is_empty());
    if let Some((k, _)) = missing {
        return http.refuse(StatusCode::BAD_REQUEST, "bad_request", &format!("the push message has no {k}"));
    }
    let data = match base64::engine::general_purpose::STANDARD.decode(m.message.data.trim()) {
        Ok(d) => d,
        Err(e) => return http.refuse(StatusCode::BAD_REQUEST, "bad_request", &format!("message.data: {e}")),
    };
    let mut extra = vec![
        ("__gcp_message_id".to_string(), m.message.message_id),
        ("__gcp_subscription_name".into(), m.subscription),
    ];
    for (k, v) in m.message.attributes {
        extra.push((format!("__gcp_attributes_{}", label_name(&k)), v));
    }
    if let Some(t) = &tenant {
        extra.push(("__tenant_id__".into(), t.clone()));
    }
    let mut out = Vec::with_capacity(data.len() + 256);
    if !rx.translator.append(&data, extra, tenant.as_deref(), &mut out) {
        NetMetrics::get().refused.with_label_values(&[&http.name, "relabel_drop"]).inc();
        return StatusCode::NO_CONTENT.into_response();
    }
    http.spool(out, 1, StatusCode::NO_CONTENT).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attribute_names_as_promtail_writes_them() {
        assert_eq!(label_name("logging.googleapis.com/timestamp"), "logging_googleapis_com_timestamp");
        assert_eq!(label_name("projectId"), "project_id");
        assert_eq!(label_name("instance-id"), "instance_id");
        assert_eq!(label_name("Already_Snake"), "already_snake");
    }

    fn translator() -> Translator {
        Translator {
            name: "g".into(),
            labels: Labels::new(),
            relabel: None,
            use_incoming_timestamp: true,
            use_full_line: false,
        }
    }

    fn decode(out: &[u8]) -> (i64, String, Vec<(String, String)>) {
        let r = crate::spool::Record::decode(out.strip_suffix(b"\n").expect("one record")).expect("a record");
        (r.ts, r.line.into_owned(), r.labels.into_iter().map(|(k, v)| (k.into_owned(), v.into_owned())).collect())
    }

    #[test]
    fn a_text_payload_is_the_line_and_the_entry_stamps_it() {
        let entry = br#"{"logName":"projects/p/logs/syslog","resource":{"type":"gce_instance","labels":{"zone":"us-1"}},"timestamp":"2024-05-01T10:00:00.5Z","severity":"ERROR","textPayload":"disk full"}"#;
        let mut out = Vec::new();
        assert!(translator().append(entry, Vec::new(), None, &mut out));
        let (ts, line, labels) = decode(&out);
        assert_eq!(line, "disk full");
        assert_eq!(ts, 1_714_557_600_500_000_000);
        assert!(labels.is_empty(), "internal labels are stripped after relabelling: {labels:?}");
        let mut full = translator();
        full.use_full_line = true;
        let mut out = Vec::new();
        full.append(entry, Vec::new(), None, &mut out);
        assert_eq!(decode(&out).1, String::from_utf8_lossy(entry));
    }

    #[test]
    fn data_that_is_not_an_entry_is_shipped_as_it_is() {
        let mut out = Vec::new();
        assert!(translator().append(b"plain text, not JSON", Vec::new(), None, &mut out));
        assert_eq!(decode(&out).1, "plain text, not JSON");
    }
}
