//! What made converted journal jobs give other streams than Promtail's,
//! each fixed and checked on its own through the real binary: the journal
//! source's keys that make it read as Promtail's journal target.

use std::path::Path;
use std::time::Duration;

use super::entries::{self, now_us, Entry};
use crate::agent::{Agent, AgentToml};
use crate::common::wait_for;
use crate::recorder::{Pushed, Recorder};

fn f(k: &str, v: &str) -> (String, Vec<u8>) {
    (k.to_string(), v.as_bytes().to_vec())
}

/// A config with one journal source reading `journal`, its keys `source`.
fn config(dir: &Path, url: &str, journal: &Path, source: &str) -> std::path::PathBuf {
    let client = "api_prefix = \"/loki/api/v1\"\nbatch = { max_bytes = \"64KiB\", max_wait = \"100ms\" }";
    let source = format!("[[sources]]\ntype = \"journal\"\nname = \"sys\"\npath = \"{}\"\n{source}", journal.display());
    AgentToml::new(dir, "10s").bare_client(url, client).then(&source).write("tailship.toml")
}

/// Runs tailship on `journal` with `source` until `n` entries came (or 20 s).
fn run(dir: &Path, journal: &Path, source: &str, n: usize) -> (Vec<Pushed>, String) {
    let r = Recorder::start();
    let agent = Agent::start(&config(dir, &r.base, journal, source));
    wait_for(Duration::from_secs(20), || r.len() >= n);
    let metrics = agent.metrics();
    assert!(agent.terminate(Duration::from_secs(15)).success());
    (r.entries(), metrics)
}

fn service(t: u64, unit: &str, priority: &str, message: &str) -> Entry {
    let fields = vec![
        f("_SYSTEMD_UNIT", unit),
        f("SYSLOG_IDENTIFIER", unit.trim_end_matches(".service")),
        f("PRIORITY", priority),
        f("_HOSTNAME", "web1"),
        f("MESSAGE", message),
    ];
    (t, fields)
}

fn kernel(t: u64) -> Entry {
    (t, vec![f("SYSLOG_IDENTIFIER", "kernel"), f("PRIORITY", "1"), f("MESSAGE", "oom")])
}

#[test]
fn a_kernel_message_gets_no_unit_from_its_identifier_and_no_level_where_the_job_asked_for_none() {
    if super::cannot_run() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let journal = tmp.path().join("j");
    let t = now_us() - 60_000_000;
    entries::write(&journal, &[kernel(t), service(t + 1, "nginx.service", "6", "GET /")]);
    let keys = "labels = { job = \"j\" }\nhost_label = false\nunit_label = \"systemd_unit\"\nlevel_label = false";
    let (got, _) = run(tmp.path(), &journal, keys, 2);
    let labels: Vec<Vec<(&str, &str)>> =
        got.iter().map(|e| e.labels.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect()).collect();
    assert!(labels.contains(&vec![("job", "j")]), "the kernel's entry: no unit, no level: {labels:?}");
    assert!(labels.contains(&vec![("job", "j"), ("unit", "nginx.service")]), "{labels:?}");
}

#[test]
fn a_json_line_without_address_fields_has_no_cursor_and_the_rules_see_none_as_promtail_3_6() {
    if super::cannot_run() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let journal = tmp.path().join("j");
    entries::write(&journal, &[service(now_us() - 60_000_000, "nginx.service", "6", "GET /")]);
    let keys =
        "labels = { job = \"j\" }\njson = true\naddress_fields = false\nlevel_label = false\nunit_label = \"none\"\n\
                host_label = false\n\
                relabel = [{ source_labels = [\"__journal___cursor\"], target_label = \"cursor\" }]";
    let (got, _) = run(tmp.path(), &journal, keys, 1);
    assert_eq!(got.len(), 1);
    assert!(!got[0].line.contains("__CURSOR") && !got[0].line.contains("__REALTIME_TIMESTAMP"), "{}", got[0].line);
    assert!(!got[0].line.contains("__MONOTONIC_TIMESTAMP") && got[0].line.contains("\"_BOOT_ID\""), "{}", got[0].line);
    assert!(!got[0].labels.contains_key("cursor"), "{:?}", got[0].labels);
}

#[test]
fn a_multiline_stage_joins_journal_entries_instead_of_check_refusing_it() {
    if super::cannot_run() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let journal = tmp.path().join("j");
    let t = now_us() - 60_000_000;
    entries::write(
        &journal,
        &[
            service(t, "app.service", "3", "2024-05-01 10:00:04 ERROR boom"),
            service(t + 1, "app.service", "3", "\tat A.main(A.java:10)"),
            service(t + 2, "app.service", "3", "\tat B.run(B.java:20)"),
            service(t + 3, "app.service", "6", "2024-05-01 10:00:05 INFO next"),
        ],
    );
    let keys = "labels = { job = \"j\" }\nlevel_label = false\nhost_label = false\n\
                stages = [{ multiline = { start = '^\\d{4}-', max_wait = \"300ms\" } }]";
    let (got, _) = run(tmp.path(), &journal, keys, 2);
    let lines: Vec<(&str, i128)> = got.iter().map(|e| (e.line.as_str(), e.ts)).collect();
    assert!(
        lines.contains(&(
            "2024-05-01 10:00:04 ERROR boom\n\tat A.main(A.java:10)\n\tat B.run(B.java:20)",
            t as i128 * 1000
        )),
        "joined, at its first entry's time: {lines:?}"
    );
    assert!(lines.contains(&("2024-05-01 10:00:05 INFO next", (t + 3) as i128 * 1000)), "{lines:?}");
}

#[test]
fn an_entry_with_no_labels_is_dropped_and_counted_as_promtail_drops_it() {
    if super::cannot_run() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let journal = tmp.path().join("j");
    let t = now_us() - 60_000_000;
    entries::write(&journal, &[service(t, "a.service", "6", "one"), service(t + 1, "b.service", "6", "two")]);
    let keys = "host_label = false\nunit_label = \"none\"\nlevel_label = false";
    let r = Recorder::start();
    let agent = Agent::start(&config(tmp.path(), &r.base, &journal, keys));
    let counted = |m: &str| {
        m.lines().any(|l| l.contains("lines_dropped_total") && l.contains("journal_no_labels") && l.ends_with(" 2"))
    };
    assert!(wait_for(Duration::from_secs(20), || counted(&agent.metrics())), "{}", agent.metrics());
    assert!(agent.stderr_text().contains("no labels"), "said: {}", agent.stderr_text());
    assert!(agent.terminate(Duration::from_secs(15)).success());
    assert_eq!(r.len(), 0, "nothing shipped");
}

#[test]
fn a_saved_cursor_older_than_max_age_is_not_resumed_from_with_cursor_max_age() {
    if super::cannot_run() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let journal = tmp.path().join("j");
    let now = now_us();
    let min = 60_000_000;
    entries::write(
        &journal,
        &[service(now - 90 * min, "a.service", "6", "A"), service(now - 80 * min, "a.service", "6", "B")],
    );
    let keys = |age: &str| format!("labels = {{ job = \"j\" }}\nmax_age = \"{age}\"\ncursor_max_age = true");
    let (first, _) = run(tmp.path(), &journal, &keys("2h"), 2);
    assert_eq!(first.iter().map(|e| e.line.as_str()).collect::<Vec<_>>(), ["A", "B"]);
    // B's cursor is saved, 80 minutes old; C and D come after it.
    entries::write(
        &journal,
        &[service(now - 70 * min, "a.service", "6", "C"), service(now - 20 * min, "a.service", "6", "D")],
    );
    let (second, _) = run(tmp.path(), &journal, &keys("1h"), 1);
    let lines: Vec<&str> = second.iter().map(|e| e.line.as_str()).collect();
    assert_eq!(lines, ["D"], "the cursor is older than max_age: the source starts at an hour ago, as Promtail");
}
