//! Source behaviour through the real binary: multiline, compressed files,
//! start_at, stdin in the daemon, reload on SIGHUP, health endpoints, the demo.

use crate::agent;
use crate::common;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use agent::{agent_config, query_all, Agent};
use common::{bin, get, wait_for, Receiver};
use tempfile::TempDir;

const BIG: &[&str] = &["--max-query-limit", "1000000"];

fn stored(r: &Receiver) -> u64 {
    r.stats()["entries"].as_u64().unwrap_or(0)
}

fn append(path: &std::path::Path, text: &str) {
    std::fs::OpenOptions::new().create(true).append(true).open(path).unwrap().write_all(text.as_bytes()).unwrap();
}

#[test]
fn multiline_entries_are_joined_and_a_partial_last_line_ships_after_its_wait() {
    let r = Receiver::start(BIG);
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("a.log");
    std::fs::write(&log, "2026-01-01 first\n  at one\n  at two\n2026-01-01 second\n2026-01-01 third without newline")
        .unwrap();
    let cfg = agent_config(
        dir.path(),
        &r.base,
        &log.display().to_string(),
        "",
        "multiline = { start = '^\\d{4}-', max_wait = \"200ms\" }",
    );
    let agent = Agent::start(&cfg);
    assert!(wait_for(Duration::from_secs(20), || stored(&r) >= 3), "{}", agent.stderr_text());
    let lines: Vec<String> = query_all(&r, r#"{job="test"}"#, None).into_iter().map(|e| e.line).collect();
    assert_eq!(
        lines,
        vec!["2026-01-01 first\n  at one\n  at two", "2026-01-01 second", "2026-01-01 third without newline"]
    );
    assert!(agent.terminate(Duration::from_secs(10)).success());
}

#[test]
fn gzip_files_are_read_once_decompressed() {
    let r = Receiver::start(BIG);
    let dir = tempfile::tempdir().unwrap();
    let text: String = (0..500).map(|i| format!("gz line {i}\n")).collect();
    std::fs::write(dir.path().join("old.log.gz"), common::gzip(text.as_bytes())).unwrap();
    let cfg = agent_config(dir.path(), &r.base, &format!("{}/*.gz", dir.path().display()), "", "");
    let agent = Agent::start(&cfg);
    assert!(wait_for(Duration::from_secs(20), || stored(&r) >= 500), "{}", agent.stderr_text());
    assert!(agent.terminate(Duration::from_secs(10)).success());
    // A restart does not read it again.
    let agent = Agent::start(&cfg);
    assert!(
        wait_for(Duration::from_secs(10), || agent.metric("tailship_files_open") >= 0.0 && !agent.metrics().is_empty())
    );
    std::thread::sleep(Duration::from_millis(600));
    assert_eq!(stored(&r), 500);
    assert!(agent.terminate(Duration::from_secs(10)).success());
}

#[test]
fn start_at_end_skips_existing_lines_but_not_new_ones_or_new_files() {
    let r = Receiver::start(BIG);
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("a.log");
    std::fs::write(&log, "old 1\nold 2\n").unwrap();
    let cfg = agent_config(dir.path(), &r.base, &format!("{}/*.log", dir.path().display()), "", "start_at = \"end\"");
    let agent = Agent::start(&cfg);
    assert!(wait_for(Duration::from_secs(10), || agent.metric("tailship_files_open") >= 1.0));
    append(&log, "new 1\n");
    std::fs::write(dir.path().join("b.log"), "fresh file line\n").unwrap();
    assert!(wait_for(Duration::from_secs(20), || stored(&r) >= 2), "{}", agent.stderr_text());
    let mut lines: Vec<String> = query_all(&r, r#"{job="test"}"#, None).into_iter().map(|e| e.line).collect();
    lines.sort();
    assert_eq!(lines, vec!["fresh file line", "new 1"]);
    assert!(agent.terminate(Duration::from_secs(10)).success());
}

#[test]
fn a_restart_resumes_at_the_saved_position_without_resending() {
    let r = Receiver::start(BIG);
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("a.log");
    std::fs::write(&log, "one\ntwo\n").unwrap();
    let cfg = agent_config(dir.path(), &r.base, &log.display().to_string(), "", "");
    let agent = Agent::start(&cfg);
    assert!(wait_for(Duration::from_secs(20), || stored(&r) >= 2));
    assert!(agent.terminate(Duration::from_secs(10)).success());
    append(&log, "three\n");
    let agent = Agent::start(&cfg);
    assert!(wait_for(Duration::from_secs(20), || stored(&r) >= 3));
    // Stopped before counting: a line it would send twice has arrived.
    assert!(agent.terminate(Duration::from_secs(10)).success());
    let lines: Vec<String> = query_all(&r, r#"{job="test"}"#, None).into_iter().map(|e| e.line).collect();
    assert_eq!(lines, vec!["one", "two", "three"]);
}

/// A corrupt positions file stops `run` (exit 2, nothing sent); asked to
/// start fresh, the agent moves it aside and starts.
#[test]
fn a_corrupt_positions_file_stops_run_until_it_is_moved_aside_on_request() {
    let r = Receiver::start(BIG);
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("positions.json"), "{\"version\":1,\"files\":[{\"pa").unwrap();
    std::fs::write(dir.path().join("a.log"), "line\n").unwrap();
    let cfg = agent_config(dir.path(), &r.base, &format!("{}/*.log", dir.path().display()), "", "");
    let mut agent = Agent::start(&cfg);
    let status = agent.exit_within(Duration::from_secs(20));
    assert_eq!(status.and_then(|s| s.code()), Some(2), "{}", agent.stderr_text());
    assert_eq!(stored(&r), 0);
    let agent = Agent::start_args(&cfg, &[], &[], &["--fresh-positions"]);
    assert!(wait_for(Duration::from_secs(20), || stored(&r) >= 1), "{}", agent.stderr_text());
    assert!(dir.path().join("positions.json.corrupt").exists());
    assert!(agent.stderr_text().contains("moved it aside"));
    assert!(agent.terminate(Duration::from_secs(10)).success());
}

#[test]
fn stdin_source_in_the_daemon_ships_and_the_daemon_goes_on_after_eof() {
    let r = Receiver::start(BIG);
    let dir = tempfile::tempdir().unwrap();
    let port = agent::free_port();
    let cfg = agent::write_file(
        dir.path(),
        "t.toml",
        &format!(
            "[server]\nlisten = \"127.0.0.1:{port}\"\n[client]\nurl = \"{}\"\nbatch = {{ max_wait = \"100ms\" }}\n[positions]\npath = \"{}/p.json\"\n[[sources]]\ntype = \"stdin\"\nlabels = {{ job = \"stdin\" }}\n",
            r.base,
            dir.path().display()
        ),
    );
    let mut child = Command::new(bin())
        .args(["run", "--config"])
        .arg(&cfg)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(b"from stdin 1\nfrom stdin 2\n").unwrap();
    assert!(wait_for(Duration::from_secs(20), || stored(&r) >= 2));
    assert!(child.try_wait().unwrap().is_none(), "still running after EOF");
    assert_eq!(get(&format!("http://127.0.0.1:{port}/healthz")).status, 200);
    // SAFETY: kill(2) on our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let mut status = None;
    assert!(wait_for(Duration::from_secs(10), || {
        status = child.try_wait().unwrap();
        status.is_some()
    }));
    assert!(status.unwrap().success());
}

#[test]
fn sighup_reloads_sources_without_losing_positions() {
    let r = Receiver::start(BIG);
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.log");
    let b = dir.path().join("b.txt");
    std::fs::write(&a, "a1\n").unwrap();
    std::fs::write(&b, "b1\n").unwrap();
    let cfg = agent_config(dir.path(), &r.base, &a.display().to_string(), "", "");
    let agent = Agent::start(&cfg);
    assert!(wait_for(Duration::from_secs(20), || stored(&r) >= 1));
    // Reload with a second glob and a new label.
    let text = std::fs::read_to_string(&cfg)
        .unwrap()
        .replace(
            &format!("include = [\"{}\"]", a.display()),
            &format!("include = [\"{}\", \"{}\"]", a.display(), b.display()),
        )
        .replace("job = \"test\"", "job = \"test\", reloaded = \"yes\"");
    std::fs::write(&cfg, text).unwrap();
    agent.signal(libc::SIGHUP);
    assert!(wait_for(Duration::from_secs(20), || stored(&r) >= 2), "{}", agent.stderr_text());
    append(&a, "a2\n");
    assert!(wait_for(Duration::from_secs(20), || stored(&r) >= 3), "{}", agent.stderr_text());
    std::thread::sleep(Duration::from_millis(300));
    let all = query_all(&r, r#"{job="test"}"#, None);
    let lines: Vec<&str> = all.iter().map(|e| e.line.as_str()).collect();
    assert_eq!(lines.iter().filter(|l| **l == "a1").count(), 1, "a1 not sent again: {lines:?}");
    assert!(lines.contains(&"b1") && lines.contains(&"a2"), "{lines:?}");
    assert!(all.iter().filter(|e| e.line != "a1").all(|e| e.labels["reloaded"] == "yes"));
    let err = agent.stderr_text();
    assert!(err.contains("config reloaded"), "{err}");
    // No stdin source, no alert rules: nothing said about them.
    assert!(!err.contains("stdin keeps reading") && !err.contains("alert rules reloaded"), "{err}");
    // A broken config on reload keeps the running one.
    std::fs::write(&cfg, "[client]\nurll = 1\n").unwrap();
    agent.signal(libc::SIGHUP);
    assert!(wait_for(Duration::from_secs(10), || agent.stderr_text().contains("reload refused")));
    append(&a, "a3\n");
    assert!(wait_for(Duration::from_secs(20), || stored(&r) >= 4));
    assert!(agent.terminate(Duration::from_secs(10)).success());
}

#[test]
fn health_and_ready_endpoints_and_metrics() {
    let dir = tempfile::tempdir().unwrap();
    let port = agent::free_port();
    let dead = format!("http://127.0.0.1:{port}");
    std::fs::write(dir.path().join("a.log"), "x\n").unwrap();
    let cfg = agent_config(dir.path(), &dead, &format!("{}/*.log", dir.path().display()), "", "");
    let agent = Agent::start(&cfg);
    let base = format!("http://{}", agent.metrics_addr.clone().unwrap());
    assert!(wait_for(Duration::from_secs(10), || std::panic::catch_unwind(
        || get(&format!("{base}/healthz")).status == 200
    )
    .unwrap_or(false)));
    // The service is down: not ready, with the reason.
    assert!(wait_for(Duration::from_secs(10), || {
        let r = get(&format!("{base}/ready"));
        r.status == 503 && r.text().contains("last push failed")
    }));
    let m = agent.metrics();
    for name in [
        "tailship_build_info",
        "tailship_source_lines_total",
        "tailship_source_bytes_total",
        "tailship_push_requests_total",
        "tailship_push_retries_total",
        "tailship_push_duration_seconds",
        "tailship_queue_bytes",
        "tailship_queue_lines",
        "tailship_files_open",
        "tailship_files_unread_bytes",
        "tailship_oldest_unacknowledged_seconds",
        "process_resident_memory_bytes",
    ] {
        assert!(m.contains(name), "{name} missing from /metrics");
    }
    // The service comes up: ready again.
    let r = Receiver::start_on(&format!("127.0.0.1:{port}"), BIG);
    assert!(wait_for(Duration::from_secs(30), || stored(&r) >= 1));
    assert!(wait_for(Duration::from_secs(10), || get(&format!("{base}/ready")).status == 200));
    assert!(agent.terminate(Duration::from_secs(10)).success());
}

#[test]
fn demo_runs_end_to_end() {
    let out = Command::new(bin())
        .args(["demo", "--duration", "3s", "--rate", "500"])
        .env_remove("RUST_LOG")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}{}", String::from_utf8_lossy(&out.stderr));
    assert!(text.contains("live tail"), "{text}");
    assert!(text.contains("alert webhook [alerting] demo-errors"), "{text}");
    assert!(text.contains("1 resolved"), "the demo's alert resolves at shutdown: {text}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("still unsent"), "nothing left unsent at shutdown: {err}");
    let written: u64 = text
        .lines()
        .find(|l| l.contains("entries written"))
        .and_then(|l| l.split_whitespace().nth(2))
        .unwrap()
        .parse()
        .unwrap();
    let stored: u64 = text
        .lines()
        .find(|l| l.contains("entries stored"))
        .and_then(|l| l.split_whitespace().nth(2))
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(stored, written - written / 10, "every entry but the dropped health checks arrived: {text}");
    assert!(text.contains("every one delivered"), "{text}");
    // A single match reads as one line, not "1 matching lines".
    assert!(!text.contains(" 1 matching lines"), "{text}");
    // The live view is not mixed with the agent's info logs.
    assert!(!err.contains("INFO"), "{err}");
    // "Next" names a config that works as is (see the test below).
    assert!(text.contains("tailship run --config config/local.toml"), "{text}");
}

/// The config the demo's "Next" points at ships to `tailship receive` as is
/// (only its URL and endpoint port are moved, so tests can run side by side).
#[test]
fn the_local_example_config_ships_to_receive_as_is() {
    let r = Receiver::start(BIG);
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(concat!(env!("CARGO_MANIFEST_DIR"), "/config/local.toml"), dir.path().join("local.toml")).unwrap();
    std::fs::create_dir(dir.path().join("logs")).unwrap();
    let port = agent::free_port();
    let mut child = Command::new(bin())
        .args(["run", "--config", "local.toml"])
        .current_dir(dir.path())
        .env("TAILSHIP_CLIENT__URL", &r.base)
        .env("TAILSHIP_SERVER__LISTEN", format!("127.0.0.1:{port}"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    append(&dir.path().join("logs/app.log"), "hello ERROR world\n");
    assert!(wait_for(Duration::from_secs(30), || stored(&r) == 1));
    let got = query_all(&r, r#"{job="local", level="ERROR"}"#, None);
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].line, "hello ERROR world");
    // SAFETY: kill(2) on our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    assert!(wait_for(Duration::from_secs(20), || child.try_wait().unwrap().is_some()));
    assert!(dir.path().join("tailship-positions.json").exists());
}

#[test]
fn more_files_than_max_open_files_all_ship_by_parking_idle_ones() {
    let r = Receiver::start(BIG);
    let dir = tempfile::tempdir().unwrap();
    for i in 0..6 {
        std::fs::write(dir.path().join(format!("f{i}.log")), format!("first {i}\n")).unwrap();
    }
    let cfg = agent_config(dir.path(), &r.base, &format!("{}/*.log", dir.path().display()), "", "max_open_files = 2");
    let agent = Agent::start(&cfg);
    assert!(wait_for(Duration::from_secs(30), || stored(&r) >= 6), "{} stored: {}", stored(&r), agent.stderr_text());
    assert!(agent.metric("tailship_files_open") <= 2.0);
    for i in 0..6 {
        append(&dir.path().join(format!("f{i}.log")), &format!("second {i}\n"));
    }
    assert!(wait_for(Duration::from_secs(30), || stored(&r) >= 12), "{} stored: {}", stored(&r), agent.stderr_text());
    // Stopped before counting: a line it would send twice has arrived.
    assert!(agent.terminate(Duration::from_secs(10)).success());
    let all = query_all(&r, r#"{job="test"}"#, None);
    assert_eq!(all.len(), 12, "each line once");
}

/// An [`agent_config`] of `include` in `dir` scanned every hour, its
/// positions in a temp dir of their own (returned), as their writes would
/// raise events in the watched directory.
fn hourly_config(dir: &Path, url: &str, include: &str) -> (PathBuf, TempDir) {
    let cfg = agent_config(dir, url, include, "", "");
    let state = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(&cfg)
        .unwrap()
        .replace("scan_interval = \"200ms\"", "scan_interval = \"1h\"")
        .replace(&format!("{}/positions.json", dir.display()), &format!("{}/positions.json", state.path().display()));
    std::fs::write(&cfg, text).unwrap();
    (cfg, state)
}

/// Regression: a file that existed but was empty at startup was only tailed
/// at the next `scan_interval`, so its first lines waited up to 10 s.
#[test]
fn a_file_empty_at_startup_ships_its_first_lines_without_waiting_for_the_next_scan() {
    let r = Receiver::start(BIG);
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("a.log");
    std::fs::write(&log, "").unwrap();
    let (cfg, _state) = hourly_config(dir.path(), &r.base, &log.display().to_string());
    let agent = Agent::start(&cfg);
    assert!(wait_for(Duration::from_secs(10), || !agent.metrics().is_empty()));
    append(&log, "first line\n");
    assert!(wait_for(Duration::from_secs(20), || stored(&r) >= 1), "{}", agent.stderr_text());
    assert!(agent.terminate(Duration::from_secs(10)).success());
}

/// Open files without events are not touched between scans; a file reached
/// through a symbolic link raises its events in the target's directory,
/// which is not watched, so it is still polled: its new lines ship without
/// waiting for a scan (here an hour away).
#[test]
fn a_symlinked_file_outside_the_watched_directory_ships_between_scans() {
    let r = Receiver::start(BIG);
    let dir = tempfile::tempdir().unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    let target = elsewhere.path().join("real.log");
    std::fs::write(&target, "first\n").unwrap();
    std::os::unix::fs::symlink(&target, dir.path().join("app.log")).unwrap();
    std::fs::write(dir.path().join("plain.log"), "plain first\n").unwrap();
    let (cfg, _state) = hourly_config(dir.path(), &r.base, &format!("{}/*.log", dir.path().display()));
    let agent = Agent::start(&cfg);
    assert!(wait_for(Duration::from_secs(20), || stored(&r) == 2), "{}", agent.stderr_text());
    // Only the link's target is written: no event in the watched directory.
    append(&target, "second through the link\n");
    assert!(wait_for(Duration::from_secs(20), || stored(&r) == 3), "{} stored: {}", stored(&r), agent.stderr_text());
    append(&dir.path().join("plain.log"), "plain second\n");
    assert!(wait_for(Duration::from_secs(20), || stored(&r) == 4), "{} stored: {}", stored(&r), agent.stderr_text());
    assert!(agent.terminate(Duration::from_secs(10)).success());
}
