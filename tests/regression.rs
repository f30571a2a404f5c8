//! One test per bug found by the chaos, bad-input and fuzzing suites, named
//! after what broke (bugs found in a single function have their regression
//! test next to it instead). Each says how the bug was found.

#[path = "common/agent.rs"]
mod agent;
mod common;

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
