//! The network receivers against a real Loki 3.7.6 (from `../shared/peers`;
//! skipped, saying so, where it is absent): what a sender stamps to the
//! second still arrives whole.

#[path = "common/agent.rs"]
mod agent;
mod common;
#[path = "common/loki.rs"]
mod loki;

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::Duration;

use agent::{free_port, write_file, Agent};
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
