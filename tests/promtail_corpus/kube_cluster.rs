//! The cluster the corpus's Kubernetes jobs discover: eight pods on the
//! agents' node `node-1` across four namespaces (a Deployment with two
//! containers and an init container, a StatefulSet, a DaemonSet, a static
//! mirror pod whose log folder kubelet names by its config hash, CoreDNS
//! without an `app` label, a bare pod, a Deployment with two ports, a Job),
//! one pod on another node, and a pod still pending (no IP); their log
//! files as kubelet lays them out (`/var/log/pods/<ns>_<pod>_<uid>/<container>/0.log`,
//! `/var/log/containers/<pod>_<ns>_<container>-<id>.log` linking to it),
//! written under a job's own root in CRI format (docker json-file for a
//! job with a `docker` stage).

use std::path::Path;

use serde_json::{json, Value};

/// The node both agents run on (`$HOSTNAME`).
pub const NODE: &str = "node-1";

struct PodDef {
    ns: &'static str,
    name: &'static str,
    uid: &'static str,
    node: &'static str,
    labels: Value,
    annotations: Value,
    controller: Option<(&'static str, &'static str)>,
    /// (name, ports as (name, number)); the init containers after `init`.
    containers: Vec<(&'static str, Vec<(&'static str, i64)>)>,
    init: Vec<&'static str>,
    ip: &'static str,
    /// A static pod's config hash: its log folder's name in place of the uid.
    hash: Option<&'static str>,
}

fn defs() -> Vec<PodDef> {
    let none = json!({});
    vec![
        PodDef {
            ns: "default",
            name: "web-7d4b9c6f8-xk2lp",
            uid: "0b7d2c1e-5a3f-4e6b-9c8d-1f2e3a4b5c6d",
            node: NODE,
            labels: json!({ "app": "web", "pod-template-hash": "7d4b9c6f8", "app.kubernetes.io/name": "web",
                            "app.kubernetes.io/instance": "web-prod", "app.kubernetes.io/component": "frontend" }),
            annotations: json!({ "prometheus.io/scrape": "true", "kubectl.kubernetes.io/default-container": "nginx" }),
            controller: Some(("ReplicaSet", "web-7d4b9c6f8")),
            containers: vec![("nginx", vec![("http", 80)]), ("log-shipper", vec![])],
            init: vec!["init-db"],
            ip: "10.42.0.11",
            hash: None,
        },
        PodDef {
            ns: "monitoring",
            name: "prometheus-0",
            uid: "1c8e3d2f-6b4a-4f7c-8d9e-2a3b4c5d6e7f",
            node: NODE,
            labels: json!({ "app.kubernetes.io/name": "prometheus", "statefulset.kubernetes.io/pod-name": "prometheus-0",
                            "release": "kube-prometheus" }),
            annotations: none.clone(),
            controller: Some(("StatefulSet", "prometheus")),
            containers: vec![("prometheus", vec![("web", 9090)])],
            init: vec![],
            ip: "10.42.0.12",
            hash: None,
        },
        PodDef {
            ns: "kube-system",
            name: "kube-proxy-4x9zq",
            uid: "2d9f4e3a-7c5b-4a8d-9eaf-3b4c5d6e7f80",
            node: NODE,
            labels: json!({ "k8s-app": "kube-proxy", "controller-revision-hash": "5b6c7d8e9f" }),
            annotations: none.clone(),
            controller: Some(("DaemonSet", "kube-proxy")),
            containers: vec![("kube-proxy", vec![])],
            init: vec![],
            ip: "192.168.0.10",
            hash: None,
        },
        PodDef {
            ns: "kube-system",
            name: "kube-apiserver-node-1",
            uid: "3e0a5f4b-8d6c-4b9e-afb0-4c5d6e7f8091",
            node: NODE,
            labels: json!({ "component": "kube-apiserver", "tier": "control-plane" }),
            annotations: json!({ "kubernetes.io/config.hash": "9f8e7d6c5b4a39281706f5e4d3c2b1a0",
                                 "kubernetes.io/config.mirror": "9f8e7d6c5b4a39281706f5e4d3c2b1a0",
                                 "kubernetes.io/config.source": "file" }),
            controller: Some(("Node", NODE)),
            containers: vec![("kube-apiserver", vec![])],
            init: vec![],
            ip: "192.168.0.10",
            hash: Some("9f8e7d6c5b4a39281706f5e4d3c2b1a0"),
        },
        PodDef {
            ns: "kube-system",
            name: "coredns-5d78c9869d-q7w8e",
            uid: "4f1b6a5c-9e7d-4caf-b0c1-5d6e7f8091a2",
            node: NODE,
            labels: json!({ "k8s-app": "kube-dns", "pod-template-hash": "5d78c9869d" }),
            annotations: none.clone(),
            controller: Some(("ReplicaSet", "coredns-5d78c9869d")),
            containers: vec![("coredns", vec![("dns", 53), ("dns-tcp", 53), ("metrics", 9153)])],
            init: vec![],
            ip: "10.42.0.13",
            hash: None,
        },
        PodDef {
            ns: "apps",
            name: "debug",
            uid: "5a2c7b6d-0f8e-4d1a-c1d2-6e7f8091a2b3",
            node: NODE,
            labels: json!({}),
            annotations: none.clone(),
            controller: None,
            containers: vec![("shell", vec![])],
            init: vec![],
            ip: "10.42.0.14",
            hash: None,
        },
        PodDef {
            ns: "apps",
            name: "api-6c5d4e3f2-mn8bv",
            uid: "6b3d8c7e-1a9f-4e2b-d2e3-7f8091a2b3c4",
            node: NODE,
            labels: json!({ "app": "api", "name": "api", "app.kubernetes.io/name": "api", "version": "v2",
                            "team": "payments" }),
            annotations: json!({ "prometheus.io/scrape": "true", "prometheus.io/port": "9100" }),
            controller: Some(("ReplicaSet", "api-6c5d4e3f2")),
            containers: vec![("api", vec![("http", 8080), ("metrics", 9100)])],
            init: vec![],
            ip: "10.42.0.15",
            hash: None,
        },
        PodDef {
            ns: "default",
            name: "backup-28100000-h4j6k",
            uid: "7c4e9d8f-2b0a-4f3c-e3f4-8091a2b3c4d5",
            node: NODE,
            labels: json!({ "job-name": "backup-28100000", "app": "backup" }),
            annotations: none.clone(),
            controller: Some(("Job", "backup-28100000")),
            containers: vec![("backup", vec![])],
            init: vec![],
            ip: "10.42.0.16",
            hash: None,
        },
        PodDef {
            ns: "default",
            name: "web-7d4b9c6f8-zz9yy",
            uid: "8d5f0e9a-3c1b-4a4d-f4a5-91a2b3c4d5e6",
            node: "node-2",
            labels: json!({ "app": "web", "pod-template-hash": "7d4b9c6f8" }),
            annotations: none.clone(),
            controller: Some(("ReplicaSet", "web-7d4b9c6f8")),
            containers: vec![("nginx", vec![("http", 80)])],
            init: vec![],
            ip: "10.42.1.11",
            hash: None,
        },
        PodDef {
            ns: "apps",
            name: "api-6c5d4e3f2-pend1",
            uid: "9e6a1f0b-4d2c-4b5e-a5b6-a2b3c4d5e6f7",
            node: NODE,
            labels: json!({ "app": "api" }),
            annotations: none,
            controller: Some(("ReplicaSet", "api-6c5d4e3f2")),
            containers: vec![("api", vec![("http", 8080)])],
            init: vec![],
            ip: "",
            hash: None,
        },
    ]
}

fn container_id(uid: &str, container: &str) -> String {
    let seed = format!("{uid}{container}");
    let mut hex = String::new();
    for (i, b) in seed.bytes().cycle().take(32).enumerate() {
        hex.push_str(&format!("{:02x}", b.wrapping_mul(31).wrapping_add(i as u8)));
    }
    hex
}

fn pod_object(d: &PodDef) -> Value {
    let owners: Vec<Value> = d
        .controller
        .iter()
        .map(|(kind, name)| json!({ "apiVersion": "apps/v1", "kind": kind, "name": name, "uid": "owner", "controller": true }))
        .collect();
    let container = |(name, ports): &(&str, Vec<(&str, i64)>)| {
        let ports: Vec<Value> = ports
            .iter()
            .map(|(n, p)| json!({ "name": n, "containerPort": p, "protocol": if *n == "dns" { "UDP" } else { "TCP" } }))
            .collect();
        json!({ "name": name, "image": format!("registry.local/{name}:1.2.3"), "ports": ports })
    };
    let status =
        |name: &str| json!({ "name": name, "containerID": format!("containerd://{}", container_id(d.uid, name)) });
    let running = !d.ip.is_empty();
    let mut status_obj = json!({
        "phase": if running { "Running" } else { "Pending" },
        "hostIP": "192.168.0.10",
        "conditions": [{ "type": "Ready", "status": if running { "True" } else { "False" } }],
        "containerStatuses": d.containers.iter().map(|(n, _)| status(n)).collect::<Vec<_>>(),
        "initContainerStatuses": d.init.iter().map(|n| status(n)).collect::<Vec<_>>(),
    });
    if running {
        status_obj["podIP"] = json!(d.ip);
        status_obj["podIPs"] = json!([{ "ip": d.ip }]);
    }
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": { "name": d.name, "namespace": d.ns, "uid": d.uid, "resourceVersion": "7",
                      "labels": d.labels, "annotations": d.annotations, "ownerReferences": owners },
        "spec": { "nodeName": d.node,
                  "containers": d.containers.iter().map(container).collect::<Vec<_>>(),
                  "initContainers": d.init.iter().map(|n| container(&(n, vec![]))).collect::<Vec<_>>() },
        "status": status_obj,
    })
}

fn named(kind: &str, name: &str, labels: Value) -> Value {
    json!({ "apiVersion": "v1", "kind": kind, "metadata": { "name": name, "uid": format!("{kind}-{name}"),
            "resourceVersion": "3", "labels": labels } })
}

/// The objects of the cluster, by resource kind.
pub fn objects() -> std::collections::BTreeMap<String, Vec<Value>> {
    let mut out = std::collections::BTreeMap::new();
    out.insert("pods".to_string(), defs().iter().map(pod_object).collect());
    out.insert(
        "nodes".to_string(),
        vec![
            named("Node", NODE, json!({ "kubernetes.io/hostname": NODE, "topology.kubernetes.io/zone": "zone-a" })),
            named("Node", "node-2", json!({ "kubernetes.io/hostname": "node-2" })),
        ],
    );
    out.insert(
        "namespaces".to_string(),
        ["default", "monitoring", "kube-system", "apps"]
            .iter()
            .map(|n| named("Namespace", n, json!({ "kubernetes.io/metadata.name": n, "team": "platform" })))
            .collect(),
    );
    out
}

/// Writes the logs of the pods on [`NODE`] under `root` (a job's own `/`):
/// each container's lines, `lines` wrapped in CRI format (docker json-file
/// with `docker`), at times 1 ms apart.
pub fn write_logs(root: &Path, lines: &[Vec<u8>], docker: bool) {
    for d in defs().iter().filter(|d| d.node == NODE && !d.ip.is_empty()) {
        let folder = format!("{}_{}_{}", d.ns, d.name, d.hash.unwrap_or(d.uid));
        let names = d.containers.iter().map(|(n, _)| *n).chain(d.init.iter().copied());
        for (c, container) in names.enumerate() {
            let dir = root.join("var/log/pods").join(&folder).join(container);
            std::fs::create_dir_all(&dir).unwrap();
            let file = dir.join("0.log");
            let mut bytes = Vec::new();
            for (i, line) in lines.iter().enumerate() {
                let t = super::inputs::time(0) + chrono::Duration::milliseconds((c * 1000 + i) as i64);
                let ts = t.to_rfc3339_opts(chrono::SecondsFormat::Nanos, true);
                let text = line.strip_suffix(b"\n").unwrap_or(line);
                if docker {
                    let log = String::from_utf8_lossy(line);
                    bytes.extend_from_slice(
                        json!({ "log": log, "stream": "stdout", "time": ts }).to_string().as_bytes(),
                    );
                    bytes.push(b'\n');
                } else {
                    bytes.extend_from_slice(format!("{ts} stdout F ").as_bytes());
                    bytes.extend_from_slice(text);
                    bytes.push(b'\n');
                }
            }
            std::fs::write(&file, bytes).unwrap();
            let links = root.join("var/log/containers");
            std::fs::create_dir_all(&links).unwrap();
            let link = links.join(format!("{}_{}_{}-{}.log", d.name, d.ns, container, container_id(d.uid, container)));
            std::os::unix::fs::symlink(&file, link).unwrap();
        }
    }
}
