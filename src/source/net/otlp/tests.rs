use super::*;

use crate::spool::{resolved as decode_all, Stamps};

fn records(req: &ExportLogsServiceRequest, tenant: Option<&str>, as_labels: &[String], now: i64) -> (Vec<u8>, u64) {
    let stamps = Stamps::new();
    let mut enc = Encoder::new(&stamps, 1 << 20);
    super::records(req, tenant, as_labels, now, &mut enc).unwrap();
    enc.finish()
}

#[test]
fn a_large_resource_attribute_on_many_records_is_refused_at_the_limit() {
    let records_n = 5_000;
    let req = ExportLogsServiceRequest {
        resource_logs: vec![proto::ResourceLogs {
            resource: Some(proto::Resource {
                attributes: vec![KeyValue { key: "big".into(), value: Some(string_value(&"x".repeat(100_000))) }],
                ..Default::default()
            }),
            scope_logs: vec![proto::ScopeLogs {
                scope: None,
                log_records: (0..records_n)
                    .map(|_| proto::LogRecord { body: Some(string_value("l")), ..Default::default() })
                    .collect(),
                ..Default::default()
            }],
            ..Default::default()
        }],
    };
    let stamps = Stamps::new();
    let mut enc = Encoder::new(&stamps, 8 << 20);
    assert!(super::records(&req, None, &[], 1, &mut enc).is_err());
}

#[test]
fn json_records_map_body_severity_time_and_attributes() {
    let body = br#"{"resourceLogs":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"checkout"}},{"key":"host.name","value":{"stringValue":"h1"}}]},
      "scopeLogs":[{"scope":{"name":"my.lib"},"logRecords":[
        {"timeUnixNano":"1700000000000000001","severityNumber":17,"body":{"stringValue":"payment failed"},
         "attributes":[{"key":"order.id","value":{"intValue":"42"}}],"traceId":"5b8efff798038103d269b633813fc60c","spanId":"eee19b7ec3c1b174"},
        {"observedTimeUnixNano":1700000000000000009,"severityText":"WARN","body":{"kvlistValue":{"values":[{"key":"a","value":{"boolValue":true}}]}}},
        {"body":{"stringValue":"no time"}}
      ]}]}]}"#;
    let req = json::decode(body).unwrap();
    let (enc, n) = records(&req, Some("t"), &["service.name".to_string()], 5);
    assert_eq!(n, 3);
    let r = decode_all(&enc);
    assert_eq!(r[0].line, "payment failed");
    assert_eq!(r[0].ts, 1_700_000_000_000_000_001);
    assert!(r[0].labels.contains(&("service_name".into(), "checkout".into())), "{:?}", r[0].labels);
    assert!(r[0].labels.contains(&("level".into(), "error".into())));
    assert!(r[0].metadata.contains(&("host_name".into(), "h1".into())));
    assert!(r[0].metadata.contains(&("order_id".into(), "42".into())));
    assert!(r[0].metadata.contains(&("trace_id".into(), "5b8efff798038103d269b633813fc60c".into())));
    assert!(r[0].metadata.contains(&("scope_name".into(), "my.lib".into())));
    assert_eq!(r[1].ts, 1_700_000_000_000_000_009, "observed time when there is no time");
    assert_eq!(r[1].line, r#"{"a":true}"#);
    assert!(r[1].labels.contains(&("level".into(), "warn".into())));
    assert_eq!(r[2].ts, 5, "the time received when there is neither");
    assert_eq!(r[2].tenant.as_deref(), Some("t"));
}

#[test]
fn protobuf_and_bad_bodies() {
    let req = ExportLogsServiceRequest {
        resource_logs: vec![proto::ResourceLogs {
            resource: Some(proto::Resource {
                attributes: vec![KeyValue { key: "service.name".into(), value: Some(string_value("svc")) }],
                ..Default::default()
            }),
            scope_logs: vec![proto::ScopeLogs {
                scope: None,
                log_records: vec![proto::LogRecord {
                    time_unix_nano: 7,
                    severity_number: 9,
                    body: Some(string_value("hello")),
                    ..Default::default()
                }],
                ..Default::default()
            }],
            ..Default::default()
        }],
    };
    let back = ExportLogsServiceRequest::decode(req.encode_to_vec().as_slice()).unwrap();
    let (enc, n) = records(&back, None, &["service.name".to_string()], 0);
    assert_eq!(n, 1);
    let r = decode_all(&enc);
    assert_eq!((r[0].line.as_ref(), r[0].ts), ("hello", 7));
    assert!(r[0].labels.contains(&("level".into(), "info".into())));
    assert!(json::decode(b"{\"resourceLogs\": 3}").is_err());
    assert!(json::decode(b"not json").is_err());
}
