//! Many files (#29 items 7 and 8): what a file source must not keep per file
//! once the file is gone, and a shutdown deadline that holds while thousands
//! of files are being opened. The 100,000-file and churn figures are in
//! `benches/idle.rs`.

use crate::agent;
use crate::common;

use std::collections::HashSet;
use std::time::{Duration, Instant};

use agent::{agent_config, query_all, Agent};
use common::{wait_for, Receiver};

fn stored(r: &Receiver) -> u64 {
    r.stats()["entries"].as_u64().unwrap_or(0)
}

/// Each file's `filename` label makes it a stream. The interner held every
/// stream for the agent's lifetime, and the positions store every deleted
/// file's entry for a week: files created and deleted all day grew the agent
/// by a stream and an entry per file name ever seen.
#[test]
fn the_streams_and_positions_entries_of_deleted_files_are_freed_not_kept() {
    let dir = tempfile::tempdir().unwrap();
    let logs = dir.path().join("logs");
    std::fs::create_dir(&logs).unwrap();
    let r = Receiver::start(&[]);
    let cfg = agent_config(dir.path(), &r.base, &format!("{}/*.log", logs.display()), "", "");
    let agent = Agent::start(&cfg);
    const FILES: u64 = 60;
    for i in 0..FILES {
        std::fs::write(logs.join(format!("f{i}.log")), format!("line of file {i}\n")).unwrap();
    }
    assert!(wait_for(Duration::from_secs(20), || stored(&r) == FILES), "{} of {FILES} delivered", stored(&r));
    let streams = agent.metric("tailship_streams");
    assert!(streams >= FILES as f64, "{streams} streams for {FILES} followed files");
    for i in 0..FILES {
        std::fs::remove_file(logs.join(format!("f{i}.log"))).unwrap();
    }
    // A deleted file is read to its end, closed after 5 s idle, and its stream freed.
    assert!(
        wait_for(Duration::from_secs(30), || agent.metric("tailship_streams") == 0.0),
        "{} streams left after every file was deleted",
        agent.metric("tailship_streams")
    );
    // Nor are their positions entries kept (for a week, before): read to
    // their ends and delivered, deleted files leave nothing to look for.
    let entries = || -> usize {
        let text = std::fs::read_to_string(dir.path().join("positions.json")).unwrap_or_default();
        let json: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
        json["files"].as_array().map_or(usize::MAX, Vec::len)
    };
    assert!(wait_for(Duration::from_secs(10), || entries() == 0), "{} positions entries left", entries());
    // A file made again under a deleted one's name gets a stream again.
    std::fs::write(logs.join("f0.log"), "back again\n").unwrap();
    assert!(wait_for(Duration::from_secs(20), || stored(&r) == FILES + 1));
    assert_eq!(agent.metric("tailship_streams"), 1.0);
    assert!(agent.terminate(Duration::from_secs(15)).success());
}

/// SIGTERM while a scan opened 100,000 files took 45 s with a
/// `shutdown_timeout` of 10 s: the scan opened every file it had found
/// before the source looked at the stop, and the flush then had its whole
/// timeout on top. The deadline counts from the signal, in every phase.
#[test]
fn sigterm_while_thousands_of_files_are_opened_exits_within_the_shutdown_timeout_losing_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let logs = dir.path().join("logs");
    std::fs::create_dir(&logs).unwrap();
    const FILES: usize = 4000;
    for i in 0..FILES {
        std::fs::write(logs.join(format!("f{i:05}.log")), format!("line of file {i:05}\n")).unwrap();
    }
    let r = Receiver::start(&["--max-query-limit", "1000000", "--max-entries", "1000000"]);
    let cfg = agent_config(dir.path(), &r.base, &format!("{}/*.log", logs.display()), "", "");
    let text =
        std::fs::read_to_string(&cfg).unwrap().replace("shutdown_timeout = \"10s\"", "shutdown_timeout = \"2s\"");
    std::fs::write(&cfg, text).unwrap();
    let agent = Agent::start(&cfg);
    // The first lines arrive while the first scan still opens the others.
    assert!(wait_for(Duration::from_secs(30), || stored(&r) > 0), "{}", agent.stderr_text());
    let signalled = Instant::now();
    let status = agent.terminate(Duration::from_secs(30));
    let took = signalled.elapsed();
    assert!(status.success(), "{status:?}");
    assert!(took < Duration::from_millis(3500), "SIGTERM took {took:?} with shutdown_timeout 2s");
    // Nothing acknowledged is lost: started again, every file's line arrives.
    let before = stored(&r);
    let agent = Agent::start(&cfg);
    let lines = || -> HashSet<String> { query_all(&r, r#"{job="test"}"#, None).into_iter().map(|s| s.line).collect() };
    assert!(
        wait_for(Duration::from_secs(60), || lines().len() == FILES),
        "{} of {FILES} files' lines after the restart ({before} stored before it)",
        lines().len()
    );
    assert!(agent.terminate(Duration::from_secs(15)).success());
}
