//! `tailship cloud` commands that break a rule (a missing token, a bad
//! argument) refuse with nothing sent.

use super::*;

#[tokio::test]
async fn every_rule_refuses_with_nothing_sent() {
    let mock = Mock::start(|_, _| Reply::ok(json!({}))).await;
    let long = "a".repeat(256);
    let eleven: Vec<String> = (0..11).map(|i| format!("k{i}=v")).collect();
    let mut labels_args: Vec<&str> = vec!["stacks", "create", "--name", "s.example.net", "--slug", "s"];
    for l in &eleven {
        labels_args.push("--label");
        labels_args.push(l);
    }
    let pc = ["policies", "create", "--region", "us"];
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            [&pc[..], &["--name", "Bad", "--scope", "logs:read", "--realm", "org:1"]].concat(),
            "name: `B` is not allowed",
        ),
        (
            [&pc[..], &["--name", "a.b", "--scope", "logs:read", "--realm", "org:1"]].concat(),
            "name: `.` is not allowed",
        ),
        (
            [&pc[..], &["--name", &long, "--scope", "logs:read", "--realm", "org:1"]].concat(),
            "name: must be 1-255 characters, got 256",
        ),
        (
            [&pc[..], &["--name", "a", "--display-name", &long, "--scope", "logs:read", "--realm", "org:1"]].concat(),
            "displayName: must be 1-255",
        ),
        ([&pc[..], &["--name", "a", "--realm", "org:1"]].concat(), "scopes: at least one scope is required"),
        ([&pc[..], &["--name", "a", "--scope", "logs:read"]].concat(), "realms: at least one realm is required"),
        (
            [&pc[..], &["--name", "a", "--scope", "logs:read", "--realm", "team:1"]].concat(),
            "realms[0]: `team` is not a realm type",
        ),
        (
            [
                &pc[..],
                &["--name", "a", "--scope", "logs:write", "--realm", "stack:1", "--label-policy", "stack:1:{a=\"b\"}"],
            ]
            .concat(),
            "realms[0].labelPolicies: label policies are available only with read scopes",
        ),
        (
            [
                &pc[..],
                &["--name", "a", "--scope", "logs:read", "--realm", "stack:1", "--label-policy", "stack:2:{a=\"b\"}"],
            ]
            .concat(),
            "labelPolicies: `stack:2:{a=\"b\"}`: no --realm stack:2",
        ),
        (
            [&pc[..], &["--name", "a", "--scope", "logs:read", "--realm", "org:1", "--allowed-subnet", "10.0.0.0/33"]]
                .concat(),
            "conditions.allowedSubnets[0]",
        ),
        (
            [&pc[..], &["--name", "a", "--scope", "logs:read", "--realm", "org:1", "--allowed-subnet", "10.1.2.3"]]
                .concat(),
            "no /prefix length",
        ),
        (
            [&pc[..], &["--name", "a", "--scope", "logs:read", "--realm", "org:1", "--allowed-subnet", "fe80::zz/64"]]
                .concat(),
            "not an IP address",
        ),
        (
            vec!["policies", "update", "p", "--region", "us", "--allowed-subnet", "300.0.0.0/8"],
            "conditions.allowedSubnets[0]",
        ),
        (vec!["policies", "update", "p", "--region", "us"], "nothing to update"),
        (vec!["policies", "list", "--region", "us", "--page-size", "501"], "pageSize: 501 is not between 1 and 500"),
        (
            vec!["policies", "list", "--region", "us", "--realm-id", "5"],
            "realmIdentifier: is accepted only together with realmType",
        ),
        (vec!["policies", "list", "--region", "us", "--realm-type", "team"], "realmType: `team` is not a realm type"),
        (vec!["policies", "get", "p", "--region", ""], "region: is required"),
        (
            vec!["tokens", "list", "--region", "us", "--realm-id", "5"],
            "accessPolicyRealmIdentifier: is accepted only together",
        ),
        (vec!["tokens", "list", "--region", "us", "--page-size", "0"], "pageSize: 0 is not between 1 and 500"),
        (
            vec!["tokens", "list", "--region", "us", "--expires-before", "2030-01-01"],
            "expiresBefore: `2030-01-01` is not an ISO 8601 UTC time",
        ),
        (
            vec![
                "tokens",
                "create",
                "--region",
                "us",
                "--policy-id",
                "p",
                "--name",
                "t",
                "--expires-at",
                "2030-01-01T00:00:00+02:00",
            ],
            "expiresAt: `2030-01-01T00:00:00+02:00` is not in UTC",
        ),
        (vec!["tokens", "create", "--region", "us", "--policy-id", "p", "--name", "T_1"], "name: `T` is not allowed"),
        (vec!["tokens", "update", "t", "--region", "us"], "nothing to update"),
        (
            vec!["tokens", "update", "t", "--region", "us", "--expires-at", "soon"],
            "expiresAt: `soon` is not an ISO 8601 UTC time",
        ),
        (labels_args.clone(), "labels: 11 labels; a stack carries at most 10"),
        (
            vec!["stacks", "create", "--name", "s", "--slug", "s", "--label", "team=a_b"],
            "labels.team: `_` in the value is not allowed",
        ),
        (
            vec!["stacks", "create", "--name", "s", "--slug", "s", "--label", "Team=a"],
            "labels.Team: key: `T` is uppercase",
        ),
        (vec!["stacks", "create", "--name", "S.example.net", "--slug", "s"], "name: `S` is uppercase"),
        (vec!["stacks", "create", "--name", "s", "--slug", "Prod"], "slug: `P` is uppercase"),
        (
            vec!["stacks", "create", "--name", "s", "--slug", "s", "--description", "For Team"],
            "description: `F` is uppercase",
        ),
        (vec!["stacks", "update", "s", "--name", "New"], "name: `N` is uppercase"),
        (vec!["stacks", "update", "s", "--label", "a=b!"], "labels.a: `!` in the value is not allowed"),
        (vec!["stacks", "update", "s"], "nothing to update"),
    ];
    for (args, want) in &cases {
        let r = cloud(&mock, args).await;
        assert_eq!(r.code, 2, "{args:?} should be a usage error; stderr: {}", r.stderr);
        assert!(r.stderr.contains(want), "{args:?}: stderr lacks `{want}`:\n{}", r.stderr);
        assert!(mock.requests().is_empty(), "{args:?} sent a request");
    }

    // Flags clap refuses: --region is required; exclusive flags.
    for args in [
        vec!["policies", "list"],
        vec!["tokens", "get", "t"],
        vec!["tokens", "update", "t", "--region", "us", "--no-expiry", "--expires-at", "2030-01-01T00:00:00Z"],
        vec!["policies", "update", "p", "--region", "us", "--clear-conditions", "--allowed-subnet", "10.0.0.0/8"],
        vec!["stacks", "update", "s", "--clear-labels", "--label", "a=b"],
    ] {
        let r = cloud(&mock, &args).await;
        assert_eq!(r.code, 2, "{args:?}: {}", r.stderr);
    }
    assert!(mock.requests().is_empty());

    // No token at all: refused before sending.
    let r = run(&["cloud", "--cloud-url", &mock.url, "stacks", "list", "--org", "o"], &[], None).await;
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("--token-file") && r.stderr.contains("TAILSHIP_CLOUD_TOKEN"), "{}", r.stderr);
    assert!(mock.requests().is_empty());
}
