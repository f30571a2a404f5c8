//! Promtail configs as their authors wrote them, through the real binary:
//! mistakes Promtail refuses (an unknown stage, a bad regex, a source never
//! extracted, one metric name with two types) make `convert` (and `check`)
//! exit 2 naming the file and the key; RE2 regexes (a bare `{`, `\Q...\E`, `(?<name>)`) carry
//! over and do what they do in Promtail; `${VAR:default}` references are
//! expanded when tailship loads the converted config.

#[path = "common/agent.rs"]
mod agent;
mod common;

use std::process::Command;
use std::time::Duration;

use agent::{agent_config, free_port, query_all_at, write_file, Agent};
use common::{bin, wait_for, Receiver};

fn convert(yaml: &std::path::Path) -> std::process::Output {
    Command::new(bin()).args(["convert", "promtail"]).arg(yaml).output().unwrap()
}

fn job(dir: &std::path::Path, push_url: &str, stages: &str) -> String {
    format!(
        r#"server:
  http_listen_address: 127.0.0.1
  http_listen_port: {port}
clients:
  - url: {push_url}
    batchwait: 100ms
positions:
  filename: {dir}/promtail-positions.yaml
scrape_configs:
  - job_name: app
    static_configs:
      - labels:
          job: app
          __path__: {dir}/app.log
    pipeline_stages:
{stages}"#,
        dir = dir.display(),
        port = free_port()
    )
}

#[test]
fn mistakes_promtail_refuses_exit_2_naming_the_file_and_the_key() {
    let tmp = tempfile::tempdir().unwrap();
    let stages = r#"      - jsonn:
          expressions: { level: level }
      - regex:
          expression: '^(?P<ts>\S+) (?P<msg>.*'
      - regex:
          expression: '^(?P<time>\S+)'
      - timestamp:
          source: tim
          format: RFC3339
      - metrics:
          lines:
            type: Counter
            config: { match_all: true, action: inc }
      - metrics:
          lines:
            type: Gauge
            source: time
            config: { action: set }
"#;
    let yaml = write_file(tmp.path(), "promtail.yaml", &job(tmp.path(), "http://127.0.0.1:9/loki/api/v1/push", stages));
    let out = convert(&yaml);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(out.stdout.is_empty(), "no config is written");
    assert!(err.contains("promtail.yaml"), "{err}");
    for key in [
        "scrape_configs[0].pipeline_stages[0].jsonn",
        "scrape_configs[0].pipeline_stages[1].regex.expression",
        "scrape_configs[0].pipeline_stages[5].metrics.lines.type",
    ] {
        assert!(err.contains(key), "{key}: {err}");
    }
    // A stage reading a name no stage extracts (`tim`) is no mistake Promtail
    // refuses: it skips the stage on every line. Left out and listed by key.
    let only = "      - regex:\n          expression: '^(?P<time>\\S+)'\n      - timestamp:\n          source: tim\n          format: RFC3339\n";
    let yaml = write_file(tmp.path(), "promtail.yaml", &job(tmp.path(), "http://127.0.0.1:9/loki/api/v1/push", only));
    let out = convert(&yaml);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains("not translated") && err.contains("scrape_configs[0].pipeline_stages[1].timestamp.source"),
        "{err}"
    );

    // `check` refuses the same mistakes in a tailship config.
    for (stages, key) in [
        (r#"stages = [{ jsonn = { a = "a" } }]"#, "sources[0].stages[0].jsonn"),
        (r#"stages = [{ regex = '(?P<a>x' }]"#, "sources[0].stages[0].regex"),
        (
            r#"stages = [{ regex = '(?P<a>x)' }, { timestamp = { source = "b", format = "rfc3339" } }]"#,
            "timestamp.source",
        ),
        (
            r#"stages = [{ regex = '(?P<a>\d+)' }, { metrics = { lines = { type = "counter", config = { match_all = true, action = "inc" } } } }, { metrics = { lines = { type = "histogram", source = "a" } } }]"#,
            "sources[0].stages[2].metrics.lines.type",
        ),
    ] {
        let cfg = agent_config(tmp.path(), "http://127.0.0.1:9", "/tmp/x.log", "", stages);
        let out = Command::new(bin()).args(["check", "--config"]).arg(&cfg).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stages}: {err}");
        assert!(err.contains(key) && err.contains("tailship.toml"), "{stages}: {err}");
    }
}

#[test]
fn re2_regexes_join_and_extract_as_in_promtail() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let recv = Receiver::start(&["--api-prefix", "/loki/api/v1", "--max-query-limit", "1000000"]);
    let stages = r#"      - multiline:
          firstline: '^\d{4}-\d{2}-\d{2}|^\[|^{'
          max_wait_time: 500ms
      - regex:
          expression: '^\Q[\E(?<lvl>\w+)\Q]\E'
      - labels:
          lvl:
      - replace:
          expression: '{"pw":"(\w+)"'
          replace: '***'
"#;
    let yaml = write_file(dir, "promtail.yaml", &job(dir, &format!("{}/loki/api/v1/push", recv.base), stages));
    let out = convert(&yaml);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(!err.contains("pipeline_stages"), "every stage carries over: {err}");
    let config = write_file(dir, "tailship.toml", &String::from_utf8_lossy(&out.stdout));
    write_file(
        dir,
        "app.log",
        "2024-01-02 first\n  at one\n[warn] second\n  at two\n{\"pw\":\"hunter2\"}\n  more\n2024-01-03 last\n",
    );
    let agent = Agent::start(&config);
    let all = || query_all_at(&recv, "/loki/api/v1", r#"{job="app"}"#, None);
    assert!(wait_for(Duration::from_secs(20), || all().len() == 4), "{:?}\n{}", all(), agent.stderr_text());
    let mut lines: Vec<(String, Option<String>)> = all()
        .into_iter()
        .map(|e| (e.line.clone(), e.labels.get("lvl").and_then(|v| v.as_str()).map(String::from)))
        .collect();
    lines.sort();
    assert_eq!(
        lines,
        [
            ("2024-01-02 first\n  at one".to_string(), None),
            ("2024-01-03 last".to_string(), None),
            ("[warn] second\n  at two".to_string(), Some("warn".to_string())),
            ("{\"pw\":\"***\"}\n  more".to_string(), None),
        ]
    );
    assert!(agent.terminate(Duration::from_secs(15)).success());
}

#[test]
fn colon_defaults_are_expanded_when_tailship_loads_the_config() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let recv = Receiver::start(&["--api-prefix", "/loki/api/v1", "--max-query-limit", "1000000"]);
    let yaml = job(
        dir,
        &format!("{}/loki/api/v1/push", recv.base),
        "      - static_labels: { env: '${ENV_NAME:dev}', dc: '${DC_NAME:-eu}' }\n",
    );
    let yaml = write_file(dir, "promtail.yaml", &yaml);
    let out = convert(&yaml);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("expand-env"), "the difference is reported: {err}");
    let config = write_file(dir, "tailship.toml", &String::from_utf8_lossy(&out.stdout));
    write_file(dir, "app.log", "hello\n");
    let agent = Agent::start_with(&config, &[("DC_NAME", "us")]);
    let all = || query_all_at(&recv, "/loki/api/v1", r#"{job="app"}"#, None);
    assert!(wait_for(Duration::from_secs(20), || all().len() == 1), "{}", agent.stderr_text());
    let e = &all()[0];
    assert_eq!(e.labels.get("env").and_then(|v| v.as_str()), Some("dev"));
    assert_eq!(e.labels.get("dc").and_then(|v| v.as_str()), Some("us"));
    assert!(agent.terminate(Duration::from_secs(15)).success());
}

/// `$` is written `$$` only where tailship's config loading would read it
/// (before `$` or a `{` that is no `${1}`): regexes, templates and values
/// read as written, and carry the same text to the agent.
#[test]
fn dollars_are_doubled_only_where_tailship_would_expand_them() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let recv = Receiver::start(&["--api-prefix", "/loki/api/v1", "--max-query-limit", "1000000"]);
    let stages = r#"      - regex:
          expression: '(?P<last>\w+)$'
      - template:
          source: last
          template: '{{ $v := .Value }}{{ $v }}$'
      - labels:
          last:
      - static_labels: { price: '$5', tag: 'x${' }
"#;
    let yaml = write_file(dir, "promtail.yaml", &job(dir, &format!("{}/loki/api/v1/push", recv.base), stages));
    let out = convert(&yaml);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let toml = String::from_utf8_lossy(&out.stdout).to_string();
    for written in [r"'(?P<last>\w+)$'", r#""{{ $v := .Value }}{{ $v }}$""#, r#"price = "$5""#, r#"tag = "x$${""#] {
        assert!(toml.contains(written), "{written}: {toml}");
    }
    let config = write_file(dir, "tailship.toml", &toml);
    write_file(dir, "app.log", "price is high\n");
    let agent = Agent::start(&config);
    let all = || query_all_at(&recv, "/loki/api/v1", r#"{job="app"}"#, None);
    assert!(wait_for(Duration::from_secs(20), || all().len() == 1), "{}", agent.stderr_text());
    let e = &all()[0];
    for (name, value) in [("last", "high$"), ("price", "$5"), ("tag", "x${")] {
        assert_eq!(e.labels.get(name).and_then(|v| v.as_str()), Some(value), "{name}: {:?}", e.labels);
    }
    assert!(agent.terminate(Duration::from_secs(15)).success());
}
