//! Duplicates as the book promises (book/src/delivery/): a `kill -9` resends little more than the
//! batches in flight (positions are written within a second of an
//! acknowledgement, whatever `sync_period` is), and a reload (SIGHUP) sends
//! no line twice.

use crate::agent;
use crate::common;

use std::collections::HashMap;
use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use agent::{agent_config, query_all, Agent};
use common::{wait_for, Receiver};

const BIG: &[&str] = &["--max-query-limit", "1000000"];

fn counts(r: &Receiver) -> HashMap<String, u32> {
    let mut c = HashMap::new();
    for e in query_all(r, r#"{job="test"}"#, None) {
        *c.entry(e.line).or_insert(0) += 1;
    }
    c
}

fn append(path: &Path, text: &str) {
    std::fs::OpenOptions::new().create(true).append(true).open(path).unwrap().write_all(text.as_bytes()).unwrap();
}

#[test]
fn positions_are_written_soon_after_an_acknowledgement_so_a_kill_9_resends_nothing_delivered() {
    let r = Receiver::start(BIG);
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("app.log");
    let text: String = (0..2000).map(|i| format!("line {i:06}\n")).collect();
    std::fs::write(&log, &text).unwrap();
    // The default sync period: positions would wait up to 10 s without the write after acknowledgements.
    let cfg = agent_config(dir.path(), &r.base, &log.display().to_string(), "", "").to_string_lossy().into_owned();
    let config_text =
        std::fs::read_to_string(&cfg).unwrap().replace("sync_period = \"200ms\"", "sync_period = \"10s\"");
    std::fs::write(&cfg, config_text).unwrap();
    let agent = Agent::start(Path::new(&cfg));
    assert!(wait_for(Duration::from_secs(20), || counts(&r).len() == 2000));
    let end = format!("\"offset\": {}", text.len());
    assert!(
        wait_for(Duration::from_secs(4), || std::fs::read_to_string(dir.path().join("positions.json"))
            .is_ok_and(|t| t.contains(&end))),
        "positions not written within a few seconds of the acknowledgement"
    );
    agent.kill9();
    append(&log, "after the kill\n");
    let agent = Agent::start(Path::new(&cfg));
    assert!(wait_for(Duration::from_secs(20), || counts(&r).contains_key("after the kill")));
    let c = counts(&r);
    assert_eq!(c.values().filter(|n| **n > 1).count(), 0, "lines sent twice after kill -9");
    assert_eq!(c.len(), 2001);
    assert!(agent.terminate(Duration::from_secs(10)).success());
}

#[test]
fn six_reloads_while_a_file_is_written_send_no_line_twice() {
    let r = Receiver::start(BIG);
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("app.log");
    std::fs::write(&log, "").unwrap();
    let cfg = agent_config(dir.path(), &r.base, &log.display().to_string(), "", "");
    let agent = Agent::start(&cfg);

    let stop = Arc::new(AtomicBool::new(false));
    let written = Arc::new(AtomicU64::new(0));
    let writer = {
        let (stop, written, log) = (stop.clone(), written.clone(), log.clone());
        std::thread::spawn(move || {
            let mut f = std::fs::OpenOptions::new().append(true).open(&log).unwrap();
            let mut i = 0u64;
            while !stop.load(Ordering::Relaxed) {
                // About 2,000 lines a second, in small writes.
                for _ in 0..20 {
                    f.write_all(format!("w {i:08}\n").as_bytes()).unwrap();
                    i += 1;
                }
                written.store(i, Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(10));
            }
        })
    };
    let original = std::fs::read_to_string(&cfg).unwrap();
    for n in 0..6 {
        // Wait until something new arrived, then reload with another label value.
        let before = counts(&r).len();
        assert!(wait_for(Duration::from_secs(20), || counts(&r).len() > before + 100));
        std::fs::write(&cfg, original.replace("job = \"test\"", &format!("job = \"test\", reload = \"{n}\""))).unwrap();
        agent.signal(libc::SIGHUP);
        let reloads = n + 1;
        assert!(wait_for(Duration::from_secs(20), || agent.stderr_text().matches("config reloaded").count() >= reloads));
    }
    stop.store(true, Ordering::Relaxed);
    writer.join().unwrap();
    let total = written.load(Ordering::Relaxed) as usize;
    assert!(
        wait_for(Duration::from_secs(30), || counts(&r).len() == total),
        "{} of {total} lines arrived",
        counts(&r).len()
    );
    let twice: Vec<String> = counts(&r).into_iter().filter(|(_, n)| *n > 1).map(|(l, _)| l).collect();
    assert!(
        twice.is_empty(),
        "{} lines sent twice across reloads, e.g. {:?}",
        twice.len(),
        &twice[..twice.len().min(5)]
    );
    assert!(agent.terminate(Duration::from_secs(10)).success());
}
