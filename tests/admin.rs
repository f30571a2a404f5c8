//! Black-box tests of `tailship admin tenants ...`: the real binary against a
//! recording HTTP server on 127.0.0.1 that answers as the tenant admin spec
//! shows (basic auth with an empty user, limits removed when an update omits them).

use crate::mockhttp;

use std::sync::{Arc, Mutex};

use mockhttp::{run, Mock, Reply, Req, Run};
use serde_json::{json, Value};

const TOKEN: &str = "admin-5ecret";
/// `Basic base64(":admin-5ecret")`: an empty user and the token as password.
const BASIC: &str = "Basic OmFkbWluLTVlY3JldA==";

const LIMITS: [&str; 7] = [
    "ingestion_rate",
    "ingestion_burst_size",
    "max_series_per_query",
    "max_global_series_per_user",
    "max_global_series_per_metric",
    "ruler_max_rules_per_rule_group",
    "ruler_max_rule_groups_per_tenant",
];

fn all_limits() -> Value {
    json!({
        "ingestion_rate": 10000, "ingestion_burst_size": 200000, "max_series_per_query": 100000,
        "max_global_series_per_user": 150000, "max_global_series_per_metric": 20000,
        "ruler_max_rules_per_rule_group": 20, "ruler_max_rule_groups_per_tenant": 35
    })
}

fn tenant(limits: Option<Value>) -> Value {
    let mut t = json!({
        "name": "team-a", "display_name": "Team A", "created_at": "2024-05-01T10:00:00.123456789Z",
        "status": "active", "cluster": "prod-eu-1"
    });
    if let Some(l) = limits {
        t["limits"] = l;
    }
    t
}

/// A server that behaves like the spec: it keeps one tenant, fills missing
/// limits from defaults, and drops limits when an update omits them.
fn stateful(initial: Value) -> (Arc<Mutex<Value>>, impl Fn(&Req, usize) -> Reply + Send + Sync + 'static) {
    let state = Arc::new(Mutex::new(initial));
    let s = state.clone();
    let handler = move |req: &Req, _: usize| {
        let mut t = s.lock().unwrap();
        match req.method.as_str() {
            "GET" if req.path == "/admin/api/v2/tenants/team-a" => Reply::ok(t.clone()),
            "PUT" if req.path == "/admin/api/v2/tenants/team-a" => {
                let b = req.json();
                let mut next = json!({"name": "team-a", "created_at": t["created_at"].clone()});
                for k in ["display_name", "status", "cluster"] {
                    next[k] = b[k].clone();
                }
                if let Some(l) = b.get("limits") {
                    let mut full = all_limits();
                    for (k, v) in l.as_object().unwrap() {
                        full[k] = v.clone();
                    }
                    next["limits"] = full;
                }
                *t = next.clone();
                Reply::ok(next)
            }
            "POST" if req.path == "/admin/api/v2/tenants" => {
                let mut b = req.json();
                if let Some(l) = b.get("limits").cloned() {
                    let mut full = all_limits();
                    for (k, v) in l.as_object().unwrap() {
                        full[k] = v.clone();
                    }
                    b["limits"] = full;
                }
                Reply::ok(b)
            }
            _ => Reply::text(404, r#"{"error":"tenant not found"}"#),
        }
    };
    (state, handler)
}

async fn admin(mock: &Mock, args: &[&str]) -> Run {
    let mut a = vec!["admin", "--admin-url", mock.url.as_str(), "tenants"];
    a.extend_from_slice(args);
    run(&a, &[("TAILSHIP_ADMIN_TOKEN", TOKEN)], None).await
}

fn assert_req(r: &Req, method: &str, path: &str, body: Option<Value>) {
    assert_eq!((r.method.as_str(), r.path.as_str(), r.query.as_str()), (method, path, ""), "{r:?}");
    assert_eq!(r.header("authorization"), Some(BASIC), "{r:?}");
    match body {
        Some(b) => {
            assert_eq!(r.header("content-type"), Some("application/json"));
            assert_eq!(r.json(), b, "body of {method} {path}");
        }
        None => assert_eq!(r.body, ""),
    }
}

fn ok(r: &Run) {
    assert_eq!(r.code, 0, "stdout:\n{}\nstderr:\n{}", r.stdout, r.stderr);
}

#[tokio::test]
async fn update_with_display_name_keeps_all_seven_limits() {
    let (state, h) = stateful(tenant(Some(all_limits())));
    let mock = Mock::start(h).await;
    let r = admin(&mock, &["update", "team-a", "--display-name", "X"]).await;
    ok(&r);
    let reqs = mock.requests();
    assert_eq!(reqs.len(), 2);
    assert_req(&reqs[0], "GET", "/admin/api/v2/tenants/team-a", None);
    assert_req(
        &reqs[1],
        "PUT",
        "/admin/api/v2/tenants/team-a",
        Some(json!({"display_name": "X", "status": "active", "cluster": "prod-eu-1", "limits": all_limits()})),
    );
    assert_eq!(state.lock().unwrap()["limits"], all_limits(), "the tenant kept its limits");
    for k in LIMITS {
        let line = r.stdout.lines().find(|l| l.starts_with(k)).unwrap_or_else(|| panic!("no {k} in:\n{}", r.stdout));
        assert_eq!(line.split_whitespace().nth(1), Some(all_limits()[k].to_string().as_str()));
    }
    assert!(r.stdout.contains("display name") && r.stdout.contains(" X"), "{}", r.stdout);
}

#[tokio::test]
async fn update_changes_one_limit_or_clears_them_on_request() {
    let (state, h) = stateful(tenant(Some(all_limits())));
    let mock = Mock::start(h).await;
    ok(&admin(&mock, &["update", "team-a", "--limit", "ingestion_rate=5", "--status", "active"]).await);
    let mut want = all_limits();
    want["ingestion_rate"] = json!(5);
    assert_eq!(mock.requests()[1].json()["limits"], want);

    let r = admin(&mock, &["update", "team-a", "--clear-limits", "--cluster", "prod-eu-2"]).await;
    ok(&r);
    let reqs = mock.requests();
    assert_req(
        &reqs[3],
        "PUT",
        "/admin/api/v2/tenants/team-a",
        Some(json!({"display_name": "Team A", "status": "active", "cluster": "prod-eu-2"})),
    );
    assert!(state.lock().unwrap().get("limits").is_none());
    assert!(r.stdout.contains("none (global defaults apply)"), "{}", r.stdout);
    assert!(r.stderr.contains("limits are removed"), "{}", r.stderr);

    // A tenant without limits gets none added by an unrelated update.
    ok(&admin(&mock, &["update", "team-a", "--display-name", "Y"]).await);
    assert!(mock.requests()[5].json().get("limits").is_none());
}

#[tokio::test]
async fn get_prints_all_seven_members_and_create_sends_a_subset() {
    let (_state, h) = stateful(tenant(Some(all_limits())));
    let mock = Mock::start(h).await;
    let r = admin(&mock, &["get", "team-a"]).await;
    ok(&r);
    for k in LIMITS {
        assert!(r.stdout.lines().any(|l| l.starts_with(k)), "no {k}:\n{}", r.stdout);
    }
    let r = admin(&mock, &["--output", "json", "get", "team-a"]).await;
    ok(&r);
    assert_eq!(serde_json::from_str::<Value>(&r.stdout).unwrap(), tenant(Some(all_limits())));

    let r = admin(
        &mock,
        &[
            "create",
            "team-b",
            "--cluster",
            "prod-eu-1",
            "--display-name",
            "Team B",
            "--status",
            "active",
            "--limit",
            "max_series_per_query=7",
            "--limit",
            "ingestion_rate=3",
        ],
    )
    .await;
    ok(&r);
    let reqs = mock.requests();
    assert_req(
        &reqs[2],
        "POST",
        "/admin/api/v2/tenants",
        Some(json!({"name": "team-b", "display_name": "Team B", "status": "active", "cluster": "prod-eu-1",
                    "limits": {"max_series_per_query": 7, "ingestion_rate": 3}})),
    );
    // The answer carries all seven, filled from defaults.
    let line = r.stdout.lines().find(|l| l.starts_with("ruler_max_rules_per_rule_group")).unwrap();
    assert!(line.ends_with("20"), "{line}");

    ok(&admin(&mock, &["create", "team-c", "--cluster", "c"]).await);
    assert_req(&mock.requests()[3], "POST", "/admin/api/v2/tenants", Some(json!({"name": "team-c", "cluster": "c"})));
}

#[tokio::test]
async fn bad_flags_send_nothing_and_errors_say_what_to_do() {
    let (_state, h) = stateful(tenant(None));
    let mock = Mock::start(h).await;
    for (args, want) in [
        (vec!["create", "t", "--cluster", "c", "--limit", "max_lines=1"], "limits.max_lines: not a limit"),
        (
            vec!["create", "t", "--cluster", "c", "--limit", "ingestion_rate=fast"],
            "limits.ingestion_rate: `fast` is not an integer",
        ),
        (vec!["update", "t", "--limit", "ingestion_rate"], "is not KEY=VALUE"),
        (vec!["update", "t", "--clear-limits", "--limit", "ingestion_rate=1"], "cannot be used with"),
        (vec!["create", "t"], "--cluster"),
    ] {
        let r = admin(&mock, &args).await;
        assert_eq!(r.code, 2, "{args:?}: {}", r.stderr);
        assert!(r.stderr.contains(want), "{args:?}: stderr lacks `{want}`:\n{}", r.stderr);
    }
    assert!(mock.requests().is_empty());

    let r = admin(&mock, &["get", "ghost"]).await;
    assert_eq!(r.code, 1);
    assert!(r.stderr.contains("404 Not Found: tenant `ghost` does not exist"), "{}", r.stderr);

    // An update of a missing tenant stops at the read: nothing is written.
    let r = admin(&mock, &["update", "ghost", "--display-name", "x"]).await;
    assert_eq!(r.code, 1);
    assert_eq!(mock.requests().len(), 2);
    assert_eq!(mock.requests()[1].method, "GET");

    let deny = Mock::start(|_, _| Reply::text(401, "")).await;
    let tokdir = tempfile::tempdir().unwrap();
    let tokfile = tokdir.path().join("admin-token");
    std::fs::write(&tokfile, "file-token\n").unwrap();
    let r = run(
        &[
            "admin",
            "tenants",
            "get",
            "team-a",
            "--admin-url",
            &deny.url,
            "--admin-token-file",
            tokfile.to_str().unwrap(),
        ],
        &[],
        None,
    )
    .await;
    assert_eq!(r.code, 1);
    assert!(
        r.stderr.contains("401")
            && r.stderr.contains("--admin-token-file")
            && r.stderr.contains("TAILSHIP_ADMIN_TOKEN"),
        "{}",
        r.stderr
    );
    assert!(!r.stderr.contains("file-token"));
    assert_eq!(deny.requests()[0].header("authorization"), Some("Basic OmZpbGUtdG9rZW4="));
}
