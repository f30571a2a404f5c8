//! Several clients coming from Promtail: `convert promtail` translates each
//! client, and a Promtail positions file carries over without a gap or a resend.

use super::*;

fn convert(dir: &Path, promtail: &str, extra: &[&str]) -> (std::process::Output, String) {
    let file = write_file(dir, "promtail.yaml", promtail);
    let out = std::process::Command::new(common::bin())
        .args(["convert", "promtail"])
        .arg(&file)
        .args(extra)
        .output()
        .unwrap();
    let toml = String::from_utf8_lossy(&out.stdout).into_owned();
    (out, toml)
}

#[test]
fn convert_promtail_translates_every_client_with_its_external_labels() {
    let dir = tempfile::tempdir().unwrap();
    let promtail = format!(
        r#"clients:
  - url: http://old-loki:3100/loki/api/v1/push
    name: old
    external_labels: {{ cluster: a }}
  - url: https://new-loki.example/loki/api/v1/push
    tenant_id: team
    external_labels: {{ cluster: b }}
positions:
  filename: {dir}/positions.yaml
scrape_configs:
  - job_name: app
    static_configs:
      - labels: {{ job: app, __path__: {dir}/*.log }}
"#,
        dir = dir.path().display()
    );
    let (out, toml) = convert(dir.path(), &promtail, &[]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(!err.contains("one log service"), "{err}");
    assert_eq!(toml.matches("[[clients]]").count(), 2, "{toml}");
    assert!(toml.contains("name = \"old\"") && toml.contains("name = \"client-1\""), "{toml}");
    assert!(toml.contains("cluster = \"a\"") && toml.contains("cluster = \"b\""), "{toml}");
    let cfg = write_file(dir.path(), "converted.toml", &toml);
    let check = std::process::Command::new(common::bin()).args(["check", "--config"]).arg(&cfg).output().unwrap();
    assert!(check.status.success(), "{}", String::from_utf8_lossy(&check.stderr));
}

/// The cutover as an operator does it: `convert --positions` run as root,
/// the agent run as the service's own user. tailship's positions go where
/// the packaged service may write (/var/lib/tailship, not beside Promtail's
/// file, which the unit cannot write), the notes name that path and the
/// spool's, and the file written into the agent's directory is the agent's
/// user's, so the agent reads it and goes on where Promtail stopped. Root
/// wrote it with mode 0600, the agent warned, started from nothing and sent
/// every line Promtail had sent again.
#[test]
fn a_promtail_positions_file_converted_by_root_is_read_by_the_agents_user_and_resends_nothing() {
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    if !root || !Path::new("/usr/bin/setpriv").exists() {
        eprintln!("skipped: needs root (convert as root, the agent as nobody) and setpriv");
        return;
    }
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let r = Receiver::start(&["--max-query-limit", "1000000"]);
    let text: String = (0..100).map(|i| format!("app {i:03}\n")).collect();
    let log = write_file(dir.path(), "app.log", &text);
    std::fs::set_permissions(&log, std::fs::Permissions::from_mode(0o644)).unwrap();
    let d = dir.path().display();
    let half: usize = text.lines().take(50).map(|l| l.len() + 1).sum();
    write_file(dir.path(), "positions.yaml", &format!("positions:\n  {d}/app.log: \"{half}\"\n"));
    let port = free_port();
    let promtail = format!(
        "server:\n  http_listen_address: 127.0.0.1\n  http_listen_port: {port}\nclients:\n  - url: {url}/logstore/api/v1/push\n\
         positions:\n  filename: {d}/positions.yaml\nscrape_configs:\n  - job_name: app\n    static_configs:\n\
         \x20     - labels: {{ job: multi, __path__: {d}/*.log }}\n",
        url = r.base
    );
    // Without --positions-out: the packaged service's state directory, named with the spool in the notes.
    let (out, toml) = convert(dir.path(), &promtail, &[]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(toml.contains("path = \"/var/lib/tailship/positions.json\""), "{toml}");
    assert!(err.contains("/var/lib/tailship/positions.json") && err.contains("/var/lib/tailship/spool"), "{err}");
    // The agent's directory, owned by its user (nobody here, tailship in the package).
    let state = dir.path().join("state");
    std::fs::create_dir(&state).unwrap();
    std::os::unix::fs::chown(&state, Some(65534), Some(65534)).unwrap();
    let target = state.join("positions.json");
    let (out, toml) = convert(
        dir.path(),
        &promtail,
        &["--positions", &format!("{d}/positions.yaml"), "--positions-out", &target.display().to_string()],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains(&target.display().to_string()) && err.contains("/var/lib/tailship/spool"), "{err}");
    assert!(err.contains("1 file offset(s)"), "{err}");
    assert_eq!(std::fs::metadata(&target).unwrap().uid(), 65534, "{err}");
    let cfg = write_file(dir.path(), "converted.toml", &toml);
    std::fs::set_permissions(&cfg, std::fs::Permissions::from_mode(0o644)).unwrap();
    let agent =
        Agent::start_wrapped(&cfg, &[], &["/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]);
    assert!(wait_for(Duration::from_secs(20), || lines_in(&r).len() >= 50), "{}", agent.stderr_text());
    std::thread::sleep(Duration::from_secs(1));
    let err = agent.stderr_text();
    assert!(agent.terminate(Duration::from_secs(15)).success(), "{err}");
    let mut got = lines_in(&r);
    got.sort();
    let want: Vec<String> = text.lines().skip(50).map(String::from).collect();
    assert_eq!(got, want, "from where Promtail stopped, nothing twice: {err}");
}

#[test]
fn a_promtail_positions_file_carries_over_half_read_files_without_a_gap_or_a_resend() {
    let dir = tempfile::tempdir().unwrap();
    let r = Receiver::start(&["--max-query-limit", "1000000"]);
    let text = |name: &str| (0..100).map(|i| format!("{name} {i:03}\n")).collect::<String>();
    let (a, b, short) = (text("a"), text("b"), text("short"));
    std::fs::write(dir.path().join("a.log"), &a).unwrap();
    std::fs::write(dir.path().join("b.log"), &b).unwrap();
    std::fs::write(dir.path().join("short.log"), &short).unwrap();
    let at = |t: &str, lines: usize| t.lines().take(lines).map(|l| l.len() + 1).sum::<usize>();
    let d = dir.path().display();
    let positions = format!(
        "positions:\n  {d}/a.log: \"{}\"\n  {d}/b.log: \"{}\"\n  {d}/gone.log: \"123\"\n  {d}/short.log: \"99999\"\n  cursor-journal-sys: \"s=1;i=2\"\n",
        at(&a, 50),
        at(&b, 30)
    );
    write_file(dir.path(), "positions.yaml", &positions);
    let port = free_port();
    let promtail = format!(
        r#"server:
  http_listen_address: 127.0.0.1
  http_listen_port: {port}
clients:
  - url: {url}/logstore/api/v1/push
positions:
  filename: {d}/positions.yaml
scrape_configs:
  - job_name: app
    static_configs:
      - labels: {{ job: multi, __path__: {d}/*.log }}
"#,
        url = r.base
    );
    let ours = format!("{d}/tailship-positions.json");
    let args = ["--positions", &format!("{d}/positions.yaml"), "--positions-out", &ours];
    let (out, toml) = convert(dir.path(), &promtail, &args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("2 file offset(s) and 1 journal cursor(s) carried over"), "{err}");
    // The notes know the offsets were carried over.
    assert!(
        err.contains("--positions carried Promtail's offsets over") && !err.contains("convert with `--positions"),
        "{err}"
    );
    assert!(err.contains("gone.log") && err.contains("short.log") && err.contains("shorter than its offset"), "{err}");
    let saved = std::fs::read_to_string(dir.path().join("tailship-positions.json")).unwrap();
    assert!(saved.contains("s=1;i=2"), "{saved}");
    // Converting again does not overwrite what the agent may have moved on since.
    let (again, _) = convert(dir.path(), &promtail, &args);
    assert_eq!(again.status.code(), Some(2), "{}", String::from_utf8_lossy(&again.stderr));
    let cfg = write_file(dir.path(), "converted.toml", &toml);
    let agent = Agent::start(&cfg);
    let expected = 50 + 70 + 100;
    assert!(wait_for(Duration::from_secs(20), || lines_in(&r).len() >= expected), "{}", agent.stderr_text());
    assert!(agent.terminate(Duration::from_secs(15)).success());
    let mut got = lines_in(&r);
    got.sort();
    let mut want: Vec<String> =
        a.lines().skip(50).chain(b.lines().skip(30)).chain(short.lines()).map(String::from).collect();
    want.sort();
    assert_eq!(got, want, "a from line 50, b from line 30, short.log (not carried over) whole; nothing twice");
}
