//! Promtail's `metrics` stage through the real binary: counters (`inc`,
//! `add`, `value`, `match_all`, `count_entry_bytes`), gauges (`set`, `add`,
//! `inc`, `dec`, `sub`) and histograms (buckets, durations read as seconds)
//! scraped from the agent's `/metrics` with the lines' labels; idle series
//! removed after `max_idle_duration`; bad options refused by `check` naming
//! the key; and `convert promtail` carrying the stage over. Then the lines
//! Promtail's stages drop, counted as the real Promtail counts them
//! (`logentry_dropped_lines_total`, `..._by_label_total`), and every family
//! the real Promtail serves either served alike or listed as not served on
//! the differences page.

use crate::agent;
use crate::common;
use crate::promtail;
use crate::scrape;

use std::process::Command;
use std::time::Duration;

use agent::{agent_config, metric_value, query_all, write_file, Agent};
use common::{bin, wait_for, Receiver};

const STAGES: &str = r#"host_label = false
stages = [
  { regex = '^(?P<lvl>\w+) (?P<dur>\S+) (?P<bytes>\d+) (?P<queue>\S+)' , labels = ["lvl"] },
  { metrics = { lines_total = { type = "Counter", description = "all lines", config = { match_all = true, action = "inc" } }, line_bytes = { type = "counter", prefix = "app_", config = { match_all = true, count_entry_bytes = true, action = "add" } }, errors_total = { type = "counter", source = "lvl", config = { value = "error", action = "inc" } }, bytes_total = { type = "counter", source = "bytes", config = { action = "add" } }, queue = { type = "gauge", config = { action = "set" } }, queue_sum = { type = "gauge", source = "queue", config = { action = "add" } }, dur = { type = "histogram", description = "durations", config = { buckets = [0.001, 0.5, 2] } } } },
]"#;

#[test]
fn counters_gauges_and_histograms_are_served_with_the_lines_labels() {
    let r = Receiver::start(&["--max-query-limit", "1000000"]);
    let dir = tempfile::tempdir().unwrap();
    let lines = ["info 0.5ms 10 3", "error 1.5 20 -4", "error 3s 5 7", "info nope 1 x"];
    let log = write_file(dir.path(), "app.log", &(lines.join("\n") + "\n"));
    let cfg = agent_config(dir.path(), &r.base, &log.display().to_string(), "", STAGES);
    let agent = Agent::start(&cfg);
    assert!(
        wait_for(Duration::from_secs(20), || query_all(&r, r#"{job="test"}"#, None).len() == 4),
        "{}",
        agent.stderr_text()
    );
    let file = log.display().to_string();
    let name = |m: &str, lvl: &str| format!(r#"{m}{{filename="{file}",job="test",lvl="{lvl}"}}"#);
    let text = agent.metrics();
    let v = |m: &str, lvl: &str| metric_value(&text, &name(m, lvl));
    assert!(text.contains("# HELP promtail_custom_lines_total all lines"), "{text}");
    assert!(text.contains("# TYPE promtail_custom_lines_total counter"), "{text}");
    assert_eq!((v("promtail_custom_lines_total", "info"), v("promtail_custom_lines_total", "error")), (2.0, 2.0));
    assert_eq!(v("app_line_bytes", "info"), ("info 0.5ms 10 3".len() + "info nope 1 x".len()) as f64);
    assert_eq!(v("promtail_custom_errors_total", "error"), 2.0);
    assert_eq!(v("promtail_custom_errors_total", "info"), 0.0, "value filter: no info series");
    assert!(!text.contains(&name("promtail_custom_errors_total", "info")), "{text}");
    assert_eq!(v("promtail_custom_bytes_total", "info"), 11.0);
    assert_eq!(v("promtail_custom_queue", "error"), 7.0, "set: the last value");
    assert_eq!(v("promtail_custom_queue", "info"), 3.0, "`x` is no number: the gauge keeps 3");
    assert_eq!(v("promtail_custom_queue_sum", "error"), 3.0);
    assert!(text.contains("# TYPE promtail_custom_dur histogram"), "{text}");
    let bucket = |le: &str, lvl: &str| {
        metric_value(
            &text,
            &format!(r#"promtail_custom_dur_bucket{{filename="{file}",job="test",lvl="{lvl}",le="{le}"}}"#),
        )
    };
    assert_eq!((bucket("0.001", "info"), bucket("0.5", "info"), bucket("+Inf", "info")), (1.0, 1.0, 1.0));
    assert_eq!((bucket("0.5", "error"), bucket("2", "error"), bucket("+Inf", "error")), (0.0, 1.0, 2.0));
    assert_eq!(v("promtail_custom_dur_sum", "error"), 4.5, "1.5 and 3s, in seconds");
    assert_eq!(v("promtail_custom_dur_count", "info"), 1.0, "`nope` is not observed");
    assert!(agent.terminate(Duration::from_secs(15)).success());
}

#[test]
fn idle_series_are_removed_after_max_idle_duration() {
    let r = Receiver::start(&["--max-query-limit", "1000000"]);
    let dir = tempfile::tempdir().unwrap();
    let log = write_file(dir.path(), "app.log", "one\n");
    let stages = r#"stages = [{ metrics = { short = { type = "counter", max_idle_duration = "1s", config = { match_all = true, action = "inc" } }, long = { type = "counter", config = { match_all = true, action = "inc" } } } }]"#;
    let cfg = agent_config(dir.path(), &r.base, &log.display().to_string(), "", stages);
    let agent = Agent::start(&cfg);
    assert!(wait_for(Duration::from_secs(20), || agent.metric("promtail_custom_short") == 1.0), "{}", agent.metrics());
    assert!(
        wait_for(Duration::from_secs(10), || !agent.metrics().contains("promtail_custom_short")),
        "removed once idle for 1s: {}",
        agent.metrics()
    );
    assert_eq!(agent.metric("promtail_custom_long"), 1.0, "the default keeps it 5 minutes");
    assert!(agent.terminate(Duration::from_secs(15)).success());
}

fn check(dir: &std::path::Path, stages: &str) -> (Option<i32>, String) {
    let cfg = agent_config(dir, "http://127.0.0.1:9", &dir.join("x.log").display().to_string(), "", stages);
    let out = Command::new(bin()).args(["check", "--config"]).arg(&cfg).output().unwrap();
    (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn check_refuses_bad_metric_options_naming_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (r#"{ metrics = { m = { type = "summary", config = { action = "inc" } } } }"#, "metrics.m.type"),
        (r#"{ metrics = { m = { type = "counter", config = { action = "set" } } } }"#, "metrics.m.config.action"),
        (r#"{ metrics = { m = { type = "gauge" } } }"#, "metrics.m.config.action"),
        (
            r#"{ metrics = { m = { type = "counter", config = { match_all = true, value = "x", action = "inc" } } } }"#,
            "metrics.m.config.match_all",
        ),
        (
            r#"{ metrics = { m = { type = "counter", config = { match_all = true, count_entry_bytes = true, action = "inc" } } } }"#,
            "metrics.m.config.count_entry_bytes",
        ),
        (
            r#"{ metrics = { m = { type = "counter", max_idle_duration = "500ms", config = { match_all = true, action = "inc" } } } }"#,
            "metrics.m.max_idle_duration",
        ),
        (r#"{ metrics = { m = { type = "histogram", config = { buckets = [2, 1] } } } }"#, "metrics.m.config.buckets"),
        (
            r#"{ metrics = { m = { type = "counter", source = "nope", config = { action = "inc" } } } }"#,
            "metrics.m.source",
        ),
        (
            r#"{ metrics = { "bad-name" = { type = "counter", config = { match_all = true, action = "inc" } } } }"#,
            "metrics.bad-name",
        ),
    ];
    for (stage, key) in cases {
        let (code, stderr) = check(dir.path(), &format!("stages = [{{ regex = '(?P<m>x)' }}, {stage}]"));
        assert_eq!(code, Some(2), "{stage}: {stderr}");
        assert!(stderr.contains(&format!("stages[1].{key}")), "{stage} names {key}: {stderr}");
    }
    let (code, stderr) = check(dir.path(), &format!("stages = [{{ regex = '(?P<m>x)' }}, {}]", STAGES_OK));
    assert_eq!(code, Some(0), "{stderr}");
}

const STAGES_OK: &str = r#"{ metrics = { m = { type = "histogram", config = { buckets = [1, 2] } } } }"#;

#[test]
fn convert_carries_the_metrics_stage_over_and_refuses_what_promtail_refuses() {
    let dir = tempfile::tempdir().unwrap();
    let yaml = |stage: &str| {
        format!(
            "clients:\n  - url: http://127.0.0.1:3100/loki/api/v1/push\nscrape_configs:\n  - job_name: app\n    static_configs:\n      - targets: [localhost]\n        labels:\n          __path__: /var/log/app.log\n    pipeline_stages:\n      - regex:\n          expression: '(?P<level>\\w+) (?P<took>\\S+)'\n{stage}"
        )
    };
    let good = "      - metrics:\n          lines:\n            type: Counter\n            description: lines\n            config:\n              match_all: true\n              action: inc\n          took:\n            type: Histogram\n            max_idle_duration: 24h\n            config:\n              action: inc\n              buckets: [0.1, 1, 10]\n          level_errors:\n            type: Gauge\n            source: level\n            prefix: my_\n            config:\n              value: error\n              action: Inc\n";
    let p = write_file(dir.path(), "good.yaml", &yaml(good));
    let out = Command::new(bin()).args(["convert", "promtail"]).arg(&p).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(!stderr.contains("not translated"), "{stderr}");
    assert!(stderr.contains("config.action"), "the histogram's ignored action is noted: {stderr}");
    let toml = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(toml.contains("metrics = {"), "{toml}");
    let cfg = write_file(dir.path(), "tailship.toml", &toml);
    let check = Command::new(bin()).args(["check", "--config"]).arg(&cfg).output().unwrap();
    assert_eq!(check.status.code(), Some(0), "{}\n{toml}", String::from_utf8_lossy(&check.stderr));

    let bad =
        "      - metrics:\n          m:\n            type: counter\n            config:\n              action: set\n";
    let p = write_file(dir.path(), "bad.yaml", &yaml(bad));
    let out = Command::new(bin()).args(["convert", "promtail"]).arg(&p).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("pipeline_stages[1].metrics.m.config.action"), "{stderr}");
}

/// Stages of every kind that drops a line in Promtail: `drop` (default
/// reason), `match` with `action: drop` (its own reason), a `json` stage's
/// `drop_malformed` (which Promtail does not count) and a `limit` by label.
const DROPPING_STAGES: &str = r#"    pipeline_stages:
      - drop: { expression: debug }
      - match: { selector: '{job="app"} |= "three"', action: drop, drop_counter_reason: threes }
      - match:
          selector: '{job="app"} |= "json:"'
          stages:
            - json: { expressions: { level: level }, drop_malformed: true }
      - limit: { rate: 0.01, burst: 1, drop: true, by_label_name: job }
"#;

/// A Promtail config reading `dir/app.log` through [`DROPPING_STAGES`],
/// serving on `port` and pushing to `push`.
fn dropping_job(dir: &std::path::Path, port: u16, push: &str, name: &str) -> String {
    format!(
        "server: {{ http_listen_address: 127.0.0.1, http_listen_port: {port}, grpc_listen_port: 0, log_level: warn }}\n\
         positions: {{ filename: {d}/{name}-positions.yaml, sync_period: 200ms }}\n\
         clients:\n  - url: {push}\n    tenant_id: team-a\n\
         scrape_configs:\n  - job_name: app\n    static_configs:\n      - targets: [localhost]\n        \
         labels: {{ job: app, __path__: {d}/app.log }}\n{DROPPING_STAGES}",
        d = dir.display()
    )
}

/// The `logentry_*` samples of a scrape: name, labels, value.
fn logentry(s: &scrape::Scrape) -> Vec<String> {
    let mut out: Vec<String> = s
        .samples
        .iter()
        .filter(|(n, _, _)| n.starts_with("logentry_"))
        .map(|(n, l, v)| format!("{n}{l:?} {v}"))
        .collect();
    out.sort();
    out
}

/// The names (`` `name` ``, or a prefix `` `name_*` ``) the differences
/// page lists as not served.
fn listed_as_not_served() -> Vec<String> {
    let page = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/promtail-differences.md")).unwrap();
    let start = page.find("- **Not served**").expect("a Not served entry");
    let rest = &page[start + 2..];
    let end = [rest.find("\n- "), rest.find("\n\n")].into_iter().flatten().min().unwrap_or(rest.len());
    rest[..end].split('`').skip(1).step_by(2).map(str::to_string).collect()
}

/// tailship served no `logentry_dropped_lines_total`, which dashboards built
/// on Promtail read for the lines its stages drop, and the differences page
/// did not say so. Now the real Promtail 3.6.15 and tailship (on `convert`'s
/// conversion of the same config) read the same file through the same
/// dropping stages and serve the same `logentry_*` series, to the value;
/// and every family the real Promtail serves is served by tailship with its
/// type and label names, or named on the differences page as not served.
#[test]
fn stage_drops_count_in_logentry_dropped_lines_as_the_real_promtail_counts_them() {
    let dir = tempfile::tempdir().unwrap();
    let mut lines = "one\ntwo debug\nthree\njson: oops\n".to_string();
    (0..10).for_each(|i| lines.push_str(&format!("line {i}\n")));
    write_file(dir.path(), "app.log", &lines);
    let want = [
        r#"logentry_dropped_lines_by_label_total{"label_name": "job", "label_value": "app"} 10"#,
        r#"logentry_dropped_lines_total{"reason": "drop_stage"} 1"#,
        r#"logentry_dropped_lines_total{"reason": "ratelimit_drop_stage"} 10"#,
        r#"logentry_dropped_lines_total{"reason": "threes"} 1"#,
    ];
    // tailship, on the conversion.
    let r = Receiver::start(&["--api-prefix", "/loki/api/v1"]);
    let yaml = write_file(
        dir.path(),
        "ours.yaml",
        &dropping_job(dir.path(), agent::free_port(), &format!("{}/loki/api/v1/push", r.base), "ours"),
    );
    let out = Command::new(bin()).args(["convert", "promtail"]).arg(&yaml).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let toml = String::from_utf8_lossy(&out.stdout).replace("/var/lib/tailship", &dir.path().display().to_string());
    let agent = Agent::start(&write_file(dir.path(), "tailship.toml", &toml));
    let mut ours = scrape::Scrape::parse("");
    let counted = wait_for(Duration::from_secs(30), || {
        ours = scrape::Scrape::parse(&agent.metrics());
        logentry(&ours) == want && ours.value("promtail_sent_entries_total", &[("host", &r.addr)]) == Some(1.0)
    });
    assert!(counted, "{:#?}\n{}\n{toml}", logentry(&ours), agent.stderr_text());
    assert!(agent.terminate(Duration::from_secs(15)).success());

    // The real Promtail, on the same file and stages (pushing nowhere).
    let port = agent::free_port();
    let push = format!("http://127.0.0.1:{}/loki/api/v1/push", agent::free_port());
    let cfg = write_file(dir.path(), "promtail.yaml", &dropping_job(dir.path(), port, &push, "promtail"));
    let Some(p) = promtail::Promtail::start(dir.path(), &cfg, port) else { return };
    let mut theirs = scrape::Scrape::parse("");
    let counted = wait_for(Duration::from_secs(30), || {
        theirs = scrape::Scrape::parse(&common::get(&format!("{}/metrics", p.base)).text());
        logentry(&theirs).len() == want.len() && theirs.has("promtail_read_bytes_total")
    });
    assert!(counted, "{:#?}\n{}", logentry(&theirs), p.log_text());
    assert_eq!(logentry(&theirs), want, "the real Promtail's counts");

    let not_served = listed_as_not_served();
    let listed = |name: &str| {
        not_served.iter().any(|n| n == name || n.strip_suffix('*').is_some_and(|prefix| name.starts_with(prefix)))
    };
    let (ours, theirs) = (ours.families(|_| true), theirs.families(|_| true));
    let mut unlisted = Vec::new();
    for (name, (kind, labels)) in &theirs {
        match ours.get(name) {
            Some((our_kind, our_labels)) => {
                assert_eq!(our_kind, kind, "{name}'s type");
                assert_eq!(our_labels, labels, "{name}'s label names");
            }
            None if !listed(name) => unlisted.push(name.clone()),
            None => {}
        }
    }
    assert!(unlisted.is_empty(), "served by Promtail, not by tailship, and not listed as not served: {unlisted:?}");
    let stale: Vec<&String> = not_served.iter().filter(|n| ours.contains_key(n.as_str())).collect();
    assert!(stale.is_empty(), "listed as not served, but served: {stale:?}");
}
