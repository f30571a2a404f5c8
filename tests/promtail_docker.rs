//! The Docker jobs of the corpus (`tests/data/promtail_corpus`) side by
//! side with the real Promtail 3.6.15: jobs with `docker_sd_configs` find
//! the containers of the test's private Docker Engine (`common/dockerd.rs`),
//! jobs with a `docker` (or `cri`) stage read json-file (or CRI) logs the
//! test writes. Both agents run every job they accept, each pushing to its
//! own recorder; per job the tenant, labels, line, structured metadata and
//! timestamp (Docker's, to the nanosecond) must be Promtail's, or differ by
//! a choice docs/promtail-differences.md lists (`compare::CHOICES`, or
//! [`DELIBERATE`]). The containers write lines on stdout and stderr, one over
//! 16 KiB (Docker writes it in two parts) and, when told to stop, text
//! without a newline. Prints "N of M Docker jobs give Promtail's result".
//! Skips, saying so, where Promtail is absent; runs the file jobs alone
//! where dockerd is.

use crate::agent;
use crate::compare;
use crate::docker_jobs;
use crate::dockerd;
use crate::promtail;
use crate::recorder;
use crate::rewrite;
use crate::sides;

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use agent::{free_port, write_file, Agent};
use compare::Outcome;
use docker_jobs::{DockerJob, Shape};
use dockerd::Dockerd;
use promtail::Promtail;
use recorder::{Pushed, Recorder};
use rewrite::Kind;

/// Docker jobs whose result differs from Promtail's by a decision of ours,
/// each listed in docs/promtail-differences.md: `corpus file/job_name`, and why.
const DELIBERATE: &[(&str, &str)] = &[(
    "avoinorg_log_stack_promtail_config.yaml/docker",
    "its timestamp stage reads `time`, which Promtail's docker stage does not extract (it names it \
     `timestamp`), so every line's time is fudged: 1 ns past the stream's last; Promtail ships Docker's two \
     parts of the long line as two entries, tailship as one (docker-split-lines), so the line after them is \
     1 ns earlier in tailship",
)];

/// Docker jobs whose result varies from run to run in Promtail itself,
/// printed and counted apart, never failing: each with the reason.
const VARIES: &[(&str, &str)] = &[(
    "ed_daniel_styx_promtail_promtail_config.yaml/docker",
    "its timestamp stage fudges every docker_sd_configs line's time (1 ns past the last of the same labels), and its \
     labels do not tell stdout from stderr: Promtail reads a container's stdout and stderr in two goroutines, so \
     which of them a fudged time follows is its scheduler's choice",
)];

/// One container per discovery job, labelled and named as the job looks
/// for, writing [`docker_jobs::output`] (its stdout from a file under
/// `input`, mounted read-only) and waiting for `input/stop` to write the
/// unterminated text and exit.
fn run_containers(d: &Dockerd, jobs: &[DockerJob], input: &Path) {
    std::fs::create_dir_all(input).unwrap();
    let mut names = Vec::new();
    for j in jobs.iter().filter(|j| j.shape == Shape::Discovery) {
        let o = docker_jobs::output(&j.built);
        std::fs::write(input.join(format!("{}.out", j.job.id)), o.stdout.join("\n") + "\n").unwrap();
        std::fs::write(input.join(format!("{}.err", j.job.id)), o.stderr.join("\n") + "\n").unwrap();
        std::fs::write(input.join(format!("{}.long", j.job.id)), o.long.clone() + "\n").unwrap();
        let (labels, name) = docker_jobs::container_of(j);
        let name = name.filter(|n| !names.contains(n)).unwrap_or_else(|| format!("corpus-{}", j.job.id));
        names.push(name.clone());
        let mut args: Vec<String> = vec!["--name".into(), name, "-v".into(), format!("{}:/in:ro", input.display())];
        for (k, v) in &labels {
            args.extend(["--label".into(), format!("{k}={v}")]);
        }
        let id = &j.job.id;
        let script = format!(
            "cat /in/{id}.out; cat /in/{id}.err >&2; cat /in/{id}.long; \
             while [ ! -e /in/stop ]; do sleep 0.2; done; printf '{}'",
            o.unterminated
        );
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        d.run(&args, &script);
    }
}

/// The config both agents run: every job of `jobs`.
fn config_of(dir: &Path, jobs: &[&DockerJob], host: &str, push: &str, positions: &str) -> (String, u16) {
    let scrapes = jobs.iter().map(|j| docker_jobs::rewrite(j, dir, host)).collect();
    let http = free_port();
    (rewrite::config(scrapes, push, http, &dir.join(positions)), http)
}

/// Promtail on every job it accepts, and the jobs it refuses with why.
fn start_promtail(
    bin: &Path,
    dir: &Path,
    jobs: &[&DockerJob],
    host: &str,
    push: &str,
) -> (Promtail, BTreeMap<String, String>) {
    let start = |set: &[&DockerJob]| {
        let (text, http) = config_of(dir, set, host, push, "promtail-positions.yaml");
        Promtail::try_start(bin, dir, &write_file(dir, "promtail.yaml", &text), http)
    };
    let mut refused = BTreeMap::new();
    let why = match start(jobs) {
        Ok(p) => return (p, refused),
        Err(why) => why,
    };
    let mut fails = |set: &[&DockerJob]| start(set).err();
    sides::refused_among(jobs, Some(why), &mut fails, &mut refused);
    let rest: Vec<&DockerJob> = jobs.iter().copied().filter(|j| !refused.contains_key(&j.job.id)).collect();
    (start(&rest).unwrap_or_else(|e| panic!("Promtail refuses the jobs it took one by one: {e}")), refused)
}

/// tailship on the conversion of every job it accepts, and those refused.
fn start_tailship(dir: &Path, jobs: &[&DockerJob], host: &str, push: &str) -> (Agent, BTreeMap<String, String>) {
    let convert = |set: &[&DockerJob], name: &str| {
        let (text, _) = config_of(dir, set, host, push, "tailship-positions.yaml");
        sides::convert_and_check(dir, name, &text)
    };
    let mut refused = BTreeMap::new();
    let why = convert(jobs, "probe").err();
    let mut fails = |set: &[&DockerJob]| convert(set, "probe").err();
    sides::refused_among(jobs, why, &mut fails, &mut refused);
    let rest: Vec<&DockerJob> = jobs.iter().copied().filter(|j| !refused.contains_key(&j.job.id)).collect();
    let toml = convert(&rest, "tailship").unwrap_or_else(|e| panic!("the jobs taken one by one: {e}"));
    let toml = toml.replacen("[positions]", &format!("[spool]\npath = \"{}/spool\"\n\n[positions]", dir.display()), 1);
    (Agent::start(&write_file(dir, "tailship.toml", &toml)), refused)
}

impl sides::OfJob for DockerJob {
    fn job(&self) -> &rewrite::Job {
        &self.job
    }
}

#[test]
fn the_docker_jobs_of_the_corpus_give_promtails_streams() {
    let Some(bin) = promtail::binary() else {
        eprintln!("SKIPPED: no Promtail binary in ../shared/peers");
        return;
    };
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/promtail_corpus");
    let engine = Dockerd::start();
    let all = docker_jobs::load(&corpus);
    let jobs: Vec<&DockerJob> = all.iter().filter(|j| engine.is_some() || j.shape != Shape::Discovery).collect();
    if engine.is_none() {
        eprintln!("no dockerd here: the docker_sd_configs jobs are not run, the file jobs are");
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let host = engine.as_ref().map(Dockerd::host).unwrap_or_default();
    let start = sides::now_ns();
    for j in &jobs {
        docker_jobs::write_files(j, dir, matches!(j.shape, Shape::Files { cri: true }));
    }
    let input = dir.join("in");
    if let Some(d) = &engine {
        run_containers(d, &all, &input);
    }
    let (theirs, ours) = (Recorder::start(), Recorder::start());
    let (p, p_refused) = start_promtail(&bin, dir, &jobs, &host, &theirs.base);
    let (t, t_refused) = start_tailship(dir, &jobs, &host, &ours.base);
    sides::wait_quiet(&theirs, &ours, Duration::from_secs(120));
    std::fs::write(input.join("stop"), "").unwrap();
    sides::wait_quiet(&theirs, &ours, Duration::from_secs(120));
    let window = (start, sides::now_ns());
    let outcomes = report(&jobs, &p_refused, &t_refused, (&theirs.entries(), &ours.entries()), window);
    drop(p);
    assert!(t.terminate(Duration::from_secs(15)).success());
    drop(engine);
    check(&outcomes);
}

type Outcomes = BTreeMap<String, Result<Vec<&'static str>, String>>;

/// Per job: "same", the choices it differs by, or what differs. A file
/// job's time inside the run is a read time and compares as "now"; a
/// discovery job's is Docker's and compares as it is.
fn report(
    jobs: &[&DockerJob],
    promtail_refused: &BTreeMap<String, String>,
    tailship_refused: &BTreeMap<String, String>,
    (theirs, ours): (&[Pushed], &[Pushed]),
    window: (i128, i128),
) -> Outcomes {
    let by_job = |v: &[Pushed], shape_sd: bool| compare::by_job(v, if shape_sd { (0, -1) } else { window });
    let (p_sd, t_sd, p_files, t_files) =
        (by_job(theirs, true), by_job(ours, true), by_job(theirs, false), by_job(ours, false));
    let mut out = BTreeMap::new();
    for j in jobs {
        let id = &j.job.id;
        let outcome = match (promtail_refused.get(id), tailship_refused.get(id)) {
            (Some(_), Some(_)) => Ok(vec!["both refuse"]),
            (Some(why), None) => Err(format!("Promtail refuses it, tailship runs it: {why}")),
            (None, Some(why)) => Err(format!("tailship refuses it, Promtail runs it: {why}")),
            (None, None) => {
                let (p, t) = if j.shape == Shape::Discovery { (&p_sd, &t_sd) } else { (&p_files, &t_files) };
                compared(j, p.get(id).cloned().unwrap_or_default(), t.get(id).cloned().unwrap_or_default())
            }
        };
        let shape = if j.shape == Shape::Discovery { "docker_sd_configs" } else { "files" };
        out.insert(format!("{} ({shape})", j.key()), outcome);
    }
    out
}

/// An entry of a stream is stored once for the same time and line (Loki
/// drops the copy); Promtail pushes some twice here.
fn stored(mut v: Vec<Pushed>) -> Vec<Pushed> {
    v.sort();
    v.dedup();
    v
}

/// Promtail's entries `p` and tailship's `t` of job `j` compared: the names
/// of the choices they differ by, or what differs.
fn compared(j: &DockerJob, p: Vec<Pushed>, t: Vec<Pushed>) -> Result<Vec<&'static str>, String> {
    let (mut p, mut t) = (stored(p), stored(t));
    let mut used = Vec::new();
    // Promtail resumes a container's log from the second of the last line it
    // read: reading a container again (its stream ended while it was still
    // listed), it ships that second's lines again, and a docker stage gives
    // the copies other times. Of its copies of a line, tailship's one counts
    // (else the earliest); each line of tailship's must still be Promtail's.
    // Copies are told apart without Docker's newline (the choice below).
    if j.shape == Shape::Discovery && p.len() > t.len() {
        let bare = |e: &Pushed| {
            let mut e = e.clone();
            e.line = e.line.strip_suffix('\n').unwrap_or(&e.line).to_string();
            e
        };
        let ours: std::collections::BTreeSet<Pushed> = t.iter().map(bare).collect();
        let mut seen = std::collections::BTreeSet::new();
        p.sort_by_key(|e| (!ours.contains(&bare(e)), e.ts));
        let before = p.len();
        p.retain(|e| {
            let b = bare(e);
            seen.insert((b.tenant, b.labels, b.line))
        });
        p.sort();
        if p.len() != before {
            used.push("docker-reread");
        }
    }
    // The text a container writes without a newline before it exits:
    // tailship ships it, Promtail's docker_sd_configs drop it.
    let unterminated = docker_jobs::output(&[]).unterminated;
    if j.shape == Shape::Discovery && p != t && t.iter().any(|e| e.line == unterminated) {
        t.retain(|e| e.line != unterminated);
        used.push("docker-unterminated");
    }
    // A discovery job's docker stage reads the lines Docker decoded: of its
    // choices, only the newline of a line that is Docker's JSON applies.
    if j.shape == Shape::Discovery && j.stages.iter().any(|s| s == "docker") && p != t {
        let newline = compare::CHOICES.iter().find(|c| c.name == "docker-newline").expect("a listed choice");
        let (mut only_p, only_t) = compare::unshared(p, t);
        let before = only_p.clone();
        (newline.theirs)(&mut only_p);
        if only_p != before {
            used.push(newline.name);
        }
        (p, t) = (only_p, only_t);
    }
    let stages: Vec<String> = match j.shape {
        Shape::Discovery => j.stages.iter().filter(|s| *s != "docker").cloned().collect(),
        Shape::Files { .. } => j.stages.clone(),
    };
    match compare::compare(p, t, &Kind::Files, &stages) {
        Outcome::Same => Ok(used),
        Outcome::Chosen(names) => Ok([used, names].concat()),
        Outcome::Differ(p, t) => Err(compare::diff_text(&p, &t)),
    }
}

/// Prints the figures and fails on any difference [`DELIBERATE`] does not list.
fn check(outcomes: &Outcomes) {
    let same = outcomes.values().filter(|o| matches!(o, Ok(v) if v.is_empty())).count();
    let chosen = outcomes.values().filter(|o| matches!(o, Ok(v) if !v.is_empty())).count();
    let listed: BTreeMap<&str, &str> = DELIBERATE.iter().copied().collect();
    let varies: BTreeMap<&str, &str> = VARIES.iter().copied().collect();
    let (mut unexpected, mut varied) = (Vec::new(), 0);
    for (key, o) in outcomes {
        let job = key.rsplit_once(" (").map_or(key.as_str(), |(k, _)| k);
        // Promtail's own result varies: printed either way, never failing.
        match (o, varies.get(job)) {
            (Err(diff), Some(why)) => {
                eprintln!("== {key}: varies in Promtail ({why})\n{diff}");
                varied += 1;
                continue;
            }
            (Ok(_), Some(why)) => {
                eprintln!("== {key}: gives Promtail's result this time (varies: {why})");
                continue;
            }
            _ => {}
        }
        match (o, listed.get(job)) {
            (Err(diff), Some(why)) => eprintln!("== {key}: deliberate ({why})\n{diff}"),
            (Err(diff), None) => {
                eprintln!("== {key}: DIFFERS\n{diff}");
                unexpected.push(key.clone());
            }
            (Ok(_), Some(_)) => unexpected.push(format!("{key} (listed as differing, gives Promtail's result)")),
            (Ok(v), None) if !v.is_empty() => eprintln!("== {key}: differs by our choices {v:?}"),
            (Ok(_), None) => {}
        }
    }
    eprintln!(
        "{same} of {} Docker jobs give Promtail's result; {chosen} more once our choices apply; {} differ as listed; \
         {varied} differ as Promtail varies; {} differ otherwise",
        outcomes.len(),
        DELIBERATE.len(),
        unexpected.len()
    );
    assert!(unexpected.is_empty(), "differences not listed: {unexpected:#?}");
}
