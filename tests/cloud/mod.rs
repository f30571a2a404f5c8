//! Black-box tests of `tailship cloud ...`: the real binary against a
//! recording HTTP server on 127.0.0.1 that answers as the cloud management
//! spec shows. Every request's method, path, query, headers and body are
//! asserted exactly.

use crate::mockhttp;

use std::time::Duration;

use mockhttp::{run, Mock, Reply, Req, Run};
use serde_json::{json, Value};

mod rules;
mod setup;

const TOKEN: &str = "cloud-token-5ecret-value";
const UA: &str = concat!("tailship/", env!("CARGO_PKG_VERSION"));

async fn cloud(mock: &Mock, args: &[&str]) -> Run {
    cloud_env(mock, args, &[]).await
}

async fn cloud_env(mock: &Mock, args: &[&str], env: &[(&str, &str)]) -> Run {
    let mut a = vec!["cloud", "--cloud-url", mock.url.as_str()];
    a.extend_from_slice(args);
    let mut e = vec![("TAILSHIP_CLOUD_TOKEN", TOKEN)];
    e.extend_from_slice(env);
    run(&a, &e, None).await
}

/// Asserts method, path, query and the headers every call carries; a body
/// (when given) is JSON and equal to `body`, else there is none.
fn assert_req(r: &Req, method: &str, path: &str, query: &str, body: Option<Value>) {
    assert_eq!(r.method, method, "{r:?}");
    assert_eq!(r.path, path, "{r:?}");
    assert_eq!(r.query, query, "{r:?}");
    assert_eq!(r.header("authorization"), Some(format!("Bearer {TOKEN}").as_str()), "{r:?}");
    assert_eq!(r.header("user-agent"), Some(UA));
    match body {
        Some(b) => {
            assert_eq!(r.header("content-type"), Some("application/json"), "{r:?}");
            assert_eq!(r.json(), b, "body of {method} {path}");
        }
        None => {
            assert_eq!(r.body, "", "{r:?}");
            assert_eq!(r.header("content-type"), None, "{r:?}");
        }
    }
}

/// [`assert_req`] of `call`: "METHOD PATH" with "?QUERY" when there is one.
fn assert_call(r: &Req, call: &str, body: Option<Value>) {
    let (method, target) = call.split_once(' ').unwrap();
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    assert_req(r, method, path, query, body);
}

fn ok(r: &Run) {
    assert_eq!(r.code, 0, "exit code; stdout:\n{}\nstderr:\n{}", r.stdout, r.stderr);
}

/// The words of `s`, split at spaces.
fn words(s: &str) -> Vec<&str> {
    s.split(' ').collect()
}

/// `tailship cloud ARGS` (words split at spaces) exits 0: what it printed and
/// every request the mock has seen so far.
async fn call(mock: &Mock, args: &str) -> (Run, Vec<Req>) {
    call_args(mock, &words(args)).await
}

/// [`call`] with the arguments one by one.
async fn call_args(mock: &Mock, args: &[&str]) -> (Run, Vec<Req>) {
    let r = cloud(mock, args).await;
    ok(&r);
    (r, mock.requests())
}

fn policy(id: &str, name: &str) -> Value {
    json!({
        "id": id, "orgId": "9", "name": name, "displayName": name,
        "scopes": ["logs:read"],
        "realms": [{"type": "stack", "identifier": "123", "labelPolicies": [{"selector": "{env=\"prod\"}"}]}],
        "conditions": {"allowedSubnets": ["10.0.0.0/8"]},
        "status": "active",
        "createdAt": "2024-05-01T10:00:00Z", "updatedAt": "2024-05-01T10:00:00Z",
        "someFutureField": {"kept": true}
    })
}

fn page(items: Vec<Value>, next: Option<&str>) -> Value {
    json!({"items": items, "metadata": {"pagination": {"pageSize": 2, "pageCursor": "", "nextPage": next}}})
}

fn stack(slug: &str, id: i64) -> Value {
    json!({
        "id": id, "orgId": 9, "orgSlug": "myorg", "orgName": "My Org", "type": "stack",
        "name": format!("{slug}.example.net"), "url": format!("https://{slug}.example.net"), "slug": slug,
        "version": "stable", "description": "", "status": "active", "gateway": "istio",
        "createdAt": "2024-01-01T00:00:00Z", "createdBy": "me", "updatedAt": null, "updatedBy": "",
        "trial": 0, "trialExpiresAt": null, "clusterId": 3, "clusterSlug": "prod-us-0", "clusterName": "prod-us-0",
        "plan": "gcloud", "planName": "Pro", "billingStartDate": "2024-01-01T00:00:00Z", "billingEndDate": null,
        "labels": {"team": "core"}, "deleteProtection": true, "regionId": 1, "regionSlug": "prod-us-central-0",
        "hlInstanceId": 456789, "hlInstanceUrl": "https://logs-prod.example.net", "hlInstanceName": format!("{slug}-logs"),
        "hlInstanceStatus": "active", "hlInstanceCurrentUsage": 0,
        "links": [{"rel": "self", "href": format!("/instances/{slug}")}]
    })
}

fn stack_list(items: Vec<Value>) -> Value {
    let n = items.len();
    json!({"items": items, "orderBy": "name", "direction": "asc", "total": n, "pages": 1, "pageSize": 1000000,
           "page": 0, "links": [{"rel": "self", "href": "/orgs/myorg/instances"}]})
}

// ---------------------------------------------------------------- policies

#[tokio::test]
async fn policies_create_sends_every_member_as_the_spec_names_it() {
    let mock = Mock::start(|_, _| Reply::ok(policy("p-1", "tailship-logs"))).await;
    let (r, reqs) = call_args(
        &mock,
        &[
            "policies",
            "create",
            "--region",
            "us",
            "--name",
            "tailship-logs",
            "--display-name",
            "Tailship logs",
            "--scope",
            "logs:read",
            "--scope",
            "metrics:read",
            "--realm",
            "stack:123",
            "--realm",
            "org:9",
            "--label-policy",
            "stack:123:{env=\"prod\"}",
            "--allowed-subnet",
            "10.0.0.0/8",
            "--allowed-subnet",
            "2001:db8::/32",
        ],
    )
    .await;
    assert_eq!(reqs.len(), 1);
    assert_call(
        &reqs[0],
        "POST /api/v1/accesspolicies?region=us",
        Some(json!({
            "name": "tailship-logs", "displayName": "Tailship logs",
            "scopes": ["logs:read", "metrics:read"],
            "realms": [
                {"type": "stack", "identifier": "123", "labelPolicies": [{"selector": "{env=\"prod\"}"}]},
                {"type": "org", "identifier": "9"}
            ],
            "conditions": {"allowedSubnets": ["10.0.0.0/8", "2001:db8::/32"]}
        })),
    );
    assert!(r.stdout.contains("p-1") && r.stdout.contains("stack:123 [{env=\"prod\"}]"), "{}", r.stdout);
}

#[tokio::test]
async fn policies_list_follows_next_page_over_three_pages() {
    let mock = Mock::start(|req, _| {
        let q = req.query.as_str();
        if q.ends_with("pageCursor=c3") {
            Reply::ok(page(vec![policy("p-5", "e")], None))
        } else if q.ends_with("pageCursor=c2") {
            Reply::ok(page(
                vec![policy("p-3", "c"), policy("p-4", "d")],
                Some("/api/v1/accesspolicies?pageCursor=c3&pageSize=2&region=eu"),
            ))
        } else {
            Reply::ok(page(
                vec![policy("p-1", "a"), policy("p-2", "b")],
                Some("accesspolicies?region=eu&pageSize=2&pageCursor=c2"),
            ))
        }
    })
    .await;
    let args = "policies list --region eu --name x --realm-type stack --realm-id 123 --status active --page-size 2 --output json";
    let (r, reqs) = call(&mock, args).await;
    assert_eq!(reqs.len(), 3);
    let base = "region=eu&name=x&realmType=stack&realmIdentifier=123&status=active&pageSize=2";
    assert_req(&reqs[0], "GET", "/api/v1/accesspolicies", base, None);
    assert_req(&reqs[1], "GET", "/api/v1/accesspolicies", &format!("{base}&pageCursor=c2"), None);
    assert_req(&reqs[2], "GET", "/api/v1/accesspolicies", &format!("{base}&pageCursor=c3"), None);
    let items = r.json();
    let ids: Vec<&str> = items.as_array().unwrap().iter().map(|i| i["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["p-1", "p-2", "p-3", "p-4", "p-5"]);
    // Unknown members reach --output json untouched.
    assert_eq!(items[0]["someFutureField"], json!({"kept": true}));

    // --limit stops reading pages once it has enough.
    let args = "policies list --region eu --limit 3";
    let (r, reqs) = call(&mock, args).await;
    assert_eq!(reqs.len(), 5);
    assert_eq!(reqs[3].query, "region=eu");
    assert_eq!(reqs[4].query, "region=eu&pageCursor=c2");
    assert_eq!(r.stdout.lines().count(), 4, "header and 3 rows:\n{}", r.stdout);
    assert!(r.stdout.starts_with("ID "), "{}", r.stdout);
}

#[tokio::test]
async fn policies_get_and_delete() {
    let mock = Mock::start(|req, _| match req.method.as_str() {
        "DELETE" => Reply::empty(204),
        _ => Reply::ok(policy("4b0e8f34-1111-2222-3333-444455556666", "a")),
    })
    .await;
    let id = "4b0e8f34-1111-2222-3333-444455556666";
    let r = cloud(&mock, &["policies", "get", id, "--region", "au"]).await;
    ok(&r);
    assert!(r.stdout.contains("allowed subnets  10.0.0.0/8"), "{}", r.stdout);
    let r = cloud(&mock, &["policies", "delete", id, "--region", "au"]).await;
    ok(&r);
    assert_eq!(r.stdout.trim(), format!("deleted access policy {id}"));
    let reqs = mock.requests();
    assert_req(&reqs[0], "GET", &format!("/api/v1/accesspolicies/{id}"), "region=au", None);
    assert_req(&reqs[1], "DELETE", &format!("/api/v1/accesspolicies/{id}"), "region=au", None);
}

#[tokio::test]
async fn policies_update_reads_first_and_sends_back_what_was_not_given() {
    let mock = Mock::start(|req, _| {
        if req.method == "GET" {
            Reply::ok(policy("p-1", "a"))
        } else {
            let mut p = policy("p-1", "a");
            p["displayName"] = json!("New name");
            Reply::ok(p)
        }
    })
    .await;
    let (_, reqs) =
        call_args(&mock, &["policies", "update", "p-1", "--region", "us", "--display-name", "New name"]).await;
    assert_eq!(reqs.len(), 2);
    assert_call(&reqs[0], "GET /api/v1/accesspolicies/p-1?region=us", None);
    assert_call(
        &reqs[1],
        "POST /api/v1/accesspolicies/p-1?region=us",
        Some(json!({
            "displayName": "New name",
            "scopes": ["logs:read"],
            "realms": [{"type": "stack", "identifier": "123", "labelPolicies": [{"selector": "{env=\"prod\"}"}]}],
            "conditions": {"allowedSubnets": ["10.0.0.0/8"]},
            "status": "active"
        })),
    );

    // --clear-conditions sends `conditions: {}`; --status and --scope/--realm replace.
    let args = "policies update p-1 --region us --clear-conditions --status inactive --scope logs:write --realm org:9";
    let (_, reqs) = call(&mock, args).await;
    assert_eq!(reqs.len(), 4);
    assert_call(
        &reqs[3],
        "POST /api/v1/accesspolicies/p-1?region=us",
        Some(json!({
            "displayName": "a",
            "scopes": ["logs:write"],
            "realms": [{"type": "org", "identifier": "9"}],
            "conditions": {},
            "status": "inactive"
        })),
    );

    // New subnets replace the current ones.
    let args = "policies update p-1 --region us --allowed-subnet 192.168.0.0/16";
    let (_, reqs) = call(&mock, args).await;
    assert_eq!(reqs[5].json()["conditions"], json!({"allowedSubnets": ["192.168.0.0/16"]}));
}

// ---------------------------------------------------------------- tokens

fn token_json(id: &str, secret: Option<&str>) -> Value {
    let mut t = json!({
        "id": id, "accessPolicyId": "p-1", "name": "ship-1", "displayName": "ship-1",
        "expiresAt": "2030-01-31T00:00:00Z", "firstUsedAt": null, "lastUsedAt": null,
        "createdAt": "2024-05-01T10:00:00Z", "updatedAt": "2024-05-01T10:00:00Z"
    });
    if let Some(s) = secret {
        t["token"] = json!(s);
    }
    t
}

#[tokio::test]
async fn tokens_create_prints_the_secret_once_and_never_logs_it() {
    let secret = "glc_THE-SECRET-VALUE-123";
    let mock = Mock::start(move |_, _| Reply::ok(token_json("t-1", Some(secret)))).await;
    let r = cloud_env(
        &mock,
        &[
            "tokens",
            "create",
            "--region",
            "us",
            "--policy-id",
            "p-1",
            "--name",
            "ship-1",
            "--display-name",
            "Ship one",
            "--expires-at",
            "2030-01-31T00:00:00+00:00",
        ],
        &[("RUST_LOG", "trace")],
    )
    .await;
    ok(&r);
    assert_req(
        &mock.requests()[0],
        "POST",
        "/api/v1/tokens",
        "region=us",
        Some(
            json!({"accessPolicyId": "p-1", "name": "ship-1", "displayName": "Ship one", "expiresAt": "2030-01-31T00:00:00Z"}),
        ),
    );
    assert_eq!(r.stdout.matches(secret).count(), 1, "{}", r.stdout);
    assert!(!r.stderr.contains(secret), "the secret reached the logs:\n{}", r.stderr);
    assert!(!r.stderr.contains(TOKEN), "the cloud token reached the logs");
    assert!(r.stderr.contains("only time the token is shown"), "{}", r.stderr);
}

#[tokio::test]
async fn tokens_list_get_update_delete() {
    let mock = Mock::start(|req, _| match (req.method.as_str(), req.path.as_str()) {
        ("GET", "/api/v1/tokens") => Reply::ok(page(vec![token_json("t-1", None)], None)),
        ("DELETE", _) => Reply::empty(204),
        _ => Reply::ok(token_json("t-1", None)),
    })
    .await;
    let r = cloud(
        &mock,
        &words("tokens list --region us --policy-id p-1 --name ship-1 --expires-before 2031-01-01T00:00:00Z --expires-after 2029-01-01T00:00:00Z"),
    )
    .await;
    ok(&r);
    assert!(r.stdout.contains("t-1") && r.stdout.contains("2030-01-31T00:00:00Z"), "{}", r.stdout);
    ok(&cloud(&mock, &["tokens", "get", "t-1", "--region", "us"]).await);
    ok(&cloud(&mock, &["tokens", "update", "t-1", "--region", "us", "--no-expiry"]).await);
    ok(&cloud(
        &mock,
        &["tokens", "update", "t-1", "--region", "us", "--display-name", "D", "--expires-at", "2032-02-02T02:02:02Z"],
    )
    .await);
    let r = cloud(&mock, &["tokens", "delete", "t-1", "--region", "us", "--output", "json"]).await;
    ok(&r);
    assert_eq!(r.json(), json!({"deleted": "token", "id": "t-1"}));
    let reqs = mock.requests();
    assert_eq!(reqs.len(), 5);
    assert_call(&reqs[0], "GET /api/v1/tokens?region=us&accessPolicyId=p-1&name=ship-1&expiresBefore=2031-01-01T00%3A00%3A00Z&expiresAfter=2029-01-01T00%3A00%3A00Z", None,
    );
    assert_call(&reqs[1], "GET /api/v1/tokens/t-1?region=us", None);
    assert_call(&reqs[2], "POST /api/v1/tokens/t-1?region=us", Some(json!({"expiresAt": null})));
    assert_call(
        &reqs[3],
        "POST /api/v1/tokens/t-1?region=us",
        Some(json!({"displayName": "D", "expiresAt": "2032-02-02T02:02:02Z"})),
    );
    assert_call(&reqs[4], "DELETE /api/v1/tokens/t-1?region=us", None);
}

// ---------------------------------------------------------------- stacks

#[tokio::test]
async fn stacks_list_create_update_delete_connections() {
    let mock = Mock::start(|req, _| match (req.method.as_str(), req.path.as_str()) {
        ("GET", "/api/orgs/myorg/instances") => Reply::ok(stack_list(vec![stack("alpha", 11), stack("beta", 12)])),
        ("GET", "/api/instances/alpha/connections") => Reply::ok(json!({
            "privateConnectivityInfo": {
                "tenants": [{"type": "logs", "id": 456789, "info": {"privateDNS": "logs.private", "serviceName": "svc-logs"}, "ipAllowListCNAME": null}],
                "otlp": {"privateDNS": "otlp.private", "serviceName": "svc-otlp"},
                "pdc": {"api": {"privateDNS": "a", "serviceName": "b"}, "gateway": {"privateDNS": "c", "serviceName": "d"}}
            },
            "influxUrl": "https://influx.example", "otlpHttpUrl": "https://otlp.example", "oncallApiUrl": "https://oncall.example",
            "appPlatform": {"url": "https://app.example", "caData": "<CA_PUBLIC_KEY>"}
        })),
        ("DELETE", _) => Reply::empty(200),
        _ => Reply::ok(stack("alpha", 11)),
    })
    .await;
    let r = cloud(&mock, &["stacks", "list", "--org", "myorg"]).await;
    ok(&r);
    let lines: Vec<&str> = r.stdout.lines().collect();
    assert_eq!(lines.len(), 3, "{}", r.stdout);
    assert!(lines[1].starts_with("alpha") && lines[1].contains("prod-us-central-0") && lines[1].contains("team=core"));
    let r = cloud(
        &mock,
        &[
            "stacks",
            "create",
            "--name",
            "alpha.example.net",
            "--slug",
            "alpha",
            "--region",
            "eu",
            "--description",
            "logs for team core",
            "--label",
            "team=core",
            "--label",
            "app.io/tier=web-1",
            "--delete-protection",
        ],
    )
    .await;
    ok(&r);
    ok(&cloud(&mock, &["stacks", "update", "alpha", "--delete-protection=false", "--description", "retired"]).await);
    ok(&cloud(&mock, &["stacks", "update", "alpha", "--clear-labels"]).await);
    let r = cloud(&mock, &["stacks", "update", "alpha", "--label", "env=prod"]).await;
    ok(&r);
    assert!(r.stderr.contains("labels not listed are removed"), "{}", r.stderr);
    ok(&cloud(&mock, &["stacks", "update", "alpha", "--label", "env=prod", "--org", "myorg"]).await);
    let r = cloud(&mock, &["stacks", "connections", "alpha"]).await;
    ok(&r);
    assert!(r.stdout.contains("otlp.private") && r.stdout.contains("svc-logs"), "{}", r.stdout);
    let r = cloud(&mock, &["stacks", "delete", "alpha"]).await;
    ok(&r);
    assert_eq!(r.stdout.trim(), "deleted stack alpha");

    let reqs = mock.requests();
    assert_eq!(reqs.len(), 9);
    assert_call(&reqs[0], "GET /api/orgs/myorg/instances", None);
    assert_call(
        &reqs[1],
        "POST /api/instances",
        Some(json!({"name": "alpha.example.net", "slug": "alpha", "region": "eu", "description": "logs for team core",
                    "labels": {"team": "core", "app.io/tier": "web-1"}, "deleteProtection": true})),
    );
    assert_call(
        &reqs[2],
        "POST /api/instances/alpha",
        Some(json!({"description": "retired", "deleteProtection": false})),
    );
    assert_call(&reqs[3], "POST /api/instances/alpha", Some(json!({"labels": {}})));
    assert_call(&reqs[4], "POST /api/instances/alpha", Some(json!({"labels": {"env": "prod"}})));
    // With --org, the current labels are read and kept.
    assert_call(&reqs[5], "GET /api/orgs/myorg/instances", None);
    assert_call(&reqs[6], "POST /api/instances/alpha", Some(json!({"labels": {"env": "prod", "team": "core"}})));
    assert_call(&reqs[7], "GET /api/instances/alpha/connections", None);
    assert_call(&reqs[8], "DELETE /api/instances/alpha", None);
}

// ---------------------------------------------------------------- errors

#[tokio::test]
async fn error_statuses_become_messages_a_person_can_act_on() {
    let mock = Mock::start(|req, _| match (req.method.as_str(), req.path.as_str()) {
        ("GET", "/api/orgs/locked/instances") => Reply::text(401, r#"{"message":"invalid token"}"#),
        ("GET", "/api/instances/secret/connections") => Reply::text(403, ""),
        ("GET", p) if p.starts_with("/api/v1/accesspolicies/") => Reply::text(404, r#"{"message":"not found"}"#),
        ("DELETE", "/api/instances/guarded") => Reply::text(409, r#"{"message":"delete protection enabled"}"#),
        ("POST", "/api/v1/accesspolicies") => Reply::text(409, r#"{"message":"name taken"}"#),
        ("POST", "/api/v1/tokens") => Reply::text(400, r#"{"message":"bad expiresAt"}"#),
        _ => Reply::text(500, "boom"),
    })
    .await;
    let cases: Vec<(Vec<&str>, Vec<&str>)> = vec![
        (
            vec!["stacks", "list", "--org", "locked"],
            vec!["401", "token is missing or invalid", "--token-file", "TAILSHIP_CLOUD_TOKEN"],
        ),
        (vec!["stacks", "connections", "secret"], vec!["403", "lacks the scope", "connections of stack `secret`"]),
        (
            vec!["policies", "get", "nope", "--region", "eu"],
            vec!["404", "access policy `nope` in region `eu` does not exist"],
        ),
        (
            vec!["stacks", "delete", "guarded"],
            vec!["409", "delete protection on", "tailship cloud stacks update guarded --delete-protection=false"],
        ),
        (
            vec!["policies", "create", "--region", "us", "--name", "a", "--scope", "logs:write", "--realm", "org:1"],
            vec!["409", "create access policy `a`", "conflicts with an existing one", "name taken"],
        ),
        (vec!["tokens", "create", "--region", "us", "--policy-id", "p", "--name", "t"], vec!["400", "bad expiresAt"]),
    ];
    for (args, wants) in &cases {
        let r = cloud(&mock, args).await;
        assert_eq!(r.code, 1, "{args:?}: {}", r.stderr);
        for w in wants {
            assert!(r.stderr.contains(w), "{args:?}: stderr lacks `{w}`:\n{}", r.stderr);
        }
        assert!(!r.stderr.contains(TOKEN));
    }
    // Each failed once: 4xx are never retried.
    assert_eq!(mock.requests().len(), cases.len());
}

#[tokio::test]
async fn status_429_is_retried_with_backoff_and_a_create_is_never_resent_after_5xx() {
    let mock = Mock::start(|req, i| match (req.method.as_str(), i) {
        ("GET", 0) => Reply::text(429, "slow down").with_header("retry-after", "0"),
        ("GET", 1) => Reply::text(429, "slow down"),
        ("GET", _) => Reply::ok(page(vec![policy("p-1", "a")], None)),
        ("POST", 3) => Reply::text(429, ""),
        ("POST", 4) => Reply::ok(token_json("t-9", Some("glc_x"))),
        _ => Reply::text(503, "down"),
    })
    .await;
    let args = "--retry-min-backoff 20ms policies list --region us";
    let (r, reqs) = call(&mock, args).await;
    assert_eq!(reqs.len(), 3);
    assert!(reqs.iter().all(|q| q.query == "region=us" && q.path == "/api/v1/accesspolicies"));
    // The waits grow from the minimum backoff (20ms, up to 100% jitter).
    assert!(reqs[1].at - reqs[0].at >= Duration::from_millis(20), "{:?}", reqs[1].at - reqs[0].at);
    assert!(reqs[2].at - reqs[1].at >= Duration::from_millis(40), "{:?}", reqs[2].at - reqs[1].at);
    assert_eq!(r.stderr.matches("retrying").count(), 2, "{}", r.stderr);

    // A create is retried on 429 (the service did not act on it)...
    let args =
        ["--retry-min-backoff", "10ms", "tokens", "create", "--region", "us", "--policy-id", "p-1", "--name", "t"];
    ok(&cloud(&mock, &args).await);
    assert_eq!(mock.requests().len(), 5);
    // ...but not on 503: it may have been applied.
    let r = cloud(&mock, &args).await;
    assert_eq!(r.code, 1);
    assert!(r.stderr.contains("503"), "{}", r.stderr);
    assert_eq!(mock.requests().len(), 6);
}

// ---------------------------------------------------------------- pacing

#[tokio::test]
async fn access_policy_calls_are_paced_and_token_calls_are_not() {
    // 36000 per hour = one call per 100 ms after a burst of 1: the three pages
    // of a policy list arrive at least 100 ms apart. (The default pace, 580 per
    // hour with a burst of 10, is measured without waiting in the unit tests
    // of src/cloud/pace.rs.)
    let mock = Mock::start(|req, _| {
        let q = req.query.as_str();
        let body = |items| {
            if q.ends_with("c3") {
                page(items, None)
            } else if q.ends_with("c2") {
                page(items, Some("/x?pageCursor=c3"))
            } else {
                page(items, Some("/x?pageCursor=c2"))
            }
        };
        if req.path.ends_with("tokens") {
            Reply::ok(body(vec![token_json("t", None)]))
        } else {
            Reply::ok(body(vec![policy("p", "a")]))
        }
    })
    .await;
    let pace = ["--pace-per-hour", "36000", "--pace-burst", "1"];
    let started = std::time::Instant::now();
    let r = cloud(&mock, &[&pace[..], &["policies", "list", "--region", "us"]].concat()).await;
    ok(&r);
    let reqs = mock.requests();
    assert_eq!(reqs.len(), 3);
    // 10 calls/s with a burst of 1: the third call cannot be sent before 200 ms
    // after the first, which was sent after `started`. (Gaps between single
    // arrivals jitter on a loaded machine; this bound cannot.)
    let third = reqs[2].at - started;
    assert!(third >= Duration::from_millis(195), "third policy call after {third:?}");
    assert_eq!(r.stderr.matches("pacing access policy calls").count(), 2, "{}", r.stderr);

    let r = cloud(&mock, &[&pace[..], &["tokens", "list", "--region", "us"]].concat()).await;
    ok(&r);
    assert_eq!(mock.requests().len(), 6);
    assert!(!r.stderr.contains("pacing"), "{}", r.stderr);
}
