//! The Docker jobs of the corpus, as `tests/promtail_docker.rs` runs them:
//! jobs with `docker_sd_configs` (pointed at the test's private Docker
//! Engine) and jobs reading Docker's json-file logs from disk (a `docker` or
//! `cri` stage, or a `__path__` under `docker/containers`; their files
//! written by the test). Each keeps its labels, relabel rules and stages;
//! a `corpus_job` label (a last relabel rule, or the static labels) tells
//! its entries apart. What the containers of a discovery job carry (labels,
//! names) is read from the job's own filters and `keep` rules.

use std::collections::BTreeMap;
use std::path::Path;

use yaml_rust2::{Yaml, YamlLoader};

use crate::inputs;
use crate::regex_gen::sample;
use crate::rewrite::{self, Job, Kind};

/// How a Docker job gets its lines.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Shape {
    /// `docker_sd_configs`: containers of the test's Engine.
    Discovery,
    /// json-file (or CRI) lines in files the test writes.
    Files { cri: bool },
}

/// A Docker job of the corpus and what it is run on.
pub struct DockerJob {
    pub job: Job,
    pub shape: Shape,
    pub stages: Vec<String>,
    /// Lines built from the job's own stages (its regexes, JSON keys, ...).
    pub built: Vec<String>,
}

impl DockerJob {
    pub fn key(&self) -> String {
        format!("{}/{}", self.job.config, self.job.name)
    }
}

fn key(s: &str) -> Yaml {
    Yaml::String(s.into())
}

fn reads_docker_files(scrape: &Yaml) -> bool {
    let statics = scrape["static_configs"].as_vec().cloned().unwrap_or_default();
    statics.iter().any(|s| s["labels"]["__path__"].as_str().is_some_and(|p| p.contains("docker/containers")))
}

/// Every Docker job of the corpus, numbered `dNNN`.
pub fn load(corpus: &Path) -> Vec<DockerJob> {
    let mut files: Vec<_> = std::fs::read_dir(corpus)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    let mut out = Vec::new();
    for path in files {
        let config = path.file_name().unwrap().to_string_lossy().into_owned();
        let text = rewrite::fill_references(&std::fs::read_to_string(&path).unwrap());
        let doc = YamlLoader::load_from_str(&text).unwrap_or_else(|e| panic!("{config}: {e}")).remove(0);
        for scrape in doc["scrape_configs"].as_vec().cloned().unwrap_or_default() {
            let mut stages = Vec::new();
            crate::compare::stage_names(&scrape["pipeline_stages"], &mut stages);
            // Promtail runs a job with `static_configs` as a file job, its
            // `docker_sd_configs` unread.
            let shape = if scrape["docker_sd_configs"].as_vec().is_some() && scrape["static_configs"].is_badvalue() {
                Shape::Discovery
            } else if stages.iter().any(|s| s == "docker" || s == "cri") || reads_docker_files(&scrape) {
                let cri = stages.iter().any(|s| s == "cri") && !stages.iter().any(|s| s == "docker");
                Shape::Files { cri }
            } else {
                continue;
            };
            let statics = scrape["static_configs"].as_vec().cloned().unwrap_or_default();
            if shape != Shape::Discovery && !statics.iter().any(|s| s["labels"]["__path__"].as_str().is_some()) {
                continue;
            }
            let mut reads = inputs::Reads::default();
            inputs::gather(&scrape["pipeline_stages"], &mut reads);
            let name = scrape["job_name"].as_str().unwrap_or("").to_string();
            let id = format!("d{:03}", out.len() + 1);
            let job = Job { id, config: config.clone(), name, kind: Kind::Files, scrape };
            out.push(DockerJob { job, shape, stages, built: inputs::built(&reads) });
        }
    }
    out
}

/// `j` as both agents run it: files under `dir`, discovery at `host`.
pub fn rewrite(j: &DockerJob, dir: &Path, host: &str) -> Yaml {
    let Yaml::Hash(mut s) = rewrite::rewrite(&j.job, dir, 0) else { unreachable!("a scrape config is a mapping") };
    if j.shape != Shape::Discovery {
        return Yaml::Hash(s);
    }
    // Promtail runs a job with `static_configs` (even `[]`) as a file job.
    s.remove(&key("static_configs"));
    if let Some(Yaml::Array(sds)) = s.get_mut(&key("docker_sd_configs")) {
        for sd in sds.iter_mut() {
            if let Yaml::Hash(sd) = sd {
                sd.insert(key("host"), key(host));
                for k in ["tls_config", "basic_auth", "authorization", "oauth2", "proxy_url", "bearer_token"] {
                    sd.remove(&key(k));
                }
            }
        }
    }
    let mut rules = s.get(&key("relabel_configs")).and_then(Yaml::as_vec).cloned().unwrap_or_default();
    let mut tag = yaml_rust2::yaml::Hash::new();
    tag.insert(key("target_label"), key("corpus_job"));
    tag.insert(key("replacement"), key(&j.job.id));
    rules.push(Yaml::Hash(tag));
    s.insert(key("relabel_configs"), Yaml::Array(rules));
    Yaml::Hash(s)
}

/// A time of Docker's json-file (`time`): RFC 3339 with nanoseconds.
fn docker_time(i: usize) -> String {
    let t = inputs::time(i) + chrono::Duration::nanoseconds(456_789 + i as i64);
    t.to_rfc3339_opts(chrono::SecondsFormat::Nanos, true)
}

/// What the containers write, and the files of a file job: on stdout the
/// common lines and the job's built lines, on stderr two more; then a line
/// over 16 KiB (which Docker writes in two parts) and, last, text without
/// a newline.
pub struct Output {
    pub stdout: Vec<String>,
    pub stderr: Vec<String>,
    pub long: String,
    pub unterminated: String,
}

pub fn output(built: &[String]) -> Output {
    let mut stdout: Vec<String> = inputs::common()
        .into_iter()
        .map(|l| String::from_utf8_lossy(&l).trim_end_matches('\n').to_string())
        .filter(|l| !l.contains('\r') && !l.contains('\u{fffd}'))
        .collect();
    stdout.extend(built.iter().cloned());
    let stderr = vec!["level=error msg=\"stderr line\" err=\"exit status 1\"".into(), "stderr plain line".into()];
    Output { stdout, stderr, long: format!("long line {}", "x".repeat(20_000)), unterminated: "last words".into() }
}

/// The json-file lines Docker would write for `o` (a long line in two
/// parts, the last text without its newline).
pub fn json_file(o: &Output) -> Vec<u8> {
    let mut out = Vec::new();
    let mut i = 0;
    let mut entry = |log: &str, stream: &str| {
        i += 1;
        let v = serde_json::json!({ "log": log, "stream": stream, "time": docker_time(i) });
        out.extend_from_slice(format!("{v}\n").as_bytes());
    };
    for l in &o.stdout {
        entry(&format!("{l}\n"), "stdout");
    }
    for l in &o.stderr {
        entry(&format!("{l}\n"), "stderr");
    }
    let (head, tail) = o.long.split_at(16 * 1024);
    entry(head, "stdout");
    entry(&format!("{tail}\n"), "stdout");
    entry(&o.unterminated, "stdout");
    out
}

/// The CRI lines a runtime would write for `o` (the long line as a `P`
/// part and an `F` one).
pub fn cri_file(o: &Output) -> Vec<u8> {
    let mut out = Vec::new();
    let mut i = 0;
    let mut entry = |log: &str, stream: &str, tag: &str| {
        i += 1;
        out.extend_from_slice(format!("{} {stream} {tag} {log}\n", docker_time(i)).as_bytes());
    };
    o.stdout.iter().for_each(|l| entry(l, "stdout", "F"));
    o.stderr.iter().for_each(|l| entry(l, "stderr", "F"));
    let (head, tail) = o.long.split_at(16 * 1024);
    entry(head, "stdout", "P");
    entry(tail, "stdout", "F");
    entry(&o.unterminated, "stdout", "F");
    out
}

/// Writes the input files of a file job.
pub fn write_files(j: &DockerJob, dir: &Path, cri: bool) {
    let bytes = if cri { cri_file(&output(&j.built)) } else { json_file(&output(&j.built)) };
    let statics = j.job.scrape["static_configs"].as_vec().cloned().unwrap_or_default();
    for (k, st) in statics.iter().enumerate() {
        let Some(path) = st["labels"]["__path__"].as_str() else { continue };
        let (file, _) = rewrite::input_file(dir, &j.job.id, k, path);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(&file, &bytes).unwrap();
    }
}

/// The Docker label a `__meta_docker_container_label_<name>` reads (the
/// Compose labels with their dots).
fn docker_label(meta: &str) -> String {
    match meta.strip_prefix("com_docker_compose_") {
        Some(rest) => format!("com.docker.compose.{rest}"),
        None => meta.to_string(),
    }
}

/// A value matching all of `regex` (relabel rules anchor theirs).
fn matching(regex: &str) -> Option<String> {
    let anchored = format!("^(?:{regex})$");
    sample(&anchored, &BTreeMap::new(), 0)
}

/// The labels and name a container of `j` is given so that the job's
/// filters and `keep` rules take it and its relabel rules read something:
/// every `__meta_docker_container_label_*` the rules read gets a value.
pub fn container_of(j: &DockerJob) -> (BTreeMap<String, String>, Option<String>) {
    let mut labels = BTreeMap::new();
    let mut name = None;
    for sd in j.job.scrape["docker_sd_configs"].as_vec().into_iter().flatten() {
        for f in sd["filters"].as_vec().into_iter().flatten() {
            for v in f["values"].as_vec().into_iter().flatten().filter_map(Yaml::as_str) {
                match f["name"].as_str() {
                    Some("label") => {
                        let (k, v) = v.split_once('=').unwrap_or((v, ""));
                        labels.insert(k.to_string(), v.to_string());
                    }
                    Some("name") => name = Some(v.trim_start_matches('/').to_string()),
                    _ => {}
                }
            }
        }
    }
    for r in j.job.scrape["relabel_configs"].as_vec().into_iter().flatten() {
        let sources: Vec<&str> = r["source_labels"].as_vec().into_iter().flatten().filter_map(Yaml::as_str).collect();
        let keep = r["action"].as_str() == Some("keep") && sources.len() == 1;
        let value = |fallback: String| match keep {
            true => matching(r["regex"].as_str().unwrap_or("(.*)")).unwrap_or(fallback),
            false => fallback,
        };
        for src in &sources {
            if let Some(meta) = src.strip_prefix("__meta_docker_container_label_") {
                let l = docker_label(meta);
                if keep || !labels.contains_key(&l) {
                    let v = value(format!("{meta}-{}", j.job.id));
                    labels.insert(l, v);
                }
            } else if *src == "__meta_docker_container_name" && keep {
                name = value(String::new()).strip_prefix('/').map(str::to_string).filter(|n| !n.is_empty());
            }
        }
    }
    (labels, name)
}
