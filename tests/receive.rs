//! Black-box tests of `tailship receive`, the embedded log store, over HTTP
//! on loopback.

use crate::common;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use common::{get, get_with, gzip, post_json, push_body, push_body_streams, request, with_params, Receiver};
use serde_json::{json, Value};

type Stream = (BTreeMap<String, String>, Vec<(String, String)>);

/// `data.result` of a streams response, as (labels, [(ts, line)]).
fn streams(v: &Value) -> Vec<Stream> {
    assert_eq!(v["status"], "success", "{v}");
    assert_eq!(v["data"]["resultType"], "streams", "{v}");
    v["data"]["result"]
        .as_array()
        .expect("result")
        .iter()
        .map(|s| {
            let labels = s["stream"]
                .as_object()
                .expect("stream")
                .iter()
                .map(|(k, v)| (k.clone(), v.as_str().expect("label value").to_string()))
                .collect();
            let values = s["values"]
                .as_array()
                .expect("values")
                .iter()
                .map(|p| (p[0].as_str().expect("ts").to_string(), p[1].as_str().expect("line").to_string()))
                .collect();
            (labels, values)
        })
        .collect()
}

fn query_range(r: &Receiver, params: &[(&str, &str)]) -> Vec<Stream> {
    let resp = get(&with_params(&r.api("/query_range"), params));
    assert_eq!(resp.status, 200, "{}", resp.text());
    streams(&resp.json())
}

/// Lines of every result stream, in response order.
fn all_lines(s: &[Stream]) -> Vec<String> {
    s.iter().flat_map(|(_, v)| v.iter().map(|(_, l)| l.clone())).collect()
}

fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

fn vals(pairs: &[(i64, &str)]) -> Vec<(String, String)> {
    pairs.iter().map(|(t, l)| (t.to_string(), l.to_string())).collect()
}

/// Instant query result as {labels -> (time, value)}.
fn instant(r: &Receiver, query: &str, time: &str) -> BTreeMap<BTreeMap<String, String>, (Value, String)> {
    let resp = get(&with_params(&r.api("/query"), &[("query", query), ("time", time)]));
    assert_eq!(resp.status, 200, "{}", resp.text());
    let v = resp.json();
    assert_eq!(v["data"]["resultType"], "vector", "{v}");
    v["data"]["result"]
        .as_array()
        .expect("result")
        .iter()
        .map(|s| {
            let metric = s["metric"]
                .as_object()
                .expect("metric")
                .iter()
                .map(|(k, v)| (k.clone(), v.as_str().expect("value").to_string()))
                .collect();
            (metric, (s["value"][0].clone(), s["value"][1].as_str().expect("value string").to_string()))
        })
        .collect()
}

fn now_ns() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).expect("clock").as_nanos() as i64
}

const ALL: [(&str, &str); 2] = [("start", "0"), ("end", "1000000")];

#[test]
fn push_then_query_range_both_directions_with_limit() {
    let r = Receiver::start(&[]);
    let body = push_body_streams(&[
        (&[("job", "a")], &[(10, "a10"), (20, "a20"), (30, "a30"), (40, "a40"), (50, "a50")]),
        (&[("job", "b")], &[(15, "b15"), (35, "b35"), (55, "b55")]),
    ]);
    let resp = r.push(&body);
    assert_eq!(resp.status, 204, "{}", resp.text());

    // Backward (the default): the newest 3 across streams, newest first in each.
    let q = [("query", r#"{job=~"a|b"}"#), ("start", "0"), ("end", "100"), ("limit", "3")];
    let got = query_range(&r, &q);
    assert_eq!(
        got,
        vec![
            (labels(&[("job", "a")]), vals(&[(50, "a50"), (40, "a40")])),
            (labels(&[("job", "b")]), vals(&[(55, "b55")]))
        ]
    );

    // Forward: the oldest 3, oldest first.
    let got = query_range(&r, &[q[0], q[1], q[2], q[3], ("direction", "forward")]);
    assert_eq!(
        got,
        vec![
            (labels(&[("job", "a")]), vals(&[(10, "a10"), (20, "a20")])),
            (labels(&[("job", "b")]), vals(&[(15, "b15")]))
        ]
    );

    // start is inclusive, end exclusive.
    let got = query_range(&r, &[("query", r#"{job="a"}"#), ("start", "20"), ("end", "50"), ("direction", "forward")]);
    assert_eq!(all_lines(&got), ["a20", "a30", "a40"]);

    // Default limit is 100 and RFC 3339 times are accepted.
    let got = query_range(
        &r,
        &[("query", r#"{job="b"}"#), ("start", "1970-01-01T00:00:00Z"), ("end", "1970-01-01T00:00:01Z")],
    );
    assert_eq!(all_lines(&got), ["b55", "b35", "b15"]);
}

#[test]
fn query_range_defaults_to_the_last_hour() {
    let r = Receiver::start(&[]);
    let now = now_ns();
    let hour = 3_600_000_000_000;
    let resp = r.push(&push_body(&[("job", "t")], &[(now - 2 * hour, "old"), (now - 60_000_000_000, "recent")]));
    assert_eq!(resp.status, 204, "{}", resp.text());
    let got = query_range(&r, &[("query", r#"{job="t"}"#)]);
    assert_eq!(all_lines(&got), ["recent"]);
}

#[test]
fn every_selector_operator_and_line_filter() {
    let r = Receiver::start(&[]);
    let body = push_body_streams(&[
        (&[("job", "app"), ("env", "prod")], &[(1, "GET /a 200"), (2, "GET /b 500 error"), (3, "POST /c 201")]),
        (&[("job", "app"), ("env", "dev")], &[(4, "debug: starting"), (5, "error: boom")]),
        (&[("job", "db")], &[(6, "checkpoint complete")]),
    ]);
    assert_eq!(r.push(&body).status, 204);
    let lines = |q: &str| {
        let mut l = all_lines(&query_range(&r, &[("query", q), ALL[0], ALL[1]]));
        l.sort();
        l
    };
    assert_eq!(lines(r#"{env="dev"}"#), ["debug: starting", "error: boom"]);
    // `!=` matches streams without the label too, as in Prometheus.
    assert_eq!(lines(r#"{job=~".+", env!="prod"}"#), ["checkpoint complete", "debug: starting", "error: boom"]);
    // Regex matchers are anchored: "ap" does not match "app".
    assert!(lines(r#"{job=~"ap"}"#).is_empty());
    assert_eq!(lines(r#"{job=~"d.*"}"#), ["checkpoint complete"]);
    assert_eq!(lines(r#"{job="app", env!~"pro.*"}"#), ["debug: starting", "error: boom"]);

    assert_eq!(lines(r#"{job="app"} |= "error""#), ["GET /b 500 error", "error: boom"]);
    assert_eq!(lines(r#"{job="app"} != "error""#), ["GET /a 200", "POST /c 201", "debug: starting"]);
    assert_eq!(lines(r#"{job="app"} |~ "^(GET|POST) /. 2\\d\\d$""#), ["GET /a 200", "POST /c 201"]);
    assert_eq!(lines(r#"{job="app"} !~ "[0-9]{3}""#), ["debug: starting", "error: boom"]);
    assert_eq!(lines(r#"{job="app"} |= `GET` != "500""#), ["GET /a 200"]);
    assert_eq!(lines(r#"{job="app"} |~ `(?i)ERROR` !~ "^GET""#), ["error: boom"]);
}

#[test]
fn instant_queries_with_and_without_sum() {
    let r = Receiver::start(&[]);
    let s = 1_000_000_000i64;
    // Query time 1000s with a 10s range: the window is (990s, 1000s].
    let body = push_body_streams(&[
        (
            &[("job", "app"), ("level", "error"), ("host", "h1")],
            &[(990 * s, "outside"), (991 * s, "e1"), (1000 * s, "e2 x")],
        ),
        (&[("job", "app"), ("level", "info"), ("host", "h1")], &[(995 * s, "i1"), (1001 * s, "future")]),
        (&[("job", "app"), ("level", "error"), ("host", "h2")], &[(999 * s, "e3")]),
    ]);
    assert_eq!(r.push(&body).status, 204);
    let t = (1000 * s).to_string();
    let m = instant(&r, r#"count_over_time({job="app"}[10s])"#, &t);
    let key = |l: &str, h: &str| labels(&[("job", "app"), ("level", l), ("host", h)]);
    assert_eq!(m.len(), 3, "{m:?}");
    assert_eq!(m[&key("error", "h1")], (json!(1000), "2".to_string()));
    assert_eq!(m[&key("info", "h1")].1, "1");
    assert_eq!(m[&key("error", "h2")].1, "1");

    let m = instant(&r, r#"sum by (level) (count_over_time({job="app"}[10s]))"#, &t);
    assert_eq!(m[&labels(&[("level", "error")])].1, "3");
    assert_eq!(m[&labels(&[("level", "info")])].1, "1");
    let m = instant(&r, r#"sum(count_over_time({job="app"}[10s])) by (host)"#, &t);
    assert_eq!(m[&labels(&[("host", "h1")])].1, "3");
    let m = instant(&r, r#"sum(rate({job="app"}[10s]))"#, &t);
    assert_eq!(m[&BTreeMap::new()].1, "0.4");
    let m = instant(&r, r#"sum(bytes_over_time({job="app", level="error"} |= "e" [10s]))"#, &t);
    assert_eq!(m[&BTreeMap::new()].1, "8"); // "e1" + "e2 x" + "e3"
    let m = instant(&r, r#"sum(bytes_rate({job="app"} |= "x" [2s]))"#, &t);
    assert_eq!(m[&BTreeMap::new()].1, "2");
    // Fractional query times come back as fractional seconds; no data, no series.
    let m = instant(&r, r#"count_over_time({job="app"}[1s])"#, "1500.5");
    assert!(m.is_empty(), "{m:?}");
    let m = instant(&r, r#"count_over_time({job="app"}[1s])"#, "1970-01-01T00:16:40.5Z");
    assert_eq!(m[&key("error", "h1")].0, json!(1000.5));
}

#[test]
fn labels_and_label_values() {
    let r = Receiver::start(&[]);
    let body = push_body_streams(&[
        (&[("job", "app"), ("env", "prod")], &[(10, "x")]),
        (&[("job", "db"), ("zone", "z1")], &[(20, "y")]),
    ]);
    assert_eq!(r.push(&body).status, 204);
    let data = |path: &str, params: &[(&str, &str)]| {
        let resp = get(&with_params(&r.api(path), params));
        assert_eq!(resp.status, 200, "{}", resp.text());
        let v = resp.json();
        assert_eq!(v["status"], "success");
        v["data"].clone()
    };
    assert_eq!(data("/labels", &ALL), json!(["env", "job", "zone"]));
    assert_eq!(data("/labels", &[("start", "15"), ("end", "100")]), json!(["job", "zone"]));
    assert_eq!(data("/label/job/values", &ALL), json!(["app", "db"]));
    assert_eq!(data("/label/job/values", &[ALL[0], ALL[1], ("query", r#"{zone="z1"}"#)]), json!(["db"]));
    assert_eq!(data("/label/nope/values", &ALL), json!([]));
    // The default window is the last 6 hours: these entries are from 1970.
    assert_eq!(data("/labels", &[]), json!([]));
    let now = now_ns();
    assert_eq!(r.push(&push_body(&[("recent", "yes")], &[(now - 1_000_000_000, "z")])).status, 204);
    assert_eq!(data("/labels", &[]), json!(["recent"]));
    assert_eq!(data("/label/recent/values", &[]), json!(["yes"]));
}

#[test]
fn gzip_push_and_charset() {
    let r = Receiver::start(&[]);
    let body = push_body(&[("job", "gz")], &[(1, "compressed line")]);
    let resp = request(
        "POST",
        &r.api("/push"),
        &[("Content-Type", "application/json; charset=utf-8"), ("Content-Encoding", "gzip")],
        &gzip(body.as_bytes()),
    );
    assert_eq!(resp.status, 204, "{}", resp.text());
    assert_eq!(all_lines(&query_range(&r, &[("query", r#"{job="gz"}"#), ALL[0], ALL[1]])), ["compressed line"]);
    // A corrupt gzip body is a 400 that says so.
    let resp = request(
        "POST",
        &r.api("/push"),
        &[("Content-Type", "application/json"), ("Content-Encoding", "gzip")],
        b"not gzip at all",
    );
    assert_eq!(resp.status, 400);
    assert!(resp.text().contains("gzip"), "{}", resp.text());
}

#[test]
fn multi_tenant_isolation_and_union() {
    let r = Receiver::start(&["--multi-tenant"]);
    let push_as = |tenant: &str, line: &str| {
        request(
            "POST",
            &r.api("/push"),
            &[("Content-Type", "application/json"), ("X-Scope-OrgID", tenant)],
            push_body(&[("job", "app")], &[(1, line)]).as_bytes(),
        )
    };
    assert_eq!(push_as("team-a", "from a").status, 204);
    assert_eq!(push_as("team-b", "from b").status, 204);
    let resp = push_as("team-a|team-b", "both");
    assert_eq!(resp.status, 400);
    assert!(resp.text().contains("multiple org IDs"), "{}", resp.text());

    // Without the header: 401 everywhere on the log API.
    let resp = r.push(&push_body(&[("job", "app")], &[(1, "anon")]));
    assert_eq!(resp.status, 401);
    assert!(resp.text().contains("X-Scope-OrgID"), "{}", resp.text());
    for path in ["/query_range?query=%7Bjob%3D%22app%22%7D", "/query", "/labels", "/label/job/values"] {
        assert_eq!(get(&r.api(path)).status, 401, "{path}");
    }

    let url = with_params(&r.api("/query_range"), &[("query", r#"{job="app"}"#), ALL[0], ALL[1]]);
    let as_tenant = |t: &str| {
        let resp = get_with(&url, &[("X-Scope-OrgID", t)]);
        assert_eq!(resp.status, 200, "{}", resp.text());
        streams(&resp.json())
    };
    assert_eq!(as_tenant("team-a"), vec![(labels(&[("job", "app")]), vals(&[(1, "from a")]))]);
    assert_eq!(as_tenant("team-b"), vec![(labels(&[("job", "app")]), vals(&[(1, "from b")]))]);
    assert!(as_tenant("team-c").is_empty());
    assert_eq!(
        as_tenant("team-a|team-b"),
        vec![
            (labels(&[("__tenant_id__", "team-a"), ("job", "app")]), vals(&[(1, "from a")])),
            (labels(&[("__tenant_id__", "team-b"), ("job", "app")]), vals(&[(1, "from b")])),
        ]
    );
    // Metric queries across tenants carry the tenant label too.
    let q = with_params(
        &r.api("/query"),
        &[("query", r#"sum by (__tenant_id__) (count_over_time({job="app"}[1m]))"#), ("time", "10")],
    );
    let v = get_with(&q, &[("X-Scope-OrgID", "team-a|team-b")]).json();
    assert_eq!(v["data"]["result"].as_array().map(Vec::len), Some(2), "{v}");
    assert_eq!(v["data"]["result"][0]["metric"]["__tenant_id__"], "team-a");

    // Without --multi-tenant the header is ignored: one shared tenant.
    let single = Receiver::start(&[]);
    let resp = request(
        "POST",
        &single.api("/push"),
        &[("Content-Type", "application/json"), ("X-Scope-OrgID", "x|y")],
        push_body(&[("job", "app")], &[(1, "one")]).as_bytes(),
    );
    assert_eq!(resp.status, 204, "{}", resp.text());
    let got = streams(&get_with(&url.replace(&r.base, &single.base), &[("X-Scope-OrgID", "other")]).json());
    assert_eq!(all_lines(&got), ["one"]);
}

#[test]
fn basic_auth_guards_everything_but_webhook_and_stats() {
    let dir = tempfile::tempdir().expect("tempdir");
    let pw = dir.path().join("pw");
    std::fs::write(&pw, "s3cret\n").expect("write");
    let r = Receiver::start(&["--basic-auth-user", "u", "--basic-auth-password-file", pw.to_str().expect("path")]);
    let body = push_body(&[("job", "a")], &[(1, "x")]);
    let resp = r.push(&body);
    assert_eq!(resp.status, 401);
    assert!(resp.header("www-authenticate").is_some_and(|h| h.starts_with("Basic")), "{:?}", resp.headers);
    let wrong = "Basic dTp3cm9uZw=="; // u:wrong
    let right = "Basic dTpzM2NyZXQ="; // u:s3cret
    let push_with = |auth: &str| {
        request(
            "POST",
            &r.api("/push"),
            &[("Content-Type", "application/json"), ("Authorization", auth)],
            body.as_bytes(),
        )
    };
    assert_eq!(push_with(wrong).status, 401);
    assert_eq!(push_with(right).status, 204);
    let q = with_params(&r.api("/query_range"), &[("query", r#"{job="a"}"#), ALL[0], ALL[1]]);
    assert_eq!(get(&q).status, 401);
    assert_eq!(get(&r.api("/labels")).status, 401);
    let resp = get_with(&q, &[("Authorization", right)]);
    assert_eq!(resp.status, 200);
    assert_eq!(all_lines(&streams(&resp.json())), ["x"]);
    // Open: stats and the webhook.
    assert_eq!(get(&r.url("/stats")).status, 200);
    assert_eq!(post_json(&r.url("/integrations/v1/formatted_webhook/k/"), "{}").status, 200);
}

#[test]
fn bad_inputs_get_their_status_and_a_message() {
    let r = Receiver::start(&[]);
    let check = |resp: common::HttpResponse, status: u16, needle: &str| {
        assert_eq!(resp.status, status, "{}", resp.text());
        assert!(resp.text().contains(needle), "expected {needle:?} in {:?}", resp.text());
    };
    check(r.push("{not json"), 400, "invalid push body");
    check(r.push(r#"{"streams":[{"stream":{"job":"a"},"values":[["1"]]}]}"#), 400, "streams[0].values[0]");
    check(r.push(&push_body(&[("bad-name", "x")], &[(1, "l")])), 400, r#"stream 0: label name "bad-name" is invalid"#);
    check(
        r.push(r#"{"streams":[{"stream":{"job":"a"},"values":[["1","a"],["2","b"],["3","c"],["12a","d"]]}]}"#),
        400,
        r#"stream 0 value 3: timestamp "12a" is not decimal nanoseconds"#,
    );
    check(r.push(r#"{"streams":[{"stream":{"job":"a"},"values":[[1,"x"]]}]}"#), 400, "timestamp string");
    check(r.push(r#"{"streams":[{"stream":{"job":"a"},"values":[["1","\ud800"]]}]}"#), 400, "invalid push body");
    check(r.push(r#"{"streams":[]}"#), 422, "no streams");
    check(
        request("POST", &r.api("/push"), &[("Content-Type", "application/x-protobuf")], b"x"),
        415,
        "application/json",
    );
    check(request("POST", &r.api("/push"), &[], b"{}"), 415, "Content-Type");
    // Nothing of those requests was stored.
    assert_eq!(r.stats()["entries"], 0);

    let q = |path: &str, query: &str| get(&with_params(&r.api(path), &[("query", query)]));
    check(q("/query_range", "{}"), 400, "at least one label matcher");
    check(q("/query", "count_over_time({}[5m])"), 400, "at least one label matcher");
    check(q("/label/job/values", "{}"), 400, "at least one label matcher");
    check(q("/query", r#"{job="a"}"#), 400, "metric query");
    check(q("/query_range", r#"{job="a""#), 400, "parse error");
    check(q("/query_range", r#"{job="a"} | json"#), 400, "line filters");
    check(get(&r.api("/query_range")), 400, "query");
    let qp = |params: &[(&str, &str)]| get(&with_params(&r.api("/query_range"), params));
    check(qp(&[("query", r#"{job="a"}"#), ("limit", "0")]), 400, "limit");
    check(qp(&[("query", r#"{job="a"}"#), ("limit", "6000")]), 400, "max entries limit");
    check(qp(&[("query", r#"{job="a"}"#), ("direction", "sideways")]), 400, "direction");
    check(qp(&[("query", r#"{job="a"}"#), ("start", "yesterday")]), 400, "start");
    check(qp(&[("query", r#"{job="a"}"#), ("start", "10"), ("end", "5")]), 400, "end timestamp");
}

#[test]
fn too_long_line_is_refused_but_the_rest_is_stored() {
    let r = Receiver::start(&[]);
    let long = "x".repeat(262_145);
    let ok = "y".repeat(262_144);
    let resp = r.push(&push_body(&[("job", "a")], &[(1, "short"), (2, &long), (3, &ok)]));
    assert_eq!(resp.status, 400);
    assert!(resp.text().contains("stream 0 value 1: line too long"), "{}", resp.text());
    let got = query_range(&r, &[("query", r#"{job="a"}"#), ALL[0], ALL[1], ("direction", "forward")]);
    assert_eq!(got[0].1.len(), 2);
    assert_eq!(got[0].1[0].1, "short");
    assert_eq!(got[0].1[1].1.len(), 262_144);
}

#[test]
fn too_large_bodies_and_gzip_bombs_get_413() {
    let r = Receiver::start(&["--max-body", "4096"]);
    let big = push_body(&[("job", "a")], &[(1, &"z".repeat(5000))]);
    let resp = r.push(&big);
    assert_eq!(resp.status, 413);
    assert!(resp.text().contains("4096"), "{}", resp.text());
    // 1 MiB of zeros compresses to about 1 KiB: under the limit on the wire, far over it inflated.
    let bomb = gzip(&vec![0u8; 1 << 20]);
    assert!(bomb.len() < 4096);
    let resp =
        request("POST", &r.api("/push"), &[("Content-Type", "application/json"), ("Content-Encoding", "gzip")], &bomb);
    assert_eq!(resp.status, 413, "{}", resp.text());
    assert!(resp.text().contains("after decompression"), "{}", resp.text());
    // Still serving after both.
    assert_eq!(r.push(&push_body(&[("job", "a")], &[(1, "small")])).status, 204);
}

#[test]
fn fail_every_fails_exactly_every_nth_push() {
    let r = Receiver::start(&["--fail-every", "3", "--fail-status", "429", "--retry-after", "7"]);
    let mut statuses = Vec::new();
    for i in 1..=7 {
        let resp = r.push(&push_body(&[("job", "f")], &[(i, &format!("line {i}"))]));
        if resp.status == 429 {
            assert_eq!(resp.header("retry-after"), Some("7"));
        } else {
            assert_eq!(resp.header("retry-after"), None);
        }
        statuses.push(resp.status);
    }
    assert_eq!(statuses, [204, 204, 429, 204, 204, 429, 204]);
    let mut got = all_lines(&query_range(&r, &[("query", r#"{job="f"}"#), ALL[0], ALL[1]]));
    got.sort();
    assert_eq!(got, ["line 1", "line 2", "line 4", "line 5", "line 7"]);
    let stats = r.stats();
    assert_eq!(stats["requests"], json!({"204": 5, "429": 2}));
    assert_eq!(stats["entries"], 5);
}

#[test]
fn fail_first_then_succeed_with_latency() {
    let r = Receiver::start(&["--fail-first", "5", "--fail-status", "503", "--latency", "200ms"]);
    let body = push_body(&[("job", "f")], &[(1, "x")]);
    let statuses: Vec<u16> = (0..6).map(|_| r.push(&body).status).collect();
    assert_eq!(statuses, [503, 503, 503, 503, 503, 204]);
    let started = Instant::now();
    assert_eq!(r.push(&body).status, 204);
    assert!(started.elapsed() >= Duration::from_millis(200), "{:?}", started.elapsed());
    assert_eq!(r.stats()["requests"], json!({"204": 2, "503": 5}));
}

#[test]
fn null_store_counts_and_keeps_nothing() {
    let r = Receiver::start(&["--store", "null"]);
    let body = push_body_streams(&[(&[("job", "a")], &[(1, "abc"), (2, "de")]), (&[("job", "b")], &[(1, "f")])]);
    assert_eq!(r.push(&body).status, 204);
    assert_eq!(r.push(&push_body(&[("job", "a")], &[(3, "gh")])).status, 204);
    // It still validates fully.
    assert_eq!(r.push(&push_body(&[("bad-name", "a")], &[(3, "gh")])).status, 400);
    let stats = r.stats();
    assert_eq!(stats["entries"], 4);
    assert_eq!(stats["bytes"], 8);
    assert_eq!(stats["streams"], 2);
    assert_eq!(stats["requests"], json!({"204": 2, "400": 1}));
    assert!(query_range(&r, &[("query", r#"{job="a"}"#), ALL[0], ALL[1]]).is_empty());
}

#[test]
fn duplicates_stored_once_and_eviction_counted() {
    let r = Receiver::start(&["--max-entries", "4"]);
    let body = push_body(&[("job", "d")], &[(1, "same"), (1, "same"), (1, "other"), (2, "two")]);
    assert_eq!(r.push(&body).status, 204);
    // Same again in a second request: nothing new.
    assert_eq!(r.push(&body).status, 204);
    // A different label set is another stream, even with the same line.
    assert_eq!(r.push(&push_body(&[("job", "d"), ("x", "1")], &[(1, "same")])).status, 204);
    let got = query_range(&r, &[("query", r#"{job="d", x=""}"#), ALL[0], ALL[1], ("direction", "forward")]);
    assert_eq!(got, vec![(labels(&[("job", "d")]), vals(&[(1, "same"), (1, "other"), (2, "two")]))]);
    let stats = r.stats();
    assert_eq!(
        (stats["entries"].clone(), stats["duplicates"].clone(), stats["streams"].clone()),
        (json!(4), json!(5), json!(2))
    );
    // Two more entries push the two oldest out.
    assert_eq!(r.push(&push_body(&[("job", "d")], &[(3, "three"), (4, "four")])).status, 204);
    assert_eq!(r.stats()["evicted"], 2);
    let got = query_range(&r, &[("query", r#"{job="d", x=""}"#), ALL[0], ALL[1], ("direction", "forward")]);
    assert_eq!(all_lines(&got), ["two", "three", "four"]);
}

#[test]
fn structured_metadata_is_accepted() {
    let r = Receiver::start(&[]);
    let body = r#"{"streams":[{"stream":{"job":"v"},"values":[["1","with meta",{"trace_id":"abc"}],["2","plain"]]}]}"#;
    assert_eq!(r.push(body).status, 204);
    let bad = r#"{"streams":[{"stream":{"job":"v"},"values":[["3","x",{"n":1}]]}]}"#;
    assert_eq!(r.push(bad).status, 400);
    assert_eq!(all_lines(&query_range(&r, &[("query", r#"{job="v"}"#), ALL[0], ALL[1]])), ["plain", "with meta"]);
}

#[test]
fn invalid_utf8_lines_are_stored_with_replacement_characters() {
    let r = Receiver::start(&[]);
    let mut body = br#"{"streams":[{"stream":{"job":"u"},"values":[["1","bad "#.to_vec();
    body.extend_from_slice(b"\xff\xfe");
    body.extend_from_slice(br#" bytes"]]}]}"#);
    let resp = request("POST", &r.api("/push"), &[("Content-Type", "application/json")], &body);
    assert_eq!(resp.status, 204, "{}", resp.text());
    let got = all_lines(&query_range(&r, &[("query", r#"{job="u"}"#), ALL[0], ALL[1]]));
    assert_eq!(got, ["bad \u{fffd}\u{fffd} bytes"]);
    // Raw control bytes inside a JSON string are refused, as Loki does.
    let resp = request(
        "POST",
        &r.api("/push"),
        &[("Content-Type", "application/json")],
        b"{\"streams\":[{\"stream\":{\"job\":\"u\"},\"values\":[[\"2\",\"a\x01b\"]]}]}",
    );
    assert_eq!(resp.status, 400, "{}", resp.text());
}

#[test]
fn webhook_stores_prints_and_guards_keys() {
    let r = Receiver::start(&["--webhook-key", "k1", "--webhook-key", "k2"]);
    let hook = |key: &str| r.url(&format!("/integrations/v1/formatted_webhook/{key}/"));
    let alert = json!({"alert_uid": "app-errors", "title": "5 errors", "state": "alerting", "message": "boom"});
    let resp = post_json(&hook("k1"), &alert.to_string());
    assert_eq!(resp.status, 200);
    assert_eq!(resp.text(), "Ok.");
    assert_eq!(post_json(&hook("k1"), r#"{"alert_uid":"app-errors","state":"ok"}"#).status, 200);
    assert!(common::wait_for(Duration::from_secs(5), || r.stdout_text().contains("alert [ok] app-errors:")));
    assert!(r.stdout_text().contains("alert [alerting] app-errors: 5 errors"), "{}", r.stdout_text());
    assert!(!r.stdout_text().contains("k1"), "the key is a secret");

    let stored = get(&hook("k1")).json();
    assert_eq!(stored, json!([alert, {"alert_uid": "app-errors", "state": "ok"}]));
    assert_eq!(get(&hook("k2")).json(), json!([]));

    let resp = post_json(&hook("unknown"), "{}");
    assert_eq!(resp.status, 403);
    assert_eq!(get(&hook("unknown")).status, 403);
    let resp = post_json(&hook("k2"), r#"{"title": 5}"#);
    assert_eq!(resp.status, 400);
    assert!(resp.text().contains("title"), "{}", resp.text());
    assert_eq!(post_json(&hook("k2"), "[1]").status, 400);
    assert_eq!(post_json(&hook("k2"), "nope").status, 400);
    assert_eq!(r.stats()["alerts"], 2);
}

#[test]
fn sigterm_exits_zero_and_custom_prefix_works() {
    let r = Receiver::start(&["--api-prefix", "/loki/api/v1"]);
    let url = r.url("/loki/api/v1/push");
    assert_eq!(post_json(&url, &push_body(&[("job", "p")], &[(1, "x")])).status, 204);
    assert_eq!(r.push(&push_body(&[("job", "p")], &[(1, "x")])).status, 404);
    let status = r.stop();
    assert_eq!(status.code(), Some(0));
}
