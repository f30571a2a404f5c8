//! Shipping files and stdin end to end: the real `tailship run` and `tailship
//! push` against `tailship receive` on loopback.

use crate::agent;
use crate::common;

use std::collections::{HashMap, HashSet};
use std::io::Write;
use std::process::{Command, Stdio};
use std::time::Duration;

use agent::{agent_config, query_all, Agent};
use common::{base64, bin, wait_for, Receiver};

const BIG_LIMIT: &[&str] = &["--max-query-limit", "10000000", "--max-entries", "10000000"];

fn lines(prefix: &str, n: usize) -> String {
    (0..n).map(|i| format!("{prefix} line {i:06} some payload to make it realistic\n")).collect()
}

fn stored_count(r: &Receiver) -> u64 {
    r.stats()["entries"].as_u64().unwrap_or(0)
}

#[test]
fn three_files_of_20000_lines_arrive_exactly_once_with_labels_and_increasing_timestamps() {
    let r = Receiver::start(BIG_LIMIT);
    let dir = tempfile::tempdir().unwrap();
    for f in ["a", "b", "c"] {
        std::fs::write(dir.path().join(format!("{f}.log")), lines(f, 20_000)).unwrap();
    }
    let cfg = agent_config(dir.path(), &r.base, &format!("{}/*.log", dir.path().display()), "", "");
    let agent = Agent::start(&cfg);
    assert!(
        wait_for(Duration::from_secs(60), || stored_count(&r) >= 60_000),
        "only {} stored: {}",
        stored_count(&r),
        agent.stderr_text()
    );
    let all = query_all(&r, r#"{job="test"}"#, None);
    assert_eq!(all.len(), 60_000);
    let mut by_stream: HashMap<String, Vec<&agent::Stored>> = HashMap::new();
    for e in &all {
        let file = e.labels["filename"].as_str().unwrap().to_string();
        assert_eq!(e.labels["job"], "test");
        assert!(e.labels.contains_key("host"));
        by_stream.entry(file).or_default().push(e);
    }
    assert_eq!(by_stream.len(), 3);
    for (file, entries) in by_stream {
        let name = std::path::Path::new(&file).file_stem().unwrap().to_str().unwrap().to_string();
        let expected: Vec<String> =
            (0..20_000).map(|i| format!("{name} line {i:06} some payload to make it realistic")).collect();
        let got: Vec<String> = entries.iter().map(|e| e.line.clone()).collect();
        assert_eq!(got, expected, "lines of {file} in order, each once");
        assert!(entries.windows(2).all(|w| w[0].ts < w[1].ts), "timestamps strictly increase in {file}");
    }
    let status = agent.terminate(Duration::from_secs(15));
    assert!(status.success());
    let positions = std::fs::read_to_string(dir.path().join("positions.json")).unwrap();
    let json: serde_json::Value = serde_json::from_str(&positions).unwrap();
    let files = json["files"].as_array().unwrap();
    assert_eq!(files.len(), 3);
    for f in files {
        let path = f["path"].as_str().unwrap();
        assert_eq!(f["offset"].as_u64().unwrap(), std::fs::metadata(path).unwrap().len(), "{path} fully delivered");
    }
}

#[test]
fn rename_rotation_under_a_5000_lines_per_second_writer_loses_and_duplicates_nothing() {
    let r = Receiver::start(BIG_LIMIT);
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("app.log");
    std::fs::write(&log, "").unwrap();
    let cfg = agent_config(dir.path(), &r.base, &format!("{}/app.log*", dir.path().display()), "", "");
    let agent = Agent::start(&cfg);
    // Writer: 5,000 lines/s for 3 s, rotating (rename + create) every 0.5 s.
    let total = 15_000usize;
    let writer = {
        let dir = dir.path().to_path_buf();
        std::thread::spawn(move || {
            let log = dir.join("app.log");
            let start = std::time::Instant::now();
            let mut f = std::fs::OpenOptions::new().append(true).open(&log).unwrap();
            let mut rotations = 0;
            for i in 0..total {
                let due = start + Duration::from_micros(200 * i as u64);
                if let Some(d) = due.checked_duration_since(std::time::Instant::now()) {
                    std::thread::sleep(d);
                }
                if i > 0 && i % 2500 == 0 {
                    rotations += 1;
                    std::fs::rename(&log, dir.join(format!("app.log.{rotations}"))).unwrap();
                    f = std::fs::OpenOptions::new().create(true).append(true).open(&log).unwrap();
                }
                writeln!(f, "rot line {i:06}").unwrap();
            }
            rotations
        })
    };
    let rotations = writer.join().unwrap();
    assert!(rotations >= 5);
    assert!(
        wait_for(Duration::from_secs(60), || stored_count(&r) >= total as u64),
        "only {} stored: {}",
        stored_count(&r),
        agent.stderr_text()
    );
    // Stopped first, so any duplicate it would send has arrived before counting.
    assert!(agent.terminate(Duration::from_secs(15)).success());
    let all = query_all(&r, r#"{job="test"}"#, None);
    let mut seen = HashMap::new();
    for e in &all {
        *seen.entry(e.line.clone()).or_insert(0) += 1;
    }
    for i in 0..total {
        let l = format!("rot line {i:06}");
        assert_eq!(seen.get(&l), Some(&1), "{l} exactly once");
    }
    assert_eq!(all.len(), total);
}

/// Copytruncate: the agent notices the file got shorter and starts again at 0.
/// Lines appended between the agent's last read and the truncation are lost:
/// no agent can read bytes that were copied away and truncated before it looked.
/// Here the agent has read everything before the truncation, so nothing is lost.
#[test]
fn copytruncate_is_noticed_and_the_new_content_ships() {
    let r = Receiver::start(BIG_LIMIT);
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("app.log");
    std::fs::write(&log, lines("before", 1000)).unwrap();
    let cfg = agent_config(dir.path(), &r.base, &log.display().to_string(), "", "");
    let agent = Agent::start(&cfg);
    assert!(wait_for(Duration::from_secs(30), || stored_count(&r) >= 1000));
    std::fs::copy(&log, dir.path().join("app.log.1")).unwrap();
    std::fs::OpenOptions::new().write(true).truncate(true).open(&log).unwrap();
    std::fs::write(&log, lines("after", 10)).unwrap();
    assert!(wait_for(Duration::from_secs(30), || stored_count(&r) >= 1010), "{}", agent.stderr_text());
    let all = query_all(&r, r#"{job="test"}"#, None);
    assert_eq!(all.iter().filter(|e| e.line.starts_with("after")).count(), 10);
    assert_eq!(all.iter().filter(|e| e.line.starts_with("before")).count(), 1000);
    assert!(wait_for(Duration::from_secs(10), || agent
        .metric("tailship_file_events_total{event=\"truncated\",source=\"file-0\"}")
        >= 1.0));
}

#[test]
fn kill_9_mid_shipping_then_restart_delivers_every_line_at_least_once() {
    let r = Receiver::start(&["--max-query-limit", "10000000", "--max-entries", "10000000", "--latency", "30ms"]);
    let dir = tempfile::tempdir().unwrap();
    let total = 200_000;
    std::fs::write(dir.path().join("big.log"), lines("k", total)).unwrap();
    let cfg = agent_config(dir.path(), &r.base, &format!("{}/*.log", dir.path().display()), "", "");
    let agent = Agent::start(&cfg);
    assert!(wait_for(Duration::from_secs(60), || stored_count(&r) >= 20_000));
    // Make sure at least one positions write happened, then kill in the middle.
    assert!(wait_for(Duration::from_secs(10), || dir.path().join("positions.json").exists()));
    agent.kill9();
    let at_kill = stored_count(&r);
    assert!(at_kill < total as u64, "killed too late to prove anything");
    let agent = Agent::start(&cfg);
    assert!(
        wait_for(Duration::from_secs(90), || {
            let all = query_all(&r, r#"{job="test"}"#, None);
            all.iter().map(|e| e.line.as_str()).collect::<HashSet<_>>().len() >= total
        }),
        "{}",
        agent.stderr_text()
    );
    let all = query_all(&r, r#"{job="test"}"#, None);
    let distinct: HashSet<&str> = all.iter().map(|e| e.line.as_str()).collect();
    assert_eq!(distinct.len(), total, "every line at least once");
    let duplicates = all.len() - distinct.len();
    // At most the batches in flight (4 x 256 KiB of ~60-byte lines) plus the open batch can repeat.
    assert!(duplicates <= 5 * 256 * 1024 / 50, "{duplicates} duplicates");
    assert!(agent.terminate(Duration::from_secs(15)).success());
}

#[test]
fn service_answering_429_five_times_with_retry_after_then_204_gets_every_line_and_retries_show_in_metrics() {
    let r = Receiver::start(&["--fail-first", "5", "--fail-status", "429", "--retry-after", "1"]);
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.log"), lines("r", 100)).unwrap();
    let cfg = agent_config(dir.path(), &r.base, &format!("{}/*.log", dir.path().display()), "", "");
    let agent = Agent::start(&cfg);
    assert!(wait_for(Duration::from_secs(60), || stored_count(&r) >= 100), "{}", agent.stderr_text());
    assert_eq!(r.stats()["requests"]["429"].as_u64(), Some(5));
    assert!(wait_for(Duration::from_secs(5), || agent.metric("tailship_push_retries_total") >= 5.0));
    assert!(agent.metric("tailship_push_requests_total{client=\"default\",status=\"429\"}") >= 5.0);
    assert_eq!(agent.metric("tailship_push_lines_total"), 100.0);
    assert!(agent.terminate(Duration::from_secs(15)).success());
}

#[test]
fn one_batch_refused_with_400_is_dropped_and_counted_and_later_batches_arrive() {
    let r = Receiver::start(&["--fail-every", "2", "--fail-status", "400", "--max-query-limit", "10000000"]);
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("a.log");
    std::fs::write(&log, "first batch\n").unwrap();
    let cfg = agent_config(dir.path(), &r.base, &log.display().to_string(), "", "");
    let agent = Agent::start(&cfg);
    assert!(wait_for(Duration::from_secs(30), || stored_count(&r) >= 1));
    // The second push gets 400: dropped, counted.
    std::fs::OpenOptions::new().append(true).open(&log).unwrap().write_all(b"refused line\n").unwrap();
    assert!(
        wait_for(Duration::from_secs(30), || agent
            .metric("tailship_lines_dropped_total{reason=\"rejected\",source=\"file-0\"}")
            >= 1.0),
        "{}",
        agent.stderr_text()
    );
    std::fs::OpenOptions::new().append(true).open(&log).unwrap().write_all(b"third batch\n").unwrap();
    assert!(wait_for(Duration::from_secs(30), || stored_count(&r) >= 2));
    let lines: Vec<String> = query_all(&r, r#"{job="test"}"#, None).into_iter().map(|e| e.line).collect();
    assert_eq!(lines, vec!["first batch", "third batch"]);
    assert_eq!(r.stats()["requests"]["400"].as_u64(), Some(1), "a 400 is never retried");
    assert!(agent.stderr_text().contains("400"), "the service's message is logged");
    assert!(agent.terminate(Duration::from_secs(15)).success());
}

#[test]
fn basic_auth_tenant_header_and_gzip_reach_the_server_as_configured() {
    let dir = tempfile::tempdir().unwrap();
    let pw = dir.path().join("pw");
    std::fs::write(&pw, "s3cret\n").unwrap();
    let r = Receiver::start(&[
        "--multi-tenant",
        "--basic-auth-user",
        "123456",
        "--basic-auth-password-file",
        pw.to_str().unwrap(),
        "--max-query-limit",
        "100000",
    ]);
    std::fs::write(dir.path().join("a.log"), lines("auth", 50)).unwrap();
    let client_extra = format!(
        "tenant_id = \"team-a\"\ncompression = \"gzip\"\nbasic_auth = {{ username = \"123456\", password_file = \"{}\" }}",
        pw.display()
    );
    let cfg = agent_config(dir.path(), &r.base, &format!("{}/*.log", dir.path().display()), &client_extra, "");
    let agent = Agent::start(&cfg);
    assert!(wait_for(Duration::from_secs(30), || stored_count(&r) >= 50), "{}", agent.stderr_text());
    assert_eq!(r.stats()["requests"].as_object().unwrap().keys().collect::<Vec<_>>(), vec!["204"]);
    let auth = format!("Basic {}", base64("123456:s3cret"));
    let url = common::with_params(&r.api("/query_range"), &[("query", r#"{job="test"}"#), ("limit", "1000")]);
    let a = common::get_with(&url, &[("X-Scope-OrgID", "team-a"), ("Authorization", &auth)]).json();
    assert_eq!(a["data"]["result"][0]["values"].as_array().unwrap().len(), 50);
    let b = common::get_with(&url, &[("X-Scope-OrgID", "team-b"), ("Authorization", &auth)]).json();
    assert!(b["data"]["result"].as_array().unwrap().is_empty(), "stored under team-a only");
    assert!(
        agent.metric("tailship_push_bytes_total{client=\"default\",kind=\"wire\"}")
            < agent.metric("tailship_push_bytes_total{client=\"default\",kind=\"raw\"}"),
        "gzip made it smaller"
    );
    assert!(agent.terminate(Duration::from_secs(15)).success());
}

#[test]
fn invalid_utf8_and_a_1_mib_line_are_repaired_truncated_counted_and_neighbours_intact() {
    let r = Receiver::start(&["--max-query-limit", "10000000"]);
    let dir = tempfile::tempdir().unwrap();
    let mut data = b"before\nbad \xff\xfe bytes\n".to_vec();
    data.extend(std::iter::repeat_n(b'x', 1 << 20));
    data.extend_from_slice(b"\nafter\n");
    std::fs::write(dir.path().join("a.log"), &data).unwrap();
    let cfg = agent_config(dir.path(), &r.base, &format!("{}/*.log", dir.path().display()), "", "");
    let agent = Agent::start(&cfg);
    assert!(wait_for(Duration::from_secs(30), || stored_count(&r) >= 4), "{}", agent.stderr_text());
    let all = query_all(&r, r#"{job="test"}"#, None);
    assert_eq!(all.len(), 4);
    assert_eq!(all[0].line, "before");
    assert_eq!(all[1].line, "bad \u{fffd}\u{fffd} bytes");
    assert_eq!(all[2].line.len(), 256 * 1024);
    assert!(all[2].line.bytes().all(|b| b == b'x'));
    assert_eq!(all[3].line, "after");
    assert!(wait_for(Duration::from_secs(5), || agent
        .metric("tailship_lines_repaired_total{reason=\"invalid_utf8\",source=\"file-0\"}")
        == 1.0));
    assert_eq!(agent.metric("tailship_lines_repaired_total{reason=\"truncated\",source=\"file-0\"}"), 1.0);
    assert!(agent.terminate(Duration::from_secs(15)).success());
}

#[test]
fn sigterm_with_lines_pending_acknowledges_them_all_before_exit_and_writes_positions() {
    let r = Receiver::start(&["--latency", "300ms", "--max-query-limit", "10000000"]);
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("a.log");
    std::fs::write(&log, lines("t", 5000)).unwrap();
    let cfg = agent_config(dir.path(), &r.base, &log.display().to_string(), "", "");
    let text = std::fs::read_to_string(&cfg).unwrap().replace("max_wait = \"100ms\"", "max_wait = \"30s\"");
    std::fs::write(&cfg, text).unwrap();
    let agent = Agent::start(&cfg);
    // Wait until the file is read (the lines sit in batches), then stop.
    assert!(wait_for(Duration::from_secs(30), || agent.metric("tailship_source_lines_total") >= 5000.0));
    let status = agent.terminate(Duration::from_secs(20));
    assert!(status.success(), "exit 0 after SIGTERM");
    assert_eq!(stored_count(&r), 5000, "every pending line acknowledged before exit");
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("positions.json")).unwrap()).unwrap();
    assert_eq!(json["files"][0]["offset"].as_u64().unwrap(), std::fs::metadata(&log).unwrap().len());
}

#[test]
fn service_down_for_30s_then_back_delivers_everything_and_rss_stays_flat() {
    let port = agent::free_port();
    let dir = tempfile::tempdir().unwrap();
    // 100 MB waiting on disk: far more than the 16 MiB queue.
    let mut f = std::io::BufWriter::new(std::fs::File::create(dir.path().join("a.log")).unwrap());
    let total = 1_000_000usize;
    for i in 0..total {
        writeln!(f, "down line {i:07} {}", "p".repeat(80)).unwrap();
    }
    f.flush().unwrap();
    drop(f);
    let cfg = agent_config(
        dir.path(),
        &format!("http://127.0.0.1:{port}"),
        &format!("{}/*.log", dir.path().display()),
        "",
        "",
    );
    let agent = Agent::start(&cfg);
    assert!(wait_for(Duration::from_secs(10), || agent.metric("tailship_queue_bytes") > 0.0));
    let mut samples = Vec::new();
    let started = std::time::Instant::now();
    while started.elapsed() < Duration::from_secs(30) {
        samples.push(agent.rss_kb());
        std::thread::sleep(Duration::from_millis(500));
    }
    let read = agent.metric("tailship_source_bytes_total");
    assert!(read < 40.0 * 1024.0 * 1024.0, "the agent stopped reading while the service was down ({read} bytes read)");
    assert!(agent.metric("tailship_oldest_unacknowledged_seconds") >= 5.0);
    let early = samples[4];
    let late = *samples.last().unwrap();
    assert!(late < early + 16 * 1024, "RSS grew from {early} kB to {late} kB while the service was down");
    let r = Receiver::start_on(&format!("127.0.0.1:{port}"), BIG_LIMIT);
    assert!(wait_for(Duration::from_secs(120), || stored_count(&r) >= total as u64), "{} of {total}", stored_count(&r));
    assert!(agent.terminate(Duration::from_secs(15)).success());
}

#[test]
fn push_command_ships_a_file_and_stdin_and_exits_0() {
    let r = Receiver::start(&["--max-query-limit", "10000000"]);
    let dir = tempfile::tempdir().unwrap();
    let f = agent::write_file(dir.path(), "one.log", &lines("p", 1000));
    let out = Command::new(bin()).args(["push", "--url", &r.base, "--label", "job=oneoff"]).arg(&f).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(
        out.stderr.is_empty() || !String::from_utf8_lossy(&out.stderr).contains('\r'),
        "no progress bar without a TTY"
    );
    assert_eq!(query_all(&r, r#"{job="oneoff"}"#, None).len(), 1000);
    let mut child = Command::new(bin())
        .args(["push", "--url", &r.base, "--label", "job=piped", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(b"one\ntwo\nthree without newline").unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let got: Vec<String> = query_all(&r, r#"{job="piped"}"#, None).into_iter().map(|e| e.line).collect();
    assert_eq!(got, vec!["one", "two", "three without newline"]);
}

#[test]
fn push_command_exits_1_with_the_service_message_when_lines_are_refused() {
    let r = Receiver::start(&["--fail-every", "1", "--fail-status", "400"]);
    let dir = tempfile::tempdir().unwrap();
    let f = agent::write_file(dir.path(), "one.log", "a\nb\n");
    let out = Command::new(bin()).args(["push", "--url", &r.base]).arg(&f).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("2 of 2 lines were refused") && err.contains("400"), "{err}");
}

#[test]
fn push_command_with_a_bad_label_or_missing_file_exits_2() {
    let out = Command::new(bin())
        .args(["push", "--url", "http://127.0.0.1:1", "--label", "bad-name=x", "/nonexistent"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("bad-name"));
    let out = Command::new(bin()).args(["push", "--url", "http://127.0.0.1:1", "/nonexistent/x.log"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("/nonexistent/x.log"));
}

#[test]
fn push_with_max_retries_gives_up_and_exits_1_naming_the_last_error() {
    let r = Receiver::start(&["--fail-every", "1", "--fail-status", "503"]);
    let dir = tempfile::tempdir().unwrap();
    let f = agent::write_file(dir.path(), "one.log", "a\nb\n");
    let out = Command::new(bin()).args(["push", "--url", &r.base, "--max-retries", "2"]).arg(&f).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("2 of 2 lines were not delivered: gave up after 2 retries") && err.contains("503"), "{err}");
    // One attempt and two retries, no more.
    assert_eq!(r.stats()["requests"]["503"].as_u64(), Some(3), "{}", r.stats());
}

#[test]
fn push_give_up_after_stops_retrying_an_unreachable_url_and_names_the_cause() {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let dir = tempfile::tempdir().unwrap();
    let f = agent::write_file(dir.path(), "one.log", "a\nb\n");
    let mut child = Command::new(bin())
        .args(["push", "--url", &format!("http://127.0.0.1:{port}"), "--give-up-after", "2s"])
        .arg(&f)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut status = None;
    assert!(wait_for(Duration::from_secs(60), || {
        status = child.try_wait().unwrap();
        status.is_some()
    }));
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
    assert_eq!(status.and_then(|s| s.code()), Some(1), "{err}");
    assert!(err.contains("gave up after 2s (--give-up-after): 0 lines acknowledged"), "{err}");
    assert!(err.contains("connection failed") && err.contains(&format!("127.0.0.1:{port}")), "{err}");
}

/// A line over the service's 256 KiB limit got its whole batch a 400 and
/// every line of it counted as refused. The service stores the rest and says
/// `total ignored: 1 out of 10` (as Loki does): one line is counted refused,
/// nine delivered.
#[test]
fn a_line_over_the_service_limit_is_refused_alone_and_the_rest_counted_delivered() {
    let r = Receiver::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let mut text: String = (0..9).map(|i| format!("short line {i}\n")).collect();
    text.push_str(&"y".repeat(300_000));
    text.push('\n');
    let log = agent::write_file(dir.path(), "a.log", &text);
    let cfg = agent_config(dir.path(), &r.base, &log.display().to_string(), "", "max_line_bytes = \"512KiB\"");
    // One batch for all ten lines.
    let text = std::fs::read_to_string(&cfg).unwrap().replace("max_bytes = \"256KiB\"", "max_bytes = \"1MiB\"");
    std::fs::write(&cfg, text).unwrap();
    let agent = Agent::start(&cfg);
    assert!(
        wait_for(Duration::from_secs(20), || agent.metric("tailship_push_lines_total") >= 9.0),
        "{}",
        agent.metrics()
    );
    assert!(
        wait_for(Duration::from_secs(20), || agent
            .metric(r#"tailship_lines_dropped_total{reason="rejected",source="file-0"}"#)
            == 1.0),
        "{}",
        agent.metrics()
    );
    assert_eq!(agent.metric("tailship_push_lines_total"), 9.0);
    assert_eq!(stored_count(&r), 9);
    assert!(agent.stderr_text().contains("total ignored: 1 out of 10"), "{}", agent.stderr_text());
    assert!(agent.terminate(Duration::from_secs(20)).success());
}
