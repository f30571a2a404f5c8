//! Once it runs, the agent gives back the pages of its own binary that only
//! starting needed (`util::pages`), says how many bytes it advised, and
//! goes on reading and shipping: code it runs afterwards is read back from
//! the page cache.

use crate::agent;
use crate::common;

use std::io::Write;
use std::time::Duration;

use agent::{agent_config, query_all, Agent};
use common::{wait_for, Receiver};

fn released_bytes(log: &str) -> Option<u64> {
    let line = log.lines().find(|l| l.contains("pages read only to start released"))?;
    line.split_whitespace().find_map(|w| w.strip_prefix("bytes=")).and_then(|n| n.parse().ok())
}

#[test]
fn the_agent_gives_back_its_start_up_pages_and_goes_on_shipping() {
    let dir = tempfile::tempdir().unwrap();
    let logs = dir.path().join("logs");
    std::fs::create_dir_all(&logs).unwrap();
    let store = Receiver::start(&["--max-query-limit", "10000000"]);
    let cfg = agent_config(dir.path(), &store.base, &format!("{}/*.log", logs.display()), "", "host_label = false");
    let agent = Agent::start_with(&cfg, &[("RUST_LOG", "tailship::agent=debug,info")]);
    assert!(
        wait_for(Duration::from_secs(20), || released_bytes(&agent.stderr_text()).is_some()),
        "{}",
        agent.stderr_text()
    );
    // The binary's read-only and code segments are megabytes; whole pages only.
    let bytes = released_bytes(&agent.stderr_text()).unwrap();
    assert!(bytes >= 1 << 20 && bytes % 4096 == 0, "released {bytes} bytes");
    let mut f = std::fs::File::create(logs.join("app.log")).unwrap();
    for i in 0..100 {
        writeln!(f, "after the release {i}").unwrap();
    }
    assert!(
        wait_for(Duration::from_secs(30), || query_all(&store, r#"{job="test"}"#, None).len() >= 100),
        "{}",
        agent.stderr_text()
    );
    let got = query_all(&store, r#"{job="test"}"#, None);
    assert_eq!(got.last().map(|e| e.line.as_str()), Some("after the release 99"));
}
