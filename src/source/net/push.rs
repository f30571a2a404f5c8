//! `type = "loki_push"`: `POST /loki/api/v1/push` as Loki takes it, so
//! tailship can be a relay: JSON or protobuf (snappy), gzip, the sender's
//! tenant kept (or the source's `tenant_id` instead), answered 204 once the
//! lines are on disk, 400 with a message for a body that does not parse,
//! 429 when the spool is full. Lines keep the time they were pushed with,
//! or with `receiver.use_incoming_timestamp = false` (as Promtail's
//! default) get the time their request was received.
//!
//! Each pushed stream's labels are then made as Promtail's `loki_push_api`
//! makes them (see [`StreamLabels`]): the source's `labels` replace pushed
//! labels of the same name, the source's `relabel` rules run over the
//! result, and labels starting `__` are removed.

use std::borrow::Cow;
use std::sync::Arc;

use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::Response;

use super::http::HttpReceiver;
use crate::lokipush::{self, proto, proto::ProtoError};
use crate::relabel::{Labels, Rules};
use crate::spool::{Encoder, Overflow};

/// A push receiver: the HTTP part every receiver shares, and what it
/// makes of each pushed stream's labels.
#[derive(Debug)]
pub struct PushReceiver {
    pub http: HttpReceiver,
    pub streams: StreamLabels,
}

/// What a pushed stream's labels become, as in Promtail's `loki_push_api`:
/// the source's `labels` replace pushed labels of the same name; the
/// source's `relabel` rules then run over them all (a stream they drop, or
/// leave with no label, is not kept); labels starting `__` are removed.
#[derive(Debug, Default)]
pub struct StreamLabels {
    pub labels: Labels,
    pub relabel: Option<Arc<Rules>>,
}

/// A stream's labels as the spool takes them.
type Pairs<'a> = Vec<(Cow<'a, str>, Cow<'a, str>)>;

impl StreamLabels {
    /// The labels `pushed` become; `None` when the rules drop the stream.
    fn apply<'a>(&self, pushed: Pairs<'a>) -> Option<Pairs<'a>> {
        let internal = pushed.iter().any(|(k, _)| k.starts_with("__"));
        if self.relabel.is_none() && self.labels.is_empty() && !internal {
            return Some(pushed);
        }
        let mut all: Labels = pushed.into_iter().map(|(k, v)| (k.into_owned(), v.into_owned())).collect();
        all.extend(self.labels.iter().map(|(k, v)| (k.clone(), v.clone())));
        if let Some(rules) = &self.relabel {
            if !rules.apply(&mut all) || all.is_empty() {
                return None;
            }
        }
        crate::relabel::strip_internal(&mut all);
        Some(all.into_iter().map(|(k, v)| (Cow::Owned(k), Cow::Owned(v))).collect())
    }
}

/// The routes of a push receiver.
pub fn router(rx: Arc<PushReceiver>) -> axum::Router {
    axum::Router::new()
        .route("/loki/api/v1/push", axum::routing::post(push))
        .route("/api/prom/push", axum::routing::post(push))
        .route("/ready", axum::routing::get(|| async { "ready\n" }))
        .with_state(rx)
}

async fn push(State(push): State<Arc<PushReceiver>>, headers: HeaderMap, body: axum::body::Body) -> Response {
    let rx = &push.http;
    let (tenant, body, mut held) = match rx.accept(&headers, body).await {
        Ok(a) => a,
        Err(r) => return *r,
    };
    let ctype = headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("").to_ascii_lowercase();
    let received = (!rx.incoming_time).then(|| crate::util::now_ns() as i64);
    let mut enc = Encoder::new(&rx.stamps, rx.expand_limit()).at(received);
    let decoded = if ctype.starts_with("application/x-protobuf") {
        // What it decompresses to is held too (at most max_message_bytes: checked before it is).
        let size = snap::raw::decompress_len(&body).unwrap_or(0).min(rx.max_body);
        if !held.grow(size) {
            return rx.busy();
        }
        decode_protobuf(&body, tenant.as_deref(), rx.max_body, &push.streams, &mut enc)
    } else {
        decode_json(&body, tenant.as_deref(), &push.streams, &mut enc)
    };
    drop(body);
    match decoded {
        Ok(dropped) => {
            if dropped > 0 {
                super::metrics::NetMetrics::get()
                    .refused
                    .with_label_values(&[&*rx.name, "relabel_drop"])
                    .inc_by(dropped);
            }
            let (encoded, lines) = enc.finish();
            if !held.grow(encoded.len()) {
                return rx.busy();
            }
            rx.spool(encoded, lines, StatusCode::NO_CONTENT).await
        }
        Err(Refused::Bad(message)) => rx.refuse(StatusCode::BAD_REQUEST, "bad_request", &message),
        Err(Refused::TooLarge(message)) => rx.refuse(StatusCode::PAYLOAD_TOO_LARGE, "too_large", &message),
    }
}

/// Why a body was refused.
#[derive(Debug)]
pub enum Refused {
    /// It does not parse, or the service would refuse it (400).
    Bad(String),
    /// It is, or expands to, more than the receiver takes (413).
    TooLarge(String),
}

impl From<Overflow> for Refused {
    fn from(o: Overflow) -> Self {
        Refused::TooLarge(format!(
            "{o} (receiver.max_message_bytes, spool.max_bytes): send fewer lines per request, or fewer labels"
        ))
    }
}

/// A protobuf body (snappy block format, as Loki takes it) as spool lines,
/// each stream labelled by `streams`: its decompressed size is held to
/// `max` before anything is allocated. `Ok`: the lines the rules dropped.
pub fn decode_protobuf(
    body: &[u8],
    tenant: Option<&str>,
    max: usize,
    streams: &StreamLabels,
    enc: &mut Encoder<'_>,
) -> Result<u64, Refused> {
    let req = proto::decode_snappy(body, max).map_err(|e| match e {
        e @ ProtoError::TooLarge { .. } => Refused::TooLarge(e.to_string()),
        e => Refused::Bad(e.to_string()),
    })?;
    let mut dropped = 0;
    for s in &req.streams {
        let labels: Pairs<'_> =
            s.label_pairs().map_err(Refused::Bad)?.into_iter().map(|(k, v)| (Cow::Owned(k), Cow::Owned(v))).collect();
        check(&labels)?;
        let Some(labels) = streams.apply(labels) else {
            dropped += s.entries.len() as u64;
            continue;
        };
        let stream = enc.stream(tenant, &labels)?;
        for e in &s.entries {
            let metadata = e
                .structured_metadata
                .iter()
                .map(|p| (Cow::Borrowed(p.name.as_str()), Cow::Borrowed(p.value.as_str())))
                .collect();
            enc.line(stream, e.unix_nanos(), &String::from_utf8_lossy(&e.line), metadata)?;
        }
    }
    Ok(dropped)
}

/// A pushed stream's labels as they come, held to the service's rules
/// (what the relay acknowledges it can deliver).
fn check(labels: &Pairs<'_>) -> Result<(), Refused> {
    lokipush::check_labels(labels.iter().map(|(k, v)| (k.as_ref(), v.as_ref())))
        .map_err(|e| Refused::Bad(format!("error parsing labels: {}: {e}", e.kind())))
}

/// A JSON body as spool lines, each stream labelled by `streams`. `Ok`:
/// the lines the rules dropped.
pub fn decode_json(
    body: &[u8],
    tenant: Option<&str>,
    streams: &StreamLabels,
    enc: &mut Encoder<'_>,
) -> Result<u64, Refused> {
    let req = lokipush::parse(body).map_err(|e| Refused::Bad(format!("error parsing push request: {e}")))?;
    let mut dropped = 0;
    for s in req.streams {
        let labels: Pairs<'_> = s.stream.0.into_iter().map(|(k, v)| (k.0, v.0)).collect();
        check(&labels)?;
        let bad_ts =
            |e: &lokipush::PushEntry<'_>| Refused::Bad(format!("timestamp {:?} is not unix nanoseconds", &*e.ts));
        let Some(labels) = streams.apply(labels) else {
            // A bad timestamp refuses the whole body, a dropped stream's too (as Loki reads it).
            if let Some(e) = s.values.iter().find(|e| lokipush::parse_ts(&e.ts).is_none()) {
                return Err(bad_ts(e));
            }
            dropped += s.values.len() as u64;
            continue;
        };
        let stream = enc.stream(tenant, &labels)?;
        for e in s.values {
            let Some(ts) = lokipush::parse_ts(&e.ts) else { return Err(bad_ts(&e)) };
            let metadata = e.metadata.map(|m| m.0.into_iter().map(|(k, v)| (k.0, v.0)).collect()).unwrap_or_default();
            enc.line(stream, ts, &e.line, metadata)?;
        }
    }
    Ok(dropped)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spool::{resolved as records, Stamps};

    fn json(body: &[u8], tenant: Option<&str>) -> Result<(Vec<u8>, u64), Refused> {
        let stamps = Stamps::new();
        let mut enc = Encoder::new(&stamps, 1 << 20);
        decode_json(body, tenant, &StreamLabels::default(), &mut enc)?;
        Ok(enc.finish())
    }

    #[test]
    fn pushed_labels_are_made_as_promtail_makes_them() {
        let pairs = |v: &[(&'static str, &'static str)]| -> Pairs<'static> {
            v.iter().map(|(k, v)| (Cow::Borrowed(*k), Cow::Borrowed(*v))).collect()
        };
        let rule = |source: &str, regex: &str, target: &str, action: &str| crate::config::RelabelConfig {
            source_labels: vec![source.into()],
            regex: Some(regex.into()),
            target_label: Some(target.into()),
            action: Some(action.into()),
            ..Default::default()
        };
        let rules =
            Rules::compile(&[rule("app", "(.*)", "application", "replace"), rule("app", "drop", "", "drop")]).unwrap();
        let streams =
            StreamLabels { labels: [("job".to_string(), "push".to_string())].into(), relabel: Some(Arc::new(rules)) };
        // The source's labels replace pushed ones; rules see both; `__` labels go.
        let got = streams.apply(pairs(&[("app", "web"), ("job", "theirs"), ("__x", "1")])).unwrap();
        assert_eq!(got, pairs(&[("app", "web"), ("application", "web"), ("job", "push")]));
        assert!(streams.apply(pairs(&[("app", "drop")])).is_none(), "a stream the rules drop");
        // Without rules or labels: as pushed, less `__` labels.
        let none = StreamLabels::default();
        assert_eq!(none.apply(pairs(&[("a", "1")])).unwrap(), pairs(&[("a", "1")]));
        assert_eq!(none.apply(pairs(&[("a", "1"), ("__b", "2")])).unwrap(), pairs(&[("a", "1")]));
    }

    #[test]
    fn json_bodies_keep_labels_metadata_and_tenant() {
        let body = br#"{"streams":[{"stream":{"job":"a","host":"h"},"values":[["1700000000000000001","one"],["1700000000000000002","two",{"trace_id":"t1"}]]}]}"#;
        let (enc, n) = json(body, Some("team")).unwrap();
        assert_eq!(n, 2);
        let r = records(&enc);
        assert_eq!(r[0].line, "one");
        assert_eq!(r[0].ts, 1_700_000_000_000_000_001);
        assert_eq!(r[1].metadata, vec![(Cow::Borrowed("trace_id"), Cow::Borrowed("t1"))]);
        assert_eq!(r[1].tenant.as_deref(), Some("team"));
        assert_eq!(r[1].labels.len(), 2);
    }

    #[test]
    fn a_push_of_short_lines_with_many_labels_costs_about_its_own_size() {
        let labels: String =
            (0..8).map(|i| format!("\"label_{i}\":\"{}\"", "v".repeat(40))).collect::<Vec<_>>().join(",");
        let values: Vec<String> =
            (0..10_000).map(|i| format!("[\"{}\",\"GET /healthz {i}\"]", 1_700_000_000_000_000_000i64 + i)).collect();
        let body = format!("{{\"streams\":[{{\"stream\":{{{labels}}},\"values\":[{}]}}]}}", values.join(","));
        let (enc, n) = json(body.as_bytes(), None).unwrap();
        assert_eq!(n, 10_000);
        assert!(enc.len() < body.len() * 2, "{} bytes of spool for a body of {}", enc.len(), body.len());
    }

    #[test]
    fn bad_json_bodies_are_refused_with_a_message() {
        let long_value = format!(r#"{{"streams":[{{"stream":{{"a":"{}"}},"values":[["1","l"]]}}]}}"#, "x".repeat(3000));
        let many: String = (0..16).map(|i| format!("\"l{i}\":\"v\"")).collect::<Vec<_>>().join(",");
        let many = format!(r#"{{"streams":[{{"stream":{{{many}}},"values":[["1","l"]]}}]}}"#);
        for bad in [
            &br#"{"streams":[{"stream":{"a-b":"x"},"values":[["1","l"]]}]}"#[..],
            br#"{"streams":[{"stream":{},"values":[[1,"l"]]}]}"#,
            b"nope",
            long_value.as_bytes(),
            many.as_bytes(),
        ] {
            assert!(matches!(json(bad, None), Err(Refused::Bad(_))), "{}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn a_body_that_expands_past_the_limit_is_refused_as_too_large() {
        let labels: String =
            (0..15).map(|i| format!("\"l{i}\":\"{}\"", "v".repeat(2000))).collect::<Vec<_>>().join(",");
        let values: Vec<String> = (0..50_000).map(|i| format!("[\"{i}\",\"\",{{\"k\":\"v\"}}]")).collect();
        let body = format!("{{\"streams\":[{{\"stream\":{{{labels}}},\"values\":[{}]}}]}}", values.join(","));
        let stamps = Stamps::new();
        let mut enc = Encoder::new(&stamps, body.len() * 4);
        assert!(
            decode_json(body.as_bytes(), None, &StreamLabels::default(), &mut enc).is_ok(),
            "labels are written once"
        );
        let mut enc = Encoder::new(&stamps, 1000);
        assert!(matches!(
            decode_json(body.as_bytes(), None, &StreamLabels::default(), &mut enc),
            Err(Refused::TooLarge(_))
        ));
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
        let body = proto::encode_snappy(&req);
        let stamps = Stamps::new();
        let mut enc = Encoder::new(&stamps, 1 << 20);
        decode_protobuf(&body, None, 1 << 20, &StreamLabels::default(), &mut enc).unwrap();
        let (enc, n) = enc.finish();
        assert_eq!(n, 1);
        let r = records(&enc);
        assert_eq!(r[0].ts, 1_700_000_000_000_000_005);
        assert_eq!(r[0].line, "hello \u{fffd}");
        assert!(r[0].labels.contains(&(Cow::Borrowed("job"), Cow::Borrowed("app"))));
        assert_eq!(r[0].metadata.len(), 1);
        let mut enc = Encoder::new(&stamps, 1 << 20);
        assert!(decode_protobuf(b"garbage", None, 1 << 20, &StreamLabels::default(), &mut enc).is_err());
    }

    #[test]
    fn a_snappy_body_that_decompresses_past_the_limit_is_refused_before_it_is_decompressed() {
        let body = snap::raw::Encoder::new().compress_vec(&vec![0u8; 4 << 20]).unwrap();
        assert!(body.len() < 300 << 10);
        let stamps = Stamps::new();
        let mut enc = Encoder::new(&stamps, 1 << 20);
        assert!(matches!(
            decode_protobuf(&body, None, 1 << 20, &StreamLabels::default(), &mut enc),
            Err(Refused::TooLarge(_))
        ));
    }
}
