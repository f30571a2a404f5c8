//! The two agents of the corpus test, each running every job it accepts in
//! one process: Promtail on the corpus jobs as rewritten, tailship on their
//! conversion. A job an agent refuses (Promtail exits at start, `tailship
//! convert` or `check` exit 2) is found by halving the set of jobs and
//! recorded with what the agent said; the others run.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use yaml_rust2::Yaml;

use crate::agent::{free_port, write_file, Agent};
use crate::common::bin;
use crate::promtail::Promtail;
use crate::rewrite::{self, Job, Kind};

/// A job with its stage names and what it receives over the network.
pub struct Prepared {
    pub job: Job,
    pub stages: Vec<String>,
    pub messages: Vec<String>,
}

/// A running agent: its listener port per network job, and the jobs it
/// refused with what it said.
pub struct Side<P> {
    /// The agent; dropping it stops it.
    pub process: P,
    pub ports: BTreeMap<String, u16>,
    pub refused: BTreeMap<String, String>,
}

/// The config of `jobs` for one agent: each network job gets a free port.
fn config_of(dir: &Path, jobs: &[&Prepared], push: &str, positions: &str) -> (String, u16, BTreeMap<String, u16>) {
    let mut ports = BTreeMap::new();
    let mut scrapes: Vec<Yaml> = Vec::new();
    for j in jobs {
        let port = if matches!(j.job.kind, Kind::Files | Kind::Kubernetes) { 0 } else { free_port() };
        if port != 0 {
            ports.insert(j.job.id.clone(), port);
        }
        scrapes.push(rewrite::rewrite(&j.job, dir, port));
    }
    let http = free_port();
    (rewrite::config(scrapes, push, http, &dir.join(positions)), http, ports)
}

/// A job prepared for a side: the corpus job it is.
pub trait OfJob {
    fn job(&self) -> &Job;
}

impl OfJob for Prepared {
    fn job(&self) -> &Job {
        &self.job
    }
}

/// Now, in Unix nanoseconds.
pub fn now_ns() -> i128 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as i128
}

/// Waits until neither recorder has taken an entry for 4 s (`deadline` at most).
pub fn wait_quiet(a: &crate::recorder::Recorder, b: &crate::recorder::Recorder, deadline: std::time::Duration) {
    let (mut last, mut since) = ((0, 0), std::time::Instant::now());
    crate::common::wait_for(deadline, || {
        let now = (a.len(), b.len());
        if now != last {
            (last, since) = (now, std::time::Instant::now());
        }
        since.elapsed() > std::time::Duration::from_secs(4)
    });
}

/// The jobs among `jobs` that `fails` refuses alone, found by halving; `fails`
/// says why a set is refused, `None` where it is taken.
pub fn refused_among<'a, J: OfJob>(
    jobs: &[&'a J],
    why: Option<String>,
    fails: &mut dyn FnMut(&[&'a J]) -> Option<String>,
    out: &mut BTreeMap<String, String>,
) {
    let Some(why) = why else { return };
    if jobs.len() == 1 {
        out.insert(jobs[0].job().id.clone(), why.lines().rev().take(3).collect::<Vec<_>>().join(" | "));
        return;
    }
    let (a, b) = jobs.split_at(jobs.len() / 2);
    for half in [a, b] {
        let why = fails(half);
        refused_among(half, why, fails, out);
    }
}

/// Promtail running every job it accepts, pushing to `push`, with `env`.
pub fn promtail(bin: &Path, dir: &Path, jobs: &[Prepared], push: &str, env: &[(&str, &str)]) -> Side<Promtail> {
    let all: Vec<&Prepared> = jobs.iter().collect();
    let start = |set: &[&Prepared]| {
        let (text, http, ports) = config_of(dir, set, push, "promtail-positions.yaml");
        let file = write_file(dir, "promtail.yaml", &text);
        Promtail::try_start_env(bin, dir, &file, http, &[], env).map(|p| (p, ports))
    };
    let mut refused = BTreeMap::new();
    let why = match start(&all) {
        Ok((process, ports)) => return Side { process, ports, refused },
        Err(why) => why,
    };
    refused_among(&all, Some(why), &mut |set| start(set).err(), &mut refused);
    let rest: Vec<&Prepared> = all.into_iter().filter(|j| !refused.contains_key(&j.job.id)).collect();
    let (process, ports) = start(&rest).unwrap_or_else(|e| panic!("Promtail refuses the jobs it took one by one: {e}"));
    Side { process, ports, refused }
}

/// `tailship convert promtail` of `yaml`, then `check` of its output: the
/// TOML, or what was refused.
pub fn convert_and_check(dir: &Path, name: &str, yaml: &str) -> Result<String, String> {
    let file = write_file(dir, &format!("{name}.yaml"), yaml);
    let out =
        Command::new(bin()).args(["convert", "promtail"]).arg(&file).env_remove("JAEGER_AGENT_HOST").output().unwrap();
    if !out.status.success() {
        return Err(format!("convert: {}", String::from_utf8_lossy(&out.stderr)));
    }
    let toml = String::from_utf8_lossy(&out.stdout).into_owned();
    let cfg = write_file(dir, &format!("{name}.toml"), &toml);
    let check = Command::new(bin()).args(["check", "--quiet", "--config"]).arg(&cfg).output().unwrap();
    if !check.status.success() {
        return Err(format!("check: {}", String::from_utf8_lossy(&check.stderr)));
    }
    Ok(toml)
}

/// tailship running the conversion of every job it accepts, pushing to `push`, with `env`.
pub fn tailship(dir: &Path, jobs: &[Prepared], push: &str, env: &[(&str, &str)]) -> Side<Agent> {
    let mut refused = BTreeMap::new();
    let all: Vec<&Prepared> = jobs.iter().collect();
    let mut try_set = |set: &[&Prepared]| {
        let (text, _, _) = config_of(dir, set, push, "tailship-positions.yaml");
        convert_and_check(dir, "probe", &text).err()
    };
    let why = try_set(&all);
    refused_among(&all, why, &mut try_set, &mut refused);
    let rest: Vec<&Prepared> = all.into_iter().filter(|j| !refused.contains_key(&j.job.id)).collect();
    let (text, _, ports) = config_of(dir, &rest, push, "tailship-positions.yaml");
    let toml = convert_and_check(dir, "tailship", &text).unwrap_or_else(|e| panic!("the jobs taken one by one: {e}"));
    let toml = toml.replacen("[positions]", &format!("[spool]\npath = \"{}/spool\"\n\n[positions]", dir.display()), 1);
    let cfg = write_file(dir, "tailship.toml", &toml);
    Side { process: Agent::start_with(&cfg, env), ports, refused }
}
