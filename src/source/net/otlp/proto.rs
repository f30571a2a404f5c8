//! The OTLP logs messages (`opentelemetry.proto.collector.logs.v1`) that
//! `/v1/logs` takes: opentelemetry-proto's prost types (the crate the trace
//! exporter already brings), not a copy of them.

pub use opentelemetry_proto::tonic::collector::logs::v1::ExportLogsServiceRequest;
pub use opentelemetry_proto::tonic::common::v1::any_value::Value;
pub use opentelemetry_proto::tonic::common::v1::{AnyValue, ArrayValue, InstrumentationScope, KeyValue, KeyValueList};
pub use opentelemetry_proto::tonic::logs::v1::{LogRecord, ResourceLogs, ScopeLogs};
pub use opentelemetry_proto::tonic::resource::v1::Resource;

/// A value as JSON (maps and lists nested), for text.
pub fn to_json(v: &AnyValue) -> serde_json::Value {
    use base64::Engine;
    match &v.value {
        None => serde_json::Value::Null,
        Some(Value::StringValue(s)) => s.clone().into(),
        Some(Value::BoolValue(b)) => (*b).into(),
        Some(Value::IntValue(i)) => (*i).into(),
        Some(Value::DoubleValue(d)) => (*d).into(),
        Some(Value::ArrayValue(a)) => a.values.iter().map(to_json).collect::<Vec<_>>().into(),
        Some(Value::KvlistValue(l)) => l
            .values
            .iter()
            .map(|kv| (kv.key.clone(), kv.value.as_ref().map_or(serde_json::Value::Null, to_json)))
            .collect::<serde_json::Map<_, _>>()
            .into(),
        Some(Value::BytesValue(b)) => base64::engine::general_purpose::STANDARD.encode(b).into(),
    }
}

/// A value as text: a string as it is, anything else as JSON.
pub fn to_text(v: &AnyValue) -> String {
    match &v.value {
        Some(Value::StringValue(s)) => s.clone(),
        None => String::new(),
        _ => to_json(v).to_string(),
    }
}
