//! `--log-level` on every command (over `RUST_LOG`), `check --quiet` (the
//! exit code and the problems only), and `check` (and `run`) given a
//! Promtail YAML pointing at `tailship convert promtail`, and at nothing
//! else. The real binary, real files.

use crate::agent;
use crate::common;

use std::process::{Command, Output, Stdio};
use std::time::Duration;

use agent::{agent_config, Agent};
use common::{bin, wait_for, Receiver};

fn tailship(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = Command::new(bin());
    c.args(args).stdin(Stdio::null()).env_remove("RUST_LOG").env_remove("TAILSHIP_LOG_LEVEL");
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().expect("run tailship")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A valid config shipping `dir/*.log` to `url`, with `extra` appended.
fn config(dir: &std::path::Path, url: &str, extra: &str) -> std::path::PathBuf {
    let path = agent_config(dir, url, &format!("{}/*.log", dir.display()), "", "");
    let mut text = std::fs::read_to_string(&path).unwrap();
    text.push_str(extra);
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn log_level_is_a_flag_of_every_command() {
    let help = tailship(&["--help"], &[]);
    assert!(String::from_utf8_lossy(&help.stdout).contains("--log-level"));
    for cmd in ["run", "check", "push", "query", "tail", "labels", "receive", "demo", "top", "convert"] {
        let o = tailship(&[cmd, "--help"], &[]);
        let text = String::from_utf8_lossy(&o.stdout);
        assert!(text.contains("--log-level <LOG_LEVEL>"), "`{cmd} --help` lacks --log-level:\n{text}");
    }
    let bad = tailship(&["check", "--log-level", "loud"], &[]);
    assert_eq!(bad.status.code(), Some(2), "{}", stderr(&bad));
    assert!(stderr(&bad).contains("error, warn, info, debug, trace"), "{}", stderr(&bad));
}

#[test]
fn log_level_sets_what_is_logged_over_rust_log() {
    let store = Receiver::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("a.log");
    std::fs::write(&file, "one\n").unwrap();
    let push = |level: &str, rust_log: &str| {
        let o = tailship(
            &["push", file.to_str().unwrap(), "--url", &store.base, "--log-level", level],
            &[("RUST_LOG", rust_log)],
        );
        assert!(o.status.success(), "{}", stderr(&o));
        stderr(&o)
    };
    // RUST_LOG=error, --log-level debug: the debug lines show.
    let log = push("debug", "error");
    assert!(log.contains("DEBUG"), "{log}");
    // RUST_LOG=debug, --log-level warn: not even the INFO line naming the prefix found.
    let log = push("warn", "debug");
    assert!(!log.contains("DEBUG") && !log.contains("INFO"), "{log}");
    // The agent too, by the flag's variable TAILSHIP_LOG_LEVEL.
    let cfg = config(dir.path(), &store.base, "");
    let agent = Agent::start_with(&cfg, &[("RUST_LOG", "info"), ("TAILSHIP_LOG_LEVEL", "debug")]);
    assert!(wait_for(Duration::from_secs(15), || agent.stderr_text().contains("DEBUG")), "{}", agent.stderr_text());
}

#[test]
fn check_quiet_prints_nothing_for_a_valid_config_and_only_the_problems_otherwise() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path(), "http://127.0.0.1:3100", "");
    let full = tailship(&["check", "--config", cfg.to_str().unwrap()], &[]);
    assert!(full.status.success(), "{}", stderr(&full));
    assert!(String::from_utf8_lossy(&full.stdout).lines().count() > 20);
    let quiet = tailship(&["check", "--quiet", "--config", cfg.to_str().unwrap()], &[]);
    assert!(quiet.status.success(), "{}", stderr(&quiet));
    assert!(quiet.stdout.is_empty(), "{}", String::from_utf8_lossy(&quiet.stdout));
    assert!(quiet.stderr.is_empty(), "{}", stderr(&quiet));
    // A mistake: exit 2, the problem on stderr, nothing on stdout.
    let bad = config(dir.path(), "http://127.0.0.1:3100", "[positons]\npath = \"/tmp/x\"\n");
    let o = tailship(&["check", "-q", "--config", bad.to_str().unwrap()], &[]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(o.stdout.is_empty(), "{}", String::from_utf8_lossy(&o.stdout));
    assert!(stderr(&o).contains("positons"), "{}", stderr(&o));
}

#[test]
fn check_given_a_promtail_config_says_to_convert_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("promtail.yaml");
    std::fs::write(
        &path,
        "server:\n  http_listen_port: 9080\npositions:\n  filename: /tmp/positions.yaml\nclients:\n  - url: http://127.0.0.1:3100/loki/api/v1/push\n\
         scrape_configs:\n  - job_name: app\n    static_configs:\n      - targets: [localhost]\n        labels:\n          job: app\n          __path__: /var/log/app/*.log\n",
    )
    .unwrap();
    let o = tailship(&["check", "--config", path.to_str().unwrap()], &[]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("looks like a Promtail config"), "{err}");
    assert!(err.contains(&format!("tailship convert promtail {}", path.display())), "{err}");
    // What it says works: the converted config checks.
    let converted = tailship(&["convert", "promtail", path.to_str().unwrap()], &[]);
    assert!(converted.status.success(), "{}", stderr(&converted));
    let toml = dir.path().join("tailship.toml");
    std::fs::write(&toml, &converted.stdout).unwrap();
    let o = tailship(&["check", "--quiet", "--config", toml.to_str().unwrap()], &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    // A tailship YAML with a mistake is not taken for Promtail's.
    let own = dir.path().join("tailship.yaml");
    std::fs::write(&own, "sources:\n  - type: file\n    include: [/var/log/*.log]\n    lables: {job: x}\n").unwrap();
    let o = tailship(&["check", "--config", own.to_str().unwrap()], &[]);
    assert_eq!(o.status.code(), Some(2));
    assert!(!stderr(&o).contains("Promtail"), "{}", stderr(&o));
}

/// `check` on a Promtail YAML suggested `convert`, then listed
/// `scrape_configs` and six more of its keys as unknown (and the lack of
/// `[[sources]]`), where the hint alone is what to do. `run` says the same.
#[test]
fn check_on_a_promtail_yaml_gives_the_convert_hint_alone_not_its_keys_as_unknown() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("promtail.yml");
    std::fs::write(
        &path,
        "server:\n  http_listen_port: 9080\n  grpc_listen_port: 0\npositions:\n  filename: /tmp/positions.yaml\n\
         clients:\n  - url: http://loki:3100/loki/api/v1/push\n    batchwait: 1s\n    external_labels: { host: '${HOSTNAME}' }\n\
         limits_config:\n  readline_rate_enabled: true\ntarget_config:\n  sync_period: 10s\n\
         scrape_configs:\n  - job_name: system\n    static_configs:\n      - targets: [localhost]\n        \
         labels: { job: varlogs, __path__: /var/log/*log }\n",
    )
    .unwrap();
    for cmd in ["check", "run"] {
        let o = tailship(&[cmd, "--config", path.to_str().unwrap()], &[("HOSTNAME", "")]);
        assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
        let err = stderr(&o);
        assert!(err.contains(&format!("tailship convert promtail {}", path.display())), "{cmd}: {err}");
        assert!(err.contains("(1 problem)") && err.contains("key `scrape_configs`"), "{cmd}: {err}");
        for not in ["unknown key", "http_listen_port", "batchwait", "HOSTNAME", "[[sources]]", "limits_config"] {
            assert!(!err.contains(not), "{cmd} says only the hint, not {not:?}: {err}");
        }
    }
}
