//! Promtail's own metrics (`server.promtail_metrics = true`) for the
//! dashboards and alerts of Promtail's mixin, through the real binary:
//! every `promtail_*` family the real Promtail 3.6 serves is served with
//! its type and label names; each metric the mixin's dashboard and alerts
//! read is there, fed from what the agent did (lines sent, files read, a
//! file it cannot open, push requests by status); the mixin's recording
//! rules and alerts, evaluated by `promtool test rules` over series taken
//! from two scrapes of a running agent, fire where they should (a service
//! that fails half the pushes, a slow service, a file the agent cannot
//! read) and only there; a reload turns them on and is counted; and the
//! metrics are not served when the key is off.

use crate::agent;
use crate::common;
use crate::promtail;
use crate::scrape;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use agent::{file_source, free_port, metric_value, write_file, Agent, AgentToml};
use common::{wait_for, Receiver};
use scrape::Scrape;

/// The mixin's recording rules and alerts (grafana/loki v3.6.15,
/// production/promtail-mixin: `recording_rules.libsonnet` through
/// mixin-utils' `histogramRules`, and `alerts.libsonnet`), as Prometheus
/// rule files write them; annotations left out.
const MIXIN_RULES: &str = r#"groups:
  - name: promtail_rules
    rules:
      - record: job:promtail_request_duration_seconds:99quantile
        expr: histogram_quantile(0.99, sum(rate(promtail_request_duration_seconds_bucket[1m])) by (le, job))
      - record: job:promtail_request_duration_seconds:50quantile
        expr: histogram_quantile(0.50, sum(rate(promtail_request_duration_seconds_bucket[1m])) by (le, job))
      - record: job:promtail_request_duration_seconds:avg
        expr: sum(rate(promtail_request_duration_seconds_sum[1m])) by (job) / sum(rate(promtail_request_duration_seconds_count[1m])) by (job)
      - record: job_status_code_namespace:promtail_request_duration_seconds:99quantile
        expr: histogram_quantile(0.99, sum(rate(promtail_request_duration_seconds_bucket[1m])) by (le, job, status_code, namespace))
  - name: promtail_alerts
    rules:
      - alert: PromtailRequestsErrors
        expr: |
          100 * sum(rate(promtail_request_duration_seconds_count{status_code=~"5..|failed"}[1m])) by (namespace, job, route, instance)
            /
          sum(rate(promtail_request_duration_seconds_count[1m])) by (namespace, job, route, instance)
            > 10
        for: 15m
        labels: { severity: critical }
      - alert: PromtailRequestLatency
        expr: job_status_code_namespace:promtail_request_duration_seconds:99quantile > 1
        for: 15m
        labels: { severity: critical }
      - alert: PromtailFileMissing
        expr: promtail_file_bytes_total unless promtail_read_bytes_total
        for: 15m
        labels: { severity: warning }
"#;

/// Every metric the mixin's dashboard ("Loki / Promtail") and alerts read.
const MIXIN_READS: &[&str] = &[
    "promtail_build_info",
    "promtail_targets_active_total",
    "promtail_files_active_total",
    "promtail_read_bytes_total",
    "promtail_read_lines_total",
    "promtail_file_bytes_total",
    "promtail_request_duration_seconds_bucket",
    "promtail_request_duration_seconds_sum",
    "promtail_request_duration_seconds_count",
];

/// What Promtail users' own dashboards and alerts read most, beside the mixin.
const ALSO_READ: &[&str] = &[
    "promtail_sent_entries_total",
    "promtail_dropped_entries_total",
    "promtail_encoded_bytes_total",
    "promtail_sent_bytes_total",
    "promtail_dropped_bytes_total",
    "promtail_batch_retries_total",
];

/// A file source over `dir/*.log` shipping to `url`, with Promtail's metrics on (or not).
fn config(dir: &Path, url: &str, promtail_metrics: bool) -> std::path::PathBuf {
    let client = "tenant_id = \"team-a\"\nbatch = { max_bytes = \"256KiB\", max_wait = \"50ms\" }\n\
                  retry = { min_backoff = \"10ms\", max_backoff = \"50ms\" }";
    let toml = AgentToml::new(dir, "10s").server(&format!("promtail_metrics = {promtail_metrics}"));
    toml.client(url, client).then(&file_source(dir, "app", "200ms")).write("tailship.toml")
}

fn append(path: &Path, text: &str) {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new().append(true).open(path).unwrap();
    f.write_all(text.as_bytes()).unwrap();
}

#[test]
fn every_family_promtail_serves_is_served_with_its_type_and_labels_and_tailships_counts() {
    let r = Receiver::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let log = write_file(dir.path(), "app.log", "one\ntwo\nthree\n");
    let agent = Agent::start(&config(dir.path(), &r.base, true));
    let path = log.display().to_string();
    let host = r.addr.clone();
    assert!(
        wait_for(Duration::from_secs(20), || {
            let s = Scrape::parse(&agent.metrics());
            s.value("promtail_sent_entries_total", &[("host", &host)]) == Some(3.0)
                && s.value("promtail_read_bytes_total", &[("path", &path)]) == Some(14.0)
        }),
        "{}\n{}",
        agent.metrics(),
        agent.stderr_text()
    );
    let text = agent.metrics();
    let ours = Scrape::parse(&text);
    for name in MIXIN_READS.iter().chain(ALSO_READ) {
        assert!(ours.has(name), "{name} is served: {text}");
    }
    let v = |name: &str, labels: &[(&str, &str)]| {
        ours.value(name, labels).unwrap_or_else(|| panic!("{name} {labels:?}: {text}"))
    };
    assert_eq!(v("promtail_file_bytes_total", &[("path", &path)]), 14.0);
    assert_eq!(v("promtail_read_lines_total", &[("path", &path)]), 3.0);
    assert_eq!(v("promtail_files_active_total", &[]), 1.0);
    assert_eq!(v("promtail_targets_active_total", &[]), 1.0, "one static glob");
    assert!(v("promtail_request_duration_seconds_count", &[("host", &host), ("status_code", "204")]) >= 1.0);
    let wire = v("promtail_sent_bytes_total", &[("host", &host)]);
    assert!(wire > 0.0 && wire <= v("promtail_encoded_bytes_total", &[("host", &host)]), "{text}");
    for reason in ["ingester_error", "rate_limited", "stream_limited", "line_too_long"] {
        let labels = [("host", host.as_str()), ("reason", reason), ("tenant", "team-a")];
        assert_eq!(v("promtail_dropped_entries_total", &labels), 0.0, "shown at 0 from the start");
    }
    assert_eq!(v("promtail_batch_retries_total", &[("host", &host), ("tenant", "team-a")]), 0.0);
    assert!(text.contains("promtail_build_info{"), "{text}");
    // The agent's own metrics are there as before.
    assert_eq!(metric_value(&text, "tailship_push_lines_total"), 3.0);

    // The real Promtail's families: each with the same type and label names.
    let Some(theirs) = promtail_scrape(dir.path(), &log) else { return };
    let (ours, theirs) = (ours.promtail_families(), theirs.promtail_families());
    assert!(theirs.len() >= 15, "{theirs:?}");
    for (name, (kind, labels)) in &theirs {
        let Some((our_kind, our_labels)) = ours.get(name) else { panic!("{name} is not served: {ours:?}") };
        assert_eq!(our_kind, kind, "{name}'s type");
        assert_eq!(our_labels, labels, "{name}'s label names");
    }
    assert!(agent.terminate(Duration::from_secs(15)).success());
}

/// The real Promtail over `log`, pushing nowhere (its client series exist
/// all the same, and a failed request is one of `request_duration_seconds`):
/// its `/metrics` once the file is read and its position synced; `None`
/// (the comparison skipped, saying so) without the binary.
fn promtail_scrape(dir: &Path, log: &Path) -> Option<Scrape> {
    promtail::binary()?;
    let port = free_port();
    let yaml = format!(
        "server: {{ http_listen_address: 127.0.0.1, http_listen_port: {port}, grpc_listen_port: 0, log_level: warn }}\n\
         positions: {{ filename: {dir}/promtail-positions.yaml, sync_period: 200ms }}\n\
         clients:\n  - url: http://127.0.0.1:{closed}/loki/api/v1/push\n    tenant_id: team-a\n\
         scrape_configs:\n  - job_name: app\n    static_configs:\n      - targets: [localhost]\n        \
         labels: {{ job: app, __path__: {log} }}\n",
        dir = dir.display(),
        closed = free_port(),
        log = log.display(),
    );
    let cfg = write_file(dir, "promtail.yaml", &yaml);
    let p = promtail::Promtail::start(dir, &cfg, port)?;
    let url = format!("{}/metrics", p.base);
    let mut scrape = None;
    let ready = wait_for(Duration::from_secs(30), || {
        let s = Scrape::parse(&common::get(&url).text());
        let done = s.has("promtail_read_bytes_total") && s.has("promtail_request_duration_seconds_count");
        scrape = Some(s);
        done
    });
    assert!(ready, "Promtail never read the file: {}", p.log_text());
    scrape
}

#[test]
fn off_by_default_nothing_of_promtails_is_served() {
    let r = Receiver::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    write_file(dir.path(), "app.log", "one\n");
    let agent = Agent::start(&config(dir.path(), &r.base, false));
    assert!(
        wait_for(Duration::from_secs(20), || agent.metric("tailship_push_lines_total") == 1.0),
        "{}",
        agent.stderr_text()
    );
    let text = agent.metrics();
    assert!(!text.contains("promtail_"), "{text}");
    assert!(agent.terminate(Duration::from_secs(15)).success());
}

#[test]
fn a_reload_turns_them_on_and_is_counted_as_promtail_counts_reloads() {
    let r = Receiver::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    write_file(dir.path(), "app.log", "one\n");
    let cfg = config(dir.path(), &r.base, false);
    let agent = Agent::start(&cfg);
    assert!(
        wait_for(Duration::from_secs(20), || agent.metric("tailship_push_lines_total") == 1.0),
        "{}",
        agent.stderr_text()
    );
    let text = std::fs::read_to_string(&cfg).unwrap();
    std::fs::write(&cfg, text.replace("promtail_metrics = false", "promtail_metrics = true")).unwrap();
    agent.signal(libc::SIGHUP);
    assert!(
        wait_for(Duration::from_secs(20), || agent.metrics().contains("promtail_config_reload_success_total 1")),
        "{}\n{}",
        agent.metrics(),
        agent.stderr_text()
    );
    assert!(agent.metrics().contains("promtail_files_active_total 1"), "{}", agent.metrics());
    assert!(!agent.stderr_text().contains("queue and server changes need a restart"), "{}", agent.stderr_text());
    std::fs::write(&cfg, "[client]\nurl = 5\n").unwrap();
    agent.signal(libc::SIGHUP);
    assert!(
        wait_for(Duration::from_secs(20), || agent.metrics().contains("promtail_config_reload_fail_total 1")),
        "{}",
        agent.metrics()
    );
    assert!(agent.terminate(Duration::from_secs(15)).success());
}

/// Runs the mixin's rules with `promtool test rules` over series made of
/// two scrapes (see [`input_series`]): after 20 minutes exactly the alerts
/// `expected` fire (per alert name, the labels of each, as YAML).
fn assert_mixin(promtool: &str, dir: &Path, first: &Scrape, second: &Scrape, expected: &[(&str, Vec<String>)]) {
    let rules = write_file(dir, "mixin.yaml", MIXIN_RULES);
    let check = Command::new(promtool).args(["check", "rules"]).arg(&rules).output().unwrap();
    assert!(check.status.success(), "{}", String::from_utf8_lossy(&check.stderr));
    let mut tests = format!(
        "rule_files: [{}]\nevaluation_interval: 1m\ntests:\n  - interval: 1m\n    input_series:\n{}\n    alert_rule_test:\n",
        rules.display(),
        input_series(first, second),
    );
    for (name, alerts) in expected {
        tests.push_str(&format!("      - eval_time: 20m\n        alertname: {name}\n        exp_alerts:"));
        if alerts.is_empty() {
            tests.push_str(" []\n");
        }
        for labels in alerts {
            tests.push_str(&format!("\n          - exp_labels: {{ {labels} }}"));
        }
        tests.push('\n');
    }
    let test_file = write_file(dir, "mixin_test.yaml", &tests);
    let out = Command::new(promtool).args(["test", "rules"]).arg(&test_file).output().unwrap();
    assert!(
        out.status.success(),
        "promtool test rules: {}{}\n{tests}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn the_mixins_latency_alert_fires_on_a_slow_service() {
    let Some(promtool) = promtool() else { return };
    let r = Receiver::start(&["--latency", "1100ms"]);
    let dir = tempfile::tempdir().unwrap();
    let log = write_file(dir.path(), "app.log", "one\n");
    let agent = Agent::start(&config(dir.path(), &r.base, true));
    let host = r.addr.clone();
    let scrape = || Scrape::parse(&agent.metrics());
    let sent = |n: f64| {
        wait_for(Duration::from_secs(30), || {
            scrape().value("promtail_sent_entries_total", &[("host", &host)]) == Some(n)
        })
    };
    assert!(sent(1.0), "{}\n{}", agent.metrics(), agent.stderr_text());
    let first = scrape();
    append(&log, "two\n");
    assert!(sent(2.0), "{}", agent.metrics());
    let second = scrape();
    let labels = "severity: critical, job: default/promtail, namespace: default, status_code: '204'".to_string();
    let alerts =
        [("PromtailRequestsErrors", vec![]), ("PromtailRequestLatency", vec![labels]), ("PromtailFileMissing", vec![])];
    assert_mixin(promtool, dir.path(), &first, &second, &alerts);
    assert!(agent.terminate(Duration::from_secs(15)).success());
}

/// `promtool`, or `None` (the test skips, saying so) where it is not installed.
fn promtool() -> Option<&'static str> {
    let found = Command::new("promtool").arg("--version").output().is_ok_and(|o| o.status.success());
    if !found {
        eprintln!("skipped: no promtool (Debian's prometheus package) on PATH");
    }
    found.then_some("promtool")
}

/// The agent as `nobody` when run as root (root reads any file), so that a
/// file can be unreadable; `None` (skipped, saying so) without `setpriv`.
fn unprivileged() -> Option<Vec<&'static str>> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Some(Vec::new());
    }
    if !Path::new("/usr/bin/setpriv").exists() {
        eprintln!("skipped: running as root and setpriv is missing, so no file is unreadable");
        return None;
    }
    Some(vec!["/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"])
}

/// Series for `promtool test rules` from two scrapes a while apart: each
/// `promtail_*` sample with the labels Prometheus adds when it scrapes
/// (`job`, `instance`, and `namespace` as on Kubernetes), over 20 minutes
/// at one sample a minute, growing each minute as it grew between the
/// scrapes (counters and histograms) or as last scraped (gauges).
fn input_series(first: &Scrape, second: &Scrape) -> String {
    let mut out = String::new();
    for (name, labels, v2) in second.samples.iter().filter(|(n, _, _)| n.starts_with("promtail_")) {
        let mut all = labels.clone();
        all.insert("job".into(), "default/promtail".into());
        all.insert("instance".into(), "agent:9080".into());
        all.insert("namespace".into(), "default".into());
        let series: Vec<String> =
            all.iter().map(|(k, v)| format!("{k}=\"{}\"", v.replace('\\', "\\\\").replace('"', "\\\""))).collect();
        let gauge = second.types.get(second.family(name)).is_some_and(|t| t == "gauge");
        let v1 = first.samples.iter().find(|(n, l, _)| n == name && l == labels).map_or(0.0, |s| s.2);
        let values = if gauge { format!("{v2}x20") } else { format!("{v1}+{}x20", v2 - v1) };
        out.push_str(&format!("      - series: '{name}{{{}}}'\n        values: '{values}'\n", series.join(", ")));
    }
    out
}

#[test]
fn the_mixins_alerts_fire_on_a_failing_service_and_an_unreadable_file_and_only_there() {
    let (Some(promtool), Some(wrapper)) = (promtool(), unprivileged()) else { return };
    // Every second push fails with 500 (and is retried until stored).
    let r = Receiver::start(&["--fail-every", "2", "--fail-status", "500"]);
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let log = write_file(dir.path(), "app.log", "one\n");
    let secret = write_file(dir.path(), "secret.log", "hidden\n");
    std::fs::set_permissions(&log, std::fs::Permissions::from_mode(0o666)).unwrap();
    std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o000)).unwrap();
    let agent = Agent::start_wrapped(&config(dir.path(), &r.base, true), &[], &wrapper);
    let host = r.addr.clone();
    let count = |s: &Scrape, code: &str| {
        s.value("promtail_request_duration_seconds_count", &[("host", &host), ("status_code", code)]).unwrap_or(0.0)
    };
    let scrape = || Scrape::parse(&agent.metrics());
    assert!(
        wait_for(Duration::from_secs(20), || {
            let s = scrape();
            s.value("promtail_sent_entries_total", &[("host", &host)]) == Some(1.0)
                && s.has("promtail_read_bytes_total")
                && s.value("promtail_file_bytes_total", &[("path", &secret.display().to_string())]) == Some(7.0)
        }),
        "{}\n{}",
        agent.metrics(),
        agent.stderr_text()
    );
    let first = scrape();
    // More lines, in several batches: more pushes, failed and not.
    let mut second = None;
    let grew = wait_for(Duration::from_secs(30), || {
        append(&log, "more\n");
        std::thread::sleep(Duration::from_millis(60));
        let s = scrape();
        let done = count(&s, "500") > count(&first, "500") + 1.0 && count(&s, "204") > count(&first, "204") + 1.0;
        second = Some(s);
        done
    });
    assert!(grew, "{}", agent.metrics());
    let second = second.unwrap();
    let secret_path = secret.display().to_string();

    let common = "job: default/promtail, instance: 'agent:9080', namespace: default";
    let alerts = [
        ("PromtailRequestsErrors", vec![format!("severity: critical, {common}")]),
        ("PromtailRequestLatency", vec![]),
        ("PromtailFileMissing", vec![format!("severity: warning, path: '{secret_path}', {common}")]),
    ];
    assert_mixin(promtool, dir.path(), &first, &second, &alerts);
    // The scrape is valid exposition text for Prometheus' own parser.
    let mut lint = Command::new(promtool)
        .args(["check", "metrics"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    {
        use std::io::Write;
        lint.stdin.take().unwrap().write_all(agent.metrics().as_bytes()).unwrap();
    }
    let lint = lint.wait_with_output().unwrap();
    let said = String::from_utf8_lossy(&lint.stdout).to_string() + &String::from_utf8_lossy(&lint.stderr);
    assert!(!said.contains("error while linting"), "{said}");
    // Its only complaints are Promtail's own: gauges named `_total`, as Promtail names them.
    let promtails_own = [
        "promtail_file_bytes_total",
        "promtail_files_active_total",
        "promtail_read_bytes_total",
        "promtail_targets_active_total",
    ];
    for complaint in said.lines().filter(|l| !l.trim().is_empty()) {
        assert!(
            promtails_own.iter().any(|n| complaint.starts_with(&format!("{n} non-counter metrics should not have"))),
            "{said}"
        );
    }
    assert!(agent.terminate(Duration::from_secs(15)).success());
}
