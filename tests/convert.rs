//! `tailship convert promtail`: a realistic Promtail config (two file jobs
//! with pipelines, a journal job) converted, checked, and its file jobs run
//! for real against `tailship receive` serving Loki's API prefix.

use crate::agent;
use crate::common;
use crate::scenario;

use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

use agent::{free_port, query_all_at, write_file, Agent, Stored};
use common::{bin, wait_for};

/// The two file jobs of the Promtail config: `web` (multiline, regex, labels,
/// a Go time layout, drop, replace) and `app` (json, labels with a rename,
/// structured metadata, RFC3339Nano, output, static_labels, limit, a match
/// that drops debug lines, and a template stage).
fn file_jobs(dir: &Path) -> String {
    format!(
        r#"  - job_name: web
    static_configs:
      - targets: [localhost]
        labels:
          job: web
          __path__: {dir}/web/*.log
    pipeline_stages:
      - multiline:
          firstline: '^\d{{4}}-\d{{2}}-\d{{2}}'
          max_wait_time: 300ms
      - regex:
          expression: '^(?P<time>\S+ \S+) (?P<level>[A-Z]+) '
      - labels:
          level:
      - timestamp:
          source: time
          format: '2006-01-02 15:04:05.000'
      - drop:
          expression: healthcheck
      - replace:
          expression: 'password=(\S+)'
          replace: '****'
  - job_name: app
    static_configs:
      - targets: [localhost]
        labels:
          job: app
          __path__: {dir}/app/*.log
          __path_exclude__: {dir}/app/*.debug.log
    pipeline_stages:
      - json:
          expressions:
            level: level
            msg: message
            ts: time
            trace_id: trace.id
      - labels:
          level:
          severity: level
      - structured_metadata:
          trace_id:
      - timestamp:
          source: ts
          format: RFC3339Nano
      - output:
          source: msg
      - static_labels:
          team: payments
      - limit:
          rate: 1000
          burst: 1000
          drop: true
      - match:
          selector: '{{level="debug"}}'
          action: drop
      - template:
          source: msg
          template: '{{{{ ToUpper .Value }}}}'
"#,
        dir = dir.display()
    )
}

/// The journal job, reading the journal directory `path`.
fn journal_job(path: &str) -> String {
    format!(
        r#"  - job_name: journal
    journal:
      max_age: 12h
      path: {path}
      matches: _TRANSPORT=journal
      labels:
        job: systemd-journal
    relabel_configs:
      - source_labels: ['__journal__systemd_unit']
        target_label: 'unit'
      - source_labels: ['__journal__systemd_unit']
        regex: 'nginx\.service|sshd\.service'
        action: keep
      - source_labels: ['__journal_priority_keyword']
        target_label: level
      - source_labels: ['__journal_syslog_identifier']
        target_label: syslog_identifier
"#
    )
}

/// The head of the Promtail config: server, positions and one client.
fn head(dir: &Path, push_url: &str, port: u16) -> String {
    format!(
        r#"server:
  http_listen_address: 127.0.0.1
  http_listen_port: {port}
  grpc_listen_port: 0
positions:
  filename: {dir}/promtail-positions.yaml
clients:
  - url: {push_url}
    tenant_id: team-a
    batchwait: 100ms
    batchsize: 262144
    external_labels:
      cluster: prod-eu
    backoff_config:
      min_period: 20ms
      max_period: 500ms
scrape_configs:
"#,
        dir = dir.display()
    )
}

fn convert(path: &Path) -> Output {
    Command::new(bin()).args(["convert", "promtail"]).arg(path).output().expect("run tailship convert")
}

fn check(path: &Path) -> Output {
    Command::new(bin()).args(["check", "--config"]).arg(path).output().expect("run tailship check")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn label<'a>(e: &'a Stored, name: &str) -> Option<&'a str> {
    e.labels.get(name).and_then(|v| v.as_str())
}

/// 2024-03-05T07:08:09Z in Unix nanoseconds.
const T0: i128 = 1_709_622_489_000_000_000;

#[test]
fn converted_file_jobs_pass_check_and_ship_what_the_promtail_pipeline_gives() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::create_dir_all(dir.join("web")).unwrap();
    std::fs::create_dir_all(dir.join("app")).unwrap();
    let recv = scenario::loki_receiver_with(&["--multi-tenant"]);
    let push_url = format!("{}/loki/api/v1/push", recv.base);
    let yaml = head(dir, &push_url, free_port()) + &file_jobs(dir);
    let promtail = write_file(dir, "promtail.yaml", &yaml);

    let out = convert(&promtail);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    assert!(!stderr.contains("not translated"), "every stage carries over: {stderr}");
    let toml = text(&out.stdout);
    assert!(toml.contains(&format!("url = \"{}\"\napi_prefix = \"/loki/api/v1\"", recv.base)), "{toml}");
    let config = write_file(dir, "tailship.toml", &toml);
    let checked = check(&config);
    assert_eq!(checked.status.code(), Some(0), "check refused the conversion:\n{}\n{toml}", text(&checked.stderr));

    write_file(
        dir,
        "web/web.log",
        "2024-03-05 07:08:09.250 ERROR payment failed password=hunter2\n\
         java.lang.IllegalStateException: boom\n    at com.example.Pay.run(Pay.java:42)\n\
         2024-03-05 07:08:10.000 INFO healthcheck ok\n\
         2024-03-05 07:08:11.500 WARN slow request password=abc took=2s\n",
    );
    write_file(
        dir,
        "app/app.log",
        concat!(
            r#"{"level":"info","message":"order placed","time":"2024-03-05T07:08:09.123456789Z","trace":{"id":"t-1"}}"#,
            "\n",
            r#"{"level":"error","message":"card declined","time":"2024-03-05T07:08:12Z","trace":{"id":"t-2"}}"#,
            "\n",
            r#"{"level":"debug","message":"verbose","time":"2024-03-05T07:08:13Z"}"#,
            "\nnot json at all\n"
        ),
    );
    write_file(dir, "app/app.debug.log", "{\"level\":\"debug\",\"message\":\"excluded\"}\n");

    let agent = Agent::start(&config);
    let all = |job: &str| query_all_at(&recv, "/loki/api/v1", &format!("{{job=\"{job}\"}}"), Some("team-a"));
    let arrived = wait_for(Duration::from_secs(20), || all("web").len() >= 2 && all("app").len() >= 3);
    assert!(arrived, "web {:?}\napp {:?}\n{}", all("web"), all("app"), agent.stderr_text());
    let status = agent.terminate(Duration::from_secs(15));
    assert!(status.success());

    // web: joined lines, the level label, the time from the line, healthcheck dropped, password masked.
    let web = all("web");
    assert_eq!(web.len(), 2, "{web:?}");
    assert_eq!(web[0].ts, T0 + 250_000_000);
    assert_eq!(
        web[0].line,
        "2024-03-05 07:08:09.250 ERROR payment failed password=****\n\
         java.lang.IllegalStateException: boom\n    at com.example.Pay.run(Pay.java:42)"
    );
    assert_eq!(label(&web[0], "level"), Some("ERROR"));
    assert_eq!(web[1].ts, T0 + 2_500_000_000);
    assert_eq!(web[1].line, "2024-03-05 07:08:11.500 WARN slow request password=**** took=2s");
    assert_eq!(label(&web[1], "level"), Some("WARN"));
    for e in &web {
        assert_eq!(label(e, "cluster"), Some("prod-eu"), "external_labels on every stream");
        assert!(label(e, "filename").is_some_and(|f| f.ends_with("web/web.log")));
        assert_eq!(label(e, "host"), None, "Promtail adds no host label");
    }

    // app: json values, a renamed label, structured metadata, RFC 3339 time, output, static label.
    let app = all("app");
    assert_eq!(app.len(), 3, "the .debug.log file is excluded, the match drops the debug line: {app:?}");
    let placed = app.iter().find(|e| e.line == "order placed").expect("order placed");
    assert_eq!(placed.ts, T0 + 123_456_789);
    assert_eq!(label(placed, "level"), Some("info"));
    assert_eq!(label(placed, "severity"), Some("info"));
    assert_eq!(label(placed, "trace_id"), Some("t-1"), "structured metadata is returned with the entry");
    assert_eq!(label(placed, "team"), Some("payments"));
    let declined = app.iter().find(|e| e.line == "card declined").expect("card declined");
    assert_eq!(declined.ts, T0 + 3_000_000_000);
    assert_eq!(label(declined, "level"), Some("error"));
    let plain = app.iter().find(|e| e.line == "not json at all").expect("a line that is not JSON passes unchanged");
    assert_eq!(label(plain, "level"), None);
    assert_eq!(label(plain, "team"), Some("payments"));
    assert!(plain.ts > T0 + 3_000_000_000, "a line without a time keeps its read time");
}

/// The journal job's TOML, asserted as text.
#[test]
fn a_journal_job_becomes_a_journal_source() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let yaml = head(dir, "https://logs.example.com/loki/api/v1/push", 9080)
        + &file_jobs(dir)
        + &journal_job("/var/log/journal");
    let promtail = write_file(dir, "promtail.yaml", &yaml);
    let out = convert(&promtail);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let toml = text(&out.stdout);
    let journal = toml.split("[[sources]]").nth(3).expect("a third source");
    assert_eq!(
        journal.trim(),
        "type = \"journal\"\n\
         name = \"journal\"\n\
         path = \"/var/log/journal\"\n\
         matches = [\"_TRANSPORT=journal\"]\n\
         relabel = [\n  \
         { source_labels = [\"__journal__systemd_unit\"], target_label = \"unit\" },\n  \
         { source_labels = [\"__journal__systemd_unit\"], regex = 'nginx\\.service|sshd\\.service', action = \"keep\" },\n  \
         { source_labels = [\"__journal_priority_keyword\"], target_label = \"level\" },\n  \
         { source_labels = [\"__journal_syslog_identifier\"], target_label = \"syslog_identifier\" },\n\
         ]\n\
         max_age = \"12h\"\n\
         labels = { job = \"systemd-journal\", cluster = \"prod-eu\" }\n\
         host_label = false  # Promtail's job had no host label\n\
         unit_label = \"none\"  # Promtail's job had no unit label\n\
         level_label = false  # Promtail's job had no level label\n\
         address_fields = false  # Promtail 3.6 shows no __CURSOR, __REALTIME_TIMESTAMP, __MONOTONIC_TIMESTAMP\n\
         cursor_max_age = true  # as Promtail: a saved cursor older than max_age is not resumed"
    );
    assert!(toml.contains("# Promtail job `journal` (scrape_configs[2].journal)\n[[sources]]"), "{toml}");
    let parsed: toml::Table = toml::from_str(&toml).expect("the output is TOML");
    assert_eq!(parsed["sources"].as_array().map(Vec::len), Some(3));
    let stderr = text(&out.stderr);
    assert!(!stderr.contains("relabel_configs"), "every journal rule carries over: {stderr}");
}

const REMOTE: &str = "/lib/systemd/systemd-journal-remote";

/// Writes journal entries `(µs, fields)` to the journal file `file` with
/// `systemd-journal-remote` (from journal export format).
fn journal_file(file: &Path, entries: &[(u64, &[(&str, &str)])]) {
    use std::io::Write;
    let mut data = String::new();
    for (i, (ts, fields)) in entries.iter().enumerate() {
        data.push_str(&format!("__REALTIME_TIMESTAMP={ts}\n__MONOTONIC_TIMESTAMP={}\n", i + 1));
        data.push_str("_BOOT_ID=0123456789abcdef0123456789abcdef\n");
        for (k, v) in fields.iter() {
            data.push_str(&format!("{k}={v}\n"));
        }
        data.push('\n');
    }
    let mut child = Command::new(REMOTE)
        .arg(format!("--output={}", file.display()))
        .arg("-")
        .stdin(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("systemd-journal-remote");
    child.stdin.take().unwrap().write_all(data.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "journal-remote: {}", text(&out.stderr));
}

/// The whole converted config, journal job included, passes `tailship
/// check`, and its journal job ships the entries Promtail's would, with the
/// labels its relabel rules gave (`unit`, `level`; no `host`).
#[test]
fn the_whole_converted_config_checks_and_its_journal_job_ships() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let jdir = dir.join("journal");
    std::fs::create_dir_all(&jdir).unwrap();
    let recv = scenario::loki_receiver_with(&["--multi-tenant"]);
    let push_url = format!("{}/loki/api/v1/push", recv.base);
    let yaml = head(dir, &push_url, free_port()) + &file_jobs(dir) + &journal_job(&jdir.display().to_string());
    let out = convert(&write_file(dir, "promtail.yaml", &yaml));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let config = write_file(dir, "tailship.toml", &text(&out.stdout));
    let checked = check(&config);
    assert_eq!(checked.status.code(), Some(0), "{}\n{}", text(&checked.stderr), text(&out.stdout));

    if !Path::new(REMOTE).exists() {
        eprintln!("SKIPPED the journal run: needs {REMOTE} (Debian package systemd-journal-remote)");
        return;
    }
    let t = u64::try_from(std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_micros())
        .unwrap()
        - 60_000_000;
    let unit = |u: &'static str, transport: &'static str, prio: &'static str, msg: &'static str| {
        [("MESSAGE", msg), ("_SYSTEMD_UNIT", u), ("_TRANSPORT", transport), ("PRIORITY", prio), ("_HOSTNAME", "web-7")]
    };
    let entries = [
        unit("nginx.service", "journal", "3", "GET / 500"),
        unit("sshd.service", "syslog", "6", "not the journal transport"),
        unit("cron.service", "journal", "6", "not a kept unit"),
        unit("sshd.service", "journal", "6", "session opened"),
    ];
    let timed: Vec<(u64, &[(&str, &str)])> = entries.iter().enumerate().map(|(i, e)| (t + i as u64, &e[..])).collect();
    journal_file(&jdir.join("a.journal"), &timed);

    let agent = Agent::start(&config);
    let all = || query_all_at(&recv, "/loki/api/v1", r#"{job="systemd-journal"}"#, Some("team-a"));
    assert!(wait_for(Duration::from_secs(20), || all().len() >= 2), "{:?}\n{}", all(), agent.stderr_text());
    assert!(agent.terminate(Duration::from_secs(15)).success());
    let got = all();
    let summary: Vec<(i128, &str, String)> =
        got.iter().map(|e| (e.ts, e.line.as_str(), serde_json::Value::Object(e.labels.clone()).to_string())).collect();
    let t = i128::from(t) * 1000;
    assert_eq!(
        summary,
        [
            (
                t,
                "GET / 500",
                r#"{"cluster":"prod-eu","job":"systemd-journal","level":"error","unit":"nginx.service"}"#.into()
            ),
            (
                t + 3000,
                "session opened",
                r#"{"cluster":"prod-eu","job":"systemd-journal","level":"info","unit":"sshd.service"}"#.into()
            ),
        ]
    );
}

#[test]
fn unreadable_or_invalid_yaml_exits_2_naming_the_file() {
    let tmp = tempfile::tempdir().unwrap();
    let missing = tmp.path().join("nope.yaml");
    let out = convert(&missing);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("cannot read") && text(&out.stderr).contains("nope.yaml"),
        "{}",
        text(&out.stderr)
    );
    assert!(out.stdout.is_empty());

    let bad = write_file(tmp.path(), "bad.yaml", "scrape_configs:\n  - job_name: [unclosed\n");
    let out = convert(&bad);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("bad.yaml: not valid YAML"), "{}", text(&out.stderr));
    assert!(out.stdout.is_empty());

    let list = write_file(tmp.path(), "list.yaml", "- a\n- b\n");
    assert_eq!(convert(&list).status.code(), Some(2));
}

#[test]
fn a_config_with_nothing_tailship_can_read_exits_2_with_the_list() {
    let tmp = tempfile::tempdir().unwrap();
    let yaml = "clients:\n  - url: http://loki:3100/loki/api/v1/push\n\
                scrape_configs:\n  - job_name: pods\n    pipeline_stages:\n      - json:\n          expressions: { a: b }\n";
    let out = convert(&write_file(tmp.path(), "nothing.yaml", yaml));
    assert_eq!(out.status.code(), Some(2));
    let stderr = text(&out.stderr);
    assert!(stderr.contains("no scrape config could be converted"), "{stderr}");
    assert!(stderr.contains("1. scrape_configs[0]: job `pods` has no target: a job reads static_configs"), "{stderr}");
    assert!(
        stderr.contains("gce_sd_configs") && stderr.contains("azure_sd_configs"),
        "the list names every discovery: {stderr}"
    );
    assert!(out.stdout.is_empty());
    // A discovery Promtail would refuse for a missing key is refused naming it.
    let yaml = "clients:\n  - url: http://loki:3100/loki/api/v1/push\n\
                scrape_configs:\n  - job_name: vms\n    gce_sd_configs:\n      - project: p\n";
    let out = convert(&write_file(tmp.path(), "gce.yaml", yaml));
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("scrape_configs[0].gce_sd_configs[0].zone: Promtail needs the GCE `zone`"));
}

/// The book's conversion example (book/src/promtail/convert.md) is what the command prints.
#[test]
fn the_books_example_is_current() {
    let page = Path::new(env!("CARGO_MANIFEST_DIR")).join("book/src/promtail/convert.md");
    let page = std::fs::read_to_string(page).unwrap();
    let section = page.split("## An example").nth(1).expect("the section");
    let block = |after: &str, lang: &str| -> String {
        let rest = section.split(after).nth(1).unwrap_or_else(|| panic!("`{after}` in the section"));
        let body = rest.split(&format!("```{lang}\n")).nth(1).expect("a code block");
        body.split("\n```").next().expect("its end").to_string()
    };
    let tmp = tempfile::tempdir().unwrap();
    let file = write_file(tmp.path(), "promtail.yaml", &block("A Promtail config:", "yaml"));
    let out =
        Command::new(bin()).args(["convert", "promtail", "promtail.yaml"]).current_dir(tmp.path()).output().unwrap();
    assert!(file.exists() && out.status.success(), "{}", text(&out.stderr));
    let printed = text(&out.stdout);
    let body = printed.splitn(5, '\n').nth(4).expect("past the header comments");
    let regenerate = "book/src/promtail/convert.md's example is out of date: run the command and paste its output";
    assert_eq!(
        body.trim(),
        block("what `tailship convert promtail promtail.yaml` makes of it", "toml"),
        "{regenerate}"
    );
    assert_eq!(text(&out.stderr).trim(), block("On stderr:", "text"), "{regenerate}");
}

#[test]
fn syslog_and_push_api_jobs_become_network_sources_that_receive() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let recv = scenario::loki_receiver_with(&["--multi-tenant"]);
    let (syslog_port, push_port) = (free_port(), free_port());
    let yaml = head(dir, &format!("{}/loki/api/v1/push", recv.base), free_port())
        + &format!(
            r#"  - job_name: syslog
    syslog:
      listen_address: 127.0.0.1:{syslog_port}
      listen_protocol: tcp
      idle_timeout: 60s
      label_structured_data: yes
      use_incoming_timestamp: true
      labels:
        job: syslog
    relabel_configs:
      - source_labels: ['__syslog_message_hostname']
        target_label: host
      - source_labels: ['__syslog_message_app_name']
        target_label: app
  - job_name: push
    loki_push_api:
      server:
        http_listen_address: 127.0.0.1
        http_listen_port: {push_port}
        grpc_listen_port: 0
      labels:
        pushserver: relay1
"#
        );
    let promtail = write_file(dir, "promtail.yaml", &yaml);
    let out = convert(&promtail);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let toml = text(&out.stdout);
    assert!(toml.contains("type = \"syslog\""), "{toml}");
    assert!(toml.contains("type = \"loki_push\""), "{toml}");
    let converted = write_file(dir, "tailship.toml", &format!("{toml}\n[spool]\npath = \"{}/spool\"\n", dir.display()));
    let c = check(&converted);
    assert_eq!(c.status.code(), Some(0), "{}", text(&c.stderr));
    let agent = Agent::start(&converted);
    assert!(wait_for(Duration::from_secs(15), || std::net::TcpStream::connect(("127.0.0.1", push_port)).is_ok()));
    let logger = Command::new("logger")
        .args(["--server", "127.0.0.1", "--port", &syslog_port.to_string(), "--tcp", "--rfc5424", "-t", "conv"])
        .arg("converted syslog line")
        .status()
        .unwrap();
    assert!(logger.success());
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as i64;
    let r = common::post_json(
        &format!("http://127.0.0.1:{push_port}/loki/api/v1/push"),
        &common::push_body(&[("job", "pushed")], &[(now, "converted push line")]),
    );
    assert_eq!(r.status, 204, "{}", r.text());
    let mut got = Vec::new();
    assert!(
        wait_for(Duration::from_secs(20), || {
            got = query_all_at(&recv, "/loki/api/v1", r#"{job=~"syslog|pushed"}"#, Some("team-a"));
            got.len() >= 2
        }),
        "{got:?} {}",
        agent.stderr_text()
    );
    let sys = got.iter().find(|e| e.line == "converted syslog line").expect("the syslog line");
    assert_eq!(label(sys, "app"), Some("conv"));
    assert_eq!(label(sys, "cluster"), Some("prod-eu"));
    let pushed = got.iter().find(|e| e.line == "converted push line").expect("the pushed line");
    assert_eq!(label(pushed, "pushserver"), Some("relay1"));
}

#[test]
fn push_api_and_syslog_jobs_with_tls_keep_their_certificate_and_the_senders_ca() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let yaml = head(dir, "http://127.0.0.1:3100/loki/api/v1/push", free_port())
        + r#"  - job_name: push
    loki_push_api:
      server:
        http_listen_port: 3500
        http_tls_config:
          cert_file: /etc/promtail/relay.crt
          key_file: /etc/promtail/relay.key
          client_ca_file: /etc/promtail/ca.crt
          client_auth_type: RequireAndVerifyClientCert
  - job_name: syslog
    syslog:
      listen_address: 127.0.0.1:1514
      tls_config:
        cert_file: /etc/promtail/syslog.crt
        key_file: /etc/promtail/syslog.key
        ca_file: /etc/promtail/senders.crt
"#;
    let out = convert(&write_file(dir, "promtail.yaml", &yaml));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let toml = text(&out.stdout);
    assert!(
        toml.contains(
            r#"receiver = { tls = { cert_file = "/etc/promtail/relay.crt", key_file = "/etc/promtail/relay.key", client_ca_file = "/etc/promtail/ca.crt" }, use_incoming_timestamp = false }"#
        ),
        "{toml}"
    );
    assert!(
        toml.contains(r#"tls = { cert_file = "/etc/promtail/syslog.crt", key_file = "/etc/promtail/syslog.key", client_ca_file = "/etc/promtail/senders.crt" }"#),
        "{toml}"
    );
    assert!(!text(&out.stderr).contains("client_ca_file"), "nothing left out: {}", text(&out.stderr));
}
