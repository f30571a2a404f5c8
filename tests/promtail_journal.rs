//! Side by side with the real Promtail 3.6.15 and its journal reader: every
//! `journal:` job of the corpus (`tests/data/promtail_corpus`, real configs)
//! and of this test's cases (`tests/data/promtail_journal`: `matches`,
//! `max_age`, `json`, relabel rules over every field Promtail offers, a
//! `multiline` stage, a job with no labels) runs in Promtail and, converted
//! by `tailship convert promtail`, in tailship, over the same journal files
//! (made by `systemd-journal-remote` from export format, see
//! `promtail_journal/entries.rs`), each agent pushing to its own recorder.
//! Per job, the tenant, labels, line, structured metadata and timestamp
//! must be Promtail's to the nanosecond, or differ by a choice of ours that
//! book/src/promtail/differences.md lists: a general one
//! (`compare::CHOICES`) or one of [`DELIBERATE`]. Any other difference, or
//! a listed one that is gone, fails the test. Prints "N of M journal jobs
//! give Promtail's result". Skips, saying so, only where the
//! `promtail-journal` binary or `systemd-journal-remote` is absent.

use crate::common;
use crate::compare;
mod entries;
use crate::inputs;
mod jobs;
// The corpus' rewriting (its `Kind`, `${VAR}` filling, Go booleans) leans on it.
use crate::recorder;
mod regressions;
use crate::rewrite;
mod sides;

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use compare::Outcome;
use recorder::Pushed;
use sides::Group;

/// Journal jobs whose result differs from Promtail's by a decision of
/// ours, each listed in book/src/promtail/differences.md: `file/job_name`, and why.
const DELIBERATE: &[(&str, &str)] = &[];

/// True where the journal can be made and read here; says why not.
fn cannot_run() -> bool {
    let journalctl = std::process::Command::new("journalctl").arg("--version").output().is_ok();
    if !Path::new(entries::REMOTE).exists() || !journalctl {
        eprintln!("SKIPPED: needs {} (Debian package systemd-journal-remote) and journalctl", entries::REMOTE);
        return true;
    }
    false
}

fn now_ns() -> i128 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_nanos() as i128
}

/// Writes each job's journal.
fn prepare(dir: &Path, jobs: &[jobs::Job]) {
    for job in jobs {
        let mut reads = inputs::Reads::default();
        inputs::gather(&job.scrape["pipeline_stages"], &mut reads);
        let built = inputs::built(&reads);
        entries::write(&jobs::journal_dir(dir, job), &entries::of(job, &built));
    }
}

/// Waits until no recorder has taken an entry for 5 s (120 s at most).
fn wait_quiet(groups: &[Group]) {
    let counts = || groups.iter().map(|g| (g.theirs.len(), g.ours.len())).collect::<Vec<_>>();
    let (mut last, mut since) = (counts(), Instant::now());
    common::wait_for(Duration::from_secs(120), || {
        let now = counts();
        if now != last {
            (last, since) = (now, Instant::now());
        }
        since.elapsed() > Duration::from_secs(5)
    });
}

#[test]
fn the_journal_jobs_of_real_promtail_configs_give_promtails_streams() {
    let Some(bin) = sides::promtail_journal() else {
        eprintln!("SKIPPED: no promtail-journal binary in ../shared/peers");
        return;
    };
    if cannot_run() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data");
    let all = jobs::load(&[data.join("promtail_corpus"), data.join("promtail_journal")]);
    prepare(dir, &all);
    let start = now_ns();
    // The labelled jobs together; each job with no labels of its own alone.
    let (alone, together): (Vec<_>, Vec<_>) = all.iter().cloned().partition(|j| j.alone);
    let mut groups = vec![sides::start(&bin, dir, together, "all")];
    for j in alone {
        let tag = j.id.clone();
        groups.push(sides::start(&bin, dir, vec![j], &tag));
    }
    wait_quiet(&groups);
    let window = (start, now_ns());
    let mut outcomes = BTreeMap::new();
    for g in &groups {
        outcomes.extend(report(g, window));
    }
    for g in groups {
        drop(g.promtail);
        if let Some(t) = g.tailship {
            assert!(t.terminate(Duration::from_secs(15)).success());
        }
    }
    check(&outcomes);
}

/// The entries of each job of group `g`, by its id.
fn by_job(g: &Group, entries: &[Pushed], window: (i128, i128)) -> BTreeMap<String, Vec<Pushed>> {
    let mut got = compare::by_job(entries, window);
    if let [only] = g.jobs.as_slice() {
        if only.alone {
            got = BTreeMap::from([(only.id.clone(), got.remove("").unwrap_or_default())]);
        }
    }
    got
}

/// Per job of `g`: its key (`file/job_name`) and what came out.
fn report(g: &Group, window: (i128, i128)) -> BTreeMap<String, Result<Vec<&'static str>, String>> {
    let theirs = by_job(g, &g.theirs.entries(), window);
    let ours = by_job(g, &g.ours.entries(), window);
    let mut out = BTreeMap::new();
    for j in &g.jobs {
        let key = format!("{}/{}", j.config, j.name);
        let outcome = match (g.promtail_refused.get(&j.id), g.tailship_refused.get(&j.id)) {
            (Some(_), Some(_)) => Ok(vec!["both refuse"]),
            (Some(why), None) => Err(format!("Promtail refuses it, tailship runs it: {why}")),
            (None, Some(why)) => Err(format!("tailship refuses it, Promtail runs it: {why}")),
            (None, None) => {
                let p = theirs.get(&j.id).cloned().unwrap_or_default();
                // Every labelled job reads entries: an empty result would compare nothing.
                assert!(j.alone || !p.is_empty(), "{}/{}: Promtail shipped nothing", j.config, j.name);
                let t = ours.get(&j.id).cloned().unwrap_or_default();
                let mut stages = Vec::new();
                compare::stage_names(&j.scrape["pipeline_stages"], &mut stages);
                match compare::compare(p, t, &rewrite::Kind::Files, &stages) {
                    Outcome::Same => Ok(Vec::new()),
                    Outcome::Chosen(names) => Ok(names),
                    Outcome::Differ(p, t) => Err(compare::diff_text(&p, &t)),
                }
            }
        };
        out.insert(key, outcome);
    }
    out
}

/// Prints the figures and fails on any difference [`DELIBERATE`] does not list.
fn check(outcomes: &BTreeMap<String, Result<Vec<&'static str>, String>>) {
    let (same, chosen, unexpected) = compare::tally(outcomes, DELIBERATE);
    eprintln!(
        "{same} of {} journal jobs give Promtail's result; {chosen} more once our general choices apply; {} differ \
         as listed; {} differ otherwise",
        outcomes.len(),
        DELIBERATE.len(),
        unexpected.len()
    );
    assert!(unexpected.is_empty(), "differences not listed: {unexpected:#?}");
}
