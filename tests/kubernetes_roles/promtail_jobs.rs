//! Promtail jobs of every role converted, checked and shipped: what their
//! `__path__` and `__host__` name, and nothing else.

use super::*;

#[test]
fn promtail_jobs_of_roles_node_and_service_convert_check_and_ship() {
    let pki = pki();
    let cluster: Shared = Arc::default();
    {
        let mut c = cluster.lock().unwrap();
        c.version = 5;
        c.objects.insert("nodes".into(), vec![node("node-a", "10.0.0.1")]);
        c.objects
            .insert("services".into(), vec![service("shop", "web", "ClusterIP"), service("other", "db", "ClusterIP")]);
    }
    let port = api_server(Some(pki.server.clone()), cluster.clone(), None);
    let s = Scenario::loki();
    let (r, d) = (&s.r, s.root());
    let (ca, cert, key) = write_pki(d, &pki);
    log(&d.join("nodes/node-a/kubelet.log"), "kubelet of node-a");
    log(&d.join("svc/shop/web/80.log"), "web on 80");
    log(&d.join("svc/other/db/80.log"), "db on 80");
    let sd = |role: &str, extra: &str| {
        format!(
            "      - role: {role}\n        api_server: https://127.0.0.1:{port}\n        tls_config:\n          ca_file: {ca}\n          \
             cert_file: {cert}\n          key_file: {key}\n          server_name: kube.test\n{extra}",
            ca = ca.display(),
            cert = cert.display(),
            key = key.display(),
        )
    };
    let yaml = scenario::promtail_yaml_at(
        d,
        &r.base,
        "promtail-positions.yaml",
        &format!(
            r#"  - job_name: node-logs
    kubernetes_sd_configs:
{node_sd}    relabel_configs:
      - source_labels: [__meta_kubernetes_node_name]
        target_label: __path__
        replacement: {d}/nodes/$1/*.log
      - source_labels: [__meta_kubernetes_node_name]
        target_label: node
  - job_name: service-logs
    kubernetes_sd_configs:
{svc_sd}    relabel_configs:
      - source_labels: [__meta_kubernetes_namespace, __meta_kubernetes_service_name, __meta_kubernetes_service_port_number]
        separator: /
        target_label: __path__
        replacement: {d}/svc/$1.log
      - source_labels: [__meta_kubernetes_service_port_name]
        target_label: port
"#,
            d = d.display(),
            node_sd =
                sd("node", "        selectors:\n          - role: node\n            label: kubernetes.io/os=linux\n"),
            svc_sd = sd("service", "        namespaces:\n          names: [shop]\n")
        ),
    );
    let (toml, stderr) = convert_promtail(d, &yaml);
    assert!(!stderr.contains("kubernetes_sd_configs"), "everything translated: {stderr}");
    let cfg = write_file(d, "tailship.toml", &toml);
    let check = Command::new(bin()).args(["check", "--config"]).arg(&cfg).output().unwrap();
    assert!(check.status.success(), "{}\n{toml}", String::from_utf8_lossy(&check.stderr));
    let agent = Agent::start(&cfg);
    let all = || agent::query_all_at(r, "/loki/api/v1", r#"{filename=~".+"}"#, None);
    let find = |text: &str| all().into_iter().find(|e| e.line == text);
    assert!(
        wait_for(Duration::from_secs(30), || find("kubelet of node-a").is_some() && find("web on 80").is_some()),
        "{}\n{toml}",
        agent.stderr_text()
    );
    assert_eq!(labels(&find("kubelet of node-a").unwrap()), map(&[("instance", "node-a"), ("node", "node-a")]));
    assert_eq!(labels(&find("web on 80").unwrap()), map(&[("port", "http")]));
    assert!(find("db on 80").is_none(), "namespace other is not watched");
}

fn pod_on(ns: &str, name: &str, uid: &str, node: &str, annotations: Value) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": { "name": name, "namespace": ns, "uid": uid, "resourceVersion": "1",
                      "labels": { "app": name }, "annotations": annotations },
        "spec": { "nodeName": node, "containers": [{ "name": "main", "image": "registry.local/app:1",
                  "ports": [{ "name": "http", "containerPort": 8080, "protocol": "TCP" },
                            { "name": "metrics", "containerPort": 9100, "protocol": "TCP" }] }] },
        "status": { "phase": "Running", "podIP": "10.1.2.3", "hostIP": "192.168.0.10",
                    "conditions": [{ "type": "Ready", "status": "True" }],
                    "containerStatuses": [{ "name": "main", "containerID": format!("containerd://{uid}") }] }
    })
}

/// A converted Promtail pod job reads what its relabelled `__path__` names,
/// as Promtail does (issue #52: tailship read every pod's log under its root
/// whatever `__path__` said): the node from `$HOSTNAME`, its pods and
/// namespaces asked of the API server, a static pod whose folder is named by
/// its config hash not found by a uid path, another node's pod left out by
/// `__host__`, a job without `__path__` shipping nothing, a container with
/// two ports read once.
#[test]
fn a_promtail_pod_job_reads_exactly_the_files_its_path_names_on_the_node_hostname_names() {
    let cluster: Shared = Arc::default();
    let hash = "9f8e7d6c5b4a39281706f5e4d3c2b1a0";
    cluster.lock().unwrap().objects.insert(
        "pods".into(),
        vec![
            pod_on("shop", "web", "uid-web", "node-1", json!({})),
            pod_on("shop", "far", "uid-far", "node-2", json!({})),
            pod_on("shop", "static-node-1", "uid-static", "node-1", json!({ "kubernetes.io/config.hash": hash })),
            pod_on("other", "db", "uid-db", "node-1", json!({})),
        ],
    );
    let port = api_server(None, cluster.clone(), None);
    let s = Scenario::loki();
    let (r, d) = (&s.r, s.root());
    for (folder, line) in [
        ("shop_web_uid-web", "web line"),
        ("shop_far_uid-far", "far line"),
        (&format!("shop_static-node-1_{hash}") as &str, "static line"),
        ("other_db_uid-db", "db line"),
    ] {
        log(&d.join(format!("pods/{folder}/main/0.log")), &format!("2024-05-01T10:00:00.5Z stdout F {line}"));
    }
    let yaml = format!(
        r#"server:
  http_listen_port: {mport}
clients:
  - url: {url}/loki/api/v1/push
scrape_configs:
  - job_name: kubernetes-pods
    pipeline_stages:
      - cri: {{}}
    kubernetes_sd_configs:
      - role: pod
        api_server: http://127.0.0.1:{port}
        namespaces:
          names: [shop]
    relabel_configs:
      - source_labels: [__meta_kubernetes_pod_node_name]
        target_label: __host__
      - source_labels: [__meta_kubernetes_pod_name]
        target_label: pod
      - source_labels: [__meta_kubernetes_pod_uid, __meta_kubernetes_pod_container_name]
        separator: /
        target_label: __path__
        replacement: {d}/pods/*$1/*.log
  - job_name: no-path
    kubernetes_sd_configs:
      - role: pod
        api_server: http://127.0.0.1:{port}
    relabel_configs:
      - source_labels: [__meta_kubernetes_pod_name]
        target_label: pod
"#,
        mport = free_port(),
        url = r.base,
        d = d.display(),
    );
    let (toml, _) = convert_promtail(d, &yaml);
    let cfg = write_file(d, "tailship.toml", &toml.replace("/var/lib/tailship", &d.display().to_string()));
    let check = Command::new(bin()).args(["check", "--config"]).arg(&cfg).env("HOSTNAME", "node-1").output().unwrap();
    let said = String::from_utf8_lossy(&check.stdout).into_owned();
    assert!(check.status.success(), "{}\n{toml}", String::from_utf8_lossy(&check.stderr));
    assert!(said.contains("# source kubernetes-pods: the pods of node `node-1` (from $HOSTNAME)"), "{said}");
    let agent = Agent::start_with(&cfg, &[("HOSTNAME", "node-1")]);
    let all = || agent::query_all_at(r, "/loki/api/v1", r#"{filename=~".+"}"#, None);
    assert!(
        wait_for(Duration::from_secs(30), || all().iter().any(|e| e.line == "web line")),
        "{}\n{toml}",
        agent.stderr_text()
    );
    // The other pods' files are no target's: give them the time the web pod's took, twice.
    let requests = || cluster.lock().unwrap().requests.iter().map(|(l, _)| l.clone()).collect::<Vec<_>>();
    assert!(wait_for(Duration::from_secs(10), || requests().iter().filter(|l| l.contains("watch=1")).count() >= 2));
    let seen = all();
    let lines: Vec<&str> = seen.iter().map(|e| e.line.as_str()).collect();
    assert_eq!(lines, ["web line"], "once, and nothing of static, far, db or the job without __path__");
    assert_eq!(labels(&seen[0]), map(&[("pod", "web"), ("stream", "stdout")]));
    let asked = requests();
    assert!(
        asked
            .iter()
            .any(|l| l.starts_with("GET /api/v1/namespaces/shop/pods?") && l.contains("spec.nodeName%3Dnode-1")),
        "the job's namespace and node asked of the API server: {asked:#?}"
    );
    assert!(
        !asked.iter().any(|l| l.starts_with("GET /api/v1/namespaces/other/")),
        "no namespace the job does not name: {asked:#?}"
    );
}

/// A Promtail static target whose `__host__` names another host is read by
/// none but that host, as in Promtail (issue #52: tailship read it, so a
/// config shared by several machines shipped every machine's files from
/// each); the one of this host ships, without a `__host__` label.
#[test]
fn a_static_target_of_another_host_is_not_read_and_no_host_label_ships() {
    let s = Scenario::loki();
    let (r, d) = (&s.r, s.root());
    log(&d.join("mine/app.log"), "mine line");
    log(&d.join("theirs/app.log"), "theirs line");
    let yaml = format!(
        r#"server:
  http_listen_port: {mport}
clients:
  - url: {url}/loki/api/v1/push
scrape_configs:
  - job_name: mine
    static_configs:
      - labels: {{ job: mine, __host__: node-1, __path__: {d}/mine/*.log }}
  - job_name: theirs
    static_configs:
      - labels: {{ job: theirs, __host__: node-2, __path__: {d}/theirs/*.log }}
"#,
        mport = free_port(),
        url = r.base,
        d = d.display(),
    );
    let toml = convert_promtail(d, &yaml).0.replace("/var/lib/tailship", &d.display().to_string());
    let cfg = write_file(d, "tailship.toml", &toml);
    let check = Command::new(bin()).args(["check", "--config"]).arg(&cfg).env("HOSTNAME", "node-1").output().unwrap();
    let warned = String::from_utf8_lossy(&check.stderr).into_owned();
    assert!(check.status.success(), "{warned}");
    assert!(warned.contains("sources[1].labels.__host__") && warned.contains("`node-2` is not this host"), "{warned}");
    let agent = Agent::start_with(&cfg, &[("HOSTNAME", "node-1")]);
    let all = || agent::query_all_at(r, "/loki/api/v1", r#"{job=~".+"}"#, None);
    assert!(wait_for(Duration::from_secs(30), || !all().is_empty()), "{}", agent.stderr_text());
    // The other source was left out at start: nothing of it can come later.
    let seen = all();
    assert_eq!(seen.iter().map(|e| e.line.as_str()).collect::<Vec<_>>(), ["mine line"]);
    assert_eq!(labels(&seen[0]), map(&[("job", "mine")]), "no __host__ label");
    assert!(agent.stderr_text().contains("`node-2` is not this host"), "{}", agent.stderr_text());
}
