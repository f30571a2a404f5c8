//! A bare service URL finds its API: the agent and `tailship push` ask once
//! at start whether the service serves Loki's `/loki/api/v1` or the spec's
//! `/logstore/api/v1` and say which; an explicit `api_prefix` always wins;
//! `query`, `labels` and `tail` fall back from one to the other (also with
//! `LOKI_ADDR`); a 404 names the other prefix. Against a real Loki (from
//! `../shared/peers`) and a `tailship receive` (the spec's store).

use crate::agent;
use crate::cli;
use crate::common;
use crate::loki;
use crate::mockhttp;

use std::io::{BufRead, BufReader, Write};
use std::process::{Output, Stdio};
use std::time::Duration;

use agent::{agent_config, query_all, Agent};
use cli::{ok, run, tailship};
use common::{wait_for, Receiver};
use loki::Loki;
use mockhttp::{Mock, Reply, Req};

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

/// The spec's log API (`/logstore/api/v1`): push, range and instant query,
/// label names and label values, nothing else.
fn in_specs_api(method: &str, path: &str) -> bool {
    let Some(rest) = path.strip_prefix("/logstore/api/v1/") else { return false };
    match method {
        "POST" => rest == "push",
        "GET" => {
            matches!(rest, "query_range" | "query" | "labels")
                || rest.strip_prefix("label/").and_then(|r| r.strip_suffix("/values")).is_some_and(|n| !n.contains('/'))
        }
        _ => false,
    }
}

/// A service that follows the spec and nothing more: its API answers, any
/// other request is 404 (or 405 on one of its paths), and every request is kept.
fn spec_service(req: &Req, _: usize) -> Reply {
    if in_specs_api(&req.method, &req.path) {
        return match req.path.rsplit('/').next() {
            Some("push") => Reply::empty(204),
            Some("query_range") => {
                Reply::ok(serde_json::json!({"status": "success", "data": {"resultType": "streams", "result": []}}))
            }
            Some("query") => {
                Reply::ok(serde_json::json!({"status": "success", "data": {"resultType": "vector", "result": []}}))
            }
            _ => Reply::ok(serde_json::json!({"status": "success", "data": []})),
        };
    }
    let known = ["push", "query_range", "query", "labels"].iter().any(|p| req.path == format!("/logstore/api/v1/{p}"));
    if known {
        Reply::text(405, "method not allowed")
    } else {
        Reply::text(404, "404 page not found")
    }
}

fn outside(requests: &[Req]) -> Vec<String> {
    requests.iter().filter(|r| !in_specs_api(&r.method, &r.path)).map(|r| format!("{} {}", r.method, r.path)).collect()
}

/// Measured: with no `api_prefix`, the agent asked `OPTIONS .../push` at
/// start, which the spec does not define; its log service answered 405 and
/// logged a request outside its API, twice per start. The question is now a
/// request the spec defines (label names), answered at once by its service.
#[test]
fn a_default_config_asks_the_specs_service_nothing_outside_its_api() {
    // A recording service following the spec: the agent (two starts) and `tailship push`.
    let rt = tokio::runtime::Runtime::new().unwrap();
    let mock = rt.block_on(Mock::start(spec_service));
    for start in 0..2 {
        // Uncompressed, to read the pushes; nothing else set.
        let dir = tempfile::tempdir().unwrap();
        let agent = agent_with_a_line(dir.path(), &mock.url, "compression = \"none\"", &format!("start {start}"));
        assert!(
            wait_for(Duration::from_secs(20), || mock
                .requests()
                .iter()
                .any(|r| r.method == "POST" && r.body.contains(&format!("start {start}")))),
            "{:?}\n{}",
            mock.requests(),
            agent.stderr_text()
        );
        assert!(agent.stderr_text().contains("the service answers at /logstore/api/v1"), "{}", agent.stderr_text());
        assert!(agent.terminate(Duration::from_secs(20)).success());
    }
    let o = push_stdin(&["--url", &mock.url, "--label", "job=pushed"], "pushed\n");
    ok(&o);
    assert!(String::from_utf8_lossy(&o.stderr).contains("answers at /logstore/api/v1"), "{o:?}");
    let requests = mock.requests();
    assert_eq!(outside(&requests), Vec::<String>::new(), "requests outside the spec's API");
    let asked = requests.iter().filter(|r| r.method == "GET" && r.path == "/logstore/api/v1/labels").count();
    assert_eq!(asked, 3, "one question per start: {requests:?}");

    // `tailship receive`, the spec's service as this project implements it: it counts such requests.
    let store = Receiver::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let agent = agent_with_a_line(dir.path(), &store.base, "", "to the store");
    assert!(
        wait_for(Duration::from_secs(20), || store.stats()["entries"].as_u64() == Some(1)),
        "{}",
        agent.stderr_text()
    );
    assert!(agent.terminate(Duration::from_secs(20)).success());
    ok(&push_stdin(&["--url", &store.base, "--label", "job=pushed"], "pushed\n"));
    let stats = store.stats();
    assert_eq!(stats["entries"].as_u64(), Some(2), "{stats}");
    assert_eq!(stats["outside_api"], serde_json::json!({}), "{stats}\n{}", store.stderr_text());
    assert!(!store.stderr_text().contains("outside the log API"), "{}", store.stderr_text());
}

/// A URL that names its prefix, as an `api_prefix` does, is not asked about at all.
#[test]
fn a_url_ending_in_a_known_prefix_is_not_asked_about() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let mock = rt.block_on(Mock::start(spec_service));
    let dir = tempfile::tempdir().unwrap();
    let url = format!("{}/logstore/api/v1", mock.url);
    let agent = agent_with_a_line(dir.path(), &url, "compression = \"none\"", "named");
    assert!(wait_for(Duration::from_secs(20), || mock.requests().iter().any(|r| r.body.contains("named"))));
    assert!(agent.terminate(Duration::from_secs(20)).success());
    ok(&push_stdin(&["--url", &url], "pushed\n"));
    let requests = mock.requests();
    assert!(requests.iter().all(|r| r.method == "POST" && r.path == "/logstore/api/v1/push"), "{requests:?}");
    // `check` shows the split.
    let cfg = dir.path().join("tailship.toml");
    let o = run(&["check", "--config", &cfg.display().to_string()], &[]);
    let text = ok(&o);
    assert!(
        text.contains(&format!("url = \"{}\"", mock.url)) && text.contains("api_prefix = \"/logstore/api/v1\""),
        "{text}"
    );
}

/// The question (label names) against a Loki with tenants: with the tenant
/// it answers 200, without one 401 (no org id); both say the route is
/// there, and the spec's prefix answers 404.
#[test]
fn against_a_real_loki_with_tenants_a_bare_url_finds_lokis_prefix_with_or_without_a_tenant() {
    let Some(loki) = Loki::start_tenants("") else { return };
    let o = push_stdin(&["--url", &loki.base, "--org-id", "team-a", "--label", "job=tenant"], "with a tenant\n");
    ok(&o);
    assert!(String::from_utf8_lossy(&o.stderr).contains("answers at /loki/api/v1"), "{o:?}");
    assert!(wait_for(Duration::from_secs(10), || loki.tenant_lines(Some("team-a"), r#"{job="tenant"}"#).len() == 1));
    // Without a tenant, Loki refuses the push itself (401), at the right prefix.
    let o = push_stdin(&["--url", &loki.base, "--label", "job=tenant"], "no tenant\n");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("answers at /loki/api/v1"), "{err}");
    assert!(err.contains("401") && err.contains("/loki/api/v1/push"), "{err}");
}

/// The Debian package's config set `api_prefix = "/logstore/api/v1"`: an
/// operator who edited only its `url` to point at a Loki got 404s and
/// shipped nothing. Without the key the agent asks the service.
#[test]
fn the_debian_config_with_only_its_url_edited_ships_to_a_real_loki() {
    let Some(loki) = Loki::start() else { return };
    let dir = tempfile::tempdir().unwrap();
    let logs = dir.path().join("log");
    std::fs::create_dir(&logs).unwrap();
    std::fs::write(logs.join("syslog"), "from the debian config\n").unwrap();
    let shipped = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/packaging/deb/tailship.toml")).unwrap();
    assert!(shipped.contains("url = \"http://127.0.0.1:3100\""), "{shipped}");
    // The operator's one edit; the rest only moves the host's paths into the test's directory.
    let text = shipped
        .replace("url = \"http://127.0.0.1:3100\"", &format!("url = \"{}\"", loki.base))
        .replace("/var/log/", &format!("{}/", logs.display()))
        .replace("/var/lib/tailship", &dir.path().display().to_string())
        .replace("127.0.0.1:9080", &format!("127.0.0.1:{}", agent::free_port()));
    let cfg = agent::write_file(dir.path(), "tailship.toml", &text);
    // Without journalctl on PATH the optional journal source is left out.
    let agent = Agent::start_with(&cfg, &[("PATH", "/nonexistent")]);
    let arrived = wait_for(Duration::from_secs(30), || {
        loki.lines(r#"{job="varlogs"}"#).contains(&"from the debian config".to_string())
    });
    assert!(arrived, "{}", agent.stderr_text());
    let log = agent.stderr_text();
    assert!(log.contains("the service answers at /loki/api/v1"), "{log}");
    assert!(!log.contains("404"), "{log}");
    assert!(agent.terminate(Duration::from_secs(15)).success());
}
