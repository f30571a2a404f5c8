//! `packaging/k8s`, as `kubectl apply -k` would make it: the base (the
//! DaemonSet) and its overlays rendered by `kubectl kustomize` (the kustomize
//! kubectl embeds; no cluster), every object validated offline against the
//! Kubernetes schemas and the PodMonitor CRD (`packaging/k8s/validate.py`),
//! and what an operator relies on checked in the rendered objects: a
//! namespace of the agent's own is the only one made privileged, pod logs are
//! mounted read-only, positions stay on the node, the config passes `tailship
//! check`, the probes, least RBAC, and a PodMonitor that scrapes what the
//! alert rules select.
//!
//! Without `kubectl` (or python3 with yaml, `kubernetes-validate` and
//! `jsonschema`) the checks say so and pass; `.ci/run` runs `validate.py`
//! itself, so CI fails loudly where they would skip.

use std::path::{Path, PathBuf};
use std::process::Command;

use yaml_rust2::{Yaml, YamlLoader};

fn repo(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(path)
}

/// The objects `kubectl kustomize DIR` makes, or `None` (saying why) without kubectl.
fn render(dir: &str) -> Option<Vec<Yaml>> {
    let out = match Command::new("kubectl").args(["kustomize"]).arg(repo(dir)).output() {
        Ok(out) => out,
        Err(e) => {
            eprintln!("SKIPPED: kubectl cannot run ({e}); {dir} was not rendered");
            return None;
        }
    };
    assert!(out.status.success(), "kubectl kustomize {dir}: {}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    Some(YamlLoader::load_from_str(&text).unwrap().into_iter().filter(|y| !y.is_null()).collect())
}

fn kind<'a>(objs: &'a [Yaml], kind: &str) -> Vec<&'a Yaml> {
    objs.iter().filter(|o| o["kind"].as_str() == Some(kind)).collect()
}

fn one<'a>(objs: &'a [Yaml], k: &str) -> &'a Yaml {
    let found = kind(objs, k);
    assert_eq!(found.len(), 1, "one {k} expected");
    found[0]
}

fn s(y: &Yaml) -> &str {
    y.as_str().unwrap_or_else(|| panic!("not a string: {y:?}"))
}

/// The container named `name` in a workload's pod template.
fn container<'a>(workload: &'a Yaml, name: &str) -> &'a Yaml {
    let cs = workload["spec"]["template"]["spec"]["containers"].as_vec().unwrap();
    cs.iter().find(|c| c["name"].as_str() == Some(name)).unwrap_or_else(|| panic!("no container {name}"))
}

#[test]
fn every_kustomization_renders_and_validates_against_the_kubernetes_schemas() {
    let probe = Command::new("python3").args(["-c", "import yaml, jsonschema, kubernetes_validate"]).output();
    if !probe.as_ref().is_ok_and(|o| o.status.success()) {
        eprintln!("SKIPPED: python3 lacks yaml, jsonschema or kubernetes-validate (pip install kubernetes-validate)");
        return;
    }
    if Command::new("kubectl").arg("version").arg("--client").output().is_err() {
        eprintln!("SKIPPED: kubectl is not installed");
        return;
    }
    let out = Command::new("python3").arg(repo("packaging/k8s/validate.py")).output().unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{text}");
    for dir in ["packaging/k8s/base:", "packaging/k8s/overlays/prometheus-operator:", "packaging/k8s/overlays/sidecar:"]
    {
        assert!(text.contains(dir), "{dir} not rendered: {text}");
    }
    assert!(text.contains("PodMonitor against its CRD"), "{text}");
}

/// Before: the DaemonSet labelled namespace `logging` privileged, where Loki
/// often runs, so that every pod there could run privileged.
#[test]
fn the_daemonset_gets_a_namespace_of_its_own_and_only_it_is_privileged() {
    let Some(objs) = render("packaging/k8s/base") else { return };
    let ns = one(&objs, "Namespace");
    assert_eq!(s(&ns["metadata"]["name"]), "tailship");
    assert_eq!(s(&ns["metadata"]["labels"]["pod-security.kubernetes.io/enforce"]), "privileged");
    for o in &objs {
        let k = s(&o["kind"]);
        if matches!(k, "Namespace" | "ClusterRole" | "ClusterRoleBinding") {
            continue;
        }
        assert_eq!(o["metadata"]["namespace"].as_str(), Some("tailship"), "{k} outside the agent's namespace");
    }
    let binding = one(&objs, "ClusterRoleBinding");
    assert_eq!(s(&binding["subjects"][0]["namespace"]), "tailship");
    // The agent's own logs are not shipped (a loop on errors): its pods' folder under the new namespace.
    let config = s(&one(&objs, "ConfigMap")["data"]["tailship.toml"]).to_string();
    assert!(config.contains(r#"exclude = ["/var/log/pods/tailship_tailship-*/**"]"#), "{config}");
    // No prefix fixed for one service: the agent asks whichever it is pointed at (as the .deb's config).
    assert!(!config.contains("api_prefix ="), "{config}");
}

#[test]
fn kubernetes_daemonset_reads_pod_logs_read_only_keeps_positions_on_the_node_and_its_config_checks() {
    let Some(objs) = render("packaging/k8s/base") else { return };
    let ds = one(&objs, "DaemonSet");
    let pod = &ds["spec"]["template"]["spec"];
    let c = container(ds, "tailship");
    let mount = |name: &str| {
        let m = c["volumeMounts"].as_vec().unwrap().iter().find(|m| m["name"].as_str() == Some(name)).unwrap();
        (s(&m["mountPath"]).to_string(), m["readOnly"].as_bool().unwrap_or(false))
    };
    let host_path = |name: &str| {
        let v = pod["volumes"].as_vec().unwrap().iter().find(|v| v["name"].as_str() == Some(name)).unwrap();
        v["hostPath"]["path"].as_str().map(str::to_string)
    };
    assert_eq!(mount("pod-logs"), ("/var/log/pods".into(), true));
    assert_eq!(host_path("pod-logs").as_deref(), Some("/var/log/pods"));
    assert_eq!(mount("positions"), ("/var/lib/tailship".into(), false));
    assert_eq!(host_path("positions").as_deref(), Some("/var/lib/tailship"));
    assert_eq!(s(&c["livenessProbe"]["httpGet"]["path"]), "/healthz");
    assert_eq!(s(&c["readinessProbe"]["httpGet"]["path"]), "/ready");
    assert!(
        c["resources"]["limits"]["memory"].as_str().is_some() && c["resources"]["requests"]["cpu"].as_str().is_some()
    );
    assert_eq!(s(&pod["tolerations"][0]["operator"]), "Exists");
    assert_eq!(s(&pod["priorityClassName"]), "system-node-critical");
    assert_eq!(s(&c["image"]), "tailship:0.1.0", "the tag of kustomization.yaml's images");
    // Least RBAC: get, list and watch pods, bound to the agent's service account.
    let role = one(&objs, "ClusterRole");
    let rules = role["rules"].as_vec().unwrap();
    assert_eq!(rules.len(), 1);
    assert_eq!(rules[0]["resources"].as_vec().unwrap(), &vec![Yaml::String("pods".into())]);
    let verbs: Vec<&str> = rules[0]["verbs"].as_vec().unwrap().iter().map(s).collect();
    assert_eq!(verbs, ["get", "list", "watch"]);
    assert_eq!(s(&pod["serviceAccountName"]), s(&one(&objs, "ClusterRoleBinding")["subjects"][0]["name"]));
    // The ConfigMap kustomize made from tailship.toml is the one mounted, and it checks.
    let cm = one(&objs, "ConfigMap");
    let config_volume = pod["volumes"].as_vec().unwrap().iter().find(|v| v["name"].as_str() == Some("config")).unwrap();
    assert_eq!(s(&config_volume["configMap"]["name"]), s(&cm["metadata"]["name"]));
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("tailship.toml");
    std::fs::write(&cfg, s(&cm["data"]["tailship.toml"])).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_tailship"))
        .args(["check", "--config"])
        .arg(&cfg)
        .env("LOG_URL", "http://loki.logging.svc:3100")
        .env("NODE_NAME", "node-1")
        .output()
        .unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{text}");
    assert!(text.contains("kubernetes") && text.contains("node-1"), "{text}");
}

/// The job the default alert rules select (`# Selector of the agents' targets: job="..."`).
fn rules_job() -> String {
    let rules = std::fs::read_to_string(repo("packaging/monitoring/tailship.rules.yml")).unwrap();
    let line = rules.lines().find_map(|l| l.strip_prefix("# Selector of the agents' targets: ")).unwrap();
    line.strip_prefix("job=\"").and_then(|r| r.strip_suffix('"')).unwrap().to_string()
}

/// Before: the packaged alerts selected `up{job="tailship"}` while a
/// DaemonSet scraped by annotation is in job `kubernetes-pods`, and no
/// PodMonitor was shipped: TailshipDown never fired on Kubernetes.
#[test]
fn the_podmonitor_scrapes_what_the_rules_select() {
    let Some(objs) = render("packaging/k8s/overlays/prometheus-operator") else { return };
    let pm = one(&objs, "PodMonitor");
    let ds = one(&objs, "DaemonSet");
    let pod_labels = &ds["spec"]["template"]["metadata"]["labels"];
    for (k, v) in pm["spec"]["selector"]["matchLabels"].as_hash().unwrap() {
        assert_eq!(&pod_labels[s(k)], v, "the PodMonitor selects {k:?}={v:?}; the agent's pods do not carry it");
    }
    assert_eq!(pm["metadata"]["namespace"].as_str(), ds["metadata"]["namespace"].as_str());
    let job = &pod_labels[s(&pm["spec"]["jobLabel"])];
    assert_eq!(s(job), rules_job(), "the PodMonitor's job is not the one the alert rules select");
    let ports: Vec<&str> = container(ds, "tailship")["ports"].as_vec().unwrap().iter().map(|p| s(&p["name"])).collect();
    for e in pm["spec"]["podMetricsEndpoints"].as_vec().unwrap() {
        assert!(ports.contains(&s(&e["port"])), "endpoint port {:?} is not among {ports:?}", e["port"]);
        assert_eq!(s(&e["path"]), "/metrics");
    }
    // Scraped once: the annotation scrape is dropped where the PodMonitor scrapes.
    assert!(ds["spec"]["template"]["metadata"]["annotations"]["prometheus.io/scrape"].is_badvalue());
    let Some(base) = render("packaging/k8s/base") else { return };
    let annotations = &one(&base, "DaemonSet")["spec"]["template"]["metadata"]["annotations"];
    assert_eq!(s(&annotations["prometheus.io/scrape"]), "true");
    let port = container(one(&base, "DaemonSet"), "tailship")["ports"][0]["containerPort"].as_i64().unwrap();
    assert_eq!(s(&annotations["prometheus.io/port"]), port.to_string());
}

#[test]
fn kubernetes_sidecar_probes_liveness_and_never_gates_the_apps_readiness() {
    let Some(objs) = render("packaging/k8s/overlays/sidecar") else { return };
    let kinds: Vec<&str> = objs.iter().map(|o| s(&o["kind"])).collect();
    assert_eq!(kinds, ["Deployment", "Job"]);
    let web = one(&objs, "Deployment");
    let names: Vec<&str> =
        web["spec"]["template"]["spec"]["containers"].as_vec().unwrap().iter().map(|c| s(&c["name"])).collect();
    assert_eq!(names, ["app", "tailship"]);
    let sidecar = container(web, "tailship");
    assert_eq!(s(&sidecar["livenessProbe"]["httpGet"]["path"]), "/healthz");
    assert!(sidecar["readinessProbe"].is_badvalue(), "a log outage must not make the application's pod NotReady");
    assert_eq!(s(&sidecar["image"]), "tailship:0.1.0");
    let job = one(&objs, "Job");
    let script = s(&container(job, "report")["args"][0]);
    assert!(script.contains("tailship push"), "{script}");
}
