//! `client.oauth2` (the client credentials grant) through the real binary:
//! a token endpoint and a log service written in the test on loopback (an
//! OAuth 2.0 server cannot run here), the service accepting only the token
//! the endpoint handed out.

use crate::agent;
use crate::common;
use crate::mockhttp;

use std::collections::BTreeMap;
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent::{agent_config, Agent};
use common::{bin, wait_for};
use mockhttp::{Mock, Reply, Req};
use tempfile::TempDir;
use tokio::runtime::Runtime;

/// The form fields of a token request.
fn form(r: &Req) -> BTreeMap<String, String> {
    url::form_urlencoded::parse(r.body.as_bytes()).into_owned().collect()
}

fn basic(id: &str, secret: &str) -> String {
    use base64::Engine;
    format!("Basic {}", base64::engine::general_purpose::STANDARD.encode(format!("{id}:{secret}")))
}

/// Lines in the push requests the service accepted.
fn accepted_lines(service: &Mock, good: impl Fn(&str) -> bool) -> Vec<String> {
    let mut lines = Vec::new();
    for r in service.requests() {
        if !r.header("authorization").is_some_and(&good) {
            continue;
        }
        for s in r.json()["streams"].as_array().unwrap() {
            for v in s["values"].as_array().unwrap() {
                lines.push(v[1].as_str().unwrap().to_string());
            }
        }
    }
    lines
}

/// A runtime, a [`token_endpoint`], a service that answers 204 to the pushes
/// whose Authorization `good` accepts (401 to the others) and a temp dir.
fn endpoints(in_body: bool, expires_in: u64, good: fn(&str) -> bool) -> (Runtime, Mock, Mock, TempDir) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let tokens = rt.block_on(token_endpoint(in_body, expires_in));
    let service = rt.block_on(Mock::start(move |r, _| {
        Reply::empty(if r.header("authorization").is_some_and(good) { 204 } else { 401 })
    }));
    (rt, tokens, service, tempfile::tempdir().unwrap())
}

/// A token endpoint handing out `tok-1`, `tok-2`, ... to `id:secret` sent as
/// Basic auth (or in the form with `in_body`), each valid `expires_in` seconds.
async fn token_endpoint(in_body: bool, expires_in: u64) -> Mock {
    let issued = AtomicUsize::new(0);
    Mock::start(move |r, _| {
        let f = form(r);
        let authorized = if in_body {
            f.get("client_id").map(String::as_str) == Some("shipper")
                && f.get("client_secret").map(String::as_str) == Some("s3cret-0a1b")
        } else {
            r.header("authorization") == Some(basic("shipper", "s3cret-0a1b").as_str())
        };
        if !authorized {
            return Reply::json(401, serde_json::json!({"error": "invalid_client"}));
        }
        if f.get("grant_type").map(String::as_str) != Some("client_credentials") {
            return Reply::json(400, serde_json::json!({"error": "unsupported_grant_type"}));
        }
        let n = issued.fetch_add(1, Ordering::SeqCst) + 1;
        Reply::ok(
            serde_json::json!({"access_token": format!("tok-{n}"), "token_type": "Bearer", "expires_in": expires_in}),
        )
    })
    .await
}

fn oauth2_block(token_url: &str) -> String {
    format!(
        "compression = \"none\"\n[client.oauth2]\nclient_id = \"shipper\"\nclient_secret = \"s3cret-0a1b\"\n\
         token_url = \"{token_url}/oauth/token\"\nscopes = [\"logs:write\", \"logs:read\"]\n\
         endpoint_params = {{ audience = \"loki\" }}\n"
    )
}

/// With `api_prefix` set: the service here counts requests, and an unset
/// prefix would first be asked for (tests/api_prefix.rs).
fn push_config(dir: &std::path::Path, service: &str, client_extra: &str) -> std::path::PathBuf {
    let path = dir.join("push.toml");
    std::fs::write(
        &path,
        format!("[client]\nurl = \"{service}\"\napi_prefix = \"/logstore/api/v1\"\nbatch = {{ max_bytes = \"1KiB\" }}\n{client_extra}\n[[sources]]\ntype = \"stdin\"\n"),
    )
    .unwrap();
    path
}

fn push(cfg: &std::path::Path, lines: usize) -> std::process::Output {
    let log = cfg.parent().unwrap().join("lines.log");
    let text: String = (0..lines).map(|i| format!("line {i:04} {}\n", "x".repeat(100))).collect();
    std::fs::write(&log, text).unwrap();
    Command::new(bin()).args(["push", "--max-retries", "1", "--config"]).arg(cfg).arg(&log).output().unwrap()
}

/// One token serves many pushes while it is valid; the request carries the
/// grant, the scopes and the extra parameters.
#[test]
fn pushes_carry_the_token_of_the_client_credentials_grant_and_reuse_it() {
    let (_rt, tokens, service, dir) = endpoints(false, 3600, |a| a == "Bearer tok-1");
    let cfg = push_config(dir.path(), &service.url, &oauth2_block(&tokens.url));
    let out = push(&cfg, 50);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let pushes = service.requests();
    assert!(pushes.len() > 2, "50 lines of 110 B in batches of 1 KiB: {} pushes", pushes.len());
    assert_eq!(accepted_lines(&service, |a| a == "Bearer tok-1").len(), 50);
    let asked = tokens.requests();
    assert_eq!(asked.len(), 1, "one token for every push: {asked:?}");
    assert_eq!(asked[0].path, "/oauth/token");
    let f = form(&asked[0]);
    assert_eq!(f.get("scope").map(String::as_str), Some("logs:write logs:read"));
    assert_eq!(f.get("audience").map(String::as_str), Some("loki"));
    assert!(!f.contains_key("client_secret"), "the secret goes in the Basic header first: {f:?}");
}

/// A token about to expire (`expires_in` within 10 s) is not used: each
/// push asks for a fresh one.
#[test]
fn a_token_about_to_expire_is_fetched_again() {
    let (_rt, tokens, service, dir) = endpoints(false, 5, |a| a.starts_with("Bearer tok-"));
    let cfg = push_config(dir.path(), &service.url, &oauth2_block(&tokens.url));
    let out = push(&cfg, 30);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let pushes = service.requests();
    assert!(pushes.len() > 1);
    assert_eq!(tokens.requests().len(), pushes.len(), "a new token per push");
    let used: std::collections::BTreeSet<_> = pushes.iter().filter_map(|r| r.header("authorization")).collect();
    assert_eq!(used.len(), pushes.len(), "each push its own token: {used:?}");
}

/// An endpoint that refuses Basic auth gets the id and secret in the form,
/// as Go's oauth2 package falls back to; the way that worked is kept.
#[test]
fn an_endpoint_that_wants_the_secret_in_the_form_gets_it_there() {
    let (_rt, tokens, service, dir) = endpoints(true, 5, |_| true);
    let cfg = push_config(dir.path(), &service.url, &oauth2_block(&tokens.url));
    let out = push(&cfg, 30);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let pushes = service.requests().len();
    assert!(pushes > 1);
    let asked = tokens.requests();
    // The first token: Basic refused, then the form; every later one: the form at once.
    assert_eq!(asked.len(), pushes + 1, "{asked:?}");
    assert!(asked[0].header("authorization").is_some());
    assert!(asked[1..].iter().all(|r| r.header("authorization").is_none() && form(r).contains_key("client_secret")));
}

/// The daemon: a token endpoint failing at first, and a token revoked
/// before it expires (the service answers 401), lose no line: the lines
/// wait, a new token is fetched, and every line arrives once.
#[test]
fn a_failing_token_endpoint_and_a_revoked_token_lose_no_line() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let issued = Arc::new(AtomicUsize::new(0));
    let i = issued.clone();
    let tokens = rt.block_on(Mock::start(move |_, index| {
        if index < 3 {
            return Reply::json(503, serde_json::json!({"error": "temporarily_unavailable"}));
        }
        let n = i.fetch_add(1, Ordering::SeqCst) + 1;
        Reply::ok(serde_json::json!({"access_token": format!("tok-{n}"), "token_type": "Bearer", "expires_in": 3600}))
    }));
    // tok-1 is revoked: the service refuses it.
    let refused = Arc::new(Mutex::new(0));
    let rf = refused.clone();
    let service = rt.block_on(Mock::start(move |r, _| match r.header("authorization") {
        Some("Bearer tok-1") => {
            *rf.lock().unwrap() += 1;
            Reply::empty(401)
        }
        Some(a) if a.starts_with("Bearer tok-") => Reply::empty(204),
        _ => Reply::empty(401),
    }));
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("app.log");
    let text: String = (0..200).map(|i| format!("daemon line {i:04}\n")).collect();
    std::fs::write(&log, text).unwrap();
    let cfg = agent_config(dir.path(), &service.url, log.to_str().unwrap(), &oauth2_block(&tokens.url), "");
    let agent = Agent::start(&cfg);
    let good = |a: &str| a.starts_with("Bearer tok-") && a != "Bearer tok-1";
    assert!(
        wait_for(Duration::from_secs(30), || accepted_lines(&service, good).len() >= 200),
        "{} lines accepted; agent: {}",
        accepted_lines(&service, good).len(),
        agent.stderr_text()
    );
    let mut lines = accepted_lines(&service, good);
    lines.sort();
    lines.dedup();
    assert_eq!(lines.len(), 200);
    assert!(*refused.lock().unwrap() >= 1, "tok-1 was tried and refused");
    assert!(issued.load(Ordering::SeqCst) >= 2, "a new token after the 401");
    let stderr = agent.stderr_text();
    assert!(stderr.contains("no OAuth 2.0 token") && stderr.contains("temporarily_unavailable"), "{stderr}");
    assert!(!stderr.contains("s3cret-0a1b") && !stderr.contains("tok-"), "secrets in the log: {stderr}");
}

fn check(dir: &std::path::Path, client_extra: &str) -> std::process::Output {
    let cfg = push_config(dir, "http://127.0.0.1:9", client_extra);
    Command::new(bin()).args(["check", "--config"]).arg(&cfg).output().unwrap()
}

#[test]
fn oauth2_mistakes_exit_2_naming_the_key_and_the_secret_stays_hidden() {
    let dir = tempfile::tempdir().unwrap();
    for (extra, key) in [
        (format!("bearer_token = \"abcd\"\n{}", oauth2_block("http://127.0.0.1:9")), "client.oauth2"),
        ("[client.oauth2]\nclient_id = \"a\"\ntoken_url = \"ftp://x/token\"\n".to_string(), "client.oauth2.token_url"),
        ("[client.oauth2]\ntoken_url = \"http://x/token\"\n".to_string(), "client.oauth2.client_id"),
        (
            "[client.oauth2]\nclient_id = \"a\"\ntoken_url = \"http://x/t\"\nendpoint_params = { grant_type = \"password\" }\n"
                .to_string(),
            "client.oauth2.endpoint_params.grant_type",
        ),
        (
            "[client.oauth2]\nclient_id = \"a\"\ntoken_url = \"http://x/t\"\nclient_secret_file = \"/nonexistent/secret\"\n"
                .to_string(),
            "client.oauth2.client_secret_file",
        ),
    ] {
        let out = check(dir.path(), &extra);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{extra}: {err}");
        assert!(err.contains(key) && err.contains("push.toml"), "{key}: {err}");
    }
    let secret = dir.path().join("secret");
    std::fs::write(&secret, "from-a-file-9z8y\n").unwrap();
    let extra = format!(
        "[client.oauth2]\nclient_id = \"a\"\ntoken_url = \"http://x/t\"\nclient_secret_file = \"{}\"\n",
        secret.display()
    );
    let out = check(dir.path(), &extra);
    let all = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{all}");
    let out = check(dir.path(), &oauth2_block("http://127.0.0.1:9"));
    let all = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{all}");
    assert!(!all.contains("s3cret-0a1b"), "{all}");
}

/// Promtail's `oauth2` block converts key for key and ships.
#[test]
fn a_promtail_client_with_oauth2_converts_and_pushes() {
    let (_rt, tokens, service, dir) = endpoints(false, 3600, |a| a == "Bearer tok-1");
    let yaml = format!(
        "clients:\n  - url: {}/loki/api/v1/push\n    oauth2:\n      client_id: shipper\n      client_secret: s3cret-0a1b\n      \
         token_url: {}/oauth/token\n      scopes: [logs:write, logs:read]\n      endpoint_params:\n        audience: loki\n\
         scrape_configs:\n  - job_name: app\n    static_configs:\n      - labels:\n          __path__: /var/log/app.log\n",
        service.url, tokens.url
    );
    let (toml, report) = crate::discovery::convert_promtail(dir.path(), &yaml);
    assert!(!report.contains("oauth2"), "oauth2 reported: {report}");
    assert!(toml.contains("oauth2") && toml.contains("audience"), "{toml}");
    // The converted client, with a stdin source, pushes with the token.
    let client: String = toml.split("[[sources]]").next().unwrap().to_string();
    let cfg = dir.path().join("converted.toml");
    std::fs::write(&cfg, format!("{client}\n[[sources]]\ntype = \"stdin\"\n")).unwrap();
    let out = Command::new(bin()).args(["check", "--config"]).arg(&cfg).output().unwrap();
    assert!(out.status.success(), "{}\n{toml}", String::from_utf8_lossy(&out.stderr));
    let log = dir.path().join("one.log");
    std::fs::write(&log, "converted and pushed\n").unwrap();
    let out =
        Command::new(bin()).args(["push", "--max-retries", "1", "--config"]).arg(&cfg).arg(&log).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(service.requests().len(), 1);
    assert_eq!(tokens.requests().len(), 1);
}

/// The oauth2 table's own proxy keys: `proxy_connect_header` goes to its
/// `proxy_url` (here a forward proxy of a plain-http token endpoint), and a
/// token endpoint `no_proxy` names is reached directly; a Promtail oauth2
/// block with both converts with nothing left out.
#[test]
fn the_oauth2_tables_own_no_proxy_and_proxy_connect_header_apply_to_token_requests() {
    // A forward proxy answering for tokens.invalid (a name only the proxy knows).
    let (rt, proxy, service, dir) = endpoints(false, 3600, |a| a == "Bearer tok-1");
    let block = format!(
        "compression = \"none\"\n[client.oauth2]\nclient_id = \"shipper\"\nclient_secret = \"s3cret-0a1b\"\n\
         token_url = \"http://tokens.invalid/oauth/token\"\nproxy_url = \"{}\"\n\
         proxy_connect_header = {{ Proxy-Authorization = \"Basic cHJveHk6cHc=\" }}\n",
        proxy.url
    );
    let cfg = push_config(dir.path(), &service.url, &block);
    let out = push(&cfg, 3);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let asked = proxy.requests();
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert_eq!(asked[0].header("proxy-authorization"), Some("Basic cHJveHk6cHc="), "{asked:?}");
    assert!(service.requests().iter().all(|r| r.header("proxy-authorization").is_none()), "not sent to the service");

    // no_proxy: the token endpoint on 127.0.0.1 is reached directly, the dead proxy never.
    let tokens = rt.block_on(token_endpoint(false, 3600));
    let block = format!(
        "compression = \"none\"\n[client.oauth2]\nclient_id = \"shipper\"\nclient_secret = \"s3cret-0a1b\"\n\
         token_url = \"{}/oauth/token\"\nproxy_url = \"http://127.0.0.1:1\"\nno_proxy = \"127.0.0.1\"\n",
        tokens.url
    );
    let dir2 = tempfile::tempdir().unwrap();
    let cfg = push_config(dir2.path(), &service.url, &block);
    let out = push(&cfg, 3);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(tokens.requests().len(), 1);

    // Promtail's block converts whole.
    let yaml = format!(
        "clients:\n  - url: {}/loki/api/v1/push\n    oauth2:\n      client_id: shipper\n      client_secret: s3cret-0a1b\n      \
         token_url: {}/oauth/token\n      proxy_url: http://127.0.0.1:1\n      no_proxy: 127.0.0.1\n      \
         proxy_connect_header:\n        Proxy-Authorization: [Basic cHJveHk6cHc=]\n\
         scrape_configs:\n  - job_name: app\n    static_configs:\n      - labels:\n          __path__: /var/log/app.log\n",
        service.url, tokens.url
    );
    let (toml, report) = crate::discovery::convert_promtail(dir.path(), &yaml);
    assert!(!report.contains("no_proxy") && !report.contains("proxy_connect_header"), "{report}");
    assert!(toml.contains("no_proxy") && toml.contains("proxy_connect_header"), "{toml}");
    let cfg = dir.path().join("converted.toml");
    let client: String = toml.split("[[sources]]").next().unwrap().to_string();
    std::fs::write(&cfg, format!("{client}\n[[sources]]\ntype = \"stdin\"\n")).unwrap();
    let out = Command::new(bin()).args(["check", "--config"]).arg(&cfg).output().unwrap();
    assert!(out.status.success(), "{}\n{toml}", String::from_utf8_lossy(&out.stderr));
}
