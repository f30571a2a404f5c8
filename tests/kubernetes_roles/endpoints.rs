//! Roles endpoints and endpointslice: the labels of their service, pod and
//! container, and no target before all three are listed.

use super::*;

#[test]
fn roles_endpoints_and_endpointslice_give_the_labels_of_their_service_pod_and_container() {
    let cluster: Shared = Arc::default();
    {
        let mut c = cluster.lock().unwrap();
        c.version = 3;
        c.objects.insert("services".into(), vec![service("shop", "web", "ClusterIP")]);
        c.objects.insert(
            "pods".into(),
            vec![json!({
                "metadata": { "name": "web-1", "namespace": "shop", "uid": "uid-web-1", "labels": { "app": "web" },
                              "ownerReferences": [{ "kind": "ReplicaSet", "name": "web-7c", "controller": true }] },
                "spec": { "nodeName": "node-1", "containers": [{ "name": "main", "image": "img:1", "ports": [
                    { "name": "http", "containerPort": 8080, "protocol": "TCP" },
                    { "name": "metrics", "containerPort": 9090, "protocol": "TCP" }] }] },
                "status": { "phase": "Running", "podIP": "10.1.0.5", "hostIP": "192.168.0.10",
                            "conditions": [{ "type": "Ready", "status": "True" }] }
            })],
        );
        let pod_ref = json!({ "kind": "Pod", "name": "web-1", "namespace": "shop" });
        c.objects.insert(
            "endpoints".into(),
            vec![json!({
                "metadata": { "name": "web", "namespace": "shop", "uid": "uid-ep" },
                "subsets": [{ "addresses": [{ "ip": "10.1.0.5", "nodeName": "node-1", "targetRef": pod_ref }],
                              "ports": [{ "name": "http", "port": 8080, "protocol": "TCP" }] }]
            })],
        );
        c.objects.insert(
            "endpointslices".into(),
            vec![json!({
                "metadata": { "name": "web-abc", "namespace": "shop", "uid": "uid-eps",
                              "labels": { "kubernetes.io/service-name": "web" } },
                "addressType": "IPv4",
                "endpoints": [{ "addresses": ["10.1.0.5"], "conditions": { "ready": true }, "targetRef": pod_ref,
                                "nodeName": "node-1", "zone": "z1" }],
                "ports": [{ "name": "http", "port": 8080, "protocol": "TCP" }]
            })],
        );
    }
    let port = api_server(None, cluster.clone(), None);
    let r = Receiver::start(&["--max-query-limit", "1000000"]);
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for f in ["ep/8080.log", "ep/9090.log", "eps/8080.log", "eps/9090.log"] {
        log(&d.join(f), f);
    }
    // The receiver takes 15 labels a stream: pod, service and container labels are joined.
    let join = |names: &[&str], to: &str| {
        let names: Vec<String> = names.iter().map(|n| format!("\"__meta_kubernetes_{n}\"")).collect();
        format!("  {{ source_labels = [{}], target_label = \"{to}\" }},\n", names.join(", "))
    };
    let pod_labels = [
        "namespace",
        "pod_name",
        "pod_uid",
        "pod_ip",
        "pod_host_ip",
        "pod_node_name",
        "pod_phase",
        "pod_ready",
        "pod_controller_kind",
        "pod_controller_name",
        "pod_label_app",
        "pod_labelpresent_app",
    ];
    let joins = join(&pod_labels, "pod")
        + &join(&["service_name", "service_label_app", "service_labelpresent_app"], "svc")
        + &join(
            &[
                "pod_container_name",
                "pod_container_image",
                "pod_container_port_name",
                "pod_container_port_number",
                "pod_container_port_protocol",
                "pod_container_init",
            ],
            "ctr",
        );
    let source = |role: &str, sub: &str, own: &str| {
        format!(
            r#"[[sources]]
type = "file"
name = "{role}"
host_label = false
scan_interval = "200ms"
kubernetes = {{ role = "{role}", api_server = "http://127.0.0.1:{port}" }}
relabel = [
  {{ source_labels = ["__meta_kubernetes_pod_container_port_number"], target_label = "__path__", replacement = "{d}/{sub}/$1.log" }},
{joins}{own}
  {{ source_labels = ["__address__"], target_label = "address" }},
]
"#,
            d = d.display(),
        )
    };
    let sources = source(
        "endpoints",
        "ep",
        r#"  { action = "labelmap", regex = '__meta_kubernetes_(endpoints?_.+)' },"#,
    ) + &source(
        "endpointslice",
        "eps",
        &(join(&["endpointslice_port_name", "endpointslice_port_protocol", "endpointslice_port"], "port")
            + &join(
                &[
                    "endpointslice_label_kubernetes_io_service_name",
                    "endpointslice_labelpresent_kubernetes_io_service_name",
                ],
                "sl",
            )
            + r#"  { action = "labelmap", regex = '__meta_kubernetes_(endpointslice_(?:name|address_type|endpoint_.+|address_target_.+))' },"#),
    );
    let cfg = config(d, &r.base, &sources);
    let agent = Agent::start(&cfg);
    let all = || query_all(&r, r#"{address=~".+"}"#, None);
    assert!(
        wait_for(Duration::from_secs(20), || all().len() >= 4),
        "{:?}\n{}",
        all().iter().map(|e| (&e.line, &e.labels)).collect::<Vec<_>>(),
        agent.stderr_text()
    );
    let full = |line: &str| -> BTreeMap<String, String> {
        let e = all().into_iter().find(|e| e.line == line).unwrap();
        e.labels
            .into_iter()
            .filter(|(k, _)| k != "filename")
            .map(|(k, v)| (k, v.as_str().unwrap().to_string()))
            .collect()
    };
    let pod = "shop;web-1;uid-web-1;10.1.0.5;192.168.0.10;node-1;Running;true;ReplicaSet;web-7c;web;true";
    let want = |own: &[(&str, &str)]| {
        let mut m = map(&[("pod", pod), ("svc", "web;web;true")]);
        m.extend(map(own));
        m
    };
    assert_eq!(
        full("ep/8080.log"),
        want(&[
            ("address", "10.1.0.5:8080"),
            ("ctr", "main;img:1;http;8080;TCP;false"),
            ("endpoints_name", "web"),
            ("endpoint_port_name", "http"),
            ("endpoint_port_protocol", "TCP"),
            ("endpoint_ready", "true"),
            ("endpoint_address_target_kind", "Pod"),
            ("endpoint_address_target_name", "web-1"),
            ("endpoint_node_name", "node-1"),
        ])
    );
    // The pod's container port no endpoint names: a target of its own.
    let rest = [("ctr", "main;img:1;metrics;9090;TCP;false"), ("address", "10.1.0.5:9090")];
    let mut ep_rest = rest.to_vec();
    ep_rest.push(("endpoints_name", "web"));
    assert_eq!(full("ep/9090.log"), want(&ep_rest));
    let slice =
        [("endpointslice_name", "web-abc"), ("endpointslice_address_type", "IPv4"), ("sl", "web;true"), ("port", ";;")];
    let mut eps = slice.to_vec();
    eps.extend([
        ("address", "10.1.0.5:8080"),
        ("ctr", "main;img:1;http;8080;TCP;false"),
        ("port", "http;TCP;8080"),
        ("endpointslice_endpoint_conditions_ready", "true"),
        ("endpointslice_address_target_kind", "Pod"),
        ("endpointslice_address_target_name", "web-1"),
        ("endpointslice_endpoint_node_name", "node-1"),
        ("endpointslice_endpoint_zone", "z1"),
    ]);
    assert_eq!(full("eps/8080.log"), want(&eps));
    let mut eps_rest = slice.to_vec();
    eps_rest.extend(rest);
    assert_eq!(full("eps/9090.log"), want(&eps_rest));
}

/// Failed once in CI: the endpoints were listed before the pods and
/// services, so the first target had none of their labels and its line
/// shipped without them. Now no target is offered before every resource
/// the role watches has been listed, as Prometheus waits for its caches.
#[test]
fn an_endpoint_listed_before_its_service_gets_no_target_until_the_service_is_listed() {
    let cluster: Shared = Arc::default();
    {
        let mut c = cluster.lock().unwrap();
        c.version = 3;
        c.unlisted = vec!["services".into()];
        c.objects.insert("services".into(), vec![service("shop", "web", "ClusterIP")]);
        c.objects.insert(
            "endpoints".into(),
            vec![json!({
                "metadata": { "name": "web", "namespace": "shop", "uid": "uid-ep" },
                "subsets": [{ "addresses": [{ "ip": "10.1.0.5" }],
                              "ports": [{ "name": "http", "port": 8080, "protocol": "TCP" }] }]
            })],
        );
    }
    let port = api_server(None, cluster.clone(), None);
    let r = Receiver::start(&["--max-query-limit", "1000000"]);
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    log(&d.join("8080.log"), "first");
    let sources = format!(
        r#"[[sources]]
type = "file"
name = "endpoints"
host_label = false
scan_interval = "200ms"
kubernetes = {{ role = "endpoints", api_server = "http://127.0.0.1:{port}" }}
relabel = [
  {{ source_labels = ["__meta_kubernetes_endpoint_port_name"], target_label = "__path__", replacement = "{d}/8080.log" }},
  {{ source_labels = ["__meta_kubernetes_service_name"], target_label = "service" }},
]
"#,
        d = d.display()
    );
    let agent = Agent::start(&config(d, &r.base, &sources));
    let lists = |kind: &str| {
        let c = cluster.lock().unwrap();
        let of_kind =
            |l: &str| l.split(' ').nth(1).and_then(|t| t.split('?').next()).is_some_and(|p| p.ends_with(kind));
        c.requests.iter().filter(|(l, _)| of_kind(l) && !l.contains("watch=1")).count()
    };
    // The services list has failed twice (once, then after its backoff);
    // the endpoints were listed long before. After 10 s the agent names
    // what holds the targets back.
    assert!(wait_for(Duration::from_secs(20), || lists("services") >= 2), "{}", agent.stderr_text());
    assert!(lists("endpoints") >= 1);
    let named = || agent.stderr_text().contains("waiting_for=/api/v1/services");
    assert!(wait_for(Duration::from_secs(30), named), "{}", agent.stderr_text());
    assert!(!agent.stderr_text().contains("waiting_for=/api/v1/endpoints"), "{}", agent.stderr_text());
    let all = || query_all(&r, r#"{filename=~".+"}"#, None);
    assert!(all().is_empty(), "shipped before the services were listed: {:?}", all());
    cluster.lock().unwrap().unlisted.clear();
    assert!(wait_for(Duration::from_secs(20), || !all().is_empty()), "{}", agent.stderr_text());
    let got = all();
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(got[0].labels["service"], "web", "{got:?}");
}
