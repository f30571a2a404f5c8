//! The Kubernetes objects the discovery roles read, as the API server
//! writes them (only the fields their labels need; everything else is
//! ignored, and a missing field reads as empty).

use std::collections::BTreeMap;

use serde::Deserialize;

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct ObjectMeta {
    pub name: String,
    pub namespace: String,
    pub uid: String,
    pub resource_version: String,
    pub labels: BTreeMap<String, String>,
    pub annotations: BTreeMap<String, String>,
    pub owner_references: Vec<OwnerReference>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct OwnerReference {
    pub kind: String,
    pub name: String,
    pub controller: Option<bool>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct Node {
    pub metadata: ObjectMeta,
    pub spec: NodeSpec,
    pub status: NodeStatus,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct NodeSpec {
    #[serde(rename = "providerID")]
    pub provider_id: String,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct NodeStatus {
    pub addresses: Vec<NodeAddress>,
    pub conditions: Vec<NodeCondition>,
    pub daemon_endpoints: DaemonEndpoints,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct NodeAddress {
    #[serde(rename = "type")]
    pub kind: String,
    pub address: String,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct NodeCondition {
    #[serde(rename = "type")]
    pub kind: String,
    pub status: String,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct DaemonEndpoints {
    pub kubelet_endpoint: Port,
}

/// The kubelet's port: `{"Port": 10250}` (the API writes this one capitalised).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct Port {
    #[serde(rename = "Port")]
    pub port: i64,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct Service {
    pub metadata: ObjectMeta,
    pub spec: ServiceSpec,
    pub status: ServiceStatus,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct ServiceSpec {
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(rename = "clusterIP")]
    pub cluster_ip: String,
    #[serde(rename = "loadBalancerIP")]
    pub load_balancer_ip: String,
    pub external_name: String,
    pub ports: Vec<ServicePort>,
    pub ip_family_policy: Option<String>,
    pub ip_families: Vec<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct ServicePort {
    pub name: String,
    pub port: i64,
    pub protocol: String,
    pub app_protocol: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct ServiceStatus {
    pub load_balancer: LoadBalancerStatus,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct LoadBalancerStatus {
    pub ingress: Vec<LoadBalancerIngress>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct LoadBalancerIngress {
    pub ip: String,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct Ingress {
    pub metadata: ObjectMeta,
    pub spec: IngressSpec,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct IngressSpec {
    pub ingress_class_name: Option<String>,
    pub rules: Vec<IngressRule>,
    pub tls: Vec<IngressTls>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct IngressRule {
    pub host: String,
    pub http: Option<HttpRule>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct HttpRule {
    pub paths: Vec<HttpPath>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct HttpPath {
    pub path: String,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct IngressTls {
    pub hosts: Vec<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct ObjectReference {
    pub kind: String,
    pub name: String,
    pub namespace: String,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct Endpoints {
    pub metadata: ObjectMeta,
    pub subsets: Vec<EndpointSubset>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct EndpointSubset {
    pub addresses: Vec<EndpointAddress>,
    pub not_ready_addresses: Vec<EndpointAddress>,
    pub ports: Vec<EndpointPort>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct EndpointAddress {
    pub ip: String,
    pub hostname: String,
    pub node_name: Option<String>,
    pub target_ref: Option<ObjectReference>,
}

/// A port of an Endpoints subset, or (its fields optional) of an EndpointSlice.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct EndpointPort {
    pub name: Option<String>,
    pub port: Option<i64>,
    pub protocol: Option<String>,
    pub app_protocol: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct EndpointSlice {
    pub metadata: ObjectMeta,
    pub address_type: String,
    pub endpoints: Vec<Endpoint>,
    pub ports: Vec<EndpointPort>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Endpoint {
    pub addresses: Vec<String>,
    pub conditions: EndpointConditions,
    pub hostname: Option<String>,
    pub target_ref: Option<ObjectReference>,
    pub node_name: Option<String>,
    pub zone: Option<String>,
    pub deprecated_topology: BTreeMap<String, String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct EndpointConditions {
    pub ready: Option<bool>,
    pub serving: Option<bool>,
    pub terminating: Option<bool>,
}
