//! The journal source through the real binary, on journal files made by
//! `systemd-journal-remote` from journal export format (no journald needed),
//! read by the real `journalctl`, shipped to `tailship receive`.

use crate::agent;
use crate::common;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use tempfile::TempDir;

use agent::{free_port, query_all, Agent, AgentToml};
use common::{bin, wait_for, Receiver};

mod reader;

const REMOTE: &str = common::JOURNAL_REMOTE;
const BIG: &[&str] = &["--max-query-limit", "1000000"];
const BOOT: &str = "0123456789abcdef0123456789abcdef";

/// True when this machine can make and read journal files; says why not.
fn can_run() -> bool {
    let journalctl = Command::new("journalctl").arg("--version").stdout(Stdio::null()).status().is_ok();
    if !Path::new(REMOTE).exists() || !journalctl {
        eprintln!("SKIPPED: needs {REMOTE} (Debian package systemd-journal-remote) and journalctl");
        return false;
    }
    true
}

/// One field of an export-format entry.
enum V<'a> {
    T(&'a str),
    B(&'a [u8]),
}

/// The fields of an entry, all text.
fn tx<'a>(fields: &[(&'a str, &'a str)]) -> Vec<(&'a str, V<'a>)> {
    fields.iter().map(|&(k, v)| (k, V::T(v))).collect()
}

/// The fields of an entry, all text, from `KEY=value` lines.
fn fields(lines: &str) -> Vec<(&str, V<'_>)> {
    lines.lines().map(|l| l.split_once('=').expect("KEY=value")).map(|(k, v)| (k, V::T(v))).collect()
}

/// Now, in Unix microseconds.
fn now_us() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_micros() as u64
}

/// Appends entries to the journal file `file` (made on first use). Each entry
/// gets `__REALTIME_TIMESTAMP` from its `(time in µs, fields)`.
fn append(file: &Path, entries: &[(u64, Vec<(&str, V<'_>)>)]) {
    let mut data = Vec::new();
    for (i, (ts, fields)) in entries.iter().enumerate() {
        writeln!(data, "__REALTIME_TIMESTAMP={ts}\n__MONOTONIC_TIMESTAMP={}\n_BOOT_ID={BOOT}", i + 1).unwrap();
        for (k, v) in fields {
            match v {
                V::T(t) => writeln!(data, "{k}={t}").unwrap(),
                V::B(b) => {
                    writeln!(data, "{k}").unwrap();
                    data.extend_from_slice(&(b.len() as u64).to_le_bytes());
                    data.extend_from_slice(b);
                    data.push(b'\n');
                }
            }
        }
        data.push(b'\n');
    }
    common::journal_remote(file, &data);
}

/// `n` numbered entries of unit `unit`, one µs apart from `start`.
fn numbered(file: &Path, unit: &str, from: usize, n: usize, start: u64) {
    let msgs: Vec<String> = (from..from + n).map(|i| format!("entry {i:06} of {unit}")).collect();
    let entries: Vec<(u64, Vec<(&str, V<'_>)>)> = msgs
        .iter()
        .enumerate()
        .map(|(i, m)| (start + i as u64, tx(&[("MESSAGE", m), ("_SYSTEMD_UNIT", unit), ("PRIORITY", "6")])))
        .collect();
    append(file, &entries);
}

/// A config with one journal source reading `dir`, `extra` TOML appended to it.
fn config(dir: &Path, url: &str, journal: &Path, extra: &str) -> PathBuf {
    let client = "batch = { max_bytes = \"64KiB\", max_wait = \"100ms\" }\n\
                  retry = { min_backoff = \"20ms\", max_backoff = \"500ms\" }";
    let source = format!(
        "[[sources]]\ntype = \"journal\"\nname = \"sys\"\npath = \"{}\"\nlabels = {{ job = \"journal\" }}\n{extra}",
        journal.display()
    );
    AgentToml::new(dir, "10s").client(url, client).then(&source).write("tailship.toml")
}

fn stat(r: &Receiver, key: &str) -> u64 {
    r.stats()[key].as_u64().unwrap_or(0)
}

/// A receiver and a temp dir with an empty `journal/` in it; `None` (and
/// why) where this machine cannot make and read journal files.
fn setup() -> Option<(Receiver, TempDir, PathBuf)> {
    if !can_run() {
        return None;
    }
    let r = Receiver::start(BIG);
    let dir = tempfile::tempdir().unwrap();
    let jdir = dir.path().join("journal");
    std::fs::create_dir(&jdir).unwrap();
    Some((r, dir, jdir))
}

/// Waits up to `secs` for `r` to have stored `n` entries.
fn wait_entries(r: &Receiver, agent: &Agent, secs: u64, n: u64) {
    assert!(wait_for(Duration::from_secs(secs), || stat(r, "entries") == n), "{}", agent.stderr_text());
}

/// SIGTERM: the agent exits 0 within 15 s.
fn stop(agent: Agent) {
    assert!(agent.terminate(Duration::from_secs(15)).success());
}

/// The lines of `query` stored in `r`.
fn lines(r: &Receiver, query: &str) -> Vec<String> {
    query_all(r, query, None).into_iter().map(|e| e.line).collect()
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap().trim().to_string()
}

#[test]
fn entries_ship_with_unit_level_and_host_labels_their_own_timestamps_and_the_stages() {
    let Some((r, dir, jdir)) = setup() else {
        return;
    };
    let t = now_us() - 60_000_000;
    append(
        &jdir.join("a.journal"),
        &[
            (
                t,
                fields("MESSAGE=GET / user=ann\n_SYSTEMD_UNIT=nginx.service\nSYSLOG_IDENTIFIER=nginx\nPRIORITY=3\n_HOSTNAME=web-7"),
            ),
            (t + 1, fields("MESSAGE=cron ran\nSYSLOG_IDENTIFIER=CRON\nPRIORITY=6")),
            (
                t + 2,
                vec![
                    ("MESSAGE", V::B(b"bin \xff\x00 end")),
                    ("SYSLOG_IDENTIFIER", V::T("dumper")),
                    ("PRIORITY", V::T("0")),
                ],
            ),
            (t + 3, vec![("MESSAGE", V::B(b"\x1b[31mred\x1b[0m")), ("PRIORITY", V::T("4"))]),
            (t + 4, fields("CODE_FILE=no message here")),
            (t + 5, fields("MESSAGE=GET /healthcheck\n_SYSTEMD_UNIT=nginx.service\nPRIORITY=7")),
        ],
    );
    let cfg = config(
        dir.path(),
        &r.base,
        &jdir,
        r#"stages = [ { regex = 'user=(?P<user>\w+)', labels = ["user"] }, { drop = 'healthcheck' } ]"#,
    );
    let agent = Agent::start(&cfg);
    wait_entries(&r, &agent, 20, 4);
    let got = query_all(&r, r#"{job="journal"}"#, None);
    let me = hostname();
    let find = |line: &str| got.iter().find(|e| e.line == line).unwrap_or_else(|| panic!("{line} missing: {got:?}"));
    let labels = |line: &str| serde_json::Value::Object(find(line).labels.clone()).to_string();
    assert_eq!(
        labels("GET / user=ann"),
        r#"{"host":"web-7","job":"journal","level":"error","unit":"nginx.service","user":"ann"}"#
    );
    assert_eq!(labels("cron ran"), format!(r#"{{"host":"{me}","job":"journal","level":"info","unit":"CRON"}}"#));
    assert_eq!(
        labels("bin \u{fffd}\u{0} end"),
        format!(r#"{{"host":"{me}","job":"journal","level":"emerg","unit":"dumper"}}"#)
    );
    assert_eq!(labels("\u{1b}[31mred\u{1b}[0m"), format!(r#"{{"host":"{me}","job":"journal","level":"warning"}}"#));
    for (i, line) in
        ["GET / user=ann", "cron ran", "bin \u{fffd}\u{0} end", "\u{1b}[31mred\u{1b}[0m"].iter().enumerate()
    {
        assert_eq!(find(line).ts, (t as i128 + i as i128) * 1000, "{line}: __REALTIME_TIMESTAMP in ns");
    }
    assert!(wait_for(Duration::from_secs(5), || agent
        .metric("tailship_lines_dropped_total{reason=\"journal_no_message\",source=\"sys\"}")
        == 1.0));
    assert_eq!(agent.metric("tailship_lines_dropped_total{reason=\"drop_stage\",source=\"sys\"}"), 1.0);
    assert_eq!(agent.metric("tailship_lines_repaired_total{reason=\"journal_binary\",source=\"sys\"}"), 2.0);
    assert_eq!(agent.metric("tailship_lines_repaired_total{reason=\"invalid_utf8\",source=\"sys\"}"), 1.0);
    assert_eq!(agent.metric("tailship_source_lines_total{source=\"sys\"}"), 6.0);
    stop(agent);
}

/// Promtail's `journal.json`: the whole entry, every field, as the line.
#[test]
fn with_json_each_line_is_the_whole_entry_as_promtail_ships_it() {
    let Some((r, dir, jdir)) = setup() else {
        return;
    };
    let t = now_us() - 60_000_000;
    append(
        &jdir.join("a.journal"),
        &[
            (t, fields("MESSAGE=GET /a<b>\n_SYSTEMD_UNIT=nginx.service\nPRIORITY=3\nCODE_LINE=42")),
            (t + 1, fields("CODE_FILE=no message here\nPRIORITY=6")),
        ],
    );
    let agent = Agent::start(&config(dir.path(), &r.base, &jdir, "json = true"));
    wait_entries(&r, &agent, 20, 2);
    let mut got = query_all(&r, r#"{job="journal"}"#, None);
    got.sort_by_key(|e| e.ts);
    let first: serde_json::Value = serde_json::from_str(&got[0].line).unwrap();
    assert_eq!(first["MESSAGE"], "GET /a<b>");
    assert_eq!(first["CODE_LINE"], "42");
    assert_eq!(first["_BOOT_ID"], BOOT);
    assert_eq!(first["__REALTIME_TIMESTAMP"], t.to_string());
    assert!(first["__CURSOR"].as_str().is_some_and(|c| c.starts_with("s=")));
    assert!(first.get("__SEQNUM").is_none());
    assert!(got[0].line.contains(r"GET /a\u003cb\u003e"), "Go's escaping: {}", got[0].line);
    assert_eq!(got[0].labels["unit"], "nginx.service");
    assert_eq!(got[0].labels["level"], "error");
    assert_eq!(got[0].ts, t as i128 * 1000);
    let keys: Vec<&String> = first.as_object().unwrap().keys().collect();
    let mut sorted = keys.clone();
    sorted.sort();
    assert_eq!(keys, sorted, "keys sorted as Go writes a map");
    // An entry without MESSAGE ships too: the line is its fields.
    let second: serde_json::Value = serde_json::from_str(&got[1].line).unwrap();
    assert_eq!(second["CODE_FILE"], "no message here");
    stop(agent);
}

/// Promtail's journal `relabel_configs` read any journal field as
/// `__journal_<field>`; tailship's journal source took no rules (only unit,
/// level and host, and a `keep` of units as matches, carried over).
#[test]
fn relabel_rules_read_every_journal_field_and_may_drop_entries() {
    let Some((r, dir, jdir)) = setup() else {
        return;
    };
    let t = now_us() - 60_000_000;
    let entry = |i: u64, msg: &'static str, ident: &'static str, transport: &'static str| {
        (
            t + i,
            tx(&[
                ("MESSAGE", msg),
                ("SYSLOG_IDENTIFIER", ident),
                ("_TRANSPORT", transport),
                ("PRIORITY", "4"),
                ("CONTAINER_NAME", "web-1"),
            ]),
        )
    };
    append(
        &jdir.join("a.journal"),
        &[
            entry(0, "accepted key", "sshd", "syslog"),
            entry(1, "ring buffer", "kernel", "kernel"),
            entry(2, "job ran", "cron", "syslog"),
        ],
    );
    let rules = r#"relabel = [
  { source_labels = ["__journal__transport"], regex = "kernel", action = "drop" },
  { source_labels = ["__journal_syslog_identifier"], target_label = "app" },
  { source_labels = ["__journal_container_name", "__journal_priority_keyword"], separator = "/", target_label = "what" },
]"#;
    let agent = Agent::start(&config(dir.path(), &r.base, &jdir, rules));
    wait_entries(&r, &agent, 20, 2);
    assert!(wait_for(Duration::from_secs(10), || agent
        .metric(r#"tailship_lines_dropped_total{reason="relabel",source="sys"}"#)
        == 1.0));
    let mut got = query_all(&r, r#"{job="journal"}"#, None);
    got.sort_by_key(|e| e.ts);
    let label = |e: &agent::Stored, k: &str| e.labels[k].as_str().unwrap_or("-").to_string();
    let seen: Vec<(&str, String, String, String)> =
        got.iter().map(|e| (e.line.as_str(), label(e, "app"), label(e, "what"), label(e, "unit"))).collect();
    let want = |l, app: &str| (l, app.to_string(), "web-1/warning".to_string(), app.to_string());
    assert_eq!(seen, [want("accepted key", "sshd"), want("job ran", "cron")]);
    assert!(got.iter().all(|e| e.labels.keys().all(|k| !k.starts_with("__"))));
    stop(agent);
}

#[test]
fn matches_select_entries_as_journalctl_does() {
    let Some((r, dir, jdir)) = setup() else {
        return;
    };
    let t = now_us() - 60_000_000;
    let e = |i: u64, unit: &'static str, prio: &'static str| {
        (
            t + i,
            tx(&[("MESSAGE", ["m0", "m1", "m2", "m3", "m4"][i as usize]), ("_SYSTEMD_UNIT", unit), ("PRIORITY", prio)]),
        )
    };
    append(
        &jdir.join("a.journal"),
        &[
            e(0, "a.service", "3"),
            e(1, "b.service", "3"),
            e(2, "c.service", "3"),
            e(3, "a.service", "6"),
            e(4, "b.service", "3"),
        ],
    );
    // The same field ORed, different fields ANDed.
    let cfg = config(
        dir.path(),
        &r.base,
        &jdir,
        r#"matches = ["_SYSTEMD_UNIT=a.service", "_SYSTEMD_UNIT=b.service", "PRIORITY=3"]"#,
    );
    let agent = Agent::start(&cfg);
    assert!(wait_for(Duration::from_secs(20), || stat(&r, "entries") >= 3), "{}", agent.stderr_text());
    // Later entries are read too: the one that matches ships, the others do not.
    append(
        &jdir.join("a.journal"),
        &[
            (t + 10, fields("MESSAGE=late c\n_SYSTEMD_UNIT=c.service\nPRIORITY=3")),
            (t + 11, fields("MESSAGE=late a\n_SYSTEMD_UNIT=a.service\nPRIORITY=3")),
        ],
    );
    wait_entries(&r, &agent, 20, 4);
    assert_eq!(lines(&r, r#"{job="journal"}"#), ["m0", "m1", "m4", "late a"]);
    stop(agent);
}

#[test]
fn a_service_that_is_down_stops_the_reading_within_the_queue_budget() {
    if !can_run() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let jdir = dir.path().join("journal");
    std::fs::create_dir(&jdir).unwrap();
    let total = 30_000;
    numbered(&jdir.join("a.journal"), "app.service", 0, total, now_us() - 600_000_000);
    // Nothing listens at the service's address.
    let url = format!("http://127.0.0.1:{}", free_port());
    let cfg = config(dir.path(), &url, &jdir, "");
    let text =
        std::fs::read_to_string(&cfg).unwrap().replace("[positions]", "[queue]\nmax_bytes = \"256KiB\"\n[positions]");
    std::fs::write(&cfg, text).unwrap();
    let agent = Agent::start(&cfg);
    let read = || agent.metric("tailship_source_lines_total{source=\"sys\"}");
    assert!(wait_for(Duration::from_secs(20), || read() > 0.0), "{}", agent.stderr_text());
    // Reading stops, well short of the journal, and stays stopped.
    let mut last = -1.0;
    assert!(wait_for(Duration::from_secs(20), || {
        let now = read();
        let still = now == last;
        last = now;
        std::thread::sleep(Duration::from_millis(500));
        still
    }));
    let queued = agent.metric("tailship_queue_bytes");
    eprintln!("service down: {last} of {total} entries read, queue {queued} bytes");
    assert!(last < (total / 2) as f64, "read {last} of {total} entries with the service down");
    assert!(queued <= (256 << 10) as f64, "queue {queued} bytes over its budget");
    agent.kill9();
}

fn check(dir: &Path, text: &str, path_env: Option<&str>) -> (Option<i32>, String) {
    let p = agent::write_file(dir, "t.toml", text);
    let mut cmd = Command::new(bin());
    cmd.args(["check", "--config"]).arg(&p);
    if let Some(path) = path_env {
        cmd.env("PATH", path);
    }
    let out = cmd.output().unwrap();
    (out.status.code(), format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr)))
}

#[test]
fn bad_journal_keys_exit_2_naming_them_and_a_missing_journalctl_is_a_warning_for_check_an_error_for_run() {
    let dir = tempfile::tempdir().unwrap();
    let bad = r#"[[sources]]
type = "journal"
matches = ["_SYSTEMD_UNIT=ok.service", "nginx.service", "lower=x"]
include = ["/var/log/*.log"]
multiline = { start = "^x" }
stages = [{ cri = {} }]
[[sources]]
type = "file"
include = ["/tmp/x.log"]
matches = ["A=b"]
path = "/var/log/journal"
"#;
    let (code, out) = check(dir.path(), bad, None);
    assert_eq!(code, Some(2), "{out}");
    for key in [
        "sources[0].matches[1]",
        "sources[0].matches[2]",
        "sources[0].include",
        "sources[0].multiline",
        "sources[0].stages[0].cri",
        "sources[1].matches",
        "sources[1].path",
    ] {
        assert!(out.contains(&format!("key `{key}`")), "{key}: {out}");
    }
    assert!(!out.contains("matches[0]"), "{out}");
    assert!(out.contains("is not FIELD=value"), "{out}");
    // Valid, on a machine without journalctl: check passes and says so; run refuses.
    let good = format!(
        "[positions]\npath = \"{}/p.json\"\n[[sources]]\ntype = \"journal\"\nmatches = [\"_SYSTEMD_UNIT=a.service\"]\nmax_age = \"12h\"\n",
        dir.path().display()
    );
    let (code, out) = check(dir.path(), &good, Some("/nonexistent"));
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains("sources[0].type: journalctl is not on PATH"), "{out}");
    assert!(out.contains("max_age = \"12h\"") && !out.contains("include"), "journal keys only: {out}");
    let p = agent::write_file(dir.path(), "t.toml", &good);
    let out = Command::new(bin()).args(["run", "--config"]).arg(&p).env("PATH", "/nonexistent").output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("key `sources[0].type`") && err.contains("journalctl was not found"), "{err}");
}

#[test]
fn a_saved_cursor_journalctl_refuses_is_dropped_and_the_source_starts_per_start_at() {
    let Some((r, dir, jdir)) = setup() else {
        return;
    };
    numbered(&jdir.join("a.journal"), "app.service", 0, 50, now_us() - 600_000_000);
    let saved = serde_json::json!({"version": 1, "files": [],
        "journals": [{"source": "sys", "path": jdir, "cursor": "not a cursor", "updated_at": now_us() / 1_000_000}]});
    std::fs::write(dir.path().join("positions.json"), saved.to_string()).unwrap();
    let cfg = config(dir.path(), &r.base, &jdir, "");
    let agent = Agent::start(&cfg);
    wait_entries(&r, &agent, 20, 50);
    assert!(agent.stderr_text().contains("refused the saved cursor"), "{}", agent.stderr_text());
    stop(agent);
    let text = std::fs::read_to_string(dir.path().join("positions.json")).unwrap();
    assert!(!text.contains("not a cursor") && text.contains("\"cursor\": \"s="), "{text}");
}

#[test]
fn the_new_stages_run_on_journal_messages_and_a_limit_counts_by_the_read_time_not_the_entries() {
    let Some((r, dir, jdir)) = setup() else {
        return;
    };
    // 60 JSON messages an entry-second apart: a limit clocked by entry times
    // would let them all through; by the read time (all read at once), the burst.
    let t = now_us() - 600_000_000;
    let msgs: Vec<String> = (0..60).map(|i| format!(r#"{{"severity":"warn","msg":"disk {i:02} full"}}"#)).collect();
    let entries: Vec<(u64, Vec<(&str, V<'_>)>)> = msgs
        .iter()
        .enumerate()
        .map(|(i, m)| (t + i as u64 * 1_000_000, tx(&[("MESSAGE", m), ("_SYSTEMD_UNIT", "app.service")])))
        .collect();
    append(&jdir.join("a.journal"), &entries);
    let cfg = config(
        dir.path(),
        &r.base,
        &jdir,
        r#"stages = [
  { json = { sev = "severity", msg = "msg" }, labels = ["sev"] },
  { output = "msg" },
  { limit = { rate = 1, burst = 5 } },
]"#,
    );
    let agent = Agent::start(&cfg);
    let dropped = "tailship_lines_dropped_total{reason=\"limit\",source=\"sys\"}";
    assert!(
        wait_for(Duration::from_secs(20), || stat(&r, "entries") as f64 + agent.metric(dropped) == 60.0),
        "{}",
        agent.stderr_text()
    );
    let got = query_all(&r, r#"{job="journal"}"#, None);
    assert!((5..=10).contains(&got.len()), "{} passed the limit: {got:?}", got.len());
    assert_eq!(got[0].line, "disk 00 full");
    assert_eq!(
        serde_json::Value::Object(got[0].labels.clone()).to_string(),
        format!(r#"{{"host":"{}","job":"journal","sev":"warn","unit":"app.service"}}"#, hostname())
    );
    assert_eq!(got[1].ts, (t as i128 + 1_000_000) * 1000, "the entry's own time");
    stop(agent);
}

#[test]
fn two_clients_each_keep_their_own_cursor_and_a_stopped_one_catches_up() {
    if !can_run() {
        return;
    }
    let a = Receiver::start(BIG);
    let b_addr = format!("127.0.0.1:{}", free_port());
    let b = Receiver::start_on(&b_addr, BIG);
    let dir = tempfile::tempdir().unwrap();
    let jdir = dir.path().join("journal");
    std::fs::create_dir(&jdir).unwrap();
    let file = jdir.join("a.journal");
    let t = now_us() - 600_000_000;
    numbered(&file, "app.service", 0, 300, t);
    let one = std::fs::read_to_string(config(dir.path(), &a.base, &jdir, "")).unwrap();
    let client = |name: &str, url: &str| {
        format!("[[clients]]\nname = \"{name}\"\nurl = \"{url}\"\nbatch = {{ max_wait = \"100ms\" }}\nretry = {{ min_backoff = \"20ms\", max_backoff = \"300ms\" }}\n")
    };
    let start = one.find("[client]").unwrap();
    let end = one.find("[positions]").unwrap();
    let text = format!("{}{}{}{}", &one[..start], &one[end..], client("a", &a.base), client("b", &b.base));
    let cfg = agent::write_file(dir.path(), "tailship.toml", &text);
    let agent = Agent::start(&cfg);
    assert!(
        wait_for(Duration::from_secs(20), || stat(&a, "entries") == 300 && stat(&b, "entries") == 300),
        "{}",
        agent.stderr_text()
    );
    b.stop();
    numbered(&file, "app.service", 300, 200, t + 1000);
    assert!(
        wait_for(Duration::from_secs(20), || stat(&a, "entries") == 500),
        "a goes on while b is down: {}",
        agent.stderr_text()
    );
    let b = Receiver::start_on(&b_addr, BIG);
    assert!(
        wait_for(Duration::from_secs(30), || stat(&b, "entries") == 200),
        "b catches up from its own cursor: {}",
        agent.stderr_text()
    );
    stop(agent);
    let want: Vec<String> = (300..500).map(|i| format!("entry {i:06} of app.service")).collect();
    assert_eq!(lines(&b, r#"{unit="app.service"}"#), want);
    assert_eq!(stat(&a, "duplicates"), 0);
    let saved: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("positions.json")).unwrap()).unwrap();
    for c in ["a", "b"] {
        assert!(saved["clients"][c]["journals"][0]["cursor"].as_str().is_some(), "{c}: {saved}");
    }
}
