//! Pod metadata through the real binary: the Kubernetes API's list and watch
//! served over HTTPS on loopback by this test (a private CA made with rcgen),
//! pod log files in a temporary `/var/log/pods` tree, and the labels the
//! Promtail Helm chart's rules give (tailship's defaults).

use crate::agent;
use crate::common;
use crate::discovery;
use crate::pki;
use crate::scenario;
use discovery::{label_map as map, stored_labels as labels};

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent::{free_port, query_all, write_file, Agent, AgentToml};
use common::{wait_for, Receiver};
use serde_json::json;
use tempfile::TempDir;
use tokio_rustls::rustls;

/// What the API server holds and what it was asked.
#[derive(Default)]
struct Cluster {
    pods: Vec<serde_json::Value>,
    version: u64,
    /// Watch events sent so far (each watch sends those after its start).
    events: Vec<String>,
    /// Ends the open watches (they send what they have, then close).
    end_watches: u64,
    /// The next watch request is answered 410 Gone.
    gone_next: bool,
    /// Events written to a watch so far (the highest count).
    delivered: usize,
    /// Request lines and Authorization headers seen.
    requests: Vec<(String, String)>,
}

type Shared = Arc<Mutex<Cluster>>;

fn pod(
    ns: &str,
    name: &str,
    uid: &str,
    labels: serde_json::Value,
    controller: Option<(&str, &str)>,
) -> serde_json::Value {
    let owners = match controller {
        Some((kind, n)) => {
            json!([{ "kind": kind, "name": n, "controller": true, "apiVersion": "apps/v1", "uid": "o" }])
        }
        None => json!([]),
    };
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": { "name": name, "namespace": ns, "uid": uid, "resourceVersion": "1", "labels": labels,
                      "annotations": { "prometheus.io/scrape": "true" }, "ownerReferences": owners },
        "spec": { "nodeName": "node-1", "containers": [{ "name": "main", "image": format!("registry.local/{name}:1") }] },
        "status": { "phase": "Running", "podIP": "10.1.2.3", "hostIP": "192.168.0.10",
                    "conditions": [{ "type": "Ready", "status": "True" }],
                    "containerStatuses": [{ "name": "main", "containerID": format!("containerd://{uid}") }] }
    })
}

fn api_server(config: Arc<rustls::ServerConfig>, cluster: Shared) -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut tcp) = stream else { continue };
            let (config, cluster) = (config.clone(), cluster.clone());
            std::thread::spawn(move || {
                let _ = tcp.set_read_timeout(Some(Duration::from_secs(5)));
                let Ok(mut conn) = rustls::ServerConnection::new(config) else { return };
                let mut tls = rustls::Stream::new(&mut conn, &mut tcp);
                let Some((line, auth)) = common::read_request_head(&mut tls) else { return };
                cluster.lock().unwrap().requests.push((line.clone(), auth));
                if !line.contains("fieldSelector=spec.nodeName%3Dnode-1") {
                    let _ = write!(tls, "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
                    return;
                }
                if !line.contains("watch=1") {
                    let c = cluster.lock().unwrap();
                    let body = json!({ "kind": "PodList", "apiVersion": "v1",
                        "metadata": { "resourceVersion": c.version.to_string() }, "items": c.pods })
                    .to_string();
                    drop(c);
                    let _ = write!(tls, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}", body.len());
                    let _ = tls.flush();
                    return;
                }
                let (start, ends) = {
                    let mut c = cluster.lock().unwrap();
                    if std::mem::take(&mut c.gone_next) {
                        let body = r#"{"kind":"Status","status":"Failure","reason":"Expired","code":410}"#;
                        let _ = write!(
                            tls,
                            "HTTP/1.1 410 Gone\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                            body.len()
                        );
                        return;
                    }
                    (c.events.len(), c.end_watches)
                };
                let _ = write!(tls, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n");
                let _ = tls.flush();
                let mut sent = start;
                loop {
                    let (new, end) = {
                        let c = cluster.lock().unwrap();
                        (c.events[sent..].to_vec(), c.end_watches != ends)
                    };
                    for e in &new {
                        let data = format!("{e}\n");
                        if write!(tls, "{:x}\r\n{data}\r\n", data.len()).and_then(|_| tls.flush()).is_err() {
                            return;
                        }
                    }
                    sent += new.len();
                    {
                        let mut c = cluster.lock().unwrap();
                        c.delivered = c.delivered.max(sent);
                    }
                    if end {
                        let _ = write!(tls, "0\r\n\r\n");
                        let _ = tls.flush();
                        return;
                    }
                    std::thread::sleep(Duration::from_millis(20));
                }
            });
        }
    });
    port
}

fn event(c: &Shared, kind: &str, object: serde_json::Value) {
    let mut c = c.lock().unwrap();
    c.version += 1;
    let mut object = object;
    object["metadata"]["resourceVersion"] = json!(c.version.to_string());
    c.events.push(json!({ "type": kind, "object": object }).to_string());
}

fn cri_log(root: &Path, dir: &str, line: &str) {
    let d = root.join(dir).join("main");
    std::fs::create_dir_all(&d).unwrap();
    std::fs::write(d.join("0.log"), format!("2026-11-23T10:00:00.000000000Z stdout F {line}\n")).unwrap();
}

/// A temp dir with an empty `pods/` root, the CA `ca` and the token
/// `tok-123` written in it: (dir, root, CA file, token file).
fn pods_dir(ca: &str) -> (TempDir, PathBuf, PathBuf, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("pods");
    std::fs::create_dir_all(&root).unwrap();
    let ca_file = write_file(dir.path(), "ca.crt", ca);
    let token = write_file(dir.path(), "token", "tok-123\n");
    (dir, root, ca_file, token)
}

/// The `kubernetes` keys of a source on the API server at `port` (its CA
/// in `ca_file`, the token in `token`) for node `node-1`, waiting `wait` for a file's pod.
fn api_keys(port: u16, ca_file: &Path, token: &Path, wait: &str) -> String {
    format!(
        r#"api_server = "https://127.0.0.1:{port}", ca_file = "{}", token_file = "{}", node_name = "node-1", wait_for_pod = "{wait}""#,
        ca_file.display(),
        token.display()
    )
}

/// A config with one `type = "kubernetes"` source of the pod logs under
/// `root`, scanned every `scan`, its `kubernetes` table's keys `kubernetes`.
fn k8s_config(dir: &Path, url: &str, root: &Path, scan: &str, kubernetes: &str) -> PathBuf {
    let source = format!(
        "[[sources]]\ntype = \"kubernetes\"\nroot = \"{}\"\nhost_label = false\nscan_interval = \"{scan}\"\nkubernetes = {{ {kubernetes} }}",
        root.display()
    );
    let toml = AgentToml::new(dir, "").bare_client(url, "batch = { max_wait = \"100ms\" }").sync_period("");
    toml.then(&source).write("tailship.toml")
}

#[test]
fn pods_listed_and_watched_label_their_files_as_the_helm_chart_does() {
    let (ca, tls) = pki::private_ca();
    let cluster: Shared = Arc::default();
    {
        let mut c = cluster.lock().unwrap();
        c.version = 100;
        c.pods.push(pod(
            "shop",
            "web-7c9f8d6b5-x2x9q",
            "uid-web",
            json!({ "app.kubernetes.io/name": "web", "app.kubernetes.io/instance": "shop-web" }),
            Some(("ReplicaSet", "web-7c9f8d6b5")),
        ));
    }
    let port = api_server(tls, cluster.clone());
    let r = Receiver::start(&["--max-query-limit", "1000000"]);
    let (dir, root, ca_file, token) = pods_dir(&ca);
    cri_log(&root, "shop_web-7c9f8d6b5-x2x9q_uid-web", "hello from web");
    let kubernetes = api_keys(port, &ca_file, &token, "1s");
    let cfg = k8s_config(dir.path(), &r.base, &root, "200ms", &kubernetes);
    let agent = Agent::start(&cfg);
    let find = |text: &str| query_all(&r, r#"{stream="stdout"}"#, None).into_iter().find(|e| e.line == text);
    assert!(wait_for(Duration::from_secs(20), || find("hello from web").is_some()), "{}", agent.stderr_text());
    let want = map(&[
        ("app", "web"),
        ("container", "main"),
        ("instance", "shop-web"),
        ("job", "shop/web"),
        ("namespace", "shop"),
        ("node_name", "node-1"),
        ("pod", "web-7c9f8d6b5-x2x9q"),
        ("stream", "stdout"),
    ]);
    assert_eq!(labels(&find("hello from web").unwrap()), want);
    // `/status` and `top` name the file by its pod and container; the path stays beside it.
    let addr = agent.metrics_addr.clone().unwrap();
    let status = common::get(&format!("http://{addr}/status.json")).json();
    let files = status["sources"][0]["files"].as_array().cloned().unwrap_or_default();
    let web = files.iter().find(|f| f["path"].as_str().is_some_and(|p| p.contains("uid-web"))).cloned();
    assert_eq!(web.as_ref().and_then(|f| f["target"].as_str()), Some("pod shop/web-7c9f8d6b5-x2x9q/main"), "{status}");
    let top =
        std::process::Command::new(common::bin()).args(["top", "--url", &format!("http://{addr}")]).output().unwrap();
    let text = String::from_utf8_lossy(&top.stdout);
    assert!(text.lines().any(|l| l.contains("pod shop/web-7c9f8d6b5-x2x9q/main") && l.contains("uid-web")), "{text}");
    // A pod ADDED through the watch: a StatefulSet's, labelled `app` only.
    let watching = || {
        cluster.lock().unwrap().requests.iter().any(|(l, _)| l.contains("watch=1") && l.contains("resourceVersion=100"))
    };
    assert!(wait_for(Duration::from_secs(20), watching), "{}", agent.stderr_text());
    event(&cluster, "ADDED", pod("db", "pg-0", "uid-pg", json!({ "app": "postgres" }), Some(("StatefulSet", "pg"))));
    cri_log(&root, "db_pg-0_uid-pg", "hello from pg");
    assert!(wait_for(Duration::from_secs(20), || find("hello from pg").is_some()), "{}", agent.stderr_text());
    let want = map(&[
        ("app", "postgres"),
        ("container", "main"),
        ("job", "db/postgres"),
        ("namespace", "db"),
        ("node_name", "node-1"),
        ("pod", "pg-0"),
        ("stream", "stdout"),
    ]);
    assert_eq!(labels(&find("hello from pg").unwrap()), want);
    // A file whose pod never comes ships with its path labels after `wait_for_pod`, counted.
    cri_log(&root, "ghosts_ghost-1_uid-ghost", "hello from nowhere");
    assert!(wait_for(Duration::from_secs(20), || find("hello from nowhere").is_some()), "{}", agent.stderr_text());
    let want = map(&[("container", "main"), ("namespace", "ghosts"), ("pod", "ghost-1"), ("stream", "stdout")]);
    assert_eq!(labels(&find("hello from nowhere").unwrap()), want);
    assert_eq!(agent.metric(r#"tailship_file_events_total{event="pod_unknown",source="kubernetes-0"}"#), 1.0);
    assert!(query_all(&r, r#"{namespace="other"}"#, None).is_empty());
    // A BOOKMARK moves the version on: the next watch starts from it.
    {
        let mut c = cluster.lock().unwrap();
        c.events.push(
            r#"{"type":"BOOKMARK","object":{"kind":"Pod","apiVersion":"v1","metadata":{"resourceVersion":"555"}}}"#
                .into(),
        );
    }
    // Once written to the open watch, the watch ends; the agent reads the
    // bookmark before the end of the stream.
    let all_sent = || {
        let c = cluster.lock().unwrap();
        c.delivered == c.events.len()
    };
    assert!(wait_for(Duration::from_secs(20), all_sent));
    cluster.lock().unwrap().end_watches += 1;
    let from_bookmark = || {
        cluster.lock().unwrap().requests.iter().any(|(l, _)| l.contains("watch=1") && l.contains("resourceVersion=555"))
    };
    assert!(wait_for(Duration::from_secs(20), from_bookmark), "{:?}", cluster.lock().unwrap().requests);
    // 410 Gone on the watch: the agent lists again and finds a pod it never saw in an event.
    {
        let mut c = cluster.lock().unwrap();
        c.gone_next = true;
        c.pods.push(pod("batch", "report-28391", "uid-job", json!({}), Some(("Job", "report-28391"))));
        c.end_watches += 1;
    }
    let lists = || cluster.lock().unwrap().requests.iter().filter(|(l, _)| !l.contains("watch=1")).count();
    assert!(wait_for(Duration::from_secs(20), || lists() >= 2), "{:?}", cluster.lock().unwrap().requests);
    cri_log(&root, "batch_report-28391_uid-job", "hello from a job");
    assert!(wait_for(Duration::from_secs(20), || find("hello from a job").is_some()), "{}", agent.stderr_text());
    let got = labels(&find("hello from a job").unwrap());
    assert_eq!(got.get("app").map(String::as_str), Some("report-28391"), "{got:?}");
    assert_eq!(got.get("job").map(String::as_str), Some("batch/report-28391"));
    // MODIFIED: a container restarted after its pod's labels changed writes
    // a new file, labelled from the pod as it is now. The watch then ends: the
    // agent's next watch starts from the event's version, so it was applied.
    let mut pg = pod("db", "pg-0", "uid-pg", json!({ "app": "pg2" }), Some(("StatefulSet", "pg")));
    event(&cluster, "MODIFIED", pg.clone());
    let modified = cluster.lock().unwrap().version;
    cluster.lock().unwrap().end_watches += 1;
    let from = |v: u64| {
        let v = format!("resourceVersion={v}&");
        let c = cluster.clone();
        move || c.lock().unwrap().requests.iter().any(|(l, _)| l.contains("watch=1") && l.contains(&v))
    };
    assert!(wait_for(Duration::from_secs(20), from(modified)), "{:?}", cluster.lock().unwrap().requests);
    let d = root.join("db_pg-0_uid-pg/main");
    std::fs::write(d.join("1.log"), "2026-11-23T10:00:01.000000000Z stdout F pg after restart\n").unwrap();
    assert!(wait_for(Duration::from_secs(20), || find("pg after restart").is_some()), "{}", agent.stderr_text());
    assert_eq!(labels(&find("pg after restart").unwrap()).get("app").map(String::as_str), Some("pg2"));
    // DELETED: kubelet keeps the logs a while; a file of the deleted pod keeps its labels.
    pg["metadata"]["labels"] = json!({ "app": "pg2" });
    event(&cluster, "DELETED", pg);
    let deleted = cluster.lock().unwrap().version;
    cluster.lock().unwrap().end_watches += 1;
    assert!(wait_for(Duration::from_secs(20), from(deleted)), "{:?}", cluster.lock().unwrap().requests);
    std::fs::write(d.join("2.log"), "2026-11-23T10:00:02.000000000Z stdout F pg after delete\n").unwrap();
    assert!(wait_for(Duration::from_secs(20), || find("pg after delete").is_some()), "{}", agent.stderr_text());
    assert_eq!(labels(&find("pg after delete").unwrap()).get("app").map(String::as_str), Some("pg2"));
    // An ERROR event (410, as a Status object in the stream) lists again too.
    let before = lists();
    cluster.lock().unwrap().events.push(
        r#"{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Expired","code":410}}"#.into(),
    );
    assert!(wait_for(Duration::from_secs(20), || lists() > before), "{:?}", cluster.lock().unwrap().requests);
    assert_eq!(agent.metric(r#"tailship_file_events_total{event="pod_unknown",source="kubernetes-0"}"#), 1.0);
    assert!(query_all(&r, r#"{namespace="other"}"#, None).is_empty());
    // Every request carried the service account token.
    assert!(cluster.lock().unwrap().requests.iter().all(|(_, auth)| auth == "Bearer tok-123"));
    assert!(agent.terminate(Duration::from_secs(10)).success());
}

#[test]
fn the_promtail_helm_charts_config_converts_and_ships_with_the_labels_promtail_gives() {
    let (ca, tls) = pki::private_ca();
    let cluster: Shared = Arc::default();
    {
        let mut c = cluster.lock().unwrap();
        c.version = 7;
        c.pods.push(pod(
            "shop",
            "cart-5d4f7b9c8d-abcde",
            "uid-cart",
            json!({ "app.kubernetes.io/name": "cart", "app.kubernetes.io/component": "api" }),
            Some(("ReplicaSet", "cart-5d4f7b9c8d")),
        ));
        c.pods.push(pod(
            "kube-system",
            "etcd-node-1",
            "uid-etcd",
            json!({ "component": "etcd" }),
            Some(("Node", "node-1")),
        ));
    }
    let port = api_server(tls, cluster.clone());
    let r = scenario::loki_receiver();
    let (dir, root, ca_file, token) = pods_dir(&ca);
    let yaml = include_str!("data/promtail-helm-chart.yaml")
        .replace("@PORT@", &free_port().to_string())
        .replace("@URL@", &r.base)
        .replace("@DIR@", &dir.path().display().to_string())
        .replace("@API@", &format!("https://127.0.0.1:{port}"))
        .replace("@TOKEN@", &token.display().to_string())
        .replace("@CA@", &ca_file.display().to_string())
        // The pods of this test live in a temporary tree.
        .replace("/var/log/pods", &root.display().to_string());
    let (toml, _) = discovery::convert_promtail(dir.path(), &yaml);
    // As Promtail reads it: a file source whose pod targets' `__path__` names the files.
    assert!(toml.contains("type = \"file\"") && toml.contains("role = \"pod\""), "{toml}");
    assert!(toml.contains("node_name_env = \"HOSTNAME\""), "{toml}");
    assert!(toml.contains("cri = "), "the cri stage runs as a stage: {toml}");
    let cfg = write_file(dir.path(), "tailship.toml", &toml);
    cri_log(&root, "shop_cart-5d4f7b9c8d-abcde_uid-cart", "cart line");
    cri_log(&root, "kube-system_etcd-node-1_uid-etcd", "etcd line");
    let agent = Agent::start_with(&cfg, &[("HOSTNAME", "node-1")]);
    let find = |text: &str| {
        agent::query_all_at(&r, "/loki/api/v1", r#"{stream="stdout"}"#, None).into_iter().find(|e| e.line == text)
    };
    assert!(
        wait_for(Duration::from_secs(20), || find("cart line").is_some() && find("etcd line").is_some()),
        "{}\n{toml}",
        agent.stderr_text()
    );
    // What Promtail gives with this config: the rules' labels, `filename` and the cri stage's `stream`.
    let cart = find("cart line").unwrap();
    assert_eq!(
        labels(&cart),
        map(&[
            ("app", "cart"),
            ("component", "api"),
            ("container", "main"),
            ("job", "shop/cart"),
            ("namespace", "shop"),
            ("node_name", "node-1"),
            ("pod", "cart-5d4f7b9c8d-abcde"),
            ("stream", "stdout"),
        ])
    );
    assert!(cart.labels["filename"].as_str().unwrap().ends_with("/shop_cart-5d4f7b9c8d-abcde_uid-cart/main/0.log"));
    let etcd = find("etcd line").unwrap();
    assert_eq!(labels(&etcd).get("app").map(String::as_str), Some("node-1"), "the controller's name");
    assert_eq!(labels(&etcd).get("component").map(String::as_str), Some("etcd"));
    assert!(agent.terminate(Duration::from_secs(10)).success());
}

#[test]
fn with_the_api_server_unreachable_files_ship_with_their_path_labels_after_the_wait_and_are_counted() {
    let r = Receiver::start(&["--max-query-limit", "1000000"]);
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("pods");
    cri_log(&root, "shop_web-1_uid-web", "shipped anyway");
    // `namespaces`: the logs of other namespaces' pods are not read at all.
    cri_log(&root, "other_db-1_uid-db", "not in a namespace watched");
    let token = write_file(dir.path(), "token", "tok\n");
    // Nothing listens on this port.
    let closed = free_port();
    let kubernetes = format!(
        r#"api_server = "https://127.0.0.1:{closed}", token_file = "{}", node_name = "node-1", wait_for_pod = "1s", namespaces = {{ names = ["shop"] }}"#,
        token.display()
    );
    let cfg = k8s_config(dir.path(), &r.base, &root, "200ms", &kubernetes);
    let agent = Agent::start(&cfg);
    let all = || query_all(&r, r#"{namespace="shop"}"#, None);
    assert!(wait_for(Duration::from_secs(20), || !all().is_empty()), "{}", agent.stderr_text());
    let e = &all()[0];
    assert_eq!(e.line, "shipped anyway");
    assert_eq!(labels(e), map(&[("container", "main"), ("namespace", "shop"), ("pod", "web-1"), ("stream", "stdout")]));
    assert_eq!(agent.metric(r#"tailship_file_events_total{event="pod_unknown",source="kubernetes-0"}"#), 1.0);
    assert!(query_all(&r, r#"{namespace="other"}"#, None).is_empty());
    let said = agent.stderr_text();
    assert!(said.contains("cannot reach the Kubernetes API server") && said.contains("(watching pods)"), "{said}");
    assert!(agent.terminate(Duration::from_secs(10)).success());
}

/// A pod's log is opened when its pod becomes known, not at the next scan
/// (issue #52: pod logs were opened about 10 s late after a start, as the
/// first scan ran before the pod list arrived): with a scan every hour,
/// the file of a pod the watch adds later is read at once.
#[test]
fn a_pod_log_is_opened_as_soon_as_its_pod_is_known_not_at_the_next_scan() {
    let (ca, tls) = pki::private_ca();
    let cluster: Shared = Arc::default();
    cluster.lock().unwrap().version = 3;
    let port = api_server(tls, cluster.clone());
    let r = Receiver::start(&["--max-query-limit", "1000000"]);
    let (dir, root, ca_file, token) = pods_dir(&ca);
    cri_log(&root, "shop_late-1_uid-late", "hello from late");
    let kubernetes = api_keys(port, &ca_file, &token, "1h");
    let cfg = k8s_config(dir.path(), &r.base, &root, "1h", &kubernetes);
    let agent = Agent::start(&cfg);
    let watching = || cluster.lock().unwrap().requests.iter().any(|(l, _)| l.contains("watch=1"));
    assert!(wait_for(Duration::from_secs(20), watching), "{}", agent.stderr_text());
    event(&cluster, "ADDED", pod("shop", "late-1", "uid-late", json!({ "app": "late" }), None));
    let find = || query_all(&r, r#"{stream="stdout"}"#, None).into_iter().find(|e| e.line == "hello from late");
    assert!(wait_for(Duration::from_secs(20), || find().is_some()), "{}", agent.stderr_text());
    assert_eq!(labels(&find().unwrap()).get("pod").map(String::as_str), Some("late-1"));
}
