//! The corpus's Kubernetes pod jobs as both agents run them here: each
//! `kubernetes_sd_configs` entry asks the test's API server
//! ([`super::kube_api`]) without credentials, and the pod log paths the
//! relabel rules build (`/var/log/pods`, `/var/log/containers`,
//! `/var/lib/docker/containers`) move under the job's own root, where
//! [`super::kube_cluster::write_logs`] wrote them.

use std::path::Path;
use std::sync::OnceLock;

use yaml_rust2::yaml::Hash;
use yaml_rust2::Yaml;

/// The API server's port, set once it listens.
pub static API_PORT: OnceLock<u16> = OnceLock::new();

fn key(s: &str) -> Yaml {
    Yaml::String(s.into())
}

/// Whether a scrape config reads Kubernetes pod logs (a role pod entry).
pub fn is_pod_job(scrape: &Yaml) -> bool {
    scrape["kubernetes_sd_configs"].as_vec().is_some_and(|v| v.iter().any(|e| e["role"].as_str() == Some("pod")))
}

/// The roots kubelet and Docker write logs under, as rules name them.
const ROOTS: &[&str] = &["/var/log/pods", "/var/log/containers", "/var/lib/docker/containers"];

/// `text` with each log root moved under `root`.
fn moved(text: &str, root: &Path) -> String {
    let mut out = text.to_string();
    for r in ROOTS {
        out = out.replace(r, &format!("{}{r}", root.display()));
    }
    out
}

/// The job's root: `dir/<id>`.
pub fn root(dir: &Path, id: &str) -> std::path::PathBuf {
    dir.join(id)
}

/// Rewrites scrape config `s` of job `id` (see the module documentation)
/// and gives its targets the `corpus_job` label last.
pub fn rewrite(s: &mut Hash, dir: &Path, id: &str) {
    let port = *API_PORT.get().expect("the API server listens before jobs are written");
    let mut sds = s.get(&key("kubernetes_sd_configs")).and_then(Yaml::as_vec).cloned().unwrap_or_default();
    for sd in sds.iter_mut() {
        let Yaml::Hash(h) = sd else { continue };
        for k in [
            "kubeconfig_file",
            "tls_config",
            "bearer_token",
            "bearer_token_file",
            "authorization",
            "basic_auth",
            "oauth2",
        ] {
            h.remove(&key(k));
        }
        h.insert(key("api_server"), key(&format!("http://127.0.0.1:{port}")));
    }
    s.insert(key("kubernetes_sd_configs"), Yaml::Array(sds));
    let root = root(dir, id);
    let mut rules = s.get(&key("relabel_configs")).and_then(Yaml::as_vec).cloned().unwrap_or_default();
    for rule in rules.iter_mut() {
        let Yaml::Hash(h) = rule else { continue };
        if let Some(r) = h.get(&key("replacement")).and_then(Yaml::as_str).map(str::to_string) {
            h.insert(key("replacement"), key(&moved(&r, &root)));
        }
    }
    let mut own = Hash::new();
    own.insert(key("target_label"), key("corpus_job"));
    own.insert(key("replacement"), key(id));
    rules.push(Yaml::Hash(own));
    s.insert(key("relabel_configs"), Yaml::Array(rules));
}
