//! The relabel rules a `kubernetes` source with pod metadata uses when it has
//! none of its own: those of the Promtail Helm chart's `kubernetes-pods` job
//! (its `common` snippet included), less the two that set `__path__` (a file
//! here is found by its directory, not by a glob the rules build).
//!
//! They give `app` (`app.kubernetes.io/name`, else `app`, else the
//! controller's name less a pod-template hash, else the pod's name),
//! `instance`, `component`, `node_name`, `namespace`, `job`
//! (`namespace/app`), `pod` and `container`.

use crate::config::RelabelConfig;

fn rule(sources: &[&str], regex: Option<&str>, target: &str, separator: Option<&str>) -> RelabelConfig {
    RelabelConfig {
        source_labels: sources.iter().map(|s| s.to_string()).collect(),
        separator: separator.map(String::from),
        regex: regex.map(String::from),
        target_label: Some(target.into()),
        replacement: None,
        modulus: None,
        action: Some("replace".into()),
    }
}

/// The Helm chart's rules; see the module documentation.
pub fn helm_chart_rules() -> Vec<RelabelConfig> {
    let first = Some(r"^;*([^;]+)(;.*)?$");
    vec![
        rule(
            &["__meta_kubernetes_pod_controller_name"],
            Some(r"([0-9a-z-.]+?)(-[0-9a-f]{8,10})?"),
            "__tmp_controller_name",
            None,
        ),
        rule(
            &[
                "__meta_kubernetes_pod_label_app_kubernetes_io_name",
                "__meta_kubernetes_pod_label_app",
                "__tmp_controller_name",
                "__meta_kubernetes_pod_name",
            ],
            first,
            "app",
            None,
        ),
        rule(
            &["__meta_kubernetes_pod_label_app_kubernetes_io_instance", "__meta_kubernetes_pod_label_instance"],
            first,
            "instance",
            None,
        ),
        rule(
            &["__meta_kubernetes_pod_label_app_kubernetes_io_component", "__meta_kubernetes_pod_label_component"],
            first,
            "component",
            None,
        ),
        rule(&["__meta_kubernetes_pod_node_name"], None, "node_name", None),
        rule(&["__meta_kubernetes_namespace"], None, "namespace", None),
        rule(&["namespace", "app"], None, "job", Some("/")),
        rule(&["__meta_kubernetes_pod_name"], None, "pod", None),
        rule(&["__meta_kubernetes_pod_container_name"], None, "container", None),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::relabel::{strip_internal, Rules};

    #[test]
    fn a_deployment_pod_gets_the_helm_charts_labels() {
        let rules = Rules::compile(&helm_chart_rules()).unwrap();
        let mut l: crate::relabel::Labels = [
            ("__meta_kubernetes_namespace", "shop"),
            ("__meta_kubernetes_pod_name", "web-7c9f8d6b5-x2x9q"),
            ("__meta_kubernetes_pod_controller_kind", "ReplicaSet"),
            ("__meta_kubernetes_pod_controller_name", "web-7c9f8d6b5"),
            ("__meta_kubernetes_pod_node_name", "node-1"),
            ("__meta_kubernetes_pod_container_name", "nginx"),
            ("__meta_kubernetes_pod_label_app_kubernetes_io_instance", "shop-web"),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        assert!(rules.apply(&mut l));
        strip_internal(&mut l);
        let want: crate::relabel::Labels = [
            ("app", "web"),
            ("container", "nginx"),
            ("instance", "shop-web"),
            ("job", "shop/web"),
            ("namespace", "shop"),
            ("node_name", "node-1"),
            ("pod", "web-7c9f8d6b5-x2x9q"),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        assert_eq!(l, want);
    }
}
