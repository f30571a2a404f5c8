//! Tenants and credentials: `--org-id a|b`, basic auth, and `labels`
//! bounded by `--since`.

use super::*;

fn push_as(r: &Receiver, tenant: &str, body: &str) {
    let resp = request(
        "POST",
        &r.api("/push"),
        &[("Content-Type", "application/json"), ("X-Scope-OrgID", tenant)],
        body.as_bytes(),
    );
    assert_eq!(resp.status, 204, "{}", resp.text());
}

#[test]
fn multi_tenant_org_id_a_pipe_b_queries_and_tails_both() {
    let r = Receiver::start(&["--multi-tenant"]);
    let t = now_ns() - 60_000_000_000;
    push_as(&r, "a", &push_body(&[("job", "mt")], &[(t, "from a")]));
    push_as(&r, "b", &push_body(&[("job", "mt")], &[(t + 1, "from b")]));
    let out = ok(&run(&r.base, &["query", r#"{job="mt"}"#, "--org-id", "a|b", "-o", "jsonl"]));
    let mut got: Vec<(String, String)> =
        jsonl(&out).into_iter().map(|(_, l, line)| (l["__tenant_id__"].clone(), line)).collect();
    got.sort();
    assert_eq!(got, vec![("a".into(), "from a".into()), ("b".into(), "from b".into())]);
    // One tenant from the environment.
    let o =
        tailship(&r.base, &["query", r#"{job="mt"}"#, "-o", "raw"]).env("TAILSHIP_ORG_ID", "b").output().expect("run");
    assert_eq!(ok(&o).trim(), "from b");
    // No tenant: the service refuses, exit 1.
    let o = run(&r.base, &["query", r#"{job="mt"}"#]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("401"), "{}", stderr(&o));
    // A push still refuses `a|b` before sending anything.
    let o = run(&r.base, &["push", "--org-id", "a|b", "/dev/null"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    // tail over both tenants.
    let tail =
        Tail::start(&r.base, &["tail", r#"{job="mt"}"#, "--org-id", "a|b", "--since", "10s", "--interval", "100ms"]);
    let n = now_ns();
    push_as(&r, "a", &push_body(&[("job", "mt")], &[(n, "live a")]));
    push_as(&r, "b", &push_body(&[("job", "mt")], &[(n, "live b")]));
    let want = vec!["live a".to_string(), "live b".to_string()];
    tail.wait_for_lines(&want);
    assert_each_once(&tail.stop(libc::SIGTERM), &want);
}

#[test]
fn basic_auth_for_query_and_labels() {
    let dir = tempfile::tempdir().expect("tempdir");
    let pw = dir.path().join("pw");
    std::fs::write(&pw, "s3cret\n").expect("write");
    let bad = dir.path().join("bad");
    std::fs::write(&bad, "wrong\n").expect("write");
    let pw_s = pw.to_str().expect("path");
    let r = Receiver::start(&["--basic-auth-user", "u", "--basic-auth-password-file", pw_s]);
    let t = now_ns() - 60_000_000_000;
    let resp = request(
        "POST",
        &r.api("/push"),
        &[("Content-Type", "application/json"), ("Authorization", "Basic dTpzM2NyZXQ=")],
        push_body(&[("job", "auth"), ("env", "prod")], &[(t, "secret line")]).as_bytes(),
    );
    assert_eq!(resp.status, 204, "{}", resp.text());
    let auth = ["--username", "u", "--password-file", pw_s];
    let q = [&["query", r#"{job="auth"}"#, "-o", "raw"][..], &auth[..]].concat();
    assert_eq!(ok(&run(&r.base, &q)).trim(), "secret line");
    let l = [&["labels"][..], &auth[..]].concat();
    assert_eq!(ok(&run(&r.base, &l)).lines().collect::<Vec<_>>(), vec!["env", "job"]);
    let lv = [&["labels", "env"][..], &auth[..]].concat();
    assert_eq!(ok(&run(&r.base, &lv)).trim(), "prod");
    // The same settings from the environment.
    let o = tailship(&r.base, &["labels", "job"])
        .env("TAILSHIP_USERNAME", "u")
        .env("TAILSHIP_PASSWORD_FILE", &pw)
        .output()
        .expect("run");
    assert_eq!(ok(&o).trim(), "auth");
    // A wrong password is a runtime failure that names the status, not the secret.
    let o = run(&r.base, &["query", r#"{job="auth"}"#, "--username", "u", "--password-file", bad.to_str().expect("p")]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("401") && !stderr(&o).contains("wrong"), "{}", stderr(&o));
    // Without credentials too.
    assert_eq!(run(&r.base, &["labels"]).status.code(), Some(1));
}

#[test]
fn labels_lists_names_and_values_bounded_by_since() {
    let r = Receiver::start(&[]);
    let now = now_ns();
    let body = push_body_streams(&[
        (&[("job", "old"), ("legacy", "yes")], &[(now - 2 * HOUR_NS, "old line")]),
        (&[("job", "new"), ("level", "info")], &[(now - 60_000_000_000, "new line")]),
    ]);
    assert_eq!(r.push(&body).status, 204);
    let names = ok(&run(&r.base, &["labels", "--since", "3h"]));
    assert_eq!(names.lines().collect::<Vec<_>>(), vec!["job", "legacy", "level"]);
    let names = ok(&run(&r.base, &["labels", "--since", "1h"]));
    assert_eq!(names.lines().collect::<Vec<_>>(), vec!["job", "level"]);
    let values = ok(&run(&r.base, &["labels", "job", "--since", "3h", "-o", "jsonl"]));
    assert_eq!(values.lines().collect::<Vec<_>>(), vec![r#""new""#, r#""old""#]);
    let values = ok(&run(&r.base, &["labels", "job", "--since", "1h"]));
    assert_eq!(values.trim(), "new");
    // The client section of a config file.
    let dir = tempfile::tempdir().expect("tempdir");
    let cfg = dir.path().join("c.toml");
    std::fs::write(&cfg, format!("[client]\nurl = \"{}\"\n", r.base)).expect("write");
    let o = tailship("http://127.0.0.1:9", &["labels", "job", "--since", "1h", "--config", cfg.to_str().expect("p")])
        .env_remove("TAILSHIP_URL")
        .output()
        .expect("run");
    assert_eq!(ok(&o).trim(), "new");
}
