//! The `journal:` jobs of the corpus (`tests/data/promtail_corpus`) and of
//! this test's own cases (`tests/data/promtail_journal`), as one Promtail
//! and one tailship run them: each job reads its own journal directory
//! under the test's, and a `corpus_job` label (kept by `labelkeep` and
//! `labelallow` too) tells its entries apart. A job that gives its entries
//! no labels of its own cannot carry that label without changing what
//! Promtail does with them ("no labels": dropped), so it runs alone, in an
//! agent of its own on each side.

use std::path::{Path, PathBuf};

use yaml_rust2::{Yaml, YamlLoader};

use crate::rewrite::{fill_references, keep_corpus_job};

/// One journal job.
#[derive(Debug, Clone)]
pub struct Job {
    /// `jNNN`: its label and its directory.
    pub id: String,
    /// The file it comes from, and its `job_name` there.
    pub config: String,
    pub name: String,
    /// Its scrape config as the file has it (references filled).
    pub scrape: Yaml,
    /// It has no static labels: it runs alone.
    pub alone: bool,
}

fn key(s: &str) -> Yaml {
    Yaml::String(s.into())
}

/// The journal jobs of every `.yaml` file of `dirs`, in file order.
pub fn load(dirs: &[PathBuf]) -> Vec<Job> {
    let mut files: Vec<PathBuf> = dirs
        .iter()
        .flat_map(|d| std::fs::read_dir(d).unwrap().map(|e| e.unwrap().path()))
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    let mut jobs = Vec::new();
    for path in files {
        let config = path.file_name().unwrap().to_string_lossy().into_owned();
        let text = fill_references(&std::fs::read_to_string(&path).unwrap());
        let doc = YamlLoader::load_from_str(&text).unwrap_or_else(|e| panic!("{config}: {e}")).remove(0);
        for scrape in doc["scrape_configs"].as_vec().cloned().unwrap_or_default() {
            if scrape["journal"].is_badvalue() {
                continue;
            }
            let name = scrape["job_name"].as_str().unwrap_or("").to_string();
            let alone = scrape["journal"]["labels"].as_hash().is_none_or(|h| h.is_empty());
            let id = format!("j{:03}", jobs.len() + 1);
            jobs.push(Job { id, config: config.clone(), name, scrape, alone });
        }
    }
    jobs
}

/// The journal directory of a job.
pub fn journal_dir(dir: &Path, job: &Job) -> PathBuf {
    dir.join(&job.id).join("journal")
}

/// `job` as the agents run it: its journal under `dir`, its label.
pub fn rewrite(job: &Job, dir: &Path) -> Yaml {
    let mut s = job.scrape.as_hash().cloned().unwrap_or_default();
    s.insert(key("job_name"), key(&job.id));
    // The journal job alone: a job that reads files too reads them elsewhere.
    for other in ["static_configs", "file_sd_configs"] {
        s.remove(&key(other));
    }
    let mut j = s.get(&key("journal")).and_then(Yaml::as_hash).cloned().unwrap_or_default();
    j.insert(key("path"), key(&journal_dir(dir, job).display().to_string()));
    if !job.alone {
        let mut labels = j.get(&key("labels")).and_then(Yaml::as_hash).cloned().unwrap_or_default();
        labels.insert(key("corpus_job"), key(&job.id));
        j.insert(key("labels"), Yaml::Hash(labels));
    }
    s.insert(key("journal"), Yaml::Hash(j));
    keep_corpus_job(&mut s, false);
    Yaml::Hash(s)
}

/// The `FIELD=value` matches of a job (its `journal.matches`).
pub fn matches(job: &Job) -> Vec<(String, String)> {
    let text = job.scrape["journal"]["matches"].as_str().unwrap_or("");
    text.split_whitespace().filter_map(|t| t.split_once('=')).map(|(f, v)| (f.to_string(), v.to_string())).collect()
}

/// The journal fields a job's relabel rules read, with their regex when
/// the rule has one: `(FIELD, regex)`.
pub fn relabelled_fields(job: &Job) -> Vec<(String, Option<String>)> {
    let mut out = Vec::new();
    for rule in job.scrape["relabel_configs"].as_vec().into_iter().flatten() {
        let regex = rule["regex"].as_str().map(str::to_string);
        for s in rule["source_labels"].as_vec().into_iter().flatten().filter_map(Yaml::as_str) {
            if let Some(f) = s.strip_prefix("__journal_") {
                if f != "priority_keyword" {
                    out.push((f.to_ascii_uppercase(), regex.clone()));
                }
            }
        }
    }
    out
}
