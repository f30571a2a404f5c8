//! `packaging/monitoring/`: the alert and recording rules pass their
//! `promtool test rules` unit tests, every query of the rules and of the
//! Grafana dashboard parses, and every metric they name is served by a
//! running agent (`tailship run` shipping a file to a `tailship receive`,
//! with a push receiver that refused a request); push durations are told
//! apart per client.
//!
//! promtool comes with Debian's `prometheus` package (`.ci/run` installs it);
//! where it is absent the promtool checks say so and skip.

use crate::agent;
use crate::common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use agent::{agent_config, free_port, Agent};
use common::{request, wait_for, Receiver};

fn monitoring_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("packaging/monitoring")
}

const RULES: &str = "tailship.rules.yml";
const RULE_TESTS: &str = "tailship.rules.test.yml";
/// The rules as `rules.py --kubernetes-pods` writes them, and their tests.
const K8S_RULES: &str = "tailship.rules.kubernetes-pods.yml";
const K8S_RULE_TESTS: &str = "tailship.rules.kubernetes-pods.test.yml";
const DASHBOARD: &str = "tailship.dashboard.json";

/// Metrics Prometheus makes itself rather than scraping them.
const FROM_PROMETHEUS: &[&str] = &["up"];

/// Every `expr` of the rules file.
fn rule_exprs() -> Vec<String> {
    let text = std::fs::read_to_string(monitoring_dir().join(RULES)).unwrap();
    let docs = yaml_rust2::YamlLoader::load_from_str(&text).unwrap();
    let mut out = Vec::new();
    for group in docs[0]["groups"].as_vec().expect("groups") {
        for rule in group["rules"].as_vec().expect("rules") {
            out.push(rule["expr"].as_str().expect("every rule has an expr").to_string());
        }
    }
    out
}

/// Every query of the dashboard: its panels' targets and its variables' queries.
fn dashboard_exprs() -> Vec<String> {
    let text = std::fs::read_to_string(monitoring_dir().join(DASHBOARD)).unwrap();
    let dash: serde_json::Value = serde_json::from_str(&text).expect("the dashboard is JSON");
    let mut out = Vec::new();
    for panel in dash["panels"].as_array().expect("panels") {
        for target in panel["targets"].as_array().into_iter().flatten() {
            out.push(target["expr"].as_str().expect("every target has an expr").to_string());
        }
    }
    for var in dash["templating"]["list"].as_array().expect("variables") {
        if let Some(q) = var["query"]["query"].as_str() {
            // label_values(METRIC, LABEL) is Grafana's; the metric is what Prometheus sees.
            let inner = q.trim_start_matches("label_values(").trim_end_matches(')');
            let metric = inner.rsplit_once(',').map_or(inner, |(m, _)| m).trim();
            out.push(metric.to_string());
        }
    }
    assert!(out.len() > 20, "the dashboard has its panels: {out:?}");
    out
}

/// A dashboard query as Prometheus receives it: Grafana's variables replaced.
fn as_prometheus_sees_it(expr: &str) -> String {
    expr.replace("$__rate_interval", "5m").replace("$instance", ".*").replace("$cluster", ".*").replace("$job", ".*")
}

/// The metric names an expression reads (the agent's and the process's).
fn metric_names(expr: &str) -> BTreeSet<String> {
    let re = regex::Regex::new(r"\b(?:tailship|process)_[a-z0-9_]+|\bup\b").unwrap();
    let labels = regex::Regex::new(r#"\{[^}]*\}|"[^"]*""#).unwrap();
    let bare = labels.replace_all(expr, " ");
    re.find_iter(&bare).map(|m| m.as_str().to_string()).collect()
}

/// The metric names in a `/metrics` text (sample lines, with `_bucket` and the like).
fn served_names(text: &str) -> BTreeSet<String> {
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .map(|l| l.split(['{', ' ']).next().unwrap_or_default().to_string())
        .collect()
}

fn promtool() -> Option<PathBuf> {
    let found = Command::new("promtool").arg("--version").output().is_ok_and(|o| o.status.success());
    if !found {
        eprintln!("SKIP: promtool is not installed (Debian: apt-get install prometheus; .ci/run installs it)");
    }
    found.then(|| PathBuf::from("promtool"))
}

#[test]
fn the_alert_rules_pass_their_promtool_unit_tests() {
    let Some(promtool) = promtool() else { return };
    for (rules, tests) in [(RULES, RULE_TESTS), (K8S_RULES, K8S_RULE_TESTS)] {
        let check =
            Command::new(&promtool).args(["check", "rules", rules]).current_dir(monitoring_dir()).output().unwrap();
        assert!(
            check.status.success(),
            "{rules}: {}{}",
            String::from_utf8_lossy(&check.stdout),
            String::from_utf8_lossy(&check.stderr)
        );
        let test =
            Command::new(&promtool).args(["test", "rules", tests]).current_dir(monitoring_dir()).output().unwrap();
        let out = format!("{}{}", String::from_utf8_lossy(&test.stdout), String::from_utf8_lossy(&test.stderr));
        assert!(test.status.success() && out.contains("SUCCESS"), "{tests}: {out}");
    }
}

/// `rules.py` with `args`: the rules it writes.
fn rules_py(args: &[&str]) -> String {
    let out = Command::new("python3").arg(monitoring_dir().join("rules.py")).args(args).output().unwrap();
    assert!(out.status.success(), "rules.py {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// Before: TailshipDown selected `up{job="tailship"}` whatever the scrape,
/// so on Kubernetes (job `kubernetes-pods`) it never fired. The selector is
/// now said in one place, `rules.py`, and both packaged files are its output.
#[test]
fn the_packaged_rules_are_what_rules_py_writes_for_their_selector() {
    let read = |f: &str| std::fs::read_to_string(monitoring_dir().join(f)).unwrap();
    assert_eq!(rules_py(&[]), read(RULES), "{RULES} is stale: python3 rules.py > {RULES}");
    assert_eq!(rules_py(&["--kubernetes-pods"]), read(K8S_RULES), "python3 rules.py --kubernetes-pods > {K8S_RULES}");
    let custom = rules_py(&["--selector", r#"job="agents",team="logs""#]);
    assert!(custom.contains(r#"expr: up{job="agents",team="logs"} == 0"#), "{custom}");
    assert_eq!(custom.matches("up{").count(), 1, "only TailshipDown needs the selector");
    let bad = Command::new("python3")
        .arg(monitoring_dir().join("rules.py"))
        .args(["--selector", r#"job="x"} or vector(1)"#])
        .output()
        .unwrap();
    assert!(!bad.status.success() && String::from_utf8_lossy(&bad.stderr).contains("not a list of label matchers"));
}

#[test]
fn the_dashboard_filters_every_query_by_cluster_job_and_instance() {
    let text = std::fs::read_to_string(monitoring_dir().join(DASHBOARD)).unwrap();
    let dash: serde_json::Value = serde_json::from_str(&text).unwrap();
    let vars: Vec<&str> =
        dash["templating"]["list"].as_array().unwrap().iter().map(|v| v["name"].as_str().unwrap()).collect();
    assert_eq!(vars, ["datasource", "cluster", "job", "instance"]);
    for panel in dash["panels"].as_array().unwrap() {
        for target in panel["targets"].as_array().into_iter().flatten() {
            let expr = target["expr"].as_str().unwrap();
            let selectors = expr.matches('{').count();
            for var in ["cluster=~\"$cluster\"", "job=~\"$job\"", "instance=~\"$instance\""] {
                assert_eq!(expr.matches(var).count(), selectors, "{expr}: every selector needs {var}");
            }
        }
    }
}

#[test]
fn every_alert_rule_has_a_unit_test() {
    let rules = std::fs::read_to_string(monitoring_dir().join(RULES)).unwrap();
    let tests = std::fs::read_to_string(monitoring_dir().join(RULE_TESTS)).unwrap();
    let alerts: Vec<&str> = rules.lines().filter_map(|l| l.trim().strip_prefix("- alert: ")).collect();
    assert!(alerts.len() >= 9, "{alerts:?}");
    for alert in alerts {
        let firing = format!("alertname: {alert}\n        exp_alerts:\n          - exp_labels");
        let quiet = format!("alertname: {alert}\n        exp_alerts: []");
        assert!(tests.contains(&firing), "{RULE_TESTS} never sees {alert} fire");
        assert!(tests.contains(&quiet), "{RULE_TESTS} never sees {alert} stay quiet");
    }
}

#[test]
fn every_dashboard_query_parses() {
    let Some(promtool) = promtool() else { return };
    // promtool parses what it is given as rules: each query becomes a recording rule.
    let dir = tempfile::tempdir().unwrap();
    let mut rules = String::from("groups:\n  - name: dashboard\n    rules:\n");
    for (i, expr) in dashboard_exprs().iter().enumerate() {
        let expr = serde_json::to_string(&as_prometheus_sees_it(expr)).unwrap();
        rules.push_str(&format!("      - record: dashboard:query_{i}\n        expr: {expr}\n"));
    }
    std::fs::write(dir.path().join("dashboard.rules.yml"), &rules).unwrap();
    let check = Command::new(&promtool)
        .args(["check", "rules", "dashboard.rules.yml"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(
        check.status.success(),
        "{}{}\n{rules}",
        String::from_utf8_lossy(&check.stdout),
        String::from_utf8_lossy(&check.stderr)
    );
}

#[test]
fn every_metric_of_the_rules_and_the_dashboard_is_served_by_a_running_agent() {
    let dir = tempfile::tempdir().unwrap();
    let store = Receiver::start(&[]);
    let logs = dir.path().join("logs");
    std::fs::create_dir(&logs).unwrap();
    std::fs::write(logs.join("app.log"), "one line\n").unwrap();
    let push_listen = format!("127.0.0.1:{}", free_port());
    std::fs::write(dir.path().join("token"), "s3cret\n").unwrap();
    let receiver = format!(
        "[[sources]]\ntype = \"loki_push\"\nname = \"relay\"\nlisten = \"{push_listen}\"\n\
         receiver = {{ bearer_token_file = \"{d}/token\" }}\n[spool]\npath = \"{d}/spool\"\n",
        d = dir.path().display()
    );
    let config = agent_config(dir.path(), &store.base, &format!("{}/*.log", logs.display()), "", "");
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str(&receiver);
    std::fs::write(&config, text).unwrap();
    let agent = Agent::start(&config);
    // A push answered (push_requests_total{status}) and a sender refused (receiver_refused_total{reason}).
    assert!(
        wait_for(Duration::from_secs(20), || agent.metric("tailship_push_lines_total") >= 1.0),
        "the line was never delivered: {}",
        agent.stderr_text()
    );
    assert!(wait_for(Duration::from_secs(10), || std::net::TcpStream::connect(&push_listen).is_ok()));
    let refused = request(
        "POST",
        &format!("http://{push_listen}/loki/api/v1/push"),
        &[("Content-Type", "application/json")],
        br#"{"streams":[]}"#,
    );
    assert_eq!(refused.status, 401, "{}", refused.text());
    let mut served = BTreeSet::new();
    assert!(wait_for(Duration::from_secs(10), || {
        served = served_names(&agent.metrics());
        served.contains("tailship_receiver_refused_total") && served.contains("tailship_spool_bytes")
    }));
    let mut named = BTreeSet::new();
    for expr in rule_exprs().iter().chain(dashboard_exprs().iter()) {
        named.extend(metric_names(expr));
    }
    assert!(named.len() > 25, "{named:?}");
    let missing: Vec<&String> =
        named.iter().filter(|n| !served.contains(*n) && !FROM_PROMETHEUS.contains(&n.as_str())).collect();
    assert!(
        missing.is_empty(),
        "the rules or the dashboard name metrics the agent does not serve: {missing:?}\nserved: {served:?}"
    );
}

#[test]
fn ready_is_a_metric_that_follows_the_ready_endpoint() {
    // Nothing listens at the client's URL: the first push fails, /ready says 503, the gauge says 0.
    let dir = tempfile::tempdir().unwrap();
    let dead = format!("http://127.0.0.1:{}", free_port());
    let logs = dir.path().join("logs");
    std::fs::create_dir(&logs).unwrap();
    std::fs::write(logs.join("app.log"), "one line\n").unwrap();
    let agent = Agent::start(&agent_config(dir.path(), &dead, &format!("{}/*.log", logs.display()), "", ""));
    let addr = agent.metrics_addr.clone().unwrap();
    let mut text = String::new();
    assert!(wait_for(Duration::from_secs(20), || {
        text = agent.metrics();
        text.contains("\ntailship_ready 0") && common::get(&format!("http://{addr}/ready")).status == 503
    }));
    assert!(text.contains("# HELP tailship_ready "), "{text}");
    assert!(text.contains(r#"tailship_queue_max_bytes{client="default"}"#), "{text}");
}

#[test]
fn the_books_monitoring_chapter_names_every_alert_rule_and_metric() {
    let chapter =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("book/src/operations/monitoring.md"))
            .unwrap();
    let rules = std::fs::read_to_string(monitoring_dir().join(RULES)).unwrap();
    let named: Vec<String> = rules
        .lines()
        .filter_map(|l| l.trim().strip_prefix("- alert: ").or_else(|| l.trim().strip_prefix("- record: ")))
        .map(str::to_string)
        .collect();
    assert!(named.len() > 15, "{named:?}");
    let mut metrics = BTreeSet::new();
    for expr in rule_exprs().iter().chain(dashboard_exprs().iter()) {
        metrics.extend(metric_names(expr));
    }
    let undocumented: Vec<String> = named
        .into_iter()
        .chain(metrics.into_iter().filter(|m| !FROM_PROMETHEUS.contains(&m.as_str())))
        .map(|n| n.trim_end_matches("_bucket").to_string())
        .filter(|n| !chapter.contains(&format!("`{n}`")) && !chapter.contains(&format!("`{n}{{")))
        .collect();
    assert!(undocumented.is_empty(), "book/src/operations/monitoring.md does not name: {undocumented:?}");
}

/// `tailship_push_duration_seconds` had no `client` label: with two
/// services, a slow one could not be told from a fast one. Two clients, one
/// service answering at once and one after 300 ms: each has its own
/// series, and only the slow one's pushes average 300 ms or more.
#[test]
fn push_durations_are_per_client_so_a_slow_service_is_told_from_a_fast_one() {
    let dir = tempfile::tempdir().unwrap();
    let (fast, slow) = (Receiver::start(&[]), Receiver::start(&["--latency", "300ms"]));
    std::fs::write(dir.path().join("app.log"), "one line\n").unwrap();
    let text = format!(
        "[server]\nlisten = \"127.0.0.1:{port}\"\n[positions]\npath = \"{d}/positions.json\"\n\
         [[sources]]\ntype = \"file\"\ninclude = [\"{d}/*.log\"]\nscan_interval = \"200ms\"\n\
         [[clients]]\nname = \"fast\"\nurl = \"{fast}\"\nbatch = {{ max_wait = \"100ms\" }}\n\
         [[clients]]\nname = \"slow\"\nurl = \"{slow}\"\nbatch = {{ max_wait = \"100ms\" }}\n",
        port = free_port(),
        d = dir.path().display(),
        fast = fast.base,
        slow = slow.base,
    );
    let config = agent::write_file(dir.path(), "tailship.toml", &text);
    let agent = Agent::start(&config);
    let delivered = |c: &str| agent.metric(&format!("tailship_push_lines_total{{client=\"{c}\"}}")) >= 1.0;
    assert!(wait_for(Duration::from_secs(30), || delivered("fast") && delivered("slow")), "{}", agent.stderr_text());
    let text = agent.metrics();
    let mean = |c: &str| {
        let v = |part: &str| {
            agent::metric_value(&text, &format!("tailship_push_duration_seconds_{part}{{client=\"{c}\"}}"))
        };
        let count = v("count");
        assert!(count >= 1.0, "{c}: {text}");
        v("sum") / count
    };
    assert!(mean("slow") >= 0.3, "{text}");
    assert!(mean("fast") < 0.3, "{text}");
    assert!(agent.terminate(Duration::from_secs(15)).success());
}
