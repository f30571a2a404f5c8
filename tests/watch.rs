//! File-system events through the real binary: directories that appear after
//! the start, one inotify instance for every file source, and the warning
//! when the inotify limits are reached (lowered in a user namespace of the
//! test's own, `unshare -Ur`, so nothing else on the machine is touched).

use crate::agent;
use crate::common;

use std::io::Write;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use agent::{query_all, Agent, AgentToml, BATCH};
use common::{wait_for, Receiver};

fn stored(r: &Receiver) -> u64 {
    r.stats()["entries"].as_u64().unwrap_or(0)
}

fn append(path: &Path, text: &str) {
    std::fs::OpenOptions::new().create(true).append(true).open(path).unwrap().write_all(text.as_bytes()).unwrap();
}

/// A config shipping each glob of `includes` as a source of its own, rescanned
/// only every hour: a file found is found through an event.
fn config(dir: &Path, url: &str, includes: &[String]) -> std::path::PathBuf {
    let retry = r#"retry = { min_backoff = "20ms", max_backoff = "500ms" }"#;
    let mut toml = AgentToml::new(dir, "").client(url, retry);
    for (i, inc) in includes.iter().enumerate() {
        toml = toml.then(&format!(
            "[[sources]]\ntype = \"file\"\nname = \"s{i}\"\ninclude = [\"{inc}\"]\nlabels = {{ job = \"s{i}\" }}\nscan_interval = \"1h\""
        ));
    }
    toml.write("tailship.toml")
}

/// True when this machine lets a test lower the inotify limits in a user namespace of its own.
fn can_lower_limits() -> bool {
    let ok = Command::new("unshare")
        .args(["-Ur", "sh", "-c", "echo 1 > /proc/sys/user/max_inotify_instances"])
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        eprintln!("SKIPPED: needs unshare -Ur and a writable /proc/sys/user/max_inotify_instances");
    }
    ok
}

/// The agent in a user namespace whose inotify limits are `instances` and `watches`.
fn start_limited(cfg: &Path, instances: u32, watches: u32) -> Agent {
    let script = format!(
        "echo {instances} > /proc/sys/user/max_inotify_instances && \
         echo {watches} > /proc/sys/user/max_inotify_watches && exec \"$@\""
    );
    Agent::start_wrapped(cfg, &[("RUST_LOG", "info")], &["unshare", "-Ur", "sh", "-c", &script, "sh"])
}

/// Waits until the agent answers on its metrics port.
fn wait_up(agent: &Agent) {
    assert!(
        wait_for(Duration::from_secs(20), || !agent.metrics().is_empty()),
        "the agent did not start: {}",
        agent.stderr_text()
    );
}

#[test]
fn directories_made_after_the_start_are_watched_at_once() {
    let r = Receiver::start(&["--max-query-limit", "1000000"]);
    let dir = tempfile::tempdir().unwrap();
    let logs = dir.path().join("a/b");
    let cfg = config(dir.path(), &r.base, &[format!("{}/*.log", logs.display())]);
    let agent = Agent::start(&cfg);
    wait_up(&agent);
    // Made after the start: found through the parent's watch (scans are an hour apart).
    std::fs::create_dir_all(&logs).unwrap();
    append(&logs.join("x.log"), "first\n");
    assert!(wait_for(Duration::from_secs(20), || stored(&r) >= 1), "{}", agent.stderr_text());
    // Removed and made again: watched again.
    std::fs::remove_dir_all(dir.path().join("a")).unwrap();
    std::fs::create_dir_all(&logs).unwrap();
    append(&logs.join("y.log"), "second\n");
    assert!(wait_for(Duration::from_secs(20), || stored(&r) >= 2), "{}", agent.stderr_text());
    // A write to a file of the new directory is an event too.
    append(&logs.join("y.log"), "third\n");
    assert!(wait_for(Duration::from_secs(20), || stored(&r) >= 3), "{}", agent.stderr_text());
    let mut lines: Vec<String> = query_all(&r, r#"{job="s0"}"#, None).into_iter().map(|e| e.line).collect();
    lines.sort();
    assert_eq!(lines, ["first", "second", "third"]);
    let err = agent.stderr_text();
    assert!(!err.contains("polling"), "{err}");
    assert!(agent.terminate(Duration::from_secs(10)).success());
}

/// Between listings (an hour apart here) a scan looks at the paths the last
/// listing found and at what appeared since, not at the directory: beside
/// many rotated files (more than four per path named, so the paths are
/// kept), a file created, one renamed in, one deleted and created again, and
/// a path rotated are all followed, and the old rotations are not read.
#[test]
fn between_listings_files_that_appear_beside_many_rotated_ones_are_followed() {
    let r = Receiver::start(&["--max-query-limit", "1000000"]);
    let dir = tempfile::tempdir().unwrap();
    let logs = dir.path().join("logs");
    std::fs::create_dir(&logs).unwrap();
    for i in 1..=50 {
        append(&logs.join(format!("app.log.{i}")), &format!("rotated before the start {i}\n"));
    }
    append(&logs.join("app.log"), "first\n");
    let cfg = config(dir.path(), &r.base, &[format!("{}/*.log", logs.display())]);
    let agent = Agent::start(&cfg);
    let arrived = |n: u64| wait_for(Duration::from_secs(20), || stored(&r) >= n);
    assert!(arrived(1), "{}", agent.stderr_text());
    append(&logs.join("new.log"), "created\n");
    assert!(arrived(2), "{}", agent.stderr_text());
    append(&logs.join("other.txt"), "renamed in\n");
    std::fs::rename(logs.join("other.txt"), logs.join("moved.log")).unwrap();
    assert!(arrived(3), "{}", agent.stderr_text());
    std::fs::remove_file(logs.join("new.log")).unwrap();
    append(&logs.join("new.log"), "created again\n");
    assert!(arrived(4), "{}", agent.stderr_text());
    std::fs::rename(logs.join("app.log"), logs.join("app.log.51")).unwrap();
    append(&logs.join("app.log"), "after the rotation\n");
    assert!(arrived(5), "{}", agent.stderr_text());
    assert!(agent.terminate(Duration::from_secs(10)).success());
    let mut lines: Vec<String> = query_all(&r, r#"{job="s0"}"#, None).into_iter().map(|e| e.line).collect();
    lines.sort();
    assert_eq!(lines, ["after the rotation", "created", "created again", "first", "renamed in"]);
}

#[test]
fn every_file_source_shares_one_inotify_instance() {
    if !can_lower_limits() {
        return;
    }
    let r = Receiver::start(&["--max-query-limit", "1000000"]);
    let dir = tempfile::tempdir().unwrap();
    let dirs: Vec<_> = (0..3).map(|i| dir.path().join(format!("d{i}"))).collect();
    let mut includes: Vec<String> = dirs.iter().map(|d| format!("{}/*.log", d.display())).collect();
    // Two sources over one directory: one watch, both told.
    includes.push(format!("{}/*.txt", dirs[0].display()));
    for d in &dirs {
        std::fs::create_dir(d).unwrap();
    }
    let cfg = config(dir.path(), &r.base, &includes);
    // One instance for the whole process (before: one per source, and the
    // second source fell back to polling with "Too many open files").
    let agent = start_limited(&cfg, 1, 100);
    wait_up(&agent);
    for (i, d) in dirs.iter().enumerate() {
        append(&d.join("new.log"), &format!("line {i}\n"));
    }
    append(&dirs[0].join("new.txt"), "text\n");
    assert!(wait_for(Duration::from_secs(20), || stored(&r) >= 4), "{}", agent.stderr_text());
    let err = agent.stderr_text();
    assert!(!err.contains("polling") && !err.contains("cannot watch"), "{err}");
    assert!(agent.terminate(Duration::from_secs(10)).success());
}

#[test]
fn reached_inotify_limits_are_named_with_their_sysctl_and_the_files_are_polled() {
    if !can_lower_limits() {
        return;
    }
    let r = Receiver::start(&["--max-query-limit", "1000000"]);
    let dir = tempfile::tempdir().unwrap();
    let logs = dir.path().join("logs");
    std::fs::create_dir(&logs).unwrap();
    let cfg = config(dir.path(), &r.base, &[format!("{}/*.log", logs.display())]);
    // No instance at all.
    let agent = start_limited(&cfg, 0, 100);
    wait_up(&agent);
    append(&logs.join("a.log"), "polled\n");
    assert!(wait_for(Duration::from_secs(20), || stored(&r) >= 1), "{}", agent.stderr_text());
    let err = agent.stderr_text();
    assert!(err.contains("fs.inotify.max_user_instances") && err.contains("polling"), "{err}");
    assert!(!err.contains("Too many open files"), "{err}");
    assert!(agent.terminate(Duration::from_secs(10)).success());
    // No watch.
    let agent = start_limited(&cfg, 10, 0);
    wait_up(&agent);
    append(&logs.join("a.log"), "polled again\n");
    assert!(wait_for(Duration::from_secs(20), || stored(&r) >= 2), "{}", agent.stderr_text());
    let err = agent.stderr_text();
    assert!(err.contains("fs.inotify.max_user_watches") && err.contains(&logs.display().to_string()), "{err}");
    assert!(agent.terminate(Duration::from_secs(10)).success());
}

/// #29 item 9: one directory that could not be watched switched its whole
/// source to polling. Now only that directory is polled (its files read at
/// each poll, its entries looked at for new files) and the source's other
/// directories keep their events.
#[test]
fn a_directory_that_cannot_be_watched_is_polled_alone_and_the_others_keep_their_events() {
    if !can_lower_limits() {
        return;
    }
    let r = Receiver::start(&["--max-query-limit", "1000000"]);
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    std::fs::create_dir(&a).unwrap();
    std::fs::create_dir(&b).unwrap();
    let source = format!(
        "[[sources]]\ntype = \"file\"\nname = \"s\"\ninclude = [\"{}/*.log\", \"{}/*.log\"]\nlabels = {{ job = \"s\" }}\nscan_interval = \"1h\"",
        a.display(),
        b.display()
    );
    let toml = AgentToml::new(dir.path(), "").bare_client(&r.base, BATCH).sync_period("");
    let cfg = toml.then(&source).write("tailship.toml");
    // One watch: `a` gets it, `b` cannot be watched.
    let agent = start_limited(&cfg, 10, 1);
    wait_up(&agent);
    // The metrics port answers before the first scan has set up the watches.
    let polled = || agent.metric("tailship_dirs_polled{source=\"s\"}") == 1.0;
    assert!(wait_for(Duration::from_secs(20), polled), "{}", agent.metrics());
    // New files in both (scans are an hour apart): `a`'s through its events, `b`'s through the poll.
    append(&a.join("new.log"), "in a\n");
    append(&b.join("new.log"), "in b\n");
    assert!(wait_for(Duration::from_secs(20), || stored(&r) >= 2), "{}", agent.stderr_text());
    append(&b.join("new.log"), "in b again\n");
    assert!(wait_for(Duration::from_secs(20), || stored(&r) >= 3), "{}", agent.stderr_text());
    let err = agent.stderr_text();
    assert!(err.contains("cannot watch directory") && err.contains("other directories stay watched"), "{err}");
    assert!(err.contains(&b.display().to_string()) && !err.contains("polling them instead"), "{err}");
    assert!(agent.terminate(Duration::from_secs(10)).success());
}
