//! The corpus (`tests/data/promtail_corpus`, real Promtail configs) as jobs
//! one Promtail and one tailship can run together: each job that reads
//! files or receives syslog or pushes keeps its labels, relabel rules and
//! stages; its paths move under the test's directory, its listeners to
//! loopback ports, and a `corpus_job` label (kept by `labelallow` and
//! `labelkeep` too) tells its entries apart; `limit` stages drop nothing. `${VAR}` references are filled
//! (`${VAR:-default}` by the default, others by the name in lower case):
//! neither agent sees them. The configs' own `server`, `clients` and
//! `positions` are the test's.

use std::path::{Path, PathBuf};

use yaml_rust2::yaml::Hash;
use yaml_rust2::{Yaml, YamlEmitter, YamlLoader};

/// How a job gets its lines.
#[derive(Debug, Clone, PartialEq)]
pub enum Kind {
    Files,
    /// Kubernetes pod logs, found through the test's API server.
    Kubernetes,
    Syslog {
        udp: bool,
        rfc3164: bool,
    },
    Push,
}

/// One job of the corpus.
#[derive(Debug, Clone)]
pub struct Job {
    /// `jNNN`: its label and its directory.
    pub id: String,
    /// The corpus file it comes from, and its `job_name` there.
    pub config: String,
    pub name: String,
    pub kind: Kind,
    /// Its scrape config as the corpus file has it (references filled).
    pub scrape: Yaml,
}

/// A job the corpus holds and this test does not run, and why.
pub struct Skipped {
    pub config: String,
    pub name: String,
    pub why: String,
}

fn key(s: &str) -> Yaml {
    Yaml::String(s.into())
}

/// `${VAR:-default}` as the default, `${VAR}` as `var`.
pub fn fill_references(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let Some(end) = rest[start..].find('}') else { break };
        let inner = &rest[start + 2..start + end];
        let filled = match inner.split_once(":-").or_else(|| inner.split_once(':')) {
            Some((_, default)) => default.to_string(),
            // `${1}`: a group reference of a relabel or replace rule, no variable.
            None if !inner.is_empty() && inner.bytes().all(|b| b.is_ascii_digit()) => format!("${{{inner}}}"),
            None => inner.to_ascii_lowercase(),
        };
        out.push_str(&filled);
        rest = &rest[start + end + 1..];
    }
    out.push_str(rest);
    out
}

/// The jobs of every corpus file, in file order, and those not run.
pub fn load(corpus: &Path) -> (Vec<Job>, Vec<Skipped>) {
    let mut files: Vec<PathBuf> = std::fs::read_dir(corpus)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    let (mut jobs, mut skipped) = (Vec::new(), Vec::new());
    for path in files {
        let config = path.file_name().unwrap().to_string_lossy().into_owned();
        let text = fill_references(&std::fs::read_to_string(&path).unwrap());
        let doc = YamlLoader::load_from_str(&text).unwrap_or_else(|e| panic!("{config}: {e}")).remove(0);
        for scrape in doc["scrape_configs"].as_vec().cloned().unwrap_or_default() {
            let name = scrape["job_name"].as_str().unwrap_or("").to_string();
            match kind(&scrape) {
                Ok(kind) => {
                    let id = format!("j{:03}", jobs.len() + 1);
                    jobs.push(Job { id, config: config.clone(), name, kind, scrape });
                }
                Err(why) => skipped.push(Skipped { config: config.clone(), name, why }),
            }
        }
    }
    (jobs, skipped)
}

fn kind(scrape: &Yaml) -> Result<Kind, String> {
    if let Some(s) = scrape["syslog"].as_hash() {
        let udp = s.get(&key("listen_protocol")).and_then(Yaml::as_str) == Some("udp");
        let rfc3164 = s.get(&key("syslog_format")).and_then(Yaml::as_str) == Some("rfc3164");
        return Ok(Kind::Syslog { udp, rfc3164 });
    }
    if scrape["loki_push_api"].as_hash().is_some() {
        return Ok(Kind::Push);
    }
    if crate::kube::is_pod_job(scrape) {
        return Ok(Kind::Kubernetes);
    }
    let statics = scrape["static_configs"].as_vec().cloned().unwrap_or_default();
    if statics.iter().any(|s| !s["labels"]["__path__"].is_badvalue()) {
        return Ok(Kind::Files);
    }
    let Yaml::Hash(h) = scrape else { return Err("not a mapping".into()) };
    let what: Vec<String> = h
        .keys()
        .filter_map(Yaml::as_str)
        .filter(|k| !["job_name", "pipeline_stages", "relabel_configs", "static_configs"].contains(k))
        .map(str::to_string)
        .collect();
    Err(if what.is_empty() { "no __path__".into() } else { what.join(", ") })
}

/// The file a static config's `__path__` names, under `dir/<id>/s<k>`, and
/// the glob it becomes there (its last part; a `{..}`, `[..]` or `**` one
/// as `*.log`).
pub fn input_file(dir: &Path, id: &str, k: usize, path: &str) -> (PathBuf, String) {
    let last = path.rsplit('/').next().unwrap_or("*.log");
    let glob = if last.is_empty() || path.contains(['{', '[']) || path.contains("**") { "*.log" } else { last };
    let file = glob.replace('*', "app").replace('?', "a");
    let at = dir.join(id).join(format!("s{k}"));
    (at.join(file), at.join(glob).display().to_string())
}

/// `job` as the agent given `port` for its listener runs it.
pub fn rewrite(job: &Job, dir: &Path, port: u16) -> Yaml {
    let mut s = job.scrape.as_hash().cloned().unwrap_or_default();
    s.insert(key("job_name"), key(&job.id));
    let id_label = |labels: &mut Hash| {
        labels.insert(key("corpus_job"), key(&job.id));
    };
    match job.kind {
        Kind::Files => {
            let mut statics = s.get(&key("static_configs")).and_then(Yaml::as_vec).cloned().unwrap_or_default();
            for (k, st) in statics.iter_mut().enumerate() {
                let Yaml::Hash(st) = st else { continue };
                let mut labels = st.get(&key("labels")).and_then(Yaml::as_hash).cloned().unwrap_or_default();
                if let Some(path) = labels.get(&key("__path__")).and_then(Yaml::as_str).map(str::to_string) {
                    labels.insert(key("__path__"), key(&input_file(dir, &job.id, k, &path).1));
                }
                labels.remove(&key("__path_exclude__"));
                id_label(&mut labels);
                st.insert(key("labels"), Yaml::Hash(labels));
            }
            s.insert(key("static_configs"), Yaml::Array(statics));
        }
        Kind::Kubernetes => crate::kube::rewrite(&mut s, dir, &job.id),
        Kind::Syslog { .. } => {
            let mut sys = s.get(&key("syslog")).and_then(Yaml::as_hash).cloned().unwrap_or_default();
            sys.insert(key("listen_address"), key(&format!("127.0.0.1:{port}")));
            sys.remove(&key("tls_config"));
            let mut labels = sys.get(&key("labels")).and_then(Yaml::as_hash).cloned().unwrap_or_default();
            id_label(&mut labels);
            sys.insert(key("labels"), Yaml::Hash(labels));
            s.insert(key("syslog"), Yaml::Hash(sys));
        }
        Kind::Push => {
            let mut push = s.get(&key("loki_push_api")).and_then(Yaml::as_hash).cloned().unwrap_or_default();
            let server = format!(
                "http_listen_address: 127.0.0.1\nhttp_listen_port: {port}\ngrpc_listen_address: 127.0.0.1\ngrpc_listen_port: 0"
            );
            push.insert(key("server"), YamlLoader::load_from_str(&server).unwrap().remove(0));
            let mut labels = push.get(&key("labels")).and_then(Yaml::as_hash).cloned().unwrap_or_default();
            id_label(&mut labels);
            push.insert(key("labels"), Yaml::Hash(labels));
            s.insert(key("loki_push_api"), Yaml::Hash(push));
        }
    }
    keep_corpus_job(&mut s, true);
    Yaml::Hash(s)
}

/// What a scrape config `s` of the corpus gets before it runs: Go's
/// booleans, `corpus_job` kept by `labelallow` stages and `labelkeep`
/// rules, and with `unlimit`, `limit` stages that drop nothing.
pub fn keep_corpus_job(s: &mut yaml_rust2::yaml::Hash, unlimit: bool) {
    for v in s.values_mut() {
        go_booleans(v);
    }
    if let Some(stages) = s.get_mut(&key("pipeline_stages")) {
        keep_label(stages);
        if unlimit {
            unlimited(stages);
        }
    }
    if let Some(Yaml::Array(rules)) = s.get_mut(&key("relabel_configs")) {
        for r in rules.iter_mut() {
            let Yaml::Hash(r) = r else { continue };
            if r.get(&key("action")).and_then(Yaml::as_str) == Some("labelkeep") {
                let re = r.get(&key("regex")).and_then(Yaml::as_str).unwrap_or("(.*)").to_string();
                r.insert(key("regex"), key(&format!("(?:{re})|corpus_job")));
            }
        }
    }
}

/// Keys Promtail reads as booleans.
const BOOLEANS: &[&str] = &[
    "label_structured_data",
    "use_incoming_timestamp",
    "use_rfc5424_message",
    "drop_malformed",
    "match_all",
    "count_entry_bytes",
];

/// `yes`, `no`, `on` and `off` of a boolean key as booleans: Promtail's YAML
/// (1.1) reads them so; written back as text, Promtail would refuse them.
pub fn go_booleans(v: &mut Yaml) {
    match v {
        Yaml::Hash(h) => {
            for (k, child) in h.iter_mut() {
                let word = child.as_str().map(str::to_ascii_lowercase);
                match (k.as_str(), word.as_deref()) {
                    (Some(k), Some("yes" | "on" | "y")) if BOOLEANS.contains(&k) => *child = Yaml::Boolean(true),
                    (Some(k), Some("no" | "off" | "n")) if BOOLEANS.contains(&k) => *child = Yaml::Boolean(false),
                    _ => go_booleans(child),
                }
            }
        }
        Yaml::Array(items) => items.iter_mut().for_each(go_booleans),
        _ => {}
    }
}

/// `labelallow` stages keep `corpus_job` too.
fn keep_label(stages: &mut Yaml) {
    let Yaml::Array(list) = stages else { return };
    for stage in list {
        let Yaml::Hash(h) = stage else { continue };
        if let Some(Yaml::Array(allowed)) = h.get_mut(&key("labelallow")) {
            allowed.push(key("corpus_job"));
        }
        if let Some(Yaml::Hash(m)) = h.get_mut(&key("match")) {
            if let Some(inner) = m.get_mut(&key("stages")) {
                keep_label(inner);
            }
        }
    }
}

/// `limit` stages that drop nothing here: what one drops depends on how
/// fast each agent reads, which no two runs share.
fn unlimited(stages: &mut Yaml) {
    let Yaml::Array(list) = stages else { return };
    for stage in list {
        let Yaml::Hash(h) = stage else { continue };
        if let Some(Yaml::Hash(l)) = h.get_mut(&key("limit")) {
            l.insert(key("rate"), Yaml::Integer(1_000_000));
            l.insert(key("burst"), Yaml::Integer(1_000_000));
        }
        if let Some(Yaml::Hash(m)) = h.get_mut(&key("match")) {
            if let Some(inner) = m.get_mut(&key("stages")) {
                unlimited(inner);
            }
        }
    }
}

/// A whole Promtail config: the test's server, client and positions, and
/// `scrapes`.
pub fn config(scrapes: Vec<Yaml>, push_url: &str, http_port: u16, positions: &Path) -> String {
    let head = format!(
        "server: {{ http_listen_address: 127.0.0.1, http_listen_port: {http_port}, grpc_listen_port: 0, log_level: warn }}\n\
         clients: [{{ url: '{push_url}/loki/api/v1/push', batchwait: 100ms }}]\n\
         positions: {{ filename: '{}' }}\n",
        positions.display()
    );
    let mut doc = YamlLoader::load_from_str(&head).unwrap().remove(0);
    if let Yaml::Hash(h) = &mut doc {
        h.insert(key("scrape_configs"), Yaml::Array(scrapes));
    }
    let mut out = String::new();
    YamlEmitter::new(&mut out).dump(&doc).unwrap();
    out + "\n"
}
