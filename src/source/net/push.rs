//! `type = "loki_push"`: `POST /loki/api/v1/push` as Loki takes it, so
//! tailship can be a relay: JSON or protobuf (snappy), gzip, the sender's
//! tenant kept (or the source's `tenant_id` instead), answered 204 once the
//! lines are on disk, 400 with a message for a body that does not parse,
//! 429 when the spool is full.

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::Response;
use prost::Message;
use serde::de::{self, Deserializer, SeqAccess, Visitor};
use serde::Deserialize;

use super::http::HttpReceiver;
use super::proto;
use crate::spool::Record;
use crate::util::is_valid_label_name;

/// The routes of a push receiver.
pub fn router(rx: Arc<HttpReceiver>) -> axum::Router {
    axum::Router::new()
        .route("/loki/api/v1/push", axum::routing::post(push))
        .route("/api/prom/push", axum::routing::post(push))
        .route("/ready", axum::routing::get(|| async { "ready\n" }))
        .with_state(rx)
}

async fn push(State(rx): State<Arc<HttpReceiver>>, headers: HeaderMap, body: axum::body::Body) -> Response {
    let (tenant, body) = match rx.accept(&headers, body).await {
        Ok(a) => a,
        Err(r) => return *r,
    };
    let ctype = headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("").to_ascii_lowercase();
    let decoded = if ctype.starts_with("application/x-protobuf") {
        decode_protobuf(&body, tenant.as_deref())
    } else {
        decode_json(&body, tenant.as_deref())
    };
    match decoded {
        Ok((encoded, lines)) => rx.spool(encoded, lines, StatusCode::NO_CONTENT).await,
        Err(message) => rx.refuse(StatusCode::BAD_REQUEST, "bad_request", &message),
    }
}

/// Checks a stream's label names, as Loki does (a bad one is a 400).
fn check_labels<'a>(labels: impl IntoIterator<Item = &'a str>) -> Result<(), String> {
    for name in labels {
        if !is_valid_label_name(name) {
            return Err(format!("error parsing labels: invalid label name {name:?}"));
        }
    }
    Ok(())
}

/// A protobuf body (snappy block format, as Loki takes it) as spool records.
pub fn decode_protobuf(body: &[u8], tenant: Option<&str>) -> Result<(Vec<u8>, u64), String> {
    let raw = snap::raw::Decoder::new().decompress_vec(body).map_err(|e| format!("snappy: {e}"))?;
    let req = proto::PushRequest::decode(raw.as_slice()).map_err(|e| format!("protobuf: {e}"))?;
    let mut out = Vec::with_capacity(raw.len() + raw.len() / 2);
    let mut lines = 0;
    for s in &req.streams {
        let sel = crate::logql::parse_log_query(&s.labels)
            .map_err(|e| format!("error parsing labels {:?}: {e}", s.labels))?;
        let labels: Vec<(Cow<'_, str>, Cow<'_, str>)> =
            sel.matchers.iter().map(|m| (Cow::Borrowed(m.name.as_str()), Cow::Borrowed(m.value.as_str()))).collect();
        check_labels(labels.iter().map(|(k, _)| k.as_ref()))?;
        for e in &s.entries {
            let ts = e.timestamp.as_ref().map_or(0, |t| t.seconds.saturating_mul(1_000_000_000) + t.nanos as i64);
            let r = Record {
                ts,
                tenant: tenant.map(Cow::Borrowed),
                labels: labels.clone(),
                line: String::from_utf8_lossy(&e.line),
                metadata: e
                    .structured_metadata
                    .iter()
                    .map(|p| (Cow::Borrowed(p.name.as_str()), Cow::Borrowed(p.value.as_str())))
                    .collect(),
            };
            r.encode(&mut out);
            lines += 1;
        }
    }
    Ok((out, lines))
}

#[derive(Deserialize)]
struct JsonPush<'a> {
    #[serde(borrow)]
    streams: Vec<JsonStream<'a>>,
}

#[derive(Deserialize)]
struct JsonStream<'a> {
    #[serde(borrow, default)]
    stream: JsonMeta<'a>,
    #[serde(borrow, default)]
    values: Vec<JsonEntry<'a>>,
}

/// `["<ns>", "line"]` or `["<ns>", "line", {"name": "value"}]`.
struct JsonEntry<'a> {
    ts: i64,
    line: Cow<'a, str>,
    metadata: Vec<(Cow<'a, str>, Cow<'a, str>)>,
}

impl<'de: 'a, 'a> Deserialize<'de> for JsonEntry<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = JsonEntry<'a>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("[\"<unix ns>\", \"line\"] with an optional object of structured metadata")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let ts: Cow<'a, str> = seq.next_element()?.ok_or_else(|| de::Error::invalid_length(0, &self))?;
                let ts = ts
                    .parse::<i64>()
                    .map_err(|_| de::Error::custom(format!("timestamp {ts:?} is not unix nanoseconds")))?;
                let line: Cow<'a, str> = seq.next_element()?.ok_or_else(|| de::Error::invalid_length(1, &self))?;
                let metadata = seq.next_element::<JsonMeta<'a>>()?.map(|m| m.0).unwrap_or_default();
                if seq.next_element::<de::IgnoredAny>()?.is_some() {
                    return Err(de::Error::invalid_length(4, &self));
                }
                Ok(JsonEntry { ts, line, metadata })
            }
        }
        d.deserialize_seq(V(std::marker::PhantomData))
    }
}

/// An object of string to string, in order.
#[derive(Default)]
struct JsonMeta<'a>(Vec<(Cow<'a, str>, Cow<'a, str>)>);

impl<'de: 'a, 'a> Deserialize<'de> for JsonMeta<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = JsonMeta<'a>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an object of strings")
            }
            fn visit_map<A: de::MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut out = Vec::new();
                while let Some((k, v)) = map.next_entry::<Cow<'a, str>, Cow<'a, str>>()? {
                    out.push((k, v));
                }
                Ok(JsonMeta(out))
            }
        }
        d.deserialize_map(V(std::marker::PhantomData))
    }
}

/// A JSON body as spool records.
pub fn decode_json(body: &[u8], tenant: Option<&str>) -> Result<(Vec<u8>, u64), String> {
    let req: JsonPush<'_> = serde_json::from_slice(body).map_err(|e| format!("error parsing push request: {e}"))?;
    let mut out = Vec::with_capacity(body.len() + body.len() / 4);
    let mut lines = 0;
    for s in req.streams {
        let stream = s.stream.0;
        check_labels(stream.iter().map(|(k, _)| k.as_ref()))?;
        for e in s.values {
            let r = Record {
                ts: e.ts,
                tenant: tenant.map(Cow::Borrowed),
                labels: stream.clone(),
                line: e.line,
                metadata: e.metadata,
            };
            r.encode(&mut out);
            lines += 1;
        }
    }
    Ok((out, lines))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn records(encoded: &[u8]) -> Vec<Record<'_>> {
        encoded.split(|&b| b == b'\n').filter(|l| !l.is_empty()).map(|l| Record::decode(l).unwrap()).collect()
    }

    #[test]
    fn json_bodies_keep_labels_metadata_and_tenant() {
        let body = br#"{"streams":[{"stream":{"job":"a","host":"h"},"values":[["1700000000000000001","one"],["1700000000000000002","two",{"trace_id":"t1"}]]}]}"#;
        let (enc, n) = decode_json(body, Some("team")).unwrap();
        assert_eq!(n, 2);
        let r = records(&enc);
        assert_eq!(r[0].line, "one");
        assert_eq!(r[0].ts, 1_700_000_000_000_000_001);
        assert_eq!(r[1].metadata, vec![(Cow::Borrowed("trace_id"), Cow::Borrowed("t1"))]);
        assert_eq!(r[1].tenant.as_deref(), Some("team"));
        assert_eq!(r[1].labels.len(), 2);
    }

    #[test]
    fn bad_json_bodies_are_refused_with_a_message() {
        for bad in [
            &br#"{"streams":[{"stream":{"a-b":"x"},"values":[["1","l"]]}]}"#[..],
            br#"{"streams":[{"stream":{},"values":[[1,"l"]]}]}"#,
            b"nope",
        ] {
            assert!(decode_json(bad, None).is_err(), "{}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn protobuf_bodies_decode_as_promtail_sends_them() {
        let req = proto::PushRequest {
            streams: vec![proto::StreamAdapter {
                labels: r#"{job="app", host="h1"}"#.into(),
                entries: vec![proto::EntryAdapter {
                    timestamp: Some(proto::Timestamp { seconds: 1_700_000_000, nanos: 5 }),
                    line: b"hello \xff".to_vec(),
                    structured_metadata: vec![proto::LabelPair { name: "k".into(), value: "v".into() }],
                }],
                hash: 0,
            }],
        };
        let body = snap::raw::Encoder::new().compress_vec(&req.encode_to_vec()).unwrap();
        let (enc, n) = decode_protobuf(&body, None).unwrap();
        assert_eq!(n, 1);
        let r = records(&enc);
        assert_eq!(r[0].ts, 1_700_000_000_000_000_005);
        assert_eq!(r[0].line, "hello \u{fffd}");
        assert!(r[0].labels.contains(&(Cow::Borrowed("job"), Cow::Borrowed("app"))));
        assert_eq!(r[0].metadata.len(), 1);
        assert!(decode_protobuf(b"garbage", None).is_err());
    }
}
