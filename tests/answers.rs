//! What the services answer cannot lose lines or grow the agent: a push
//! redirected to a login page (301, 302, 303) is not "delivered"; a
//! redirect to another host carries nothing there; an endless body is read
//! to a cap, never whole; a tenant that cannot be a header is not sent as
//! none; one tenant refused with 401/403 does not stop the others.

use crate::agent;
use crate::common;
use crate::mockhttp;
use crate::scenario;

use std::io::{Read, Write};
use std::net::TcpListener;
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use agent::{agent_config, Agent};
use common::{bin, get, wait_for, Receiver};
use mockhttp::{Mock, Reply};

fn lines(prefix: &str, n: usize) -> String {
    (0..n).map(|i| format!("{prefix} {i}\n")).collect()
}

/// `/ready`'s status and text, once the endpoint answers.
fn ready(agent: &Agent) -> (u16, String) {
    assert!(wait_for(Duration::from_secs(10), || !agent.metrics().is_empty()), "no endpoint");
    let r = get(&format!("http://{}/ready", agent.metrics_addr.clone().unwrap()));
    (r.status, r.text())
}

/// A push answered 301, 302 or 303 to a login page was followed as a GET
/// of that page, which answered 200: every line was counted delivered and
/// lost. Now the redirect is not followed, the lines wait, `/ready` says
/// where it redirects, and once the service takes pushes every line arrives.
#[test]
fn a_push_redirected_to_a_login_page_is_not_delivered_and_waits() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    for code in [301u16, 302, 303] {
        let fixed = Arc::new(AtomicBool::new(false));
        let f = fixed.clone();
        let service = rt.block_on(Mock::start(move |req, _| match req.path.as_str() {
            "/login" => Reply::text(200, "<html>login</html>"),
            _ if f.load(Ordering::SeqCst) => Reply::empty(204),
            _ => Reply::empty(code).with_header("location", "/login"),
        }));
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.log"), lines("line", 200)).unwrap();
        let include = format!("{}/*.log", dir.path().display());
        let extra = "api_prefix = \"/loki/api/v1\"\ncompression = \"none\"";
        let agent = Agent::start(&agent_config(dir.path(), &service.url, &include, extra, ""));
        assert!(
            wait_for(Duration::from_secs(20), || {
                let (status, text) = ready(&agent);
                status == 503 && text.contains("/login") && text.contains(&code.to_string())
            }),
            "{code}: {:?}\n{}",
            ready(&agent),
            agent.stderr_text()
        );
        assert!(wait_for(Duration::from_secs(10), || agent.metric("tailship_push_retries_total") >= 2.0));
        assert_eq!(agent.metric("tailship_push_lines_total"), 0.0, "{code}: counted delivered");
        assert!(service.requests().iter().all(|r| r.path != "/login"), "{code}: the redirect was followed");
        fixed.store(true, Ordering::SeqCst);
        assert!(
            wait_for(Duration::from_secs(20), || agent.metric("tailship_push_lines_total") == 200.0),
            "{code}: {}",
            agent.stderr_text()
        );
        let sent: usize = service.requests().iter().map(|r| r.body.matches("\"line ").count()).sum();
        assert!(sent >= 200, "{code}: {sent}");
        assert_eq!(agent.metric("tailship_lines_dropped_total"), 0.0);
        assert!(agent.terminate(Duration::from_secs(30)).success());
    }
}

/// A 307 from the configured host to another one: the other host received
/// `x-api-key` (a `client.headers` secret), the tenant and the whole push
/// body. Now a redirect to another origin is not followed; the lines wait.
#[test]
fn a_redirect_to_another_host_carries_no_secret_and_no_line_there() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let elsewhere = rt.block_on(Mock::start(|_, _| Reply::empty(204)));
    let to = format!("{}/loki/api/v1/push", elsewhere.url);
    let front = rt.block_on(Mock::start(move |_, _| Reply::empty(307).with_header("location", &to)));
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.log"), lines("line", 10)).unwrap();
    let include = format!("{}/*.log", dir.path().display());
    let extra =
        "api_prefix = \"/loki/api/v1\"\ntenant_id = \"team-a\"\nheaders = { \"x-api-key\" = \"k3y-s3cret-value\" }";
    let agent = Agent::start(&agent_config(dir.path(), &front.url, &include, extra, ""));
    assert!(
        wait_for(Duration::from_secs(20), || {
            let (status, text) = ready(&agent);
            status == 503 && text.contains("another scheme, host or port")
        }),
        "{:?}",
        ready(&agent)
    );
    assert!(wait_for(Duration::from_secs(10), || front.requests().len() >= 3));
    assert!(elsewhere.requests().is_empty(), "{:?}", elsewhere.requests());
    assert_eq!(agent.metric("tailship_push_lines_total"), 0.0);
    assert!(!agent.stderr_text().contains("k3y-s3cret-value"));
    // The same origin on another path keeps the push (a moved endpoint).
    let same = rt.block_on(Mock::start(|req, _| match req.path.as_str() {
        "/v2/loki/api/v1/push" => Reply::empty(204),
        _ => Reply::empty(308).with_header("location", "/v2/loki/api/v1/push"),
    }));
    let dir2 = tempfile::tempdir().unwrap();
    std::fs::write(dir2.path().join("a.log"), lines("line", 10)).unwrap();
    let include = format!("{}/*.log", dir2.path().display());
    let agent2 = Agent::start(&agent_config(dir2.path(), &same.url, &include, "api_prefix = \"/loki/api/v1\"", ""));
    assert!(wait_for(Duration::from_secs(20), || agent2.metric("tailship_push_lines_total") == 10.0));
    assert!(same.requests().iter().any(|r| r.path == "/v2/loki/api/v1/push" && r.method == "POST"));
}

/// A server on 127.0.0.1 that answers each request with `head` and then,
/// while `endless` holds, a chunked body that never ends (1 MiB chunks),
/// else an empty 204. Counts the requests and the bytes it sent.
struct Endless {
    url: String,
    requests: Arc<AtomicUsize>,
    sent: Arc<AtomicUsize>,
    endless: Arc<AtomicBool>,
}

impl Endless {
    fn start(head: &'static str) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let (requests, sent, endless) =
            (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)), Arc::new(AtomicBool::new(true)));
        let (r, s, e) = (requests.clone(), sent.clone(), endless.clone());
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                let Ok(mut conn) = conn else { return };
                let (r, s, e) = (r.clone(), s.clone(), e.clone());
                std::thread::spawn(move || serve(&mut conn, head, &r, &s, &e));
            }
        });
        Self { url, requests, sent, endless }
    }
}

fn serve(conn: &mut std::net::TcpStream, head: &str, requests: &AtomicUsize, sent: &AtomicUsize, endless: &AtomicBool) {
    let mut buf = vec![0u8; 1 << 16];
    let mut have = Vec::new();
    loop {
        // One request: its head, then its body by Content-Length.
        let end = loop {
            if let Some(i) = have.windows(4).position(|w| w == b"\r\n\r\n") {
                break i + 4;
            }
            match conn.read(&mut buf) {
                Ok(0) | Err(_) => return,
                Ok(n) => have.extend_from_slice(&buf[..n]),
            }
        };
        let text = String::from_utf8_lossy(&have[..end]).to_ascii_lowercase();
        let len: usize = text
            .lines()
            .find_map(|l| l.strip_prefix("content-length:").map(|v| v.trim().parse().unwrap_or(0)))
            .unwrap_or(0);
        while have.len() < end + len {
            match conn.read(&mut buf) {
                Ok(0) | Err(_) => return,
                Ok(n) => have.extend_from_slice(&buf[..n]),
            }
        }
        have.drain(..end + len);
        requests.fetch_add(1, Ordering::SeqCst);
        if !endless.load(Ordering::SeqCst) {
            if conn.write_all(b"HTTP/1.1 204 No Content\r\n\r\n").is_err() {
                return;
            }
            continue;
        }
        if conn.write_all(format!("{head}\r\nTransfer-Encoding: chunked\r\n\r\n").as_bytes()).is_err() {
            return;
        }
        let chunk = format!("100000\r\n{}\r\n", "x".repeat(1 << 20));
        while conn.write_all(chunk.as_bytes()).is_ok() {
            sent.fetch_add(1 << 20, Ordering::SeqCst);
        }
        return;
    }
}

/// A push answered 503 with a body that never ends was read whole: 2.7 GB
/// in 2 s, then "memory allocation failed" and an abort. Now the first KiB
/// is kept, the connection dropped, the push retried, and the agent's
/// memory stays flat; once the service answers, every line arrives.
#[test]
fn an_endless_error_body_does_not_abort_the_agent() {
    let server = Endless::start("HTTP/1.1 503 Service Unavailable");
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.log"), lines("line", 100)).unwrap();
    let include = format!("{}/*.log", dir.path().display());
    let agent = Agent::start(&agent_config(dir.path(), &server.url, &include, "api_prefix = \"/loki/api/v1\"", ""));
    assert!(
        wait_for(Duration::from_secs(30), || server.requests.load(Ordering::SeqCst) >= 5),
        "{}",
        agent.stderr_text()
    );
    let (status, text) = ready(&agent);
    assert_eq!(status, 503, "{text}");
    assert!(text.contains("503"), "{text}");
    server.endless.store(false, Ordering::SeqCst);
    assert!(
        wait_for(Duration::from_secs(30), || agent.metric("tailship_push_lines_total") == 100.0),
        "{}",
        agent.stderr_text()
    );
    let peak = agent.peak_rss_kb();
    assert!(
        peak < 150 * 1024,
        "peak RSS {peak} KiB after {} MiB of error body",
        server.sent.load(Ordering::SeqCst) >> 20
    );
    assert!(agent.terminate(Duration::from_secs(30)).success());
}

/// `tailship query` against an answer that never ends read it whole until
/// the process aborted. Now it stops at the query page's cap and says so.
#[test]
fn an_endless_query_answer_ends_the_query_with_an_error_naming_the_cap() {
    let server = Endless::start("HTTP/1.1 200 OK\r\nContent-Type: application/json");
    let out = Command::new(bin())
        .args(["query", "--url", &server.url, "--api-prefix", "/loki/api/v1", "--since", "1h", "{job=\"x\"}"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert_eq!(out.status.code(), Some(1), "an error, not a signal: {stderr}");
    assert!(stderr.contains("larger than 64 MiB"), "{stderr}");
}

/// An alert webhook answering 500 with a body that never ends was read
/// whole. Now the agent keeps delivering lines and its memory stays flat.
#[test]
fn an_alert_webhook_with_an_endless_error_body_does_not_grow_the_agent() {
    let hook = Endless::start("HTTP/1.1 500 Internal Server Error");
    let r = Receiver::start(&["--api-prefix", "/loki/api/v1"]);
    let dir = tempfile::tempdir().unwrap();
    let include = format!("{}/*.log", dir.path().display());
    let cfg = agent_config(dir.path(), &r.base, &include, "api_prefix = \"/loki/api/v1\"", "");
    let mut text = std::fs::read_to_string(&cfg).unwrap();
    text.push_str(&format!(
        "[[alerts]]\nname = \"boom\"\nmatch = \"boom\"\nwebhook_url = \"{}/hook\"\ngroup_interval = \"1s\"\n",
        hook.url
    ));
    std::fs::write(&cfg, text).unwrap();
    let agent = Agent::start(&cfg);
    std::fs::write(dir.path().join("a.log"), lines("boom line", 20)).unwrap();
    assert!(wait_for(Duration::from_secs(30), || hook.requests.load(Ordering::SeqCst) >= 2), "{}", agent.stderr_text());
    assert!(wait_for(Duration::from_secs(20), || r.stats()["entries"].as_u64() == Some(20)), "{}", agent.stderr_text());
    let peak = agent.peak_rss_kb();
    assert!(
        peak < 150 * 1024,
        "peak RSS {peak} KiB after {} MiB of webhook body",
        hook.sent.load(Ordering::SeqCst) >> 20
    );
    assert!(agent.terminate(Duration::from_secs(30)).success());
}

/// A `tenant` stage reading a JSON field whose value is not a valid tenant
/// (`team\u0001N`) sent the push without `X-Scope-OrgID`: a multi-tenant
/// service answered 401 and no tenant's line went through. Now such a line
/// keeps its source's tenant and is counted; every line arrives.
#[test]
fn a_tenant_stage_value_that_cannot_be_a_tenant_keeps_the_sources_tenant() {
    let r = scenario::loki_receiver_with(&["--multi-tenant"]);
    let dir = tempfile::tempdir().unwrap();
    let mut text = String::new();
    for i in 0..100 {
        text.push_str(&format!("{{\"org\":\"team-a\",\"msg\":\"good {i}\"}}\n"));
    }
    for i in 0..10 {
        text.push_str(&format!("{{\"org\":\"team\\u0001N\",\"msg\":\"bad {i}\"}}\n"));
    }
    std::fs::write(dir.path().join("a.log"), text).unwrap();
    let include = format!("{}/*.log", dir.path().display());
    let stages = "tenant_id = \"fallback\"\n[[sources.stages]]\njson = { org = \"org\" }\n[[sources.stages]]\ntenant = { source = \"org\" }";
    let agent = Agent::start(&agent_config(dir.path(), &r.base, &include, "api_prefix = \"/loki/api/v1\"", stages));
    let count = |tenant: &str| agent::query_all_at(&r, "/loki/api/v1", "{job=\"test\"}", Some(tenant)).len();
    assert!(
        wait_for(Duration::from_secs(20), || count("team-a") == 100 && count("fallback") == 10),
        "team-a {} fallback {}\n{}",
        count("team-a"),
        count("fallback"),
        agent.stderr_text()
    );
    let repaired = agent.metrics();
    assert!(
        repaired.contains("tailship_lines_repaired_total{reason=\"invalid_tenant\",source=\"file-0\"} 10"),
        "{repaired}"
    );
    assert!(agent.stderr_text().contains("cannot be a tenant ID"), "{}", agent.stderr_text());
    assert!(agent.terminate(Duration::from_secs(30)).success());
}

/// `tenant_id = "team\u0001a"` passed `check` and was dropped at run time.
#[test]
fn check_refuses_a_tenant_id_that_cannot_be_a_header() {
    let dir = tempfile::tempdir().unwrap();
    let include = format!("{}/*.log", dir.path().display());
    for (client, source, key) in [
        ("tenant_id = \"team\\u0001a\"", "", "client.tenant_id"),
        ("", "tenant_id = \"a b\"", "tenant_id"),
        ("", "[[sources.stages]]\ntenant = { value = \"..\" }", "tenant.value"),
    ] {
        let cfg = agent_config(dir.path(), "http://127.0.0.1:9", &include, client, source);
        let out = Command::new(bin()).args(["check", "--config"]).arg(&cfg).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{client}{source}: {stderr}");
        assert!(stderr.contains(key) && stderr.contains("tenant ID"), "{key}: {stderr}");
    }
}

/// A gateway that answers 403 for one tenant: its batches kept their push
/// slots while retried, and with `max_in_flight` of them no other tenant's
/// line went through. Now a tenant's 401/403 gives the slot back, as a 429
/// does, and `/ready` names the tenant.
#[test]
fn one_tenant_refused_with_403_does_not_stop_the_other_tenants() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let service = rt.block_on(Mock::start(|req, _| match req.header("x-scope-orgid") {
        Some("blocked") => Reply::text(403, "forbidden"),
        _ => Reply::empty(204),
    }));
    let dir = tempfile::tempdir().unwrap();
    let blocked = dir.path().join("blocked");
    std::fs::create_dir(&blocked).unwrap();
    // Many small batches of the blocked tenant, more than max_in_flight.
    for f in 0..6 {
        std::fs::write(blocked.join(format!("{f}.log")), lines(&format!("blocked {f}"), 50)).unwrap();
    }
    let include = format!("{}/*.log", blocked.display());
    let client = "api_prefix = \"/loki/api/v1\"\ncompression = \"none\"\nbatch = { max_bytes = \"1KiB\", max_wait = \"50ms\", max_in_flight = 2 }";
    let cfg = agent_config(dir.path(), &service.url, &include, client, "tenant_id = \"blocked\"");
    let mut text = std::fs::read_to_string(&cfg)
        .unwrap()
        .replace("batch = { max_bytes = \"256KiB\", max_wait = \"100ms\" }\n", "");
    text.push_str(&format!(
        "[[sources]]\ntype = \"file\"\nname = \"ok\"\ninclude = [\"{}/ok.log\"]\ntenant_id = \"ok\"\nlabels = {{ job = \"ok\" }}\nscan_interval = \"200ms\"\n",
        dir.path().display()
    ));
    std::fs::write(&cfg, text).unwrap();
    let agent = Agent::start(&cfg);
    assert!(
        wait_for(Duration::from_secs(20), || service
            .requests()
            .iter()
            .filter(|r| r.header("x-scope-orgid") == Some("blocked"))
            .count()
            >= 6),
        "{}",
        agent.stderr_text()
    );
    std::fs::write(dir.path().join("ok.log"), lines("line", 50)).unwrap();
    let ok_lines = || {
        service
            .requests()
            .iter()
            .filter(|r| r.header("x-scope-orgid") == Some("ok"))
            .map(|r| r.body.matches("\"line ").count())
            .sum::<usize>()
    };
    assert!(
        wait_for(Duration::from_secs(20), || ok_lines() == 50),
        "ok tenant got {}\n{}",
        ok_lines(),
        agent.stderr_text()
    );
    assert!(
        wait_for(Duration::from_secs(10), || ready(&agent).1.contains("tenant blocked: 403")),
        "{:?}",
        ready(&agent)
    );
    assert_eq!(agent.metric("tailship_lines_dropped_total"), 0.0);
}
