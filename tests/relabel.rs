//! Relabel rules on a file source, through the real binary: the labels each
//! file ships with, a file the rules drop is never read, and bad rules exit 2.

use crate::agent;
use crate::common;

use std::process::Command;
use std::time::Duration;

use agent::{agent_config, query_all, Agent};
use common::{bin, wait_for, Receiver};

const BIG: &[&str] = &["--max-query-limit", "1000000"];

#[test]
fn relabel_rules_set_each_files_labels_and_a_dropped_file_is_never_opened() {
    let r = Receiver::start(BIG);
    let dir = tempfile::tempdir().unwrap();
    let logs = dir.path().join("logs");
    for app in ["billing", "auth"] {
        std::fs::create_dir_all(logs.join(app)).unwrap();
        std::fs::write(logs.join(app).join("server.log"), format!("{app} one\n{app} two\n")).unwrap();
    }
    std::fs::write(logs.join("auth").join("debug.log"), "never shipped\n").unwrap();
    let rules = r#"
relabel = [
  { source_labels = ["__path__"], regex = '.*/debug\.log', action = "drop" },
  { source_labels = ["__path__"], regex = '.*/logs/([a-z]+)/(\w+)\.log', target_label = "app", replacement = "$1" },
  { source_labels = ["app", "job"], separator = "-", target_label = "service", replacement = "${1}" },
  { source_labels = ["app"], target_label = "APP_UPPER", action = "uppercase" },
  { source_labels = ["app"], target_label = "shard", action = "hashmod", modulus = 4 },
  { regex = "filename|host", action = "labeldrop" },
  { source_labels = ["job"], target_label = "__tmp_job", replacement = "kept only during relabelling" },
]"#;
    let cfg = agent_config(dir.path(), &r.base, &format!("{}/logs/*/*.log", dir.path().display()), "", rules);
    let agent = Agent::start(&cfg);
    assert!(
        wait_for(Duration::from_secs(20), || query_all(&r, r#"{job="test"}"#, None).len() >= 4),
        "{}",
        agent.stderr_text()
    );
    let entries = query_all(&r, r#"{job="test"}"#, None);
    assert_eq!(entries.len(), 4, "{entries:?}");
    for e in &entries {
        let app = e.line.split(' ').next().unwrap();
        let mut labels: Vec<(String, String)> =
            e.labels.iter().map(|(k, v)| (k.clone(), v.as_str().unwrap().to_string())).collect();
        labels.retain(|(k, _)| k != "service_name");
        labels.sort();
        // MD5 of the app's name, low 64 bits, modulo 4 (Prometheus' hashmod).
        let shard = if app == "billing" { "2" } else { "1" };
        let want = [
            ("APP_UPPER", app.to_uppercase()),
            ("app", app.to_string()),
            ("job", "test".to_string()),
            ("service", format!("{app}-test")),
            ("shard", shard.to_string()),
        ];
        let want: Vec<(String, String)> = want.iter().map(|(k, v)| (k.to_string(), v.clone())).collect();
        assert_eq!(labels, want, "{}", e.line);
    }
    assert_eq!(agent.metric(r#"tailship_file_events_total{event="opened",source="file-0"}"#), 2.0);
    assert!(agent.terminate(Duration::from_secs(10)).success());
}

#[test]
fn bad_relabel_rules_exit_2_naming_each_key() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.toml");
    std::fs::write(
        &path,
        r#"[[sources]]
include = ["/var/log/*.log"]
relabel = [
  { source_labels = ["a"], target_label = "b" },
  { source_labels = ["a"], regex = "(", target_label = "b" },
  { source_labels = ["a"], action = "hashmod", target_label = "b" },
  { source_labels = ["a"], action = "explode" },
  { source_labels = ["a"], target_label = "-b" },
]
"#,
    )
    .unwrap();
    for cmd in ["check", "run"] {
        let out = Command::new(bin()).args([cmd, "--config"]).arg(&path).output().unwrap();
        let all = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert_eq!(out.status.code(), Some(2), "{cmd}: {all}");
        for key in [
            "sources[0].relabel[1].regex",
            "sources[0].relabel[2].modulus",
            "sources[0].relabel[3].action",
            "sources[0].relabel[4].target_label",
        ] {
            assert!(all.contains(key), "{cmd}: {key}: {all}");
        }
        assert!(!all.contains("relabel[0]"), "{all}");
        assert!(all.contains("bad.toml"), "{all}");
    }
}

#[test]
fn discovery_keys_and_a_journal_sources_relabel_rules_are_checked() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.toml");
    std::fs::write(
        &path,
        r#"[[sources]]
type = "docker"
include = ["/x"]
docker = { host = "ftp://1.2.3.4:2375", refresh_interval = "0s" }
[[sources]]
type = "journal"
relabel = [{ source_labels = ["__journal__comm"], target_label = "comm" }, { source_labels = ["a"], regex = "(", target_label = "b" }]
[[sources]]
include = ["/x/*.log"]
kubernetes = {}
[[sources]]
type = "kubernetes"
kubernetes = { api_server = "ftp://x" }
"#,
    )
    .unwrap();
    let out = Command::new(bin()).args(["check", "--config"]).arg(&path).output().unwrap();
    let all = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert_eq!(out.status.code(), Some(2), "{all}");
    for key in [
        "sources[0].include",
        "sources[0].docker.host",
        "sources[0].docker.refresh_interval",
        "sources[1].relabel[1].regex",
        "sources[2].kubernetes.role",
        "sources[3].kubernetes.api_server",
    ] {
        assert!(all.contains(&format!("key `{key}`")), "{key}: {all}");
    }
}
