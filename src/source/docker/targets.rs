//! The containers discovery found, by the directory of their log file, with
//! the `__meta_docker_*` labels Promtail's `docker_sd_configs` gives them.
//!
//! Keyed by directory, not by file: Docker's rotation renames `<id>-json.log`
//! to `<id>-json.log.1` in the same directory, and a rotated file read after
//! a restart keeps its container's labels.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

use super::api::Listed;
use crate::source::target::Targets;

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

/// Prometheus' label name sanitising: every character other than
/// `[a-zA-Z0-9_]` becomes `_`.
pub fn sanitize(name: &str) -> String {
    name.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' { c } else { '_' }).collect()
}

/// The `__meta_docker_*` labels of a listed container.
pub fn meta_labels(c: &Listed) -> BTreeMap<String, String> {
    let mut m = BTreeMap::new();
    m.insert("__meta_docker_container_id".into(), c.id.clone());
    if let Some(name) = c.names.first() {
        // As the Engine lists it (and Promtail labels it): with its leading `/`.
        m.insert("__meta_docker_container_name".into(), name.clone());
    }
    m.insert("__meta_docker_container_image".into(), c.image.clone());
    m.insert("__meta_docker_container_network_mode".into(), c.host_config.network_mode.clone());
    for (k, v) in c.labels.iter().flatten() {
        m.insert(format!("__meta_docker_container_label_{}", sanitize(k)), v.clone());
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
            image: "nginx:1".into(),
            labels: Some(BTreeMap::from([("com.docker.compose.service".to_string(), "web".to_string())])),
            host_config: super::super::api::ListedHostConfig { network_mode: "none".into() },
        };
        let m = meta_labels(&c);
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
}
