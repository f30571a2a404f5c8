//! The targets of each discovery role and their `__meta_kubernetes_*`
//! labels, with the names and values Prometheus' Kubernetes discovery gives
//! them (`discovery/kubernetes/{node,service,ingress}.go`; endpoints in
//! [`super::endpoints`]):
//! each target is its group's labels plus its own.

use std::collections::BTreeMap;

use super::objects::ObjectMeta;
use super::objects::{Ingress, Node, Service};
use super::pods::Pod;
use crate::discovery::sanitize;

/// One target's labels.
pub type Labels = BTreeMap<String, String>;

const P: &str = "__meta_kubernetes_";

fn put(l: &mut Labels, k: &str, v: &str) {
    l.insert(format!("{P}{k}"), v.to_string());
}

/// `<role>_name`, `<role>_label_*`, `<role>_labelpresent_*`,
/// `<role>_annotation_*`, `<role>_annotationpresent_*`.
pub fn object_meta(l: &mut Labels, m: &ObjectMeta, role: &str) {
    put(l, &format!("{role}_name"), &m.name);
    for (k, v) in &m.labels {
        put(l, &format!("{role}_label_{}", sanitize(k)), v);
        put(l, &format!("{role}_labelpresent_{}", sanitize(k)), "true");
    }
    for (k, v) in &m.annotations {
        put(l, &format!("{role}_annotation_{}", sanitize(k)), v);
        put(l, &format!("{role}_annotationpresent_{}", sanitize(k)), "true");
    }
}

/// The node a target runs on, for `attach_metadata.node`: its endpoint's
/// node, else its pod's.
pub fn node_of(l: &Labels) -> Option<&str> {
    ["endpoint_node_name", "endpointslice_endpoint_node_name", "pod_node_name"]
        .iter()
        .find_map(|k| l.get(&format!("{P}{k}")))
        .map(String::as_str)
        .filter(|n| !n.is_empty())
}

/// `attach_metadata`: the labels of the target's node (`node_name`,
/// `node_label_*`, ...) and of its namespace (`namespace_label_*`, ...;
/// not its name, which the target has already), as Prometheus adds them.
pub fn attach(l: &mut Labels, node: Option<&ObjectMeta>, namespace: Option<&ObjectMeta>) {
    if let Some(n) = node {
        object_meta(l, n, "node");
    }
    if let Some(ns) = namespace {
        let mut m = Labels::new();
        object_meta(&mut m, ns, "namespace");
        m.remove(&format!("{P}namespace_name"));
        l.extend(m);
    }
}

/// `host:port` (an IPv6 address in brackets).
pub fn join_host_port(host: &str, port: i64) -> String {
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

/// Role node: one target per node, at its first InternalIP (else
/// InternalDNS, ExternalIP, ExternalDNS, LegacyHostIP, Hostname) and kubelet
/// port; a node without an address has none.
pub fn node(n: &Node) -> Vec<Labels> {
    let mut l = Labels::new();
    put(&mut l, "node_provider_id", &n.spec.provider_id);
    for c in &n.status.conditions {
        put(&mut l, &format!("node_condition_{}", sanitize(&c.kind.to_lowercase())), &c.status.to_lowercase());
    }
    object_meta(&mut l, &n.metadata, "node");
    let mut by_type: BTreeMap<&str, &str> = BTreeMap::new();
    for a in &n.status.addresses {
        by_type.entry(a.kind.as_str()).or_insert(a.address.as_str());
    }
    let order = ["InternalIP", "InternalDNS", "ExternalIP", "ExternalDNS", "LegacyHostIP", "Hostname"];
    let Some(addr) = order.iter().find_map(|t| by_type.get(t)) else { return Vec::new() };
    l.insert("__address__".into(), join_host_port(addr, n.status.daemon_endpoints.kubelet_endpoint.port));
    l.insert("instance".into(), n.metadata.name.clone());
    for (t, a) in &by_type {
        l.insert(sanitize(&format!("{P}node_address_{t}")), a.to_string());
    }
    vec![l]
}

/// Role pod: one target per container and port (a container without ports:
/// one, at the pod's IP), init containers after the others, each with the
/// pod's labels; a pod without an IP (starting, or evicted) has none.
pub fn pod(p: &Pod) -> Vec<Labels> {
    let ip = &p.status.pod_ip;
    if ip.is_empty() {
        return Vec::new();
    }
    let g = p.labels();
    let own = p.spec.containers.len();
    let mut out = Vec::new();
    for (i, c) in p.spec.containers.iter().chain(&p.spec.init_containers).enumerate() {
        let init = i >= own;
        let statuses = if init { &p.status.init_container_statuses } else { &p.status.container_statuses };
        let id = statuses.iter().find(|s| s.name == c.name).map_or("", |s| s.container_id.as_str());
        let mut l = g.clone();
        put(&mut l, "pod_container_name", &c.name);
        put(&mut l, "pod_container_id", id);
        put(&mut l, "pod_container_image", &c.image);
        put(&mut l, "pod_container_init", if init { "true" } else { "false" });
        if c.ports.is_empty() {
            // An IPv6 address in brackets, with no port after it.
            let addr = if ip.contains(':') { format!("[{ip}]") } else { ip.clone() };
            l.insert("__address__".into(), addr);
            out.push(l);
            continue;
        }
        for port in &c.ports {
            let mut l = l.clone();
            l.insert("__address__".into(), join_host_port(ip, port.container_port));
            put(&mut l, "pod_container_port_number", &port.container_port.to_string());
            put(&mut l, "pod_container_port_name", &port.name);
            put(&mut l, "pod_container_port_protocol", &port.protocol);
            out.push(l);
        }
    }
    out
}

/// A service's own labels (namespace, name, labels, annotations).
pub fn service_labels(s: &Service) -> Labels {
    let mut g = Labels::new();
    put(&mut g, "namespace", &s.metadata.namespace);
    object_meta(&mut g, &s.metadata, "service");
    g
}

/// Role service: one target per port, at `<name>.<namespace>.svc:<port>`.
pub fn service(s: &Service) -> Vec<Labels> {
    let g = service_labels(s);
    let mut out = Vec::new();
    for p in &s.spec.ports {
        let mut l = g.clone();
        let host = format!("{}.{}.svc", s.metadata.name, s.metadata.namespace);
        l.insert("__address__".into(), join_host_port(&host, p.port));
        put(&mut l, "service_port_name", &p.name);
        put(&mut l, "service_port_number", &p.port.to_string());
        put(&mut l, "service_port_protocol", &p.protocol);
        put(&mut l, "service_type", &s.spec.kind);
        if s.spec.kind == "ExternalName" {
            put(&mut l, "service_external_name", &s.spec.external_name);
        } else {
            put(&mut l, "service_cluster_ip", &s.spec.cluster_ip);
        }
        if s.spec.kind == "LoadBalancer" {
            let ips: Vec<&str> =
                s.status.load_balancer.ingress.iter().map(|i| i.ip.as_str()).filter(|i| !i.is_empty()).collect();
            let v = if ips.is_empty() { s.spec.load_balancer_ip.clone() } else { ips.join(",") };
            put(&mut l, "service_loadbalancer_ip", &v);
        }
        out.push(l);
    }
    out
}

/// Whether a TLS host pattern (`*.example.com` allowed) names `host`.
fn host_matches(pattern: &str, host: &str) -> bool {
    if pattern == host {
        return true;
    }
    let (p, h): (Vec<&str>, Vec<&str>) = (pattern.split('.').collect(), host.split('.').collect());
    p.first() == Some(&"*") && p.len() == h.len() && p[1..] == h[1..]
}

/// Role ingress: one target per rule and path (no path: `/`), at the rule's host.
pub fn ingress(i: &Ingress) -> Vec<Labels> {
    let mut g = Labels::new();
    put(&mut g, "namespace", &i.metadata.namespace);
    if let Some(c) = &i.spec.ingress_class_name {
        put(&mut g, "ingress_class_name", c);
    }
    object_meta(&mut g, &i.metadata, "ingress");
    let tls_hosts: Vec<&str> = i.spec.tls.iter().flat_map(|t| t.hosts.iter().map(String::as_str)).collect();
    let mut out = Vec::new();
    for rule in &i.spec.rules {
        let https = tls_hosts.iter().any(|p| host_matches(p, &rule.host));
        let paths: Vec<String> = match &rule.http {
            None => vec!["/".into()],
            Some(h) => h.paths.iter().map(|p| if p.path.is_empty() { "/".into() } else { p.path.clone() }).collect(),
        };
        for path in paths {
            let mut l = g.clone();
            l.insert("__address__".into(), rule.host.clone());
            put(&mut l, "ingress_scheme", if https { "https" } else { "http" });
            put(&mut l, "ingress_host", &rule.host);
            put(&mut l, "ingress_path", &path);
            out.push(l);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(ip: &str) -> Pod {
        serde_json::from_value(serde_json::json!({
            "metadata": { "name": "web", "namespace": "shop", "uid": "u1" },
            "spec": { "nodeName": "n1",
                      "containers": [{ "name": "app", "image": "app:1", "ports": [
                          { "name": "http", "containerPort": 80, "protocol": "TCP" },
                          { "name": "metrics", "containerPort": 9100, "protocol": "TCP" }] },
                        { "name": "sidecar", "image": "side:1" }],
                      "initContainers": [{ "name": "init", "image": "init:1" }] },
            "status": { "podIP": ip, "containerStatuses": [{ "name": "app", "containerID": "containerd://a" }],
                        "initContainerStatuses": [{ "name": "init", "containerID": "containerd://i" }] }
        }))
        .unwrap()
    }

    fn get<'a>(l: &'a Labels, k: &str) -> &'a str {
        l.get(&format!("{P}{k}")).map_or("", String::as_str)
    }

    #[test]
    fn role_pod_gives_a_target_per_container_port_and_one_per_container_without_ports() {
        let t = pod("10.0.0.5");
        let targets = super::pod(&t);
        let addrs: Vec<&str> = targets.iter().map(|l| l["__address__"].as_str()).collect();
        assert_eq!(addrs, ["10.0.0.5:80", "10.0.0.5:9100", "10.0.0.5", "10.0.0.5"]);
        assert_eq!(get(&targets[1], "pod_container_port_name"), "metrics");
        assert_eq!(get(&targets[0], "pod_container_id"), "containerd://a");
        assert_eq!(get(&targets[2], "pod_container_name"), "sidecar");
        assert_eq!(get(&targets[2], "pod_container_id"), "", "no status: empty, as Prometheus");
        assert_eq!(
            (get(&targets[3], "pod_container_init"), get(&targets[3], "pod_container_id")),
            ("true", "containerd://i")
        );
        assert!(targets.iter().all(|l| get(l, "namespace") == "shop" && get(l, "pod_uid") == "u1"));
    }

    #[test]
    fn a_pod_without_an_ip_has_no_targets_and_an_ipv6_one_is_bracketed() {
        assert!(super::pod(&pod("")).is_empty());
        assert_eq!(super::pod(&pod("fd00::5"))[2]["__address__"], "[fd00::5]");
        assert_eq!(super::pod(&pod("fd00::5"))[0]["__address__"], "[fd00::5]:80");
    }
}
