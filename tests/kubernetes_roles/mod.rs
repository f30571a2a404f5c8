//! Kubernetes discovery of the roles node, service and ingress (Promtail's
//! `kubernetes_sd_configs` file targets) through the real binary: the API
//! server's list and watch served on loopback by this test (HTTPS with a
//! client certificate required and a certificate for another name than
//! 127.0.0.1, or plain HTTP with basic auth), log files named by the
//! targets' relabelled `__path__`, shipped to `tailship receive`.

use crate::agent;
use crate::common;
use crate::discovery;
use crate::pki::Pki;
use crate::scenario;
use discovery::convert_promtail;
use discovery::{label_map as map, stored_labels as labels};
use scenario::Scenario;

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent::{free_port, query_all, write_file, Agent, Stored};
use common::{bin, wait_for, Receiver};
use serde_json::{json, Value};
use tokio_rustls::rustls;

mod endpoints;
mod promtail_jobs;

/// A private CA, the server's certificate (for `kube.test` only) and a
/// client certificate, both of that CA, which the server asks for.
fn pki() -> Pki {
    crate::pki::pki("kube.test", Some("tailship"))
}

/// Writes the CA and the client certificate and key of `pki` to `d`: their paths.
fn write_pki(d: &Path, pki: &Pki) -> (PathBuf, PathBuf, PathBuf) {
    let (cert, key) = pki.client.as_ref().unwrap();
    (write_file(d, "ca.crt", &pki.ca), write_file(d, "client.crt", cert), write_file(d, "client.key", key))
}

/// What the API server holds and what it was asked.
#[derive(Default)]
struct Cluster {
    /// Objects by resource kind (`nodes`, `services`, `ingresses`).
    objects: BTreeMap<String, Vec<Value>>,
    version: u64,
    /// Watch events so far: (kind, event); each watch sends those after its start.
    events: Vec<(String, String)>,
    /// Request lines and Authorization headers seen.
    requests: Vec<(String, String)>,
    /// Kinds whose list answers 503 (an API server not ready for them yet).
    unlisted: Vec<String>,
}

type Shared = Arc<Mutex<Cluster>>;

trait Conn: Read + Write + Send {}
impl<T: Read + Write + Send> Conn for T {}

/// Serves list and watch of any resource kind, as the API server does, over
/// TLS when `tls` is given; a request without the right `auth` (when given) gets 401.
fn api_server(tls: Option<Arc<rustls::ServerConfig>>, cluster: Shared, auth: Option<&'static str>) -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(tcp) = stream else { continue };
            let (tls, cluster) = (tls.clone(), cluster.clone());
            std::thread::spawn(move || {
                let _ = tcp.set_read_timeout(Some(Duration::from_secs(5)));
                let mut conn: Box<dyn Conn> = match tls {
                    Some(config) => {
                        let Ok(c) = rustls::ServerConnection::new(config) else { return };
                        Box::new(rustls::StreamOwned::new(c, tcp))
                    }
                    None => Box::new(tcp),
                };
                serve(&mut *conn, &cluster, auth);
            });
        }
    });
    port
}

fn serve(conn: &mut dyn Conn, cluster: &Shared, want_auth: Option<&str>) {
    let Some((line, auth)) = common::read_request_head(conn) else { return };
    cluster.lock().unwrap().requests.push((line.clone(), auth.clone()));
    if want_auth.is_some_and(|w| w != auth) {
        let _ = write!(conn, "HTTP/1.1 401 Unauthorized\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
        return;
    }
    let target = line.split(' ').nth(1).unwrap_or("");
    let path = target.split('?').next().unwrap_or("");
    let kind = path.rsplit('/').next().unwrap_or("").to_string();
    let ns = path.split("/namespaces/").nth(1).and_then(|r| r.split('/').next()).map(String::from);
    let in_ns = |o: &Value| ns.as_deref().is_none_or(|n| o["metadata"]["namespace"] == n);
    if !target.contains("watch=1") {
        let c = cluster.lock().unwrap();
        if c.unlisted.contains(&kind) {
            drop(c);
            let _ = write!(conn, "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
            return;
        }
        let items: Vec<&Value> = c.objects.get(&kind).into_iter().flatten().filter(|o| in_ns(o)).collect();
        let body = json!({ "kind": "List", "apiVersion": "v1",
            "metadata": { "resourceVersion": c.version.to_string() }, "items": items })
        .to_string();
        drop(c);
        let _ = write!(conn, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}", body.len());
        let _ = conn.flush();
        return;
    }
    let mut sent = cluster.lock().unwrap().events.len();
    let _ = write!(
        conn,
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
    );
    let _ = conn.flush();
    loop {
        let new: Vec<(String, String)> = cluster.lock().unwrap().events[sent..].to_vec();
        sent += new.len();
        for (k, e) in new {
            let object: Value = serde_json::from_str::<Value>(&e).unwrap()["object"].clone();
            if k != kind || !in_ns(&object) {
                continue;
            }
            let data = format!("{e}\n");
            if write!(conn, "{:x}\r\n{data}\r\n", data.len()).and_then(|_| conn.flush()).is_err() {
                return;
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Records an event of `kind` (and applies it to the objects listed from now on).
fn event(c: &Shared, kind: &str, ty: &str, object: Value) {
    let mut c = c.lock().unwrap();
    c.version += 1;
    let mut object = object;
    object["metadata"]["resourceVersion"] = json!(c.version.to_string());
    let name = object["metadata"]["name"].clone();
    let list = c.objects.entry(kind.to_string()).or_default();
    list.retain(|o| o["metadata"]["name"] != name);
    if ty != "DELETED" {
        list.push(object.clone());
    }
    c.events.push((kind.to_string(), json!({ "type": ty, "object": object }).to_string()));
}

fn node(name: &str, ip: &str) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Node",
        "metadata": { "name": name, "uid": format!("uid-{name}"), "resourceVersion": "1",
                      "labels": { "kubernetes.io/os": "linux" }, "annotations": { "team": "infra" } },
        "spec": { "providerID": format!("aws:///{name}") },
        "status": { "addresses": [{ "type": "InternalIP", "address": ip }, { "type": "Hostname", "address": name }],
                    "conditions": [{ "type": "Ready", "status": "True" }],
                    "daemonEndpoints": { "kubeletEndpoint": { "Port": 10250 } } }
    })
}

fn log(path: &Path, line: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let mut f = std::fs::OpenOptions::new().create(true).append(true).open(path).unwrap();
    writeln!(f, "{line}").unwrap();
}

fn config(dir: &Path, url: &str, sources: &str) -> std::path::PathBuf {
    let text = format!(
        r#"[server]
listen = "127.0.0.1:{mport}"
[client]
url = "{url}"
batch = {{ max_wait = "100ms" }}
[positions]
path = "{dir}/positions.json"
{sources}"#,
        mport = free_port(),
        dir = dir.display(),
    );
    write_file(dir, "tailship.toml", &text)
}

#[test]
fn role_node_targets_over_mutual_tls_with_selectors_appear_and_go() {
    let pki = pki();
    let cluster: Shared = Arc::default();
    {
        let mut c = cluster.lock().unwrap();
        c.version = 100;
        c.objects.insert("nodes".into(), vec![node("node-a", "10.0.0.1"), node("node-b", "10.0.0.2")]);
    }
    let port = api_server(Some(pki.server.clone()), cluster.clone(), None);
    let r = Receiver::start(&["--max-query-limit", "1000000"]);
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (ca, cert, key) = write_pki(d, &pki);
    log(&d.join("nodes/node-a/kubelet.log"), "a: started");
    log(&d.join("nodes/node-b/kubelet.log"), "b: started");
    let sources = format!(
        r#"[[sources]]
type = "file"
host_label = false
scan_interval = "200ms"
kubernetes = {{ role = "node", api_server = "https://127.0.0.1:{port}", ca_file = "{ca}", tls = {{ cert_file = "{cert}", key_file = "{key}", server_name = "kube.test" }}, selectors = [{{ role = "node", label = "kubernetes.io/os=linux", field = "metadata.name!=node-z" }}] }}
relabel = [
  {{ source_labels = ["__meta_kubernetes_node_name"], target_label = "__path__", replacement = "{d}/nodes/$1/*.log" }},
  {{ action = "labelmap", regex = '__meta_kubernetes_node_label_(.+)' }},
  {{ source_labels = ["__meta_kubernetes_node_address_InternalIP"], target_label = "ip" }},
  {{ source_labels = ["__meta_kubernetes_node_address_Hostname"], target_label = "hostname" }},
  {{ source_labels = ["__meta_kubernetes_node_provider_id"], target_label = "provider" }},
  {{ source_labels = ["__meta_kubernetes_node_condition_ready"], target_label = "ready" }},
  {{ source_labels = ["__meta_kubernetes_node_annotation_team", "__meta_kubernetes_node_annotationpresent_team"], target_label = "team" }},
  {{ source_labels = ["__address__"], target_label = "address" }},
]
"#,
        ca = ca.display(),
        cert = cert.display(),
        key = key.display(),
        d = d.display(),
    );
    let cfg = config(d, &r.base, &sources);
    let agent = Agent::start(&cfg);
    let find = |text: &str| query_all(&r, r#"{instance=~".+"}"#, None).into_iter().find(|e| e.line == text);
    assert!(wait_for(Duration::from_secs(20), || find("b: started").is_some()), "{}", agent.stderr_text());
    let want = |n: &str, ip: &str| {
        map(&[
            ("address", &format!("{ip}:10250")),
            ("hostname", n),
            ("instance", n),
            ("ip", ip),
            ("kubernetes_io_os", "linux"),
            ("provider", &format!("aws:///{n}")),
            ("ready", "true"),
            ("team", "infra;true"),
        ])
    };
    assert!(wait_for(Duration::from_secs(10), || find("a: started").is_some()));
    assert_eq!(labels(&find("a: started").unwrap()), want("node-a", "10.0.0.1"));
    assert_eq!(labels(&find("b: started").unwrap()), want("node-b", "10.0.0.2"));
    {
        let c = cluster.lock().unwrap();
        let lists: Vec<&String> =
            c.requests.iter().map(|(l, _)| l).filter(|l| l.starts_with("GET /api/v1/nodes?")).collect();
        assert!(!lists.is_empty());
        for l in lists {
            assert!(l.contains("labelSelector=kubernetes.io%2Fos%3Dlinux"), "{l}");
            assert!(l.contains("fieldSelector=metadata.name%21%3Dnode-z"), "{l}");
        }
    }
    // A node that appears is tailed; one that goes is read to its end and closed.
    log(&d.join("nodes/node-c/kubelet.log"), "c: started");
    event(&cluster, "nodes", "ADDED", node("node-c", "10.0.0.3"));
    assert!(wait_for(Duration::from_secs(20), || find("c: started").is_some()), "{}", agent.stderr_text());
    assert_eq!(labels(&find("c: started").unwrap()), want("node-c", "10.0.0.3"));
    event(&cluster, "nodes", "DELETED", node("node-a", "10.0.0.1"));
    let untargeted = "tailship_file_events_total{event=\"untargeted\",source=\"file-0\"}";
    assert!(wait_for(Duration::from_secs(20), || agent.metric(untargeted) >= 1.0), "{}", agent.stderr_text());
    // Read to its end, then closed (after the idle wait of any file let go).
    let closed = "tailship_file_events_total{event=\"closed\",source=\"file-0\"}";
    assert!(wait_for(Duration::from_secs(20), || agent.metric(closed) >= 1.0), "{}", agent.stderr_text());
    log(&d.join("nodes/node-a/kubelet.log"), "a: after its node went");
    log(&d.join("nodes/node-c/kubelet.log"), "c: later");
    assert!(wait_for(Duration::from_secs(20), || find("c: later").is_some()));
    assert!(find("a: after its node went").is_none());
}

fn service(ns: &str, name: &str, ty: &str) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": { "name": name, "namespace": ns, "uid": format!("uid-{name}"), "resourceVersion": "1",
                      "labels": { "app": name } },
        "spec": { "type": ty, "clusterIP": "10.96.0.7", "loadBalancerIP": "",
                  "ports": [{ "name": "http", "port": 80, "protocol": "TCP" }, { "name": "grpc", "port": 9095, "protocol": "TCP" }] },
        "status": { "loadBalancer": { "ingress": [{ "ip": "203.0.113.9" }] } }
    })
}

fn ingress(ns: &str, name: &str) -> Value {
    json!({
        "apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
        "metadata": { "name": name, "namespace": ns, "uid": format!("uid-{name}"), "resourceVersion": "1",
                      "annotations": { "kubernetes.io/ingress.class": "nginx" } },
        "spec": { "ingressClassName": "nginx", "tls": [{ "hosts": ["*.example.com"] }],
                  "rules": [{ "host": "shop.example.com", "http": { "paths": [{ "path": "/cart" }, { "path": "" }] } },
                            { "host": "plain.example.org" }] }
    })
}

#[test]
fn roles_service_and_ingress_in_some_namespaces_with_basic_auth_and_a_bearer_token() {
    let cluster: Shared = Arc::default();
    {
        let mut c = cluster.lock().unwrap();
        c.version = 7;
        c.objects.insert(
            "services".into(),
            vec![service("shop", "web", "LoadBalancer"), service("other", "db", "ClusterIP")],
        );
        c.objects.insert("ingresses".into(), vec![ingress("shop", "front")]);
    }
    // Basic auth for the services' server, a bearer token for the ingresses'.
    let svc_port = api_server(None, cluster.clone(), Some("Basic a3ViZTpzM2NyZXQ="));
    let ing_port = api_server(None, cluster.clone(), Some("Bearer tok-9"));
    let r = Receiver::start(&["--max-query-limit", "1000000"]);
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let pw = write_file(d, "pw", "s3cret\n");
    for p in ["shop/web/80.log", "shop/web/9095.log", "other/db/80.log"] {
        log(&d.join("svc").join(p), &format!("svc {p}"));
    }
    for p in ["shop.example.com/cart.log", "shop.example.com/root.log", "plain.example.org/root.log"] {
        log(&d.join("ing").join(p), &format!("ing {p}"));
    }
    let sources = format!(
        r#"[[sources]]
type = "file"
name = "svc"
host_label = false
scan_interval = "200ms"
kubernetes = {{ role = "service", api_server = "http://127.0.0.1:{svc_port}", basic_auth = {{ username = "kube", password_file = "{pw}" }}, namespaces = {{ names = ["shop"] }} }}
relabel = [
  {{ source_labels = ["__meta_kubernetes_namespace", "__meta_kubernetes_service_name", "__meta_kubernetes_service_port_number"], separator = "/", target_label = "__path__", replacement = "{d}/svc/$1.log" }},
  {{ action = "labelmap", regex = '__meta_kubernetes_(namespace|service_name|service_port_name|service_port_protocol|service_type|service_cluster_ip|service_loadbalancer_ip|service_label_app)' }},
  {{ source_labels = ["__address__"], target_label = "address" }},
]
[[sources]]
type = "file"
name = "ing"
host_label = false
scan_interval = "200ms"
kubernetes = {{ role = "ingress", api_server = "http://127.0.0.1:{ing_port}", bearer_token = "tok-9" }}
relabel = [
  {{ source_labels = ["__meta_kubernetes_ingress_path"], regex = '/(.*)', target_label = "__tmp_p", replacement = "${{1}}" }},
  {{ source_labels = ["__tmp_p"], regex = "", target_label = "__tmp_p", replacement = "root" }},
  {{ source_labels = ["__meta_kubernetes_ingress_host", "__tmp_p"], separator = "/", target_label = "__path__", replacement = "{d}/ing/$1.log" }},
  {{ action = "labelmap", regex = '__meta_kubernetes_(namespace|ingress_name|ingress_class_name|ingress_scheme|ingress_host|ingress_path|ingress_annotation_kubernetes_io_ingress_class)' }},
  {{ source_labels = ["__address__"], target_label = "address" }},
]
"#,
        pw = pw.display(),
        d = d.display(),
    );
    let cfg = config(d, &r.base, &sources);
    let agent = Agent::start(&cfg);
    let all = || query_all(&r, r#"{address=~".+"}"#, None);
    let find = |text: &str| all().into_iter().find(|e| e.line == text);
    assert!(
        wait_for(Duration::from_secs(20), || all().len() >= 5),
        "{:?}\n{}",
        all().iter().map(|e| &e.line).collect::<Vec<_>>(),
        agent.stderr_text()
    );
    let svc = |port: &str, name: &str| {
        map(&[
            ("address", &format!("web.shop.svc:{port}")),
            ("namespace", "shop"),
            ("service_cluster_ip", "10.96.0.7"),
            ("service_label_app", "web"),
            ("service_loadbalancer_ip", "203.0.113.9"),
            ("service_name", "web"),
            ("service_port_name", name),
            ("service_port_protocol", "TCP"),
            ("service_type", "LoadBalancer"),
        ])
    };
    // `service_name` is also the receiver's own label: compare it in full here.
    let full = |e: Stored| -> BTreeMap<String, String> {
        e.labels
            .into_iter()
            .filter(|(k, _)| k != "filename")
            .map(|(k, v)| (k, v.as_str().unwrap().to_string()))
            .collect()
    };
    assert_eq!(full(find("svc shop/web/80.log").unwrap()), svc("80", "http"));
    assert_eq!(full(find("svc shop/web/9095.log").unwrap()), svc("9095", "grpc"));
    let ing = |host: &str, path: &str, scheme: &str| {
        map(&[
            ("address", host),
            ("ingress_annotation_kubernetes_io_ingress_class", "nginx"),
            ("ingress_class_name", "nginx"),
            ("ingress_host", host),
            ("ingress_name", "front"),
            ("ingress_path", path),
            ("ingress_scheme", scheme),
            ("namespace", "shop"),
        ])
    };
    assert_eq!(labels(&find("ing shop.example.com/cart.log").unwrap()), ing("shop.example.com", "/cart", "https"));
    assert_eq!(labels(&find("ing shop.example.com/root.log").unwrap()), ing("shop.example.com", "/", "https"));
    assert_eq!(labels(&find("ing plain.example.org/root.log").unwrap()), ing("plain.example.org", "/", "http"));
    // Only the namespace asked for was listed: the other namespace's service is no target.
    assert!(find("svc other/db/80.log").is_none());
    let c = cluster.lock().unwrap();
    assert!(c.requests.iter().any(|(l, _)| l.starts_with("GET /api/v1/namespaces/shop/services?")));
    assert!(c.requests.iter().any(|(l, _)| l.starts_with("GET /apis/networking.k8s.io/v1/ingresses?")));
    assert!(!c.requests.iter().any(|(l, _)| l.starts_with("GET /api/v1/services")));
}

fn check(dir: &Path, kubernetes: &str) -> (i32, String) {
    let cfg = write_file(
        dir,
        "bad.toml",
        &format!("[client]\nurl = \"http://127.0.0.1:1\"\n[[sources]]\ntype = \"file\"\nkubernetes = {kubernetes}\n"),
    );
    let out = Command::new(bin()).args(["check", "--config"]).arg(&cfg).output().unwrap();
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stderr).to_string())
}

#[test]
fn bad_kubernetes_discovery_config_exits_2_naming_the_key_and_file() {
    let dir = tempfile::tempdir().unwrap();
    for (k, key, says) in [
        (r#"{ role = "nodes" }"#, "sources[0].kubernetes.role", "nodes"),
        (r#"{ role = "node", node_name = "n1" }"#, "sources[0].kubernetes.node_name", "role pod"),
        (r#"{ role = "service", node_name_env = "HOSTNAME" }"#, "sources[0].kubernetes.node_name_env", "role pod"),
        (
            r#"{ role = "node", selectors = [{ role = "node", label = "app in (a,b" }] }"#,
            "sources[0].kubernetes.selectors[0].label",
            "label selector",
        ),
        (
            r#"{ role = "node", selectors = [{ role = "node", field = "metadata.name" }] }"#,
            "sources[0].kubernetes.selectors[0].field",
            "field selector",
        ),
        (
            r#"{ role = "service", selectors = [{ role = "pod", label = "a=b" }] }"#,
            "sources[0].kubernetes.selectors[0].role",
            "service",
        ),
        (r#"{ role = "node", tls = { server_name = "x" } }"#, "sources[0].kubernetes.tls", "api_server"),
        (
            r#"{ role = "node", api_server = "https://k:6443", tls = { cert_file = "/nonexistent/c.pem" } }"#,
            "sources[0].kubernetes.tls.key_file",
            "key",
        ),
    ] {
        let (code, err) = check(dir.path(), k);
        assert_eq!(code, 2, "{k}: {err}");
        assert!(err.contains(key) && err.contains(says) && err.contains("bad.toml"), "{k}: {err}");
    }
}

#[test]
fn without_server_name_or_without_the_client_certificate_the_api_server_is_not_reached() {
    let pki = pki();
    let cluster: Shared = Arc::default();
    cluster.lock().unwrap().objects.insert("nodes".into(), vec![node("node-a", "10.0.0.1")]);
    let port = api_server(Some(pki.server.clone()), cluster.clone(), None);
    let r = Receiver::start(&["--max-query-limit", "1000000"]);
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (ca, cert, key) = write_pki(d, &pki);
    log(&d.join("nodes/node-a/kubelet.log"), "never shipped");
    let source = |name: &str, tls: &str| {
        format!(
            r#"[[sources]]
type = "file"
name = "{name}"
scan_interval = "200ms"
kubernetes = {{ role = "node", api_server = "https://127.0.0.1:{port}", ca_file = "{ca}", tls = {{ {tls} }} }}
relabel = [{{ source_labels = ["__meta_kubernetes_node_name"], target_label = "__path__", replacement = "{d}/nodes/$1/*.log" }}]
"#,
            ca = ca.display(),
            d = d.display(),
        )
    };
    // The certificate names kube.test, not 127.0.0.1; the server asks for a client certificate.
    let sources = source("no-name", &format!("cert_file = \"{}\", key_file = \"{}\"", cert.display(), key.display()))
        + &source("no-cert", "server_name = \"kube.test\"");
    let cfg = config(d, &r.base, &sources);
    let agent = Agent::start(&cfg);
    let warned = |s: &str| {
        agent.stderr_text().lines().any(|l| {
            l.contains("cannot reach the Kubernetes API server")
                && l.contains("(watching nodes)")
                && l.contains(&format!("source={s}"))
        })
    };
    assert!(wait_for(Duration::from_secs(20), || warned("no-name") && warned("no-cert")), "{}", agent.stderr_text());
    assert!(query_all(&r, r#"{filename=~".+"}"#, None).is_empty());
    assert!(cluster.lock().unwrap().requests.is_empty(), "no request got through the TLS handshake");
}
