//! `[tracing]`: spans of the agent's own work (pushes, queries) sent as
//! OTLP/HTTP traces, as Promtail's `tracing.enabled` sends them to Jaeger.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(default)]
pub struct TracingConfig {
    pub enabled: bool,
    /// An OTLP/HTTP collector (Jaeger, Tempo, the OpenTelemetry Collector);
    /// spans go to `<endpoint>/v1/traces`.
    pub endpoint: String,
    /// The share of traces kept, 0 to 1.
    pub sampling_ratio: f64,
    /// `service.name` of the spans.
    pub service_name: String,
}

impl Default for TracingConfig {
    fn default() -> Self {
        Self {
            enabled: false,
            endpoint: "http://127.0.0.1:4318".into(),
            sampling_ratio: 1.0,
            service_name: "tailship".into(),
        }
    }
}

impl TracingConfig {
    /// Where spans are posted.
    pub fn traces_url(&self) -> String {
        let base = self.endpoint.trim_end_matches('/');
        if base.ends_with("/v1/traces") {
            base.to_string()
        } else {
            format!("{base}/v1/traces")
        }
    }
}

pub(super) fn validate_tracing(t: &TracingConfig, e: &mut dyn FnMut(&str, String)) {
    if !matches!(reqwest::Url::parse(&t.endpoint), Ok(u) if u.scheme() == "http" || u.scheme() == "https") {
        e("tracing.endpoint", format!("`{}` is not an http or https URL", t.endpoint));
    }
    if !(0.0..=1.0).contains(&t.sampling_ratio) {
        e("tracing.sampling_ratio", format!("{} is not between 0 and 1", t.sampling_ratio));
    }
}
