//! The three ways tailship runs, checked from outside: the systemd unit
//! (`systemd-analyze verify` and its security exposure), sd_notify messages
//! through a `NOTIFY_SOCKET` this test owns, `${VAR}` expansion in the sidecar
//! config, the environment overrides documented in `systemd/tailship.env`,
//! completions and the man page (and their packaged copies), and the Debian
//! package's file list (the Kubernetes manifests: `tests/kubernetes_manifests.rs`).
//!
//! Checks that need a tool this machine lacks (`systemd-analyze`, `cargo deb`,
//! `zsh`, `fish`, python3's yaml) print why and pass; `.ci/run` installs
//! `systemd` and `cargo-deb` so that CI runs them all.

use crate::agent;
use crate::common;

use std::os::unix::net::UnixDatagram;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use agent::{agent_config, free_port, query_all_at, Agent};
use common::{bin, get, Receiver};

/// Highest `systemd-analyze security` exposure the unit may have.
const MAX_EXPOSURE: f64 = 2.0;

fn repo(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(path)
}

fn read(path: &str) -> String {
    std::fs::read_to_string(repo(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// Whether `program` runs at all (`--version`).
fn have(program: &str) -> bool {
    Command::new(program).arg("--version").stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok()
}

fn skip(why: &str) {
    eprintln!("SKIPPED: {why}");
}

fn output(cmd: &mut Command) -> (Output, String) {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    (out, text)
}

fn tailship(args: &[&str]) -> String {
    let (out, text) = output(Command::new(bin()).args(args));
    assert!(out.status.success(), "tailship {args:?}: {text}");
    String::from_utf8(out.stdout).expect("utf-8 output")
}

/// Receives one datagram within `deadline`, as text.
fn recv(sock: &UnixDatagram, deadline: Duration) -> Option<String> {
    sock.set_read_timeout(Some(deadline)).expect("timeout");
    let mut buf = [0u8; 4096];
    sock.recv(&mut buf).ok().map(|n| String::from_utf8_lossy(&buf[..n]).into_owned())
}

/// Datagrams until one contains `want` (or `deadline` passes); returns all seen.
fn recv_until(sock: &UnixDatagram, want: &str, deadline: Duration) -> Vec<String> {
    let end = Instant::now() + deadline;
    let mut seen = Vec::new();
    while let Some(left) = end.checked_duration_since(Instant::now()) {
        match recv(sock, left.max(Duration::from_millis(1))) {
            Some(m) => {
                let done = m.lines().any(|l| l == want);
                seen.push(m);
                if done {
                    break;
                }
            }
            None => break,
        }
    }
    seen
}

#[test]
fn sd_notify_reports_ready_after_the_endpoint_is_up_then_watchdog_then_stopping() {
    let r = Receiver::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("a.log");
    std::fs::write(&log, "one\n").unwrap();
    let cfg = agent_config(dir.path(), &r.base, &log.display().to_string(), "", "");
    let sock_path = dir.path().join("notify.sock");
    let sock = UnixDatagram::bind(&sock_path).unwrap();
    // WATCHDOG_PID is left unset (the child's pid is not known before it starts):
    // sd_watchdog_enabled(3) then applies WATCHDOG_USEC to this process.
    let agent = Agent::start_with(
        &cfg,
        &[("NOTIFY_SOCKET", sock_path.to_str().unwrap()), ("WATCHDOG_USEC", "200000"), ("JOURNAL_STREAM", "8:1234")],
    );

    let first = recv(&sock, Duration::from_secs(20)).unwrap_or_else(|| panic!("no READY=1: {}", agent.stderr_text()));
    assert!(first.lines().any(|l| l == "READY=1"), "{first:?}");
    assert!(first.lines().any(|l| l.starts_with("STATUS=")), "{first:?}");
    // Ready means the endpoint already serves: no retry needed.
    let addr = agent.metrics_addr.clone().expect("listen address");
    assert_eq!(get(&format!("http://{addr}/healthz")).status, 200);

    // WATCHDOG=1 every 100ms (half of 200ms): at least 3 within a second.
    let start = Instant::now();
    let mut pings = 0;
    while start.elapsed() < Duration::from_millis(1000) {
        if let Some(m) = recv(&sock, Duration::from_millis(300)) {
            pings += m.lines().filter(|l| *l == "WATCHDOG=1").count();
        }
    }
    assert!(pings >= 3, "only {pings} WATCHDOG=1 in 1s");

    let stderr_before = agent.stderr_text();
    assert!(agent.terminate(Duration::from_secs(10)).success(), "{stderr_before}");
    // The datagrams sent before the exit wait in the socket's buffer.
    let seen = recv_until(&sock, "STOPPING=1", Duration::from_secs(2));
    assert!(seen.iter().any(|m| m.lines().any(|l| l == "STOPPING=1")), "{seen:?}");
    let stderr = stderr_before;
    // Under systemd (JOURNAL_STREAM): no ANSI colours and no timestamps of our own.
    assert!(!stderr.contains('\u{1b}'), "{stderr}");
    let first_line = stderr.lines().next().unwrap_or_default();
    assert!(first_line.trim_start().starts_with("INFO"), "{first_line}");
}

#[test]
fn sd_notify_is_silent_without_notify_socket() {
    let r = Receiver::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("a.log");
    std::fs::write(&log, "one\n").unwrap();
    let cfg = agent_config(dir.path(), &r.base, &log.display().to_string(), "", "");
    let agent = Agent::start_with(&cfg, &[("WATCHDOG_USEC", "100000")]);
    let addr = agent.metrics_addr.clone().expect("listen address");
    assert!(common::wait_for(Duration::from_secs(20), || {
        std::net::TcpStream::connect(&addr).is_ok() && get(&format!("http://{addr}/ready")).status == 200
    }));
    std::thread::sleep(Duration::from_millis(300));
    let stderr = agent.stderr_text();
    assert!(agent.terminate(Duration::from_secs(10)).success());
    assert!(!stderr.contains("NOTIFY_SOCKET"), "{stderr}");
}

#[test]
fn sidecar_config_expands_pod_variables_with_defaults() {
    let (out, text) = output(
        Command::new(bin())
            .args(["check", "--config"])
            .arg(repo("config/sidecar.toml"))
            .env("POD_NAME", "web-7d9f-x2")
            .env("POD_NAMESPACE", "shop")
            .env("LOG_URL", "http://loki.logging:3100")
            .env_remove("CONTAINER_NAME")
            .env_remove("JOB")
            .env_remove("POSITIONS_DIR"),
    );
    assert!(out.status.success(), "{text}");
    assert!(text.contains("pod = \"web-7d9f-x2\""), "{text}");
    assert!(text.contains("namespace = \"shop\""), "{text}");
    assert!(text.contains("url = \"http://loki.logging:3100\""), "{text}");
    // Unset variables take their ${VAR:-default}.
    assert!(text.contains("container = \"app\""), "{text}");
    assert!(text.contains("job = \"app\""), "{text}");
    assert!(text.contains("/var/lib/tailship/positions.json"), "{text}");
    assert!(!text.contains("${"), "{text}");
}

/// `config/sidecar.toml` as shipped, its log directory and listen address
/// moved under `dir` and to a free port.
fn sidecar_config(dir: &Path) -> PathBuf {
    let text = read("config/sidecar.toml")
        .replace("/var/log/app", &dir.join("app").display().to_string())
        .replace("0.0.0.0:9080", &format!("127.0.0.1:{}", free_port()));
    std::fs::create_dir_all(dir.join("app")).unwrap();
    agent::write_file(dir, "sidecar.toml", &text)
}

#[test]
fn the_sidecar_example_ships_to_a_loki_at_log_url_and_to_the_logstore_with_log_api_prefix() {
    let big = ["--max-query-limit", "1000000"];
    // A Loki at LOG_URL (its prefix, /loki/api/v1): before, the example pushed
    // to /logstore/api/v1 and got 404.
    let loki = Receiver::start(&["--api-prefix", "/loki/api/v1", big[0], big[1]]);
    let dir = tempfile::tempdir().unwrap();
    let cfg = sidecar_config(dir.path());
    let positions = dir.path().display().to_string();
    std::fs::write(dir.path().join("app/web.log"), "to loki\n").unwrap();
    let agent = Agent::start_with(&cfg, &[("LOG_URL", &loki.base), ("POSITIONS_DIR", &positions)]);
    let arrived = common::wait_for(Duration::from_secs(20), || {
        !query_all_at(&loki, "/loki/api/v1", r#"{job="app"}"#, None).is_empty()
    });
    assert!(arrived, "{}", agent.stderr_text());
    assert!(agent.terminate(Duration::from_secs(10)).success());
    // The log service of spec/: LOG_API_PREFIX, or the full push URL in LOG_URL.
    for (i, prefix_from_url) in [false, true].into_iter().enumerate() {
        let store = Receiver::start(&big);
        let dir = tempfile::tempdir().unwrap();
        let cfg = sidecar_config(dir.path());
        let positions = dir.path().display().to_string();
        std::fs::write(dir.path().join("app/web.log"), format!("to the logstore {i}\n")).unwrap();
        let url = format!("{}/logstore/api/v1/push", store.base);
        let env: Vec<(&str, &str)> = if prefix_from_url {
            vec![("LOG_URL", &url), ("POSITIONS_DIR", &positions)]
        } else {
            vec![("LOG_URL", &store.base), ("LOG_API_PREFIX", "/logstore/api/v1"), ("POSITIONS_DIR", &positions)]
        };
        let agent = Agent::start_with(&cfg, &env);
        let arrived = common::wait_for(Duration::from_secs(20), || {
            !query_all_at(&store, "/logstore/api/v1", r#"{job="app"}"#, None).is_empty()
        });
        assert!(arrived, "{}", agent.stderr_text());
        assert!(agent.terminate(Duration::from_secs(10)).success());
    }
}

#[test]
fn the_deb_config_reads_the_journal_where_journalctl_is_and_runs_without_it() {
    // With journalctl on PATH: the effective config has the journal source.
    let have_journalctl = have("journalctl");
    if have_journalctl {
        let (out, text) =
            output(Command::new(bin()).args(["check", "--config"]).arg(repo("packaging/deb/tailship.toml")));
        assert!(out.status.success(), "{text}");
        assert!(text.contains("type = \"journal\"") && !text.contains("left out"), "{text}");
    } else {
        skip("journalctl is not installed; the journal half of the deb config was not checked");
    }
    // Without: `check` says it is left out, and `run` ships the files (before:
    // no journal source at all; a plain one would make `run` refuse to start).
    let (out, text) = output(
        Command::new(bin())
            .args(["check", "--config"])
            .arg(repo("packaging/deb/tailship.toml"))
            .env("PATH", "/nonexistent"),
    );
    assert!(out.status.success(), "{text}");
    assert!(text.contains("optional journal source journal is left out"), "{text}");
    assert!(!text.contains("type = \"journal\""), "{text}");
    let r = Receiver::start(&["--max-query-limit", "1000000"]);
    let dir = tempfile::tempdir().unwrap();
    let logs = dir.path().join("log");
    std::fs::create_dir(&logs).unwrap();
    std::fs::write(logs.join("syslog"), "from syslog\n").unwrap();
    let text = read("packaging/deb/tailship.toml")
        .replace("/var/log/", &format!("{}/", logs.display()))
        .replace("/var/lib/tailship", &dir.path().display().to_string())
        .replace("http://127.0.0.1:3100", &r.base)
        .replace("127.0.0.1:9080", &format!("127.0.0.1:{}", free_port()));
    let cfg = agent::write_file(dir.path(), "tailship.toml", &text);
    let agent = Agent::start_with(&cfg, &[("PATH", "/nonexistent")]);
    let arrived = common::wait_for(Duration::from_secs(20), || {
        !query_all_at(&r, "/logstore/api/v1", r#"{job="varlogs"}"#, None).is_empty()
    });
    assert!(arrived, "{}", agent.stderr_text());
    let err = agent.stderr_text();
    assert!(agent.terminate(Duration::from_secs(10)).success());
    assert!(err.contains("left out"), "{err}");
}

#[test]
fn every_override_in_the_example_env_file_names_a_real_key() {
    let env_file = read("systemd/tailship.env");
    let pairs: Vec<(String, String)> = env_file
        .lines()
        .filter_map(|l| l.strip_prefix('#'))
        .filter(|l| l.starts_with("TAILSHIP_") && l.contains("__"))
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    // Secret files must be readable for `check` to pass: point them at a temp file.
    let dir = tempfile::tempdir().unwrap();
    let secret = dir.path().join("token");
    std::fs::write(&secret, "s3cret-token\n").unwrap();
    let pairs: Vec<(String, String)> = pairs
        .into_iter()
        .map(|(k, v)| if k.ends_with("_FILE") { (k, secret.display().to_string()) } else { (k, v) })
        .collect();
    assert!(pairs.len() >= 5, "{pairs:?}");
    let mut cmd = Command::new(bin());
    cmd.args(["check", "--config"]).arg(repo("packaging/deb/tailship.toml"));
    for (k, v) in &pairs {
        cmd.env(k, v);
    }
    let (out, text) = output(&mut cmd);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("url = \"https://logs.example.com\""), "{text}");
    assert!(text.contains("tenant_id = \"team-a\""), "{text}");
    assert!(text.contains("max_wait = \"2s\""), "{text}");
    assert!(text.contains("username = \"123456\"") && !text.contains("s3cret-token"), "{text}");
    // The packaged example is valid as shipped, too.
    let (out, text) = output(Command::new(bin()).args(["check", "--config"]).arg(repo("packaging/deb/tailship.toml")));
    assert!(out.status.success(), "{text}");
}

/// The unit with `ExecStart=` pointing at the binary under test, in a temp dir
/// (`systemd-analyze verify` wants the executables to exist).
fn unit_for_verify(dir: &Path) -> PathBuf {
    let unit = read("systemd/tailship.service").replace("/usr/bin/tailship", &bin().display().to_string());
    let path = dir.join("tailship.service");
    std::fs::write(&path, unit).unwrap();
    path
}

#[test]
fn systemd_unit_is_a_hardened_notify_service() {
    let unit = read("systemd/tailship.service");
    for line in [
        "Type=notify",
        "WatchdogSec=30s",
        "User=tailship",
        "SupplementaryGroups=adm",
        "StateDirectory=tailship",
        "ConfigurationDirectory=tailship",
        "EnvironmentFile=-/etc/tailship/tailship.env",
        "ExecStart=/usr/bin/tailship run --config /etc/tailship/tailship.toml",
        "ExecReload=/bin/kill -HUP $MAINPID",
        "ProtectSystem=strict",
        "CapabilityBoundingSet=",
        "RestrictAddressFamilies=AF_INET AF_INET6 AF_UNIX",
    ] {
        assert!(unit.lines().any(|l| l == line), "missing {line}");
    }
    // It must reach the network: no IP allow list, no private network.
    assert!(!unit.contains("PrivateNetwork=yes") && !unit.contains("IPAddressDeny="));
}

#[test]
fn systemd_analyze_verify_is_clean() {
    if !have("systemd-analyze") {
        return skip("systemd-analyze is not installed (apt-get install systemd)");
    }
    let dir = tempfile::tempdir().unwrap();
    let unit = unit_for_verify(dir.path());
    // --man=no: the man page is installed by the package, not on this machine.
    let (out, text) = output(Command::new("systemd-analyze").args(["verify", "--man=no"]).arg(&unit));
    assert!(out.status.success() && text.trim().is_empty(), "systemd-analyze verify: {text}");
}

#[test]
fn systemd_security_exposure_is_at_most_2_0() {
    if !have("systemd-analyze") {
        return skip("systemd-analyze is not installed (apt-get install systemd)");
    }
    let (out, text) = output(
        Command::new("systemd-analyze")
            .args(["security", "--offline=yes", "--no-pager"])
            .arg(repo("systemd/tailship.service")),
    );
    let score: f64 = text
        .lines()
        .find_map(|l| l.split("Overall exposure level for tailship.service:").nth(1))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no exposure level in: {text}"));
    eprintln!("systemd-analyze security --offline=yes: exposure {score}");
    assert!(out.status.success(), "{text}");
    assert!(score <= MAX_EXPOSURE, "exposure {score} > {MAX_EXPOSURE}:\n{text}");
}

const COMMANDS: &[&str] =
    &["run", "check", "push", "query", "tail", "labels", "receive", "demo", "cloud", "admin", "completions", "man"];

#[test]
fn completions_parse_in_their_shells_and_name_every_command() {
    let bash = tailship(&["completions", "bash"]);
    let dir = tempfile::tempdir().unwrap();
    for (shell, file, check) in [
        ("bash", "tailship.bash", Some(("bash", "-n"))),
        ("zsh", "_tailship", Some(("zsh", "-n"))),
        ("fish", "tailship.fish", Some(("fish", "--no-execute"))),
    ] {
        let text = if shell == "bash" { bash.clone() } else { tailship(&["completions", shell]) };
        for c in COMMANDS {
            assert!(text.contains(c), "{shell} completions lack {c}");
        }
        let path = dir.path().join(file);
        std::fs::write(&path, &text).unwrap();
        let Some((program, flag)) = check else { continue };
        if program != "bash" && !have(program) {
            skip(&format!("{program} is not installed; its completions were not parsed"));
            continue;
        }
        let (out, all) = output(Command::new(program).arg(flag).arg(&path));
        assert!(out.status.success(), "{program} {flag}: {all}");
    }
    assert!(bash.contains("complete -F _tailship"), "not a bash completion script");
    let (out, text) = output(Command::new(bin()).args(["completions", "tcsh"]));
    assert_eq!(out.status.code(), Some(2), "{text}");
}

#[test]
fn man_page_documents_every_command_environment_and_exit_status() {
    let page = tailship(&["man"]);
    assert!(page.contains(".TH tailship 1"), "{page}");
    for section in [".SH NAME", ".SH SYNOPSIS", ".SH COMMANDS", ".SH ENVIRONMENT", ".SH FILES", ".SH \"EXIT STATUS\""] {
        assert!(page.contains(section), "missing {section}");
    }
    for c in COMMANDS {
        assert!(page.contains(&format!(".SS \"tailship {c}\"")), "no subsection for {c}");
    }
    assert!(page.contains(".SS \"tailship cloud tokens create\""));
    if have("groff") {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tailship.1");
        std::fs::write(&path, &page).unwrap();
        let (out, text) = output(Command::new("groff").args(["-man", "-Tutf8", "-ww", "-z"]).arg(&path));
        assert!(out.status.success() && text.trim().is_empty(), "groff: {text}");
    }
}

#[test]
fn packaged_man_page_and_completions_are_current() {
    for (file, args) in [
        ("packaging/generated/tailship.1", &["man"][..]),
        ("packaging/generated/tailship.bash", &["completions", "bash"][..]),
        ("packaging/generated/_tailship", &["completions", "zsh"][..]),
        ("packaging/generated/tailship.fish", &["completions", "fish"][..]),
    ] {
        let fresh = tailship(args);
        assert!(read(file) == fresh, "{file} is stale; regenerate it with: cargo run -- {} > {file}", args.join(" "));
    }
}

#[test]
fn dockerfile_builds_in_stages_and_runs_as_non_root() {
    let text = read("packaging/Dockerfile");
    let froms: Vec<&str> = text.lines().filter(|l| l.starts_with("FROM ")).collect();
    assert_eq!(froms.len(), 2, "{froms:?}");
    assert!(froms[0].contains(" AS build"));
    // The binary the book measures: build.rs hands the linker packaging/symbol-order.txt.
    assert!(text.contains("COPY Cargo.toml Cargo.lock README.md build.rs ./"), "build.rs is not copied");
    assert!(text.contains("COPY packaging/symbol-order.txt ./packaging/"), "the symbol order is not copied");
    assert!(text.lines().any(|l| l.starts_with("USER ") && !l.contains("root") && !l.starts_with("USER 0")));
    assert!(text.contains("ENTRYPOINT [\"/usr/local/bin/tailship\"]"));
    assert!(text.contains("config/sidecar.toml /out/etc/tailship/tailship.toml"));
    assert!(read(".dockerignore").lines().any(|l| l == "target"));
}

#[test]
fn deb_package_holds_the_binary_unit_config_and_docs() {
    let probe = Command::new("cargo").args(["deb", "--version"]).output();
    if !probe.is_ok_and(|o| o.status.success()) {
        return skip("cargo-deb is not installed (cargo install cargo-deb --locked)");
    }
    // Package the binary these tests run (a debug build) without building a
    // release one: cargo-deb takes target/release/tailship from CARGO_TARGET_DIR.
    let target = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    std::fs::create_dir(target.path().join("release")).unwrap();
    let packaged = target.path().join("release/tailship");
    if std::fs::hard_link(bin(), &packaged).is_err() {
        std::fs::copy(bin(), &packaged).unwrap();
    }
    let deb = target.path().join("tailship.deb");
    let (out, text) = output(
        Command::new("cargo")
            .args(["deb", "--no-build", "--strip", "--fast", "--output"])
            .arg(&deb)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .env("CARGO_TARGET_DIR", target.path()),
    );
    assert!(out.status.success(), "cargo deb: {text}");

    let (out, list) = output(Command::new("dpkg-deb").arg("-c").arg(&deb));
    assert!(out.status.success(), "{list}");
    for file in [
        "./usr/bin/tailship",
        "./usr/lib/systemd/system/tailship.service",
        "./etc/tailship/tailship.toml",
        "./etc/tailship/tailship.env",
        "./usr/share/doc/tailship/examples/tailship.toml",
        "./usr/share/doc/tailship/examples/local.toml",
        "./usr/share/man/man1/tailship.1.gz",
        "./usr/share/bash-completion/completions/tailship",
        "./usr/share/zsh/vendor-completions/_tailship",
        "./usr/share/fish/vendor_completions.d/tailship.fish",
    ] {
        assert!(list.lines().any(|l| l.ends_with(&format!(" {file}"))), "{file} not in the .deb:\n{list}");
    }
    let (out, info) = output(Command::new("dpkg-deb").arg("-I").arg(&deb));
    assert!(out.status.success(), "{info}");
    assert!(
        info.contains("adduser") && info.contains("procps"),
        "adduser or procps (/bin/kill) is not a dependency: {info}"
    );

    let control = target.path().join("control");
    let (out, text) = output(Command::new("dpkg-deb").arg("-e").arg(&deb).arg(&control));
    assert!(out.status.success(), "{text}");
    let postinst = std::fs::read_to_string(control.join("postinst")).unwrap();
    assert!(postinst.contains("adduser --system") && postinst.contains("tailship"), "{postinst}");
    let conffiles = std::fs::read_to_string(control.join("conffiles")).unwrap();
    assert!(conffiles.contains("/etc/tailship/tailship.toml"), "{conffiles}");
    let (out, text) = output(Command::new("sh").arg("-n").arg(control.join("postinst")));
    assert!(out.status.success(), "{text}");
}

/// Found reading the help as an operator: `labels -o` described line output,
/// `cloud setup --org` had no help, the man page showed hidden tuning flags
/// and lacked `TAILSHIP_BEARER_TOKEN_FILE`.
#[test]
fn help_and_man_describe_what_each_flag_does_and_hide_what_is_hidden() {
    let run = |args: &[&str]| {
        let out = std::process::Command::new(common::bin()).args(args).output().unwrap();
        assert!(out.status.success(), "{args:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let man = run(&["man"]);
    assert!(
        !man.contains("pace\\-per\\-hour") && !man.contains("retry\\-min\\-backoff"),
        "hidden flags in the man page"
    );
    for v in ["TAILSHIP_BEARER_TOKEN_FILE", "HTTPS_PROXY", "NO_PROXY"] {
        assert!(man.contains(v), "{v} in ENVIRONMENT");
    }
    let labels = run(&["labels", "--help"]);
    assert!(labels.contains("one name per line") && !labels.contains("Time, labels and line"), "{labels}");
    let setup = run(&["cloud", "setup", "--help"]);
    assert!(setup.contains("The org (slug) that owns the stack"), "{setup}");
}
