//! Discovery jobs: `docker_sd_configs` as `type = "docker"` sources,
//! `consul_sd_configs` as file sources with `consul` targets,
//! `dockerswarm_sd_configs` as file sources with `dockerswarm` targets, and
//! `kubernetes_sd_configs` as file sources with discovered targets (every
//! role, pod included, as Promtail reads them).
//!
//! Each entry becomes one source with the job's relabel rules kept as they
//! are (see [`super::relabel::as_is`]). What differs from Promtail is
//! reported: per-line labels such as `__meta_docker_container_log_stream` are not
//! offered to the rules (the `stream` label is set by the docker stage).

use super::render::{Section, Val};
use super::yaml::{list, truthy, Map, Report};
use yaml_rust2::Yaml;

/// Labels Promtail offers per line, not per container: tailship's rules run
/// once per file and cannot see them.
pub const PER_LINE: &[(&str, &str)] = &[(
    "__meta_docker_container_log_stream",
    "tailship labels each line `stream` (stdout or stderr) itself; rules cannot read the stream",
)];

/// The rules of `rules` that copy Docker's log stream to a label as it is
/// (`source_labels: [__meta_docker_container_log_stream]`, `target_label: X`,
/// regex, replacement and action at their defaults, as in Grafana's recipe):
/// their indexes and target labels. Promtail applies them per line; the
/// docker source's stages do the same from each line's `stream`.
pub fn stream_rules(rules: Option<&Yaml>) -> Vec<(usize, String)> {
    let Some(Yaml::Array(items)) = rules else { return Vec::new() };
    let text = |y: &Yaml| match y {
        Yaml::String(s) => Some(s.clone()),
        Yaml::BadValue | Yaml::Null => None,
        _ => Some(String::new()),
    };
    items
        .iter()
        .enumerate()
        .filter_map(|(i, rule)| {
            let Yaml::Hash(h) = rule else { return None };
            let known = ["source_labels", "target_label", "regex", "replacement", "action", "separator"];
            let plain = h.keys().all(|k| k.as_str().is_some_and(|k| known.contains(&k)));
            let sources = match &rule["source_labels"] {
                Yaml::Array(a) => a.iter().map(text).collect::<Option<Vec<_>>>()?,
                _ => return None,
            };
            let default = |k: &str, d: &[&str]| text(&rule[k]).is_none_or(|v| d.contains(&v.as_str()));
            let target = text(&rule["target_label"]).filter(|t| crate::util::is_valid_label_name(t))?;
            (plain
                && sources == [PER_LINE[0].0]
                && default("regex", &["(.*)", ".*", "(.+)"])
                && default("replacement", &["$1", "${1}"])
                && default("action", &["replace"]))
            .then_some((i, target))
        })
        .collect()
}

/// The docker source's stages for the stream rules' `targets`: each a label
/// from the line's `stream`, first; and, as in Promtail, no `stream` label
/// of its own unless a rule names it (a job without such rules too).
pub fn stream_labels(s: &mut Section, targets: &[String]) {
    let mut stages = Vec::new();
    if !targets.is_empty() {
        let picks = targets.iter().map(|t| (t.clone(), Val::str("stream"))).collect();
        stages.push(Val::Table(vec![("labels".into(), Val::Table(picks))]));
    }
    if !targets.iter().any(|t| t == "stream") {
        stages.push(Val::Table(vec![("labeldrop".into(), Val::strs(&["stream".to_string()]))]));
    }
    if let Some(Val::Arr(rest)) = s.get("stages") {
        // Promtail's lines extract no `stream`: its `docker` stage, run over
        // them, labels one only from a line that is Docker's JSON.
        if rest.iter().any(has_docker_stage) {
            let clear = vec![("source".into(), Val::str("stream")), ("template".into(), Val::str(""))];
            stages.push(Val::Table(vec![("template".into(), Val::Table(clear))]));
        }
        stages.extend(rest.iter().cloned());
    }
    s.set("stages", Val::Arr(stages));
}

/// Whether stage `v` is a `docker` stage or holds one (under `match`).
fn has_docker_stage(v: &Val) -> bool {
    match v {
        Val::Table(t) => t.iter().any(|(k, v)| k == "docker" || has_docker_stage(v)),
        Val::Arr(a) => a.iter().any(has_docker_stage),
        _ => false,
    }
}

/// The `docker_sd_configs` list at `key` as docker sources.
pub fn docker(key: &str, y: &Yaml, name: &str, r: &mut Report) -> Vec<Section> {
    let items = list(key, Some(y), r);
    let mut out = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let ik = format!("{key}[{i}]");
        let mut m = Map::new(ik.clone(), item, r);
        let host = m.text("host", r).unwrap_or_else(|| "unix:///var/run/docker.sock".into());
        let local = host.starts_with("unix://");
        let mut d = vec![("host".to_string(), Val::str(host))];
        if let Some(h) = m.text("host_networking_host", r) {
            d.push(("host_networking_host".into(), Val::str(h)));
        }
        engine_keys(&mut m, &mut d, r);
        m.finish(r, "no tailship equivalent");
        let n = if items.len() == 1 { name.to_string() } else { format!("{name}-{i}") };
        let mut s = Section { comments: vec![format!("Promtail job `{name}` ({ik})")], entries: Vec::new() };
        s.set("type", Val::str("docker"));
        s.set("name", Val::str(n));
        s.set("docker", Val::Table(d));
        if local {
            s.set_noted("scan_interval", Val::str("1s"), "new containers' logs are opened at the next scan");
        }
        s.set_noted("host_label", Val::Bool(false), "Promtail adds no host label (tailship does by default)");
        r.note(
            &ik,
            "a container's last text without a newline (written as it exits) is shipped, where Promtail drops it; \
             a container read again goes on from its last byte, where Promtail ships the lines of its last second \
             again",
        );
        out.push(s);
    }
    out
}

/// The keys of an Engine both docker discoveries share: `filters`,
/// `refresh_interval`, `port`, `tls_config` and the HTTP client's.
fn engine_keys(m: &mut Map<'_>, d: &mut Vec<(String, Val)>, r: &mut Report) {
    let mut filters: Vec<(String, Val)> = Vec::new();
    for (j, f) in list(&m.key("filters"), m.get("filters"), r).iter().enumerate() {
        let mut fm = Map::new(format!("{}[{j}]", m.key("filters")), f, r);
        let (Some(fname), values) = (fm.text("name", r), fm.texts("values", r)) else {
            r.skip(format!("{}[{j}]", m.key("filters")), "a filter needs a name");
            continue;
        };
        fm.finish(r, "no tailship equivalent");
        filters.push((fname, Val::strs(&values)));
    }
    if !filters.is_empty() {
        d.push(("filters".into(), Val::Table(filters)));
    }
    if let Some(rf) = m.text("refresh_interval", r) {
        d.push(("refresh_interval".into(), Val::str(rf)));
    }
    if let Some(p) = m.text("port", r) {
        match p.parse::<u16>() {
            Ok(p) => d.push(("port".into(), Val::Int(p.into()))),
            Err(_) => r.refuse(m.key("port"), format!("`{p}` is not a port number")),
        }
    }
    super::client::tls_key(m, d, r);
    super::client::discovery_http(m, d, "the Docker Engine", r);
}

/// The discoveries whose targets are files a file source reads, by their
/// Promtail key (the job's relabel rules give them `__path__`): Consul's and
/// Docker Swarm's (here), then those of [`super::discovery::KINDS`].
pub fn file_target_keys() -> impl Iterator<Item = &'static str> {
    let own = ["consul_sd_configs", "consulagent_sd_configs", "dockerswarm_sd_configs"];
    own.into_iter().chain(super::discovery::KINDS.iter().map(|k| k.0))
}

/// The file sources of a job's [`file_target_keys`] discoveries.
pub fn file_targets(m: &mut Map<'_>, name: &str, multiline: Option<&Val>, r: &mut Report) -> Vec<Section> {
    let mut out = Vec::new();
    for kind in file_target_keys() {
        let Some(y) = m.get(kind) else { continue };
        let key = m.key(kind);
        out.extend(match kind {
            "consul_sd_configs" => consul(&key, y, name, false, r),
            "consulagent_sd_configs" => consul(&key, y, name, true, r),
            "dockerswarm_sd_configs" => dockerswarm(&key, y, name, r),
            other => super::discovery::convert(other, &key, y, name, r),
        });
    }
    for s in &mut out {
        s.set_noted("host_label", Val::Bool(false), "Promtail adds no host label (tailship does by default)");
        if let Some(ml) = multiline {
            s.set("multiline", ml.clone());
        }
    }
    out
}

/// The `dockerswarm_sd_configs` list at `key` as file sources with
/// `dockerswarm` targets (one per entry).
fn dockerswarm(key: &str, y: &Yaml, name: &str, r: &mut Report) -> Vec<Section> {
    let items = list(key, Some(y), r);
    let mut out = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let ik = format!("{key}[{i}]");
        let mut m = Map::new(ik.clone(), item, r);
        let Some(host) = m.text("host", r) else {
            r.refuse(m.key("host"), "Promtail needs the swarm manager's host (unix:///var/run/docker.sock, tcp://...)");
            m.finish(r, "left out with its entry");
            continue;
        };
        let role = m.text("role", r).unwrap_or_default();
        if !["tasks", "services", "nodes"].contains(&role.as_str()) {
            r.refuse(m.key("role"), format!("`{role}` is not a Docker Swarm role (tasks, services or nodes)"));
        }
        let mut d = vec![("host".to_string(), Val::str(host)), ("role".to_string(), Val::str(role))];
        engine_keys(&mut m, &mut d, r);
        m.finish(r, "no tailship equivalent");
        let n = if items.len() == 1 { format!("{name}-dockerswarm") } else { format!("{name}-dockerswarm-{i}") };
        let mut s = Section { comments: vec![format!("Promtail job `{name}` ({ik})")], entries: Vec::new() };
        s.set("type", Val::str("file"));
        s.set("name", Val::str(n));
        s.set("dockerswarm", Val::Table(d));
        out.push(s);
    }
    out
}

/// The `consul_sd_configs` (or `consulagent_sd_configs`) list at `key` as file sources with `consul`
/// targets (one per entry): the job's relabel rules give them `__path__`.
/// `agent`: Promtail's `consulagent_sd_configs` (the local agent's API).
fn consul(key: &str, y: &Yaml, name: &str, agent: bool, r: &mut Report) -> Vec<Section> {
    let items = list(key, Some(y), r);
    let mut out = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let ik = format!("{key}[{i}]");
        let mut m = Map::new(ik.clone(), item, r);
        let mut c: Vec<(String, Val)> = Vec::new();
        for k in [
            "server",
            "scheme",
            "path_prefix",
            "datacenter",
            "namespace",
            "partition",
            "token",
            "tag_separator",
            "filter",
            "health_filter",
        ] {
            if let Some(v) = m.text(k, r) {
                c.push((k.to_string(), Val::str(v)));
            }
        }
        for k in ["services", "tags"] {
            let v = m.texts(k, r);
            if !v.is_empty() {
                c.push((k.to_string(), Val::strs(&v)));
            }
        }
        let meta = m.pairs("node_meta", r);
        if !meta.is_empty() {
            c.push(("node_meta".into(), Val::pairs(&meta)));
        }
        if let Some(v) = m.text("allow_stale", r) {
            c.push(("allow_stale".into(), Val::Bool(super::yaml::truthy(&v))));
        }
        if let Some(v) = m.text("refresh_interval", r) {
            match crate::util::parse_duration(&v) {
                Ok(_) => c.push(("refresh_interval".into(), Val::str(v))),
                Err(e) => r.refuse(m.key("refresh_interval"), e),
            }
        }
        super::client::tls_key(&mut m, &mut c, r);
        // Prometheus' older `username`/`password` are basic auth (Promtail's
        // `/config` page shows them twice, also under `basic_auth`).
        let mut auth =
            m.get("basic_auth").map(|y| super::client::basic_auth(m.key("basic_auth"), y, r)).unwrap_or_default();
        for k in ["username", "password"] {
            if let Some(v) = m.text(k, r).filter(|_| auth.iter().all(|(a, _)| a != k)) {
                auth.push((k.to_string(), Val::str(v)));
            }
        }
        if !auth.is_empty() {
            c.push(("basic_auth".into(), Val::Table(auth)));
        }
        m.finish(r, "no tailship equivalent");
        if agent {
            c.push(("agent".into(), Val::Bool(true)));
        }
        let kind = if agent { "consulagent" } else { "consul" };
        let n = if items.len() == 1 { format!("{name}-{kind}") } else { format!("{name}-{kind}-{i}") };
        let mut s = Section { comments: vec![format!("Promtail job `{name}` ({ik})")], entries: Vec::new() };
        s.set("type", Val::str("file"));
        s.set("name", Val::str(n));
        s.set("consul", Val::Table(c));
        out.push(s);
    }
    out
}

/// The `kubernetes_sd_configs` list at `key` as file sources, one per
/// entry, with `kubernetes.role` and the job's relabel rules (the caller's):
/// the targets of the role (for role pod, the containers of the pods of the
/// node `$HOSTNAME` names) are tailed where the rules set `__path__`, as in
/// Promtail.
pub fn kubernetes(key: &str, y: &Yaml, name: &str, r: &mut Report) -> Vec<Section> {
    let items = list(key, Some(y), r);
    let mut out = Vec::new();
    let mut pod_found = false;
    for (i, item) in items.iter().enumerate() {
        let ik = format!("{key}[{i}]");
        let mut m = Map::new(ik.clone(), item, r);
        let role = m.text("role", r).unwrap_or_default();
        let pod = role == "pod";
        if !["pod", "node", "service", "endpoints", "endpointslice", "ingress"].contains(&role.as_str()) {
            r.refuse(
                m.key("role"),
                format!("unknown Kubernetes SD role `{role}` (one of pod, node, service, endpoints, endpointslice, ingress)"),
            );
            m.ignore("namespaces");
            m.ignore("selectors");
            m.finish(r, "left out with its entry");
            continue;
        }
        if pod && pod_found {
            m.finish(r, "left out with its entry");
            r.skip(
                ik,
                "one role pod entry is enough: its targets are every container of the node's pods (a second entry \
                 names the same files)",
            );
            continue;
        }
        pod_found |= pod;
        let mut k: Vec<(String, Val)> = vec![("role".into(), Val::str(role.clone()))];
        if pod {
            k.push(("node_name_env".into(), Val::str("HOSTNAME")));
            r.note(
                m.key("role"),
                "the pods of the node $HOSTNAME names (else the host name), as Promtail (its Helm chart sets HOSTNAME \
                 from spec.nodeName); each container's files are those its relabelled __path__ names, and a target \
                 without __path__ reads nothing, as in Promtail",
            );
        }
        client_keys(&mut m, &mut k, r);
        namespaces(&mut m, &mut k, r);
        let selectors = selectors(&mut m, r);
        if !selectors.is_empty() {
            k.push(("selectors".into(), Val::Arr(selectors)));
        }
        if let Some(t) = attach_metadata(&mut m, &role, r) {
            k.push(("attach_metadata".into(), t));
        }
        m.finish(r, "no tailship equivalent");
        let mut s = Section { comments: vec![format!("Promtail job `{name}` ({ik})")], entries: Vec::new() };
        s.set("type", Val::str("file"));
        s.set("name", Val::str(if items.len() == 1 { name.to_string() } else { format!("{name}-{i}") }));
        s.set("kubernetes", Val::Table(k));
        s.set_noted("host_label", Val::Bool(false), "Promtail adds no host label (tailship does by default)");
        s.set_noted(
            "scan_interval",
            Val::str("1s"),
            "a target's new files (a container restarted) are opened at the next scan",
        );
        out.push(s);
    }
    out
}

/// An entry's `namespaces` as the `namespaces` key of `k` (asked of the API server).
fn namespaces(m: &mut Map<'_>, k: &mut Vec<(String, Val)>, r: &mut Report) {
    if let Some(ns) = m.get("namespaces") {
        let mut nm = Map::new(m.key("namespaces"), ns, r);
        let names = nm.texts("names", r);
        let own = nm.text("own_namespace", r).is_some_and(|v| truthy(&v));
        nm.finish(r, "no tailship equivalent");
        if !names.is_empty() || own {
            let mut t = Vec::new();
            if !names.is_empty() {
                t.push(("names".into(), Val::strs(&names)));
            }
            if own {
                t.push(("own_namespace".into(), Val::Bool(true)));
            }
            k.push(("namespaces".into(), Val::Table(t)));
        }
    }
}

/// An entry's `selectors` as `kubernetes.selectors`.
fn selectors(m: &mut Map<'_>, r: &mut Report) -> Vec<Val> {
    let mut selectors = Vec::new();
    for (j, sel) in list(&m.key("selectors"), m.get("selectors"), r).iter().enumerate() {
        let sk = format!("{}[{j}]", m.key("selectors"));
        let mut sm = Map::new(sk, sel, r);
        let srole = sm.text("role", r).unwrap_or_default();
        let field = sm.text("field", r);
        let label = sm.text("label", r);
        sm.finish(r, "no tailship equivalent");

        let mut t = vec![("role".to_string(), Val::str(srole))];
        if let Some(l) = label {
            t.push(("label".into(), Val::str(l)));
        }
        if let Some(f) = field {
            t.push(("field".into(), Val::str(f)));
        }
        selectors.push(Val::Table(t));
    }
    selectors
}

/// An entry's `attach_metadata` as `kubernetes.attach_metadata`, where it applies to `role`.
fn attach_metadata(m: &mut Map<'_>, role: &str, r: &mut Report) -> Option<Val> {
    if let Some(y) = m.get("attach_metadata") {
        let mut am = Map::new(m.key("attach_metadata"), y, r);
        let mut t = Vec::new();
        for key in ["node", "namespace"] {
            if !am.text(key, r).is_some_and(|v| truthy(&v)) {
                continue;
            }
            let applies = match key {
                "node" => ["pod", "endpoints", "endpointslice"].contains(&role),
                _ => role != "node",
            };
            if applies {
                t.push((key.to_string(), Val::Bool(true)));
            } else {
                r.note(am.key(key), format!("has no effect on role {role} (in Prometheus neither); left out"));
            }
        }
        am.finish(r, "no tailship equivalent (attach_metadata takes node and namespace)");
        if !t.is_empty() {
            return Some(Val::Table(t));
        }
    }
    None
}

/// The API server, credentials and TLS of an entry as `kubernetes` keys.
fn client_keys(m: &mut Map<'_>, k: &mut Vec<(String, Val)>, r: &mut Report) {
    if let Some(a) = m.text("api_server", r) {
        k.push(("api_server".into(), Val::str(a)));
    }
    if let Some(f) = m.text("kubeconfig_file", r) {
        k.push(("kubeconfig".into(), Val::str(f)));
    }
    let mut http = Vec::new();
    super::client::discovery_http(m, &mut http, "the API server", r);
    for (name, v) in http {
        let name = if name == "bearer_token_file" { "token_file".to_string() } else { name };
        k.push((name, v));
    }
    if let Some(t) = m.get("tls_config") {
        let mut tm = Map::new(m.key("tls_config"), t, r);
        if let Some(ca) = tm.text("ca_file", r) {
            k.push(("ca_file".into(), Val::str(ca)));
        }
        let mut tls = Vec::new();
        for key in ["ca", "cert_file", "cert", "key_file", "key", "server_name"] {
            if let Some(v) = tm.text(key, r) {
                tls.push((key.to_string(), Val::str(v)));
            }
        }
        if let Some(v) = tm.text("insecure_skip_verify", r) {
            tls.push(("insecure_skip_verify".into(), Val::Bool(truthy(&v))));
        }
        if !tls.is_empty() {
            k.push(("tls".into(), Val::Table(tls)));
        }
        tm.finish(r, "no tailship equivalent");
    }
}

/// Notes a `docker` stage of a docker discovery job: Promtail runs it over
/// the lines the Engine's API already decoded, and so does the conversion
/// (it is kept): a line that is a JSON object with a `time` takes that time,
/// and the lines after it that are not JSON that time plus 1 ns each.
pub fn note_docker_stage(s: &Section, key: &str, r: &mut Report) {
    let Some(Val::Arr(stages)) = s.get("stages") else { return };
    if stages.iter().any(has_docker_stage) {
        r.note(
            key,
            "under docker_sd_configs the `docker` stage runs over lines Docker already decoded, as in Promtail: \
             a line that is a JSON object with `log`, `stream` or `time` is read as Docker's, and the lines after \
             one with a `time` that are not JSON get that time plus 1 ns each",
        );
    }
}
