//! A job's entries from each agent, compared: the tenant, labels (less the
//! test's `corpus_job`), line, structured metadata and timestamp; a
//! timestamp inside the run's window is a read (or receive) time, which the
//! two agents cannot share, and compares as "now" on both sides. Where they
//! differ only by a choice of ours (docs/promtail-differences.md), that is
//! said by name.

use std::collections::BTreeMap;

use crate::recorder::Pushed;

/// How a job came out.
#[derive(Debug, PartialEq)]
pub enum Outcome {
    /// Promtail's streams exactly.
    Same,
    /// Promtail's streams once the choices named are applied to them.
    Chosen(Vec<&'static str>),
    /// Something else: Promtail's entries and tailship's, as compared.
    Differ(Vec<Pushed>, Vec<Pushed>),
}

/// A choice of ours: its name, and what a Promtail entry becomes under it.
pub struct Choice {
    pub name: &'static str,
    /// Whether it applies to a job (by its stage names).
    pub applies: fn(&[String]) -> bool,
    pub apply: fn(&mut Pushed),
}

fn any(_: &[String]) -> bool {
    true
}

fn with_docker(stages: &[String]) -> bool {
    stages.iter().any(|s| s == "docker")
}

fn strip_cr(e: &mut Pushed) {
    e.line = e.line.replace('\r', "");
    e.labels.values_mut().for_each(|v| *v = v.replace('\r', ""));
    e.metadata.values_mut().for_each(|v| *v = v.replace('\r', ""));
}

fn one_replacement_char(e: &mut Pushed) {
    while e.line.contains("\u{fffd}\u{fffd}") {
        e.line = e.line.replace("\u{fffd}\u{fffd}", "\u{fffd}");
    }
}

fn without_trailing_newline(e: &mut Pushed) {
    if e.line.ends_with('\n') {
        e.line.pop();
    }
}

/// The choices of ours that apply to every job they can (see
/// docs/promtail-differences.md, "Lines").
pub const CHOICES: &[Choice] = &[
    Choice { name: "crlf", applies: any, apply: strip_cr },
    Choice { name: "invalid-utf8", applies: any, apply: one_replacement_char },
    Choice { name: "docker-newline", applies: with_docker, apply: without_trailing_newline },
];

/// An entry as compared (see the module's header).
fn seen(e: &Pushed, window: (i128, i128)) -> Pushed {
    let mut e = e.clone();
    e.labels.remove("corpus_job");
    if e.ts >= window.0 && e.ts <= window.1 {
        e.ts = -1;
    }
    e
}

/// The entries of each job, by its `corpus_job` label ("" where none).
pub fn by_job(all: &[Pushed], window: (i128, i128)) -> BTreeMap<String, Vec<Pushed>> {
    let mut out: BTreeMap<String, Vec<Pushed>> = BTreeMap::new();
    for e in all {
        let job = e.labels.get("corpus_job").cloned().unwrap_or_default();
        out.entry(job).or_default().push(seen(e, window));
    }
    out.values_mut().for_each(|v| v.sort());
    out
}

/// Promtail's entries `p` and tailship's `t` of one job with `stages`.
pub fn compare(mut p: Vec<Pushed>, t: Vec<Pushed>, stages: &[String]) -> Outcome {
    if p == t {
        return Outcome::Same;
    }
    let mut used = Vec::new();
    for c in CHOICES.iter().filter(|c| (c.applies)(stages)) {
        let before = p.clone();
        p.iter_mut().for_each(c.apply);
        p.sort();
        if p != before {
            used.push(c.name);
        }
        if p == t {
            return Outcome::Chosen(used);
        }
    }
    Outcome::Differ(p, t)
}

/// The first differing entries of a job, for the report.
pub fn diff_text(p: &[Pushed], t: &[Pushed]) -> String {
    let only_p: Vec<&Pushed> = p.iter().filter(|e| !t.contains(e)).take(3).collect();
    let only_t: Vec<&Pushed> = t.iter().filter(|e| !p.contains(e)).take(3).collect();
    format!(
        "  {} entries from Promtail, {} from tailship\n  only Promtail's: {only_p:?}\n  only tailship's: {only_t:?}",
        p.len(),
        t.len()
    )
}

/// The names of the stages of a scrape config, nested ones too.
pub fn stage_names(stages: &yaml_rust2::Yaml, out: &mut Vec<String>) {
    for stage in stages.as_vec().into_iter().flatten() {
        for (k, v) in stage.as_hash().into_iter().flatten() {
            out.extend(k.as_str().map(str::to_string));
            stage_names(&v["stages"], out);
        }
    }
}
