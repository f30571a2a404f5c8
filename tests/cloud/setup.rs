//! `tailship cloud setup`: a policy, a token and the agent config, made or
//! found again.

use super::*;

fn setup_mock(existing_policy: Option<Value>) -> impl Fn(&Req, usize) -> Reply + Send + Sync + 'static {
    move |req, _| match (req.method.as_str(), req.path.as_str()) {
        ("GET", "/api/orgs/myorg/instances") => Reply::ok(stack_list(vec![stack("other", 1), stack("mystack", 4242)])),
        ("GET", "/api/v1/accesspolicies") => Reply::ok(page(existing_policy.iter().cloned().collect(), None)),
        ("POST", "/api/v1/accesspolicies") => {
            let mut p = req.json();
            p["id"] = json!("ap-new");
            p["orgId"] = json!("9");
            Reply::ok(p)
        }
        ("POST", "/api/v1/tokens") => {
            let b = req.json();
            Reply::ok(json!({"id": "tok-1", "accessPolicyId": b["accessPolicyId"], "name": b["name"],
                             "displayName": b["name"], "expiresAt": null, "token": "glc_SETUP-SECRET"}))
        }
        _ => Reply::text(404, ""),
    }
}

#[tokio::test]
async fn setup_creates_policy_and_token_and_writes_a_config_that_checks() {
    let mock = Mock::start(setup_mock(None)).await;
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("tailship.toml");
    let r = cloud_env(
        &mock,
        &["setup", "--org", "myorg", "--stack", "mystack", "--write-config", cfg.to_str().unwrap()],
        &[("RUST_LOG", "debug")],
    )
    .await;
    ok(&r);
    let reqs = mock.requests();
    assert_eq!(reqs.len(), 4);
    assert_call(&reqs[0], "GET /api/orgs/myorg/instances", None);
    let region = "region=prod-us-central-0";
    assert_req(&reqs[1], "GET", "/api/v1/accesspolicies", &format!("{region}&name=tailship-mystack-logs-write"), None);
    assert_req(
        &reqs[2],
        "POST",
        "/api/v1/accesspolicies",
        region,
        Some(json!({
            "name": "tailship-mystack-logs-write",
            "displayName": "tailship logs write for mystack",
            "scopes": ["logs:write"],
            "realms": [{"type": "stack", "identifier": "4242"}]
        })),
    );
    let tb = reqs[3].json();
    assert_eq!(reqs[3].path, "/api/v1/tokens");
    assert_eq!(reqs[3].query, region);
    assert_eq!(tb["accessPolicyId"], "ap-new");
    let name = tb["name"].as_str().unwrap();
    assert!(
        name.starts_with("tailship-mystack-") && name["tailship-mystack-".len()..].parse::<u64>().is_ok(),
        "{name}"
    );
    assert_eq!(tb.as_object().unwrap().len(), 2, "{tb}");

    let token_file = dir.path().join("mystack-token");
    assert_eq!(std::fs::read_to_string(&token_file).unwrap(), "glc_SETUP-SECRET\n");
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(std::fs::metadata(&token_file).unwrap().permissions().mode() & 0o777, 0o600);
    let text = std::fs::read_to_string(&cfg).unwrap();
    assert!(text.contains("url = \"https://logs-prod.example.net\""), "{text}");
    assert!(text.contains("username = \"456789\""), "{text}");
    assert!(text.contains(&format!("password_file = \"{}\"", token_file.display())), "{text}");
    assert!(!text.contains("SETUP-SECRET"));
    assert!(!r.stdout.contains("SETUP-SECRET") && !r.stderr.contains("SETUP-SECRET"), "{}\n{}", r.stdout, r.stderr);

    let check = run(&["check", "--config", cfg.to_str().unwrap()], &[], None).await;
    assert_eq!(check.code, 0, "{}", check.stderr);
    assert!(check.stdout.contains("456789"), "{}", check.stdout);
    assert!(!check.stdout.contains("SETUP-SECRET"));

    // A second run refuses to overwrite the files, before sending anything.
    let r =
        cloud(&mock, &["setup", "--org", "myorg", "--stack", "mystack", "--write-config", cfg.to_str().unwrap()]).await;
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("already exists") && r.stderr.contains("--force"), "{}", r.stderr);
    assert_eq!(mock.requests().len(), 4);
}

#[tokio::test]
async fn setup_reuses_a_policy_of_the_same_name_and_prints_the_config() {
    let existing = json!({
        "id": "ap-old", "name": "tailship-mystack-logs-write", "displayName": "x", "status": "active",
        "scopes": ["logs:write"], "realms": [{"type": "stack", "identifier": "4242"}]
    });
    let mock = Mock::start(setup_mock(Some(existing))).await;
    let dir = tempfile::tempdir().unwrap();
    let mut a = vec!["cloud", "--cloud-url", mock.url.as_str()];
    a.extend(["setup", "--org", "myorg", "--stack", "mystack", "--region", "us"]);
    let r = run(&a, &[("TAILSHIP_CLOUD_TOKEN", TOKEN)], Some(dir.path())).await;
    ok(&r);
    let reqs = mock.requests();
    assert_eq!(reqs.len(), 3, "no policy is created");
    assert_eq!(reqs[1].query, "region=us&name=tailship-mystack-logs-write");
    assert_eq!((reqs[2].path.as_str(), reqs[2].json()["accessPolicyId"].as_str()), ("/api/v1/tokens", Some("ap-old")));
    assert!(r.stderr.contains("reused access policy tailship-mystack-logs-write (ap-old)"), "{}", r.stderr);
    // The config goes to stdout, the token to ./mystack-token.
    let token_file = dir.path().canonicalize().unwrap().join("mystack-token");
    assert!(r.stdout.contains("[client]") && r.stdout.contains(&token_file.display().to_string()), "{}", r.stdout);
    assert_eq!(std::fs::read_to_string(&token_file).unwrap(), "glc_SETUP-SECRET\n");
    let cfg = dir.path().join("printed.toml");
    std::fs::write(&cfg, &r.stdout).unwrap();
    assert_eq!(run(&["check", "--config", cfg.to_str().unwrap()], &[], None).await.code, 0);
}

#[tokio::test]
async fn setup_refuses_a_same_named_policy_that_cannot_write_logs() {
    let existing = json!({
        "id": "ap-old", "name": "tailship-mystack-logs-write", "status": "active",
        "scopes": ["logs:read"], "realms": [{"type": "stack", "identifier": "4242"}]
    });
    let mock = Mock::start(setup_mock(Some(existing))).await;
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("t");
    let r =
        cloud(&mock, &["setup", "--org", "myorg", "--stack", "mystack", "--token-out", out.to_str().unwrap()]).await;
    assert_eq!(r.code, 1);
    assert!(
        r.stderr.contains("lacks scope logs:write") && r.stderr.contains("tailship cloud policies update ap-old"),
        "{}",
        r.stderr
    );
    assert_eq!(mock.requests().len(), 2, "no token is created");
    assert!(!out.exists());

    let r =
        cloud(&mock, &["setup", "--org", "myorg", "--stack", "missing", "--token-out", out.to_str().unwrap()]).await;
    assert_eq!(r.code, 1);
    assert!(r.stderr.contains("stack `missing` is not in the stack list of org `myorg`"), "{}", r.stderr);
}
