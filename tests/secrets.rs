//! Secrets never leave the agent except to the services they are for: a
//! basic-auth password, a bearer token, webhook URLs (their path holds the
//! integration key) and an annotations token are searched for in every line
//! the agent logs at `debug` and `trace`, in `/metrics`, and in the output of
//! `check` and `alert test`, with pushes, webhooks and annotations that fail
//! as well as ones that succeed (error paths are where secrets leak).

use crate::agent;
use crate::common;
use crate::mockhttp;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use agent::{agent_config, file_source, Agent, AgentToml};
use common::{assert_no_piece, base64, bin, get, wait_for, Receiver};
use mockhttp::{Mock, Reply};

const PASSWORD: &str = "pw-S3CRET-basic-7f3a9";
const TOKEN: &str = "tok-S3CRET-bearer-91c2e";
const HOOK_KEY: &str = "hook-S3CRET-key-55d1b";
const WRONG_HOOK_KEY: &str = "hook-S3CRET-wrong-0d2c4";
const ANNOTATIONS_TOKEN: &str = "sa-S3CRET-annotations-e81f";

/// Every secret of this file, and the base64 of the basic-auth pair (as it
/// travels in the `Authorization` header).
fn secrets() -> Vec<String> {
    let mut s: Vec<String> =
        [PASSWORD, TOKEN, HOOK_KEY, WRONG_HOOK_KEY, ANNOTATIONS_TOKEN].iter().map(|s| s.to_string()).collect();
    s.push(base64(&format!("123456:{PASSWORD}")));
    s
}

fn assert_clean(what: &str, text: &str) {
    for s in secrets() {
        assert!(!text.contains(&s), "{what} shows the secret {s}:\n{text}");
    }
    // Loose pieces too: the part after each prefix must not appear either.
    for piece in ["S3CRET-basic", "S3CRET-bearer", "S3CRET-key", "S3CRET-wrong", "S3CRET-annotations"] {
        assert!(!text.contains(piece), "{what} shows part of a secret ({piece}):\n{text}");
    }
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.display().to_string()
}

/// A config with two alert rules (one webhook accepted, one refused with 403),
/// annotations that fail, and `auth` as the client's credentials.
fn config(dir: &Path, r: &Receiver, auth: &str) -> std::path::PathBuf {
    let hook = write(dir, "hook-url", &format!("{}/integrations/v1/formatted_webhook/{HOOK_KEY}/\n", r.base));
    let annotations_token = write(dir, "sa-token", ANNOTATIONS_TOKEN);
    std::fs::write(dir.join("a.log"), "INFO starting\nERROR boom one\nERROR boom two\n").unwrap();
    let alerts = format!(
        r#"[[alerts]]
name = "accepted"
selector = {{ job = "test" }}
match = "ERROR"
webhook_url_file = "{hook}"
group_interval = "200ms"
annotations = {{ url = "{url}/nothing-here", token_file = "{annotations_token}" }}
[[alerts]]
name = "refused"
selector = {{ job = "test" }}
match = "ERROR"
webhook_url = "${{WRONG_HOOK_URL}}"
group_interval = "200ms"
"#,
        url = r.base,
    );
    let client = format!("{auth}\nretry = {{ min_backoff = \"20ms\", max_backoff = \"200ms\" }}");
    let toml = AgentToml::new(dir, "5s").client(&r.base, &client).then(&file_source(dir, "test", "200ms"));
    toml.then(&alerts).write("tailship.toml")
}

fn wrong_hook_url(r: &Receiver) -> String {
    format!("{}/integrations/v1/formatted_webhook/{WRONG_HOOK_KEY}/", r.base)
}

/// Runs `check` and `alert test` on the config and the agent at `level` until
/// lines are pushed, both alerts tried and the pushes' failures retried;
/// returns everything they printed and served.
fn run_everything(cfg: &Path, r: &Receiver, level: &str) -> Vec<(String, String)> {
    let env = [("WRONG_HOOK_URL", wrong_hook_url(r))];
    // Each round ships the file again from its start.
    let _ = std::fs::remove_file(cfg.parent().unwrap().join("positions.json"));
    let mut out = Vec::new();
    for args in [vec!["check", "--config"], vec!["alert", "test", "--config"]] {
        let o = Command::new(bin()).args(&args).arg(cfg).env("RUST_LOG", level).envs(env.clone()).output().unwrap();
        let text = format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
        out.push((args.join(" "), text));
    }
    let agent = Agent::start_with(cfg, &[("RUST_LOG", level), ("WRONG_HOOK_URL", &wrong_hook_url(r))]);
    let delivered = wait_for(Duration::from_secs(30), || {
        let m = agent.metrics();
        agent::metric_value(&m, "tailship_push_lines_total") >= 3.0
            && agent::metric_value(&m, "tailship_alerts_sent_total") >= 1.0
            && agent::metric_value(&m, "tailship_alert_delivery_failures_total") >= 1.0
    });
    assert!(delivered, "the agent did not push and alert: {}\n{}", agent.stderr_text(), agent.metrics());
    out.push(("/metrics".into(), agent.metrics()));
    let log = agent.stderr_text();
    assert!(agent.terminate(Duration::from_secs(15)).success());
    out.push((format!("agent log at {level}"), log));
    out
}

#[test]
fn basic_auth_password_webhook_keys_and_annotations_token_never_appear_in_logs_metrics_or_check_output() {
    let dir = tempfile::tempdir().unwrap();
    let pw = write(dir.path(), "pw", &format!("{PASSWORD}\n"));
    // The service fails the first pushes (retried) and knows only the right webhook key.
    let r = Receiver::start(&[
        "--basic-auth-user",
        "123456",
        "--basic-auth-password-file",
        &pw,
        "--webhook-key",
        HOOK_KEY,
        "--fail-first",
        "2",
        "--fail-status",
        "500",
    ]);
    let auth = format!("basic_auth = {{ username = \"123456\", password_file = \"{pw}\" }}");
    let cfg = config(dir.path(), &r, &auth);
    for level in ["debug", "trace"] {
        let outputs = run_everything(&cfg, &r, level);
        for (what, text) in &outputs {
            assert!(!text.is_empty(), "{what} printed nothing");
            eprintln!("--- {what}: {} lines, {} bytes", text.lines().count(), text.len());
            if std::env::var_os("SHOW_OUTPUT").is_some() {
                eprintln!("{text}");
            }
            assert_clean(what, text);
        }
        let log = &outputs.last().unwrap().1;
        assert!(log.contains("DEBUG"), "the log is at debug level: {log}");
    }
    assert!(r.stats()["requests"]["500"].as_u64() >= Some(2), "the failing pushes happened");
}

#[test]
fn bearer_token_never_appears_in_logs_metrics_or_check_output_even_when_refused() {
    let dir = tempfile::tempdir().unwrap();
    let tok = write(dir.path(), "token", TOKEN);
    // `tailship receive` takes basic auth only: a bearer token is refused
    // with 401 on every push (the agent keeps the lines, retries and logs),
    // which is the error path to check, and the alert rules run as in the
    // basic-auth test.
    let r = Receiver::start(&[
        "--basic-auth-user",
        "someone",
        "--basic-auth-password-file",
        &write(dir.path(), "server-pw", "server-side"),
        "--webhook-key",
        HOOK_KEY,
    ]);
    let cfg = config(dir.path(), &r, &format!("bearer_token_file = \"{tok}\""));
    let env = [("WRONG_HOOK_URL", wrong_hook_url(&r))];
    let check = Command::new(bin()).args(["check", "--config"]).arg(&cfg).envs(env.clone()).output().unwrap();
    assert!(check.status.success(), "{}", String::from_utf8_lossy(&check.stderr));
    assert_clean("check", &String::from_utf8_lossy(&check.stdout));
    assert_clean("check", &String::from_utf8_lossy(&check.stderr));
    for level in ["debug", "trace"] {
        let agent = Agent::start_with(&cfg, &[("RUST_LOG", level), ("WRONG_HOOK_URL", &wrong_hook_url(&r))]);
        assert!(
            wait_for(Duration::from_secs(30), || {
                agent.metric("tailship_push_retries_total") >= 3.0
                    && agent.metric("tailship_alert_delivery_failures_total") >= 1.0
            }),
            "{}",
            agent.stderr_text()
        );
        assert_clean("/metrics", &agent.metrics());
        let log = agent.stderr_text();
        assert!(log.contains("401"), "the refusal is logged: {log}");
        assert_eq!(agent.metric("tailship_lines_dropped_total"), 0.0, "a 401 keeps the lines");
        assert!(agent.terminate(Duration::from_secs(30)).success());
        assert_clean(&format!("agent log at {level}"), &log);
        // Next round reads the file again from the start.
        let _ = std::fs::remove_file(dir.path().join("positions.json"));
    }
}

/// Measured: with `--log-format json`, a token holding `"` or `\` was escaped
/// (`\"`, `\\`) before the scrubber read the line, which then matched no
/// secret: the whole token was in the log when a service echoed it. Now no
/// form of it is (the service echoes it as it is, JSON-escaped and
/// percent-encoded; the log escapes each again): not a piece of 8 characters
/// of the token as it is, JSON-escaped once or twice; and every line is still JSON.
#[test]
fn a_token_with_a_quote_and_a_backslash_echoed_by_the_service_never_appears_in_the_json_log() {
    const QUOTED: &str = r#"tok"JSON\S3CRET-quote-7b2e"#;
    let rt = tokio::runtime::Runtime::new().unwrap();
    let mock = rt.block_on(Mock::start(|req, _| {
        let auth = req.header("authorization").unwrap_or("").to_string();
        if req.method == "POST" {
            // As a gateway might answer: the header as it came, as JSON, and percent-encoded in a URL.
            let json = serde_json::json!({ "error": "invalid token", "got": auth });
            let encoded: String = auth
                .bytes()
                .map(|b| if b.is_ascii_alphanumeric() { (b as char).to_string() } else { format!("%{b:02X}") })
                .collect();
            Reply::text(401, &format!("bad credentials: {auth} ({json}; see /login?retry={encoded})"))
        } else {
            Reply::text(401, &format!("bad credentials: {auth}"))
        }
    }));
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("app.log");
    std::fs::write(&log, "one\ntwo\n").unwrap();
    // A TOML literal string: the token as it is.
    let cfg =
        agent_config(dir.path(), &mock.url, &log.display().to_string(), &format!("bearer_token = '{QUOTED}'"), "");
    let agent = Agent::start_with(&cfg, &[("RUST_LOG", "debug"), ("TAILSHIP_LOG_FORMAT", "json")]);
    assert!(
        wait_for(Duration::from_secs(30), || agent.metric("tailship_push_retries_total") >= 3.0
            && agent.stderr_text().contains("bad credentials")),
        "{}",
        agent.stderr_text()
    );
    assert!(mock.requests().iter().any(|r| r.header("authorization") == Some(&format!("Bearer {QUOTED}"))));
    let addr = agent.metrics_addr.clone().unwrap();
    let ready = get(&format!("http://{addr}/ready"));
    assert_eq!(ready.status, 503);
    let ready = ready.text();
    let status = get(&format!("http://{addr}/status.json")).text();
    let log = agent.stderr_text();
    assert!(agent.terminate(Duration::from_secs(30)).success());
    for line in log.lines().filter(|l| !l.trim().is_empty()) {
        serde_json::from_str::<serde_json::Value>(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"));
    }
    let escaped = serde_json::to_string(QUOTED).unwrap();
    let escaped = &escaped[1..escaped.len() - 1];
    let twice = serde_json::to_string(escaped).unwrap();
    let twice = &twice[1..twice.len() - 1];
    for (what, text) in [("the JSON log", &log), ("/ready", &ready), ("/status.json", &status)] {
        for form in [QUOTED, escaped, twice] {
            assert_no_piece(what, text, form);
        }
    }
    assert!(log.contains("Bearer <redacted>"), "{log}");
}
