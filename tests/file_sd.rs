//! `targets_from` (Promtail's `file_sd_configs`) through the real binary:
//! the files target files name, with their labels through the relabel rules;
//! a change of a target file adds and removes files without a restart; a
//! target file that does not parse keeps its previous targets.

use crate::agent;
use crate::common;

use std::io::Write;
use std::path::Path;
use std::time::Duration;

use agent::{agent_config, query_all, Agent};
use common::{wait_for, Receiver};

fn stored(r: &Receiver) -> u64 {
    r.stats()["entries"].as_u64().unwrap_or(0)
}

fn append(path: &Path, text: &str) {
    std::fs::OpenOptions::new().create(true).append(true).open(path).unwrap().write_all(text.as_bytes()).unwrap();
}

/// Writes a target file whole at once (a rename), as tools that generate them do.
fn write_targets(path: &Path, text: &str) {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, text).unwrap();
    std::fs::rename(&tmp, path).unwrap();
}

/// The lines stored for `query`, in order.
fn lines_of(r: &Receiver, query: &str) -> Vec<String> {
    query_all(r, query, None).into_iter().map(|e| e.line).collect()
}

/// A config whose one source reads what `targets_from` names, plus `extra`.
fn sd_config(dir: &Path, url: &str, targets_from: &str, extra: &str) -> std::path::PathBuf {
    let cfg = agent_config(dir, url, "PLACEHOLDER", "", extra);
    let text = std::fs::read_to_string(&cfg).unwrap().replace(
        "include = [\"PLACEHOLDER\"]\nlabels = { job = \"test\" }",
        &format!("targets_from = {targets_from}\nhost_label = false"),
    );
    std::fs::write(&cfg, text).unwrap();
    cfg
}

#[test]
fn target_files_name_the_files_and_their_changes_apply_without_a_restart() {
    let r = Receiver::start(&["--max-query-limit", "1000000"]);
    let dir = tempfile::tempdir().unwrap();
    let logs = dir.path().join("logs");
    std::fs::create_dir(&logs).unwrap();
    let sd = dir.path().join("sd");
    std::fs::create_dir(&sd).unwrap();
    for f in ["a.log", "b1.log", "bx.log", "c.log"] {
        append(&logs.join(f), &format!("{f} first\n"));
    }
    let (yml, json) = (sd.join("one.yml"), sd.join("two.json"));
    write_targets(
        &yml,
        &format!("- targets: [localhost]\n  labels: {{ __path__: {}/a.log, job: alpha }}\n", logs.display()),
    );
    let two = format!(
        r#"[{{"targets": ["localhost"], "labels": {{"__path__": "{0}/b*.log", "__path_exclude__": "{0}/bx.log", "job": "beta"}}}}]"#,
        logs.display()
    );
    write_targets(&json, &two);
    let relabel = r#"relabel = [{ source_labels = ["__meta_filepath"], regex = '.*\.json', target_label = "from", replacement = "json" }]"#;
    let targets_from =
        format!("{{ files = [\"{}/*.yml\", \"{}/*.json\"], refresh_interval = \"1m\" }}", sd.display(), sd.display());
    let cfg = sd_config(dir.path(), &r.base, &targets_from, relabel);
    let agent = Agent::start(&cfg);
    assert!(wait_for(Duration::from_secs(20), || stored(&r) >= 2), "{}", agent.stderr_text());
    assert_eq!(lines_of(&r, r#"{job="alpha"}"#), ["a.log first"]);
    assert_eq!(lines_of(&r, r#"{job="beta", from="json"}"#), ["b1.log first"]);
    let streams = common::get(&r.api("/labels")).json();
    assert!(!streams.to_string().contains("__"), "labels starting __ are removed: {streams}");

    // a.log is no target any more, c.log is one: no restart.
    write_targets(
        &yml,
        &format!("- targets: [localhost]\n  labels: {{ __path__: {}/c.log, job: gamma }}\n", logs.display()),
    );
    assert!(
        wait_for(Duration::from_secs(20), || lines_of(&r, r#"{job="gamma"}"#) == ["c.log first"]),
        "{}",
        agent.stderr_text()
    );
    assert!(wait_for(Duration::from_secs(20), || agent
        .metric("tailship_file_events_total{event=\"untargeted\",source=\"file-0\"}")
        >= 1.0));
    // Read to its end, then closed (after the idle wait of any file let go).
    let closed = "tailship_file_events_total{event=\"closed\",source=\"file-0\"}";
    assert!(wait_for(Duration::from_secs(20), || agent.metric(closed) >= 1.0), "{}", agent.stderr_text());
    append(&logs.join("a.log"), "a.log after it was untargeted\n");
    append(&logs.join("c.log"), "c.log second\n");
    assert!(
        wait_for(Duration::from_secs(20), || lines_of(&r, r#"{job="gamma"}"#).len() == 2),
        "{}",
        agent.stderr_text()
    );

    // A target file that does not parse keeps its previous targets.
    write_targets(&json, "[{\"labels\": ");
    assert!(
        wait_for(Duration::from_secs(20), || agent
            .metric("tailship_file_events_total{event=\"bad_target_file\",source=\"file-0\"}")
            >= 1.0),
        "{}",
        agent.stderr_text()
    );
    append(&logs.join("b1.log"), "b1.log second\n");
    assert!(
        wait_for(Duration::from_secs(20), || lines_of(&r, r#"{job="beta"}"#).len() == 2),
        "{}",
        agent.stderr_text()
    );
    assert_eq!(lines_of(&r, r#"{job="alpha"}"#), ["a.log first"]);
    assert!(lines_of(&r, r#"{filename=~".*bx.log"}"#).is_empty());
    assert!(agent.terminate(Duration::from_secs(10)).success());
}

#[test]
fn a_bad_targets_from_key_exits_2_naming_key_and_file() {
    let dir = tempfile::tempdir().unwrap();
    let cfg =
        sd_config(dir.path(), "http://127.0.0.1:1", "{ files = [], refrsh = \"1m\" }", "include = [\"/x/*.log\"]");
    let out = std::process::Command::new(common::bin()).args(["check", "--config"]).arg(&cfg).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains(&cfg.display().to_string()), "{err}");
    for key in ["sources[0].targets_from.refrsh", "sources[0].targets_from.files", "sources[0].include"] {
        assert!(err.contains(key), "{key}: {err}");
    }
}
