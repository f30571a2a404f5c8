//! Many files (#29 items 7 and 8): what a file source must not keep per file
//! once the file is gone, and a shutdown deadline that holds while thousands
//! of files are being opened. The 100,000-file and churn figures are in
//! `benches/idle.rs`.

#[path = "common/agent.rs"]
mod agent;
mod common;

use std::time::Duration;

use agent::{agent_config, Agent};
use common::{wait_for, Receiver};

fn stored(r: &Receiver) -> u64 {
    r.stats()["entries"].as_u64().unwrap_or(0)
}

/// Each file's `filename` label makes it a stream. The interner held every
/// stream for the agent's lifetime: files created and deleted all day grew
/// the agent by one stream per file name ever seen.
#[test]
fn the_streams_of_deleted_files_are_freed_not_kept_for_the_agents_lifetime() {
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
    // A file made again under a deleted one's name gets a stream again.
    std::fs::write(logs.join("f0.log"), "back again\n").unwrap();
    assert!(wait_for(Duration::from_secs(20), || stored(&r) == FILES + 1));
    assert_eq!(agent.metric("tailship_streams"), 1.0);
    assert!(agent.terminate(Duration::from_secs(15)).success());
}
