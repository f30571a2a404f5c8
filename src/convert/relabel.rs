//! A Promtail job's `relabel_configs`.
//!
//! A file job's rules (and a discovery job's) become the source's `relabel`
//! list as they are ([`as_is`]): tailship applies Prometheus relabelling to
//! each file's labels. A journal job's rules become the journal source's
//! `relabel` list as they are too (it offers every journal field as
//! `__journal_<field>`, as Promtail does), unless all of them do what the
//! source does without rules, which costs nothing per entry:
//! - a fixed label (`target_label` and `replacement`, no `source_labels`)
//!   becomes a source label;
//! - the journal fields Promtail users relabel (`__journal__systemd_unit` to
//!   `unit`, `__journal_priority_keyword` to `level`) are labels the journal
//!   source adds by itself (`unit_label = "systemd_unit"`, `level_label`);
//! - `keep` of journal units by a list of names becomes journal `matches`.

use super::render::Val;
use super::yaml::{list, Map, Report};
use crate::config::RelabelConfig;
use crate::util::is_valid_label_name;
use yaml_rust2::Yaml;

/// What a job's relabel rules become.
#[derive(Debug, Default)]
pub struct Relabel {
    pub labels: Vec<(String, String)>,
    pub matches: Vec<String>,
    /// Built-in journal labels a rule asked for (`unit`, `host`, `level`).
    pub builtin: Vec<String>,
    /// The rules as they are, for the journal source's `relabel` (when
    /// some rule is not one of the above).
    pub rules: Vec<Val>,
}

/// The journal fields whose relabelling tailship's journal source does itself.
/// (`__journal__hostname` to `host` is not one: the source's `host` falls
/// back to this machine's name, Promtail's label is the entry's only.)
const BUILTIN: &[(&str, &str)] = &[("__journal__systemd_unit", "unit"), ("__journal_priority_keyword", "level")];

/// Converts the rules of a journal job at `key`: as source labels, journal
/// matches and built-in labels when each rule is one of those, else as they are.
pub fn journal(key: &str, rules: Option<&Yaml>, r: &mut Report) -> Relabel {
    let mut dry = Report::default();
    native_journal(key, rules, &mut dry);
    if dry.untranslated.is_empty() {
        return native_journal(key, rules, r);
    }
    if reads_job_labels(rules) {
        r.note(
            key,
            "Promtail's journal rules see the job's labels beside the journal fields; tailship's see the \
             journal fields only, and adds the job's labels after them",
        );
    }
    Relabel { rules: as_is(key, rules, &[], &[], r), ..Relabel::default() }
}

/// Whether a journal job's rules read or drop labels other than the
/// `__journal_*` fields (the job's own labels, in Promtail).
fn reads_job_labels(rules: Option<&Yaml>) -> bool {
    rules.and_then(Yaml::as_vec).into_iter().flatten().any(|rule| {
        let action = rule["action"].as_str().unwrap_or("replace").to_ascii_lowercase();
        let other_source = rule["source_labels"]
            .as_vec()
            .into_iter()
            .flatten()
            .filter_map(Yaml::as_str)
            .any(|l| !l.starts_with("__journal_"));
        other_source || matches!(action.as_str(), "labeldrop" | "labelkeep" | "labelmap")
    })
}

/// [`journal`] without relabel rules: what each rule does is done otherwise,
/// or the rule is reported.
fn native_journal(key: &str, rules: Option<&Yaml>, r: &mut Report) -> Relabel {
    let mut out = Relabel::default();
    for (i, rule) in list(key, rules, r).iter().enumerate() {
        let rk = format!("{key}[{i}]");
        let mut m = Map::new(rk.clone(), rule, r);
        let sources = m.texts("source_labels", r);
        let action = m.text("action", r).unwrap_or_else(|| "replace".into());
        let target = m.text("target_label", r);
        let regex = m.text("regex", r);
        let replacement = m.text("replacement", r);
        let separator = m.text("separator", r);
        let default_regex = regex.as_deref().is_none_or(|x| x == "(.*)");
        let default_replacement = replacement.as_deref().is_none_or(|x| x == "$1" || x == "${1}");
        let done = match (action.as_str(), sources.as_slice(), target.as_deref()) {
            ("replace", [], Some(t)) if default_regex && !replacement.as_deref().unwrap_or("$").contains('$') => {
                if is_valid_label_name(t) {
                    out.labels.retain(|(l, _)| l != t);
                    out.labels.push((t.to_string(), replacement.unwrap_or_default()));
                    Ok(())
                } else {
                    Err(format!("`{t}` is not a valid label name"))
                }
            }
            ("replace", [s], Some(t)) if default_regex && default_replacement => {
                match BUILTIN.iter().find(|(field, _)| field == s) {
                    Some((_, label)) if *label == t => {
                        out.builtin.push(t.to_string());
                        Ok(())
                    }
                    Some((_, label)) => Err(format!(
                        "tailship's journal source labels `{s}` as `{label}` by itself; it cannot be called `{t}`"
                    )),
                    None => Err(format!("tailship's journal source has no `{s}`; it adds unit and level only")),
                }
            }
            ("keep", [s], _) if s == "__journal__systemd_unit" && separator.is_none() => {
                match regex.as_deref().and_then(literals) {
                    Some(units) => {
                        out.matches.extend(units.into_iter().map(|u| format!("_SYSTEMD_UNIT={u}")));
                        Ok(())
                    }
                    None => Err("only a list of unit names (a\\.service|b\\.service) becomes journal matches".into()),
                }
            }
            (a, ..) if !matches!(a, "replace" | "keep" | "drop") => {
                Err(format!("the `{a}` action has no tailship equivalent"))
            }
            _ => Err("tailship has no relabelling: this rule has no equivalent".into()),
        };
        if let Err(why) = done {
            r.skip(rk, why);
            continue;
        }
        m.ignore("modulus");
        m.finish(r, "no tailship equivalent");
    }
    out
}

/// The `__path__` a static target gets from the job's `rules` (Promtail
/// applies them to a target's labels before it reads `__path__`): the rules
/// run over the target's `labels` (with `__address__`, its target), quietly
/// (a rule that does not compile is reported where the rules are converted).
pub fn path_of_target(rules: Option<&Yaml>, labels: &[(String, String)], target: Option<&str>) -> Option<String> {
    let rules = rules?.as_vec()?;
    let text = |y: &Yaml, k: &str| y[k].as_str().map(str::to_string).or_else(|| y[k].as_i64().map(|i| i.to_string()));
    let configs: Vec<RelabelConfig> = rules
        .iter()
        .map(|y| RelabelConfig {
            source_labels: y["source_labels"]
                .as_vec()
                .into_iter()
                .flatten()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect(),
            separator: text(y, "separator"),
            regex: text(y, "regex"),
            target_label: text(y, "target_label"),
            replacement: text(y, "replacement"),
            modulus: y["modulus"].as_i64().and_then(|m| u64::try_from(m).ok()),
            action: text(y, "action"),
        })
        .collect();
    let compiled = crate::relabel::Rules::compile(&configs).ok()?;
    let mut set: crate::relabel::Labels = labels.iter().cloned().collect();
    if let Some(t) = target {
        set.entry("__address__".into()).or_insert_with(|| t.to_string());
    }
    if !compiled.apply(&mut set) {
        return None;
    }
    set.remove("__path__").filter(|p| !p.is_empty())
}

/// The rules at `key` as a tailship `relabel` list, each checked as
/// tailship compiles it; a rule it would refuse, or that reads one of the
/// `unavailable` labels (name, why), is reported and left out.
pub fn as_is(
    key: &str,
    rules: Option<&Yaml>,
    unavailable: &[(&str, &str)],
    taken: &[usize],
    r: &mut Report,
) -> Vec<Val> {
    let mut out = Vec::new();
    for (i, rule) in list(key, rules, r).iter().enumerate() {
        if taken.contains(&i) {
            continue;
        }
        let rk = format!("{key}[{i}]");
        let mut m = Map::new(rk.clone(), rule, r);
        let cfg = RelabelConfig {
            source_labels: m.texts("source_labels", r),
            separator: m.text("separator", r),
            regex: m.text("regex", r),
            target_label: m.text("target_label", r),
            replacement: m.text("replacement", r),
            modulus: None,
            action: m.text("action", r),
        };
        let modulus = m.text("modulus", r);
        let cfg = match modulus.as_deref().map(str::parse::<u64>) {
            Some(Err(_)) => {
                r.skip(format!("{rk}.modulus"), "not a whole number: the rule is left out");
                m.finish(r, "no tailship equivalent");
                continue;
            }
            Some(Ok(n)) => RelabelConfig { modulus: Some(n), ..cfg },
            None => cfg,
        };
        m.finish(r, "no tailship equivalent");
        if let Some((label, why)) = unavailable.iter().find(|(l, _)| cfg.source_labels.iter().any(|s| s == l)) {
            r.skip(rk, format!("`{label}`: {why}; the rule is left out"));
            continue;
        }
        if let Err(e) = crate::relabel::Rule::compile(&cfg) {
            r.skip(format!("{rk}.{}", e.field), format!("{e}: the rule is left out"));
            continue;
        }
        let mut t: Vec<(String, Val)> = Vec::new();
        if !cfg.source_labels.is_empty() {
            t.push(("source_labels".into(), Val::strs(&cfg.source_labels)));
        }
        for (k, v) in [
            ("separator", &cfg.separator),
            ("regex", &cfg.regex),
            ("target_label", &cfg.target_label),
            ("replacement", &cfg.replacement),
        ] {
            if let Some(v) = v {
                t.push((k.into(), Val::str(v)));
            }
        }
        if let Some(n) = cfg.modulus {
            t.push(("modulus".into(), Val::Int(n.min(i64::MAX as u64) as i64)));
        }
        if let Some(a) = &cfg.action {
            t.push(("action".into(), Val::str(a.to_ascii_lowercase())));
        }
        out.push(Val::Table(t));
    }
    out
}

/// `a\.service|b\.service` as its literal alternatives.
fn literals(re: &str) -> Option<Vec<String>> {
    let re = re.strip_prefix('(').and_then(|r| r.strip_suffix(')')).unwrap_or(re);
    re.split('|').map(literal).collect()
}

/// A regex that is a literal (with `\.` and other escaped punctuation) as its text.
fn literal(re: &str) -> Option<String> {
    let mut out = String::new();
    let mut chars = re.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                let n = chars.next()?;
                if n.is_ascii_alphanumeric() {
                    return None;
                }
                out.push(n);
            }
            '.' | '*' | '+' | '?' | '(' | ')' | '[' | ']' | '{' | '}' | '|' | '^' | '$' => return None,
            c => out.push(c),
        }
    }
    (!out.is_empty()).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_of_unit_names_become_literals() {
        assert_eq!(
            literals(r"(nginx\.service|sshd\.service)"),
            Some(vec!["nginx.service".into(), "sshd.service".into()])
        );
        assert_eq!(literals(r"nginx.*"), None);
    }
}
