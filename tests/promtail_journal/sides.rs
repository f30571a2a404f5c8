//! The agents of the journal test: per group of jobs, one Promtail (with
//! its journal reader) on the jobs as rewritten and one tailship on their
//! conversion, each pushing to a recorder of its own. A job an agent
//! refuses (Promtail exits at start; `tailship convert` or `check` exit 2)
//! is found by trying the jobs one by one, and recorded with what the agent
//! said; the others run.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use yaml_rust2::Yaml;

use super::jobs::{self, Job};
use crate::agent::{free_port, write_file, Agent};
use crate::common::bin;
use crate::promtail::Promtail;
use crate::recorder::Recorder;
use crate::rewrite;

/// Promtail with its journal reader, from `../shared/peers`, if there is one.
pub fn promtail_journal() -> Option<PathBuf> {
    let get = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/peers/get");
    let out = Command::new(get).arg("promtail-journal").output().ok()?;
    let path = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    (out.status.success() && path.exists()).then_some(path)
}

/// A group's two agents and recorders, and the jobs each refused.
pub struct Group {
    pub jobs: Vec<Job>,
    pub theirs: Recorder,
    pub ours: Recorder,
    pub promtail: Option<Promtail>,
    pub tailship: Option<Agent>,
    pub promtail_refused: BTreeMap<String, String>,
    pub tailship_refused: BTreeMap<String, String>,
}

/// The Promtail config of `jobs` in `dir` (named `tag`), pushing to `push`.
fn config_of(dir: &Path, jobs: &[&Job], push: &str, tag: &str) -> (String, u16) {
    let scrapes: Vec<Yaml> = jobs.iter().map(|j| jobs::rewrite(j, dir)).collect();
    let http = free_port();
    (rewrite::config(scrapes, push, http, &dir.join(format!("{tag}-positions.yaml"))), http)
}

/// The last lines of what an agent said.
fn last_lines(text: &str) -> String {
    text.lines().rev().take(3).collect::<Vec<_>>().join(" | ")
}

fn start_promtail(bin: &Path, dir: &Path, jobs: &[&Job], push: &str, tag: &str) -> Result<Promtail, String> {
    let (text, http) = config_of(dir, jobs, push, &format!("promtail-{tag}"));
    let file = write_file(dir, &format!("promtail-{tag}.yaml"), &text);
    Promtail::try_start(bin, dir, &file, http)
}

/// `tailship convert promtail` of `yaml`, then `check`: the TOML, or what was refused.
fn convert_and_check(dir: &Path, name: &str, yaml: &str) -> Result<String, String> {
    let file = write_file(dir, &format!("{name}.yaml"), yaml);
    let out = Command::new(bin()).args(["convert", "promtail"]).arg(&file).output().unwrap();
    if !out.status.success() {
        return Err(format!("convert: {}", last_lines(&String::from_utf8_lossy(&out.stderr))));
    }
    let toml = String::from_utf8_lossy(&out.stdout).into_owned();
    let cfg = write_file(dir, &format!("{name}.toml"), &toml);
    let check = Command::new(bin()).args(["check", "--quiet", "--config"]).arg(&cfg).output().unwrap();
    if !check.status.success() {
        return Err(format!("check: {}", last_lines(&String::from_utf8_lossy(&check.stderr))));
    }
    Ok(toml)
}

/// Starts both agents of group `tag` over `jobs`.
pub fn start(bin: &Path, dir: &Path, jobs: Vec<Job>, tag: &str) -> Group {
    let (theirs, ours) = (Recorder::start(), Recorder::start());
    let all: Vec<&Job> = jobs.iter().collect();
    let mut promtail_refused = BTreeMap::new();
    let promtail = match start_promtail(bin, dir, &all, &theirs.base, tag) {
        Ok(p) => Some(p),
        Err(_) => {
            for j in &all {
                if let Err(why) = start_promtail(bin, dir, &[j], &theirs.base, &format!("{tag}-probe")) {
                    promtail_refused.insert(j.id.clone(), last_lines(&why));
                }
            }
            let rest: Vec<&Job> = all.iter().copied().filter(|j| !promtail_refused.contains_key(&j.id)).collect();
            (!rest.is_empty()).then(|| {
                start_promtail(bin, dir, &rest, &theirs.base, tag)
                    .unwrap_or_else(|e| panic!("Promtail refuses the jobs it took one by one: {e}"))
            })
        }
    };
    let mut tailship_refused = BTreeMap::new();
    for j in &all {
        let (text, _) = config_of(dir, &[j], &ours.base, &format!("tailship-{tag}-probe"));
        if let Err(why) = convert_and_check(dir, &format!("probe-{}", j.id), &text) {
            tailship_refused.insert(j.id.clone(), why);
        }
    }
    let rest: Vec<&Job> = all.iter().copied().filter(|j| !tailship_refused.contains_key(&j.id)).collect();
    let tailship = (!rest.is_empty()).then(|| {
        let (text, _) = config_of(dir, &rest, &ours.base, &format!("tailship-{tag}"));
        let toml = convert_and_check(dir, &format!("tailship-{tag}"), &text)
            .unwrap_or_else(|e| panic!("tailship refuses the jobs it took one by one: {e}"));
        Agent::start(&write_file(dir, &format!("tailship-{tag}.toml"), &toml))
    });
    Group { jobs, theirs, ours, promtail, tailship, promtail_refused, tailship_refused }
}
