//! Exactly once as the service shows it: after a kill -9, lines that were in
//! flight go again with the timestamps they first had (or are found stored
//! and skipped), and acknowledged ones are not sent again, so `tailship
//! receive`, which drops an entry sent again by Loki's rule and no more,
//! shows every line once.

#[path = "common/agent.rs"]
mod agent;
mod common;

use std::collections::HashMap;
use std::io::Write;
use std::time::Duration;

use agent::{agent_config, query_all, Agent};
use common::{wait_for, Receiver};

fn counts(r: &Receiver) -> HashMap<String, u32> {
    let mut c = HashMap::new();
    for e in query_all(r, r#"{job="test"}"#, None) {
        *c.entry(e.line).or_insert(0) += 1;
    }
    c
}

fn stored(r: &Receiver) -> u64 {
    r.stats()["entries"].as_u64().unwrap_or(0)
}

/// `n` lines of `width` bytes.
fn lines(n: usize, width: usize) -> String {
    (0..n).map(|i| format!("line {i:06} {}\n", "x".repeat(width.saturating_sub(13)))).collect()
}

/// Kills the agent while the receiver holds answers to pushes it stored,
/// starts it again and waits for every line: returns the agent's metrics text.
fn kill_while_answers_are_held(reconcile: &str, n: usize, width: usize) -> (HashMap<String, u32>, String) {
    let r = Receiver::start(&["--max-query-limit", "1000000", "--answer-after-store", "3s"]);
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("app.log");
    std::fs::write(&log, lines(n, width)).unwrap();
    let cfg = agent_config(
        dir.path(),
        &r.base,
        &log.display().to_string(),
        &format!("reconcile = \"{reconcile}\"\ntimeout = \"30s\""),
        "",
    );
    let agent = Agent::start(&cfg);
    // Stored, not answered: the agent does not know they arrived.
    assert!(wait_for(Duration::from_secs(20), || stored(&r) as usize >= n / 2), "nothing stored");
    agent.kill9();
    let agent = Agent::start(&cfg);
    assert!(wait_for(Duration::from_secs(60), || counts(&r).len() == n), "{} of {n} lines arrived", counts(&r).len());
    // Anything sent twice would have arrived by the time the agent is idle.
    assert!(wait_for(Duration::from_secs(20), || agent.metric("tailship_queue_lines") == 0.0));
    let metrics = agent.metrics();
    assert!(agent.terminate(Duration::from_secs(20)).success());
    (counts(&r), metrics)
}

fn replayed(metrics: &str, outcome: &str) -> f64 {
    metrics
        .lines()
        .filter(|l| l.starts_with("tailship_lines_replayed_total{") && l.contains(&format!("outcome=\"{outcome}\"")))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

#[test]
fn lines_stored_before_a_kill_9_are_sent_again_as_they_were_and_shown_once() {
    // Small lines: what is sent again is within the stream's head block, where
    // the service drops an identical entry; with reconcile off they all go again.
    let (c, metrics) = kill_while_answers_are_held("off", 3000, 40);
    let twice: Vec<_> = c.iter().filter(|(_, n)| **n > 1).map(|(l, _)| l.clone()).collect();
    assert!(twice.is_empty(), "{} lines shown twice, e.g. {:?}", twice.len(), &twice[..twice.len().min(3)]);
    assert!(replayed(&metrics, "resent") > 0.0, "nothing was read again:\n{metrics}");
    assert_eq!(replayed(&metrics, "reconciled"), 0.0);
}

#[test]
fn lines_stored_before_a_kill_9_are_found_by_a_query_and_not_sent_again() {
    // 1.5 MiB of lines: beyond the head block, so only a lookup keeps them once.
    let (c, metrics) = kill_while_answers_are_held("auto", 6000, 250);
    let twice = c.values().filter(|n| **n > 1).count();
    assert_eq!(twice, 0, "lines shown twice");
    assert!(replayed(&metrics, "reconciled") > 0.0, "nothing reconciled:\n{metrics}");
}

#[test]
fn acknowledgements_reach_the_disk_at_once_so_nothing_acknowledged_is_read_again() {
    let r = Receiver::start(&["--max-query-limit", "1000000"]);
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("app.log");
    std::fs::write(&log, lines(2000, 30)).unwrap();
    // A long sync period: the positions file is written late; the log is not.
    let cfg = agent_config(dir.path(), &r.base, &log.display().to_string(), "", "");
    let text = std::fs::read_to_string(&cfg).unwrap().replace("sync_period = \"200ms\"", "sync_period = \"1h\"");
    std::fs::write(&cfg, text).unwrap();
    let agent = Agent::start(&cfg);
    assert!(wait_for(Duration::from_secs(20), || counts(&r).len() == 2000));
    // Killed at once: the positions file was not written since the lines were acknowledged.
    agent.kill9();
    let agent = Agent::start(&cfg);
    let mut f = std::fs::OpenOptions::new().append(true).open(&log).unwrap();
    f.write_all(b"after the kill\n").unwrap();
    assert!(wait_for(Duration::from_secs(20), || counts(&r).contains_key("after the kill")));
    let metrics = agent.metrics();
    assert_eq!(replayed(&metrics, "resent") + replayed(&metrics, "skipped"), 0.0, "{metrics}");
    assert_eq!(counts(&r).values().filter(|n| **n > 1).count(), 0, "lines shown twice");
    assert_eq!(r.stats()["duplicates"].as_u64(), Some(0), "a line was sent again");
    assert!(agent.terminate(Duration::from_secs(10)).success());
}
