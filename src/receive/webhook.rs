//! The formatted alert webhook: `POST /integrations/v1/formatted_webhook/<key>/`
//! takes a payload whose fields are all optional strings, stores it per key
//! and prints one line per alert; `GET` on the same path returns what was
//! stored, so tests can read it. The key is a secret and is never printed.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Deserialize;

use super::reply::text;
use super::{Shared, MAX_ALERTS_PER_KEY};

/// Distinct keys remembered when any key is accepted.
const MAX_WEBHOOK_KEYS: usize = 1000;

/// The recognised fields of a formatted webhook payload.
#[derive(Debug, Deserialize)]
struct FormattedAlert {
    alert_uid: Option<String>,
    title: Option<String>,
    #[allow(dead_code)] // checked for its type only
    image_url: Option<String>,
    state: Option<String>,
    #[allow(dead_code)]
    link_to_upstream_details: Option<String>,
    #[allow(dead_code)]
    message: Option<String>,
}

fn key_allowed(sh: &Shared, key: &str) -> bool {
    sh.opts.webhook_keys.is_empty() || sh.opts.webhook_keys.iter().any(|k| k.expose() == key)
}

/// Replaces control characters so one alert stays one line.
fn one_line(s: &str) -> String {
    s.chars().map(|c| if c.is_control() { ' ' } else { c }).collect()
}

pub(super) async fn post(
    State(sh): State<Arc<Shared>>,
    Path(key): Path<String>,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    if !key_allowed(&sh, &key) {
        return text(StatusCode::FORBIDDEN, "unknown integration key");
    }
    let body = match body {
        Ok(b) => b,
        Err(e) => return text(e.status(), e.body_text()),
    };
    let value: serde_json::Value = match serde_json::from_slice(&body) {
        Ok(v) => v,
        Err(e) => return text(StatusCode::BAD_REQUEST, format!("invalid JSON: {e}")),
    };
    if !value.is_object() {
        return text(StatusCode::BAD_REQUEST, "the payload must be a JSON object");
    }
    let alert: FormattedAlert = match serde_path_to_error::deserialize(&value) {
        Ok(a) => a,
        Err(e) => return text(StatusCode::BAD_REQUEST, format!("field {}: {}", e.path(), e.inner())),
    };
    if sh.opts.print_alerts {
        use std::io::Write;
        let line = format!(
            "alert [{}] {}: {}\n",
            one_line(alert.state.as_deref().unwrap_or("-")),
            one_line(alert.alert_uid.as_deref().unwrap_or("-")),
            one_line(alert.title.as_deref().unwrap_or("")),
        );
        let mut out = std::io::stdout().lock();
        // A closed stdout must not fail the webhook.
        let _ = out.write_all(line.as_bytes()).and_then(|()| out.flush());
    }
    tracing::debug!(alert_uid = ?alert.alert_uid, state = ?alert.state, "alert received");
    {
        let mut all = sh.alerts.lock().unwrap_or_else(|p| p.into_inner());
        if !all.contains_key(&key) && all.len() >= MAX_WEBHOOK_KEYS {
            return text(StatusCode::TOO_MANY_REQUESTS, "too many integration keys in use");
        }
        let list = all.entry(key).or_default();
        if list.len() >= MAX_ALERTS_PER_KEY {
            list.pop_front();
        }
        list.push_back(value);
    }
    sh.counters.alerts.fetch_add(1, Ordering::Relaxed);
    (StatusCode::OK, "Ok.").into_response()
}

pub(super) async fn get(State(sh): State<Arc<Shared>>, Path(key): Path<String>) -> Response {
    if !key_allowed(&sh, &key) {
        return text(StatusCode::FORBIDDEN, "unknown integration key");
    }
    Json(stored(&sh, &key)).into_response()
}

pub(super) fn stored(sh: &Shared, key: &str) -> Vec<serde_json::Value> {
    let all = sh.alerts.lock().unwrap_or_else(|p| p.into_inner());
    all.get(key).map(|l| l.iter().cloned().collect()).unwrap_or_default()
}
