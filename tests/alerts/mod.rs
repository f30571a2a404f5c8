//! Alerts end to end: the real `tailship run` tailing files, with `[[alerts]]`
//! rules posting to `tailship receive`'s formatted webhook endpoint, or to
//! servers written here (429/500 answers, a webhook that never answers, the
//! annotation API).

use crate::agent;
use crate::common;
use crate::mockhttp;

use std::io::Write;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use agent::{file_source, write_file, Agent, AgentToml};
use common::{bin, get, wait_for, Receiver};
use mockhttp::{Mock, Reply};
use tempfile::TempDir;

mod delivery;

const HOOK: &str = "/integrations/v1/formatted_webhook";

/// A config tailing `dir/*.log` into `logs_url`, with `alerts` appended.
/// `retry` is the client's retry table (also used by alert deliveries).
fn config(dir: &Path, logs_url: &str, retry: &str, alerts: &str) -> PathBuf {
    let client = format!("timeout = \"3s\"\nretry = {retry}");
    let source = format!("{}partial_line_wait = \"300ms\"\n{alerts}", file_source(dir, "test", "200ms"));
    AgentToml::new(dir, "5s").client(logs_url, &client).then(&source).write("tailship.toml")
}

const FAST_RETRY: &str = r#"{ min_backoff = "20ms", max_backoff = "2s" }"#;

/// A receiver started with `args`, a temp dir, and in it a [`config`] with
/// [`FAST_RETRY`] and the alerts `alerts` gives for the receiver's base URL.
fn setup(args: &[&str], alerts: impl FnOnce(&str) -> String) -> (Receiver, TempDir, PathBuf) {
    let r = Receiver::start(args);
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path(), &r.base, FAST_RETRY, &alerts(&r.base));
    (r, dir, cfg)
}

/// Alerts stored by `r` for `key`, oldest first.
fn stored_alerts(r: &Receiver, key: &str) -> Vec<serde_json::Value> {
    let resp = get(&r.url(&format!("{HOOK}/{key}/")));
    assert_eq!(resp.status, 200, "{}", resp.text());
    resp.json().as_array().cloned().unwrap_or_default()
}

fn count_in_title(a: &serde_json::Value) -> u64 {
    // Default title: "<rule>: <count> matching lines".
    let t = a["title"].as_str().unwrap();
    t.split(": ").nth(1).and_then(|s| s.split(' ').next()).and_then(|n| n.parse().ok()).unwrap_or_else(|| panic!("{t}"))
}

fn append(path: &Path, text: &str) {
    let mut f = std::fs::OpenOptions::new().create(true).append(true).open(path).unwrap();
    f.write_all(text.as_bytes()).unwrap();
}

fn stored_count(r: &Receiver) -> u64 {
    r.stats()["entries"].as_u64().unwrap_or(0)
}

#[test]
fn a_thousand_matching_lines_in_10s_become_a_few_grouped_updates_with_one_alert_uid_then_a_resolve() {
    let (r, dir, cfg) = setup(&["--webhook-key", "K1"], |base| {
        format!(
            r#"[[alerts]]
name = "errs"
selector = {{ job = "test" }}
match = 'ERROR|panic'
exclude = 'ERROR expected'
webhook_url = "{}{HOOK}/K1/"
group_interval = "1s"
resolve_after = "2s"
max_per_minute = 60
"#,
            base
        )
    });
    let log = dir.path().join("app.log");
    std::fs::write(&log, "").unwrap();
    let agent = Agent::start(&cfg);
    // 1,000 matching lines (and 1,000 that do not match) over 10 s.
    let start = Instant::now();
    for tick in 0..100 {
        let mut chunk = String::new();
        for i in 0..10 {
            chunk.push_str(&format!("{tick:03}-{i} ERROR something broke\n"));
            chunk.push_str(&format!("{tick:03}-{i} INFO fine\n"));
            chunk.push_str(&format!("{tick:03}-{i} ERROR expected, ignore\n"));
        }
        append(&log, &chunk);
        if let Some(d) = (start + Duration::from_millis(100 * (tick + 1))).checked_duration_since(Instant::now()) {
            std::thread::sleep(d);
        }
    }
    assert!(
        wait_for(Duration::from_secs(20), || stored_alerts(&r, "K1").iter().any(|a| a["state"] == "ok")),
        "no resolve: {:?}\n{}",
        stored_alerts(&r, "K1"),
        agent.stderr_text()
    );
    let alerts = stored_alerts(&r, "K1");
    let firing: Vec<_> = alerts.iter().filter(|a| a["state"] == "alerting").collect();
    println!(
        "1000 matching lines in 10s -> {} alerting updates, then {} resolve",
        firing.len(),
        alerts.len() - firing.len()
    );
    assert!((5..=15).contains(&firing.len()), "{} updates: {alerts:?}", firing.len());
    assert_eq!(firing.iter().map(|a| count_in_title(a)).sum::<u64>(), 1000, "{alerts:?}");
    assert_eq!(alerts.last().unwrap()["state"], "ok", "the resolve comes last");
    assert_eq!(alerts.iter().filter(|a| a["state"] == "ok").count(), 1);
    let uid = alerts[0]["alert_uid"].as_str().unwrap();
    assert!(uid.starts_with("tailship-"));
    assert!(alerts.iter().all(|a| a["alert_uid"] == uid), "one alert group");
    let first = firing[0]["message"].as_str().unwrap();
    assert!(first.contains("first: 000-0 ERROR something broke"), "{first}");
    assert!(first.contains(r#"job="test""#), "{first}");
    assert!(wait_for(Duration::from_secs(5), || agent.metric(r#"tailship_alert_matches_total{rule="errs"}"#) == 1000.0));
    assert_eq!(agent.metric(r#"tailship_alerts_sent_total{rule="errs",state="ok"}"#), 1.0);
    assert_eq!(agent.metric(r#"tailship_alerts_sent_total{rule="errs",state="alerting"}"#), firing.len() as f64);
    assert_eq!(agent.metric(r#"tailship_alert_groups_open{rule="errs"}"#), 0.0);
    // Every log line was shipped, alerts or not.
    assert!(wait_for(Duration::from_secs(10), || stored_count(&r) == 3000));

    // Same stream again after the restart: the same alert_uid (stable across restarts).
    assert!(agent.terminate(Duration::from_secs(15)).success());
    let agent = Agent::start(&cfg);
    append(&log, "ERROR after restart\n");
    assert!(
        wait_for(Duration::from_secs(10), || stored_alerts(&r, "K1").len() > alerts.len()),
        "{}",
        agent.stderr_text()
    );
    let again = stored_alerts(&r, "K1");
    let last = again.last().unwrap();
    assert_eq!((last["alert_uid"].as_str().unwrap(), last["state"].as_str().unwrap()), (uid, "alerting"));
    assert_eq!(count_in_title(last), 1);
}

#[test]
fn each_stream_is_its_own_group_unless_group_by_and_sigterm_flushes_and_resolves() {
    let (r, dir, cfg) = setup(&[], |base| {
        format!(
            r#"[[alerts]]
name = "per-file"
selector = '{{job="test", filename=~".*\\.log"}}'
match = 'ERROR'
webhook_url = "{base}{HOOK}/A/"
group_interval = "1h"
resolve_on_shutdown = true
title = "{{{{rule}}}}: {{{{count}}}} matching lines in {{{{label.filename}}}}"

[[alerts]]
name = "per-job"
selector = {{ job = "test" }}
match = 'ERROR'
group_by = ["job"]
webhook_url = "{base}{HOOK}/B/"
group_interval = "1h"
"#,
            base = base
        )
    });
    let (a, b) = (dir.path().join("a.log"), dir.path().join("b.log"));
    std::fs::write(&a, "ERROR in a\n").unwrap();
    std::fs::write(&b, "ERROR in b\n").unwrap();
    let agent = Agent::start(&cfg);
    assert!(wait_for(Duration::from_secs(10), || stored_alerts(&r, "A").len() == 2), "{}", agent.stderr_text());
    assert!(wait_for(Duration::from_secs(5), || !stored_alerts(&r, "B").is_empty()));
    // Pending matches, held back by the 1h group_interval.
    append(&a, "ERROR a2\nERROR a3\n");
    append(&b, "ERROR b2\n");
    assert!(wait_for(Duration::from_secs(10), || stored_count(&r) == 5));
    std::thread::sleep(Duration::from_millis(500));
    let per_file = stored_alerts(&r, "A");
    assert_eq!(per_file.len(), 2, "nothing before group_interval: {per_file:?}");
    assert_ne!(per_file[0]["alert_uid"], per_file[1]["alert_uid"], "one group per stream");
    assert!(per_file.iter().any(|x| x["title"].as_str().unwrap().ends_with("/a.log")), "{per_file:?}");
    assert_eq!(stored_alerts(&r, "B").len(), 1, "group_by job joins both files");
    assert_eq!(agent.metric(r#"tailship_alert_groups_open{rule="per-file"}"#), 2.0);

    assert!(agent.terminate(Duration::from_secs(15)).success());
    let per_file = stored_alerts(&r, "A");
    let uid_a =
        per_file.iter().find(|x| x["title"].as_str().unwrap().ends_with("/a.log")).unwrap()["alert_uid"].clone();
    let of_a: Vec<_> = per_file.iter().filter(|x| x["alert_uid"] == uid_a).collect();
    let states: Vec<(&str, u64)> = of_a
        .iter()
        .map(|x| (x["state"].as_str().unwrap(), if x["state"] == "alerting" { count_in_title(x) } else { 0 }))
        .collect();
    assert_eq!(states, vec![("alerting", 1), ("alerting", 2), ("ok", 0)], "{per_file:?}");
    assert_eq!(per_file.iter().filter(|x| x["state"] == "ok").count(), 2, "both file groups resolved");
    let per_job = stored_alerts(&r, "B");
    let states: Vec<_> = per_job.iter().map(|x| x["state"].as_str().unwrap()).collect();
    assert_eq!(states, vec!["alerting", "alerting"], "flushed, not resolved (resolve_on_shutdown is off)");
    assert_eq!(count_in_title(&per_job[0]) + count_in_title(&per_job[1]), 5, "every match of both files counted");
}

#[test]
fn max_per_minute_holds_back_further_groups_of_a_rule() {
    let (r, dir, cfg) = setup(&[], |base| {
        format!(
            r#"[[alerts]]
name = "limited"
match = 'ERROR'
webhook_url = "{}{HOOK}/L/"
max_per_minute = 2
group_interval = "200ms"
"#,
            base
        )
    });
    for i in 0..5 {
        std::fs::write(dir.path().join(format!("{i}.log")), "ERROR\n").unwrap();
    }
    let agent = Agent::start(&cfg);
    assert!(wait_for(Duration::from_secs(10), || stored_count(&r) == 5));
    assert!(wait_for(Duration::from_secs(5), || stored_alerts(&r, "L").len() >= 2));
    // Keep one stream matching: its updates are limited too.
    for _ in 0..10 {
        append(&dir.path().join("0.log"), "ERROR again\n");
        std::thread::sleep(Duration::from_millis(300));
    }
    assert_eq!(stored_alerts(&r, "L").len(), 2, "{:?}", stored_alerts(&r, "L"));
    assert_eq!(agent.metric(r#"tailship_alert_groups_open{rule="limited"}"#), 2.0);
    assert_eq!(agent.metric(r#"tailship_alert_matches_total{rule="limited"}"#), 15.0);
    assert_eq!(agent.metric("tailship_alert_updates_dropped_total"), 0.0, "held back, not dropped");
}

#[test]
fn an_annotation_is_posted_when_an_alert_fires_with_path_headers_and_body() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let mock = rt.block_on(Mock::start(|req, _| {
        if req.path == "/api/annotations" {
            Reply::ok(serde_json::json!({ "id": 1, "message": "Annotation added" }))
        } else {
            Reply::text(200, "Ok.")
        }
    }));
    let r = Receiver::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let token = write_file(dir.path(), "sa-token", "glsa_service_account_token\n");
    let cfg = config(
        dir.path(),
        &r.base,
        FAST_RETRY,
        &format!(
            r#"[[alerts]]
name = "errs"
match = 'ERROR'
webhook_url = "{url}{HOOK}/K/"
group_interval = "200ms"
annotations = {{ url = "{url}/", token_file = "{token}", org_id = 7, tags = ["team-a"] }}
"#,
            url = mock.url,
            token = token.display()
        ),
    );
    let log = dir.path().join("a.log");
    std::fs::write(&log, "ERROR first\n").unwrap();
    let agent = Agent::start(&cfg);
    assert!(wait_for(Duration::from_secs(10), || mock.requests().iter().any(|q| q.path == "/api/annotations")));
    append(&log, "ERROR second\n");
    assert!(wait_for(Duration::from_secs(10), || mock
        .requests()
        .iter()
        .filter(|q| q.path != "/api/annotations")
        .count()
        == 2));
    std::thread::sleep(Duration::from_millis(300));
    let reqs = mock.requests();
    let ann: Vec<_> = reqs.iter().filter(|q| q.path == "/api/annotations").collect();
    assert_eq!(ann.len(), 1, "one annotation when the group opens, none on updates");
    let a = ann[0];
    assert_eq!(a.method, "POST");
    assert_eq!(a.header("authorization"), Some("Bearer glsa_service_account_token"));
    assert_eq!(a.header("x-service-org-id"), Some("7"));
    assert_eq!(a.header("content-type"), Some("application/json"));
    let body = a.json();
    assert!(body["time"].as_i64().unwrap() > 1_600_000_000_000, "{body}");
    let tags: Vec<&str> = body["tags"].as_array().unwrap().iter().map(|t| t.as_str().unwrap()).collect();
    for t in ["tailship", "errs", "job:test", "team-a"] {
        assert!(tags.contains(&t), "{t} in {tags:?}");
    }
    assert!(tags.iter().any(|t| t.starts_with("filename:") && t.ends_with("a.log")), "{tags:?}");
    assert!(body["text"].as_str().unwrap().starts_with("errs: 1 matching line\n"), "{body}");
    assert!(
        wait_for(Duration::from_secs(5), || agent.metric(r#"tailship_alert_annotations_total{rule="errs"}"#) == 1.0)
    );
}

#[test]
fn alert_test_sends_an_alert_and_its_resolve_and_reports_the_answers() {
    let (r, _dir, cfg) = setup(&["--webhook-key", "GOOD"], |base| {
        format!(
            "[[alerts]]\nname = \"good\"\nmatch = 'E'\nwebhook_url = \"{b}{HOOK}/GOOD/\"\n\n\
             [[alerts]]\nname = \"bad\"\nmatch = 'E'\nwebhook_url = \"{b}{HOOK}/BADKEY123/\"\n",
            b = base
        )
    });
    let out =
        Command::new(bin()).args(["alert", "test", "--config"]).arg(&cfg).args(["--rule", "good"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{text}{}", String::from_utf8_lossy(&out.stderr));
    assert!(text.contains("alerting -> 200 Ok."), "{text}");
    assert!(text.contains("ok       -> 200 Ok."), "{text}");
    let stored = stored_alerts(&r, "GOOD");
    let states: Vec<_> = stored.iter().map(|a| a["state"].as_str().unwrap()).collect();
    assert_eq!(states, vec!["alerting", "ok"]);
    assert_eq!(stored[0]["alert_uid"], stored[1]["alert_uid"]);
    assert!(stored[0]["title"].as_str().unwrap().starts_with("[test] good:"));

    let out = Command::new(bin()).args(["alert", "test", "--config"]).arg(&cfg).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains("rule bad:") && text.contains("403 unknown integration key"), "{text}");
    assert!(!text.contains("BADKEY123"), "{text}");

    let out =
        Command::new(bin()).args(["alert", "test", "--config"]).arg(&cfg).args(["--rule", "nope"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn check_reports_every_bad_alert_key_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = write_file(
        dir.path(),
        "bad.toml",
        r#"[[alerts]]
name = "a"
match = '('
exclude = '['
selector = '{job='
webhook_url = "http://h/x"
webhook_url_file = "/nonexistent"
title = "{{nope}}"
group_by = ["job"]
message = "{{label.host}}"
group_interval = "soon"

[[alerts]]
name = "b"
match = 'x'
webhook_url_file = "/nonexistent/url"
resolve_after = "0"
annotations = { url = "http://g", token_file = "/nonexistent/token" }

[[alerts]]
name = "b"
match = 'x'
"#,
    );
    let out = Command::new(bin()).args(["check", "--config"]).arg(&cfg).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let text = String::from_utf8_lossy(&out.stderr).into_owned();
    // A bad duration stops deserializing first; fix it and see the rest.
    assert!(text.contains("alerts[0].group_interval"), "{text}");
    let fixed = std::fs::read_to_string(&cfg).unwrap().replace("group_interval = \"soon\"\n", "");
    std::fs::write(&cfg, fixed).unwrap();
    let out = Command::new(bin()).args(["check", "--config"]).arg(&cfg).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let text = String::from_utf8_lossy(&out.stderr).into_owned();
    for key in [
        "alerts[0].match",
        "alerts[0].exclude",
        "alerts[0].selector",
        "alerts[0].webhook_url`: set webhook_url or webhook_url_file, not both",
        "alerts[0].title",
        "alerts[0].message",
        "alerts[1].webhook_url_file",
        "alerts[1].resolve_after",
        "alerts[1].annotations.token_file",
        "alerts[2].name",
        "alerts[2].webhook_url",
    ] {
        assert!(text.contains(key), "{key} in {text}");
    }
}

#[test]
fn sighup_reloads_alert_rules_a_removed_rule_resolves_an_added_one_fires_an_unchanged_one_keeps_its_group() {
    let r = Receiver::start(&["--webhook-key", "KEEP", "--webhook-key", "GONE", "--webhook-key", "NEW"]);
    let dir = tempfile::tempdir().unwrap();
    let rule = |name: &str, pattern: &str, key: &str, interval: &str| {
        format!(
            "[[alerts]]\nname = \"{name}\"\nmatch = '{pattern}'\nwebhook_url = \"{}{HOOK}/{key}/\"\ngroup_interval = \"{interval}\"\nresolve_after = \"10m\"\n",
            r.base
        )
    };
    let before = format!("{}{}", rule("keep", "ERROR", "KEEP", "1s"), rule("gone", "FATAL", "GONE", "1s"));
    let cfg = config(dir.path(), &r.base, FAST_RETRY, &before);
    let log = dir.path().join("app.log");
    std::fs::write(&log, "ERROR one\nFATAL one\n").unwrap();
    let agent = Agent::start(&cfg);
    assert!(wait_for(Duration::from_secs(20), || stored_alerts(&r, "KEEP").len() == 1
        && stored_alerts(&r, "GONE").len() == 1));

    // "keep" changes its interval, "gone" is removed, "new" is added.
    let after = format!("{}{}", rule("keep", "ERROR", "KEEP", "2s"), rule("new", "WARN", "NEW", "1s"));
    let text = std::fs::read_to_string(&cfg).unwrap().replace(&before, &after);
    std::fs::write(&cfg, text).unwrap();
    agent.signal(libc::SIGHUP);
    assert!(
        wait_for(Duration::from_secs(20), || stored_alerts(&r, "GONE").iter().any(|a| a["state"] == "ok")),
        "the removed rule's open group resolves: {:?}\n{}",
        stored_alerts(&r, "GONE"),
        agent.stderr_text()
    );
    append(&log, "WARN new\nERROR two\n");
    assert!(wait_for(Duration::from_secs(20), || stored_alerts(&r, "NEW").len() == 1), "the added rule fires");
    assert!(wait_for(Duration::from_secs(20), || stored_alerts(&r, "KEEP").len() == 2));
    let keep = stored_alerts(&r, "KEEP");
    assert_eq!(keep[0]["alert_uid"], keep[1]["alert_uid"], "the unchanged rule's group goes on");
    assert_eq!(keep[1]["state"], "alerting");
    assert!(count_in_title(&keep[1]) >= 1);
    assert!(agent.terminate(Duration::from_secs(15)).success());
}
