//! `type = "cloudflare"`: a zone's logs from a Logpull API written in the
//! test (Cloudflare's cannot be reached here) answering each window with a
//! record every 100 ms, so that a gap or a repeat between windows, parts of
//! a window or agent lives shows; and Promtail's `cloudflare` job through
//! `convert` and `check`.

use crate::agent;
use crate::common;
use crate::discovery;
use crate::mockhttp;

use std::collections::BTreeMap;
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use agent::{query_all, Agent};
use common::{bin, wait_for, Receiver};
use mockhttp::{Mock, Reply};

const BIG: &[&str] = &["--max-query-limit", "1000000"];
const TICK: i64 = 100_000_000;

fn nanos(rfc3339: &str) -> i64 {
    chrono::DateTime::parse_from_rfc3339(rfc3339).unwrap().timestamp_nanos_opt().unwrap()
}

/// A Logpull API: a record for every 100 ms tick in `[start, end)`; the
/// first `fail` requests answer 500; a wrong token 403.
async fn logpull(fail: usize) -> (Mock, Arc<AtomicUsize>) {
    let failed = Arc::new(AtomicUsize::new(0));
    let f = failed.clone();
    let mock = Mock::start(move |r, _| {
        if r.header("authorization") != Some("Bearer cf-token-5e6f") {
            return Reply::json(403, serde_json::json!({"success": false, "errors": [{"code": 10000, "message": "Authentication error"}]}));
        }
        if f.load(Ordering::SeqCst) < fail {
            f.fetch_add(1, Ordering::SeqCst);
            return Reply::json(500, serde_json::json!({"success": false, "errors": [{"code": 1, "message": "internal"}]}));
        }
        assert_eq!(r.path, "/client/v4/zones/zone-1/logs/received");
        let q: BTreeMap<String, String> = url::form_urlencoded::parse(r.query.as_bytes()).into_owned().collect();
        let (start, end) = (nanos(&q["start"]), nanos(&q["end"]));
        let mut body = String::new();
        let mut t = (start + TICK - 1) / TICK * TICK;
        while t < end {
            body.push_str(&format!(
                "{{\"ClientRequestHost\":\"shop.example\",\"EdgeStartTimestamp\":{t},\"RayID\":\"{t:x}\",\"fields\":\"{}\"}}\n",
                q["fields"]
            ));
            t += TICK;
        }
        Reply::text(200, &body)
    })
    .await;
    (mock, failed)
}

fn config(dir: &std::path::Path, store: &Receiver, api: &str) -> std::path::PathBuf {
    let source = format!(
        "type = \"cloudflare\"\nname = \"cf\"\nlabels = {{ job = \"cloudflare\" }}\nhost_label = false\n\
         cloudflare = {{ api_token = \"cf-token-5e6f\", zone_id = \"zone-1\", workers = 3, pull_range = \"2s\", \
         fields_type = \"default\", additional_fields = [\"ZoneID\", \"RayID\"], endpoint = \"{api}/client/v4\" }}\n"
    );
    agent::net_source_config(dir, "cf.toml", &store.base, &source)
}

/// Stamps of the stored records, checked to be every tick from the first to the last.
fn contiguous(store: &Receiver) -> Vec<i128> {
    let got = query_all(store, r#"{job="cloudflare"}"#, None);
    let ts: Vec<i128> = got.iter().map(|e| e.ts).collect();
    for w in ts.windows(2) {
        assert_eq!(w[1] - w[0], TICK as i128, "a gap or a repeat between {} and {}", w[0], w[1]);
    }
    ts
}

#[test]
fn windows_are_pulled_back_to_back_across_failures_and_restarts() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let (api, failed) = rt.block_on(logpull(2));
    let dir = tempfile::tempdir().unwrap();
    let store = Receiver::start(BIG);
    let cfg = config(dir.path(), &store, &api.url);
    let agent = Agent::start(&cfg);
    // Three windows of 2 s: 60 records.
    assert!(
        wait_for(Duration::from_secs(40), || query_all(&store, r#"{job="cloudflare"}"#, None).len() >= 60),
        "{}",
        agent.stderr_text()
    );
    assert_eq!(failed.load(Ordering::SeqCst), 2);
    let stderr = agent.stderr_text();
    assert!(stderr.contains("cannot pull Cloudflare logs") && !stderr.contains("cf-token-5e6f"), "{stderr}");
    let first = contiguous(&store);
    // The first window is the one that ended a minute ago.
    let age = chrono::Utc::now().timestamp_nanos_opt().unwrap() as i128 - first[0];
    assert!((60_000_000_000..120_000_000_000).contains(&age), "first record {age} ns old");
    let line = &query_all(&store, r#"{job="cloudflare"}"#, None)[0].line;
    let v: serde_json::Value = serde_json::from_str(line).unwrap();
    assert_eq!(v["ClientRequestHost"], "shop.example");
    // Promtail's default fields and the additional ones, sorted, once each.
    assert_eq!(
        v["fields"],
        "ClientIP,ClientRequestHost,ClientRequestMethod,ClientRequestURI,EdgeEndTimestamp,EdgeRequestHost,\
         EdgeResponseBytes,EdgeResponseStatus,EdgeStartTimestamp,RayID,ZoneID"
    );
    assert!(agent.terminate(Duration::from_secs(15)).success());

    // Restarted: it goes on from the cursor, without a gap or a repeat.
    let before = contiguous(&store).len();
    let agent = Agent::start(&cfg);
    assert!(
        wait_for(Duration::from_secs(40), || query_all(&store, r#"{job="cloudflare"}"#, None).len() >= before + 40),
        "{}",
        agent.stderr_text()
    );
    let all = contiguous(&store);
    assert_eq!(all[0], first[0]);
}

#[test]
fn promtail_cloudflare_jobs_convert_and_check() {
    let dir = tempfile::tempdir().unwrap();
    let yaml = r#"clients:
  - url: http://127.0.0.1:3100/loki/api/v1/push
scrape_configs:
  - job_name: cloudflare
    cloudflare:
      api_token: cf-token-5e6f
      zone_id: zone-1
      workers: 4
      pull_range: 1m
      fields_type: extended
      additional_fields: [BotScore]
      labels:
        job: cloudflare
"#;
    let (toml, report) = discovery::convert_promtail(dir.path(), yaml);
    assert!(!report.contains("cloudflare") || !report.contains("Not translated"), "{report}");
    for want in
        ["type = \"cloudflare\"", "zone_id = \"zone-1\"", "workers = 4", "fields_type = \"extended\"", "BotScore"]
    {
        assert!(toml.contains(want), "{want}: {toml}");
    }
    let cfg = dir.path().join("tailship.toml");
    std::fs::write(&cfg, toml.replace("/var/lib/tailship", &dir.path().display().to_string())).unwrap();
    let out = Command::new(bin()).args(["check", "--config"]).arg(&cfg).output().unwrap();
    let all = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{all}\n{toml}");
    assert!(!all.contains("cf-token-5e6f"), "the token is a secret: {all}");
}

#[test]
fn cloudflare_mistakes_exit_2_naming_the_key() {
    discovery::bad_net_sources_exit_2(
        "cloudflare",
        &[
            ("cloudflare = { zone_id = \"z\" }", "cloudflare.api_token"),
            ("cloudflare = { api_token = \"t\" }", "cloudflare.zone_id"),
            ("cloudflare = { api_token = \"t\", zone_id = \"z\", workers = 0 }", "cloudflare.workers"),
            (
                "cloudflare = { api_token = \"t\", zone_id = \"z\", fields_type = \"custom\" }",
                "cloudflare.additional_fields",
            ),
            ("cloudflare = { api_token = \"t\", zone_id = \"z\", fields_type = \"some\" }", "cloudflare.fields_type"),
            ("cloudflare = { api_token_file = \"/nonexistent\", zone_id = \"z\" }", "cloudflare.api_token_file"),
            ("cloudflare = { api_token = \"t\", zone_id = \"z\" }\nlisten = \"127.0.0.1:9\"", ".listen"),
        ],
    );
}
