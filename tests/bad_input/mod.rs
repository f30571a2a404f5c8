//! Bad input: what the agent does with files, file-system states, positions
//! files and configs that are wrong in every way we could think of. Each test
//! says what it proves; the book's fault table (book/src/delivery/faults.md,
//! with the test names in book/src/testing/faults.md) points here.

use crate::agent;
use crate::common;

use std::collections::BTreeMap;
use std::io::Write;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use agent::{agent_config, metric_value, query_all, Agent};
use common::{bin, wait_for, Receiver};

mod positions;

const BIG: &[&str] = &["--max-query-limit", "1000000", "--max-entries", "1000000"];

fn stored(r: &Receiver) -> u64 {
    r.stats()["entries"].as_u64().unwrap_or(0)
}

fn append(path: &Path, data: &[u8]) {
    std::fs::OpenOptions::new().create(true).append(true).open(path).unwrap().write_all(data).unwrap();
}

fn lines_of(r: &Receiver) -> Vec<String> {
    query_all(r, r#"{job="test"}"#, None).into_iter().map(|e| e.line).collect()
}

/// Appends a marker line to `file` and waits until it is stored: everything
/// the agent read before it (duplicates included) has arrived by then.
fn barrier(r: &Receiver, file: &Path, marker: &str) {
    append(file, format!("{marker}\n").as_bytes());
    assert!(
        wait_for(Duration::from_secs(20), || lines_of(r).iter().any(|l| l == marker)),
        "marker {marker} never arrived"
    );
}

/// A binary file: lines are cut at `\n` as always, bytes that are not UTF-8
/// become U+FFFD (counted in `lines_repaired_total{reason="invalid_utf8"}`),
/// NUL and other control bytes are kept (escaped in the JSON body), and the
/// agent goes on with what is written after.
#[test]
fn binary_file_ships_repaired_lines_counts_them_and_the_agent_goes_on() {
    let r = Receiver::start(BIG);
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("bin.log");
    let mut data = b"text before\n".to_vec();
    let mut x: u32 = 0x1234_5678;
    for i in 0..8192 {
        x = x.wrapping_mul(1_103_515_245).wrapping_add(12_345);
        let b = (x >> 16) as u8;
        data.push(if i % 100 == 99 {
            b'\n'
        } else if b == b'\n' {
            0
        } else {
            b
        });
    }
    data.extend_from_slice(b"\ntext after\n");
    std::fs::write(&log, &data).unwrap();
    let expected: Vec<String> = data
        .split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| String::from_utf8_lossy(l.strip_suffix(b"\r").unwrap_or(l)).into_owned())
        .collect();
    let invalid = data
        .split(|b| *b == b'\n')
        .filter(|l| !l.is_empty() && std::str::from_utf8(l.strip_suffix(b"\r").unwrap_or(l)).is_err())
        .count();
    assert!(invalid > 50 && data.contains(&0));
    let cfg = agent_config(dir.path(), &r.base, &log.display().to_string(), "", "");
    let agent = Agent::start(&cfg);
    assert!(
        wait_for(Duration::from_secs(30), || stored(&r) >= expected.len() as u64),
        "{} of {}: {}",
        stored(&r),
        expected.len(),
        agent.stderr_text()
    );
    assert_eq!(lines_of(&r), expected);
    assert!(wait_for(Duration::from_secs(5), || agent
        .metric("tailship_lines_repaired_total{reason=\"invalid_utf8\",source=\"file-0\"}")
        == invalid as f64));
    barrier(&r, &log, "still shipping");
    assert!(agent.terminate(Duration::from_secs(10)).success());
}

/// A last line without `\n` ships once it waited `partial_line_wait`; if the
/// writer completes it later, the rest ships as a line of its own (the agent
/// cannot take back what it sent). The position covers the flushed bytes, so
/// a restart resends nothing.
#[test]
fn file_without_trailing_newline_ships_its_last_line_after_the_wait_and_a_late_rest_as_a_new_line() {
    let r = Receiver::start(BIG);
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("a.log");
    std::fs::write(&log, "one\ntwo").unwrap();
    let cfg = agent_config(dir.path(), &r.base, &log.display().to_string(), "", "");
    let agent = Agent::start(&cfg);
    assert!(wait_for(Duration::from_secs(20), || stored(&r) >= 2), "{}", agent.stderr_text());
    assert_eq!(lines_of(&r), vec!["one", "two"]);
    append(&log, b" and more\nthree\n");
    assert!(wait_for(Duration::from_secs(20), || stored(&r) >= 4));
    assert_eq!(lines_of(&r), vec!["one", "two", " and more", "three"]);
    assert!(agent.terminate(Duration::from_secs(10)).success());
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("positions.json")).unwrap()).unwrap();
    assert_eq!(json["files"][0]["offset"].as_u64(), Some(std::fs::metadata(&log).unwrap().len()));
}

/// A 10 MB line of multi-byte characters: cut to `max_line_bytes` (256 KiB) on
/// a character boundary, counted once as truncated and not as invalid UTF-8,
/// the lines around it intact, and memory bounded (the splitter keeps only
/// `max_line_bytes` of a line).
#[test]
fn ten_mb_line_is_cut_on_a_character_boundary_counted_once_with_memory_bounded() {
    let r = Receiver::start(BIG);
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("huge.log");
    let mut data = b"before\nx".to_vec();
    // 'x' then 5 million two-byte characters: byte 262,144 is in the middle of one.
    data.extend("é".repeat(5_000_000).as_bytes());
    data.extend_from_slice(b"\nafter\n");
    std::fs::write(&log, &data).unwrap();
    let cfg = agent_config(dir.path(), &r.base, &log.display().to_string(), "", "");
    let agent = Agent::start(&cfg);
    assert!(wait_for(Duration::from_secs(30), || stored(&r) >= 3), "{}", agent.stderr_text());
    let lines = lines_of(&r);
    assert_eq!(lines.len(), 3);
    assert_eq!(lines[0], "before");
    assert_eq!(lines[1], format!("x{}", "é".repeat(131_071)), "cut at 262,143 bytes, before the split character");
    assert_eq!(lines[2], "after");
    assert!(wait_for(Duration::from_secs(5), || agent
        .metric("tailship_lines_repaired_total{reason=\"truncated\",source=\"file-0\"}")
        == 1.0));
    assert_eq!(agent.metric("tailship_lines_repaired_total{reason=\"invalid_utf8\",source=\"file-0\"}"), 0.0);
    let peak = agent.peak_rss_kb();
    assert!(peak < 64 * 1024, "peak RSS {peak} kB reading a 10 MB line");
    assert!(agent.terminate(Duration::from_secs(10)).success());
}

/// A file deleted while the agent has it open and unread: the open descriptor
/// is read to its end (every line ships, once), then the file is closed.
#[test]
fn file_deleted_while_open_is_read_to_its_end_then_closed() {
    let r = Receiver::start(&["--max-query-limit", "1000000", "--latency", "300ms"]);
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("gone.log");
    let total = 120_000;
    let text: String = (0..total).map(|i| format!("deleted-while-open line {i:06} with some padding\n")).collect();
    std::fs::write(&log, &text).unwrap();
    let cfg = agent_config(dir.path(), &r.base, &log.display().to_string(), "", "");
    // A small queue, so most of the file is still unread when it is deleted.
    append(&cfg, b"[queue]\nmax_bytes = \"256KiB\"\n");
    let agent = Agent::start(&cfg);
    assert!(wait_for(Duration::from_secs(20), || agent.metric("tailship_source_lines_total") > 0.0));
    std::fs::remove_file(&log).unwrap();
    let unread_at_delete = total as f64 - agent.metric("tailship_source_lines_total");
    assert!(unread_at_delete > 10_000.0, "only {unread_at_delete} lines unread when deleted: the test proves nothing");
    assert!(
        wait_for(Duration::from_secs(60), || stored(&r) >= total),
        "{} of {total}: {}",
        stored(&r),
        agent.stderr_text()
    );
    let lines = lines_of(&r);
    let expected: Vec<&str> = text.lines().collect();
    assert_eq!(lines, expected, "every line once, in order");
    assert!(wait_for(Duration::from_secs(20), || {
        let m = agent.metrics();
        metric_value(&m, "tailship_file_events_total{event=\"deleted\",source=\"file-0\"}") >= 1.0
            && metric_value(&m, "tailship_file_events_total{event=\"closed\",source=\"file-0\"}") >= 1.0
            && metric_value(&m, "tailship_files_open{source=\"file-0\"}") == 0.0
    }));
    assert!(agent.terminate(Duration::from_secs(10)).success());
}

/// A file the agent may not read: a clear warning naming it (once), counted as
/// `file_events_total{event="unreadable"}`, retried at each scan, shipped as
/// soon as it becomes readable; the other files go on meanwhile.
///
/// Root reads any file, so as root the agent runs as `nobody` via `setpriv`
/// (skipped, saying so, when `setpriv` is missing).
#[test]
fn unreadable_file_is_logged_once_retried_and_shipped_once_readable_while_others_go_on() {
    let r = Receiver::start(BIG);
    let dir = tempfile::tempdir().unwrap();
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    let wrapper: Vec<&str> = if root {
        if !std::path::Path::new("/usr/bin/setpriv").exists() {
            eprintln!("skipped: running as root and setpriv is missing, so no file is unreadable");
            return;
        }
        vec!["/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
    } else {
        Vec::new()
    };
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let open = dir.path().join("open.log");
    let secret = dir.path().join("secret.log");
    std::fs::write(&open, "readable line\n").unwrap();
    std::fs::write(&secret, "hidden line\n").unwrap();
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o666)).unwrap();
    std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o000)).unwrap();
    let cfg = agent_config(dir.path(), &r.base, &format!("{}/*.log", dir.path().display()), "", "");
    let agent = Agent::start_wrapped(&cfg, &[], &wrapper);
    assert!(wait_for(Duration::from_secs(20), || stored(&r) >= 1), "{}", agent.stderr_text());
    assert!(
        wait_for(Duration::from_secs(10), || agent
            .metric("tailship_file_events_total{event=\"unreadable\",source=\"file-0\"}")
            == 1.0),
        "{}",
        agent.stderr_text()
    );
    // Several scans later the warning is still there once, and the rest goes on.
    barrier(&r, &open, "other files go on");
    let err = agent.stderr_text();
    assert!(err.contains("cannot open file") && err.contains("secret.log"), "{err}");
    assert_eq!(err.matches("cannot open file").count(), 1, "warned once: {err}");
    assert!(!lines_of(&r).contains(&"hidden line".to_string()));
    std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o644)).unwrap();
    assert!(
        wait_for(Duration::from_secs(20), || lines_of(&r).contains(&"hidden line".to_string())),
        "{}",
        agent.stderr_text()
    );
    assert!(agent.terminate(Duration::from_secs(10)).success());
}

/// Symlinks: a link to a file that is also matched ships the file once (files
/// are identified by device and inode, not by path); a dangling link, a link
/// to itself (ELOOP) and a directory link back to its parent under a `**`
/// glob are skipped without hanging the scan.
#[test]
fn symlinks_ship_a_file_once_and_loops_and_dangling_links_are_skipped() {
    let r = Receiver::start(BIG);
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let real = d.join("real.log");
    std::fs::write(&real, "r1\nr2\n").unwrap();
    std::os::unix::fs::symlink(&real, d.join("link.log")).unwrap();
    std::os::unix::fs::symlink(d.join("nowhere.txt"), d.join("dangling.log")).unwrap();
    std::os::unix::fs::symlink(d.join("self.log"), d.join("self.log")).unwrap();
    std::fs::create_dir(d.join("sub")).unwrap();
    std::os::unix::fs::symlink("..", d.join("sub/up")).unwrap();
    let cfg = agent_config(d, &r.base, &format!("{}/**/*.log", d.display()), "", "");
    let agent = Agent::start(&cfg);
    assert!(wait_for(Duration::from_secs(20), || stored(&r) >= 2), "{}", agent.stderr_text());
    barrier(&r, &real, "r3");
    assert_eq!(lines_of(&r), vec!["r1", "r2", "r3"], "each line once");
    assert!(agent.metrics().contains("tailship_build_info"), "the agent still answers");
    assert!(!agent.stderr_text().contains("panicked"));
    assert!(agent.terminate(Duration::from_secs(10)).success());
}

/// A directory and a FIFO whose names match the glob (and a FIFO named
/// literally): skipped, never opened (opening a FIFO for reading would block
/// the source), and the regular file next to them ships.
#[test]
fn directory_and_fifo_matching_the_glob_are_skipped_without_blocking() {
    let r = Receiver::start(BIG);
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::create_dir(d.join("dir.log")).unwrap();
    std::fs::write(d.join("dir.log/inner.txt"), "not a log\n").unwrap();
    let fifo = d.join("pipe.log");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: mkfifo with a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
    let real = d.join("real.log");
    std::fs::write(&real, "regular line\n").unwrap();
    let include = format!("{}/*.log\", \"{}", d.display(), fifo.display());
    let cfg = agent_config(d, &r.base, &include, "", "");
    let agent = Agent::start(&cfg);
    assert!(wait_for(Duration::from_secs(20), || stored(&r) >= 1), "{}", agent.stderr_text());
    barrier(&r, &real, "later line");
    assert_eq!(lines_of(&r), vec!["regular line", "later line"]);
    // No reader holds the FIFO: a non-blocking open for writing fails with ENXIO.
    let w = std::fs::OpenOptions::new().write(true).custom_flags(libc::O_NONBLOCK).open(&fifo);
    assert_eq!(w.err().and_then(|e| e.raw_os_error()), Some(libc::ENXIO), "the FIFO was opened by the agent");
    assert!(agent.terminate(Duration::from_secs(10)).success());
}

/// Inode reuse: the positions file remembers a file by fingerprint, with
/// device and inode only as a hint. A new file under the same path and inode
/// but with other content is read from its start, not from the old offset.
/// File systems reuse a freed inode at will, so the test makes the positions
/// file name the new file's device and inode, exactly as a reuse would.
#[test]
fn reused_inode_with_new_content_is_read_from_the_start() {
    let r = Receiver::start(BIG);
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("a.log");
    let old: String = (0..100).map(|i| format!("old line {i:03}\n")).collect();
    std::fs::write(&log, &old).unwrap();
    let cfg = agent_config(dir.path(), &r.base, &log.display().to_string(), "", "");
    let agent = Agent::start(&cfg);
    assert!(wait_for(Duration::from_secs(20), || stored(&r) >= 100), "{}", agent.stderr_text());
    assert!(agent.terminate(Duration::from_secs(10)).success());
    let old_ino = std::fs::metadata(&log).unwrap().ino();
    std::fs::remove_file(&log).unwrap();
    let new: String = (0..300).map(|i| format!("new line {i:03}\n")).collect();
    std::fs::write(&log, &new).unwrap();
    let meta = std::fs::metadata(&log).unwrap();
    eprintln!("inode {} -> {} (reused by the file system: {})", old_ino, meta.ino(), old_ino == meta.ino());
    let pos_path = dir.path().join("positions.json");
    let mut pos: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&pos_path).unwrap()).unwrap();
    assert_eq!(pos["files"][0]["offset"].as_u64(), Some(old.len() as u64));
    pos["files"][0]["dev"] = meta.dev().into();
    pos["files"][0]["ino"] = meta.ino().into();
    std::fs::write(&pos_path, pos.to_string()).unwrap();
    let agent = Agent::start(&cfg);
    assert!(wait_for(Duration::from_secs(20), || stored(&r) >= 400), "{}", agent.stderr_text());
    let lines = lines_of(&r);
    assert_eq!(lines.iter().filter(|l| l.starts_with("new line")).count(), 300, "every new line, from the start");
    assert_eq!(lines.len(), 400);
    assert!(agent.terminate(Duration::from_secs(10)).success());
}

/// The clock stepping backwards. Tests cannot move the system clock, so this
/// drives the pipeline (batcher and pusher, as `run` wires them) with read
/// times that step back 1 s, stay, step back 2 s, then jump forward: the
/// timestamps the agent assigns still strictly increase within the stream
/// (bumped 1 ns past the last), so the service keeps every line and its order.
/// A timestamp parsed from the line is sent as parsed, even when it is older.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clock_stepping_backwards_keeps_assigned_timestamps_strictly_increasing() {
    use tailship::batch::{BatchSettings, Shipper};
    use tailship::queue::{Chunk, Entry, Interner};
    let r = tokio::task::spawn_blocking(|| Receiver::start(BIG)).await.unwrap();
    let mut client = tailship::config::ClientConfig { url: r.base.clone(), ..Default::default() };
    client.retry.min_backoff = tailship::util::HumanDuration(Duration::from_millis(20));
    let pusher = Arc::new(tailship::client::push::Pusher::new(&client, tailship::metrics::Health::new()).unwrap());
    let positions = Arc::new(tailship::positions::Positions::in_memory());
    let cancel = tokio_util::sync::CancellationToken::new();
    let settings = BatchSettings { max_bytes: 1 << 20, max_wait: Duration::from_millis(20), max_in_flight: 1 };
    let pipeline = Shipper::start(settings, 16 << 20, pusher, positions, cancel.clone());
    let stream = Interner::new().intern(None, BTreeMap::from([("job".to_string(), "clock".to_string())]));
    let now = tailship::util::now_ns();
    let now = now as i64;
    let s = 1_000_000_000i64;
    // (read time, assigned by the agent?)
    let reads =
        [(now, true), (now - s, true), (now - s, true), (now - 3 * s, true), (now - 5 * s, false), (now + s, true)];
    for (i, (ts, assigned)) in reads.iter().enumerate() {
        let line = format!("line {i}");
        let mut chunk = Chunk::new(Arc::from("clock"));
        chunk.buf.push_str(&line);
        let sid = chunk.stream_id(&stream);
        chunk.entries.push(Entry {
            stream: sid,
            ts: *ts,
            assigned_ts: *assigned,
            start: 0,
            len: line.len() as u32,
            meta: 0,
            skip: false,
        });
        assert!(pipeline.sink.send(chunk, &cancel).await);
        // Separate batches too, not only separate lines of one batch.
        if i == 2 {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
    let totals = pipeline.finish().await;
    assert_eq!(totals.lines_delivered, 6);
    let got = tokio::task::spawn_blocking(move || query_all(&r, r#"{job="clock"}"#, None)).await.unwrap();
    let got: Vec<(i64, &str)> = got.iter().map(|e| (e.ts as i64, e.line.as_str())).collect();
    assert_eq!(
        got,
        vec![
            (now - 5 * s, "line 4"),
            (now, "line 0"),
            (now + 1, "line 1"),
            (now + 2, "line 2"),
            (now + 3, "line 3"),
            (now + s, "line 5"),
        ]
    );
}

/// A config with every kind of mistake at once: unknown keys, wrong types,
/// bad durations and sizes, bad enum values, bad URLs and addresses, bad
/// regexes and globs, bad label names, unreadable secret files, unset
/// variables, limits and cross-key rules. Every one is reported, by key, in
/// one run that exits 2; type errors do not hide the others.
#[test]
fn config_with_every_kind_of_mistake_reports_them_all_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let text = r#"
[server]
listen = "not-an-address"
[client]
url = "ftp://x"
urll = "typo"
timeout = "5x"
compression = "zstd"
tenant_id = "a|b"
basic_auth = { username = "", password_file = "/nonexistent/pw" }
batch = { max_bytes = "8MiB", max_in_flight = 0 }
retry = { min_backoff = "1s", max_backoff = "10ms" }
[queue]
max_bytes = "lots"
[positions]
sync_period = "0s"
[[sources]]
type = "file"
include = []
labels = { "bad-name" = "x" }
multiline = { start = "[" }
stages = [ { regex = "(?P<a>[" }, { drop = "(" }, { timestamp = { source = "ts", format = "rfc3339" } } ]
[[sources]]
type = "stdin"
labels = { job = "${UNSET_VARIABLE_FOR_THIS_TEST}" }
[[sources]]
type = "stdin"
max_line_bytes = 4
unknown_key = 1
"#;
    let path = dir.path().join("tailship.toml");
    std::fs::write(&path, text).unwrap();
    let out = std::process::Command::new(bin()).args(["check", "--config"]).arg(&path).output().unwrap();
    let all = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert_eq!(out.status.code(), Some(2), "{all}");
    let keys = [
        "server.listen",
        "client.url",
        "client.urll",
        "client.timeout",
        "client.compression",
        "client.tenant_id",
        "client.basic_auth.username",
        "client.basic_auth.password_file",
        "client.batch.max_bytes",
        "client.batch.max_in_flight",
        "client.retry.max_backoff",
        "queue.max_bytes",
        "positions.sync_period",
        "sources[0].include",
        "sources[0].labels.bad-name",
        "sources[0].multiline.start",
        "sources[0].stages[0].regex",
        "sources[0].stages[1].drop",
        "sources[0].stages[2].timestamp.source",
        "sources[1].labels.job",
        "sources[2].max_line_bytes",
        "sources[2].unknown_key",
        "sources",
    ];
    for k in keys {
        assert!(all.contains(&format!("key `{k}`")), "`{k}` not reported:\n{all}");
    }
    assert!(all.contains(&format!("{} problems", keys.len())), "{all}");
}

/// #29 item 5: a multiline entry longer than `max_line_bytes` (one start line
/// and 20,000 continuation lines under a `max_lines` that never cuts) shipped
/// 256 KiB and dropped the other 1.8 MB with no counter. The entry cut is now
/// counted as truncated, as a single line cut at `max_line_bytes` is; both
/// for the source's `multiline` and for a `multiline` stage.
#[test]
fn a_multiline_entry_over_max_line_bytes_is_cut_and_counted() {
    let rule = "{ start = '^\\d{4}-', max_lines = 100000000, max_wait = \"200ms\" }";
    for extra in [format!("multiline = {rule}"), format!("stages = [{{ multiline = {rule} }}]")] {
        let r = Receiver::start(BIG);
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("joined.log");
        let mut text = String::from("2026-11-24 start of a long entry\n");
        for i in 0..20_000 {
            text.push_str(&format!("  continuation {i:06} {}\n", "x".repeat(70)));
        }
        text.push_str("2026-11-24 the next entry\n");
        std::fs::write(&log, &text).unwrap();
        let cfg = agent_config(dir.path(), &r.base, &log.display().to_string(), "", &extra);
        let agent = Agent::start(&cfg);
        assert!(wait_for(Duration::from_secs(30), || stored(&r) >= 2), "{extra}: {}", agent.stderr_text());
        let lines = lines_of(&r);
        assert_eq!(lines.len(), 2, "{extra}");
        assert!(lines[0].len() <= 256 << 10 && lines[0].len() > 255 << 10, "{extra}: cut at max_line_bytes");
        assert!(lines[0].starts_with("2026-11-24 start of a long entry\n  continuation 000000 "), "{extra}");
        assert_eq!(lines[1], "2026-11-24 the next entry", "{extra}");
        assert!(
            wait_for(Duration::from_secs(5), || agent
                .metric("tailship_lines_repaired_total{reason=\"truncated\",source=\"file-0\"}")
                == 1.0),
            "{extra}: {}",
            agent.metrics()
        );
        assert!(agent.terminate(Duration::from_secs(10)).success());
    }
}
