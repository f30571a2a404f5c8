//! Targets from a Docker Swarm manager (`sources[].dockerswarm`, Promtail's
//! `dockerswarm_sd_configs`), with Prometheus' `__meta_dockerswarm_*` labels.
//!
//! Each refresh asks the manager's Engine API for the role's objects
//! (`GET /tasks`, `/services` or `/nodes`, with `filters`) and what their
//! labels need (every service, node and network), and gives the targets as
//! Prometheus does:
//! - `tasks`: one target per published TCP port of a task (on its node's
//!   address) and, per network address of the task, one per TCP port of its
//!   service (or one on `port` when the service has none);
//! - `services`: per virtual IP, one target per TCP endpoint port (or one on `port`);
//! - `nodes`: one target per node, on its address and `port`.
//!
//! A task's `__meta_dockerswarm_task_container_id` names the container
//! whose json-file log the relabel rules usually point `__path__` at.

use std::collections::{BTreeMap, HashMap};
use std::net::IpAddr;

use serde::Deserialize;

use super::{join_host_port, Labels, Lister};
use crate::client::docker::{ApiError, Engine, Network};
use crate::config::{DockerConfig, SwarmConfig, SwarmRole};
use crate::discovery::docker::targets::prefixed_network_labels;
use crate::discovery::sanitize;

const P: &str = "__meta_dockerswarm_";

/// One item of `GET /services`, the part the labels read.
#[derive(Debug, Clone, Deserialize, Default)]
#[serde(default, rename_all = "PascalCase")]
pub struct Service {
    #[serde(rename = "ID")]
    pub id: String,
    pub spec: ServiceSpec,
    pub endpoint: Endpoint,
    pub update_status: Option<UpdateStatus>,
}

#[derive(Debug, Clone, Deserialize, Default)]
#[serde(default, rename_all = "PascalCase")]
pub struct ServiceSpec {
    pub name: String,
    pub labels: Option<BTreeMap<String, String>>,
    pub task_template: TaskTemplate,
    pub mode: ServiceMode,
}

#[derive(Debug, Clone, Deserialize, Default)]
#[serde(default, rename_all = "PascalCase")]
pub struct TaskTemplate {
    pub container_spec: Option<ContainerSpec>,
}

#[derive(Debug, Clone, Deserialize, Default)]
#[serde(default, rename_all = "PascalCase")]
pub struct ContainerSpec {
    pub image: String,
    pub hostname: String,
    pub labels: Option<BTreeMap<String, String>>,
}

#[derive(Debug, Clone, Deserialize, Default)]
#[serde(default, rename_all = "PascalCase")]
pub struct ServiceMode {
    pub replicated: Option<serde_json::Value>,
    pub global: Option<serde_json::Value>,
}

#[derive(Debug, Clone, Deserialize, Default)]
#[serde(default, rename_all = "PascalCase")]
pub struct Endpoint {
    pub ports: Option<Vec<PortConfig>>,
    #[serde(rename = "VirtualIPs")]
    pub virtual_ips: Option<Vec<VirtualIp>>,
}

/// A published port of a service or task.
#[derive(Debug, Clone, Deserialize, Default)]
#[serde(default, rename_all = "PascalCase")]
pub struct PortConfig {
    pub name: String,
    pub protocol: String,
    pub target_port: u32,
    pub published_port: u32,
    pub publish_mode: String,
}

#[derive(Debug, Clone, Deserialize, Default)]
#[serde(default, rename_all = "PascalCase")]
pub struct VirtualIp {
    #[serde(rename = "NetworkID")]
    pub network_id: String,
    pub addr: String,
}

#[derive(Debug, Clone, Deserialize, Default)]
#[serde(default, rename_all = "PascalCase")]
pub struct UpdateStatus {
    pub state: String,
}

/// One item of `GET /tasks`, the part the labels read.
#[derive(Debug, Clone, Deserialize, Default)]
#[serde(default, rename_all = "PascalCase")]
pub struct Task {
    #[serde(rename = "ID")]
    pub id: String,
    pub spec: TaskSpec,
    #[serde(rename = "ServiceID")]
    pub service_id: String,
    #[serde(rename = "NodeID")]
    pub node_id: String,
    pub slot: i64,
    pub status: TaskStatus,
    pub desired_state: String,
    pub networks_attachments: Option<Vec<NetworkAttachment>>,
}

#[derive(Debug, Clone, Deserialize, Default)]
#[serde(default, rename_all = "PascalCase")]
pub struct TaskSpec {
    pub container_spec: Option<ContainerSpec>,
}

#[derive(Debug, Clone, Deserialize, Default)]
#[serde(default, rename_all = "PascalCase")]
pub struct TaskStatus {
    pub state: String,
    pub container_status: Option<ContainerStatus>,
    pub port_status: PortStatus,
}

#[derive(Debug, Clone, Deserialize, Default)]
#[serde(default, rename_all = "PascalCase")]
pub struct ContainerStatus {
    #[serde(rename = "ContainerID")]
    pub container_id: String,
}

#[derive(Debug, Clone, Deserialize, Default)]
#[serde(default, rename_all = "PascalCase")]
pub struct PortStatus {
    pub ports: Option<Vec<PortConfig>>,
}

#[derive(Debug, Clone, Deserialize, Default)]
#[serde(default, rename_all = "PascalCase")]
pub struct NetworkAttachment {
    pub network: AttachedNetwork,
    pub addresses: Option<Vec<String>>,
}

#[derive(Debug, Clone, Deserialize, Default)]
#[serde(default, rename_all = "PascalCase")]
pub struct AttachedNetwork {
    #[serde(rename = "ID")]
    pub id: String,
}

/// One item of `GET /nodes`, the part the labels read.
#[derive(Debug, Clone, Deserialize, Default)]
#[serde(default, rename_all = "PascalCase")]
pub struct Node {
    #[serde(rename = "ID")]
    pub id: String,
    pub spec: NodeSpec,
    pub description: NodeDescription,
    pub status: NodeStatus,
    pub manager_status: Option<ManagerStatus>,
}

#[derive(Debug, Clone, Deserialize, Default)]
#[serde(default, rename_all = "PascalCase")]
pub struct NodeSpec {
    pub role: String,
    pub availability: String,
    pub labels: Option<BTreeMap<String, String>>,
}

#[derive(Debug, Clone, Deserialize, Default)]
#[serde(default, rename_all = "PascalCase")]
pub struct NodeDescription {
    pub hostname: String,
    pub platform: Platform,
    pub engine: EngineDescription,
}

#[derive(Debug, Clone, Deserialize, Default)]
#[serde(default, rename_all = "PascalCase")]
pub struct Platform {
    pub architecture: String,
    #[serde(rename = "OS")]
    pub os: String,
}

#[derive(Debug, Clone, Deserialize, Default)]
#[serde(default, rename_all = "PascalCase")]
pub struct EngineDescription {
    pub engine_version: String,
}

#[derive(Debug, Clone, Deserialize, Default)]
#[serde(default, rename_all = "PascalCase")]
pub struct NodeStatus {
    pub state: String,
    pub addr: String,
}

#[derive(Debug, Clone, Deserialize, Default)]
#[serde(default, rename_all = "PascalCase")]
pub struct ManagerStatus {
    pub leader: bool,
    pub reachability: String,
    pub addr: String,
}

/// A swarm object the Engine answered with that the labels cannot use.
#[derive(Debug, thiserror::Error)]
pub enum SwarmError {
    #[error(transparent)]
    Api(#[from] ApiError),
    #[error("{what} has the address `{addr}`, which is not an IP address with a prefix length")]
    Address { what: String, addr: String },
}

super::lister::listed_kind!(SwarmConfig = |c: &SwarmConfig| Swarm::new(&c.0), every |c: &SwarmConfig| c.refresh_interval.get());

/// The Docker Swarm manager of a `dockerswarm` section.
pub struct Swarm {
    engine: Engine,
    role: SwarmRole,
    port: u16,
}

impl Swarm {
    pub fn new(cfg: &DockerConfig) -> Result<Self, ApiError> {
        let role = cfg.role.ok_or_else(|| ApiError::Setting("role: is required".into()))?;
        Ok(Self { engine: Engine::new(cfg)?, role, port: cfg.port })
    }

    async fn refresh(&self) -> Result<Vec<Labels>, SwarmError> {
        let e = &self.engine;
        match self.role {
            SwarmRole::Nodes => {
                Ok(e.swarm::<Vec<Node>>("/nodes", true).await?.iter().map(|n| node_target(n, self.port)).collect())
            }
            SwarmRole::Services => {
                let services: Vec<Service> = e.swarm("/services", true).await?;
                let nets = networks(e).await?;
                let mut out = Vec::new();
                for s in &services {
                    service_targets(s, &nets, self.port, &mut out)?;
                }
                Ok(out)
            }
            SwarmRole::Tasks => {
                let tasks: Vec<Task> = e.swarm("/tasks", true).await?;
                let services: Vec<Service> = e.swarm("/services", false).await?;
                let nodes: Vec<Node> = e.swarm("/nodes", false).await?;
                let nets = networks(e).await?;
                let services: HashMap<&str, &Service> = services.iter().map(|s| (s.id.as_str(), s)).collect();
                let nodes: HashMap<String, Labels> = nodes.iter().map(|n| (n.id.clone(), node_labels(n))).collect();
                let mut out = Vec::new();
                for t in &tasks {
                    let service = services.get(t.service_id.as_str()).copied();
                    task_targets(t, service, nodes.get(&t.node_id), &nets, self.port, &mut out)?;
                }
                Ok(out)
            }
        }
    }
}

impl Lister for Swarm {
    fn describe(&self) -> String {
        format!("Docker Swarm at {}", self.engine.describe())
    }

    async fn list(&mut self) -> Result<Vec<Labels>, String> {
        self.refresh().await.map_err(|e| e.to_string())
    }
}

async fn networks(e: &Engine) -> Result<HashMap<String, Labels>, ApiError> {
    let nets: Vec<Network> = e.networks().await?;
    Ok(prefixed_network_labels(&nets, P))
}

fn put(m: &mut Labels, k: &str, v: impl Into<String>) {
    m.insert(format!("{P}{k}"), v.into());
}

fn put_all(m: &mut Labels, prefix: &str, labels: &Option<BTreeMap<String, String>>) {
    for (k, v) in labels.iter().flatten() {
        m.insert(format!("{P}{prefix}{}", sanitize(k)), v.clone());
    }
}

/// The IP of `addr` (`10.0.0.7/24`), as Go's `net.ParseCIDR` reads it.
fn cidr_ip(what: &str, addr: &str) -> Result<String, SwarmError> {
    let bad = || SwarmError::Address { what: what.to_string(), addr: addr.to_string() };
    let (ip, len) = addr.split_once('/').ok_or_else(bad)?;
    let ip: IpAddr = ip.parse().map_err(|_| bad())?;
    len.parse::<u8>().map_err(|_| bad())?;
    Ok(ip.to_string())
}

fn service_mode(s: &Service) -> &'static str {
    if s.spec.mode.global.is_some() {
        "global"
    } else if s.spec.mode.replicated.is_some() {
        "replicated"
    } else {
        ""
    }
}

/// The labels every target of a service carries in both roles.
fn service_labels(s: &Service) -> Labels {
    let mut m = Labels::new();
    put(&mut m, "service_id", &s.id);
    put(&mut m, "service_name", &s.spec.name);
    put(&mut m, "service_mode", service_mode(s));
    put_all(&mut m, "service_label_", &s.spec.labels);
    m
}

fn tcp(ports: &Option<Vec<PortConfig>>) -> impl Iterator<Item = &PortConfig> {
    ports.iter().flatten().filter(|p| p.protocol == "tcp")
}

/// A service's targets: per virtual IP, one per TCP endpoint port, or one on `port`.
pub fn service_targets(
    s: &Service,
    nets: &HashMap<String, Labels>,
    port: u16,
    out: &mut Vec<Labels>,
) -> Result<(), SwarmError> {
    let mut common = service_labels(s);
    if let Some(c) = &s.spec.task_template.container_spec {
        put(&mut common, "service_task_container_hostname", &c.hostname);
        put(&mut common, "service_task_container_image", &c.image);
    }
    if let Some(u) = &s.update_status {
        put(&mut common, "service_updating_status", &u.state);
    }
    for vip in s.endpoint.virtual_ips.iter().flatten() {
        let ip = cidr_ip(&format!("service {}", s.spec.name), &vip.addr)?;
        let mut base = common.clone();
        base.extend(nets.get(&vip.network_id).cloned().unwrap_or_default());
        let mut added = false;
        for p in tcp(&s.endpoint.ports) {
            let mut t = base.clone();
            put(&mut t, "service_endpoint_port_name", &p.name);
            put(&mut t, "service_endpoint_port_publish_mode", &p.publish_mode);
            t.insert("__address__".into(), join_host_port(&ip, p.published_port));
            out.push(t);
            added = true;
        }
        if !added {
            base.insert("__address__".into(), join_host_port(&ip, port));
            out.push(base);
        }
    }
    Ok(())
}

/// A task's targets: one per published TCP port (on its node's address),
/// and per network address one per TCP port of its service, or one on `port`.
pub fn task_targets(
    t: &Task,
    service: Option<&Service>,
    node: Option<&Labels>,
    nets: &HashMap<String, Labels>,
    port: u16,
    out: &mut Vec<Labels>,
) -> Result<(), SwarmError> {
    let mut common = Labels::new();
    put(&mut common, "task_id", &t.id);
    put(&mut common, "task_desired_state", &t.desired_state);
    put(&mut common, "task_state", &t.status.state);
    put(&mut common, "task_slot", t.slot.to_string());
    if let Some(c) = &t.status.container_status {
        put(&mut common, "task_container_id", &c.container_id);
    }
    if let Some(c) = &t.spec.container_spec {
        put_all(&mut common, "container_label_", &c.labels);
    }
    if let Some(s) = service {
        common.extend(service_labels(s));
    }
    if let Some(n) = node {
        common.extend(n.clone());
    }
    let node_addr = common.get(&format!("{P}node_address")).cloned().unwrap_or_default();
    for p in tcp(&t.status.port_status.ports) {
        let mut l = common.clone();
        put(&mut l, "task_port_publish_mode", &p.publish_mode);
        l.insert("__address__".into(), join_host_port(&node_addr, p.published_port));
        out.push(l);
    }
    let service_ports = service.map(|s| &s.endpoint.ports);
    for a in t.networks_attachments.iter().flatten() {
        for addr in a.addresses.iter().flatten() {
            let ip = cidr_ip(&format!("task {}", t.id), addr)?;
            let mut base = common.clone();
            base.extend(nets.get(&a.network.id).cloned().unwrap_or_default());
            let mut added = false;
            for p in service_ports.into_iter().flat_map(tcp) {
                let mut l = base.clone();
                put(&mut l, "task_port_publish_mode", &p.publish_mode);
                l.insert("__address__".into(), join_host_port(&ip, p.published_port));
                out.push(l);
                added = true;
            }
            if !added {
                base.insert("__address__".into(), join_host_port(&ip, port));
                out.push(base);
            }
        }
    }
    Ok(())
}

/// The labels of a node a task runs on (the `tasks` role's).
fn node_labels(n: &Node) -> Labels {
    let mut m = Labels::new();
    put(&mut m, "node_id", &n.id);
    put(&mut m, "node_role", &n.spec.role);
    put(&mut m, "node_address", &n.status.addr);
    put(&mut m, "node_availability", &n.spec.availability);
    put(&mut m, "node_hostname", &n.description.hostname);
    put(&mut m, "node_platform_architecture", &n.description.platform.architecture);
    put(&mut m, "node_platform_os", &n.description.platform.os);
    put(&mut m, "node_status", &n.status.state);
    put_all(&mut m, "node_label_", &n.spec.labels);
    m
}

/// A node's target (the `nodes` role's), on its address and `port`.
pub fn node_target(n: &Node, port: u16) -> Labels {
    let mut m = node_labels(n);
    put(&mut m, "node_engine_version", &n.description.engine.engine_version);
    if let Some(ms) = &n.manager_status {
        put(&mut m, "node_manager_leader", ms.leader.to_string());
        put(&mut m, "node_manager_reachability", &ms.reachability);
        put(&mut m, "node_manager_address", &ms.addr);
    }
    m.insert("__address__".into(), join_host_port(&n.status.addr, port));
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    fn service() -> Service {
        serde_json::from_value(serde_json::json!({
            "ID": "svc1",
            "Spec": { "Name": "mon_web", "Labels": { "com.docker.stack.namespace": "mon" },
                      "TaskTemplate": { "ContainerSpec": { "Image": "web:1", "Hostname": "h" } },
                      "Mode": { "Replicated": { "Replicas": 2 } } },
            "Endpoint": { "Ports": [ { "Name": "http", "Protocol": "tcp", "TargetPort": 80, "PublishedPort": 8080, "PublishMode": "ingress" },
                                     { "Protocol": "udp", "TargetPort": 53, "PublishedPort": 53, "PublishMode": "ingress" } ],
                          "VirtualIPs": [ { "NetworkID": "net1", "Addr": "10.0.0.7/24" } ] }
        }))
        .unwrap()
    }

    #[test]
    fn a_service_gets_a_target_per_vip_and_tcp_port() {
        let nets =
            HashMap::from([("net1".to_string(), Labels::from([(format!("{P}network_name"), "ingress".into())]))]);
        let mut out = Vec::new();
        service_targets(&service(), &nets, 80, &mut out).unwrap();
        assert_eq!(out.len(), 1, "{out:?}");
        let t = &out[0];
        assert_eq!(t["__address__"], "10.0.0.7:8080");
        assert_eq!(t["__meta_dockerswarm_service_mode"], "replicated");
        assert_eq!(t["__meta_dockerswarm_service_label_com_docker_stack_namespace"], "mon");
        assert_eq!(t["__meta_dockerswarm_service_endpoint_port_name"], "http");
        assert_eq!(t["__meta_dockerswarm_service_task_container_image"], "web:1");
        assert_eq!(t["__meta_dockerswarm_network_name"], "ingress");
        let mut bad = service();
        bad.endpoint.virtual_ips = Some(vec![VirtualIp { network_id: "x".into(), addr: "10.0.0.7".into() }]);
        assert!(service_targets(&bad, &nets, 80, &mut out).is_err());
    }

    #[test]
    fn a_task_without_service_ports_gets_one_target_per_address_on_port() {
        let t: Task = serde_json::from_value(serde_json::json!({
            "ID": "task1", "ServiceID": "svc2", "NodeID": "node1", "Slot": 3, "DesiredState": "running",
            "Status": { "State": "running", "ContainerStatus": { "ContainerID": "abc" }, "PortStatus": {} },
            "NetworksAttachments": [ { "Network": { "ID": "net1" }, "Addresses": ["10.0.1.5/24", "fd00::5/64"] } ]
        }))
        .unwrap();
        let node = Labels::from([(format!("{P}node_address"), "192.168.1.2".into())]);
        let mut out = Vec::new();
        task_targets(&t, None, Some(&node), &HashMap::new(), 9000, &mut out).unwrap();
        let addrs: Vec<&str> = out.iter().map(|l| l["__address__"].as_str()).collect();
        assert_eq!(addrs, ["10.0.1.5:9000", "[fd00::5]:9000"]);
        assert_eq!(out[0]["__meta_dockerswarm_task_container_id"], "abc");
        assert_eq!(out[0]["__meta_dockerswarm_task_slot"], "3");
        assert_eq!(out[0]["__meta_dockerswarm_node_address"], "192.168.1.2");
    }
}
