//! Discovery jobs: `docker_sd_configs` as `type = "docker"` sources.
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
