//! The network receivers against a real Loki 3.7.6 (from `../shared/peers`;
//! skipped, saying so, where it is absent): what a sender stamps to the
//! second still arrives whole.

use crate::agent;
use crate::common;
use crate::loki;

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::Duration;

use agent::{free_port, write_file, Agent, AgentToml};
use common::wait_for;

/// 100 identical RFC 3164 and 100 identical RFC 5424 messages within a
/// second (util-linux `logger` over TCP): all were received and pushed, and
/// Loki 3.7.6 kept 2, since they had the same timestamp and line. Equal
/// timestamps of a stream are now made distinct.
#[test]
fn identical_syslog_messages_within_a_second_all_stay_in_loki() {
    let Some(loki) = loki::Loki::start() else { return };
    if Command::new("logger").arg("--version").output().is_err() {
        eprintln!("logger not found: skipping");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let sys = format!("127.0.0.1:{}", free_port());
    let cfg = format!(
        r#"shutdown_timeout = "5s"
[server]
listen = "127.0.0.1:{server}"
[client]
url = "{url}/loki/api/v1/push"
batch = {{ max_wait = "200ms" }}
[positions]
path = "{dir}/positions.json"
[spool]
path = "{dir}/spool"
[[sources]]
type = "syslog"
name = "sys"
listen = "{sys}"
labels = {{ job = "repeat" }}
relabel = [{{ source_labels = ["__syslog_message_app_name"], target_label = "app" }}]
"#,
        server = free_port(),
        url = loki.base,
        dir = dir.path().display()
    );
    let agent = Agent::start(&write_file(dir.path(), "agent.toml", &cfg));
    assert!(wait_for(Duration::from_secs(15), || std::net::TcpStream::connect(&sys).is_ok()));
    let port = sys.rsplit(':').next().unwrap().to_string();
    for (form, tag) in [("--rfc3164", "bsd"), ("--rfc5424=notq", "ietf")] {
        let mut logger = Command::new("logger")
            .args(["--tcp", "--octet-count", form, "-n", "127.0.0.1", "-P", &port, "-t", tag])
            .stdin(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdin = logger.stdin.take().unwrap();
        for _ in 0..100 {
            writeln!(stdin, "the same message again").unwrap();
        }
        drop(stdin);
        assert!(logger.wait().unwrap().success());
    }
    let mut n = 0;
    let all = wait_for(Duration::from_secs(60), || {
        n = loki.lines(r#"{job="repeat"}"#).len();
        n >= 200
    });
    assert!(all, "Loki holds {n} of 200: {}", agent.stderr_text());
    assert_eq!(loki.lines(r#"{job="repeat", app="bsd"}"#).len(), 100);
    assert_eq!(loki.lines(r#"{job="repeat", app="ietf"}"#).len(), 100);
}

/// A relay of two tenants into Loki 3.7.6, which holds the tenant `noisy` to
/// its per-tenant stream limit.
fn relay_of_tenants(dir: &std::path::Path, loki: &loki::Loki, source_extra: &str) -> (Agent, String) {
    let listen = format!("127.0.0.1:{}", free_port());
    let source = format!(
        "[[sources]]\ntype = \"loki_push\"\nname = \"relay\"\nlisten = \"{listen}\"\nlabels = {{ job = \"relay\" }}"
    );
    let toml = AgentToml::new(dir, "5s").bare_client(
        &format!("{}/loki/api/v1/push", loki.base),
        "batch = { max_bytes = \"1KiB\", max_wait = \"100ms\" }",
    );
    let agent = Agent::start(&toml.sync_period("").spool("").then(&source).then(source_extra).write("agent.toml"));
    let url = format!("http://{listen}/loki/api/v1/push");
    assert!(wait_for(Duration::from_secs(15), || std::net::TcpStream::connect(&listen).is_ok()));
    (agent, url)
}

/// Pushes one line on each of `n` label sets of `tenant` through the relay.
fn push_label_sets(url: &str, tenant: &str, n: usize) {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as i64;
    for i in 0..n {
        let id = format!("{i:04}");
        let line = format!("line of label set {id}");
        let body = common::push_body(&[("id", &id)], &[(now + i as i64, &line)]);
        let r = common::request(
            "POST",
            url,
            &[("Content-Type", "application/json"), ("X-Scope-OrgID", tenant)],
            body.as_bytes(),
        );
        assert_eq!(r.status, 204, "{}", r.text());
    }
}

/// Issue #38: 10,000 label sets pushed through the relay into Loki (limit
/// 5,000 streams) got 429s the relay retried for ever, and lines pushed
/// afterwards never arrived: every push slot was held by a batch waiting
/// out a 429. Now each tenant has its own lane and a batch gives its slot
/// back while it waits.
#[test]
fn a_tenant_loki_keeps_refusing_holds_back_no_other_tenant() {
    let Some(loki) = loki::Loki::start_tenants("noisy: { max_global_streams_per_user: 5 }") else { return };
    let dir = tempfile::tempdir().unwrap();
    let (agent, url) = relay_of_tenants(dir.path(), &loki, "max_streams = 0");
    // Far more label sets than Loki takes for `noisy`: every batch past the
    // first few streams is refused with a 429 for as long as the test runs.
    push_label_sets(&url, "noisy", 200);
    let refused = wait_for(Duration::from_secs(30), || {
        agent.metrics().lines().any(|l| l.starts_with("tailship_push_requests_total") && l.contains("\"429\""))
    });
    assert!(refused, "Loki never refused `noisy`: {}", agent.stderr_text());
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as i64;
    let values: Vec<(i64, String)> = (0..20).map(|i| (now + i, format!("quiet line {i}"))).collect();
    let values: Vec<(i64, &str)> = values.iter().map(|(t, l)| (*t, l.as_str())).collect();
    let body = common::push_body(&[("app", "quiet")], &values);
    let r = common::request(
        "POST",
        &url,
        &[("Content-Type", "application/json"), ("X-Scope-OrgID", "quiet")],
        body.as_bytes(),
    );
    assert_eq!(r.status, 204, "{}", r.text());
    let mut n = 0;
    let arrived = wait_for(Duration::from_secs(60), || {
        n = loki.tenant_lines(Some("quiet"), r#"{job="relay"}"#).len();
        n >= 20
    });
    assert!(arrived, "Loki holds {n} of the other tenant's 20 lines: {}", agent.stderr_text());
    // `noisy` keeps its streams within the limit; the rest wait in the spool.
    assert!(!loki.tenant_lines(Some("noisy"), r#"{job="relay"}"#).is_empty());
}

/// Issue #38: `max_streams` did not apply to received label sets. Past it
/// (per tenant), a line keeps the source's own labels, so Loki takes every
/// line although the senders made more streams than its limit.
#[test]
fn received_label_sets_past_max_streams_keep_the_source_stream_and_all_arrive() {
    let Some(loki) = loki::Loki::start_tenants("noisy: { max_global_streams_per_user: 10 }") else { return };
    let dir = tempfile::tempdir().unwrap();
    let (agent, url) = relay_of_tenants(dir.path(), &loki, "max_streams = 5");
    push_label_sets(&url, "noisy", 50);
    push_label_sets(&url, "other", 8);
    let mut n = 0;
    let arrived = wait_for(Duration::from_secs(60), || {
        n = loki.tenant_lines(Some("noisy"), r#"{job="relay"}"#).len();
        n >= 50
    });
    assert!(arrived, "Loki holds {n} of 50: {}", agent.stderr_text());
    assert_eq!(loki.tenant_lines(Some("noisy"), r#"{job="relay", id=~".+"}"#).len(), 5);
    assert_eq!(loki.tenant_lines(Some("noisy"), r#"{job="relay", id=""}"#).len(), 45);
    // The bound is per tenant: another tenant's first five keep theirs.
    assert!(wait_for(Duration::from_secs(30), || loki.tenant_lines(Some("other"), r#"{job="relay"}"#).len() >= 8));
    assert_eq!(loki.tenant_lines(Some("other"), r#"{job="relay", id=~".+"}"#).len(), 5);
    let repaired = agent
        .metrics()
        .lines()
        .filter(|l| l.starts_with("tailship_lines_repaired_total") && l.contains("stream_limit"))
        .map(|l| l.rsplit(' ').next().unwrap().parse::<f64>().unwrap())
        .sum::<f64>();
    assert_eq!(repaired, 48.0);
    assert_eq!(agent.stderr_text().matches("senders pushed max_streams label sets").count(), 1);
}
