//! Promtail configs as their authors wrote them, through the real binary:
//! mistakes Promtail refuses (an unknown stage, a bad regex, a source never
//! extracted, one metric name with two types) make `convert` (and `check`)
//! exit 2 naming the file and the key; RE2 regexes (a bare `{`, `\Q...\E`, `(?<name>)`) carry
//! over and do what they do in Promtail; `${VAR:default}` references are
//! expanded when tailship loads the converted config; and a config's
//! `${...}` references and `$$` read as the real Promtail's
//! `-config.expand-env=true` reads them.

use crate::agent;
use crate::common;
use crate::promtail;
use crate::scenario;

use std::process::Command;
use std::time::Duration;

use agent::{agent_config, free_port, query_all_at, write_file, Agent};
use common::{bin, wait_for};

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
    let recv = scenario::loki_receiver();
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
    let recv = scenario::loki_receiver();
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
    let recv = scenario::loki_receiver();
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

/// Values as written, and what the real Promtail 3.6.15 makes of them with
/// `-config.expand-env=true` (SET_V=val, EMPTY_V empty, UNSET_V and
/// UNSET_W unset).
const EXPAND_ENV: &[(&str, &str)] = &[
    ("${SET_V}", "val"),
    ("${SET_V:-x}", "val"),
    ("${UNSET_V:-dflt}", "dflt"),
    ("${EMPTY_V:-dflt}", "dflt"),
    ("${UNSET_V:=eq}", "eq"),
    ("${EMPTY_V=eq}", "eq"),
    ("${UNSET_V:-${SET_V}}", "val"),
    ("${UNSET_V:-${UNSET_W:-deep}}", "deep"),
    ("${UNSET_V:-a${SET_V}b}c", "avalbc"),
    ("${UNSET_V:-a}b}", "ab}"),
    ("${UNSET_V:-x$$y}", "x$$y"),
    ("$${SET_V}", "${SET_V}"),
    ("$${UNSET_V:-${SET_V}}", "${UNSET_V:-val}"),
    ("$$${SET_V}", "$val"),
    ("$$$${SET_V}", "$${SET_V}"),
    ("x$$y", "x$y"),
    ("$SET_V", "$SET_V"),
    ("end$", "end$"),
];

/// `${VAR:-default}` with a reference as its default came out as the text
/// `${SET_V}`, and `${VAR:=default}` was refused: a config's references
/// now read as Promtail's `-config.expand-env` reads them (checked against
/// the real Promtail where it is in `../shared/peers`). A variable unset
/// without a default stays an error naming it, where Promtail puts "".
#[test]
fn references_and_dollars_read_as_promtails_expand_env_reads_them() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let labels: Vec<String> = EXPAND_ENV.iter().enumerate().map(|(i, (v, _))| format!("l{i} = '{v}'")).collect();
    let extra = format!("external_labels = {{ {} }}", labels.join(", "));
    let cfg = agent_config(dir, "http://127.0.0.1:3100", &format!("{}/*.log", dir.display()), &extra, "");
    let check = |cfg: &std::path::Path| {
        Command::new(bin())
            .args(["check", "--config"])
            .arg(cfg)
            .env("SET_V", "val")
            .env("EMPTY_V", "")
            .env_remove("UNSET_V")
            .env_remove("UNSET_W")
            .output()
            .unwrap()
    };
    let out = check(&cfg);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let printed: toml::Table = String::from_utf8_lossy(&out.stdout).parse().unwrap();
    let ours = &printed["client"]["external_labels"];
    for (i, (written, want)) in EXPAND_ENV.iter().enumerate() {
        assert_eq!(ours[&format!("l{i}")].as_str(), Some(*want), "{written}");
    }
    let unset =
        agent_config(dir, "http://127.0.0.1:3100", "/tmp/x.log", "external_labels = { host = '${UNSET_V}' }", "");
    let out = check(&unset);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("key `client.external_labels.host`") && err.contains("UNSET_V is not set"), "{err}");
    // The table is what the real Promtail gives.
    let Some(theirs) = promtail_expanded(dir, EXPAND_ENV.iter().map(|(v, _)| *v)) else { return };
    for (i, (written, want)) in EXPAND_ENV.iter().enumerate() {
        assert_eq!(theirs.get(&format!("l{i}")).map(String::as_str), Some(*want), "Promtail's {written}");
    }
}

/// The real Promtail's reading of `values` with `-config.expand-env=true`
/// (as `external_labels` l0, l1, ...: its `-print-config-stderr`), or
/// `None` (skipped, saying so) without its binary.
fn promtail_expanded<'a>(
    dir: &std::path::Path,
    values: impl Iterator<Item = &'a str>,
) -> Option<std::collections::BTreeMap<String, String>> {
    use std::io::BufRead;
    let Some(bin) = promtail::binary() else {
        eprintln!("no Promtail binary in ../shared/peers: the comparison is skipped");
        return None;
    };
    let labels: String = values.enumerate().map(|(i, v)| format!("      l{i}: '{v}'\n")).collect();
    let yaml = format!(
        "server: {{ disable: true }}\npositions: {{ filename: {}/promtail-positions.yaml }}\n\
         clients:\n  - url: http://127.0.0.1:9/loki/api/v1/push\n    external_labels:\n{labels}scrape_configs: []\n",
        dir.display()
    );
    let cfg = write_file(dir, "promtail.yaml", &yaml);
    let mut child = Command::new(bin)
        .arg(format!("-config.file={}", cfg.display()))
        .args(["-config.expand-env=true", "-print-config-stderr", "-dry-run"])
        .current_dir(dir)
        .env("SET_V", "val")
        .env("EMPTY_V", "")
        .env_remove("UNSET_V")
        .env_remove("UNSET_W")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let stderr = child.stderr.take().unwrap();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stderr).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    // The printed config's `external_labels` block, until a line indented no deeper.
    let (mut block, mut indent) = (String::new(), None);
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while let Ok(line) = rx.recv_timeout(deadline.saturating_duration_since(std::time::Instant::now())) {
        let depth = line.len() - line.trim_start().len();
        match indent {
            // Printed as a literal block (`external_labels: |`) holding the mapping's YAML.
            None if line.trim().starts_with("external_labels:") => indent = Some(depth),
            Some(d) if depth > d => block.push_str(&format!("{line}\n")),
            Some(_) => break,
            None => {}
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    let margin = block.lines().map(|l| l.len() - l.trim_start().len()).min().unwrap_or(0);
    let block: String = block.lines().map(|l| format!("{}\n", &l[margin..])).collect();
    let doc = yaml_rust2::YamlLoader::load_from_str(&block).unwrap_or_else(|e| panic!("{e}: {block}"));
    let map = doc.first().and_then(|d| d.as_hash()).unwrap_or_else(|| panic!("no external_labels: {block}"));
    Some(
        map.iter()
            .filter_map(|(k, v)| Some((k.as_str()?.to_string(), v.as_str().unwrap_or_default().to_string())))
            .collect(),
    )
}
