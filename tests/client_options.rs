//! `client.proxy_url` (and the usual proxy environment variables) and
//! `client.headers`, through the real binary against servers on loopback.

use crate::agent;
use crate::common;
use crate::mockhttp;

use std::process::Command;

use common::{bin, Receiver};
use mockhttp::{Mock, Reply};

/// With `api_prefix` set: the servers here count requests, and an unset
/// prefix would first be asked for (tests/api_prefix.rs).
fn config(dir: &std::path::Path, url: &str, client_extra: &str) -> std::path::PathBuf {
    let path = dir.join("t.toml");
    let prefix = if client_extra.contains("api_prefix") { "" } else { "api_prefix = \"/logstore/api/v1\"\n" };
    std::fs::write(
        &path,
        format!("[client]\nurl = \"{url}\"\n{prefix}{client_extra}\n[[sources]]\ntype = \"stdin\"\n"),
    )
    .unwrap();
    path
}

fn push(cfg: &std::path::Path, env: &[(&str, &str)]) -> std::process::Output {
    let dir = cfg.parent().unwrap();
    let log = dir.join("one.log");
    std::fs::write(&log, "through the proxy\n").unwrap();
    let mut cmd = Command::new(bin());
    cmd.args(["push", "--max-retries", "1", "--config"]).arg(cfg).arg(&log);
    for v in ["HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "no_proxy"] {
        cmd.env_remove(v);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().unwrap()
}

/// The service's host does not resolve (`.invalid`): only a proxy can carry
/// the push, and the proxy sees the absolute URL of the service.
#[test]
fn pushes_go_through_proxy_url_or_http_proxy_and_no_proxy_is_honoured() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let proxy = rt.block_on(Mock::start(|_, _| Reply::empty(204)));
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path(), "http://logs.invalid:3100", &format!("proxy_url = \"{}\"", proxy.url));
    let out = push(&cfg, &[]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let reqs = proxy.requests();
    assert_eq!(reqs.len(), 1);
    assert_eq!(reqs[0].method, "POST");
    assert_eq!(reqs[0].header("host"), Some("logs.invalid:3100"));

    // The same from HTTP_PROXY, without proxy_url.
    let cfg = config(dir.path(), "http://logs.invalid:3100", "");
    let out = push(&cfg, &[("HTTP_PROXY", &proxy.url)]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(proxy.requests().len(), 2);

    // NO_PROXY sends a matching host direct, past a proxy that is down.
    let r = Receiver::start(&[]);
    let cfg = config(dir.path(), &r.base, "");
    let out = push(&cfg, &[("HTTP_PROXY", "http://127.0.0.1:9"), ("NO_PROXY", "127.0.0.1")]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(r.stats()["entries"].as_u64(), Some(1));
}

#[test]
fn client_headers_reach_the_service_and_are_redacted_in_check() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let service = rt.block_on(Mock::start(|_, _| Reply::empty(204)));
    let dir = tempfile::tempdir().unwrap();
    let cfg =
        config(dir.path(), &service.url, "headers = { \"X-Team\" = \"payments\", \"X-Api-Key\" = \"key-0f9e8d7c\" }");
    let out = push(&cfg, &[]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let reqs = service.requests();
    assert_eq!(reqs[0].header("x-team"), Some("payments"));
    assert_eq!(reqs[0].header("x-api-key"), Some("key-0f9e8d7c"));
    let out = Command::new(bin()).args(["check", "--config"]).arg(&cfg).output().unwrap();
    let all = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{all}");
    assert!(all.contains("X-Api-Key") && !all.contains("key-0f9e8d7c"), "{all}");
    // Headers tailship sets itself are refused, by key.
    let bad = config(dir.path(), &service.url, "headers = { \"Content-Type\" = \"text/plain\" }");
    let out = Command::new(bin()).args(["check", "--config"]).arg(&bad).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("client.headers.Content-Type"));
}

#[test]
fn basic_auth_username_file_is_read_like_password_file() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let service = rt.block_on(Mock::start(|_, _| Reply::empty(204)));
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("user"), "from-file\n").unwrap();
    std::fs::write(dir.path().join("pass"), "s3cret\n").unwrap();
    let auth = format!(
        "basic_auth = {{ username_file = \"{d}/user\", password_file = \"{d}/pass\" }}",
        d = dir.path().display()
    );
    let out = push(&config(dir.path(), &service.url, &auth), &[]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    use base64::Engine;
    let expected = format!("Basic {}", base64::engine::general_purpose::STANDARD.encode("from-file:s3cret"));
    assert_eq!(service.requests()[0].header("authorization"), Some(expected.as_str()));
    // Both, or an empty file: exit 2 naming the key.
    for (extra, key) in [
        (
            format!(
                "basic_auth = {{ username = \"u\", username_file = \"{}/user\", password = \"p\" }}",
                dir.path().display()
            ),
            "client.basic_auth",
        ),
        (
            format!("basic_auth = {{ username_file = \"{}/none\", password = \"p\" }}", dir.path().display()),
            "client.basic_auth.username_file",
        ),
    ] {
        let out = Command::new(bin())
            .args(["check", "--config"])
            .arg(config(dir.path(), &service.url, &extra))
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2));
        assert!(String::from_utf8_lossy(&out.stderr).contains(key), "{}", String::from_utf8_lossy(&out.stderr));
    }
}

#[test]
fn redirects_are_followed_unless_follow_redirects_is_false() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    // A moved endpoint on the same host: followed with the push.
    let service = rt.block_on(Mock::start(|req, _| match req.path.as_str() {
        "/v2/loki/api/v1/push" => Reply::empty(204),
        _ => Reply::empty(308).with_header("location", "/v2/loki/api/v1/push"),
    }));
    let dir = tempfile::tempdir().unwrap();
    let out = push(&config(dir.path(), &service.url, "api_prefix = \"/loki/api/v1\""), &[]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stored = || service.requests().iter().filter(|r| r.path.starts_with("/v2/")).count();
    let got = service.requests();
    assert_eq!((stored(), got[1].method.as_str()), (1, "POST"), "a 308 keeps the method and body");
    let cfg = config(dir.path(), &service.url, "api_prefix = \"/loki/api/v1\"\nfollow_redirects = false");
    let out = push(&cfg, &[]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("308") && stderr.contains("follow_redirects = false"), "{stderr}");
    assert_eq!(stored(), 1, "not followed");
    // Another origin (here another port): never followed, the push names where it points.
    let elsewhere = rt.block_on(Mock::start(|_, _| Reply::empty(204)));
    let to = format!("{}/loki/api/v1/push", elsewhere.url);
    let front = rt.block_on(Mock::start(move |_, _| Reply::empty(308).with_header("location", &to)));
    let out = push(&config(dir.path(), &front.url, "api_prefix = \"/loki/api/v1\""), &[]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("another scheme, host or port"), "{stderr}");
    assert!(elsewhere.requests().is_empty());
}

/// A 3xx the client does not follow (here a 300 without `Location`) was
/// taken as a refusal and the lines were dropped as `rejected`; it is a
/// misconfiguration: the lines wait and go once the service answers 2xx.
#[test]
fn a_redirect_not_followed_keeps_the_lines_waiting_instead_of_dropping_them() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let service = rt.block_on(Mock::start(|_, n| if n < 3 { Reply::empty(300) } else { Reply::empty(204) }));
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.log"), "waits through a 300\n").unwrap();
    let include = format!("{}/*.log", dir.path().display());
    let cfg = agent::agent_config(dir.path(), &service.url, &include, "compression = \"none\"", "");
    let agent = agent::Agent::start(&cfg);
    let delivered = common::wait_for(std::time::Duration::from_secs(20), || {
        service.requests().iter().skip(3).any(|r| r.body.contains("waits through a 300"))
    });
    assert!(delivered, "{} requests\n{}", service.requests().len(), agent.stderr_text());
    assert_eq!(agent.metric("tailship_lines_dropped_total"), 0.0);
}
