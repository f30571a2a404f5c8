//! What the agent says about its own health: `/ready` (and `STATUS=`) name
//! every failure, and a stop that could not save positions is not a success.

use crate::agent;
use crate::common;

use std::time::Duration;

use agent::{agent_config, Agent};
use common::{get, wait_for, Receiver};

#[test]
fn a_positions_file_that_cannot_be_written_shows_in_ready_and_fails_the_exit() {
    let dir = tempfile::tempdir().unwrap();
    let r = Receiver::start(&[]);
    std::fs::write(dir.path().join("a.log"), "one\ntwo\n").unwrap();
    let cfg = agent_config(dir.path(), &r.base, &format!("{}/*.log", dir.path().display()), "", "");
    // The positions file's directory is a regular file: no write can succeed
    // (permissions would not stop root, which the tests may run as).
    std::fs::write(dir.path().join("blocked"), "").unwrap();
    let text = std::fs::read_to_string(&cfg).unwrap().replace(
        &format!("path = \"{}/positions.json\"", dir.path().display()),
        &format!("path = \"{}/blocked/positions.json\"", dir.path().display()),
    );
    std::fs::write(&cfg, text).unwrap();
    let agent = Agent::start(&cfg);
    let ready = format!("http://{}/ready", agent.metrics_addr.clone().unwrap());
    assert!(
        wait_for(Duration::from_secs(20), || {
            // Until the endpoint listens, `get` panics (connection refused).
            std::panic::catch_unwind(|| get(&ready)).is_ok_and(|r| r.status == 503 && r.text().contains("positions"))
        }),
        "/ready names the positions file: {} / {}",
        get(&ready).text(),
        agent.stderr_text()
    );
    let status = agent.terminate(Duration::from_secs(15));
    assert!(!status.success(), "a stop without saved positions is not a success");
}
