//! Promtail's `limit` and `cri` options through `tailship convert promtail`
//! and the real binary: `limit` with `drop: false` makes lines wait for the
//! rate (none lost), one limit for the whole job (all its files), `drop:
//! false` with `by_label_name` refused as Promtail refuses it; `cri`
//! `max_partial_lines` passing held parts on alone at the bound.

use crate::agent;
use crate::common;
use crate::scenario;

use std::process::{Command, Output};
use std::time::Duration;

use agent::{free_port, query_all_at, write_file, Agent};
use common::{bin, wait_for};

fn convert(yaml: &std::path::Path) -> Output {
    Command::new(bin()).args(["convert", "promtail"]).arg(yaml).output().unwrap()
}

/// A Promtail config of one job over `dir/*.log` with `stages`.
fn promtail(dir: &std::path::Path, push_url: &str, stages: &str) -> std::path::PathBuf {
    let yaml = format!(
        "server:\n  http_listen_address: 127.0.0.1\n  http_listen_port: {port}\nclients:\n  - url: {push_url}\n    batchwait: 100ms\npositions:\n  filename: {d}/positions.yaml\nscrape_configs:\n  - job_name: app\n    static_configs:\n      - labels:\n          job: app\n          __path__: {d}/*.log\n    pipeline_stages:\n{stages}",
        d = dir.display(),
        port = free_port(),
    );
    write_file(dir, "promtail.yaml", &yaml)
}

/// Converts `stages`, writes `files` and runs the agent until `count` lines
/// arrived (or 20 s); the lines sorted, the converted config and the agent's
/// lines dropped by `limit`.
fn run(stages: &str, files: &[(&str, &str)], count: usize) -> (Vec<String>, String, f64) {
    let r = scenario::loki_receiver();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let out = convert(&promtail(dir, &format!("{}/loki/api/v1/push", r.base), stages));
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success() && !err.contains("not translated"), "{err}");
    let toml = String::from_utf8_lossy(&out.stdout).into_owned();
    let cfg = write_file(dir, "tailship.toml", &toml);
    for (name, text) in files {
        write_file(dir, name, text);
    }
    let agent = Agent::start(&cfg);
    let got = || query_all_at(&r, "/loki/api/v1", r#"{job="app"}"#, None);
    let dropped = || agent.metric("tailship_lines_dropped_total{reason=\"limit\",source=\"app\"}");
    // Every line read is either here or dropped by the limit (parts joined count as one).
    let total = files.iter().map(|(_, t)| t.lines().count()).sum::<usize>();
    let settled = || got().len() >= count && (got().len() + dropped() as usize >= total || dropped() == 0.0);
    assert!(wait_for(Duration::from_secs(20), settled), "{:?}\n{}", got(), agent.stderr_text());
    let dropped = dropped();
    let mut lines: Vec<String> = got().into_iter().map(|e| e.line).collect();
    assert!(agent.terminate(Duration::from_secs(20)).success());
    lines.sort();
    (lines, toml, dropped)
}

#[test]
fn a_limit_without_drop_makes_lines_wait_and_loses_none() {
    let text: String = (0..30).map(|i| format!("line {i:02}\n")).collect();
    let stages = "      - limit:\n          rate: 20\n          burst: 2\n";
    let (lines, toml, dropped) = run(stages, &[("a.log", &text)], 30);
    assert!(toml.contains("drop = false"), "{toml}");
    assert_eq!(lines.len(), 30, "{lines:?}");
    assert_eq!(lines[0], "line 00");
    assert_eq!(lines[29], "line 29");
    assert_eq!(dropped, 0.0);
}

#[test]
fn a_dropping_limit_holds_for_the_whole_job_across_its_files() {
    let a: String = (0..10).map(|i| format!("a {i}\n")).collect();
    let b: String = (0..10).map(|i| format!("b {i}\n")).collect();
    let stages = "      - limit:\n          rate: 0.001\n          burst: 3\n          drop: true\n";
    let (lines, _, dropped) = run(stages, &[("a.log", &a), ("b.log", &b)], 3);
    // Promtail's one limiter per job: 3 lines in all, not 3 per file.
    assert_eq!(dropped, 17.0);
    assert_eq!(lines.len(), 3, "{lines:?}");
}

#[test]
fn a_limit_by_label_must_drop_as_promtail_says() {
    let tmp = tempfile::tempdir().unwrap();
    let stages = "      - limit:\n          rate: 5\n          by_label_name: team\n";
    let out = convert(&promtail(tmp.path(), "http://127.0.0.1:9/loki/api/v1/push", stages));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("scrape_configs[0].pipeline_stages[0].limit.drop"), "{err}");
}

#[test]
fn cri_passes_held_parts_on_alone_at_max_partial_lines() {
    let text = "2024-03-05T07:08:09Z stdout P part one \n\
                2024-03-05T07:08:09Z stderr P error part\n\
                2024-03-05T07:08:10Z stdout P part two \n\
                2024-03-05T07:08:11Z stdout F end\n";
    let stages = "      - cri:\n          max_partial_lines: 2\n";
    let (lines, toml, _) = run(stages, &[("pod.log", text)], 3);
    assert!(toml.contains("max_partial_lines = 2"), "{toml}");
    // Two held when the third part came: both went on alone, the third joined its line.
    assert_eq!(lines, vec!["error part", "part one ", "part two end"]);
}
