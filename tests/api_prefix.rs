//! A bare service URL finds its API: the agent and `tailship push` ask once
//! at start whether the service serves Loki's `/loki/api/v1` or the spec's
//! `/logstore/api/v1` and say which; an explicit `api_prefix` always wins;
//! `query`, `labels` and `tail` fall back from one to the other (also with
//! `LOKI_ADDR`); a 404 names the other prefix. Against a real Loki (from
//! `../shared/peers`) and a `tailship receive` (the spec's store).

#[path = "common/agent.rs"]
mod agent;
#[path = "common/cli.rs"]
mod cli;
mod common;
#[path = "common/loki.rs"]
mod loki;

use std::io::{BufRead, BufReader, Write};
use std::process::{Output, Stdio};
use std::time::Duration;

use agent::{agent_config, query_all, Agent};
use cli::{ok, run, tailship};
use common::{wait_for, Receiver};
use loki::Loki;

/// `tailship push -` of `lines` with `args`.
fn push_stdin(args: &[&str], lines: &str) -> Output {
    let mut child = tailship(&[&["push", "-"][..], args].concat(), &[])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn tailship push");
    child.stdin.take().unwrap().write_all(lines.as_bytes()).unwrap();
    child.wait_with_output().unwrap()
}

/// A file source with one line under `dir`, shipped to `url` with `client_extra`.
fn agent_with_a_line(dir: &std::path::Path, url: &str, client_extra: &str, line: &str) -> Agent {
    let logs = dir.join("logs");
    std::fs::create_dir_all(&logs).unwrap();
    std::fs::write(logs.join("app.log"), format!("{line}\n")).unwrap();
    Agent::start(&agent_config(dir, url, &format!("{}/*.log", logs.display()), client_extra, ""))
}

/// `tailship tail QUERY` with `args` and `env` until it prints `want` (or 30 s pass).
fn tail_until(args: &[&str], env: &[(&str, &str)], want: &str) -> String {
    let mut child = tailship(&[&["tail", r#"{job="test"}"#, "--since", "1h"][..], args].concat(), env)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn tailship tail");
    let out = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut seen = String::new();
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while let Some(left) = deadline.checked_duration_since(std::time::Instant::now()) {
        match rx.recv_timeout(left) {
            Ok(line) => {
                seen.push_str(&line);
                seen.push('\n');
                if line.contains(want) {
                    break;
                }
            }
            Err(_) => break,
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    seen
}

#[test]
fn against_a_real_loki_a_bare_url_finds_lokis_prefix_everywhere() {
    let Some(loki) = Loki::start() else { return };
    let dir = tempfile::tempdir().unwrap();
    // The agent: asks, says which, ships.
    let agent = agent_with_a_line(dir.path(), &loki.base, "", "from the agent");
    assert!(
        wait_for(Duration::from_secs(30), || loki.lines(r#"{job="test"}"#).contains(&"from the agent".to_string())),
        "{}",
        agent.stderr_text()
    );
    let log = agent.stderr_text();
    assert!(log.contains("the service answers at /loki/api/v1"), "{log}");
    assert!(!log.contains("refuses pushes"), "{log}");
    // `tailship push` with the URL alone.
    let o = push_stdin(&["--url", &loki.base, "--label", "job=pushed"], "pushed one\npushed two\n");
    ok(&o);
    assert!(String::from_utf8_lossy(&o.stderr).contains("answers at /loki/api/v1"), "{o:?}");
    assert!(wait_for(Duration::from_secs(10), || loki.lines(r#"{job="pushed"}"#).len() == 2));
    // query, labels and tail fall back from the spec's prefix to Loki's, quietly.
    let o = run(&["labels", "--url", &loki.base], &[]);
    assert!(ok(&o).contains("job"), "{o:?}");
    assert!(!String::from_utf8_lossy(&o.stderr).contains("404"), "{o:?}");
    let o = run(&["query", r#"{job="pushed"}"#, "--url", &loki.base, "--since", "1h", "--output", "raw"], &[]);
    assert!(ok(&o).contains("pushed two"), "{o:?}");
    let seen = tail_until(&["--url", &loki.base], &[], "from the agent");
    assert!(seen.contains("from the agent"), "{seen}");
    // With LOKI_ADDR, Loki's prefix first.
    let o = run(&["labels", "job"], &[("LOKI_ADDR", &loki.base)]);
    assert!(ok(&o).contains("pushed"), "{o:?}");
    // An explicit prefix wins, and its 404 names Loki's.
    let o = push_stdin(&["--url", &loki.base, "--api-prefix", "/logstore/api/v1"], "never\n");
    assert_eq!(o.status.code(), Some(1), "{o:?}");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("404") && err.contains("set --api-prefix /loki/api/v1"), "{err}");
    assert!(!err.contains("the service answers at"), "an explicit prefix is not checked: {err}");
}

#[test]
fn against_tailship_receive_a_bare_url_finds_the_specs_prefix() {
    let store = Receiver::start(&["--max-query-limit", "1000000"]);
    let dir = tempfile::tempdir().unwrap();
    let agent = agent_with_a_line(dir.path(), &store.base, "", "to the store");
    assert!(wait_for(Duration::from_secs(20), || !query_all(&store, r#"{job="test"}"#, None).is_empty()));
    assert!(agent.stderr_text().contains("the service answers at /logstore/api/v1"), "{}", agent.stderr_text());
    let o = push_stdin(&["--url", &store.base, "--label", "job=pushed"], "pushed\n");
    ok(&o);
    assert!(String::from_utf8_lossy(&o.stderr).contains("answers at /logstore/api/v1"), "{o:?}");
    // LOKI_ADDR names a Loki, yet this is the spec's store: labels, query and tail fall back to its prefix.
    let env = [("LOKI_ADDR", store.base.as_str())];
    let o = run(&["labels", "job"], &env);
    assert!(ok(&o).contains("pushed"), "{o:?}");
    let o = run(&["query", r#"{job="test"}"#, "--since", "1h", "--output", "raw"], &env);
    assert!(ok(&o).contains("to the store"), "{o:?}");
    let seen = tail_until(&[], &env, "to the store");
    assert!(seen.contains("to the store"), "{seen}");
    // A prefix given on purpose is not second-guessed; the 404 names the spec's.
    let o = run(&["labels", "--url", &store.base, "--api-prefix", "/loki/api/v1"], &[]);
    assert_eq!(o.status.code(), Some(1), "{o:?}");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("404") && err.contains("--api-prefix /logstore/api/v1"), "{err}");
}

#[test]
fn an_explicit_api_prefix_wins_and_the_agents_404_names_the_other_one() {
    let store = Receiver::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let agent = agent_with_a_line(dir.path(), &store.base, "api_prefix = \"/loki/api/v1\"", "never stored");
    let mut log = String::new();
    assert!(wait_for(Duration::from_secs(20), || {
        log = agent.stderr_text();
        log.contains("refuses pushes")
    }));
    assert!(log.contains("a Loki") || log.contains("the spec's log service uses /logstore/api/v1"), "{log}");
    assert!(log.contains("set client.api_prefix /logstore/api/v1"), "{log}");
    assert!(!log.contains("the service answers at"), "an explicit prefix is not checked: {log}");
}

#[test]
fn a_url_where_neither_prefix_answers_is_said_at_start() {
    // A `tailship receive` serving another prefix: both known prefixes 404.
    let store = Receiver::start(&["--api-prefix", "/custom/api"]);
    let dir = tempfile::tempdir().unwrap();
    let agent = agent_with_a_line(dir.path(), &store.base, "", "never stored");
    let mut log = String::new();
    assert!(wait_for(Duration::from_secs(20), || {
        log = agent.stderr_text();
        log.contains("neither /logstore/api/v1 nor /loki/api/v1 answers")
    }));
    let o = push_stdin(&["--url", &store.base], "never\n");
    assert_eq!(o.status.code(), Some(1), "{o:?}");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("neither /logstore/api/v1 nor /loki/api/v1 answers"), "{err}");
}
