//! The journal reader over time: a restart, a reload and kill -9 resume after
//! the saved cursor, a journalctl that dies or cannot watch is run again, and
//! where reading starts without a cursor.

use super::*;

#[test]
fn a_restart_and_a_reload_resume_after_the_saved_cursor_with_no_entry_twice() {
    let Some((r, dir, jdir)) = setup() else {
        return;
    };
    let file = jdir.join("a.journal");
    let t = now_us() - 600_000_000;
    numbered(&file, "app.service", 0, 500, t);
    let cfg = config(dir.path(), &r.base, &jdir, "");
    let agent = Agent::start(&cfg);
    wait_entries(&r, &agent, 20, 500);
    stop(agent);
    let saved = std::fs::read_to_string(dir.path().join("positions.json")).unwrap();
    assert!(saved.contains("\"journals\"") && saved.contains("\"cursor\": \"s="), "{saved}");
    // Written while the agent is down: read after the restart, nothing before them again.
    numbered(&file, "app.service", 500, 300, t + 1000);
    let agent = Agent::start(&cfg);
    wait_entries(&r, &agent, 20, 800);
    // A reload (SIGHUP) stops and starts the source: it goes on where it was.
    agent.signal(libc::SIGHUP);
    assert!(wait_for(Duration::from_secs(10), || agent.stderr_text().contains("config reloaded")));
    numbered(&file, "app.service", 800, 200, t + 2000);
    wait_entries(&r, &agent, 20, 1000);
    stop(agent);
    assert_eq!(stat(&r, "duplicates"), 0, "an entry was sent twice");
    let want: Vec<String> = (0..1000).map(|i| format!("entry {i:06} of app.service")).collect();
    assert_eq!(lines(&r, r#"{unit="app.service"}"#), want);
}

/// Entries stored in `r` whose line is `entry NNNNNN of UNIT`, by number.
fn numbers(r: &Receiver, unit: &str) -> std::collections::BTreeMap<usize, usize> {
    let mut seen = std::collections::BTreeMap::new();
    for e in query_all(r, &format!(r#"{{unit="{unit}"}}"#), None) {
        let n: usize = e.line.split(' ').nth(1).and_then(|n| n.parse().ok()).expect("a numbered entry");
        *seen.entry(n).or_insert(0) += 1;
    }
    seen
}

/// The `i=` (sequence number) of the saved cursor of the journal in `positions`.
fn saved_seqnum(positions: &Path) -> Option<u64> {
    let text = std::fs::read_to_string(positions).ok()?;
    let v: serde_json::Value = serde_json::from_str(&text).ok()?;
    let cursor = v["journals"][0]["cursor"].as_str()?.to_string();
    cursor.split(';').find_map(|kv| kv.strip_prefix("i=")).and_then(|i| u64::from_str_radix(i, 16).ok())
}

#[test]
fn kill_9_mid_stream_loses_no_entry_and_resends_only_what_was_past_the_saved_cursor() {
    if !can_run() {
        return;
    }
    // A slow service, so the kill comes while entries are in flight.
    let r = Receiver::start(&["--max-query-limit", "1000000", "--latency", "30ms"]);
    let dir = tempfile::tempdir().unwrap();
    let jdir = dir.path().join("journal");
    std::fs::create_dir(&jdir).unwrap();
    let file = jdir.join("a.journal");
    let total = 20_000;
    numbered(&file, "app.service", 0, total, now_us() - 600_000_000);
    let cfg = config(dir.path(), &r.base, &jdir, "");
    let positions = dir.path().join("positions.json");
    let agent = Agent::start(&cfg);
    assert!(
        wait_for(Duration::from_secs(30), || stat(&r, "entries") >= 4_000
            && saved_seqnum(&positions).is_some_and(|i| i > 1_000)),
        "{}",
        agent.stderr_text()
    );
    let readers = journalctl_children(agent.pid());
    assert_eq!(readers.len(), 1);
    agent.kill9();
    // Its journalctl ends with it, rather than lingering.
    assert!(
        wait_for(Duration::from_secs(10), || std::fs::read_to_string(format!("/proc/{}/stat", readers[0]))
            .map_or(true, |s| s.rsplit(')').next().is_some_and(|rest| rest.trim_start().starts_with(['Z', 'X'])))),
        "journalctl outlived the agent"
    );
    let stored_at_kill = stat(&r, "entries");
    let cursor_at_kill = saved_seqnum(&positions).unwrap();
    assert!(stored_at_kill < total as u64, "the kill came after the end: {stored_at_kill}");
    let agent = Agent::start(&cfg);
    assert!(
        wait_for(Duration::from_secs(60), || numbers(&r, "app.service").len() == total),
        "entries lost after kill -9: {} of {total}\n{}",
        numbers(&r, "app.service").len(),
        agent.stderr_text()
    );
    let dups = stat(&r, "duplicates");
    // The journal's sequence numbers are the entry numbers plus one: what was
    // resent is at most what had been stored past the saved cursor.
    eprintln!("kill -9 at {stored_at_kill} stored, cursor at entry {cursor_at_kill}: {dups} resent");
    assert!(
        dups <= stored_at_kill.saturating_sub(cursor_at_kill),
        "{dups} resent; cursor {cursor_at_kill}, stored {stored_at_kill}"
    );
    stop(agent);
}

/// Pids of the `journalctl` children of process `pid`.
fn journalctl_children(pid: i32) -> Vec<i32> {
    let mut out = Vec::new();
    for task in std::fs::read_dir(format!("/proc/{pid}/task")).into_iter().flatten().flatten() {
        let children = std::fs::read_to_string(task.path().join("children")).unwrap_or_default();
        for c in children.split_whitespace().filter_map(|c| c.parse::<i32>().ok()) {
            if std::fs::read_to_string(format!("/proc/{c}/comm")).is_ok_and(|n| n.trim() == "journalctl") {
                out.push(c);
            }
        }
    }
    out
}

#[test]
fn a_reader_that_dies_is_started_again_and_reads_the_gap() {
    if !can_run() {
        return;
    }
    let r = Receiver::start(BIG);
    let dir = tempfile::tempdir().unwrap();
    // The journal directory does not exist yet: journalctl fails, and is started again.
    let jdir = dir.path().join("journal");
    let cfg = config(dir.path(), &r.base, &jdir, "");
    let agent = Agent::start(&cfg);
    let restarts = "tailship_journal_restarts_total{source=\"sys\"}";
    assert!(wait_for(Duration::from_secs(20), || agent.metric(restarts) >= 1.0), "{}", agent.stderr_text());
    // A reader that cannot read is not ready, and says which and why.
    let ready = format!("http://{}/ready", agent.metrics_addr.clone().unwrap());
    let answer = common::get(&ready);
    assert_eq!(answer.status, 503, "{}", answer.text());
    assert!(answer.text().contains("source sys: journalctl ended"), "{}", answer.text());
    std::fs::create_dir(&jdir).unwrap();
    let file = jdir.join("a.journal");
    let t = now_us() - 600_000_000;
    numbered(&file, "app.service", 0, 100, t);
    wait_entries(&r, &agent, 30, 100);
    assert!(wait_for(Duration::from_secs(10), || common::get(&ready).status == 200), "{}", common::get(&ready).text());
    // journalctl killed: entries written meanwhile are read by its successor.
    let before = agent.metric(restarts);
    let children = journalctl_children(agent.pid());
    assert_eq!(children.len(), 1, "one journalctl per journal source");
    // SAFETY: kill(2) of a child of our own child (a journalctl the agent started).
    unsafe { libc::kill(children[0], libc::SIGKILL) };
    numbered(&file, "app.service", 100, 100, t + 1000);
    assert!(wait_for(Duration::from_secs(20), || agent.metric(restarts) > before), "{}", agent.stderr_text());
    wait_entries(&r, &agent, 30, 200);
    assert!(agent.stderr_text().contains("starting it again"), "{}", agent.stderr_text());
    let pid = agent.pid();
    stop(agent);
    assert!(journalctl_children(pid).is_empty());
    assert_eq!(stat(&r, "duplicates"), 0);
    assert_eq!(numbers(&r, "app.service").len(), 200);
}

#[test]
fn without_a_cursor_start_at_and_max_age_choose_the_first_entry() {
    let Some((r, dir, jdir)) = setup() else {
        return;
    };
    let file = jdir.join("a.journal");
    let now = now_us();
    append(
        &file,
        &[
            (now - 9 * 3_600_000_000, fields("MESSAGE=nine hours ago")),
            (now - 2 * 3_600_000_000, fields("MESSAGE=two hours ago")),
            (now - 60_000_000, fields("MESSAGE=a minute ago")),
        ],
    );
    // Three sources on one journal, each with its own cursor: the default
    // (beginning, max_age 7h), max_age 90m, and start_at = "end".
    let extra = format!(
        r#"[[sources]]
type = "journal"
name = "recent"
path = "{j}"
max_age = "90m"
labels = {{ job = "recent" }}
[[sources]]
type = "journal"
name = "new"
path = "{j}"
start_at = "end"
labels = {{ job = "new" }}
"#,
        j = jdir.display()
    );
    let cfg = config(dir.path(), &r.base, &jdir, &extra);
    let agent = Agent::start(&cfg);
    let of_job = |job: &str| -> Vec<String> { lines(&r, &format!(r#"{{job="{job}"}}"#)) };
    wait_entries(&r, &agent, 20, 3);
    assert!(wait_for(Duration::from_secs(10), || agent.stderr_text().matches("reading the journal").count() == 3));
    append(&file, &[(now_us(), fields("MESSAGE=written after the start"))]);
    wait_entries(&r, &agent, 20, 6);
    assert_eq!(of_job("journal"), ["two hours ago", "a minute ago", "written after the start"]);
    assert_eq!(of_job("recent"), ["a minute ago", "written after the start"]);
    assert_eq!(of_job("new"), ["written after the start"]);
    stop(agent);
}

#[test]
fn a_journalctl_without_inotify_watches_is_run_every_few_seconds_not_restarted_in_a_loop() {
    if !can_run() {
        return;
    }
    // The agent and its journalctl in a user namespace of the test's own with
    // no inotify instance: journalctl says "Insufficient watch descriptors
    // available. Reverting to -n.", prints what is there and exits 0.
    let lowered = Command::new("unshare")
        .args(["-Ur", "sh", "-c", "echo 0 > /proc/sys/user/max_inotify_instances"])
        .status()
        .is_ok_and(|s| s.success());
    if !lowered {
        eprintln!("SKIPPED: needs unshare -Ur and a writable /proc/sys/user/max_inotify_instances");
        return;
    }
    let r = Receiver::start(BIG);
    let dir = tempfile::tempdir().unwrap();
    let jdir = dir.path().join("journal");
    std::fs::create_dir(&jdir).unwrap();
    let file = jdir.join("a.journal");
    let t = now_us() - 600_000_000;
    numbered(&file, "app.service", 0, 50, t);
    let cfg = config(dir.path(), &r.base, &jdir, "start_at = \"beginning\"");
    let script = "echo 0 > /proc/sys/user/max_inotify_instances && exec \"$@\"";
    let agent = Agent::start_wrapped(&cfg, &[], &["unshare", "-Ur", "sh", "-c", script, "sh"]);
    wait_entries(&r, &agent, 30, 50);
    // Entries written later are read by a later run.
    numbered(&file, "app.service", 50, 50, t + 1000);
    wait_entries(&r, &agent, 30, 100);
    let err = agent.stderr_text();
    // Said once, naming the limit; not a failure, not a restart.
    assert_eq!(err.matches("journalctl cannot follow").count(), 1, "{err}");
    assert!(err.contains("fs.inotify.max_user_instances"), "{err}");
    assert!(!err.contains("starting it again"), "{err}");
    assert_eq!(agent.metric("tailship_journal_restarts_total{source=\"sys\"}"), 0.0, "{err}");
    stop(agent);
    assert_eq!(stat(&r, "duplicates"), 0);
    assert_eq!(numbers(&r, "app.service").len(), 100);
}
