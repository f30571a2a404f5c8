//! The docker source with an Engine reached over TCP (`docker.host =
//! "tcp://..."`, Promtail's docker_sd_configs with a tcp:// host): a private
//! `dockerd` started by the test (see `common/dockerd.rs`) also listens on
//! 127.0.0.1, plain or with TLS (`--tlsverify`, certificates made by the
//! test), and the logs are read through the Engine API. Lines, labels
//! (`__address__`, network), Docker's timestamps, containers started later,
//! a stop and start of a container, and a restart of the agent that neither
//! loses nor repeats a line.

use crate::agent;
use crate::common;
use crate::discovery;
use crate::dockerd;
use crate::mockhttp;
use crate::scenario;
use scenario::run_agent;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::Duration;

use agent::{free_port, query_all, write_file, Agent, AgentToml};
use common::{wait_for, Receiver};
use dockerd::{distinct, labels, lines_of, Dockerd, DOCKER_CLIENT};

const BIG: &[&str] = &["--max-query-limit", "1000000"];

fn config(dir: &Path, url: &str, host: &str, docker_extra: &str) -> std::path::PathBuf {
    let text = format!(
        r#"[[sources]]
type = "docker"
docker = {{ host = "{host}", filters = {{ label = ["tailship.test"] }}, refresh_interval = "30s"{docker_extra} }}
labels = {{ job = "docker" }}
host_label = false
relabel = [
  {{ source_labels = ["__meta_docker_container_name"], regex = "/(.*)", target_label = "container" }},
  {{ source_labels = ["__address__"], target_label = "address" }},
  {{ source_labels = ["__meta_docker_network_name"], target_label = "network" }},
]
"#,
    );
    AgentToml::new(dir, "").client(url, DOCKER_CLIENT).then(&text).write("tailship.toml")
}

/// `n` numbered lines `TAG run R line I`, `pause` seconds apart, one on stderr, then sleeping.
fn script(tag: &str, n: u32, pause: &str) -> String {
    dockerd::numbered_script(tag, n, pause, "")
}

/// Docker's own time of the first line of `container` starting with `prefix`, in ns.
fn docker_time(d: &Dockerd, container: &str, prefix: &str) -> i128 {
    let out = d.docker(&["logs", "--timestamps", container]);
    let line = out.lines().find(|l| l.split_once(' ').is_some_and(|(_, m)| m.starts_with(prefix))).unwrap();
    let t = chrono::DateTime::parse_from_rfc3339(line.split_once(' ').unwrap().0).unwrap();
    t.timestamp_nanos_opt().unwrap() as i128
}

#[test]
fn an_engine_over_tcp_ships_every_line_once_across_stops_and_a_restart_of_the_agent() {
    let port = free_port();
    let Some(d) = Dockerd::start_with(&[format!("--host=tcp://127.0.0.1:{port}")]) else { return };
    let r = Receiver::start(BIG);
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path(), &r.base, &format!("tcp://127.0.0.1:{port}"), "");
    d.run(&["--name", "web", "-l", "tailship.test=1"], &script("web", 30, "0"));
    d.run(&["--name", "tick", "-l", "tailship.test=1"], &script("tick", 300, "0.02"));
    d.run(&["--name", "other"], &script("other", 5, "0"));
    let agent = Agent::start(&cfg);
    let done = |c: &str, p: &str, n: usize| distinct(&r, c, p).len() >= n;
    assert!(wait_for(Duration::from_secs(30), || done("web", "web run 1 ", 31)), "{}", agent.stderr_text());
    let web = lines_of(&r, "web");
    let first = web.iter().find(|e| e.line == "web run 1 line 0").unwrap();
    let want: BTreeMap<String, String> =
        [("container", "web"), ("job", "docker"), ("stream", "stdout"), ("address", ":80"), ("network", "none")]
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
    assert_eq!(labels(first), want);
    assert_eq!(first.ts, docker_time(&d, "web", "web run 1 line 0"), "Docker's time of the line");
    let err = web.iter().find(|e| e.line == "web run 1 done").unwrap();
    assert_eq!(labels(err).get("stream").map(String::as_str), Some("stderr"));

    // Started after the agent: found through the event stream.
    d.run(&["--name", "late", "-l", "tailship.test=1"], &script("late", 10, "0"));
    assert!(wait_for(Duration::from_secs(30), || done("late", "late run 1 ", 11)), "{}", agent.stderr_text());

    // The agent stops while `tick` writes on, and starts again.
    assert!(wait_for(Duration::from_secs(30), || done("tick", "tick run 1 line", 50)), "{}", agent.stderr_text());
    assert!(agent.terminate(Duration::from_secs(10)).success());
    let written = |c: &str| d.docker(&["logs", c]).lines().count();
    let at_stop = written("tick");
    assert!(wait_for(Duration::from_secs(30), || written("tick") >= at_stop + 30));
    let agent = Agent::start(&cfg);
    assert!(wait_for(Duration::from_secs(60), || done("tick", "tick run 1 ", 301)), "{}", agent.stderr_text());

    // Stopped and started: its second run is read, its first not again.
    d.docker(&["stop", "-t", "1", "web"]);
    d.docker(&["start", "web"]);
    assert!(wait_for(Duration::from_secs(30), || done("web", "web run 2 ", 31)), "{}", agent.stderr_text());
    assert!(agent.terminate(Duration::from_secs(10)).success());

    // Every line once: nothing repeated by the restart, the stop or the reconnection.
    for (c, n) in [("web", 62), ("tick", 301), ("late", 11)] {
        let all = lines_of(&r, c);
        let set: BTreeSet<&str> = all.iter().map(|e| e.line.as_str()).collect();
        assert_eq!(set.len(), n, "{c}: {:?}", set);
        assert_eq!(all.len(), n, "{c}: a line was sent twice");
    }
    assert!(query_all(&r, r#"{container="other"}"#, None).is_empty(), "filtered out");
}

#[test]
fn an_engine_over_tls_with_a_client_certificate_ships_its_containers() {
    let certs = tempfile::tempdir().unwrap();
    let c = certs.path();
    let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    ca_params.distinguished_name.push(rcgen::DnType::CommonName, "test docker CA");
    let ca_key = rcgen::KeyPair::generate().unwrap();
    let ca_cert = ca_params.self_signed(&ca_key).unwrap();
    let issuer = rcgen::Issuer::from_params(&ca_params, &ca_key);
    let server_key = rcgen::KeyPair::generate().unwrap();
    let server = rcgen::CertificateParams::new(vec!["127.0.0.1".to_string(), "docker.test".to_string()])
        .unwrap()
        .signed_by(&server_key, &issuer)
        .unwrap();
    let mut client_params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    client_params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ClientAuth];
    let client_key = rcgen::KeyPair::generate().unwrap();
    let client = client_params.signed_by(&client_key, &issuer).unwrap();
    for (name, pem) in [
        ("ca.pem", ca_cert.pem()),
        ("server.pem", server.pem()),
        ("server-key.pem", server_key.serialize_pem()),
        ("client.pem", client.pem()),
        ("client-key.pem", client_key.serialize_pem()),
    ] {
        std::fs::write(c.join(name), pem).unwrap();
    }
    let port = free_port();
    let p = |n: &str| c.join(n).display().to_string();
    let Some(d) = Dockerd::start_with(&[
        format!("--host=tcp://127.0.0.1:{port}"),
        "--tlsverify".into(),
        format!("--tlscacert={}", p("ca.pem")),
        format!("--tlscert={}", p("server.pem")),
        format!("--tlskey={}", p("server-key.pem")),
    ]) else {
        return;
    };
    let r = Receiver::start(BIG);
    let dir = tempfile::tempdir().unwrap();
    // Reached by address, checked against another name of its certificate.
    let tls = format!(
        r#", tls = {{ ca_file = "{}", cert_file = "{}", key_file = "{}", server_name = "docker.test" }}"#,
        p("ca.pem"),
        p("client.pem"),
        p("client-key.pem")
    );
    let cfg = config(dir.path(), &r.base, &format!("tcp://127.0.0.1:{port}"), &tls);
    let out = std::process::Command::new(common::bin()).args(["check", "--config"]).arg(&cfg).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    d.run(&["--name", "secure", "-l", "tailship.test=1"], &script("secure", 20, "0"));
    let agent = Agent::start(&cfg);
    assert!(
        wait_for(Duration::from_secs(30), || distinct(&r, "secure", "secure run 1 ").len() >= 21),
        "{}",
        agent.stderr_text()
    );
    assert!(agent.terminate(Duration::from_secs(10)).success());
    assert_eq!(lines_of(&r, "secure").len(), 21);

    // Promtail's job for this Engine converts, passes check and ships.
    let r3 = scenario::loki_receiver();
    let dir3 = tempfile::tempdir().unwrap();
    let yaml = scenario::promtail_yaml_at(
        dir3.path(),
        &r3.base,
        "positions.yaml",
        &format!(
            r#"  - job_name: remote
    docker_sd_configs:
      - host: tcp://127.0.0.1:{port}
        port: 9100
        host_networking_host: node-1
        refresh_interval: 10s
        filters:
          - name: label
            values: ["tailship.test=1"]
        tls_config:
          ca_file: {ca}
          cert_file: {cert}
          key_file: {key}
          server_name: docker.test
    relabel_configs:
      - source_labels: ['__meta_docker_container_name']
        regex: '/(.*)'
        target_label: 'container'
      - source_labels: ['__address__']
        target_label: 'instance'
"#,
            ca = p("ca.pem"),
            cert = p("client.pem"),
            key = p("client-key.pem")
        ),
    );
    let (toml, stderr) = discovery::convert_promtail(dir3.path(), &yaml);
    let untranslated = stderr.split("# Translated with a difference").next().unwrap_or_default();
    assert!(!untranslated.contains("docker_sd_configs"), "every key translated: {stderr}");
    let converted = write_file(dir3.path(), "tailship.toml", &toml);
    discovery::check_ok(&converted);
    let agent = Agent::start(&converted);
    let all = || agent::query_all_at(&r3, "/loki/api/v1", r#"{container="secure"}"#, None);
    assert!(wait_for(Duration::from_secs(30), || all().len() >= 21), "{}", agent.stderr_text());
    let entries = all();
    assert_eq!(entries.len(), 21);
    assert_eq!(labels(&entries[0]).get("instance").map(String::as_str), Some(":9100"));
    assert!(agent.terminate(Duration::from_secs(10)).success());

    // Without the client certificate the Engine refuses the agent: said, nothing shipped.
    let r2 = Receiver::start(BIG);
    let dir2 = tempfile::tempdir().unwrap();
    let no_cert = format!(r#", tls = {{ ca_file = "{}" }}"#, p("ca.pem"));
    let cfg2 = config(dir2.path(), &r2.base, &format!("tcp://127.0.0.1:{port}"), &no_cert);
    let agent = Agent::start(&cfg2);
    assert!(wait_for(Duration::from_secs(20), || agent.stderr_text().contains("cannot reach the Docker Engine")));
    assert!(lines_of(&r2, "secure").is_empty());
    assert!(agent.terminate(Duration::from_secs(10)).success());
}

#[test]
fn bad_docker_settings_exit_2_naming_the_key_and_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing-ca.pem");
    for (docker, key) in [
        (r#"host = "ftp://docker:21""#.to_string(), "sources[0].docker.host"),
        (
            r#"host = "unix:///run/docker.sock", tls = { insecure_skip_verify = true }"#.to_string(),
            "sources[0].docker.tls",
        ),
        (
            format!(r#"host = "tcp://127.0.0.1:2376", tls = {{ ca_file = "{}" }}"#, missing.display()),
            "sources[0].docker.tls.ca_file",
        ),
        (
            r#"host = "tcp://127.0.0.1:2375", basic_auth = { username = "u" }"#.to_string(),
            "sources[0].docker.basic_auth",
        ),
        (r#"host = "tcp://127.0.0.1:2375", port = "eighty""#.to_string(), "docker.port"),
    ] {
        let text = format!(
            "[client]\nurl = \"http://127.0.0.1:1\"\n[[sources]]\ntype = \"docker\"\ndocker = {{ {docker} }}\n"
        );
        let cfg = write_file(dir.path(), "bad.toml", &text);
        let out = std::process::Command::new(common::bin()).args(["check", "--config"]).arg(&cfg).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{docker}: {stderr}");
        assert!(stderr.contains(key) && stderr.contains("bad.toml"), "{docker}: {stderr}");
    }
}

/// One frame of a multiplexed log body.
fn frame(stream: u8, payload: &str) -> String {
    let mut f = vec![stream, 0, 0, 0];
    f.extend_from_slice(&(payload.len() as u32).to_be_bytes());
    f.extend_from_slice(payload.as_bytes());
    String::from_utf8(f).unwrap()
}

/// An Engine API behind a proxy asking for basic auth (written here: dockerd
/// has no basic auth): every request carries it, and a log stream that ends
/// while its container runs is opened again without a line sent twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_engine_behind_basic_auth_gets_it_and_a_reopened_log_repeats_nothing() {
    let body: String = (0..5)
        .map(|i| frame(1, &format!("2024-05-01T10:00:0{i}.000000001Z proxied line {i}\n")))
        .chain(std::iter::once(frame(2, "2024-05-01T10:00:04.000000001Z proxied error\n")))
        .collect();
    let engine = mockhttp::Mock::start(move |req, _| match req.path.as_str() {
        "/containers/json" => mockhttp::Reply::ok(serde_json::json!([{
            "Id": "c0ffee", "Names": ["/proxied"], "Image": "busybox", "State": "running",
            "Labels": { "tailship.test": "1" }, "HostConfig": { "NetworkMode": "none" }
        }])),
        "/networks" => mockhttp::Reply::ok(serde_json::json!([])),
        "/containers/c0ffee/json" => {
            mockhttp::Reply::ok(serde_json::json!({ "Config": { "Tty": false }, "State": { "Running": true } }))
        }
        // Each opening sends the whole log and ends: the reader opens it again.
        "/containers/c0ffee/logs" => mockhttp::Reply::text(200, &body),
        _ => mockhttp::Reply::text(200, ""),
    })
    .await;
    let r = Receiver::start(BIG);
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("pw"), "pr0xy-pass\n").unwrap();
    let auth = format!(r#", basic_auth = {{ username = "ops", password_file = "{}/pw" }}"#, dir.path().display());
    let cfg = config(dir.path(), &r.base, &engine.url, &auth);
    let agent = run_agent(cfg).await;
    assert!(wait_for(Duration::from_secs(20), || lines_of(&r, "proxied").len() >= 6), "{}", agent.stderr_text());
    // Opened again (several times) meanwhile: still each line once.
    let reopened = || engine.requests().iter().filter(|q| q.path == "/containers/c0ffee/logs").count();
    assert!(wait_for(Duration::from_secs(20), || reopened() >= 3));
    assert!(agent.terminate(Duration::from_secs(10)).success());
    let lines: Vec<String> = lines_of(&r, "proxied").into_iter().map(|e| e.line).collect();
    assert_eq!(lines.len(), 6, "{lines:?}");
    let reqs = engine.requests();
    // base64("ops:pr0xy-pass")
    assert!(reqs.iter().all(|q| q.header("authorization") == Some("Basic b3BzOnByMHh5LXBhc3M=")), "{reqs:?}");
    let logs: Vec<_> = reqs.iter().filter(|q| q.path == "/containers/c0ffee/logs").collect();
    assert!(logs[0].query.contains("follow=1") && logs[0].query.contains("timestamps=1"), "{:?}", logs[0]);
    assert!(!logs[0].query.contains("since"), "no cursor yet: from the start");
    assert!(logs[1].query.contains("since=1714557603.000000001"), "a second before the cursor: {:?}", logs[1]);
}
