//! A Kubernetes API server for the corpus's Kubernetes jobs, on loopback
//! over plain HTTP: the cluster of [`super::kube_cluster`], listed and
//! watched as the real API server does it for both agents (Promtail's
//! client-go asks for a watch-list, `watch=true&sendInitialEvents=true`:
//! every object as ADDED, then a BOOKMARK marking the initial events'
//! end; tailship lists, then watches), with the label and field selectors
//! the jobs send applied, and every request recorded.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};

/// What the API server holds and what it was asked.
#[derive(Default)]
pub struct Cluster {
    /// Objects by resource kind (`pods`, `nodes`, `namespaces`, ...).
    pub objects: BTreeMap<String, Vec<Value>>,
    /// Request lines seen.
    pub requests: Vec<String>,
}

pub type Shared = Arc<Mutex<Cluster>>;

/// Serves `cluster` on a free loopback port; returns the port.
pub fn serve(cluster: Shared) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(tcp) = stream else { continue };
            let cluster = cluster.clone();
            std::thread::spawn(move || answer(tcp, &cluster));
        }
    });
    port
}

/// The query parameters of a request target, decoded.
fn query(target: &str) -> BTreeMap<String, String> {
    let q = target.split_once('?').map_or("", |(_, q)| q);
    url::form_urlencoded::parse(q.as_bytes()).into_owned().collect()
}

fn answer(mut tcp: TcpStream, cluster: &Shared) {
    let _ = tcp.set_read_timeout(Some(Duration::from_secs(5)));
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
        match tcp.read(&mut chunk) {
            Ok(0) | Err(_) => return,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
    let head = String::from_utf8_lossy(&buf).to_string();
    let line = head.lines().next().unwrap_or("").to_string();
    cluster.lock().unwrap().requests.push(line.clone());
    let target = line.split(' ').nth(1).unwrap_or("");
    let path = target.split('?').next().unwrap_or("");
    let q = query(target);
    let kind = path.rsplit('/').next().unwrap_or("").to_string();
    let ns = path.split("/namespaces/").nth(1).and_then(|r| r.split_once('/')).map(|(n, _)| n.to_string());
    let items: Vec<Value> = {
        let c = cluster.lock().unwrap();
        c.objects
            .get(&kind)
            .into_iter()
            .flatten()
            .filter(|o| ns.as_deref().is_none_or(|n| o["metadata"]["namespace"] == n))
            .filter(|o| q.get("labelSelector").is_none_or(|s| labels_match(o, s)))
            .filter(|o| q.get("fieldSelector").is_none_or(|s| fields_match(o, s)))
            .cloned()
            .collect()
    };
    let watch = q.get("watch").is_some_and(|w| w == "1" || w == "true");
    if !watch {
        let body =
            json!({ "kind": "List", "apiVersion": "v1", "metadata": { "resourceVersion": "10" }, "items": items })
                .to_string();
        let _ = write!(
            tcp,
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
        return;
    }
    let _ = write!(
        tcp,
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
    );
    if q.get("sendInitialEvents").is_some_and(|v| v == "true") {
        for o in items {
            send_event(&mut tcp, &json!({ "type": "ADDED", "object": o }));
        }
        let api_version = if kind == "endpointslices" { "discovery.k8s.io/v1" } else { "v1" };
        let bookmark = json!({ "type": "BOOKMARK", "object": { "kind": object_kind(&kind), "apiVersion": api_version,
            "metadata": { "resourceVersion": "10", "annotations": { "k8s.io/initial-events-end": "true" } } } });
        send_event(&mut tcp, &bookmark);
    }
    // The cluster does not change: the watch stays open, quiet, until the
    // agent closes it or the test ends.
    let mut one = [0u8; 1];
    let _ = tcp.set_read_timeout(None);
    let _ = tcp.read(&mut one);
}

fn send_event(tcp: &mut TcpStream, event: &Value) {
    let text = format!("{event}\n");
    let _ = write!(tcp, "{:x}\r\n{text}\r\n", text.len());
    let _ = tcp.flush();
}

/// `pods` -> `Pod`, as a bookmark names its kind.
fn object_kind(kind: &str) -> &'static str {
    match kind {
        "pods" => "Pod",
        "nodes" => "Node",
        "namespaces" => "Namespace",
        "services" => "Service",
        "endpoints" => "Endpoints",
        "endpointslices" => "EndpointSlice",
        _ => "Unknown",
    }
}

/// A label selector's requirements (`a=b`, `a==b`, `a!=b`, `a`, `!a`,
/// `a in (x,y)`, `a notin (x,y)`) over the object's labels.
fn labels_match(o: &Value, selector: &str) -> bool {
    let labels = &o["metadata"]["labels"];
    let get = |k: &str| labels.get(k).and_then(Value::as_str);
    requirements(selector).iter().all(|r| {
        let r = r.trim();
        if r.is_empty() {
            return true;
        }
        if let Some((k, set)) = r.split_once(" notin ") {
            let vals = set_of(set);
            return get(k.trim()).is_none_or(|v| !vals.contains(&v.to_string()));
        }
        if let Some((k, set)) = r.split_once(" in ") {
            return get(k.trim()).is_some_and(|v| set_of(set).contains(&v.to_string()));
        }
        if let Some((k, v)) = r.split_once("!=") {
            return get(k.trim()) != Some(v.trim());
        }
        if let Some((k, v)) = r.split_once("==").or_else(|| r.split_once('=')) {
            return get(k.trim()) == Some(v.trim());
        }
        match r.strip_prefix('!') {
            Some(k) => get(k.trim()).is_none(),
            None => get(r).is_some(),
        }
    })
}

/// A selector's requirements: split at commas outside parentheses.
fn requirements(selector: &str) -> Vec<String> {
    let (mut out, mut cur, mut depth) = (Vec::new(), String::new(), 0);
    for c in selector.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                out.push(std::mem::take(&mut cur));
                continue;
            }
            _ => {}
        }
        cur.push(c);
    }
    out.push(cur);
    out
}

fn set_of(set: &str) -> Vec<String> {
    set.trim().trim_start_matches('(').trim_end_matches(')').split(',').map(|s| s.trim().to_string()).collect()
}

/// A field selector (`a=b`, `a==b`, `a!=b`, comma-joined) over the fields
/// the API server takes for pods and the others.
fn fields_match(o: &Value, selector: &str) -> bool {
    selector.split(',').filter(|r| !r.is_empty()).all(|r| {
        let (k, v, eq) = match r.split_once("!=") {
            Some((k, v)) => (k, v, false),
            None => match r.split_once("==").or_else(|| r.split_once('=')) {
                Some((k, v)) => (k, v, true),
                None => return false,
            },
        };
        let pointer = format!("/{}", k.trim().replace('.', "/"));
        let have = o.pointer(&pointer).and_then(Value::as_str).unwrap_or("");
        (have == v.trim()) == eq
    })
}
