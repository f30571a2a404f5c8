//! The HTTP client keys of the discovery sources that reach a service over
//! HTTP, as Promtail's `docker_sd_configs` and `kubernetes_sd_configs` take
//! them: `oauth2` (a token got with the client credentials grant, asked for
//! again after a 401), `bearer_token_file` (read again for every request),
//! `authorization` and `proxy_url`. The Engine, the API server, the token
//! endpoint and the proxy are small servers written here (a forward proxy
//! sees the request's target host; no name is ever resolved).

use crate::agent;
use crate::common;
use crate::mockhttp;

use std::collections::BTreeMap;
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use agent::{free_port, query_all, write_file, Agent};
use common::{bin, wait_for, Receiver};
use mockhttp::{Mock, Reply, Req};

const BIG: &[&str] = &["--max-query-limit", "1000000"];

fn form(r: &Req) -> BTreeMap<String, String> {
    url::form_urlencoded::parse(r.body.as_bytes()).into_owned().collect()
}

fn frame(stream: u8, payload: &str) -> Vec<u8> {
    let mut f = vec![stream, 0, 0, 0];
    f.extend_from_slice(&(payload.len() as u32).to_be_bytes());
    f.extend_from_slice(payload.as_bytes());
    f
}

/// Answers token requests of `shipper:s3cret` with `tok-1`, `tok-2`, ...
fn token(r: &Req, issued: &AtomicUsize) -> Reply {
    // base64("shipper:s3cret")
    if r.header("authorization") != Some("Basic c2hpcHBlcjpzM2NyZXQ=")
        || form(r).get("grant_type").map(String::as_str) != Some("client_credentials")
    {
        return Reply::json(401, serde_json::json!({"error": "invalid_client"}));
    }
    let n = issued.fetch_add(1, Ordering::SeqCst) + 1;
    Reply::ok(serde_json::json!({"access_token": format!("tok-{n}"), "token_type": "Bearer", "expires_in": 3600}))
}

/// Writes `text` to `dir/rel`, its directories made first.
fn put(dir: &std::path::Path, rel: &str, text: &str) {
    let path = dir.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn config(dir: &std::path::Path, url: &str, sources: &str) -> std::path::PathBuf {
    let text = format!(
        "[server]\nlisten = \"127.0.0.1:{}\"\n[client]\nurl = \"{url}\"\nbatch = {{ max_wait = \"100ms\" }}\n\
         [positions]\npath = \"{}/positions.json\"\n{sources}",
        free_port(),
        dir.display()
    );
    write_file(dir, "tailship.toml", &text)
}

/// An Engine behind a forward proxy and OAuth 2.0: every Engine request goes
/// through `proxy_url` to the Engine's own host with the current token; a
/// token the Engine stops taking (401) is replaced by a new one and no line
/// is lost or sent twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_docker_engine_behind_a_proxy_and_oauth2_gets_a_fresh_token_after_a_401() {
    let body: Vec<u8> =
        (0..4).flat_map(|i| frame(1, &format!("2024-05-01T10:00:0{i}.000000001Z oauth line {i}\n"))).collect();
    let body = String::from_utf8(body).unwrap();
    let issued = AtomicUsize::new(0);
    let refused = AtomicUsize::new(0);
    let mock = Mock::start(move |req, _| {
        if req.path == "/oauth/token" {
            return token(req, &issued);
        }
        // tok-1 is revoked after the first two calls.
        if req.header("authorization") == Some("Bearer tok-1") && refused.fetch_add(1, Ordering::SeqCst) >= 2 {
            return Reply::text(401, "token revoked");
        }
        if req.header("authorization").is_none_or(|a| !a.starts_with("Bearer tok-")) {
            return Reply::text(401, "no token");
        }
        match req.path.as_str() {
            "/containers/json" => Reply::ok(serde_json::json!([{
                "Id": "beef", "Names": ["/secured"], "Image": "busybox", "State": "exited",
                "Labels": {}, "HostConfig": { "NetworkMode": "none" }
            }])),
            "/networks" => Reply::ok(serde_json::json!([])),
            "/containers/beef/json" => {
                Reply::ok(serde_json::json!({ "Config": { "Tty": false }, "State": { "Running": false } }))
            }
            "/containers/beef/logs" => Reply::text(200, &body),
            _ => Reply::text(200, ""),
        }
    })
    .await;
    let r = Receiver::start(BIG);
    let dir = tempfile::tempdir().unwrap();
    let sources = format!(
        r#"[[sources]]
type = "docker"
host_label = false
docker = {{ host = "tcp://engine.invalid:2375", proxy_url = "{proxy}", proxy_connect_header = {{ "Proxy-Authorization" = "Basic cHJveHk6cHc=" }}, oauth2 = {{ client_id = "shipper", client_secret = "s3cret", token_url = "http://tokens.invalid/oauth/token" }} }}
relabel = [{{ source_labels = ["__meta_docker_container_name"], regex = "/(.*)", target_label = "container" }}]
"#,
        proxy = mock.url
    );
    let cfg = config(dir.path(), &r.base, &sources);
    let agent = tokio::task::spawn_blocking(move || Agent::start(&cfg)).await.unwrap();
    let lines = || query_all(&r, r#"{container="secured"}"#, None);
    assert!(wait_for(Duration::from_secs(20), || lines().len() >= 4), "{}", agent.stderr_text());
    let reqs = mock.requests();
    let engine: Vec<&Req> = reqs.iter().filter(|q| q.path != "/oauth/token").collect();
    assert!(engine.iter().all(|q| q.header("host") == Some("engine.invalid:2375")), "{engine:?}");
    assert!(reqs.iter().all(|q| q.header("proxy-authorization") == Some("Basic cHJveHk6cHc=")), "{reqs:?}");
    let tokens: Vec<&Req> = reqs.iter().filter(|q| q.path == "/oauth/token").collect();
    assert!(tokens.iter().all(|q| q.header("host") == Some("tokens.invalid")), "{tokens:?}");
    // tok-1 was refused, so a second token was asked for and used.
    assert!(tokens.len() >= 2, "{tokens:?}");
    assert!(engine.iter().any(|q| q.header("authorization") == Some("Bearer tok-2")), "{engine:?}");
    assert!(agent.terminate(Duration::from_secs(10)).success());
    let mut got: Vec<String> = lines().into_iter().map(|e| e.line).collect();
    got.sort();
    assert_eq!(got, (0..4).map(|i| format!("oauth line {i}")).collect::<Vec<_>>());
}

/// `bearer_token_file` is read again for every request: a rotated token is
/// used from the next request on.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_rotated_bearer_token_file_is_read_again_by_the_kubernetes_discovery() {
    let mock = Mock::start(move |req, _| {
        if !req.header("authorization").is_some_and(|a| a.starts_with("Bearer rot-")) {
            return Reply::text(401, "no token");
        }
        if req.query.contains("watch=1") {
            // Each watch ends at once: the agent lists again after a pause.
            return Reply::text(200, "");
        }
        Reply::ok(serde_json::json!({
            "kind": "NodeList", "apiVersion": "v1", "metadata": { "resourceVersion": "5" },
            "items": [{ "metadata": { "name": "node-a", "resourceVersion": "5" },
                        "status": { "addresses": [{ "type": "InternalIP", "address": "10.0.0.1" }] } }]
        }))
    })
    .await;
    let r = Receiver::start(BIG);
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write_file(d, "token", "rot-1\n");
    put(d, "nodes/node-a/kubelet.log", "kubelet started\n");
    let sources = format!(
        r#"[[sources]]
type = "file"
host_label = false
scan_interval = "200ms"
kubernetes = {{ role = "node", api_server = "http://kube.invalid:6443", proxy_url = "{proxy}", token_file = "{d}/token" }}
relabel = [{{ source_labels = ["__meta_kubernetes_node_name"], target_label = "__path__", replacement = "{d}/nodes/$1/*.log" }},
           {{ source_labels = ["__meta_kubernetes_node_name"], target_label = "node" }}]
"#,
        proxy = mock.url,
        d = d.display()
    );
    let cfg = config(d, &r.base, &sources);
    let agent = tokio::task::spawn_blocking(move || Agent::start(&cfg)).await.unwrap();
    let shipped = || query_all(&r, r#"{node="node-a"}"#, None);
    assert!(wait_for(Duration::from_secs(20), || !shipped().is_empty()), "{}", agent.stderr_text());
    write_file(d, "token", "rot-2\n");
    let used = |t: &str| mock.requests().iter().any(|q| q.header("authorization") == Some(t));
    assert!(wait_for(Duration::from_secs(20), || used("Bearer rot-2")), "{}", agent.stderr_text());
    let reqs = mock.requests();
    assert!(reqs.iter().all(|q| q.header("host") == Some("kube.invalid:6443")), "{reqs:?}");
    assert!(agent.terminate(Duration::from_secs(10)).success());
}

/// The Kubernetes discovery with OAuth 2.0: the API server gets the token;
/// `no_proxy` sends the requests past the (closed) proxy.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_kubernetes_discovery_authenticates_with_oauth2() {
    let issued = AtomicUsize::new(0);
    let mock = Mock::start(move |req, _| {
        if req.path == "/oauth/token" {
            return token(req, &issued);
        }
        if req.header("authorization") != Some("Bearer tok-1") {
            return Reply::text(401, "no token");
        }
        if req.query.contains("watch=1") {
            return Reply::text(200, "");
        }
        Reply::ok(serde_json::json!({
            "kind": "NodeList", "apiVersion": "v1", "metadata": { "resourceVersion": "5" },
            "items": [{ "metadata": { "name": "node-o", "resourceVersion": "5" },
                        "status": { "addresses": [{ "type": "InternalIP", "address": "10.0.0.9" }] } }]
        }))
    })
    .await;
    let r = Receiver::start(BIG);
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write_file(d, "secret", "s3cret\n");
    put(d, "nodes/node-o/kubelet.log", "oauth node\n");
    let sources = format!(
        r#"[[sources]]
type = "file"
host_label = false
scan_interval = "200ms"
kubernetes = {{ role = "node", api_server = "{url}", proxy_url = "http://127.0.0.1:1", no_proxy = "127.0.0.1", oauth2 = {{ client_id = "shipper", client_secret_file = "{d}/secret", token_url = "{url}/oauth/token" }} }}
relabel = [{{ source_labels = ["__meta_kubernetes_node_name"], target_label = "__path__", replacement = "{d}/nodes/$1/*.log" }},
           {{ source_labels = ["__meta_kubernetes_node_name"], target_label = "node" }}]
"#,
        url = mock.url,
        d = d.display()
    );
    let cfg = config(d, &r.base, &sources);
    let agent = tokio::task::spawn_blocking(move || Agent::start(&cfg)).await.unwrap();
    let shipped = || query_all(&r, r#"{node="node-o"}"#, None);
    assert!(wait_for(Duration::from_secs(20), || !shipped().is_empty()), "{}", agent.stderr_text());
    assert_eq!(shipped()[0].line, "oauth node");
    let out = agent.stderr_text();
    assert!(!out.contains("s3cret") && !out.contains("tok-1"), "{out}");
    assert!(agent.terminate(Duration::from_secs(10)).success());
}

fn check(dir: &std::path::Path, source: &str) -> (Option<i32>, String) {
    let cfg = write_file(dir, "bad.toml", &format!("[client]\nurl = \"http://127.0.0.1:1\"\n[[sources]]\n{source}\n"));
    let out = Command::new(bin()).args(["check", "--config"]).arg(&cfg).output().unwrap();
    (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn bad_discovery_http_keys_exit_2_naming_the_key_and_the_file() {
    let dir = tempfile::tempdir().unwrap();
    for (source, key) in [
        (
            r#"type = "docker"
docker = { host = "tcp://e:2375", bearer_token = "a", oauth2 = { client_id = "x", token_url = "http://t/token" } }"#,
            "sources[0].docker.oauth2",
        ),
        (
            r#"type = "docker"
docker = { host = "unix:///var/run/docker.sock", bearer_token = "a" }"#,
            "sources[0].docker.bearer_token",
        ),
        (
            r#"type = "docker"
docker = { host = "tcp://e:2375", bearer_token_file = "/nonexistent/token" }"#,
            "sources[0].docker.bearer_token_file",
        ),
        (
            r#"type = "docker"
docker = { host = "tcp://e:2375", proxy_url = "socks9://p:1" }"#,
            "sources[0].docker.proxy_url",
        ),
        (
            r#"type = "docker"
docker = { host = "tcp://e:2375", no_proxy = "x" }"#,
            "sources[0].docker.no_proxy",
        ),
        (
            r#"type = "docker"
docker = { host = "tcp://e:2375", proxy_url = "http://p:1", proxy_connect_header = { "Bad Name" = "x" } }"#,
            "sources[0].docker.proxy_connect_header.Bad Name",
        ),
        (
            r#"type = "docker"
docker = { host = "tcp://e:2375", oauth2 = { client_id = "x", token_url = "ftp://t" } }"#,
            "sources[0].docker.oauth2.token_url",
        ),
        (
            r#"type = "file"
kubernetes = { role = "node", oauth2 = { client_id = "x", token_url = "http://t/token" } }"#,
            "sources[0].kubernetes.oauth2",
        ),
        (
            r#"type = "file"
kubernetes = { role = "node", api_server = "http://k:1", oauth2 = { client_id = "", token_url = "http://t/token" } }"#,
            "sources[0].kubernetes.oauth2.client_id",
        ),
        (
            r#"type = "file"
kubernetes = { role = "node", api_server = "http://k:1", proxy_url = "nope" }"#,
            "sources[0].kubernetes.proxy_url",
        ),
    ] {
        let (code, stderr) = check(dir.path(), source);
        assert_eq!(code, Some(2), "{source}: {stderr}");
        assert!(stderr.contains(&format!("key `{key}`")) && stderr.contains("bad.toml"), "{source}: {stderr}");
    }
}

/// Promtail's HTTP client keys of both discovery kinds (and a kafka job's
/// TLS name) convert, and the result is valid.
#[test]
fn promtail_discovery_http_keys_convert_and_check() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write_file(d, "token", "t\n");
    let promtail = format!(
        r#"clients:
  - url: http://127.0.0.1:3100/loki/api/v1/push
scrape_configs:
  - job_name: remote-docker
    docker_sd_configs:
      - host: tcp://docker.example:2376
        proxy_url: http://proxy.example:3128
        no_proxy: internal.example
        proxy_connect_header:
          Proxy-Authorization: [Basic cHJveHk6cHc=]
        follow_redirects: true
        authorization:
          type: Bearer
          credentials_file: {d}/token
  - job_name: nodes
    kubernetes_sd_configs:
      - role: node
        api_server: https://kube.example:6443
        proxy_url: http://proxy.example:3128
        oauth2:
          client_id: shipper
          client_secret: s3cret
          token_url: https://login.example/token
          scopes: [kube]
    relabel_configs:
      - source_labels: [__meta_kubernetes_node_name]
        target_label: __path__
        replacement: /var/log/nodes/$1/*.log
  - job_name: pods
    kubernetes_sd_configs:
      - role: pod
        attach_metadata:
          node: true
          namespace: true
        selectors:
          - role: node
            label: kubernetes.io/os=linux
  - job_name: kafka
    kafka:
      brokers: [127.0.0.1:9093]
      topics: [logs]
      authentication:
        type: ssl
        tls_config:
          server_name: broker.internal
          insecure_skip_verify: false
"#,
        d = d.display()
    );
    let input = write_file(d, "promtail.yaml", &promtail);
    let out = Command::new(bin()).args(["convert", "promtail"]).arg(&input).output().unwrap();
    let (toml, report) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{report}");
    assert!(!report.contains("Not translated"), "{report}");
    // `follow_redirects: true` is Promtail's default: it changes nothing and is not listed.
    assert!(!report.contains("follow_redirects"), "{report}");
    for want in [
        r#"proxy_url = "http://proxy.example:3128""#,
        r#"no_proxy = "internal.example""#,
        r#"proxy_connect_header = { Proxy-Authorization = "Basic cHJveHk6cHc=" }"#,
        &format!(r#"bearer_token_file = "{}/token""#, d.display()),
        r#"client_id = "shipper""#,
        r#"token_url = "https://login.example/token""#,
        r#"server_name = "broker.internal""#,
        "insecure_skip_verify = false",
        "attach_metadata = { node = true, namespace = true }",
        r#"role = "node", label = "kubernetes.io/os=linux""#,
    ] {
        assert!(toml.contains(want), "{want}: {toml}");
    }
    let cfg = write_file(d, "converted.toml", &format!("{toml}\n[spool]\npath = \"{}/spool\"\n", d.display()));
    let out = Command::new(bin()).args(["check", "--config"]).arg(&cfg).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

/// `attach_metadata = { node = true, namespace = true }` on a kubernetes
/// source: its pods' files carry their node's and namespace's labels (the
/// node watched by name, the namespaces all), as Promtail's
/// `attach_metadata` gives them; the file waits for them as for its pod.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn attach_metadata_gives_a_pods_files_the_labels_of_its_node_and_namespace() {
    let mock = Mock::start(move |req, _| {
        if req.query.contains("watch=1") {
            return Reply::text(200, "");
        }
        let list = |kind: &str, items: serde_json::Value| {
            Reply::ok(serde_json::json!({ "kind": kind, "apiVersion": "v1", "metadata": { "resourceVersion": "7" }, "items": items }))
        };
        match req.path.as_str() {
            "/api/v1/pods" => list("PodList", serde_json::json!([{
                "metadata": { "name": "web-1", "namespace": "shop", "uid": "uid-web", "resourceVersion": "7" },
                "spec": { "nodeName": "node-1", "containers": [{ "name": "main", "image": "web:1" }] },
                "status": { "phase": "Running" }
            }])),
            "/api/v1/nodes" => list("NodeList", serde_json::json!([{
                "metadata": { "name": "node-1", "resourceVersion": "7",
                              "labels": { "topology.kubernetes.io/zone": "eu-1a" }, "annotations": { "team": "infra" } }
            }])),
            "/api/v1/namespaces" => list("NamespaceList", serde_json::json!([
                { "metadata": { "name": "shop", "resourceVersion": "7", "labels": { "tier": "gold" } } },
                { "metadata": { "name": "other", "resourceVersion": "7", "labels": { "tier": "tin" } } }
            ])),
            _ => Reply::text(404, "not found"),
        }
    })
    .await;
    let r = Receiver::start(BIG);
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    put(d, "pods/shop_web-1_uid-web/main/0.log", "2026-11-23T10:00:00.000000000Z stdout F attached\n");
    let sources = format!(
        r#"[[sources]]
type = "kubernetes"
root = "{d}/pods"
host_label = false
scan_interval = "200ms"
kubernetes = {{ api_server = "{url}", node_name = "node-1", wait_for_pod = "30s", attach_metadata = {{ node = true, namespace = true }} }}
relabel = [
  {{ source_labels = ["__meta_kubernetes_pod_name"], target_label = "pod" }},
  {{ source_labels = ["__meta_kubernetes_node_label_topology_kubernetes_io_zone"], target_label = "zone" }},
  {{ source_labels = ["__meta_kubernetes_node_annotation_team"], target_label = "team" }},
  {{ source_labels = ["__meta_kubernetes_namespace_label_tier"], target_label = "tier" }},
  {{ source_labels = ["__meta_kubernetes_namespace_labelpresent_tier"], target_label = "tier_present" }},
]
"#,
        url = mock.url,
        d = d.display()
    );
    let cfg = config(d, &r.base, &sources);
    let agent = tokio::task::spawn_blocking(move || Agent::start(&cfg)).await.unwrap();
    let shipped = || query_all(&r, r#"{pod="web-1"}"#, None);
    assert!(wait_for(Duration::from_secs(20), || !shipped().is_empty()), "{}", agent.stderr_text());
    let e = &shipped()[0];
    let label = |k: &str| e.labels.get(k).and_then(|v| v.as_str()).unwrap_or_default().to_string();
    assert_eq!(
        (label("zone"), label("team"), label("tier"), label("tier_present")),
        ("eu-1a".into(), "infra".into(), "gold".into(), "true".into()),
        "{:?}",
        e.labels
    );
    let reqs = mock.requests();
    let node_list = reqs.iter().find(|q| q.path == "/api/v1/nodes").expect("the node is watched");
    assert!(node_list.query.contains("fieldSelector=metadata.name%3Dnode-1"), "{node_list:?}");
    assert!(agent.terminate(Duration::from_secs(10)).success());
}
