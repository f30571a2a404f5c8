//! The containers discovery found, by the directory of their log file, with
//! the `__meta_docker_*` labels Promtail's `docker_sd_configs` gives them.
//!
//! Keyed by directory, not by file: Docker's rotation renames `<id>-json.log`
//! to `<id>-json.log.1` in the same directory, and a rotated file read after
//! a restart keeps its container's labels.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

use crate::client::docker::{Listed, Network};
use crate::config::DockerConfig;
use crate::discovery::Targets;
use crate::discovery::{join_host_port, sanitize};

/// Discovered containers; see the module documentation.
#[derive(Debug, Default)]
pub struct Containers {
    by_dir: RwLock<HashMap<PathBuf, Arc<BTreeMap<String, String>>>>,
}

impl Containers {
    /// Replaces what is known with `found`: (log path, labels) of each container.
    pub fn replace(&self, found: Vec<(PathBuf, BTreeMap<String, String>)>) {
        let map = found
            .into_iter()
            .filter_map(|(log, labels)| Some((log.parent()?.to_path_buf(), Arc::new(labels))))
            .collect();
        if let Ok(mut g) = self.by_dir.write() {
            *g = map;
        }
    }

    pub fn len(&self) -> usize {
        self.by_dir.read().map(|g| g.len()).unwrap_or(0)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Targets for Containers {
    fn meta(&self, path: &Path) -> Option<BTreeMap<String, String>> {
        let dir = path.parent()?;
        self.by_dir.read().ok()?.get(dir).map(|l| (**l).clone())
    }

    fn filename_label(&self) -> bool {
        false
    }
}

/// The `__meta_docker_network_*` labels of each network, by its id, as
/// Prometheus gives them.
pub fn network_labels(nets: &[Network]) -> HashMap<String, BTreeMap<String, String>> {
    prefixed_network_labels(nets, "__meta_docker_")
}

/// The network labels of each network, by its id, with `prefix`
/// (`__meta_docker_`, or `__meta_dockerswarm_` for swarm targets).
pub fn prefixed_network_labels(nets: &[Network], prefix: &str) -> HashMap<String, BTreeMap<String, String>> {
    nets.iter()
        .map(|n| {
            let mut m = BTreeMap::from([
                (format!("{prefix}network_id"), n.id.clone()),
                (format!("{prefix}network_name"), n.name.clone()),
                (format!("{prefix}network_scope"), n.scope.clone()),
                (format!("{prefix}network_internal"), n.internal.to_string()),
                (format!("{prefix}network_ingress"), n.ingress.to_string()),
            ]);
            for (k, v) in n.labels.iter().flatten() {
                m.insert(format!("{prefix}network_label_{}", sanitize(k)), v.clone());
            }
            (n.id.clone(), m)
        })
        .collect()
}

/// The `__meta_docker_*` labels and `__address__` of a listed container, as
/// Prometheus' docker discovery gives its first target (Promtail keeps one
/// target per container, the first): the first network by name, its first
/// TCP port or else `docker.port`; on the host network, the address is
/// `docker.host_networking_host`.
pub fn meta_labels(
    c: &Listed,
    nets: &HashMap<String, BTreeMap<String, String>>,
    cfg: &DockerConfig,
) -> BTreeMap<String, String> {
    let mut m = BTreeMap::new();
    m.insert("__meta_docker_container_id".into(), c.id.clone());
    if let Some(name) = c.names.first() {
        // As the Engine lists it (and Promtail labels it): with its leading `/`.
        m.insert("__meta_docker_container_name".into(), name.clone());
    }
    // No `__meta_docker_container_image`: Promtail 3.6's discovery gives none
    // (tests/promtail_docker.rs), so a rule reading it sets no label.
    m.insert("__meta_docker_container_network_mode".into(), c.host_config.network_mode.clone());
    for (k, v) in c.labels.iter().flatten() {
        m.insert(format!("__meta_docker_container_label_{}", sanitize(k)), v.clone());
    }
    // BTreeMap: networks in name order, the first non-null one taken.
    let network =
        c.network_settings.as_ref().and_then(|s| s.networks.as_ref()).and_then(|n| n.values().flatten().next());
    if let Some(n) = network {
        let ip = if !n.ip.is_empty() { n.ip.clone() } else { n.ipv6.clone() };
        if let Some(labels) = nets.get(&n.network_id) {
            m.extend(labels.clone());
        }
        let port = c.ports.iter().flatten().find(|p| p.kind == "tcp");
        let address = match port {
            Some(p) => {
                m.insert("__meta_docker_port_private".into(), p.private.to_string());
                if let Some(public) = p.public.filter(|p| *p > 0) {
                    m.insert("__meta_docker_port_public".into(), public.to_string());
                    m.insert("__meta_docker_port_public_ip".into(), p.ip.clone().unwrap_or_default());
                }
                join_host_port(&ip, p.private)
            }
            None if c.host_config.network_mode == "host" => join_host_port(&cfg.host_networking_host, cfg.port),
            None => join_host_port(&ip, cfg.port),
        };
        m.insert("__meta_docker_network_ip".into(), ip);
        m.insert("__address__".into(), address);
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compose_labels_are_sanitised_and_rotated_files_keep_their_container() {
        let c = Listed {
            id: "abc".into(),
            names: vec!["/web-1".into()],
            labels: Some(BTreeMap::from([("com.docker.compose.service".to_string(), "web".to_string())])),
            host_config: crate::client::docker::ListedHostConfig { network_mode: "none".into() },
            ..Default::default()
        };
        let m = meta_labels(&c, &HashMap::new(), &DockerConfig::default());
        assert_eq!(m["__meta_docker_container_label_com_docker_compose_service"], "web");
        assert_eq!(m["__meta_docker_container_name"], "/web-1");
        assert_eq!(m["__meta_docker_container_network_mode"], "none");
        let known = Containers::default();
        known.replace(vec![(PathBuf::from("/d/containers/abc/abc-json.log"), m)]);
        assert!(known.meta(Path::new("/d/containers/abc/abc-json.log.1")).is_some());
        assert!(known.meta(Path::new("/d/containers/other/other-json.log")).is_none());
        known.replace(Vec::new());
        assert!(known.is_empty());
    }

    #[test]
    fn a_container_image_gives_no_meta_label_as_in_promtail() {
        let c: Listed = serde_json::from_str(
            r#"{"Id":"abc","Names":["/web"],"Image":"nginx:1","ImageID":"sha256:1","HostConfig":{"NetworkMode":"none"}}"#,
        )
        .unwrap();
        let m = meta_labels(&c, &HashMap::new(), &DockerConfig::default());
        assert!(m.keys().all(|k| !k.contains("image")), "{m:?}");
        assert_eq!(m["__meta_docker_container_name"], "/web");
    }

    #[test]
    fn addresses_are_prometheus_ones() {
        let net = |id: &str, ip: &str| {
            let e = crate::client::docker::Endpoint { network_id: id.into(), ip: ip.into(), ipv6: String::new() };
            Some(crate::client::docker::NetworkSettings { networks: Some(BTreeMap::from([(id.to_string(), Some(e))])) })
        };
        let nets = network_labels(&[Network {
            id: "h".into(),
            name: "host".into(),
            scope: "local".into(),
            ..Default::default()
        }]);
        let cfg = DockerConfig { host_networking_host: "node-1".into(), port: 9100, ..Default::default() };
        let host = Listed {
            id: "a".into(),
            host_config: crate::client::docker::ListedHostConfig { network_mode: "host".into() },
            network_settings: net("h", ""),
            ..Default::default()
        };
        let m = meta_labels(&host, &nets, &cfg);
        assert_eq!(m["__address__"], "node-1:9100");
        assert_eq!(m["__meta_docker_network_name"], "host");
        assert_eq!(m["__meta_docker_network_internal"], "false");
        let web = Listed {
            id: "b".into(),
            network_settings: net("x", "172.17.0.2"),
            ports: Some(vec![
                crate::client::docker::Port { kind: "udp".into(), private: 53, ..Default::default() },
                crate::client::docker::Port {
                    kind: "tcp".into(),
                    private: 8080,
                    public: Some(80),
                    ip: Some("0.0.0.0".into()),
                },
            ]),
            ..Default::default()
        };
        let m = meta_labels(&web, &nets, &cfg);
        assert_eq!(m["__address__"], "172.17.0.2:8080");
        assert_eq!(m["__meta_docker_port_public"], "80");
        assert_eq!(m["__meta_docker_network_ip"], "172.17.0.2");
    }
}
