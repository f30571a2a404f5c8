//! Promtail's `metrics` stage through the real binary: counters (`inc`,
//! `add`, `value`, `match_all`, `count_entry_bytes`), gauges (`set`, `add`,
//! `inc`, `dec`, `sub`) and histograms (buckets, durations read as seconds)
//! scraped from the agent's `/metrics` with the lines' labels; idle series
//! removed after `max_idle_duration`; bad options refused by `check` naming
//! the key; and `convert promtail` carrying the stage over.

#[path = "common/agent.rs"]
mod agent;
mod common;

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
