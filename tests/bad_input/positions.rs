//! Bad positions files and the disks they live on: full, unreadable,
//! corrupt, a file name that is not UTF-8, and what `check` says of them.

use super::*;

/// The positions file's disk full: the agent's directory is a small tmpfs
/// filled to the last page, so writing a new temp file fails with ENOSPC.
/// The save is refused, logged and counted, the old positions file stays
/// whole and valid, and the next save after the disk has room again writes the
/// new offset. (Mounting needs root, as CI has; elsewhere the test says it is
/// skipped. It used to plant a link to `/dev/full` at the temp file's fixed
/// name; temp names are random and links are never followed now.)
#[test]
fn positions_disk_full_keeps_the_old_positions_file_valid_and_recovers() {
    let r = Receiver::start(BIG);
    let dir = tempfile::tempdir().unwrap();
    let Some(_mount) = Tmpfs::mount(dir.path(), "256k") else {
        eprintln!("SKIPPED: cannot mount a tmpfs (needs root)");
        return;
    };
    let log = dir.path().join("a.log");
    std::fs::write(&log, "first\n").unwrap();
    let pos_path = dir.path().join("positions.json");
    let offset = || -> Option<u64> {
        let text = std::fs::read_to_string(&pos_path).ok()?;
        let json: serde_json::Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("invalid ({e}): {text}"));
        json["files"][0]["offset"].as_u64()
    };
    let cfg = agent_config(dir.path(), &r.base, &log.display().to_string(), "", "");
    let agent = Agent::start(&cfg);
    assert!(wait_for(Duration::from_secs(20), || offset() == Some(6)), "{}", agent.stderr_text());
    // Fill the file system to its last page (the log's own page has room for the append).
    let filler = dir.path().join("filler");
    {
        let mut f = std::fs::File::create(&filler).unwrap();
        let page = vec![b'x'; 4096];
        while f.write_all(&page).is_ok() {}
    }
    append(&log, b"second\n");
    assert!(wait_for(Duration::from_secs(20), || stored(&r) >= 2));
    // For two seconds, every save hits the full disk.
    let until = std::time::Instant::now() + Duration::from_secs(2);
    while std::time::Instant::now() < until {
        assert_eq!(offset(), Some(6), "the old positions file stays whole");
        std::thread::sleep(Duration::from_millis(5));
    }
    assert!(
        wait_for(Duration::from_secs(20), || agent.metric("tailship_positions_writes_total{outcome=\"error\"}") >= 2.0),
        "{}",
        agent.metrics()
    );
    let err = agent.stderr_text();
    assert!(err.contains("positions not saved") && err.contains("No space left on device"), "{err}");
    // Room again.
    std::fs::remove_file(&filler).unwrap();
    assert!(wait_for(Duration::from_secs(20), || offset() == Some(13)), "{}", agent.stderr_text());
    assert!(agent.terminate(Duration::from_secs(10)).success());
    assert_eq!(offset(), Some(13));
    let temps: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
        .collect();
    assert!(temps.is_empty(), "failed temp files are removed: {temps:?}");
}

/// A tmpfs mounted for one test, unmounted when dropped.
struct Tmpfs(std::path::PathBuf);

impl Tmpfs {
    fn mount(dir: &std::path::Path, size: &str) -> Option<Tmpfs> {
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tailship-test"])
            .arg(dir)
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        ok.then(|| Tmpfs(dir.to_path_buf()))
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

/// Positions files that are empty, binary, cut in half, of a future version or
/// of the wrong shape, or a directory in place of the file: `run` stops with
/// exit 2 naming the file and how to start without it, ships nothing and
/// leaves the file as it is (it used to move it aside and send everything
/// again, issue 50). `--fresh-positions` (or `positions.on_unreadable =
/// "start_fresh"`) then moves it aside to `positions.json.corrupt` and starts
/// afresh per `start_at`. An entry with a bad fingerprint is skipped alone:
/// the file is not corrupt.
#[test]
fn unreadable_or_corrupt_positions_files_stop_run_with_exit_2_until_a_fresh_start_is_asked() {
    let valid = r#"{"version":1,"files":[{"path":"/x/a.log","fingerprint":"00000000deadbeef","fingerprint_len":5,"dev":1,"ino":2,"offset":5,"updated_at":1}]}"#;
    let cases: Vec<(&str, Option<Vec<u8>>, bool)> = vec![
        ("empty", Some(Vec::new()), true),
        ("binary", Some(b"\0\x01\x02\xff\xfe not json".to_vec()), true),
        ("cut in half", Some(valid.as_bytes()[..valid.len() / 2].to_vec()), true),
        ("future version", Some(br#"{"version":99,"files":[]}"#.to_vec()), true),
        ("wrong shape", Some(br#"{"version":1,"files":[{"path":5}]}"#.to_vec()), true),
        ("a directory", None, true),
        ("bad fingerprint", Some(valid.replace("00000000deadbeef", "zz").into_bytes()), false),
    ];
    let r = Receiver::start(BIG);
    for (i, (name, bytes, unreadable)) in cases.into_iter().enumerate() {
        // Shipped before this case: one line by each earlier case.
        let shipped = i as u64;
        let dir = tempfile::tempdir().unwrap();
        let pos = dir.path().join("positions.json");
        match &bytes {
            Some(b) => std::fs::write(&pos, b).unwrap(),
            None => std::fs::create_dir_all(pos.join("inside")).unwrap(),
        }
        let log = dir.path().join("a.log");
        std::fs::write(&log, format!("case {name}\n")).unwrap();
        let cfg = agent_config(dir.path(), &r.base, &log.display().to_string(), "", "");
        if unreadable {
            let mut agent = Agent::start(&cfg);
            let status = agent.exit_within(Duration::from_secs(20));
            assert_eq!(status.and_then(|s| s.code()), Some(2), "{name}: {}", agent.stderr_text());
            assert!(
                wait_for(Duration::from_secs(5), || agent.stderr_text().contains("--fresh-positions")),
                "{name}: {}",
                agent.stderr_text()
            );
            let err = agent.stderr_text();
            assert!(err.contains(&pos.display().to_string()), "{name}: the file is named: {err}");
            assert!(err.contains("start_fresh"), "{name}: the config key is named: {err}");
            assert_eq!(stored(&r), shipped, "{name}: nothing shipped");
            match &bytes {
                Some(b) => assert_eq!(&std::fs::read(&pos).unwrap(), b, "{name}: left as it is"),
                None => assert!(pos.join("inside").is_dir(), "{name}: left as it is"),
            }
            assert!(!dir.path().join("positions.json.corrupt").exists(), "{name}");
        }
        // Asked to start fresh: the flag for all but one case, the config key for that one.
        let agent = if i == 1 {
            Agent::start_with(&cfg, &[("TAILSHIP_POSITIONS__ON_UNREADABLE", "start_fresh")])
        } else {
            Agent::start_args(&cfg, &[], &[], &["--fresh-positions"])
        };
        assert!(
            wait_for(Duration::from_secs(20), || stored(&r) > shipped),
            "{name}: nothing shipped: {}",
            agent.stderr_text()
        );
        let err = agent.stderr_text();
        assert!(agent.terminate(Duration::from_secs(10)).success(), "{name}");
        assert_eq!(dir.path().join("positions.json.corrupt").exists(), unreadable, "{name}: {err}");
        let saved: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&pos).unwrap()).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(
            saved["files"].as_array().unwrap().iter().any(|f| f["path"] == log.display().to_string()),
            "{name}: a valid positions file again"
        );
    }
    assert_eq!(stored(&r), 7);
}

/// A positions file the agent's user may not read (written by root with mode
/// 0600, as `convert --positions` did, the agent running as its own user):
/// `run` stops with exit 2 naming the file, the user and how to start
/// without it, instead of starting without positions and sending every line
/// again. Root reads any file, so as root the agent runs as `nobody` via
/// `setpriv` (skipped, saying so, when it is missing).
#[test]
fn a_positions_file_the_agents_user_cannot_read_stops_run_with_exit_2() {
    let Some(wrapper) = as_nobody() else { return };
    let r = Receiver::start(BIG);
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let log = dir.path().join("a.log");
    std::fs::write(&log, "already shipped\n").unwrap();
    std::fs::set_permissions(&log, std::fs::Permissions::from_mode(0o644)).unwrap();
    // Delivered up to its end, by an earlier run as root.
    let cfg = agent_config(dir.path(), &r.base, &log.display().to_string(), "", "");
    let agent = Agent::start(&cfg);
    assert!(wait_for(Duration::from_secs(20), || stored(&r) == 1), "{}", agent.stderr_text());
    assert!(agent.terminate(Duration::from_secs(10)).success());
    let pos = dir.path().join("positions.json");
    std::fs::set_permissions(&pos, std::fs::Permissions::from_mode(0o600)).unwrap();
    let mut agent = Agent::start_wrapped(&cfg, &[], &wrapper);
    let status = agent.exit_within(Duration::from_secs(20));
    assert_eq!(status.and_then(|s| s.code()), Some(2), "{}", agent.stderr_text());
    assert!(wait_for(Duration::from_secs(5), || agent.stderr_text().contains("--fresh-positions")));
    let err = agent.stderr_text();
    assert!(err.contains(&pos.display().to_string()) && err.contains("uid 65534"), "{err}");
    assert!(err.contains("Permission denied"), "{err}");
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(stored(&r), 1, "nothing sent again");
}

/// `setpriv` arguments to run the agent as `nobody` when the tests run as
/// root (files the test makes unreadable are readable by root); empty when
/// not root; `None` (the test says it is skipped) without `setpriv`.
fn as_nobody() -> Option<Vec<&'static str>> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Some(Vec::new());
    }
    if !std::path::Path::new("/usr/bin/setpriv").exists() {
        eprintln!("skipped: running as root and setpriv is missing, so no file is unreadable");
        return None;
    }
    Some(vec!["/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"])
}

/// A file name that is not UTF-8 (`bad\xff.log`) beside a good one, both
/// matched by the glob: positions keep being written (every save failed on
/// it: serde writes no such path as JSON), its name is kept exactly (escaped
/// `bad\xff.log` in the positions file, the `filename` label and `/status`
/// alike), and after a restart both files go on with nothing sent twice
/// (100 of 200 lines were).
#[test]
fn a_file_name_that_is_not_utf8_keeps_positions_written_and_resumes_with_nothing_twice() {
    use std::os::unix::ffi::OsStringExt;
    let r = Receiver::start(BIG);
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("good.log");
    let bad = dir.path().join(std::ffi::OsString::from_vec(b"bad\xff.log".to_vec()));
    let lines =
        |name: &str, from: usize, to: usize| -> String { (from..to).map(|i| format!("{name} {i}\n")).collect() };
    std::fs::write(&good, lines("good", 0, 100)).unwrap();
    std::fs::write(&bad, lines("bad", 0, 100)).unwrap();
    let cfg = agent_config(dir.path(), &r.base, &format!("{}/*.log", dir.path().display()), "", "");
    let pos = dir.path().join("positions.json");
    let escaped = format!("{}/bad\\xff.log", dir.path().display());
    let agent = Agent::start(&cfg);
    assert!(wait_for(Duration::from_secs(30), || stored(&r) >= 200), "{}", agent.stderr_text());
    // Saved with both files delivered to their ends.
    let offsets = || -> BTreeMap<String, (u64, bool)> {
        let Ok(text) = std::fs::read_to_string(&pos) else { return BTreeMap::new() };
        let json: serde_json::Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("invalid ({e}): {text}"));
        json["files"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| {
                let path = f["path"].as_str().unwrap().to_string();
                (path, (f["offset"].as_u64().unwrap(), f["path_escaped"].as_bool().unwrap_or(false)))
            })
            .collect()
    };
    let ends = |o: &BTreeMap<String, (u64, bool)>| {
        o.get(&good.display().to_string()) == Some(&(std::fs::metadata(&good).unwrap().len(), false))
            && o.get(&escaped) == Some(&(std::fs::metadata(&bad).unwrap().len(), true))
    };
    assert!(wait_for(Duration::from_secs(20), || ends(&offsets())), "{:?}: {}", offsets(), agent.stderr_text());
    assert_eq!(agent.metric("tailship_positions_writes_total{outcome=\"error\"}"), 0.0, "{}", agent.stderr_text());
    assert!(agent.metric("tailship_positions_writes_total{outcome=\"ok\"}") >= 1.0);
    // The label and /status say the same name.
    let filenames: std::collections::BTreeSet<String> = query_all(&r, r#"{job="test"}"#, None)
        .into_iter()
        .map(|e| e.labels["filename"].as_str().unwrap().to_string())
        .collect();
    assert!(filenames.contains(&escaped) && filenames.contains(&good.display().to_string()), "{filenames:?}");
    let addr = agent.metrics_addr.clone().unwrap();
    let status = common::get(&format!("http://{addr}/status.json")).json();
    let paths: Vec<String> = status["sources"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|s| s["files"].as_array().cloned().unwrap_or_default())
        .map(|f| f["path"].as_str().unwrap().to_string())
        .collect();
    assert!(paths.contains(&escaped), "{paths:?}");
    assert!(agent.terminate(Duration::from_secs(10)).success());
    // No log started by a failed save is left: the one the last save started.
    let logs = std::fs::read_dir(dir.path())
        .unwrap()
        .filter(|e| e.as_ref().unwrap().file_name().to_string_lossy().contains(".wal-"))
        .count();
    assert!(logs <= 1, "{logs} positions logs");
    // Restarted: both go on where they were, nothing twice.
    append(&good, lines("good", 100, 150).as_bytes());
    append(&bad, lines("bad", 100, 150).as_bytes());
    let agent = Agent::start(&cfg);
    assert!(wait_for(Duration::from_secs(30), || stored(&r) >= 300), "{}", agent.stderr_text());
    barrier(&r, &good, "good marker");
    barrier(&r, &bad, "bad marker");
    assert!(agent.terminate(Duration::from_secs(10)).success());
    let all = lines_of(&r);
    let distinct: std::collections::BTreeSet<&String> = all.iter().collect();
    assert_eq!(all.len(), 302, "{} stored, {} distinct: lines sent twice", all.len(), distinct.len());
    assert_eq!(distinct.len(), 302);
}

/// Saves that keep failing (a directory in place of the positions file, so
/// every rename fails) leave no positions log of their own: each left one,
/// with 4 MiB set aside, never removed (120 MiB in 30 s). The one log goes
/// on, the disk it takes stays bounded, and once the file can be written
/// again it is whole.
#[test]
fn failing_positions_saves_start_no_new_logs_and_their_disk_stays_bounded() {
    let r = Receiver::start(BIG);
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("a.log");
    std::fs::write(&log, "first\n").unwrap();
    let cfg = agent_config(dir.path(), &r.base, &log.display().to_string(), "", "");
    let pos = dir.path().join("positions.json");
    let agent = Agent::start(&cfg);
    assert!(wait_for(Duration::from_secs(20), || pos.exists() && stored(&r) == 1), "{}", agent.stderr_text());
    std::fs::remove_file(&pos).unwrap();
    std::fs::create_dir_all(pos.join("inside")).unwrap();
    let wals = || -> (usize, u64) {
        std::fs::read_dir(dir.path())
            .unwrap()
            .filter_map(Result::ok)
            .filter(|e| e.file_name().to_string_lossy().contains(".wal-"))
            .fold((0, 0), |(n, bytes), e| (n + 1, bytes + e.metadata().unwrap().blocks() * 512))
    };
    let names = || -> std::collections::BTreeSet<String> {
        std::fs::read_dir(dir.path())
            .unwrap()
            .filter_map(Result::ok)
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.contains(".wal-"))
            .collect()
    };
    let mut seen = names();
    assert_eq!(seen.len(), 1, "{seen:?}");
    // Lines acknowledged all along: a save is due every 200 ms, and fails.
    for i in 0..40 {
        append(&log, format!("line {i}\n").as_bytes());
        std::thread::sleep(Duration::from_millis(100));
        seen.extend(names());
    }
    assert!(wait_for(Duration::from_secs(20), || stored(&r) == 41));
    let errors = agent.metric("tailship_positions_writes_total{outcome=\"error\"}");
    assert!(errors >= 5.0, "saves failed {errors} times: {}", agent.stderr_text());
    // One log at a time (a second only while a save is under way), no new one for each failed save.
    assert!(seen.len() <= 2, "{} positions logs made in {errors} failed saves: {seen:?}", seen.len());
    assert!(wait_for(Duration::from_secs(5), || wals().0 == 1), "{:?}", names());
    let bytes = wals().1;
    assert!(bytes <= (4 << 20) + (1 << 20), "{bytes} bytes of positions logs");
    // The file can be written again: one log left, the positions file whole.
    std::fs::remove_dir_all(&pos).unwrap();
    append(&log, b"last\n");
    assert!(
        wait_for(Duration::from_secs(20), || std::fs::read_to_string(&pos)
            .ok()
            .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
            .is_some_and(|j| j["files"][0]["offset"].as_u64() == Some(std::fs::metadata(&log).unwrap().len()))),
        "{}",
        agent.stderr_text()
    );
    assert!(wait_for(Duration::from_secs(5), || wals().0 == 1), "{} logs", wals().0);
    assert!(agent.terminate(Duration::from_secs(10)).success());
}

/// `check` tests what `run` needs of the disk, as the user running it: a
/// positions file that is corrupt (exit 2, as `run` would), and, as a user
/// who may not write them, the positions directory and the spool of a
/// network source, each named by its key. It passed all of them.
#[test]
fn check_reports_unreadable_positions_and_positions_or_spool_paths_it_cannot_write() {
    let dir = tempfile::tempdir().unwrap();
    let pos = dir.path().join("state/positions.json");
    std::fs::create_dir_all(dir.path().join("state")).unwrap();
    let config = |positions: &Path, spool: &Path| {
        let text = format!(
            "[client]\nurl = \"http://127.0.0.1:9\"\n[positions]\npath = \"{}\"\n[spool]\npath = \"{}\"\n\
             [[sources]]\ntype = \"syslog\"\nlisten = \"127.0.0.1:0\"\n",
            positions.display(),
            spool.display()
        );
        agent::write_file(dir.path(), "tailship.toml", &text)
    };
    let check = |cfg: &Path, wrapper: &[&str]| {
        let mut cmd = match wrapper.split_first() {
            Some((p, args)) => {
                let mut c = Command::new(p);
                c.args(args).arg(bin());
                c
            }
            None => Command::new(bin()),
        };
        let out = cmd.args(["check", "--quiet", "--config"]).arg(cfg).output().unwrap();
        (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
    };
    let cfg = config(&pos, &dir.path().join("state/spool"));
    let (code, err) = check(&cfg, &[]);
    assert!(code == Some(0) && !err.contains("positions.path") && !err.contains("spool.path"), "{err}");
    std::fs::write(&pos, "{cut").unwrap();
    let (code, err) = check(&cfg, &[]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("positions.path") && err.contains("corrupt") && err.contains("--fresh-positions"), "{err}");
    std::fs::remove_file(&pos).unwrap();
    // As a user who may not write the directories (root writes anywhere).
    let Some(wrapper) = as_nobody() else { return };
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(dir.path().join("state"), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(dir.path().join("tailship.toml"), std::fs::Permissions::from_mode(0o644)).unwrap();
    let (code, err) = check(&cfg, &wrapper);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("positions.path") && err.contains("cannot write in"), "{err}");
    assert!(err.contains("spool.path"), "{err}");
    // Writable positions, a spool segment left by root.
    let spool = dir.path().join("spool");
    std::fs::create_dir_all(spool.join("syslog-0")).unwrap();
    std::fs::write(spool.join("syslog-0/00000001.seg"), "x").unwrap();
    std::fs::set_permissions(spool.join("syslog-0/00000001.seg"), std::fs::Permissions::from_mode(0o600)).unwrap();
    let open = dir.path().join("open");
    std::fs::create_dir_all(&open).unwrap();
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
    for d in [&spool, &spool.join("syslog-0")] {
        std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o777)).unwrap();
    }
    let cfg = config(&open.join("positions.json"), &spool);
    let (code, err) = check(&cfg, &wrapper);
    assert_eq!(code, Some(2), "{err}");
    assert!(!err.contains("positions.path") && err.contains("spool.path") && err.contains("00000001.seg"), "{err}");
}
