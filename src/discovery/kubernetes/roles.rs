//! The targets of each discovery role and their `__meta_kubernetes_*`
//! labels, with the names and values Prometheus' Kubernetes discovery gives
//! them (`discovery/kubernetes/{node,service,ingress}.go`; endpoints in
//! [`super::endpoints`]):
//! each target is its group's labels plus its own.

use std::collections::BTreeMap;

use super::objects::ObjectMeta;
use super::objects::{Ingress, Node, Service};
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
