//! A config copied from Promtail's `/config` page (the running config with
//! every default written out) converts as the original does: the real
//! Promtail 3.6.15 (from `../shared/peers`) runs each config of
//! `tests/data/promtail_configs`, its page is fetched and converted, and the
//! result must equal the original's conversion: the same tailship config, the
//! same keys listed, nothing of Promtail's defaults. Skips, saying so, where
//! the Promtail binary is absent.

use crate::agent;
use crate::common;
use crate::promtail;
use crate::rewrite;

use std::path::{Path, PathBuf};
use std::process::Command;

use agent::{free_port, write_file};
use common::bin;
use promtail::Promtail;

/// `tests/data/promtail_configs/NAME` with its placeholders filled: `PORT`
/// (Promtail's own server), `PORT2` and `PORT3` (receivers), `DIR`.
fn corpus_config(name: &str, dir: &Path, port: u16) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/promtail_configs").join(name);
    let text = std::fs::read_to_string(&path).unwrap();
    text.replace("PORT2", &free_port().to_string())
        .replace("PORT3", &free_port().to_string())
        .replace("PORT", &port.to_string())
        .replace("DIR", &dir.display().to_string())
}

/// `tailship convert promtail FILE`: exit code, config, and the report on
/// stderr with the file's name taken out.
fn convert(file: &Path) -> (Option<i32>, String, Vec<String>) {
    let out =
        Command::new(bin()).args(["convert", "promtail"]).arg(file).env_remove("JAEGER_AGENT_HOST").output().unwrap();
    let name = file.display().to_string();
    let report = String::from_utf8_lossy(&out.stderr).lines().map(|l| l.replace(&name, "FILE")).collect();
    (out.status.code(), String::from_utf8_lossy(&out.stdout).into_owned(), report)
}

#[test]
fn configs_copied_from_promtails_config_page_convert_as_their_originals() {
    let names = ["file_pipeline.yaml", "syslog_push.yaml", "docker_json.yaml", "two_clients_cri.yaml"];
    let mut same = 0;
    for name in names {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        let port = free_port();
        let original = write_file(dir, "original.yaml", &corpus_config(name, dir, port));
        let Some(mut promtail) = Promtail::start(dir, &original, port) else { return };
        let page = write_file(dir, "page.yaml", &promtail.config_page());
        drop(promtail);

        let (code, toml, report) = convert(&original);
        assert_eq!(code, Some(0), "{name}: {report:?}");
        let (page_code, page_toml, mut page_report) = convert(&page);
        assert_eq!(page_code, Some(0), "{name}: the page converts too: {page_report:?}");
        // The page hides secrets: that is said, by key, and is the one
        // difference (the page's reads it from a variable).
        let hidden = page_report.iter().position(|l| l.contains("hides secrets"));
        let page_toml = match hidden {
            Some(i) => {
                page_report.remove(i);
                page_toml.replace("password = \"${SECRET_CLIENTS_0_BASIC_AUTH_PASSWORD}\"", "password = \"p\"")
            }
            None => page_toml,
        };
        let parse = |t: &str| t.parse::<toml::Table>().unwrap_or_else(|e| panic!("{name}: {e}\n{t}"));
        assert_eq!(
            parse(&page_toml),
            parse(&toml),
            "{name}: the page's conversion\n{page_toml}\nthe original's\n{toml}"
        );
        assert_eq!(page_report, report, "{name}: the same keys listed and noted");
        // And it runs: `check` takes it (no empty tenant, no tracing to nowhere).
        let cfg = write_file(dir, "page.toml", &page_toml);
        let check = Command::new(bin()).args(["check", "--config"]).arg(&cfg).output().unwrap();
        assert!(check.status.success(), "{name}: {}", String::from_utf8_lossy(&check.stderr));
        // Nor does its effective config show keys nobody set.
        assert!(!String::from_utf8_lossy(&check.stdout).contains("alerts = []"), "{name}");
        same += 1;
    }
    eprintln!("{same} of {} /config pages convert as their originals", names.len());
}

/// A corpus config made runnable here: references filled, Promtail's server,
/// positions and listeners on loopback and in `dir`, clients pushing to a
/// closed loopback port (the page shows the config, nothing is sent).
fn runnable(text: &str, dir: &Path, port: u16) -> String {
    use yaml_rust2::{Yaml, YamlEmitter, YamlLoader};
    let key = |s: &str| Yaml::String(s.into());
    let load = |s: &str| YamlLoader::load_from_str(s).unwrap().remove(0);
    let mut doc = load(&rewrite::fill_references(text));
    rewrite::go_booleans(&mut doc);
    let Some(top) = doc.as_mut_hash() else { return String::new() };
    let mut server = top.get(&key("server")).and_then(Yaml::as_hash).cloned().unwrap_or_default();
    for (k, v) in load(&format!("{{ http_listen_address: 127.0.0.1, http_listen_port: {port}, grpc_listen_port: 0 }}"))
        .as_hash()
        .unwrap()
    {
        server.insert(k.clone(), v.clone());
    }
    top.insert(key("server"), Yaml::Hash(server));
    let mut positions = top.get(&key("positions")).and_then(Yaml::as_hash).cloned().unwrap_or_default();
    positions.insert(key("filename"), key(&format!("{}/positions.yaml", dir.display())));
    top.insert(key("positions"), Yaml::Hash(positions));
    let url = key("http://127.0.0.1:9/loki/api/v1/push");
    if let Some(Yaml::Hash(c)) = top.get_mut(&key("client")) {
        c.insert(key("url"), url.clone());
    } else {
        let mut clients = top.get(&key("clients")).and_then(Yaml::as_vec).cloned().unwrap_or_default();
        if clients.is_empty() {
            clients.push(Yaml::Hash(Default::default()));
        }
        clients.iter_mut().filter_map(Yaml::as_mut_hash).for_each(|c| {
            c.insert(key("url"), url.clone());
        });
        top.insert(key("clients"), Yaml::Array(clients));
    }
    for sc in top.get_mut(&key("scrape_configs")).and_then(Yaml::as_mut_vec).into_iter().flatten() {
        let Some(sc) = sc.as_mut_hash() else { continue };
        for listener in ["syslog", "gelf"] {
            if let Some(Yaml::Hash(l)) = sc.get_mut(&key(listener)) {
                l.insert(key("listen_address"), key(&format!("127.0.0.1:{}", free_port())));
            }
        }
        if let Some(Yaml::Hash(push)) = sc.get_mut(&key("loki_push_api")) {
            let s =
                format!("{{ http_listen_address: 127.0.0.1, http_listen_port: {}, grpc_listen_port: 0 }}", free_port());
            push.insert(key("server"), load(&s));
        }
    }
    let mut out = String::new();
    YamlEmitter::new(&mut out).dump(&doc).unwrap();
    out + "\n"
}

/// The report as a set: its lines less their numbers (the page lists keys
/// in its own order).
fn report_set(report: &[String]) -> std::collections::BTreeSet<String> {
    report
        .iter()
        .map(|l| l.trim_start().trim_start_matches(|c: char| c.is_ascii_digit()).trim_start_matches(". ").to_string())
        .filter(|l| !l.starts_with('#'))
        .collect()
}

/// Secrets the page hides, written the same on both sides.
fn without_secrets(toml: &str) -> String {
    let keys = ["password = \"", "bearer_token = \"", "client_secret = \"", "token = \""];
    let mut out = toml.to_string();
    for k in keys {
        let mut from = 0;
        while let Some(at) = out[from..].find(k).map(|i| from + i + k.len()) {
            let end = out[at..].find('"').map_or(out.len(), |i| at + i);
            out.replace_range(at..end, "p");
            from = at + 1;
        }
    }
    out
}

enum PageOutcome {
    Same,
    /// Promtail refuses the config or shows no page for it: the last line
    /// it logged.
    Refused(String),
    /// Both conversions, shown.
    Differs(String),
}

/// Promtail runs the corpus config at `path` (made runnable here); its
/// `/config` page and the original go through `tailship convert promtail`.
/// A config Promtail refuses is tried again once, with ports of its own, so
/// a port another test took meanwhile is not counted as a refusal.
fn page_outcome(bin: &Path, path: &Path) -> PageOutcome {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let attempt = || {
        let port = free_port();
        let text = runnable(&std::fs::read_to_string(path).unwrap(), dir, port);
        let doc = yaml_rust2::YamlLoader::load_from_str(&text).unwrap().remove(0);
        if doc["server"]["disable"].as_bool() == Some(true) {
            return Err("server.disable: true, so no page".to_string());
        }
        let original = write_file(dir, "original.yaml", &text);
        Promtail::try_start(bin, dir, &original, port)
            .and_then(|mut p| p.try_config_page())
            .map(|page| (original, page))
    };
    let (original, page) = match attempt().or_else(|_| attempt()) {
        Ok(both) => both,
        Err(log) => return PageOutcome::Refused(log.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("").into()),
    };
    let page = write_file(dir, "page.yaml", &page);
    let (code, toml, report) = convert(&original);
    let (page_code, page_toml, page_report) = convert(&page);
    let page_report: Vec<String> = page_report.into_iter().filter(|l| !l.contains("hides secrets")).collect();
    let parse = |t: &str| t.parse::<toml::Table>().ok();
    if code == page_code
        && parse(&without_secrets(&toml)) == parse(&without_secrets(&page_toml))
        && report_set(&report) == report_set(&page_report)
    {
        PageOutcome::Same
    } else {
        PageOutcome::Differs(format!("{toml}\n{report:#?}\n-- its page:\n{page_toml}\n{page_report:#?}"))
    }
}

/// Corpus configs Promtail 3.6 refuses (keys of other versions or of Loki,
/// a string where a boolean goes, two clients without names) or runs
/// without a page (`server.disable`).
const PROMTAIL_REFUSES: &[&str] = &[
    // `limits_config.maxline_size`, a key Promtail 3.6 does not know.
    "290298661_pixel_fleet_observability_loki_promtail_config.yaml",
    "augustoliks_lab_loki_promtail_config.yaml",
    "doganconsult_shahin_production_promtail_promtail_config.yaml",
    "gabee01_hassio_monitoring_stack_promtail.yaml",
    "gabee01_hassio_prometheus_promtail_promtail.yaml",
    "gabysbrain_machine_config_promtail.yaml",
    "gerritcodereview_gerrit_monitoring_promtail_promtaillocalconfig.yaml",
    "mateussouzaweb_hub_promtail_promtail.yaml",
    "mykalmachon_observable_nginx_promtail_config.yaml",
    "runalsh_observability_stack_etc_promtail_config.yaml",
];

/// Corpus configs whose page does not convert as the original, and why.
const PAGE_DIFFERS: &[(&str, &str)] = &[];

#[test]
fn the_corpus_copied_from_promtails_config_page_converts_as_the_originals() {
    let Some(bin) = promtail::binary() else {
        eprintln!("no Promtail binary in ../shared/peers: skipping");
        return;
    };
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/promtail_corpus");
    let mut names: Vec<String> = std::fs::read_dir(&corpus)
        .unwrap()
        .filter_map(|e| e.unwrap().file_name().into_string().ok())
        .filter(|n| n.ends_with(".yaml"))
        .collect();
    names.sort();
    // Each config apart (its own directory and ports); a few at once.
    let outcomes = common::run_parallel(&names, 3, |_, name| page_outcome(&bin, &corpus.join(name)));
    let (mut same, mut refused, mut differ) = (0, Vec::new(), Vec::new());
    for (name, outcome) in names.iter().zip(outcomes) {
        match outcome {
            PageOutcome::Same => same += 1,
            PageOutcome::Refused(why) => refused.push(format!("{name}: {why}")),
            PageOutcome::Differs(shown) => {
                eprintln!("== {name}\n{shown}");
                differ.push(name.clone());
            }
        }
    }
    eprintln!(
        "{same} of {} /config pages convert as their originals ({} configs Promtail 3.6 refuses or shows no page \
         for: {refused:#?})",
        names.len() - refused.len(),
        refused.len()
    );
    let refused_names: Vec<&str> = refused.iter().filter_map(|r| r.split(':').next()).collect();
    assert_eq!(refused_names, PROMTAIL_REFUSES, "configs Promtail refuses or shows no page for");
    let listed: Vec<String> = PAGE_DIFFERS.iter().map(|(n, _)| n.to_string()).collect();
    assert_eq!(differ, listed, "pages that do not convert as their originals");
}

/// Promtail (with `args`) on `yaml` (its `PORT` filled in), in `dir`: the
/// original and its `/config` page, written as files.
fn original_and_page(dir: &Path, yaml: &str, args: &[&str]) -> Option<(std::path::PathBuf, std::path::PathBuf)> {
    let bin = promtail::binary()?;
    let port = free_port();
    let original = write_file(dir, "original.yaml", &yaml.replace("PORT", &port.to_string()));
    let mut p = Promtail::try_start_args(&bin, dir, &original, port, args).unwrap_or_else(|e| panic!("{e}"));
    let page = write_file(dir, "page.yaml", &p.config_page());
    Some((original, page))
}

/// A Promtail config tailing `dir/*.log` as job `app` (its static labels
/// `labels` before `__path__`), with `clients` after `clients:` and, when
/// there are any, `rules` (YAML lines) as its relabel_configs.
fn app_yaml(dir: &Path, clients: &str, labels: &str, rules: &str) -> String {
    let d = dir.display();
    let mut yaml = format!(
        "server: {{ http_listen_address: 127.0.0.1, http_listen_port: PORT, grpc_listen_port: 0 }}\n\
         positions: {{ filename: {d}/positions.yaml }}\nclients:{clients}\nscrape_configs:\n  - job_name: app\n    \
         static_configs: [{{ targets: [localhost], labels: {{ job: app, {labels}__path__: {d}/*.log }} }}]\n"
    );
    if !rules.is_empty() {
        yaml.push_str(&format!("    relabel_configs:\n{rules}\n"));
    }
    yaml
}

/// The `clients` of [`app_yaml`]: one, pushing nowhere.
const ONE_CLIENT: &str = " [{ url: http://127.0.0.1:9/loki/api/v1/push }]";

/// A conversion's TOML and report.
type Converted = (String, Vec<String>);

/// Promtail run on `yaml` (with `args`), and the original and its config
/// page converted (the page's exit 0): the page, the original's TOML and
/// report, the page's; `None` (said) without a Promtail binary.
fn both_converted(dir: &Path, yaml: &str, args: &[&str]) -> Option<(PathBuf, Converted, Converted)> {
    let Some((original, page)) = original_and_page(dir, yaml, args) else {
        eprintln!("no Promtail binary in ../shared/peers: skipping");
        return None;
    };
    let (_, toml, report) = convert(&original);
    let (code, page_toml, page_report) = convert(&page);
    assert_eq!(code, Some(0), "{page_report:?}");
    Some((page, (toml, report), (page_toml, page_report)))
}

/// `tailship check` of `toml` (written in `dir`) with `env`: success, stderr.
fn check(dir: &Path, toml: &str, env: &[(&str, &str)]) -> (bool, String) {
    let cfg = write_file(dir, "checked.toml", toml);
    let out = Command::new(bin()).args(["check", "--quiet", "--config"]).arg(&cfg).envs(env.iter().copied()).output();
    let out = out.unwrap();
    (out.status.success(), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn a_secret_the_page_hides_is_read_from_a_variable_that_check_says_is_unset() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let clients = "\n  - url: http://127.0.0.1:9/loki/api/v1/push\n    basic_auth: { username: u, password: pw-one }\n  \
                   - url: http://127.0.0.1:9/loki/api/v1/push\n    authorization: { type: Bearer, credentials: tok-two }";
    let yaml = app_yaml(dir, clients, "", "");
    let Some((page, (toml, _), (page_toml, report))) = both_converted(dir, &yaml, &[]) else { return };
    assert!(std::fs::read_to_string(&page).unwrap().contains("<secret>"), "the page hides them");
    assert!(!page_toml.contains("<secret>"), "no stand-in for a secret:\n{page_toml}");
    let vars = [
        ("clients[0].basic_auth.password", "SECRET_CLIENTS_0_BASIC_AUTH_PASSWORD", "pw-one"),
        ("clients[1].authorization.credentials", "SECRET_CLIENTS_1_AUTHORIZATION_CREDENTIALS", "tok-two"),
    ];
    for (key, var, _) in vars {
        assert!(page_toml.contains(&format!("\"${{{var}}}\"")), "{var}:\n{page_toml}");
        assert!(report.iter().any(|l| l.contains(key) && l.contains(var)), "a note names {key}: {report:?}");
    }
    // `check` says each is unset, by key; set, the config is the original's.
    let (ok, said) = check(dir, &page_toml, &[]);
    assert!(!ok);
    for (key, var) in [("clients[0].basic_auth.password", vars[0].1), ("clients[1].bearer_token", vars[1].1)] {
        assert!(said.contains(key) && said.contains(&format!("{var} is not set")), "{said}");
    }
    let env: Vec<(&str, &str)> = vars.iter().map(|(_, var, value)| (*var, *value)).collect();
    let (ok, said) = check(dir, &page_toml, &env);
    assert!(ok, "{said}");
    let filled = vars.iter().fold(page_toml, |t, (_, var, value)| t.replace(&format!("${{{var}}}"), value));
    let parse = |t: &str| t.parse::<toml::Table>().unwrap();
    assert_eq!(parse(&filled), parse(&toml));
}

#[test]
fn a_page_of_promtail_run_with_expand_env_converts_as_the_original() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let rules = r#"      - { source_labels: [__path__], regex: '.*/(.*)\.log', target_label: file, replacement: '${1}' }
      - { source_labels: [__path__], regex: '.*/(.*)\.log', target_label: kept, replacement: '$1' }
      - { source_labels: [job], separator: ';', regex: '(.*)', target_label: team, replacement: '$1', action: Replace }
      - { source_labels: [__path__], regex: '.*/(.*)\.log', target_label: tagged, replacement: '${1}-x' }"#;
    let yaml = app_yaml(dir, ONE_CLIENT, "", rules);
    let args = ["-config.expand-env=true"];
    let Some((_, (toml, report), (page_toml, page_report))) = both_converted(dir, &yaml, &args) else { return };
    // The page shows `${1}-x` as `-x`: that rule is noted by key, and is
    // the one difference; `${1}` alone (left out, the default) and the
    // defaults written out convert as the original's.
    let key = "scrape_configs[0].relabel_configs[3].replacement";
    let (noted, rest): (Vec<String>, Vec<String>) = page_report.into_iter().partition(|l| l.contains(key));
    assert_eq!(noted.len(), 1, "{noted:?} {rest:?}");
    assert!(noted[0].contains("-config.expand-env"), "{}", noted[0]);
    assert_eq!(report_set(&rest), report_set(&report));
    let parse = |t: &str| t.parse::<toml::Table>().unwrap();
    assert_eq!(
        parse(&page_toml.replace("replacement = \"-x\"", "replacement = \"${1}-x\"")),
        parse(&toml),
        "the page's conversion\n{page_toml}\nthe original's\n{toml}"
    );
}

#[test]
fn a_relabel_rules_empty_separator_and_regex_the_page_leaves_out_convert_as_written() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let rules = r#"      - { source_labels: [job, team], separator: '', target_label: jobteam }
      - { source_labels: [team], action: drop, regex: '' }
      - { source_labels: [team], action: keep, regex: 'a|b' }"#;
    let yaml = app_yaml(dir, ONE_CLIENT, "team: a, ", rules);
    let Some((_, (toml, report), (page_toml, page_report))) = both_converted(dir, &yaml, &[]) else { return };
    assert!(toml.contains("separator = \"\"") && toml.contains("regex = \"\""), "{toml}");
    let parse = |t: &str| t.parse::<toml::Table>().unwrap();
    assert_eq!(parse(&page_toml), parse(&toml), "the page's conversion\n{page_toml}\nthe original's\n{toml}");
    assert_eq!(report_set(&page_report), report_set(&report));
}
