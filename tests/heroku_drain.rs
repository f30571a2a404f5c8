//! `type = "heroku_drain"`: logplex bodies POSTed as Heroku's HTTPS drains
//! send them (no real Heroku here): labels from `__heroku_drain_*` and the
//! URL's parameters through relabel rules, the message's time, the
//! sender's tenant, a bad frame refused whole; and Promtail's `gelf` and
//! `heroku_drain` jobs through `convert`, `check` and `run`.

use crate::agent;
use crate::common;
use crate::discovery;
use crate::scenario;

use std::path::{Path, PathBuf};
use std::time::Duration;

use agent::{free_port, query_all, query_all_at, write_file, Agent, Stored};
use common::{request, wait_for, Receiver};
use discovery::{check_ok, convert_promtail};

const BIG: &[&str] = &["--max-query-limit", "1000000"];

fn drain_config(dir: &Path, listen: &str, url: &str) -> PathBuf {
    let source = format!(
        r#"type = "heroku_drain"
name = "heroku"
listen = "{listen}"
labels = {{ job = "heroku" }}
host_label = false
relabel = [
  {{ source_labels = ["__heroku_drain_app"], target_label = "app" }},
  {{ source_labels = ["__heroku_drain_proc"], target_label = "proc" }},
  {{ source_labels = ["__heroku_drain_host"], target_label = "drain_host" }},
  {{ source_labels = ["__heroku_drain_log_id"], target_label = "log_id" }},
  {{ source_labels = ["__heroku_drain_param_env"], target_label = "env" }},
  {{ source_labels = ["__heroku_drain_proc"], regex = "scheduler.*", action = "drop" }},
]
"#
    );
    agent::net_source_config(dir, "heroku.toml", url, &source)
}

/// A logplex body: each message octet-counted, as Logplex frames them.
fn logplex(messages: &[&str]) -> String {
    messages.iter().map(|m| format!("{} {m}\n", m.len() + 1)).collect()
}

fn post(listen: &str, query: &str, body: &str, tenant: Option<&str>) -> common::HttpResponse {
    let mut headers = vec![("Content-Type", "application/logplex-1"), ("Logplex-Msg-Count", "1")];
    if let Some(t) = tenant {
        headers.push(("X-Scope-OrgID", t));
    }
    request("POST", &format!("http://{listen}/heroku/api/v1/drain{query}"), &headers, body.as_bytes())
}

fn wait_lines(store: &Receiver, query: &str, n: usize) -> Vec<Stored> {
    let mut got = Vec::new();
    wait_for(Duration::from_secs(30), || {
        got = query_all(store, query, None);
        got.len() >= n
    });
    got
}

#[test]
fn logplex_posts_are_labelled_timed_and_refused_whole_when_bad() {
    let dir = tempfile::tempdir().unwrap();
    let store = Receiver::start(BIG);
    let listen = format!("127.0.0.1:{}", free_port());
    let agent = Agent::start(&drain_config(dir.path(), &listen, &store.base));
    assert!(wait_for(Duration::from_secs(15), || std::net::TcpStream::connect(&listen).is_ok()));
    let body = logplex(&[
        "<40>1 2012-11-30T06:45:29+00:00 host app web.3 - State changed from starting to up",
        "<190>1 2022-06-13T14:52:23.622778+00:00 host heroku router - at=info method=GET path=\"/\" status=200",
        "<40>1 2012-11-30T06:45:30+00:00 host app scheduler.1 - dropped by the relabel rules",
    ]);
    let r = post(&listen, "?env=prod&env=eu", &body, None);
    assert_eq!(r.status, 204, "{}", r.text());
    let got = wait_lines(&store, r#"{job="heroku"}"#, 2);
    assert_eq!(got.len(), 2, "{got:#?}");
    let web = got.iter().find(|e| e.line == "State changed from starting to up").unwrap_or_else(|| panic!("{got:#?}"));
    assert_eq!(web.labels["app"], "app");
    assert_eq!(web.labels["proc"], "web.3");
    assert_eq!(web.labels["drain_host"], "host");
    assert_eq!(web.labels["log_id"], "-");
    assert_eq!(web.labels["env"], "prod,eu");
    assert!(!web.labels.keys().any(|k| k.starts_with("__")), "{:?}", web.labels);
    assert_eq!(web.ts, 1_354_257_929_000_000_000);
    let router = got.iter().find(|e| e.labels["app"] == "heroku").unwrap();
    assert_eq!(router.line, "at=info method=GET path=\"/\" status=200");
    assert_eq!(router.ts, 1_655_131_943_622_778_000);
    // A frame shorter than its count: the whole body is refused, nothing spooled.
    let bad = logplex(&["<40>1 2012-11-30T06:45:31+00:00 host app web.1 - kept?"]) + "500 <40>1 short";
    let r = post(&listen, "", &bad, None);
    assert_eq!(r.status, 400, "{}", r.text());
    assert!(r.text().contains("frame 2"), "{}", r.text());
    assert!(agent.metrics().lines().any(|l| l.contains("reason=\"bad_request\"") && l.ends_with(" 1")));
    assert!(agent.metrics().lines().any(|l| l.contains("reason=\"relabel_drop\"") && l.ends_with(" 1")));
    assert_eq!(agent.metric("tailship_receiver_lines_total"), 2.0);
}

#[test]
fn the_senders_tenant_is_kept() {
    let dir = tempfile::tempdir().unwrap();
    let store = Receiver::start(&["--multi-tenant", "--max-query-limit", "1000000"]);
    let listen = format!("127.0.0.1:{}", free_port());
    let _agent = Agent::start(&drain_config(dir.path(), &listen, &store.base));
    assert!(wait_for(Duration::from_secs(15), || std::net::TcpStream::connect(&listen).is_ok()));
    let body = logplex(&["<40>1 2012-11-30T06:45:29+00:00 host app web.1 - for team b"]);
    assert_eq!(post(&listen, "", &body, Some("team-b")).status, 204);
    let mut got = Vec::new();
    assert!(wait_for(Duration::from_secs(30), || {
        got = query_all(&store, r#"{job="heroku"}"#, Some("team-b"));
        !got.is_empty()
    }));
    assert_eq!(got[0].line, "for team b");
}

#[test]
fn promtail_gelf_and_heroku_drain_jobs_convert_check_and_receive() {
    let s = scenario::Scenario::loki();
    let (recv, dir) = (&s.r, s.root());
    let (gelf_port, drain_port) = (free_port(), free_port());
    let yaml = s.promtail_yaml(&format!(
        r#"  - job_name: gelf
    gelf:
      listen_address: 127.0.0.1:{gelf_port}
      use_incoming_timestamp: true
      labels:
        job: gelf
    relabel_configs:
      - source_labels: ['__gelf_message_host']
        target_label: host
  - job_name: heroku
    heroku_drain:
      server:
        http_listen_address: 127.0.0.1
        http_listen_port: {drain_port}
      labels:
        job: heroku
    relabel_configs:
      - source_labels: ['__heroku_drain_app']
        target_label: app
"#,
    ));
    let (toml, stderr) = convert_promtail(dir, &yaml);
    assert!(toml.contains("type = \"gelf\"") && toml.contains("type = \"heroku_drain\""), "{toml}");
    assert!(!stderr.contains("gelf:") && !stderr.contains("heroku_drain:"), "{stderr}");
    let converted = write_file(dir, "tailship.toml", &format!("{toml}\n[spool]\npath = \"{}/spool\"\n", dir.display()));
    check_ok(&converted);
    let agent = Agent::start(&converted);
    let drain = format!("127.0.0.1:{drain_port}");
    assert!(wait_for(Duration::from_secs(15), || std::net::TcpStream::connect(&drain).is_ok()));
    let body = logplex(&["<40>1 2012-11-30T06:45:29+00:00 host myapp web.1 - converted drain line"]);
    assert_eq!(post(&drain, "", &body, None).status, 204);
    let gelf = r#"{"version":"1.1","host":"h1","short_message":"converted gelf line","timestamp":1700000000}"#;
    let s = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let mut got = Vec::new();
    assert!(
        wait_for(Duration::from_secs(30), || {
            s.send_to(gelf.as_bytes(), ("127.0.0.1", gelf_port)).unwrap();
            got = query_all_at(recv, "/loki/api/v1", r#"{job=~"gelf|heroku"}"#, None);
            got.iter().any(|e| e.labels.get("host").is_some()) && got.iter().any(|e| e.labels.get("app").is_some())
        }),
        "{got:?} {}",
        agent.stderr_text()
    );
    let d = got.iter().find(|e| e.line == "converted drain line").unwrap();
    assert_eq!(d.labels["app"], "myapp");
    // Promtail's default: the time received, not the message's.
    assert_ne!(d.ts, 1_354_257_929_000_000_000);
    let g = got.iter().find(|e| e.labels.get("host").is_some()).unwrap();
    assert_eq!(g.labels["host"], "h1");
    assert_eq!(g.ts, 1_700_000_000_000_000_000);
}
