//! `type = "otlp"`: OTLP/HTTP logs on `POST /v1/logs`, protobuf or JSON
//! (optionally gzip). Each log record becomes a spooled line: its body
//! (a string as it is, anything else as JSON), its time (else its observed
//! time, else the time received), `level` from its severity, and its
//! resource, scope and log attributes as labels (those named in
//! `receiver.attribute_labels`, dots made underscores) or structured
//! metadata (the others, with `trace_id` and `span_id`). Answered 200 with
//! an empty `ExportLogsServiceResponse` once on disk, 400 for a body that
//! does not parse, 429 when the spool is full.

mod json;
pub mod proto;

use std::borrow::Cow;
use std::sync::Arc;

use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use prost::Message;

use super::http::HttpReceiver;
use crate::spool::{Encoder, Overflow};
use proto::{AnyValue, ExportLogsServiceRequest, KeyValue};

/// An OTLP receiver: the HTTP part and which attributes become labels.
pub struct OtlpReceiver {
    pub http: HttpReceiver,
    pub attribute_labels: Vec<String>,
}

pub fn router(rx: Arc<OtlpReceiver>) -> axum::Router {
    axum::Router::new().route("/v1/logs", axum::routing::post(export)).with_state(rx)
}

async fn export(State(rx): State<Arc<OtlpReceiver>>, headers: HeaderMap, body: axum::body::Body) -> Response {
    let http = &rx.http;
    let (tenant, body, _held) = match http.accept(&headers, body).await {
        Ok(a) => a,
        Err(r) => return *r,
    };
    let ctype = headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("").to_ascii_lowercase();
    let is_json = ctype.starts_with("application/json");
    let req = if is_json {
        json::decode(&body)
    } else {
        ExportLogsServiceRequest::decode(body.as_slice()).map_err(|e| format!("protobuf: {e}"))
    };
    let req = match req {
        Ok(r) => r,
        Err(message) => return http.refuse(StatusCode::BAD_REQUEST, "bad_request", &message),
    };
    let mut enc = Encoder::new(&http.stamps, http.expand_limit());
    if let Err(o) = records(&req, tenant.as_deref(), &rx.attribute_labels, crate::util::now_ns() as i64, &mut enc) {
        return http.refuse(
            StatusCode::PAYLOAD_TOO_LARGE,
            "too_large",
            &format!("{o}: each record carries its resource's and scope's attributes; send fewer records per request"),
        );
    }
    drop(req);
    let (encoded, lines) = enc.finish();
    let answer = http.spool(encoded, lines, StatusCode::OK).await;
    if answer.status() != StatusCode::OK {
        return answer;
    }
    // An empty ExportLogsServiceResponse: full success.
    if is_json {
        (StatusCode::OK, [(header::CONTENT_TYPE, "application/json")], "{}").into_response()
    } else {
        (StatusCode::OK, [(header::CONTENT_TYPE, "application/x-protobuf")], Vec::<u8>::new()).into_response()
    }
}

/// `level` from a record's severity: its text, else its number's range.
fn level(text: &str, number: i32) -> Option<String> {
    if !text.is_empty() {
        return Some(text.to_ascii_lowercase());
    }
    Some(
        match number {
            1..=4 => "trace",
            5..=8 => "debug",
            9..=12 => "info",
            13..=16 => "warn",
            17..=20 => "error",
            21..=24 => "fatal",
            _ => return None,
        }
        .to_string(),
    )
}

/// Spool lines for every log record of `req` into `enc` (refused once
/// they pass its limit: attributes repeat on every record).
pub fn records(
    req: &ExportLogsServiceRequest,
    tenant: Option<&str>,
    as_labels: &[String],
    now: i64,
    enc: &mut Encoder<'_>,
) -> Result<(), Overflow> {
    for rl in &req.resource_logs {
        let resource: &[KeyValue] = rl.resource.as_ref().map_or(&[], |r| &r.attributes);
        for sl in &rl.scope_logs {
            let scope_attrs: &[KeyValue] = sl.scope.as_ref().map_or(&[], |s| &s.attributes);
            for lr in &sl.log_records {
                let mut labels: Vec<(Cow<'_, str>, Cow<'_, str>)> = Vec::new();
                let mut metadata: Vec<(Cow<'_, str>, Cow<'_, str>)> = Vec::new();
                for kv in resource.iter().chain(scope_attrs).chain(&lr.attributes) {
                    let value = kv.value.as_ref().map(proto::to_text).unwrap_or_default();
                    let name = crate::util::sanitize_label_name(&kv.key.replace('.', "_"));
                    let to = if as_labels.contains(&kv.key) { &mut labels } else { &mut metadata };
                    to.retain(|(k, _)| *k != name);
                    to.push((name.into(), value.into()));
                }
                if let Some(scope) = sl.scope.as_ref().filter(|s| !s.name.is_empty()) {
                    metadata.push(("scope_name".into(), scope.name.as_str().into()));
                }
                if !lr.trace_id.is_empty() {
                    metadata.push(("trace_id".into(), hex::encode(&lr.trace_id).into()));
                }
                if !lr.span_id.is_empty() {
                    metadata.push(("span_id".into(), hex::encode(&lr.span_id).into()));
                }
                if let Some(l) = level(&lr.severity_text, lr.severity_number) {
                    labels.retain(|(k, _)| k != "level");
                    labels.push(("level".into(), l.into()));
                }
                let ts = [lr.time_unix_nano, lr.observed_time_unix_nano]
                    .into_iter()
                    .find(|&t| t > 0)
                    .map_or(now, |t| t.min(i64::MAX as u64) as i64);
                let line = lr.body.as_ref().map(proto::to_text).unwrap_or_default();
                let stream = enc.stream(tenant, &labels)?;
                enc.line(stream, ts, &line, metadata)?;
            }
        }
    }
    Ok(())
}

/// An attribute's value (for tests).
pub fn string_value(s: &str) -> AnyValue {
    AnyValue { value: Some(proto::Value::StringValue(s.to_string())) }
}

#[cfg(test)]
mod tests;
