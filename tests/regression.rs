//! One test per bug found by the chaos, bad-input and fuzzing suites, named
//! after what broke (bugs found in a single function have their regression
//! test next to it instead). Each says how the bug was found.

use crate::agent;
use crate::common;

use std::time::Duration;

use agent::{agent_config, Agent};
use common::{wait_for, Receiver};

fn stored(r: &Receiver) -> u64 {
    r.stats()["entries"].as_u64().unwrap_or(0)
}

fn saved_offset(dir: &std::path::Path) -> Option<u64> {
    let text = std::fs::read_to_string(dir.join("positions.json")).ok()?;
    let json: serde_json::Value = serde_json::from_str(&text).ok()?;
    json["files"].as_array()?.iter().filter(|f| f["offset"].as_u64().is_some()).map(|f| f["offset"].as_u64()).min()?
}

/// Found by the chaos run (3,603 lines lost after a copytruncate and a kill -9).
/// Lines of the old content still queued when the file was truncated carried
/// the old content's offsets; acknowledged after the truncation, they moved
/// the new content's committed position to the old, larger offset. A kill -9
/// then made the restarted agent skip the new content up to that offset.
/// Now the new content gets a new positions entry, and late acknowledgements
/// of the old content advance only the old one.
#[test]
fn copytruncate_with_old_lines_in_flight_never_commits_an_old_offset_for_the_new_content() {
    let r = Receiver::start(&["--latency", "400ms", "--max-entries", "1000000"]);
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("app.log");
    let old_lines = 80_000u64;
    let text: String = (0..old_lines).map(|i| format!("old content line {i:06} padding padding padding\n")).collect();
    std::fs::write(&log, &text).unwrap();
    let cfg = agent_config(dir.path(), &r.base, &log.display().to_string(), "", "");
    let agent = Agent::start(&cfg);
    // Everything read, most of it still queued behind the slow service: copytruncate now.
    assert!(wait_for(Duration::from_secs(30), || agent.metric("tailship_source_lines_total") >= old_lines as f64));
    assert!(stored(&r) < old_lines / 2, "the service was too fast for the test to mean anything");
    std::fs::copy(&log, dir.path().join("app.log.1")).unwrap();
    std::fs::OpenOptions::new().write(true).open(&log).unwrap().set_len(0).unwrap();
    std::fs::write(&log, "new content line 1\nnew content line 2\n").unwrap();
    let new_len = std::fs::metadata(&log).unwrap().len();
    assert!(
        wait_for(Duration::from_secs(60), || stored(&r) >= old_lines + 2),
        "{} stored: {}",
        stored(&r),
        agent.stderr_text()
    );
    // Once everything is acknowledged and saved, the file's position is the new content's end,
    // and it never passed it on the way.
    let mut max_seen = 0;
    let settled = wait_for(Duration::from_secs(10), || {
        let o = saved_offset(dir.path()).unwrap_or(0);
        max_seen = max_seen.max(o);
        agent.metric("tailship_queue_lines") == 0.0 && o == new_len
    });
    let positions = std::fs::read_to_string(dir.path().join("positions.json")).unwrap_or_default();
    assert!(settled, "saved position never became {new_len}: {positions}");
    let json: serde_json::Value = serde_json::from_str(&positions).unwrap();
    let current: Vec<u64> = json["files"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["path"] == log.display().to_string())
        .filter_map(|f| f["offset"].as_u64())
        .collect();
    assert!(current.contains(&new_len), "{positions}");
    assert!(agent.terminate(Duration::from_secs(10)).success());
    // A restart after more lines resumes right after the new content.
    std::fs::OpenOptions::new()
        .append(true)
        .open(&log)
        .and_then(|mut f| std::io::Write::write_all(&mut f, b"after restart\n"))
        .unwrap();
    let agent = Agent::start(&cfg);
    assert!(wait_for(Duration::from_secs(20), || stored(&r) > old_lines + 2));
    assert_eq!(stored(&r), old_lines + 3);
    assert!(agent.terminate(Duration::from_secs(10)).success());
}

/// Found by the 10-minute chaos run (666 and then 1,028 lines lost, each time
/// lines written just before a kill -9). A chunk of lines that did not fit in
/// the open batch was split: the batch was sealed with its first lines, and
/// the chunk's position went only with the next batch. With batches in flight
/// at once, the next batch could be acknowledged first and move the file's
/// position past lines still unacknowledged in the first; a kill -9 before the
/// first was delivered lost them. Now a batch sealed in the middle of a chunk
/// holds that file's position back until it, too, is acknowledged.
///
/// Batches of one stream no longer go at once (one push of a stream at a
/// time), so the chunk's parts here are two tenants' (a `tenant` stage), whose
/// batches go in lanes of their own and may be acknowledged in any order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chunk_split_across_batches_commits_only_when_every_part_is_acknowledged() {
    use std::collections::BTreeMap;
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::Arc;
    use tailship::batch::{BatchSettings, Shipper};
    use tailship::positions::AckRef;
    use tailship::positions::{Fingerprint, Positions};
    use tailship::queue::{Chunk, Entry, Interner};

    // A service that refuses (500, for ever) every body holding a line of the
    // chunk's first part, and accepts the rest.
    let accepted = Arc::new(AtomicU64::new(0));
    let app = {
        let accepted = accepted.clone();
        axum::Router::new().route(
            "/logstore/api/v1/push",
            axum::routing::post(move |body: axum::body::Bytes| {
                let accepted = accepted.clone();
                async move {
                    if body.windows(11).any(|w| w == b"first part ") {
                        axum::http::StatusCode::INTERNAL_SERVER_ERROR
                    } else {
                        accepted.fetch_add(1, Ordering::Relaxed);
                        axum::http::StatusCode::NO_CONTENT
                    }
                }
            }),
        )
    };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });

    let mut client = tailship::config::ClientConfig { url, ..Default::default() };
    client.compression = tailship::config::Compression::None;
    client.retry.min_backoff = tailship::util::HumanDuration(Duration::from_millis(10));
    client.retry.max_backoff = tailship::util::HumanDuration(Duration::from_millis(50));
    let pusher = Arc::new(tailship::client::push::Pusher::new(&client, tailship::metrics::Health::new()).unwrap());
    let positions = Arc::new(Positions::in_memory());
    let key = positions.track(std::path::Path::new("/log/a"), Fingerprint::of(b"x"), 1, 1, 0);
    let abort = tokio_util::sync::CancellationToken::new();
    let settings = BatchSettings { max_bytes: 2048, max_wait: Duration::from_millis(20), max_in_flight: 4 };
    let pipeline = Shipper::start(settings, 16 << 20, pusher, positions.clone(), abort.clone());
    let interner = Interner::new();
    let labels = || BTreeMap::from([("job".to_string(), "split".to_string())]);
    let (refused, taken): (Arc<str>, Arc<str>) = (Arc::from("refused"), Arc::from("taken"));
    let (first, second) = (interner.intern(Some(&refused), labels()), interner.intern(Some(&taken), labels()));
    // One chunk of 40 lines of 100 bytes: about 20 fit in a batch.
    let mut chunk = Chunk::new(Arc::from("split"));
    let mut offset = 0u64;
    for i in 0..40 {
        let line = if i < 10 { format!("first part {i:088}") } else { format!("second part {i:087}") };
        let start = chunk.buf.len() as u32;
        chunk.buf.push_str(&line);
        let ts = tailship::util::now_ns() as i64;
        let sid = chunk.stream_id(if i < 10 { &first } else { &second });
        chunk.entries.push(Entry {
            stream: sid,
            ts,
            assigned_ts: true,
            start,
            len: line.len() as u32,
            meta: 0,
            skip: false,
        });
        offset += line.len() as u64 + 1;
    }
    chunk.ack = Some(AckRef { file: key, offset });
    assert!(pipeline.sink.send(chunk, &abort).await);
    // The second part is delivered; the first is refused and retried.
    let end = tokio::time::Instant::now() + Duration::from_secs(10);
    while accepted.load(Ordering::Relaxed) == 0 && tokio::time::Instant::now() < end {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(accepted.load(Ordering::Relaxed) >= 1, "the second part was not delivered");
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(positions.committed(key), Some(0), "the position passed lines that were never acknowledged");
    abort.cancel();
    let _ = tokio::time::timeout(Duration::from_secs(10), pipeline.finish()).await;
    assert_eq!(positions.committed(key), Some(0));
}

/// `tailship_queue_bytes` stayed 0 while lines waited for a service that was
/// down: the batch's queue permits were dropped when its push started (a
/// closure captured every field of the batch but them), so the byte budget
/// did not cover batches in flight.
#[test]
fn queue_bytes_counts_batches_in_flight_while_the_service_is_down() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("a.log");
    std::fs::write(&log, (0..1000).map(|i| format!("line {i}\n")).collect::<String>()).unwrap();
    let dead = format!("http://127.0.0.1:{}", agent::free_port());
    let cfg = agent_config(dir.path(), &dead, &log.display().to_string(), "", "");
    let agent = Agent::start(&cfg);
    assert!(wait_for(Duration::from_secs(20), || !agent.metrics().is_empty()));
    // The gauges are updated twice a second: wait for the lines to show, then look at the bytes.
    assert!(wait_for(Duration::from_secs(20), || agent.metric("tailship_queue_lines") == 1000.0
        && agent.metric("tailship_push_retries_total") >= 3.0));
    assert!(agent.metric("tailship_queue_bytes") >= 8890.0, "{}", agent.metrics());
    assert!(agent.terminate(Duration::from_secs(30)).success());
}

/// `tailship run ... 2>&1 | head -1`: when the reader of stderr went away, the
/// next log line panicked (exit 101, from the log writer) and positions were
/// not written. Log lines that cannot be written are dropped now.
#[test]
fn a_closed_stderr_never_stops_the_agent() {
    use std::io::BufRead;
    use std::process::{Command, Stdio};
    let r = Receiver::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("a.log");
    std::fs::write(&log, "one\n").unwrap();
    let cfg = agent_config(dir.path(), &r.base, &log.display().to_string(), "", "");
    let mut child = Command::new(common::bin())
        .args(["run", "--config"])
        .arg(&cfg)
        .env("RUST_LOG", "debug")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Read one line, then close the pipe, as `head -1` does.
    let mut stderr = std::io::BufReader::new(child.stderr.take().unwrap());
    let mut first = String::new();
    stderr.read_line(&mut first).unwrap();
    drop(stderr);
    // The agent goes on logging (debug) and shipping.
    std::fs::write(&log, "one\ntwo\nthree\n").unwrap();
    assert!(wait_for(Duration::from_secs(20), || r.stats()["entries"].as_u64() == Some(3)));
    assert!(child.try_wait().unwrap().is_none(), "the agent is still running");
    assert_eq!(sigterm_exit_code(&mut child), Some(0));
    let positions = std::fs::read_to_string(dir.path().join("positions.json")).unwrap();
    assert!(positions.contains("\"offset\": 14"), "{positions}");
}

/// `tailship receive 2>&1 | head -2`: with the reader of stderr gone, the
/// store ignored SIGTERM (its shutdown log line failed to write). It now logs
/// what it can and exits 0 on the first SIGTERM.
#[test]
fn receive_with_a_closed_stderr_stops_on_sigterm() {
    use std::io::BufRead;
    use std::process::{Command, Stdio};
    let mut child = Command::new(common::bin())
        .args(["receive", "--listen", "127.0.0.1:0"])
        .env("RUST_LOG", "debug")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut banner = String::new();
    stdout.read_line(&mut banner).unwrap();
    let base = banner.trim().rsplit(' ').next().unwrap().to_string();
    let mut stderr = std::io::BufReader::new(child.stderr.take().unwrap());
    let mut first = String::new();
    stderr.read_line(&mut first).unwrap();
    drop(stderr);
    drop(stdout);
    // Requests make it log (debug) into the closed pipe.
    let ready = common::get(&format!("{base}/stats"));
    assert_eq!(ready.status, 200, "{}", ready.text());
    assert_eq!(sigterm_exit_code(&mut child), Some(0));
}

/// SIGTERM to `child`, then its exit code (fails after 20 s without an exit).
fn sigterm_exit_code(child: &mut std::process::Child) -> Option<i32> {
    // SAFETY: kill(2) on our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let mut status = None;
    assert!(wait_for(Duration::from_secs(20), || {
        status = child.try_wait().unwrap();
        status.is_some()
    }));
    status.and_then(|s| s.code())
}

/// Found by trying an outage as an operator would: `tailship_files_unread_bytes`
/// read 0 while 18.4 MB waited unread, because the reader thread was blocked
/// on the full queue and never got back to the gauge.
#[test]
fn files_unread_bytes_counts_what_waits_while_the_service_is_down() {
    let port = agent::free_port();
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("a.log");
    let line = "x".repeat(99) + "\n";
    std::fs::write(&log, line.repeat(40_000)).unwrap(); // 4,000,000 bytes
    let cfg = agent_config(dir.path(), &format!("http://127.0.0.1:{port}"), &log.display().to_string(), "", "");
    let text = std::fs::read_to_string(&cfg).unwrap() + "[queue]\nmax_bytes = \"1MiB\"\n";
    std::fs::write(&cfg, text).unwrap();
    let agent = Agent::start(&cfg);
    assert!(
        wait_for(Duration::from_secs(30), || agent.metric(r#"tailship_files_unread_bytes{source="file-0"}"#)
            >= 2_000_000.0),
        "{}",
        agent.metrics()
    );
    assert!(agent.terminate(Duration::from_secs(30)).success());
}

/// Found measuring many files: with 2,000 files, the default
/// `max_open_files = 1024` and a descriptor limit of 1,024, the agent used
/// every descriptor and shipped nothing in 40 s (pushes failed with "Too many
/// open files", positions were not saved). It now keeps `max_open_files`
/// under the limit less a reserve and says so.
#[test]
fn more_files_than_descriptors_all_ship_under_a_low_descriptor_limit() {
    let r = Receiver::start(&["--max-entries", "100000"]);
    let dir = tempfile::tempdir().unwrap();
    let logs = dir.path().join("logs");
    std::fs::create_dir(&logs).unwrap();
    let files = 700;
    for i in 0..files {
        std::fs::write(logs.join(format!("f{i:04}.log")), format!("first line of file {i}\n")).unwrap();
    }
    let cfg = agent_config(dir.path(), &r.base, &format!("{}/*.log", logs.display()), "", "");
    let agent = Agent::start_wrapped(&cfg, &[], &["prlimit", "--nofile=512:512"]);
    assert!(
        wait_for(Duration::from_secs(120), || stored(&r) == files),
        "{} of {files} shipped: {}",
        stored(&r),
        agent.stderr_text()
    );
    assert!(
        agent.stderr_text().contains("max_open_files lowered to fit the descriptor limit"),
        "{}",
        agent.stderr_text()
    );
    assert!(!agent.stderr_text().contains("Too many open files"), "{}", agent.stderr_text());
    assert!(agent.terminate(Duration::from_secs(30)).success());
}

/// Files opened so far, from the agent's metrics.
fn opened(agent: &Agent) -> f64 {
    agent
        .metrics()
        .lines()
        .filter(|l| l.starts_with("tailship_file_events_total{") && l.contains("event=\"opened\""))
        .filter_map(|l| l.rsplit(' ').next().and_then(|v| v.parse::<f64>().ok()))
        .sum()
}

/// The agent's config with scans only at start: what ships afterwards came through events.
fn config_without_rescans(dir: &std::path::Path, r: &Receiver, include: &str, extra: &str) -> std::path::PathBuf {
    let cfg = agent_config(dir, &r.base, include, "", extra);
    let text = std::fs::read_to_string(&cfg).unwrap().replace("scan_interval = \"200ms\"", "scan_interval = \"1h\"");
    std::fs::write(&cfg, text).unwrap();
    cfg
}

/// Found measuring 10,000 files with the default `max_open_files = 1024`:
/// files beyond the limit waited until open ones had idled a second and a
/// later scan came (21.6 s for all first lines; with one scan only, most never
/// shipped), then parked files were reopened in turn for ever (44% of a core
/// idle). Now a file beyond the limit is read to its end at the scan that
/// finds it and waits closed, reopened only when it changes.
#[test]
fn files_beyond_max_open_files_ship_at_the_first_scan_and_are_reopened_only_when_they_grow() {
    let r = Receiver::start(&["--max-entries", "100000"]);
    let dir = tempfile::tempdir().unwrap();
    let logs = dir.path().join("logs");
    std::fs::create_dir(&logs).unwrap();
    let files = 200;
    for i in 0..files {
        std::fs::write(logs.join(format!("f{i:04}.log")), format!("first line of file {i}\n")).unwrap();
    }
    let cfg = config_without_rescans(dir.path(), &r, &format!("{}/*.log", logs.display()), "max_open_files = 10");
    let agent = Agent::start(&cfg);
    assert!(wait_for(Duration::from_secs(20), || stored(&r) == files), "{} of {files} shipped", stored(&r));
    assert!(agent.metric("tailship_files_open") <= 10.0, "{}", agent.metric("tailship_files_open"));
    assert_eq!(opened(&agent), files as f64, "each file opened once");
    // A parked file that grows is reopened (a write event brings a scan), and only it.
    let mut f = std::fs::OpenOptions::new().append(true).open(logs.join("f0150.log")).unwrap();
    std::io::Write::write_all(&mut f, b"second line of file 150\n").unwrap();
    assert!(wait_for(Duration::from_secs(20), || stored(&r) == files + 1), "{} shipped", stored(&r));
    assert_eq!(opened(&agent), files as f64 + 1.0, "only the file that grew is reopened");
    assert!(agent.terminate(Duration::from_secs(30)).success());
}

/// Write events are turned off while a burst is read by polling (more writes
/// than open files); a line written after the burst must still wake the agent
/// (no scan comes to find it here).
#[test]
fn a_line_written_after_a_burst_ships_without_waiting_for_a_scan() {
    let r = Receiver::start(&["--max-entries", "100000"]);
    let dir = tempfile::tempdir().unwrap();
    // In a directory of its own: positions writes would raise events (and scans).
    std::fs::create_dir(dir.path().join("logs")).unwrap();
    let log = dir.path().join("logs/a.log");
    std::fs::write(&log, "").unwrap();
    let cfg = config_without_rescans(dir.path(), &r, &log.display().to_string(), "");
    let agent = Agent::start(&cfg);
    let mut f = std::fs::OpenOptions::new().append(true).open(&log).unwrap();
    std::io::Write::write_all(&mut f, b"first\n").unwrap();
    assert!(wait_for(Duration::from_secs(20), || stored(&r) == 1), "{} shipped", stored(&r));
    for round in 0..3u64 {
        for i in 0..3000 {
            std::io::Write::write_all(&mut f, format!("burst {round} line {i}\n").as_bytes()).unwrap();
        }
        let want = 1 + 3001 * (round + 1);
        assert!(wait_for(Duration::from_secs(20), || stored(&r) >= want - 1), "{} shipped", stored(&r));
        // The scenario: the writer pauses (the agent finds a round with
        // nothing new and turns write events back on), then writes one line.
        std::thread::sleep(Duration::from_millis(300));
        std::io::Write::write_all(&mut f, format!("after burst {round}\n").as_bytes()).unwrap();
        assert!(wait_for(Duration::from_secs(10), || stored(&r) == want), "{} of {want} shipped", stored(&r));
    }
    assert!(agent.terminate(Duration::from_secs(30)).success());
}

/// Found by the chaos test in CI (2026-11-24: 533 lines lost). Lines a
/// restarted agent read again and did not send (their batch had been
/// acknowledged) were left out of its record of the chunk, so the record
/// counted fewer lines than the stretch of file it covered; after a second
/// kill -9 the next agent matched lines to records by their order and gave
/// lines further on the fates of others, delivered ones: never sent. Every
/// line of the chunk is now in the record, the skipped ones as such.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lines_skipped_on_a_replay_are_recorded_so_the_next_replay_stays_in_line() {
    use std::collections::BTreeMap;
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::Arc;
    use tailship::batch::{BatchSettings, Shipper};
    use tailship::positions::{AckRef, Again, Fingerprint, PositionsFile};
    use tailship::queue::{Chunk, Entry, Interner};

    // A service that is down (500, for ever): the batch stays in flight.
    let tries = Arc::new(AtomicU64::new(0));
    let app = {
        let tries = tries.clone();
        axum::Router::new().route(
            "/logstore/api/v1/push",
            axum::routing::post(move || {
                let tries = tries.clone();
                async move {
                    tries.fetch_add(1, Ordering::Relaxed);
                    axum::http::StatusCode::INTERNAL_SERVER_ERROR
                }
            }),
        )
    };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("positions.json");
    let file = PositionsFile::load(&path, false).unwrap();
    let (positions, _) = file.client(tailship::config::DEFAULT_CLIENT, None);
    let key = positions.track(std::path::Path::new("/log/a"), Fingerprint::of(b"line 0"), 1, 1, 0);
    file.save().unwrap();

    let mut client = tailship::config::ClientConfig { url, ..Default::default() };
    client.compression = tailship::config::Compression::None;
    let pusher = Arc::new(tailship::client::push::Pusher::new(&client, tailship::metrics::Health::new()).unwrap());
    let abort = tokio_util::sync::CancellationToken::new();
    let settings = BatchSettings { max_bytes: 1 << 20, max_wait: Duration::from_millis(20), max_in_flight: 4 };
    let pipeline = Shipper::start(settings, 16 << 20, pusher, positions.clone(), abort.clone());
    let stream = Interner::new().intern(None, BTreeMap::from([("job".to_string(), "replay".to_string())]));
    // Five lines read again: the first three skipped, the last two sent again with their first timestamps.
    let mut chunk = Chunk::new(Arc::from("replay"));
    let mut offset = 0u64;
    for i in 0..5i64 {
        let line = format!("line {i}");
        let start = chunk.buf.len() as u32;
        chunk.buf.push_str(&line);
        let sid = chunk.stream_id(&stream);
        let skip = i < 3;
        chunk.entries.push(Entry {
            stream: sid,
            ts: 1000 + i,
            assigned_ts: false,
            start,
            len: line.len() as u32,
            meta: 0,
            skip,
        });
        offset += line.len() as u64 + 1;
    }
    chunk.skipped = 3;
    chunk.replayed = 2;
    chunk.ack = Some(AckRef { file: key, offset });
    assert!(pipeline.sink.send(chunk, &abort).await);
    // Sent (so sealed and recorded) and refused: a kill -9 now.
    let end = tokio::time::Instant::now() + Duration::from_secs(10);
    while tries.load(Ordering::Relaxed) == 0 && tokio::time::Instant::now() < end {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(tries.load(Ordering::Relaxed) > 0, "nothing was pushed");
    abort.cancel();
    drop(file);

    let file = PositionsFile::load(&path, false).unwrap();
    let (q, _) = file.client(tailship::config::DEFAULT_CLIENT, None);
    let (key, start) = q.resume(b"line 0\nline 1\n", std::path::Path::new("/log/a"), 1, 1).unwrap();
    assert_eq!(start, 0);
    let mut r = q.take_replay(key, start).expect("the chunk was in flight");
    let fates: Vec<Again> = std::iter::from_fn(|| r.next_line()).collect();
    assert_eq!(fates, [Again::Skip, Again::Skip, Again::Skip, Again::Send(Some(1003)), Again::Send(Some(1004))]);
    assert!(r.chunk_done(offset));
    assert!(r.is_done());
}
