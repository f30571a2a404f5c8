//! Exactly once as the service shows it: after a kill -9, lines that were in
//! flight go again with the timestamps they first had (or are found stored
//! and skipped), and acknowledged ones are not sent again, so `tailship
//! receive`, which drops an entry sent again by Loki's rule and no more,
//! shows every line once.
//!
//! The kill -9 loops run `EXACTLY_ONCE_SECS` (default 20) of writing; the
//! figures in the book (book/src/testing/index.md) come from
//! `EXACTLY_ONCE_SECS=36 cargo test --release --test it exactly_once::kill_9_loop -- --nocapture --test-threads 1`.

use crate::agent;
use crate::common;

use std::collections::HashMap;
use std::io::Write;
use std::path::Path;
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
    // Anything sent twice would have arrived by the time the agent is idle
    // (each push is answered 3 s after it is stored: a slow machine takes a while).
    assert!(wait_for(Duration::from_secs(120), || settled(&agent)), "{}", agent.metrics());
    let metrics = agent.metrics();
    assert!(agent.terminate(Duration::from_secs(20)).success());
    (counts(&r), metrics)
}

/// The agent answers, read lines, and every one it read was acknowledged,
/// skipped or found stored. (Waiting for an empty queue alone passed before
/// the agent answered at all, as a metric it does not show reads 0: a run
/// under load (2026-11-24) then found nothing read again.)
fn settled(agent: &Agent) -> bool {
    let m = agent.metrics();
    let read = agent::metric_value(&m, "tailship_source_lines_total");
    let handled = agent::metric_value(&m, "tailship_push_lines_total")
        + agent::metric_value(&m, "tailship_push_lines_found_stored_total")
        + replayed(&m, "skipped")
        + replayed(&m, "reconciled");
    read > 0.0 && agent::metric_value(&m, "tailship_queue_lines") == 0.0 && handled >= read
}

fn replayed(metrics: &str, outcome: &str) -> f64 {
    metrics
        .lines()
        .filter(|l| l.starts_with("tailship_lines_replayed_total{") && l.contains(&format!("outcome=\"{outcome}\"")))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .fold(0.0, |a, b| a + b)
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

/// In a fresh clone's CI run (2026-11-24) the agent's queue did not empty
/// after every line had arrived. The likely cause, fixed: lines the lookup
/// found were taken out of their chunk without leaving the queue's line
/// count, so `tailship_queue_lines` could stay above 0.
#[test]
fn lines_stored_before_a_kill_9_are_found_by_a_query_and_not_sent_again() {
    // 1.5 MiB of lines: beyond the head block, so only a lookup keeps them once.
    let (c, metrics) = kill_while_answers_are_held("auto", 6000, 250);
    let twice = c.values().filter(|n| **n > 1).count();
    assert_eq!(twice, 0, "lines shown twice");
    assert!(replayed(&metrics, "reconciled") > 0.0, "nothing reconciled:\n{metrics}");
}

/// A push the service stored and never answered in time (it answers 3 s
/// after storing; the agent waits 1 s) is looked up before it is sent again,
/// so every attempt after the first finds its lines stored. Before, each
/// retry sent the batch as it was, and lines beyond the stream's head block
/// were stored twice.
#[test]
fn a_push_whose_answer_was_lost_is_looked_up_and_not_sent_again() {
    let r = Receiver::start(&["--max-query-limit", "1000000", "--answer-after-store", "3s"]);
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("app.log");
    let n = 6000;
    std::fs::write(&log, lines(n, 250)).unwrap();
    let cfg = agent_config(dir.path(), &r.base, &log.display().to_string(), "timeout = \"1s\"", "");
    let agent = Agent::start(&cfg);
    assert!(
        wait_for(Duration::from_secs(90), || agent.metric("tailship_queue_lines") == 0.0 && counts(&r).len() == n),
        "{} of {n} lines arrived:\n{}",
        counts(&r).len(),
        agent.stderr_text()
    );
    let found = agent.metric("tailship_push_lines_found_stored_total");
    assert!(agent.terminate(Duration::from_secs(20)).success());
    let twice = counts(&r).values().filter(|n| **n > 1).count();
    assert_eq!(twice, 0, "lines shown twice");
    assert!(found >= n as f64, "{found} lines found stored");
}

/// In CI (2026-11-24) the kill -9 loop showed 1,396 lines twice with new
/// timestamps, and a hunt under load 407 (`a 11650..=12056`, the lines in
/// flight when the first writer copytruncated). Three faults, each of which
/// fails this test:
/// - logrotate truncated the file while a restarted agent read its lines in
///   flight at the kill again: the rest of the old content was read from the
///   copy, but the records of its lines stayed with the truncated file's
///   tailer and were dropped, so they went again as read, with new
///   timestamps, and no lookup found them (5,495 lines twice);
/// - a chunk split over two batches, killed before the second was sealed,
///   left a record with fewer lines than the chunk: it did not fit when read
///   again and the whole replay was given up (949 twice);
/// - a read cut at a record's end was taken for the file's end: the copy's
///   turn ended there and, idle while the queue was full, it was closed half
///   read (2,563 lines never arrived).
#[test]
fn a_copytruncate_while_lines_in_flight_are_read_again_keeps_their_timestamps() {
    let r = Receiver::start(&["--max-query-limit", "1000000", "--answer-after-store", "3s"]);
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("app.log");
    let n = 12_000;
    std::fs::write(&log, lines(n, 250)).unwrap();
    let cfg = agent_config(dir.path(), &r.base, &log.display().to_string(), "timeout = \"30s\"", "");
    let text = std::fs::read_to_string(&cfg).unwrap();
    let with_in_flight = |k: usize, queue: &str| {
        let t = text.replace("max_wait = \"100ms\" }", &format!("max_wait = \"100ms\", max_in_flight = {k} }}"));
        std::fs::write(&cfg, format!("{t}[queue]\nmax_bytes = \"{queue}\"\n")).unwrap();
    };
    // Eight batches of 256 KiB at once, stored and not answered at the kill.
    with_in_flight(8, "16MiB");
    let agent = Agent::start(&cfg);
    assert!(wait_for(Duration::from_secs(30), || stored(&r) >= 6000), "nothing stored");
    agent.kill9();
    // Restarted with one batch in flight and the service hung: the agent is
    // still reading those lines again when the file is truncated.
    with_in_flight(1, "256KiB");
    unsafe { libc::kill(r.pid() as i32, libc::SIGSTOP) };
    let agent = Agent::start(&cfg);
    let reading = wait_for(Duration::from_secs(30), || agent.metric("tailship_queue_lines") > 0.0);
    // logrotate's copytruncate, nothing written between copy and truncate.
    std::fs::copy(&log, dir.path().join("app.log.1")).unwrap();
    std::fs::OpenOptions::new().write(true).open(&log).unwrap().set_len(0).unwrap();
    std::fs::write(&log, "after the copytruncate\n").unwrap();
    unsafe { libc::kill(r.pid() as i32, libc::SIGCONT) };
    assert!(reading, "the restarted agent read nothing:\n{}", agent.stderr_text());
    assert!(
        wait_for(Duration::from_secs(120), || counts(&r).len() == n + 1 && agent.metric("tailship_queue_lines") == 0.0),
        "{} of {} lines arrived:\n{}\n{}",
        counts(&r).len(),
        n + 1,
        agent.stderr_text(),
        agent
            .metrics()
            .lines()
            .filter(|l| l.starts_with("tailship_") && !l.contains("bucket"))
            .collect::<Vec<_>>()
            .join("\n")
    );
    let text = agent.stderr_text();
    assert!(text.contains("reading the rest of its old content from the copy"), "{text}");
    assert!(agent.terminate(Duration::from_secs(20)).success());
    let twice = counts(&r).values().filter(|n| **n > 1).count();
    assert_eq!(twice, 0, "lines shown twice:\n{text}");
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

// ---------------------------------------------------------------------------
// The kill -9 loop

/// Lines per second each writer appends.
const RATE: u64 = 2_000;
const WRITERS: [&str; 3] = ["a", "b", "c"];

/// xorshift64*, seeded: the kill intervals and service pauses.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d) % n.max(1)
    }
    fn millis(&mut self, lo: u64, hi: u64) -> Duration {
        Duration::from_millis(lo + self.below(hi - lo + 1))
    }
}

/// Appends `name NNNNNNNNN ...` lines to `dir/name.log` at [`RATE`] for
/// `secs`, renaming it away every 7 s (the first writer copytruncates its
/// first rotation instead, writing nothing between copy and truncate, as
/// logrotate's copy is made); returns how many lines it wrote.
fn write_rotating(dir: &Path, name: &str, secs: u64, copytruncate_first: bool) -> u64 {
    let log = dir.join(format!("{name}.log"));
    let open = || std::fs::OpenOptions::new().create(true).append(true).open(&log).unwrap();
    let mut f = open();
    let start = std::time::Instant::now();
    let mut next_rotation = start + Duration::from_secs(7);
    let (mut seq, mut rotations) = (0u64, 0u32);
    let mut burst = String::new();
    while start.elapsed() < Duration::from_secs(secs) {
        let due = start.elapsed().as_micros() as u64 * RATE / 1_000_000;
        burst.clear();
        while seq < due {
            burst.push_str(&format!("{name} {seq:09} payload of the line\n"));
            seq += 1;
        }
        f.write_all(burst.as_bytes()).unwrap();
        if std::time::Instant::now() >= next_rotation {
            next_rotation += Duration::from_secs(7);
            rotations += 1;
            if copytruncate_first && rotations == 1 {
                std::fs::copy(&log, dir.join(format!("{name}.log.ct{rotations}"))).unwrap();
                f.set_len(0).unwrap();
            } else {
                std::fs::rename(&log, dir.join(format!("{name}.log.{rotations}"))).unwrap();
                f = open();
            }
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    seq
}

/// What arrived, line by line: (missing, shown twice, shown twice with
/// another timestamp than the first copy's).
fn ledger(svc: &Service, written: &[u64]) -> (u64, u64, u64) {
    let (missing, twice, retimed, _) = ledger_with_stretches(svc, written);
    (missing, twice, retimed)
}

/// [`ledger`], and the stretches of lines missing or shown twice, as
/// `writer from..=to kind`, to tell a failure's cause.
fn ledger_with_stretches(svc: &Service, written: &[u64]) -> (u64, u64, u64, Vec<String>) {
    let mut seen: HashMap<String, Vec<i128>> = HashMap::new();
    for (line, ts) in svc.entries() {
        seen.entry(line).or_default().push(ts);
    }
    let (mut missing, mut twice, mut retimed) = (0, 0, 0);
    let mut stretches: Vec<(String, u64, u64, &str)> = Vec::new();
    for (w, n) in WRITERS.iter().zip(written) {
        for seq in 0..*n {
            let kind = match seen.get(&format!("{w} {seq:09} payload of the line")) {
                None => {
                    missing += 1;
                    "missing"
                }
                Some(ts) if ts.len() > 1 => {
                    twice += 1;
                    if ts.iter().any(|t| *t != ts[0]) {
                        retimed += 1;
                        "twice, retimed"
                    } else {
                        "twice"
                    }
                }
                Some(_) => continue,
            };
            match stretches.last_mut() {
                Some((lw, _, to, k)) if lw == w && *to + 1 == seq && *k == kind => *to = seq,
                _ => stretches.push((w.to_string(), seq, seq, kind)),
            }
        }
    }
    let stretches = stretches.into_iter().map(|(w, from, to, k)| format!("{w} {from}..={to} {k}")).collect();
    (missing, twice, retimed, stretches)
}

/// What an agent said about lines it read again after a kill (a replay
/// stopped early sends the rest as read, with new timestamps) and about
/// rotations and truncations.
fn replay_notes(stderr: &str) -> Vec<String> {
    stderr
        .lines()
        .filter(|l| {
            ["sent as read", "read again", "truncated", "rotated", "generation", "shorter than"]
                .iter()
                .any(|k| l.contains(k))
        })
        .map(str::to_string)
        .collect()
}

fn chaos_secs() -> u64 {
    std::env::var("EXACTLY_ONCE_SECS").ok().and_then(|s| s.parse().ok()).unwrap_or(20)
}

/// What happens to the service during a kill -9 loop, now and then.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Disturb {
    Nothing,
    /// Stopped with SIGSTOP for up to 1.5 s (every connection hangs).
    Stall,
    /// Stopped (every connection dropped) and started again on the same port
    /// after up to 1.5 s, its data kept, as a service restarted.
    Restart,
}

/// The log service of a kill -9 loop: `tailship receive`, or (to be
/// restarted with its data kept, which the memory store cannot) the same
/// store served in the test, one runtime per "process".
enum Service {
    Process(Receiver),
    InTest { store: tailship::receive::EmbeddedStore, addr: String, rt: Option<tokio::runtime::Runtime> },
}

impl Service {
    fn start(disturb: Disturb, answer_after: &str) -> Service {
        if disturb != Disturb::Restart {
            return Service::Process(Receiver::start(&[
                "--max-query-limit",
                "10000000",
                "--max-entries",
                "10000000",
                "--answer-after-store",
                answer_after,
            ]));
        }
        let mut opts = tailship::receive::ReceiveOptions {
            max_entries: 10_000_000,
            max_query_limit: 10_000_000,
            ..Default::default()
        };
        opts.faults.answer_after_store = humantime::parse_duration(answer_after).unwrap_or_default();
        let addr = format!("127.0.0.1:{}", agent::free_port());
        let mut svc = Service::InTest { store: tailship::receive::EmbeddedStore::new(opts), addr, rt: None };
        svc.serve();
        svc
    }

    fn base(&self) -> String {
        match self {
            Service::Process(r) => r.base.clone(),
            Service::InTest { addr, .. } => format!("http://{addr}"),
        }
    }

    fn serve(&mut self) {
        let Service::InTest { store, addr, rt } = self else { return };
        let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
        let listener = runtime.block_on(async {
            let end = std::time::Instant::now() + Duration::from_secs(10);
            loop {
                match tokio::net::TcpListener::bind(addr.as_str()).await {
                    Ok(l) => return l,
                    Err(e) if std::time::Instant::now() < end => {
                        let _ = e;
                        tokio::time::sleep(Duration::from_millis(20)).await;
                    }
                    Err(e) => panic!("cannot bind the service on {addr}: {e}"),
                }
            }
        });
        let store = store.clone();
        runtime.spawn(async move { store.serve(listener, tokio_util::sync::CancellationToken::new()).await });
        *rt = Some(runtime);
    }

    /// Stalls or restarts the service for `pause`.
    fn disturb(&mut self, how: Disturb, pause: Duration) {
        match (how, &mut *self) {
            (Disturb::Stall, Service::Process(r)) => {
                unsafe { libc::kill(r.pid() as i32, libc::SIGSTOP) };
                std::thread::sleep(pause);
                unsafe { libc::kill(r.pid() as i32, libc::SIGCONT) };
            }
            (Disturb::Restart, Service::InTest { rt, .. }) => {
                if let Some(rt) = rt.take() {
                    rt.shutdown_background();
                }
                std::thread::sleep(pause);
                self.serve();
            }
            _ => std::thread::sleep(pause),
        }
    }

    /// Every stored line of the writers, with its timestamp.
    fn entries(&self) -> Vec<(String, i128)> {
        match self {
            Service::Process(r) => query_all(r, r#"{job="test"}"#, None).into_iter().map(|e| (e.line, e.ts)).collect(),
            Service::InTest { store, .. } => {
                let end = tailship::util::now_ns() as i64 + 3_600_000_000_000;
                let streams =
                    store.query_range(None, r#"{job="test"}"#, Some(0), Some(end), 100_000_000, true).unwrap();
                streams
                    .into_iter()
                    .flat_map(|s| s.values.into_iter().map(|(ts, line)| (line, i128::from(ts))))
                    .collect()
            }
        }
    }
}

/// Writers with rotation, the agent killed with -9 every 2 to 4 s and started
/// again at once, and the service disturbed as `disturb` says in half of the
/// agent's lives; returns the ledger.
fn kill_9_loop(reconcile: &str, disturb: Disturb) -> (u64, u64, u64, u64) {
    let secs = chaos_secs();
    let seed = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64 | 1;
    eprintln!("exactly once: {secs}s, reconcile {reconcile}, seed {seed}");
    let mut rng = Rng(seed);
    // Each push is answered 200 ms after it is stored: a kill often lands
    // while a stored batch waits for its answer.
    // (`EXACTLY_ONCE_ANSWER_AFTER=0` answers at once, as a local Loki does.)
    let answer_after = std::env::var("EXACTLY_ONCE_ANSWER_AFTER").unwrap_or_else(|_| "200ms".into());
    let mut svc = Service::start(disturb, &answer_after);
    let dir = tempfile::tempdir().unwrap();
    let logs = dir.path().join("logs");
    std::fs::create_dir(&logs).unwrap();
    let cfg = agent_config(
        dir.path(),
        &svc.base(),
        &format!("{}/*.log", logs.display()),
        &format!("reconcile = \"{reconcile}\"\ntimeout = \"2s\""),
        "",
    );
    let writers: Vec<_> = WRITERS
        .iter()
        .enumerate()
        .map(|(i, w)| {
            let (logs, w) = (logs.clone(), w.to_string());
            std::thread::spawn(move || write_rotating(&logs, &w, secs, i == 0))
        })
        .collect();
    let end = std::time::Instant::now() + Duration::from_secs(secs);
    let (mut kills, mut disturbed) = (0, 0);
    // Each life's lines read again (at its start), scraped just before its kill.
    let mut again = [0.0; 3];
    let outcomes = ["skipped", "resent", "reconciled"];
    let mut notes = Vec::new();
    while std::time::Instant::now() < end {
        let agent = Agent::start(&cfg);
        let life = rng.millis(2000, 4000);
        if disturb != Disturb::Nothing && rng.below(2) == 0 {
            let pause = rng.millis(300, 1500);
            std::thread::sleep(life / 2);
            svc.disturb(disturb, pause);
            disturbed += 1;
            std::thread::sleep(life.saturating_sub(life / 2 + pause));
        } else {
            std::thread::sleep(life);
        }
        let m = agent.metrics();
        for (a, o) in again.iter_mut().zip(outcomes) {
            *a += replayed(&m, o);
        }
        notes.extend(replay_notes(&agent.stderr_text()).into_iter().map(|l| format!("life {kills}: {l}")));
        agent.kill9();
        kills += 1;
    }
    let written: Vec<u64> = writers.into_iter().map(|w| w.join().unwrap()).collect();
    let total: u64 = written.iter().sum();
    let agent = Agent::start(&cfg);
    let arrived = wait_for(Duration::from_secs(90), || ledger(&svc, &written).0 == 0);
    assert!(wait_for(Duration::from_secs(30), || agent.metric("tailship_queue_lines") == 0.0));
    let (missing, twice, retimed, stretches) = ledger_with_stretches(&svc, &written);
    let m = agent.metrics();
    for (a, o) in again.iter_mut().zip(outcomes) {
        *a += replayed(&m, o);
    }
    eprintln!(
        "exactly once: {total} lines, {kills} kills, service {disturb:?} {disturbed} times: {missing} missing, {twice} shown twice ({retimed} with another \
         timestamp); read again after a kill: {} skipped (delivered), {} resent, {} reconciled",
        again[0], again[1], again[2]
    );
    notes.extend(replay_notes(&agent.stderr_text()).into_iter().map(|l| format!("last life: {l}")));
    if missing + twice > 0 {
        eprintln!("stretches:\n  {}\nwhat the agents said:\n  {}", stretches.join("\n  "), notes.join("\n  "));
    }
    assert!(agent.terminate(Duration::from_secs(20)).success());
    assert!(arrived, "{missing} of {total} lines never arrived");
    (total, missing, twice, retimed)
}

#[test]
fn a_kill_9_loop_under_rotation_shows_every_line_once() {
    let (_, missing, twice, _) = kill_9_loop("auto", Disturb::Nothing);
    assert_eq!((missing, twice), (0, 0), "(missing, shown twice)");
}

#[test]
fn a_kill_9_loop_while_the_service_stalls_shows_every_line_once() {
    let (_, missing, twice, _) = kill_9_loop("auto", Disturb::Stall);
    assert_eq!((missing, twice), (0, 0), "(missing, shown twice)");
}

/// A push the service stored but whose answer was lost when it restarted
/// (every connection dropped) was sent again as it was; the service drops
/// that copy only within the stream's head block, and a retry after the
/// restart and the backoff came later than that: a full run (2026-11-24)
/// showed 1,210 of 119,990 lines twice. Now the push is looked up first
/// (`client::lookup`), and while the service cannot be reached the lookup
/// waits with the push instead of giving up after a few tries (with that,
/// one run still showed 794 twice).
#[test]
fn a_kill_9_loop_while_the_service_restarts_shows_every_line_once() {
    let (_, missing, twice, _) = kill_9_loop("auto", Disturb::Restart);
    assert_eq!((missing, twice), (0, 0), "(missing, shown twice)");
}

#[test]
fn with_reconcile_off_a_kill_9_loop_sends_lines_again_only_as_they_first_were() {
    let (_, missing, _, retimed) = kill_9_loop("off", Disturb::Nothing);
    assert_eq!((missing, retimed), (0, 0), "(missing, sent again with another timestamp)");
}
