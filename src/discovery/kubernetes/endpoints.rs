//! Roles endpoints and endpointslice: one target per address and port of
//! an Endpoints (or EndpointSlice) object, with the labels of its service
//! and, for an address that is a pod, of the pod and of its container
//! serving that port; a pod's container ports no endpoint names get a
//! target each too (as Prometheus' `endpoints.go` and `endpointslice.go`).

use std::collections::BTreeMap;

use super::objects::{EndpointPort, EndpointSlice, Endpoints, ObjectReference, Service};
use super::pods::Pod;
use super::roles::{join_host_port, object_meta, service_labels, Labels};
use crate::discovery::sanitize;

const P: &str = "__meta_kubernetes_";

fn put(l: &mut Labels, k: &str, v: &str) {
    l.insert(format!("{P}{k}"), v.to_string());
}

fn find_pod<'a>(pods: &'a [Pod], r: Option<&ObjectReference>) -> Option<&'a Pod> {
    let r = r.filter(|r| r.kind == "Pod")?;
    pods.iter().find(|p| p.metadata.namespace == r.namespace && p.metadata.name == r.name)
}

fn find_service<'a>(services: &'a [Service], ns: &str, name: &str) -> Option<&'a Service> {
    services.iter().find(|s| s.metadata.namespace == ns && s.metadata.name == name)
}

/// The pods seen behind the endpoints, and the ports their endpoints named.
#[derive(Default)]
struct Seen<'a> {
    pods: BTreeMap<(String, String), (&'a Pod, Vec<i64>)>,
}

impl<'a> Seen<'a> {
    /// `target` with the labels of `pod` and of its container serving `port`.
    fn add(&mut self, target: &mut Labels, pod: &'a Pod, port: Option<i64>) {
        let key = (pod.metadata.namespace.clone(), pod.metadata.name.clone());
        let entry = self.pods.entry(key).or_insert((pod, Vec::new()));
        target.extend(pod.labels());
        if let Some(port) = port {
            entry.1.push(port);
            let n = pod.spec.containers.len();
            for (i, c) in pod.spec.containers.iter().chain(&pod.spec.init_containers).enumerate() {
                if let Some(cp) = c.ports.iter().find(|cp| cp.container_port == port) {
                    put(target, "pod_container_name", &c.name);
                    put(target, "pod_container_image", &c.image);
                    put(target, "pod_container_port_name", &cp.name);
                    put(target, "pod_container_port_number", &port.to_string());
                    put(target, "pod_container_port_protocol", &cp.protocol);
                    put(target, "pod_container_init", if i >= n { "true" } else { "false" });
                    break;
                }
            }
        }
    }

    /// A target for each container port of the seen pods that no endpoint named.
    fn rest(self, group: &Labels, out: &mut Vec<Labels>) {
        for (pod, ports) in self.pods.into_values() {
            if pod.status.pod_ip.is_empty() {
                continue;
            }
            let n = pod.spec.containers.len();
            for (i, c) in pod.spec.containers.iter().chain(&pod.spec.init_containers).enumerate() {
                for cp in c.ports.iter().filter(|cp| !ports.contains(&cp.container_port)) {
                    let mut l = group.clone();
                    l.insert("__address__".into(), join_host_port(&pod.status.pod_ip, cp.container_port));
                    put(&mut l, "pod_container_name", &c.name);
                    put(&mut l, "pod_container_image", &c.image);
                    put(&mut l, "pod_container_port_name", &cp.name);
                    put(&mut l, "pod_container_port_number", &cp.container_port.to_string());
                    put(&mut l, "pod_container_port_protocol", &cp.protocol);
                    put(&mut l, "pod_container_init", if i >= n { "true" } else { "false" });
                    l.extend(pod.labels());
                    out.push(l);
                }
            }
        }
    }
}

/// Role endpoints.
pub fn endpoints(e: &Endpoints, pods: &[Pod], services: &[Service]) -> Vec<Labels> {
    let mut g = Labels::new();
    put(&mut g, "namespace", &e.metadata.namespace);
    if let Some(s) = find_service(services, &e.metadata.namespace, &e.metadata.name) {
        g.extend(service_labels(s));
    }
    object_meta(&mut g, &e.metadata, "endpoints");
    let mut out = Vec::new();
    let mut seen = Seen::default();
    for ss in &e.subsets {
        for port in &ss.ports {
            let ready = ss.addresses.iter().map(|a| (a, "true"));
            for (addr, ready) in ready.chain(ss.not_ready_addresses.iter().map(|a| (a, "false"))) {
                let mut t = g.clone();
                t.insert("__address__".into(), join_host_port(&addr.ip, port.port.unwrap_or(0)));
                put(&mut t, "endpoint_port_name", port.name.as_deref().unwrap_or_default());
                put(&mut t, "endpoint_port_protocol", port.protocol.as_deref().unwrap_or_default());
                put(&mut t, "endpoint_ready", ready);
                if let Some(r) = &addr.target_ref {
                    put(&mut t, "endpoint_address_target_kind", &r.kind);
                    put(&mut t, "endpoint_address_target_name", &r.name);
                }
                if let Some(n) = &addr.node_name {
                    put(&mut t, "endpoint_node_name", n);
                }
                if !addr.hostname.is_empty() {
                    put(&mut t, "endpoint_hostname", &addr.hostname);
                }
                if let Some(pod) = find_pod(pods, addr.target_ref.as_ref()) {
                    seen.add(&mut t, pod, Some(port.port.unwrap_or(0)));
                }
                out.push(t);
            }
        }
    }
    seen.rest(&g, &mut out);
    out
}

/// Role endpointslice.
pub fn endpointslice(e: &EndpointSlice, pods: &[Pod], services: &[Service]) -> Vec<Labels> {
    let mut g = Labels::new();
    put(&mut g, "namespace", &e.metadata.namespace);
    put(&mut g, "endpointslice_address_type", &e.address_type);
    object_meta(&mut g, &e.metadata, "endpointslice");
    let svc = e
        .metadata
        .labels
        .get("kubernetes.io/service-name")
        .and_then(|name| find_service(services, &e.metadata.namespace, name));
    if let Some(s) = svc {
        g.extend(service_labels(s));
        // A dual-stack service's slice of its other address family makes no targets.
        let dual = matches!(s.spec.ip_family_policy.as_deref(), Some("PreferDualStack" | "RequireDualStack"));
        if dual && s.spec.ip_families.first().is_some_and(|f| *f != e.address_type) {
            return Vec::new();
        }
    }
    let mut out = Vec::new();
    let mut seen = Seen::default();
    for ep in &e.endpoints {
        for port in &e.ports {
            for addr in &ep.addresses {
                let mut t = g.clone();
                slice_target(&mut t, addr, ep, port);
                if let Some(pod) = find_pod(pods, ep.target_ref.as_ref()) {
                    seen.add(&mut t, pod, port.port);
                }
                out.push(t);
            }
        }
    }
    seen.rest(&g, &mut out);
    out
}

fn slice_target(t: &mut Labels, addr: &str, ep: &super::objects::Endpoint, port: &EndpointPort) {
    let a = match port.port {
        Some(p) => join_host_port(addr, p),
        None => addr.to_string(),
    };
    t.insert("__address__".into(), a);
    let b = |v: bool| if v { "true" } else { "false" };
    for (k, v) in [
        ("endpointslice_port_name", port.name.clone()),
        ("endpointslice_port_protocol", port.protocol.clone()),
        ("endpointslice_port", port.port.map(|p| p.to_string())),
        ("endpointslice_port_app_protocol", port.app_protocol.clone()),
        ("endpointslice_endpoint_conditions_ready", ep.conditions.ready.map(|v| b(v).to_string())),
        ("endpointslice_endpoint_conditions_serving", ep.conditions.serving.map(|v| b(v).to_string())),
        ("endpointslice_endpoint_conditions_terminating", ep.conditions.terminating.map(|v| b(v).to_string())),
        ("endpointslice_endpoint_hostname", ep.hostname.clone()),
        ("endpointslice_endpoint_node_name", ep.node_name.clone()),
        ("endpointslice_endpoint_zone", ep.zone.clone()),
    ] {
        if let Some(v) = v {
            put(t, k, &v);
        }
    }
    if let Some(r) = &ep.target_ref {
        put(t, "endpointslice_address_target_kind", &r.kind);
        put(t, "endpointslice_address_target_name", &r.name);
    }
    for (k, v) in &ep.deprecated_topology {
        put(t, &format!("endpointslice_endpoint_topology_{}", sanitize(k)), v);
        put(t, &format!("endpointslice_endpoint_topology_present_{}", sanitize(k)), "true");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_pod_behind_an_endpoint_gives_a_target_per_container_port() {
        let pod: Pod = serde_json::from_value(json!({
            "metadata": { "name": "web-1", "namespace": "shop", "uid": "u" },
            "spec": { "containers": [{ "name": "main", "ports": [
                { "name": "http", "containerPort": 8080, "protocol": "TCP" },
                { "name": "metrics", "containerPort": 9090, "protocol": "TCP" }] }] },
            "status": { "podIP": "10.1.0.5" }
        }))
        .unwrap();
        let e: Endpoints = serde_json::from_value(json!({
            "metadata": { "name": "web", "namespace": "shop" },
            "subsets": [{ "addresses": [{ "ip": "10.1.0.5", "targetRef": { "kind": "Pod", "name": "web-1", "namespace": "shop" } }],
                          "ports": [{ "name": "http", "port": 8080, "protocol": "TCP" }] }]
        }))
        .unwrap();
        let t = endpoints(&e, &[pod], &[]);
        let addrs: Vec<&str> = t.iter().map(|l| l["__address__"].as_str()).collect();
        assert_eq!(addrs, ["10.1.0.5:8080", "10.1.0.5:9090"]);
        assert_eq!(t[1]["__meta_kubernetes_pod_container_port_name"], "metrics");
    }
}
