//! OTLP/JSON (camelCase field names; 64-bit integers as strings or numbers;
//! trace and span ids in hex) into the protobuf types.

use serde_json::Value as Json;

use super::proto::{
    AnyValue, ArrayValue, ExportLogsServiceRequest, InstrumentationScope, KeyValue, KeyValueList, LogRecord, Resource,
    ResourceLogs, ScopeLogs, Value,
};

pub fn decode(body: &[u8]) -> Result<ExportLogsServiceRequest, String> {
    let doc: Json = serde_json::from_slice(body).map_err(|e| format!("JSON: {e}"))?;
    let mut req = ExportLogsServiceRequest::default();
    for rl in list(&doc, "resourceLogs")? {
        let resource = rl
            .get("resource")
            .map(|r| Ok::<_, String>(Resource { attributes: attributes(r)?, ..Default::default() }))
            .transpose()?;
        let mut out = ResourceLogs { resource, scope_logs: Vec::new(), ..Default::default() };
        for sl in list(rl, "scopeLogs")? {
            let scope = match sl.get("scope") {
                Some(s) => Some(InstrumentationScope {
                    name: string(s, "name"),
                    version: string(s, "version"),
                    attributes: attributes(s)?,
                    ..Default::default()
                }),
                None => None,
            };
            let mut records = Vec::new();
            for lr in list(sl, "logRecords")? {
                records.push(LogRecord {
                    time_unix_nano: uint(lr, "timeUnixNano")?,
                    observed_time_unix_nano: uint(lr, "observedTimeUnixNano")?,
                    severity_number: uint(lr, "severityNumber")? as i32,
                    severity_text: string(lr, "severityText"),
                    body: lr.get("body").map(any).transpose()?,
                    attributes: attributes(lr)?,
                    trace_id: hex::decode(string(lr, "traceId")).map_err(|e| format!("traceId: {e}"))?,
                    span_id: hex::decode(string(lr, "spanId")).map_err(|e| format!("spanId: {e}"))?,
                    ..Default::default()
                });
            }
            out.scope_logs.push(ScopeLogs { scope, log_records: records, ..Default::default() });
        }
        req.resource_logs.push(out);
    }
    Ok(req)
}

fn list<'a>(v: &'a Json, key: &str) -> Result<&'a [Json], String> {
    match v.get(key) {
        None | Some(Json::Null) => Ok(&[]),
        Some(Json::Array(a)) => Ok(a),
        Some(_) => Err(format!("{key} is not a list")),
    }
}

fn string(v: &Json, key: &str) -> String {
    v.get(key).and_then(Json::as_str).unwrap_or_default().to_string()
}

/// A 64-bit integer, as a JSON string or number (absent: 0).
fn uint(v: &Json, key: &str) -> Result<u64, String> {
    match v.get(key) {
        None | Some(Json::Null) => Ok(0),
        Some(Json::String(s)) => s.parse().map_err(|_| format!("{key}: {s:?} is not an integer")),
        Some(Json::Number(n)) => n.as_u64().ok_or_else(|| format!("{key}: {n} is not an unsigned integer")),
        Some(_) => Err(format!("{key} is not an integer")),
    }
}

fn attributes(v: &Json) -> Result<Vec<KeyValue>, String> {
    list(v, "attributes")?.iter().map(key_value).collect()
}

fn key_value(kv: &Json) -> Result<KeyValue, String> {
    Ok(KeyValue { key: string(kv, "key"), value: kv.get("value").map(any).transpose()? })
}

fn any(v: &Json) -> Result<AnyValue, String> {
    use base64::Engine;
    let value = if let Some(s) = v.get("stringValue") {
        Some(Value::StringValue(s.as_str().unwrap_or_default().to_string()))
    } else if let Some(b) = v.get("boolValue") {
        Some(Value::BoolValue(b.as_bool().unwrap_or_default()))
    } else if v.get("intValue").is_some() {
        Some(Value::IntValue(match v.get("intValue") {
            Some(Json::String(s)) => s.parse().map_err(|_| format!("intValue {s:?}"))?,
            Some(n) => n.as_i64().ok_or("intValue is not an integer")?,
            None => 0,
        }))
    } else if let Some(d) = v.get("doubleValue") {
        Some(Value::DoubleValue(d.as_f64().unwrap_or_default()))
    } else if let Some(a) = v.get("arrayValue") {
        Some(Value::ArrayValue(ArrayValue { values: list(a, "values")?.iter().map(any).collect::<Result<_, _>>()? }))
    } else if let Some(l) = v.get("kvlistValue") {
        Some(Value::KvlistValue(KeyValueList {
            values: list(l, "values")?.iter().map(key_value).collect::<Result<_, _>>()?,
        }))
    } else if let Some(b) = v.get("bytesValue") {
        let text = b.as_str().unwrap_or_default();
        Some(Value::BytesValue(
            base64::engine::general_purpose::STANDARD.decode(text).map_err(|e| format!("bytesValue: {e}"))?,
        ))
    } else {
        None
    };
    Ok(AnyValue { value })
}
