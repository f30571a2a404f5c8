//! A wrong URL or a wrong password never loses a line, and no secret leaks:
//! a Promtail-style full push URL works; 401, 403, 404 and other refusals that
//! say the agent is misconfigured keep the data waiting on disk, retry, turn
//! `/ready` 503 naming the status and URL, and log once; fixing the config and
//! sending SIGHUP delivers every line. Passwords in URLs and secrets echoed by
//! a service never reach logs or `check` output.

use crate::agent;
use crate::common;
use crate::mockhttp;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use agent::{agent_config, Agent};
use common::{assert_no_piece, bin, get, wait_for, Receiver};
use mockhttp::{Mock, Reply};

fn stored(r: &Receiver) -> u64 {
    r.stats()["entries"].as_u64().unwrap_or(0)
}

fn lines(n: usize) -> String {
    (0..n).map(|i| format!("line {i}\n")).collect()
}

/// `/ready`'s status and text, once the endpoint answers.
fn ready(agent: &Agent) -> (u16, String) {
    assert!(wait_for(Duration::from_secs(10), || !agent.metrics().is_empty()), "no endpoint");
    let r = get(&format!("http://{}/ready", agent.metrics_addr.clone().unwrap()));
    (r.status, r.text())
}

/// An agent at debug level shipping 5 lines to `url` with `token` as its
/// bearer token, and its temp dir.
fn debug_agent_with_token(url: &str, token: &str) -> (tempfile::TempDir, Agent) {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("app.log");
    std::fs::write(&log, lines(5)).unwrap();
    let cfg = agent_config(dir.path(), url, &log.display().to_string(), &format!("bearer_token = \"{token}\""), "");
    (dir, Agent::start_with(&cfg, &[("RUST_LOG", "debug")]))
}

#[test]
fn a_promtail_style_full_push_url_delivers() {
    let r = Receiver::start(&["--api-prefix", "/loki/api/v1"]);
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("app.log");
    std::fs::write(&log, lines(100)).unwrap();
    let url = format!("{}/loki/api/v1/push", r.base);
    let cfg = agent_config(dir.path(), &url, &log.display().to_string(), "", "");
    let out = Command::new(bin()).args(["check", "--config"]).arg(&cfg).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(text.contains(&format!("url = \"{}\"", r.base)), "{text}");
    assert!(text.contains("api_prefix = \"/loki/api/v1\""), "{text}");
    let agent = Agent::start(&cfg);
    assert!(wait_for(Duration::from_secs(20), || stored(&r) == 100), "{}", agent.stderr_text());
    assert!(agent.terminate(Duration::from_secs(30)).success());
}

/// Rewrites `cfg` with `from` replaced by `to`, then sends SIGHUP.
fn fix_and_reload(agent: &Agent, cfg: &Path, from: &str, to: &str) {
    let text = std::fs::read_to_string(cfg).unwrap();
    assert!(text.contains(from), "{text}");
    std::fs::write(cfg, text.replace(from, to)).unwrap();
    agent.signal(libc::SIGHUP);
}

#[test]
fn a_404_endpoint_keeps_every_line_until_sighup_fixes_the_url() {
    let r = Receiver::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("app.log");
    std::fs::write(&log, lines(100)).unwrap();
    let cfg = agent_config(dir.path(), &r.base, &log.display().to_string(), "api_prefix = \"/wrong/api/v1\"", "");
    let agent = Agent::start(&cfg);
    assert!(
        wait_for(Duration::from_secs(20), || {
            let (status, text) = ready(&agent);
            status == 503 && text.contains("404") && text.contains("/wrong/api/v1/push")
        }),
        "{:?}",
        ready(&agent)
    );
    // Retried, not dropped: nothing stored, nothing counted as dropped, the position not moved.
    assert!(wait_for(Duration::from_secs(10), || agent.metric("tailship_push_retries_total") >= 3.0));
    assert_eq!(stored(&r), 0);
    assert_eq!(agent.metric("tailship_lines_dropped_total"), 0.0);
    let positions = std::fs::read_to_string(dir.path().join("positions.json")).unwrap_or_default();
    assert!(!positions.contains("\"offset\": 890"), "{positions}");
    assert_eq!(agent.stderr_text().matches("refuses pushes").count(), 1, "logged once per status");

    fix_and_reload(&agent, &cfg, "api_prefix = \"/wrong/api/v1\"", "");
    assert!(wait_for(Duration::from_secs(20), || stored(&r) == 100), "{}", agent.stderr_text());
    assert!(wait_for(Duration::from_secs(10), || ready(&agent).0 == 200));
    assert!(agent.terminate(Duration::from_secs(30)).success());
}

/// A store that wants `shipper`/`right-horse-battery`, 50 lines in `app.log`,
/// and an agent config whose password file (returned) holds a wrong password.
fn wrong_password_setup(d: &Path) -> (Receiver, std::path::PathBuf, std::path::PathBuf) {
    std::fs::write(d.join("store-password"), "right-horse-battery\n").unwrap();
    let store_pw = d.join("store-password").display().to_string();
    let r = Receiver::start(&["--basic-auth-user", "shipper", "--basic-auth-password-file", &store_pw]);
    let agent_pw = d.join("agent-password");
    std::fs::write(&agent_pw, "wrong-horse-battery\n").unwrap();
    let log = d.join("app.log");
    std::fs::write(&log, lines(50)).unwrap();
    let auth = format!("basic_auth = {{ username = \"shipper\", password_file = \"{}\" }}", agent_pw.display());
    let cfg = agent_config(d, &r.base, &log.display().to_string(), &auth, "");
    (r, agent_pw, cfg)
}

#[test]
fn a_401_with_a_wrong_password_then_the_right_one_delivers_every_line() {
    let dir = tempfile::tempdir().unwrap();
    let (r, agent_pw, cfg) = wrong_password_setup(dir.path());
    let agent = Agent::start(&cfg);
    assert!(wait_for(Duration::from_secs(20), || {
        let (status, text) = ready(&agent);
        status == 503 && text.contains("401")
    }));
    assert_eq!(stored(&r), 0);
    std::fs::write(&agent_pw, "right-horse-battery\n").unwrap();
    agent.signal(libc::SIGHUP);
    assert!(wait_for(Duration::from_secs(20), || stored(&r) == 50), "{}", agent.stderr_text());
    let err = agent.stderr_text();
    assert!(!err.contains("horse-battery"), "a password in the logs: {err}");
    assert!(agent.terminate(Duration::from_secs(30)).success());
}

/// Found by an operator: with a wrong password fixed and SIGHUP sent, `/ready`
/// stayed "not ready ... 401" for 52 s, until the running backoff ran out (up to
/// `max_backoff`, 5 minutes). A reload now wakes batches waiting for a retry:
/// with a minute's backoff, the lines arrive within seconds of the SIGHUP, and
/// the recovery is logged.
#[test]
fn sighup_with_the_right_password_applies_at_once_not_after_the_backoff() {
    let dir = tempfile::tempdir().unwrap();
    let (r, agent_pw, cfg) = wrong_password_setup(dir.path());
    let text = std::fs::read_to_string(&cfg).unwrap().replace(
        "retry = { min_backoff = \"20ms\", max_backoff = \"500ms\" }",
        "retry = { min_backoff = \"60s\", max_backoff = \"5m\" }",
    );
    std::fs::write(&cfg, text).unwrap();
    let agent = Agent::start(&cfg);
    assert!(wait_for(Duration::from_secs(20), || {
        let (status, text) = ready(&agent);
        status == 503 && text.contains("401")
    }));
    // Now waiting a minute or more for the next try.
    std::fs::write(&agent_pw, "right-horse-battery\n").unwrap();
    agent.signal(libc::SIGHUP);
    assert!(wait_for(Duration::from_secs(15), || stored(&r) == 50), "{}", agent.stderr_text());
    assert!(wait_for(Duration::from_secs(5), || ready(&agent).0 == 200), "{:?}", ready(&agent));
    assert!(agent.stderr_text().contains("pushes succeed again"), "{}", agent.stderr_text());
    assert!(agent.terminate(Duration::from_secs(30)).success());
}

#[test]
fn a_password_in_the_url_never_appears_in_check_output_or_logs() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("app.log");
    std::fs::write(&log, lines(5)).unwrap();
    let port = agent::free_port();
    let url = format!("http://shipper:Hunter2Secret%21@127.0.0.1:{port}");
    let cfg = agent_config(dir.path(), &url, &log.display().to_string(), "", "");
    let out = Command::new(bin()).args(["check", "--config"]).arg(&cfg).output().unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{text}");
    assert!(!text.contains("Hunter2Secret"), "{text}");
    assert!(text.contains("<redacted>"), "{text}");
    // Nothing listens there: every attempt fails and is logged, at the most verbose level.
    let agent = Agent::start_with(&cfg, &[("RUST_LOG", "trace")]);
    assert!(wait_for(Duration::from_secs(20), || agent.metric("tailship_push_retries_total") >= 2.0));
    let (_, ready_text) = ready(&agent);
    let logs = agent.stderr_text();
    assert!(logs.contains("push failed"), "{logs}");
    for text in [&logs, &ready_text, &agent.metrics()] {
        assert!(!text.contains("Hunter2Secret"), "the URL's password leaked: {text}");
    }
    assert!(agent.terminate(Duration::from_secs(30)).success());
}

#[test]
fn a_token_echoed_by_the_service_is_scrubbed_from_logs_and_ready() {
    const TOKEN: &str = "TOKEN_9f8e7d6c5b4a";
    let rt = tokio::runtime::Runtime::new().unwrap();
    let mock = rt.block_on(Mock::start(|req, _| {
        let auth = req.header("authorization").unwrap_or("").to_string();
        Reply::text(401, &format!("bad credentials: {auth}"))
    }));
    let (_dir, agent) = debug_agent_with_token(&mock.url, TOKEN);
    assert!(wait_for(Duration::from_secs(20), || agent.stderr_text().contains("bad credentials")));
    assert!(mock.requests().iter().any(|r| r.header("authorization") == Some(&format!("Bearer {TOKEN}"))));
    let (status, ready_text) = ready(&agent);
    assert_eq!(status, 503);
    assert!(ready_text.contains("401"), "{ready_text}");
    for text in [agent.stderr_text(), ready_text] {
        assert!(!text.contains(TOKEN), "the token leaked: {text}");
        assert!(text.contains("Bearer <redacted>"), "{text}");
    }
    assert!(agent.terminate(Duration::from_secs(30)).success());
}

/// Measured: a service echoing the `Authorization` header in a 401 body past
/// its first KiB. The body was cut to 1 KiB before it was scrubbed: the cut
/// token matched no secret, and 39 of its 40 characters were in the log, on
/// `/ready` and in `/status.json`. Each answer here puts the cut at another
/// place in the token (39 characters of it before the cut, then 38, ... 8).
#[test]
fn a_token_echoed_across_the_cut_of_a_long_401_body_leaves_no_piece_anywhere() {
    const TOKEN: &str = "tok-CUT-0123456789abcdefghijklmnopqrstuv";
    assert_eq!(TOKEN.len(), 40);
    let rt = tokio::runtime::Runtime::new().unwrap();
    let mock = rt.block_on(Mock::start(|req, i| {
        let auth = req.header("authorization").unwrap_or("").to_string();
        // 1024 bytes are kept: the padding, "Bearer " and 39 - (i % 32) characters of the token.
        let pad = "x".repeat(1024 - "Bearer ".len() - 39 + i % 32);
        Reply::text(401, &format!("{pad}{auth} is not a valid credential for this tenant"))
    }));
    let (_dir, agent) = debug_agent_with_token(&mock.url, TOKEN);
    assert!(
        wait_for(Duration::from_secs(30), || mock.requests().len() >= 33 && agent.stderr_text().contains("401")),
        "{} requests: {}",
        mock.requests().len(),
        agent.stderr_text()
    );
    assert!(mock.requests().iter().any(|r| r.header("authorization") == Some(&format!("Bearer {TOKEN}"))));
    let (status, ready_text) = ready(&agent);
    assert_eq!(status, 503);
    assert!(ready_text.contains("401"), "{ready_text}");
    let status_json = get(&format!("http://{}/status.json", agent.metrics_addr.clone().unwrap())).text();
    assert!(status_json.contains("401"), "{status_json}");
    let log = agent.stderr_text();
    for (what, text) in [("the log", &log), ("/ready", &ready_text), ("/status.json", &status_json)] {
        assert_no_piece(what, text, TOKEN);
    }
    assert!(log.contains("Bearer <redacted>"), "{log}");
    assert!(agent.terminate(Duration::from_secs(30)).success());
}

/// `tailship push ARGS` with `input` on its standard input, which stays
/// open: the child and its standard input.
fn push_open(args: &[&str], input: &[u8]) -> (std::process::Child, std::process::ChildStdin) {
    let mut child = Command::new(bin())
        .arg("push")
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    std::io::Write::write_all(&mut stdin, input).unwrap();
    (child, stdin)
}

/// All a child that has ended wrote on its standard error.
fn stderr_of(child: &mut std::process::Child) -> String {
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
    err
}

/// `push --give-up-after` said "no push failed" when a push had failed and a
/// retry then succeeded (the success cleared the error it reported).
#[test]
fn give_up_after_names_an_earlier_failure_that_a_retry_got_past() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let mock =
        rt.block_on(Mock::start(|_, i| if i == 0 { Reply::text(503, "busy, come back") } else { Reply::empty(204) }));
    // One line, then standard input stays open: the push is still reading when it gives up.
    let args = ["--url", mock.url.as_str(), "--api-prefix", "/logstore/api/v1", "--give-up-after", "3s", "-"];
    let (mut child, stdin) = push_open(&args, b"one line\n");
    let status = common::wait_exit(&mut child, Duration::from_secs(60));
    assert!(status.is_some());
    drop(stdin);
    let err = stderr_of(&mut child);
    assert_eq!(status.and_then(|s| s.code()), Some(1), "{err}");
    assert!(err.contains("1 lines acknowledged"), "{err}");
    assert!(err.contains("pushes were succeeding again, the last failure was") && err.contains("503"), "{err}");
    assert_eq!(mock.requests().len(), 2, "one 503, one retry");
}

/// Found by an operator: `seq 1 5 | timeout 10 tailship push - --url ...` with a
/// wrong password or prefix never ended (rc 124), logging that "lines wait on
/// disk", meaningless for stdin. A one-off command ends at once with exit 1
/// and the service's message for a refusal no retry cures.
#[test]
fn push_refused_with_401_or_404_exits_1_at_once_with_the_services_message() {
    let dir = tempfile::tempdir().unwrap();
    let pw = dir.path().join("store-password");
    std::fs::write(&pw, "right-horse-battery\n").unwrap();
    let r = Receiver::start(&["--basic-auth-user", "shipper", "--basic-auth-password-file", &pw.display().to_string()]);
    let wrong = dir.path().join("wrong");
    std::fs::write(&wrong, "wrong-horse-battery\n").unwrap();
    let right = pw.display().to_string();
    let cases: [(&[&str], &str); 2] = [
        (&["--username", "shipper", "--password-file", &wrong.display().to_string()], "401"),
        (&["--username", "shipper", "--password-file", &right, "--api-prefix", "/nowhere/api/v1"], "404"),
    ];
    for (args, status) in cases {
        // Five lines, and standard input stays open: the command must not wait for its end.
        let all: Vec<&str> = ["--url", r.base.as_str(), "-"].into_iter().chain(args.iter().copied()).collect();
        let (mut child, stdin) = push_open(&all, b"1\n2\n3\n4\n5\n");
        let code = common::wait_exit(&mut child, Duration::from_secs(15));
        assert!(code.is_some(), "tailship push did not end on a {status}");
        drop(stdin);
        let err = stderr_of(&mut child);
        assert_eq!(code.and_then(|s| s.code()), Some(1), "{err}");
        assert!(err.contains("refused the push") && err.contains(status), "{status}: {err}");
        assert!(!err.contains("wait on disk"), "{err}");
        assert!(!err.contains("horse-battery"), "a password in the output: {err}");
    }
    assert_eq!(stored(&r), 0);
}
