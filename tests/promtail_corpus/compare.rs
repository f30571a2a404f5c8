//! A job's entries from each agent, compared: the tenant, labels (less the
//! test's `corpus_job`), line, structured metadata and timestamp; a
//! timestamp inside the run's window is a read (or receive) time, which the
//! two agents cannot share, and compares as "now" on both sides. Where they
//! differ only by a choice of ours (docs/promtail-differences.md), that is
//! said by name.

use std::collections::BTreeMap;

use crate::recorder::Pushed;
use crate::rewrite::Kind;

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

/// A choice of ours: its name, the jobs it applies to (by their kind and
/// stage names), and what it makes of Promtail's entries and of tailship's,
/// so that the two compare where they differ by it alone.
pub struct Choice {
    pub name: &'static str,
    pub applies: fn(&Kind, &[String]) -> bool,
    pub theirs: fn(&mut Vec<Pushed>),
    pub ours: fn(&mut Vec<Pushed>),
}

fn any(_: &Kind, _: &[String]) -> bool {
    true
}

fn with_docker(_: &Kind, stages: &[String]) -> bool {
    stages.iter().any(|s| s == "docker")
}

fn syslog(kind: &Kind, _: &[String]) -> bool {
    matches!(kind, Kind::Syslog { .. })
}

fn same(_: &mut Vec<Pushed>) {}

#[allow(clippy::ptr_arg)] // the type of every choice's function
fn strip_cr(v: &mut Vec<Pushed>) {
    for e in v {
        e.line = e.line.replace('\r', "");
        e.labels.values_mut().for_each(|v| *v = v.replace('\r', ""));
        e.metadata.values_mut().for_each(|v| *v = v.replace('\r', ""));
    }
}

/// Invalid bytes as one U+FFFD a run, on both sides (the recorder reads
/// Promtail's bytes as Loki's JSON output shows them).
#[allow(clippy::ptr_arg)] // the type of every choice's function
fn one_replacement_char(v: &mut Vec<Pushed>) {
    for e in v {
        while e.line.contains("\u{fffd}\u{fffd}") {
            e.line = e.line.replace("\u{fffd}\u{fffd}", "\u{fffd}");
        }
    }
}

#[allow(clippy::ptr_arg)] // the type of every choice's function
fn without_trailing_newline(v: &mut Vec<Pushed>) {
    for e in v.iter_mut().filter(|e| e.line.ends_with('\n')) {
        e.line.pop();
    }
}

/// Docker's parts of a long line (a line the docker stage read, with its
/// `stream`, without its `\n`) joined to what follows in the same stream,
/// at the first part's time (a part with nothing after it stays a line).
fn docker_parts_joined(v: &mut Vec<Pushed>) {
    let mut streams: BTreeMap<(String, BTreeMap<String, String>), Vec<Pushed>> = BTreeMap::new();
    for e in v.drain(..) {
        streams.entry((e.tenant.clone(), e.labels.clone())).or_default().push(e);
    }
    for (_, mut entries) in streams {
        entries.sort_by_key(|e| e.ts);
        let mut held: Option<Pushed> = None;
        for e in entries {
            let part = e.labels.contains_key("stream") && !e.line.ends_with('\n');
            let joined = match held.take() {
                Some(mut h) => {
                    h.line.push_str(&e.line);
                    h
                }
                None => e,
            };
            match part {
                true => held = Some(joined),
                false => v.push(joined),
            }
        }
        v.extend(held);
    }
}

#[allow(clippy::ptr_arg)] // the type of every choice's function
fn without_bom(v: &mut Vec<Pushed>) {
    for e in v.iter_mut().filter(|e| e.line.starts_with('\u{feff}')) {
        e.line.remove(0);
    }
}

#[allow(clippy::ptr_arg)] // the type of every choice's function
fn without_metadata(v: &mut Vec<Pushed>) {
    v.iter_mut().for_each(|e| e.metadata.clear());
}

fn without_unparsed(v: &mut Vec<Pushed>) {
    v.retain(|e| !e.labels.contains_key("syslog_unparsed"));
}

/// The choices of ours, each listed in docs/promtail-differences.md.
pub const CHOICES: &[Choice] = &[
    Choice { name: "crlf", applies: any, theirs: strip_cr, ours: same },
    Choice { name: "invalid-utf8", applies: any, theirs: one_replacement_char, ours: one_replacement_char },
    Choice { name: "docker-split-lines", applies: with_docker, theirs: docker_parts_joined, ours: same },
    Choice { name: "docker-newline", applies: with_docker, theirs: without_trailing_newline, ours: same },
    Choice { name: "syslog-bom", applies: syslog, theirs: without_bom, ours: same },
    Choice { name: "syslog-sd-metadata", applies: syslog, theirs: same, ours: without_metadata },
    Choice { name: "syslog-unparsed", applies: syslog, theirs: same, ours: without_unparsed },
];

/// An entry as compared (see the module's header).
fn seen(e: &Pushed, window: (i128, i128)) -> Pushed {
    let mut e = e.clone();
    e.labels.remove("corpus_job");
    // A label with an empty value is no label (in Loki, as in Prometheus).
    e.labels.retain(|_, v| !v.is_empty());
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

/// Promtail's entries `p` and tailship's `t` of one job of `kind` with `stages`.
/// The choices apply to the entries the two sides do not share: an entry
/// both shipped is not Docker's framing or a line of ours to undo (a stage
/// after the docker stage may put a `log` with its newline back, or output
/// a value that never had one).
pub fn compare(p: Vec<Pushed>, t: Vec<Pushed>, kind: &Kind, stages: &[String]) -> Outcome {
    if p == t {
        return Outcome::Same;
    }
    let (mut p, mut t) = unshared(p, t);
    let mut used = Vec::new();
    for c in CHOICES.iter().filter(|c| (c.applies)(kind, stages)) {
        let before = (p.clone(), t.clone());
        (c.theirs)(&mut p);
        (c.ours)(&mut t);
        p.sort();
        t.sort();
        if (&p, &t) != (&before.0, &before.1) {
            used.push(c.name);
        }
        if p == t {
            return Outcome::Chosen(used);
        }
    }
    Outcome::Differ(p, t)
}

/// The entries of `p` and of `t` the other side does not have (as many
/// times as it lacks them).
pub fn unshared(mut p: Vec<Pushed>, mut t: Vec<Pushed>) -> (Vec<Pushed>, Vec<Pushed>) {
    p.sort();
    t.sort();
    let (mut only_p, mut only_t) = (Vec::new(), Vec::new());
    let (mut a, mut b) = (p.into_iter().peekable(), t.into_iter().peekable());
    loop {
        match (a.peek(), b.peek()) {
            (Some(x), Some(y)) if x == y => {
                a.next();
                b.next();
            }
            (Some(x), Some(y)) if x < y => only_p.extend(a.next()),
            (Some(_), Some(_)) => only_t.extend(b.next()),
            (Some(_), None) => only_p.extend(a.next()),
            (None, Some(_)) => only_t.extend(b.next()),
            (None, None) => return (only_p, only_t),
        }
    }
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

/// Sorts the jobs' `outcomes` by `deliberate` (the keys of the jobs that
/// differ on purpose, and why), printing every difference: how many jobs
/// give Promtail's result, how many more do once our choices apply, and the
/// jobs that differ unlisted or are listed and do not differ.
pub fn tally(
    outcomes: &BTreeMap<String, Result<Vec<&'static str>, String>>,
    deliberate: &[(&str, &str)],
) -> (usize, usize, Vec<String>) {
    let same = outcomes.values().filter(|o| matches!(o, Ok(v) if v.is_empty())).count();
    let chosen = outcomes.values().filter(|o| matches!(o, Ok(v) if !v.is_empty())).count();
    let listed: BTreeMap<&str, &str> = deliberate.iter().copied().collect();
    let mut unexpected = Vec::new();
    for (key, o) in outcomes {
        match (o, listed.get(key.as_str())) {
            (Err(diff), Some(why)) => eprintln!("== {key}: deliberate ({why})\n{diff}"),
            (Err(diff), None) => {
                eprintln!("== {key}: DIFFERS\n{diff}");
                unexpected.push(key.clone());
            }
            (Ok(_), Some(_)) => unexpected.push(format!("{key} (listed as differing, gives Promtail's result)")),
            (Ok(_), None) => {}
        }
    }
    (same, chosen, unexpected)
}
