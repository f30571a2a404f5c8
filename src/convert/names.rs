//! Which names a Promtail job can ever have in its extracted map: what any
//! of its stages extracts (translated or not) and the labels its targets
//! may carry. A stage that reads a name outside this set never does
//! anything (Promtail skips it on every line): most likely a typo; the
//! conversion leaves it out and lists it by key.

use yaml_rust2::Yaml;

use super::yaml::scalar;

/// The Promtail stage names (`stage.go`); any other is refused, as Promtail does.
pub const PROMTAIL_STAGES: &[&str] = &[
    "json",
    "logfmt",
    "regex",
    "replace",
    "metrics",
    "labels",
    "labeldrop",
    "timestamp",
    "output",
    "docker",
    "cri",
    "match",
    "template",
    "tenant",
    "drop",
    "sampling",
    "limit",
    "multiline",
    "pack",
    "labelallow",
    "static_labels",
    "decolorize",
    "eventlogmessage",
    "geoip",
    "non_indexed_labels",
    "structured_metadata",
];

/// The names a job may ever extract or carry as labels; `None` when any
/// name is possible (a `labelmap` relabel rule, an `eventlogmessage` stage).
pub fn available(job: &Yaml) -> Option<Vec<String>> {
    let mut out: Vec<String> = vec!["filename".into()];
    if let Yaml::Array(statics) = &job["static_configs"] {
        for s in statics {
            keys(&s["labels"], &mut out);
        }
    }
    keys(&job["journal"]["labels"], &mut out);
    if let Yaml::Array(rules) = &job["relabel_configs"] {
        for rule in rules {
            if rule["action"].as_str().is_some_and(|a| a.eq_ignore_ascii_case("labelmap")) {
                return None;
            }
            if let Some(t) = rule["target_label"].as_str() {
                out.push(t.to_string());
            }
        }
    }
    if let Yaml::Array(stages) = &job["pipeline_stages"] {
        extracted(stages, &mut out)?;
    }
    Some(out)
}

/// The labels every target of `job` has (static ones, or a journal's): the
/// extracted map of each line starts with them.
pub fn every_target(job: &Yaml) -> Vec<String> {
    let mut out = Vec::new();
    keys(&job["journal"]["labels"], &mut out);
    if let Yaml::Array(statics) = &job["static_configs"] {
        let each: Vec<Vec<String>> = statics
            .iter()
            .map(|s| {
                let mut k = Vec::new();
                keys(&s["labels"], &mut k);
                k
            })
            .collect();
        if let Some((first, rest)) = each.split_first() {
            out.extend(first.iter().filter(|n| !n.starts_with("__") && rest.iter().all(|o| o.contains(n))).cloned());
        }
    }
    out
}

/// True when `name` is in `available` (a `geoip` stage's `geoip_*` names included).
pub fn is_available(available: &[String], name: &str) -> bool {
    available.iter().any(|n| n == name || (n == "geoip_*" && name.starts_with("geoip_")))
}

fn keys(y: &Yaml, out: &mut Vec<String>) {
    if let Yaml::Hash(h) = y {
        out.extend(h.keys().filter_map(scalar));
    }
}

/// What the stages of a list extract (into `out`); `None`: anything.
fn extracted(stages: &[Yaml], out: &mut Vec<String>) -> Option<()> {
    for st in stages {
        let Yaml::Hash(h) = st else { continue };
        for (name, body) in h {
            match name.as_str().unwrap_or("") {
                "regex" | "replace" => groups(body["expression"].as_str().unwrap_or(""), out),
                "json" => keys(&body["expressions"], out),
                "logfmt" => keys(&body["mapping"], out),
                "template" => out.extend(body["source"].as_str().map(String::from)),
                "labels" | "static_labels" | "structured_metadata" | "non_indexed_labels" => keys(body, out),
                "cri" | "docker" => out.extend(
                    ["stream", "time", "flags", "content", "log", "output", "timestamp", "tags", "attrs"]
                        .map(String::from),
                ),
                "geoip" => out.push("geoip_*".into()),
                "match" => {
                    if let Yaml::Array(inner) = &body["stages"] {
                        extracted(inner, out)?;
                    }
                }
                "eventlogmessage" => return None,
                _ => {}
            }
        }
    }
    Some(())
}

/// The names of the named groups of a regex: `(?P<name>` and `(?<name>`.
fn groups(re: &str, out: &mut Vec<String>) {
    for open in ["(?P<", "(?<"] {
        let mut rest = re;
        while let Some(at) = rest.find(open) {
            rest = &rest[at + open.len()..];
            if let Some(end) = rest.find('>') {
                out.push(rest[..end].to_string());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use yaml_rust2::YamlLoader;

    #[test]
    fn a_job_may_have_what_its_stages_extract_and_its_targets_carry() {
        let doc = YamlLoader::load_from_str(
            "static_configs: [{labels: {job: a, __path__: /x}}]\n\
             relabel_configs: [{target_label: pod}]\n\
             pipeline_stages:\n\
             - regex: {expression: '(?P<ts>\\S+) (?<lvl>\\w+)'}\n\
             - match: {selector: '{a=\"b\"}', stages: [{json: {expressions: {user: u}}}]}\n\
             - geoip: {source: ip, db: x}\n",
        )
        .unwrap();
        let a = available(&doc[0]).unwrap();
        for n in ["filename", "job", "pod", "ts", "lvl", "user", "geoip_city_name"] {
            assert!(is_available(&a, n), "{n}");
        }
        assert!(!is_available(&a, "tss"));
        let any = YamlLoader::load_from_str("relabel_configs: [{action: labelmap, regex: x}]").unwrap();
        assert_eq!(available(&any[0]), None);
    }
}
