//! `tailship convert promtail` on a pipeline that lives on the extracted
//! map (`source` on regex, json, logfmt, replace and drop; a drop by value
//! and by joined sources with its own counter reason; labels with a rename;
//! a match with nested stages; tenant from an extracted value), then the converted config run for real
//! against `tailship receive`: each line ends as Promtail's stages leave it.

use crate::agent;
use crate::common;
use crate::discovery;
use crate::scenario;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use agent::{free_port, query_all_at, write_file, Agent, Stored};
use common::{bin, wait_for};

fn label<'a>(e: &'a Stored, name: &str) -> Option<&'a str> {
    e.labels.get(name).and_then(|v| v.as_str())
}

/// A Promtail config with `server` keys, one client pushing to `url` (and
/// its `client` keys after), and the job `app` tailing `dir/app.log`,
/// labelled `job: app` and `labels` (YAML lines), through `stages`.
fn app_config(dir: &Path, server: &str, url: &str, client: &str, labels: &str, stages: &str) -> String {
    format!(
        "server:\n{server}  http_listen_port: {port}\npositions:\n  filename: {d}/promtail-positions.yaml\n\
         clients:\n  - url: {url}\n{client}scrape_configs:\n  - job_name: app\n    static_configs:\n      \
         - targets: [localhost]\n        labels:\n          job: app\n{labels}          __path__: {d}/app.log\n    \
         pipeline_stages:\n{stages}",
        port = free_port(),
        d = dir.display()
    )
}

/// Loki's client of tests 1 and 2: tenant `base`, batches sent after 100ms.
const BASE_CLIENT: &str = "    tenant_id: base\n    batchwait: 100ms\n";
const LOOPBACK: &str = "  http_listen_address: 127.0.0.1\n";

fn promtail(dir: &Path, push_url: &str) -> String {
    app_config(dir, LOOPBACK, push_url, BASE_CLIENT, "", STAGES)
}

/// The stages of [`promtail`].
const STAGES: &str = r#"      - regex:
          expression: '^(?P<time>\S+) (?P<rest>.*)$'
      - json:
          source: rest
          expressions:
            level: level
            msg: msg
            org: org
      - logfmt:
          source: msg
          mapping:
            user:
      - replace:
          source: msg
          expression: 'secret=(\S+)'
          replace: '<redacted>'
      - drop:
          source: level
          value: debug
      - drop:
          source: [level, user]
          separator: /
          expression: '^warn/bot$'
          drop_counter_reason: bots
      - labels:
          severity: level
          user:
      - match:
          selector: '{severity="warn"} |= "disk"'
          pipeline_name: disks
          stages:
            - regex:
                source: msg
                expression: '^disk (?P<state>\w+)'
            - labels:
                state:
      - tenant:
          source: org
      - timestamp:
          source: time
          format: RFC3339
      - output:
          source: msg
"#;

#[test]
fn a_pipeline_on_the_extracted_map_converts_whole_and_ships_as_promtail_would() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let recv = scenario::loki_receiver_with(&["--multi-tenant"]);
    let yaml = write_file(dir, "promtail.yaml", &promtail(dir, &format!("{}/loki/api/v1/push", recv.base)));
    let out = Command::new(bin()).args(["convert", "promtail"]).arg(&yaml).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(!stderr.contains("not translated"), "every stage carries over: {stderr}");
    assert!(stderr.contains("pipeline_name"), "noted: {stderr}");
    let toml = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(toml.contains(r#"{ json = { level = "level", msg = "msg", org = "org" }, source = "rest" }"#), "{toml}");
    assert!(toml.contains(r#"reason = "bots""#), "{toml}");
    let config = write_file(dir, "tailship.toml", &toml);

    write_file(
        dir,
        "app.log",
        concat!(
            r#"2024-03-05T07:08:09Z {"level":"info","msg":"login user=ann secret=s3","org":"team-a"}"#,
            "\n",
            r#"2024-03-05T07:08:10Z {"level":"debug","msg":"noise user=ann","org":"team-a"}"#,
            "\n",
            r#"2024-03-05T07:08:11Z {"level":"warn","msg":"spam user=bot"}"#,
            "\n",
            r#"2024-03-05T07:08:12Z {"level":"warn","msg":"disk full user=ops"}"#,
            "\n",
        ),
    );
    let agent = Agent::start(&config);
    let all = |tenant: &str| query_all_at(&recv, "/loki/api/v1", r#"{job="app"}"#, Some(tenant));
    let arrived = wait_for(Duration::from_secs(20), || all("team-a").len() == 1 && all("base").len() == 1);
    assert!(arrived, "team-a {:?}\nbase {:?}\n{}", all("team-a"), all("base"), agent.stderr_text());
    let a = &all("team-a")[0];
    assert_eq!(a.line, "login user=ann secret=<redacted>");
    assert_eq!(a.ts, 1_709_622_489_000_000_000);
    assert_eq!((label(a, "severity"), label(a, "user"), label(a, "level")), (Some("info"), Some("ann"), None));
    assert_eq!(label(a, "state"), None, "the match selects warn lines only");
    let b = &all("base")[0];
    assert_eq!(
        (b.line.as_str(), label(b, "severity"), label(b, "user")),
        ("disk full user=ops", Some("warn"), Some("ops"))
    );
    assert_eq!(label(b, "state"), Some("full"), "set by the match's stages");
    let dropped =
        |reason: &str| agent.metric(&format!("tailship_lines_dropped_total{{reason=\"{reason}\",source=\"app\"}}"));
    assert!(
        wait_for(Duration::from_secs(10), || dropped("drop_stage") == 1.0 && dropped("bots") == 1.0),
        "{}",
        agent.metrics()
    );
    assert!(agent.terminate(Duration::from_secs(15)).success());
}

/// Under a `match`, `static_labels`, `labeldrop` and a fixed `tenant` act
/// on the lines it selects only; a `tenant` `label` is read per line (one
/// set under the match here): lines without it keep the client's tenant.
#[test]
fn static_labels_labeldrop_and_tenant_under_a_match_act_on_the_lines_it_selects() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let recv = scenario::loki_receiver_with(&["--multi-tenant"]);
    let stages = r#"      - regex:
          expression: '^(?P<level>\w+) '
      - labels:
          level:
      - match:
          selector: '{level="error"}'
          stages:
            - static_labels:
                team: ops
            - labeldrop: [env]
      - match:
          selector: '{level="audit"}'
          stages:
            - tenant:
                value: auditors
      - tenant:
          label: team
"#;
    let url = format!("{}/loki/api/v1/push", recv.base);
    let yaml = app_config(dir, LOOPBACK, &url, BASE_CLIENT, "          env: prod\n", stages);
    let (toml, stderr) = discovery::convert_promtail(dir, &yaml);
    assert!(!stderr.contains("not translated"), "every stage carries over: {stderr}");
    assert!(toml.contains(r#"{ static_labels = { team = "ops" } }"#), "{toml}");
    let config = write_file(dir, "tailship.toml", &toml);
    write_file(dir, "app.log", "info all well\nerror disk full\naudit login ann\n");
    let agent = Agent::start(&config);
    let all = |tenant: &str| query_all_at(&recv, "/loki/api/v1", r#"{job="app"}"#, Some(tenant));
    let arrived = wait_for(Duration::from_secs(20), || {
        all("base").len() == 1 && all("ops").len() == 1 && all("auditors").len() == 1
    });
    assert!(arrived, "base {:?}\nops {:?}\n{}", all("base"), all("ops"), agent.stderr_text());
    let info = &all("base")[0];
    assert_eq!((info.line.as_str(), label(info, "env"), label(info, "team")), ("info all well", Some("prod"), None));
    let error = &all("ops")[0];
    assert_eq!(
        (error.line.as_str(), label(error, "env"), label(error, "team")),
        ("error disk full", None, Some("ops"))
    );
    let audit = &all("auditors")[0];
    assert_eq!((label(audit, "level"), label(audit, "env")), (Some("audit"), Some("prod")));
    assert!(agent.terminate(Duration::from_secs(15)).success());
}

/// Two things public Promtail configs often do: the push URL comes from the
/// environment (`${LOKI_URL}`), and `labeldrop: [filename]` takes the file's
/// name off each line. Both carry over: the URL is split at `/push` when
/// tailship loads the config, and the label is taken off by a stage.
#[test]
fn a_push_url_from_the_environment_and_a_dropped_filename_carry_over() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let recv = scenario::loki_receiver();
    let yaml = app_config(dir, "", "${TEST_LOKI_URL}", "", "", "      - labeldrop: [filename]\n");
    let (toml, stderr) = discovery::convert_promtail(dir, &yaml);
    assert!(!stderr.contains("not translated"), "{stderr}");
    assert!(stderr.contains("clients[0].url"), "the split at load time is noted: {stderr}");
    let config = write_file(dir, "tailship.toml", &toml);
    write_file(dir, "app.log", "shipped without its file name\n");
    let push_url = format!("{}/loki/api/v1/push", recv.base);
    let agent = Agent::start_with(&config, &[("TEST_LOKI_URL", &push_url)]);
    let all = || query_all_at(&recv, "/loki/api/v1", r#"{job="app"}"#, None);
    assert!(wait_for(Duration::from_secs(20), || all().len() == 1), "{}", agent.stderr_text());
    let e = &all()[0];
    assert_eq!((e.line.as_str(), label(e, "filename")), ("shipped without its file name", None), "{:?}", e.labels);
    assert!(agent.terminate(Duration::from_secs(15)).success());
}
