//! Discovery jobs: `docker_sd_configs` as `type = "docker"` sources, and
//! `kubernetes_sd_configs` (role pod) as `type = "kubernetes"` sources with
//! pod metadata.
//!
//! Each entry becomes one source with the job's relabel rules kept as they
//! are (see [`super::relabel::as_is`]). What differs from Promtail is
//! reported: Promtail reads logs through the Engine API, tailship reads the
//! json-file logs from disk (so it needs the Engine on a local socket), and
//! per-line labels such as `__meta_docker_container_log_stream` are not
//! offered to the rules (the `stream` label is set by the docker stage).

use super::render::{Section, Val};
use super::yaml::{list, Map, Report};
use yaml_rust2::Yaml;

/// Labels Promtail offers per line, not per container: tailship's rules run
/// once per file and cannot see them.
pub const PER_LINE: &[(&str, &str)] = &[(
    "__meta_docker_container_log_stream",
    "tailship labels each line `stream` (stdout or stderr) itself; rules cannot read the stream",
)];

/// The `docker_sd_configs` list at `key` as docker sources.
pub fn docker(key: &str, y: &Yaml, name: &str, r: &mut Report) -> Vec<Section> {
    let items = list(key, Some(y), r);
    let mut out = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let ik = format!("{key}[{i}]");
        let mut m = Map::new(ik.clone(), item, r);
        let host = m.text("host", r).unwrap_or_else(|| "unix:///var/run/docker.sock".into());
        m.ignore("port");
        let refresh = m.text("refresh_interval", r);
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
        m.finish(r, "no tailship equivalent (tailship reaches the Engine on its local socket only)");
        if !host.starts_with("unix:///") {
            r.skip(
                format!("{ik}.host"),
                format!("`{host}`: tailship reads container logs from this machine's disk, through a local Engine's unix:// socket; the job is left out"),
            );
            continue;
        }
        let n = if items.len() == 1 { name.to_string() } else { format!("{name}-{i}") };
        let mut s = Section { comments: vec![format!("Promtail job `{name}` ({ik})")], entries: Vec::new() };
        s.set("type", Val::str("docker"));
        s.set("name", Val::str(n));
        let mut d = vec![("host".to_string(), Val::str(host))];
        if !filters.is_empty() {
            d.push(("filters".into(), Val::Table(filters)));
        }
        if let Some(rf) = refresh {
            d.push(("refresh_interval".into(), Val::str(rf)));
        }
        s.set("docker", Val::Table(d));
        s.set_noted("scan_interval", Val::str("1s"), "new containers' logs are opened at the next scan");
        s.set_noted("host_label", Val::Bool(false), "Promtail adds no host label (tailship does by default)");
        out.push(s);
    }
    out
}

/// The `kubernetes_sd_configs` list at `key` as one kubernetes source with
/// pod metadata (a DaemonSet agent watches its own node's pods), or None
/// when no entry has role pod. `namespaces.names` becomes a `keep` rule,
/// put first in `rules`.
pub fn kubernetes(key: &str, y: &Yaml, name: &str, rules: &mut Vec<Val>, r: &mut Report) -> Option<Section> {
    let items = list(key, Some(y), r);
    let mut k: Vec<(String, Val)> = Vec::new();
    let mut namespaces: Vec<String> = Vec::new();
    let mut found = false;
    for (i, item) in items.iter().enumerate() {
        let ik = format!("{key}[{i}]");
        let mut m = Map::new(ik.clone(), item, r);
        let role = m.text("role", r).unwrap_or_default();
        if role != "pod" {
            m.ignore("namespaces");
            m.ignore("selectors");
            m.finish(r, "left out with its entry");
            r.skip(
                format!("{ik}.role"),
                format!("role `{role}`: tailship reads pod logs (role pod) only; the entry is left out"),
            );
            continue;
        }
        if found {
            m.finish(r, "left out with its entry");
            r.skip(ik, "one role pod entry is enough: tailship watches every pod of its node once");
            continue;
        }
        found = true;
        if let Some(a) = m.text("api_server", r) {
            k.push(("api_server".into(), Val::str(a)));
        }
        if let Some(f) = m.text("kubeconfig_file", r) {
            k.push(("kubeconfig".into(), Val::str(f)));
        }
        if let Some(f) = m.text("bearer_token_file", r) {
            k.push(("token_file".into(), Val::str(f)));
        }
        if let Some(t) = m.get("tls_config") {
            let mut tm = Map::new(m.key("tls_config"), t, r);
            if let Some(ca) = tm.text("ca_file", r) {
                k.push(("ca_file".into(), Val::str(ca)));
            }
            tm.finish(r, "no tailship equivalent");
        }
        if let Some(ns) = m.get("namespaces") {
            let mut nm = Map::new(m.key("namespaces"), ns, r);
            namespaces = nm.texts("names", r);
            nm.finish(r, "no tailship equivalent");
        }
        for (j, sel) in list(&m.key("selectors"), m.get("selectors"), r).iter().enumerate() {
            let sk = format!("{}[{j}]", m.key("selectors"));
            let mut sm = Map::new(sk.clone(), sel, r);
            let field = sm.text("field", r).unwrap_or_default();
            sm.ignore("role");
            let label = sm.text("label", r);
            sm.finish(r, "no tailship equivalent");
            if field.starts_with("spec.nodeName=") && label.is_none() {
                r.note(sk, "tailship always watches the pods of its own node ($NODE_NAME, else the hostname)");
            } else {
                r.skip(sk, "tailship watches every pod of its node: select with relabel rules (keep) instead");
            }
        }
        m.finish(r, "no tailship equivalent");
    }
    if !found {
        return None;
    }
    if !namespaces.is_empty() {
        let re = namespaces.iter().map(|n| regex::escape(n)).collect::<Vec<_>>().join("|");
        let keep = Val::Table(vec![
            ("source_labels".into(), Val::strs(&["__meta_kubernetes_namespace".to_string()])),
            ("regex".into(), Val::str(re)),
            ("action".into(), Val::str("keep")),
        ]);
        rules.insert(0, keep);
    }
    let mut s = Section { comments: vec![format!("Promtail job `{name}` ({key})")], entries: Vec::new() };
    s.set("type", Val::str("kubernetes"));
    s.set("name", Val::str(name));
    s.set("kubernetes", Val::Table(k));
    s.set_noted("host_label", Val::Bool(false), "Promtail adds no host label (tailship does by default)");
    Some(s)
}

/// Removes the `kind` stages (`cri` on a kubernetes source, `docker` on a
/// docker source) from a finished section: the source runs that stage first
/// by itself, and a second one would count every line as unparsed.
pub fn drop_own_stage(s: &mut Section, kind: &str, key: &str, r: &mut Report) {
    let Some(Val::Arr(stages)) = s.get("stages").cloned() else { return };
    let kept: Vec<Val> = stages
        .into_iter()
        .filter(|v| !matches!(v, Val::Table(t) if t.first().is_some_and(|(k, _)| k == kind)))
        .collect();
    let before = match s.get("stages") {
        Some(Val::Arr(a)) => a.len(),
        _ => 0,
    };
    if kept.len() != before {
        r.note(key, format!("the source parses its lines as `{kind}` by itself: the `{kind}` stage is left out"));
        if kept.is_empty() {
            s.entries.retain(|(k, _, _)| k != "stages");
        } else {
            s.set("stages", Val::Arr(kept));
        }
    }
}
