//! The commands at their edges (regressions of issue #39), real binaries:
//! `tailship demo` ends on a closed stdout and on SIGTERM; `tailship tail`
//! shows a line stored late into a window it already polled, once.

use crate::agent;
use crate::common;

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{bin, push_body, wait_for, Receiver};

/// Waits for `child` to exit within `deadline`; kills it and fails otherwise.
fn exits_within(child: &mut std::process::Child, deadline: Duration, what: &str) -> std::process::ExitStatus {
    let start = Instant::now();
    loop {
        if let Some(st) = child.try_wait().unwrap() {
            return st;
        }
        if start.elapsed() > deadline {
            let _ = child.kill();
            panic!("{what}: still running after {deadline:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// `tailship demo | head -3` once never exited and ignored SIGTERM (kill -9
/// was needed): a closed stdout must end it as Ctrl-C does.
#[test]
fn demo_ends_when_its_stdout_is_closed() {
    let mut demo = Command::new(bin())
        .args(["demo", "--duration", "60s", "--rate", "200"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(demo.stdout.take().unwrap());
    for _ in 0..3 {
        let mut line = String::new();
        out.read_line(&mut line).unwrap();
    }
    drop(out);
    exits_within(&mut demo, Duration::from_secs(30), "demo with its stdout closed");
    let mut err = String::new();
    std::io::Read::read_to_string(&mut demo.stderr.take().unwrap(), &mut err).unwrap();
    assert!(err.contains("summary"), "the summary goes to stderr: {err}");
}

#[test]
fn demo_ends_on_sigterm_with_its_summary() {
    let mut demo = Command::new(bin())
        .args(["demo", "--duration", "60s", "--rate", "200"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(demo.stdout.take().unwrap());
    let mut text = String::new();
    while !text.contains("lines stored") {
        let mut line = String::new();
        assert!(out.read_line(&mut line).unwrap() > 0);
        text.push_str(&line);
    }
    // SAFETY: kill(2) on the child we started.
    unsafe { libc::kill(demo.id() as i32, libc::SIGTERM) };
    let reader = std::thread::spawn(move || {
        let mut rest = String::new();
        let _ = std::io::Read::read_to_string(&mut out, &mut rest);
        rest
    });
    let st = exits_within(&mut demo, Duration::from_secs(30), "demo after SIGTERM");
    assert!(st.success(), "{st:?}");
    assert!(reader.join().unwrap().contains("summary"));
}

/// `tailship tail` with its default `--delay 1s` once showed `2 4 6 8 10`
/// of ten lines stored about a second after their time: each poll began
/// where the last ended, so a line stored late into a polled window was
/// never seen. Now each poll looks back again and shows each line once.
#[test]
fn tail_shows_lines_stored_late_and_each_once() {
    let store = Receiver::start(&[]);
    let now = || std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as i64;
    let t0 = now();
    let mut tail = Command::new(bin())
        .args(["tail", r#"{job="late"}"#, "--url", &store.base, "--output", "raw", "--interval", "200ms"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let out = BufReader::new(tail.stdout.take().unwrap());
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in out.lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    // Ten lines stamped 1 to 2 s after the tail began, stored from 4.5 s on
    // (out of order in pairs): each lands in a window the tail has polled already.
    while now() < t0 + 4_500_000_000 {
        std::thread::sleep(Duration::from_millis(50));
    }
    for pair in 0..5 {
        let t = t0 + 1_000_000_000 + pair * 200_000_000;
        let (a, b) = (pair * 2 + 1, pair * 2 + 2);
        let body = push_body(&[("job", "late")], &[(t + 1000, &format!("late {b}")), (t, &format!("late {a}"))]);
        assert_eq!(store.push(&body).status, 204);
        std::thread::sleep(Duration::from_millis(400));
    }
    let mut got = Vec::new();
    let all = wait_for(Duration::from_secs(20), || {
        while let Ok(l) = rx.try_recv() {
            got.push(l);
        }
        got.len() >= 10
    });
    // A little longer: nothing may show twice.
    let deadline = Instant::now() + Duration::from_secs(2);
    while Instant::now() < deadline {
        if let Ok(l) = rx.recv_timeout(Duration::from_millis(100)) {
            got.push(l);
        }
    }
    let _ = tail.kill();
    let _ = tail.wait();
    assert!(all, "{got:?}");
    let mut sorted = got.clone();
    sorted.sort();
    let mut want: Vec<String> = (1..=10).map(|i| format!("late {i}")).collect();
    want.sort();
    assert_eq!(sorted, want, "each once: {got:?}");
}

/// A file last written 3 days ago was skipped without a word (`ignore_older`
/// defaults to 24h): nothing logged, nothing counted, not in `/status`. Now
/// it is said once, counted, listed as skipped, and read once written to.
#[test]
fn a_file_skipped_for_its_age_is_said_counted_and_listed() {
    let dir = tempfile::tempdir().unwrap();
    let store = Receiver::start(&["--max-query-limit", "1000000"]);
    let old = dir.path().join("old.log");
    std::fs::write(&old, "written three days ago\n").unwrap();
    let when = std::time::SystemTime::now() - Duration::from_secs(3 * 24 * 3600);
    std::fs::File::options().write(true).open(&old).unwrap().set_modified(when).unwrap();
    let cfg = agent::agent_config(dir.path(), &store.base, &format!("{}/*.log", dir.path().display()), "", "");
    let text = std::fs::read_to_string(&cfg).unwrap();
    let server = text.lines().find_map(|l| l.strip_prefix("listen = \"")).unwrap().trim_end_matches('"').to_string();
    let agent = agent::Agent::start(&cfg);
    let said = wait_for(Duration::from_secs(20), || {
        agent.stderr_text().contains("untouched for longer than the source's ignore_older")
    });
    assert!(said, "{}", agent.stderr_text());
    assert!(agent.stderr_text().contains("old.log"));
    assert_eq!(agent.metric("tailship_files_skipped_total"), 1.0);
    let listed = wait_for(Duration::from_secs(10), || {
        let s = common::get(&format!("http://{server}/status.json")).json();
        s["sources"][0]["files"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|f| f["path"] == old.display().to_string() && f["state"] == "skipped")
    });
    assert!(listed, "not listed as skipped in /status.json");
    // Said once, however many scans find it.
    std::thread::sleep(Duration::from_millis(600));
    assert_eq!(agent.stderr_text().matches("untouched for longer").count(), 1);
    // Written to again: read whole.
    std::fs::OpenOptions::new().append(true).open(&old).unwrap().write_all(b"and today\n").unwrap();
    let shipped = wait_for(Duration::from_secs(20), || {
        let got = agent::query_all(&store, r#"{job="test"}"#, None);
        got.iter().any(|e| e.line == "written three days ago") && got.iter().any(|e| e.line == "and today")
    });
    assert!(shipped, "{}", agent.stderr_text());
}

/// A template stage passed `check` and aborted the agent on the first line
/// (`{{ repeat 1000000 (repeat 1000000 "x") }}`, exit 134 on every restart);
/// nested `until` loops spun a core for good. Now a rendering has a budget:
/// past it the template fails, is counted, and the line goes on.
#[test]
fn runaway_templates_neither_abort_nor_spin_and_the_line_is_delivered() {
    let dir = tempfile::tempdir().unwrap();
    let store = Receiver::start(&["--max-query-limit", "1000000"]);
    let stages = r#"stages = [
  { regex = '^(?P<msg>.*)$' },
  { template = { source = "a", template = '{{ repeat 1000000 (repeat 1000000 "x") }}' } },
  { template = { source = "b", template = '{{ range $i := until 100000 }}{{ range $j := until 100000 }}{{ end }}{{ end }}' } },
  { template = { source = "c", template = '{{ range $i := until 1000000 }}{{ $.Entry }}{{ end }}' } },
]"#;
    let cfg = agent::agent_config(dir.path(), &store.base, &format!("{}/*.log", dir.path().display()), "", stages);
    let check = Command::new(bin()).args(["check", "--config"]).arg(&cfg).output().unwrap();
    assert!(check.status.success(), "{}", String::from_utf8_lossy(&check.stderr));
    std::fs::write(dir.path().join("app.log"), format!("{}\nsecond line\n", "y".repeat(200_000))).unwrap();
    let agent = agent::Agent::start(&cfg);
    let shipped = wait_for(Duration::from_secs(60), || {
        agent::query_all(&store, r#"{job="test"}"#, None).iter().any(|e| e.line == "second line")
    });
    assert!(shipped, "{}", agent.stderr_text());
    assert!(agent.peak_rss_kb() < 400_000, "peak RSS {} kB", agent.peak_rss_kb());
    let st = agent.terminate(Duration::from_secs(15));
    assert!(st.success(), "{st:?}");
}

/// A tmpfs mounted (as root) for the length of a test, unmounted when dropped.
struct Tmpfs(std::path::PathBuf);

impl Tmpfs {
    fn mount(at: &std::path::Path, size: &str) -> Option<Tmpfs> {
        std::fs::create_dir_all(at).unwrap();
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(at)
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            eprintln!("cannot mount a tmpfs (not root?): skipping");
            return None;
        }
        Some(Tmpfs(at.to_path_buf()))
    }

    /// Fills it: a file as large as it takes.
    fn fill(&self) {
        let mut f = std::fs::File::create(self.0.join("filler")).unwrap();
        let block = vec![0u8; 64 << 10];
        while f.write_all(&block).is_ok() {}
        let _ = f.flush();
    }

    fn free(&self) {
        let _ = std::fs::remove_file(self.0.join("filler"));
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

/// The positions file on a disk that fills up, and the agent restarted while
/// it is full (as systemd would after a failure): 19,340 of 165,180 lines
/// were once shown twice after space returned, the positions log's records
/// having been thrown away when they could not be written. Now the log has
/// room reserved and holds what it cannot write: nothing is lost and nothing
/// shows twice.
#[test]
fn a_full_disk_under_the_positions_file_shows_nothing_twice_across_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let Some(disk) = Tmpfs::mount(&dir.path().join("pos"), "1m") else { return };
    let store = Receiver::start(&["--max-query-limit", "1000000"]);
    let logs = dir.path().join("logs");
    std::fs::create_dir_all(&logs).unwrap();
    let cfg = agent::agent_config(dir.path(), &store.base, &format!("{}/*.log", logs.display()), "", "");
    let text = std::fs::read_to_string(&cfg).unwrap().replace(
        &format!("path = \"{}/positions.json\"", dir.path().display()),
        &format!("path = \"{}/pos/positions.json\"", dir.path().display()),
    );
    std::fs::write(&cfg, text).unwrap();
    let write = |from: usize, to: usize| {
        let mut f = std::fs::OpenOptions::new().create(true).append(true).open(logs.join("app.log")).unwrap();
        for i in from..to {
            writeln!(f, "positions on a full disk {i:06}").unwrap();
        }
    };
    let count = || agent::query_all(&store, r#"{job="test"}"#, None);
    let agent = agent::Agent::start(&cfg);
    write(0, 5_000);
    assert!(wait_for(Duration::from_secs(60), || count().len() >= 5_000), "{}", agent.stderr_text());
    disk.fill();
    // Shipped while the disk is full: acknowledged, their positions not written in the file.
    for round in 0..5 {
        write(5_000 + round * 1_000, 6_000 + round * 1_000);
        std::thread::sleep(Duration::from_millis(300));
    }
    assert!(wait_for(Duration::from_secs(60), || count().len() >= 10_000), "{}", agent.stderr_text());
    // Restarted while the disk is full (the last positions file cannot be
    // written: the agent says so and exits 1, as systemd then restarts it).
    let said = agent.stderr_text();
    let st = agent.terminate(Duration::from_secs(20));
    assert!(st.code().is_some(), "{st:?}: {said}");
    let agent = agent::Agent::start(&cfg);
    write(10_000, 12_000);
    assert!(wait_for(Duration::from_secs(60), || count().len() >= 12_000), "{}", agent.stderr_text());
    disk.free();
    write(12_000, 13_000);
    let mut got = Vec::new();
    let all = wait_for(Duration::from_secs(60), || {
        got = count();
        got.len() >= 13_000
    });
    // Anything sent twice would have come by now, with the last lines.
    let mut seen = std::collections::HashMap::new();
    for e in &got {
        *seen.entry(e.line.clone()).or_insert(0) += 1;
    }
    let twice = seen.values().filter(|&&n| n > 1).count();
    assert!(all, "{} of 13000: {}", got.len(), agent.stderr_text());
    let mut dups: Vec<&String> = seen.iter().filter(|(_, n)| **n > 1).map(|(l, _)| l).collect();
    dups.sort();
    assert_eq!((seen.len(), twice), (13_000, 0), "each line once; twice: {:?} .. {:?}", dups.first(), dups.last());
}
