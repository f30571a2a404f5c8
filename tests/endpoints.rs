//! The agent's endpoint (`server.listen`) and `tailship receive` under slow,
//! idle and many clients: a client that never finishes its request header
//! is disconnected, connections past the cap hold no descriptor, idle
//! connections never keep a probe waiting, and SIGTERM never waits on a client.

use crate::agent;
use crate::common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use agent::{agent_config, write_file, Agent};
use common::{bin, wait_for, Receiver};

/// An agent config with `server_extra` added to `[server]`.
fn config_with_server(dir: &Path, url: &str, include: &str, server_extra: &str) -> std::path::PathBuf {
    let cfg = agent_config(dir, url, include, "", "");
    let text = std::fs::read_to_string(&cfg).unwrap();
    let text = text.replacen("[client]", &format!("{server_extra}\n[client]"), 1);
    std::fs::write(&cfg, text).unwrap();
    cfg
}

/// Sends the start of a request and never its end.
fn half_request(addr: &str) -> TcpStream {
    let mut s = TcpStream::connect(addr).unwrap();
    s.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n").unwrap();
    s
}

/// True when the server closes `s` (EOF or reset) before `deadline`.
fn closed_by_server(mut s: TcpStream, deadline: Duration) -> bool {
    s.set_read_timeout(Some(deadline)).unwrap();
    let mut buf = [0u8; 1024];
    loop {
        match s.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => continue,
            Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {
                return false
            }
            Err(_) => return true,
        }
    }
}

fn open_fds(pid: i32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd")).map(|d| d.count()).unwrap_or(0)
}

fn wait_ready(agent: &Agent) {
    assert!(wait_for(Duration::from_secs(20), || agent.metrics().contains("tailship_")), "{}", agent.stderr_text());
}

#[test]
fn a_client_that_never_finishes_its_header_is_disconnected() {
    let r = Receiver::start(&["--header-read-timeout", "1s"]);
    let dir = tempfile::tempdir().unwrap();
    let log = write_file(dir.path(), "a.log", "one\n");
    let cfg = config_with_server(dir.path(), &r.base, &log.display().to_string(), "header_read_timeout = \"1s\"");
    let agent = Agent::start(&cfg);
    wait_ready(&agent);
    let addr = agent.metrics_addr.clone().unwrap();
    assert!(closed_by_server(half_request(&addr), Duration::from_secs(30)), "the agent kept a half request open");
    let receive = r.base.trim_start_matches("http://").to_string();
    assert!(closed_by_server(half_request(&receive), Duration::from_secs(30)), "receive kept a half request open");
    // An idle kept-alive connection is closed the same way.
    let mut s = TcpStream::connect(&addr).unwrap();
    s.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    let mut answer = [0u8; 256];
    let n = s.read(&mut answer).unwrap();
    assert!(String::from_utf8_lossy(&answer[..n]).starts_with("HTTP/1.1 200"));
    assert!(closed_by_server(s, Duration::from_secs(30)), "an idle connection was kept");
    assert!(agent.terminate(Duration::from_secs(20)).success());
}

/// 1,100 idle connections once took every descriptor: a new log file could
/// not be opened, nor positions saved. Past `server.max_connections` they
/// wait in the kernel's queue now.
#[test]
fn idle_connections_past_the_cap_hold_no_descriptors_and_new_files_still_ship() {
    let r = Receiver::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let glob = format!("{}/*.log", dir.path().display());
    let cfg = config_with_server(dir.path(), &r.base, &glob, "max_connections = 4\nheader_read_timeout = \"1h\"");
    let agent = Agent::start(&cfg);
    write_file(dir.path(), "first.log", "first\n");
    assert!(wait_for(Duration::from_secs(20), || r.stats()["entries"].as_u64() == Some(1)));
    wait_ready(&agent);
    let before = open_fds(agent.pid());
    let addr = agent.metrics_addr.clone().unwrap();
    let idle: Vec<TcpStream> = (0..60).map(|_| TcpStream::connect(&addr).unwrap()).collect();
    // A file created now ships (by then, without the cap, all 60 would be accepted) ...
    write_file(dir.path(), "second.log", "second\n");
    assert!(wait_for(Duration::from_secs(20), || r.stats()["entries"].as_u64() == Some(2)), "{}", agent.stderr_text());
    let now = open_fds(agent.pid());
    // ... while the agent holds the 4 connections, the new file, and a little
    // slack for its HTTP client; not 60 more.
    assert!(now <= before + 4 + 4, "{now} descriptors open, {before} before 60 idle connections");
    drop(idle);
    // Once they are gone, the endpoint answers again.
    assert!(wait_for(Duration::from_secs(20), || agent.metrics().contains("tailship_")));
    assert!(agent.terminate(Duration::from_secs(20)).success());
}

/// One connection with half a request delayed exit after SIGTERM to 13.7 s
/// with `shutdown_timeout = 5s`, and kept `receive` up. Idle connections
/// close at shutdown now and a half request gets a second at most; with
/// an hour's header timeout, an exit at all shows nothing waited on them.
#[test]
fn sigterm_never_waits_on_idle_or_half_sent_requests() {
    let r = Receiver::start(&["--header-read-timeout", "1h"]);
    let dir = tempfile::tempdir().unwrap();
    let log = write_file(dir.path(), "a.log", "one\n");
    let cfg = config_with_server(dir.path(), &r.base, &log.display().to_string(), "header_read_timeout = \"1h\"");
    let agent = Agent::start(&cfg);
    wait_ready(&agent);
    let addr = agent.metrics_addr.clone().unwrap();
    let receive = r.base.trim_start_matches("http://").to_string();
    let mut open: Vec<TcpStream> = (0..10).map(|_| TcpStream::connect(&addr).unwrap()).collect();
    open.push(half_request(&addr));
    open.extend((0..10).map(|_| TcpStream::connect(&receive).unwrap()));
    open.push(half_request(&receive));
    assert!(agent.terminate(Duration::from_secs(30)).success());
    assert!(r.stop().success(), "receive did not stop on SIGTERM with clients connected");
}

#[test]
fn server_limits_are_checked() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config_with_server(dir.path(), "http://127.0.0.1:9", "/tmp/x.log", "max_connections = 0");
    let out = Command::new(bin()).args(["check", "--config"]).arg(&cfg).stdout(Stdio::null()).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("server.max_connections"));
    let out = Command::new(bin()).args(["receive", "--max-connections", "0"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
}

/// CPU seconds of process `pid` from `/proc` (user + system, in clock ticks of 100 Hz or the system's).
fn proc_cpu_seconds(pid: i32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let rest = stat.rsplit_once(')').unwrap().1;
    let f: Vec<&str> = rest.split_whitespace().collect();
    // SAFETY: sysconf only reads a constant.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    (f[11].parse::<f64>().unwrap() + f[12].parse::<f64>().unwrap()) / hz
}

/// Found by an operator: `process_cpu_seconds_total` said 0 while /proc
/// showed 0.20 s (the prometheus crate's counter divides clock ticks in
/// integers, so it moves by whole seconds). Now it is /proc's figure.
#[test]
fn process_cpu_seconds_total_is_exact_not_whole_seconds() {
    let r = Receiver::start(&["--max-entries", "1000000"]);
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("a.log");
    let text: String = (0..200_000).map(|i| format!("line {i} some padding to make work\n")).collect();
    std::fs::write(&log, text).unwrap();
    let cfg = agent_config(dir.path(), &r.base, &log.display().to_string(), "", "");
    let agent = Agent::start(&cfg);
    assert!(wait_for(Duration::from_secs(60), || r.stats()["entries"].as_u64() == Some(200_000)));
    let pid = agent.pid();
    let mut seen = (0.0, 0.0, 0.0);
    // Between two reads of /proc, the metric is within them (whole seconds would be below).
    let exact = wait_for(Duration::from_secs(10), || {
        let before = proc_cpu_seconds(pid);
        let metric = agent.metric("process_cpu_seconds_total");
        let after = proc_cpu_seconds(pid);
        seen = (before, metric, after);
        before > 0.0 && metric >= before - 1e-9 && metric <= after + 1e-9
    });
    assert!(exact, "(proc before, metric, proc after) = {seen:?}");
    assert!(agent.terminate(Duration::from_secs(20)).success());
}

/// One request on a new connection to `addr`: the status line, and how long
/// the answer took from the connect.
fn timed_get(addr: &str, path: &str) -> (String, Duration) {
    let started = Instant::now();
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").as_bytes()).unwrap();
    let mut answer = Vec::new();
    let _ = s.read_to_end(&mut answer);
    let took = started.elapsed();
    let text = String::from_utf8_lossy(&answer);
    (text.lines().next().unwrap_or_default().to_string(), took)
}

/// `/healthz` answered after 1.00 s while 64 fresh idle connections held the
/// endpoint (its default `max_connections`), and after 2-5 s behind 300: a
/// new client waited until an open one had been silent a second, and each
/// 64 more idle ones cost another second. A Kubernetes probe gives up after
/// 1 s by default. Now an idle connection makes room at once. The bound is
/// the promise, 250 ms, a quarter of a probe's timeout: on a quiet machine
/// each answer takes 1-2 ms, so it leaves a loaded test machine 100 times that.
#[test]
fn healthz_ready_and_metrics_answer_at_once_however_many_idle_connections_are_open() {
    let r = Receiver::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let log = write_file(dir.path(), "a.log", "one\n");
    // An hour's header timeout: the idle connections stay open throughout.
    let cfg = config_with_server(dir.path(), &r.base, &log.display().to_string(), "header_read_timeout = \"1h\"");
    let agent = Agent::start(&cfg);
    wait_ready(&agent);
    assert!(wait_for(Duration::from_secs(20), || timed_get(&agent.metrics_addr.clone().unwrap(), "/ready")
        .0
        .contains("200")));
    let addr = agent.metrics_addr.clone().unwrap();
    for idle in [64, 300] {
        let held: Vec<TcpStream> = (0..idle).map(|_| TcpStream::connect(&addr).unwrap()).collect();
        for path in ["/healthz", "/ready", "/metrics"] {
            let (status, took) = timed_get(&addr, path);
            assert!(status.starts_with("HTTP/1.1 200"), "{path} behind {idle} idle connections: {status:?}");
            assert!(took < Duration::from_millis(250), "{path} behind {idle} idle connections took {took:?}");
        }
        drop(held);
    }
    assert!(agent.terminate(Duration::from_secs(20)).success());
}
