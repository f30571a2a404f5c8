//! The journal each job reads: entries in journal export format written
//! into a journal file by `systemd-journal-remote` (no journald needed),
//! the same for both agents. Every job gets entries of the kinds a host's
//! journal holds (a service with every trusted field, the kernel with no
//! unit, sshd, a Docker container through the journald log driver, a user
//! unit, cron, an entry without `MESSAGE`, one without `PRIORITY`, every
//! priority, a Java stack trace over several entries, binary and CRLF
//! messages), entries 3, 10 and 30 hours old (for `max_age`), and entries
//! made for the job: a message per line built from its stages (see
//! `promtail_corpus/inputs.rs`), an entry per `matches` term, and an entry
//! per journal field its relabel rules read, with a value their regex
//! matches.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;

use super::jobs::{self, Job};
use crate::regex_gen::sample;

pub const REMOTE: &str = crate::common::JOURNAL_REMOTE;
const BOOT: &str = "0123456789abcdef0123456789abcdef";
const MACHINE: &str = "fedcba9876543210fedcba9876543210";

/// One entry: its time (Unix µs) and fields (a value is bytes: some are not UTF-8).
pub type Entry = (u64, Vec<(String, Vec<u8>)>);

fn f(k: &str, v: &str) -> (String, Vec<u8>) {
    (k.to_string(), v.as_bytes().to_vec())
}

/// Now, Unix microseconds.
pub fn now_us() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_micros() as u64
}

/// The fields of a service's entry (every trusted field journald adds).
fn service(unit: &str, ident: &str, pid: &str, priority: &str, message: &[u8]) -> Vec<(String, Vec<u8>)> {
    vec![
        f("_SYSTEMD_UNIT", unit),
        f("SYSLOG_IDENTIFIER", ident),
        f("_PID", pid),
        f("_COMM", ident),
        f("_EXE", &format!("/usr/sbin/{ident}")),
        f("_CMDLINE", &format!("/usr/sbin/{ident} -g daemon off;")),
        f("_UID", "0"),
        f("_GID", "0"),
        f("_SYSTEMD_SLICE", "system.slice"),
        f("_SYSTEMD_CGROUP", &format!("/system.slice/{unit}")),
        f("_SYSTEMD_INVOCATION_ID", "8c1e2d3f4a5b6c7d8e9f0a1b2c3d4e5f"),
        f("_TRANSPORT", "stdout"),
        f("_HOSTNAME", "web1"),
        f("_MACHINE_ID", MACHINE),
        f("SYSLOG_FACILITY", "3"),
        f("PRIORITY", priority),
        ("MESSAGE".to_string(), message.to_vec()),
    ]
}

/// The entries every job reads, at `t` (µs) on.
fn common(t: u64) -> Vec<Entry> {
    let mut v: Vec<Entry> = vec![
        (t, service("nginx.service", "nginx", "1234", "6", b"GET /index.html 200 <a & b>")),
        (
            t + 1,
            vec![
                f("SYSLOG_IDENTIFIER", "kernel"),
                f("_TRANSPORT", "kernel"),
                f("SYSLOG_FACILITY", "0"),
                f("_HOSTNAME", "web1"),
                f("_MACHINE_ID", MACHINE),
                f("PRIORITY", "1"),
                f("MESSAGE", "Out of memory: Killed process 4321 (java)"),
            ],
        ),
        (
            t + 2,
            service("ssh.service", "sshd", "22", "5", b"Accepted publickey for user from 10.0.0.1 port 51234 ssh2"),
        ),
        (t + 3, {
            let mut d = service(
                "docker.service",
                "web",
                "999",
                "3",
                br#"{"level":"error","msg":"container line","ts":"2024-05-01T10:00:00Z"}"#,
            );
            d.extend([
                f("CONTAINER_NAME", "web"),
                f("CONTAINER_ID", "abcdef123456"),
                f("CONTAINER_ID_FULL", "abcdef1234567890abcdef1234567890abcdef1234567890abcdef1234567890"),
                f("CONTAINER_TAG", "web"),
                f("IMAGE_NAME", "nginx:latest"),
                f("_TRANSPORT", "journal"),
            ]);
            d
        }),
        (t + 4, {
            let mut u = service("user@1000.service", "app", "4000", "4", b"user unit warning");
            u.extend([f("_SYSTEMD_USER_UNIT", "app.service"), f("_SYSTEMD_OWNER_UID", "1000"), f("_UID", "1000")]);
            u
        }),
        (t + 5, service("cron.service", "CRON", "77", "6", b"(root) CMD (run-parts /etc/cron.hourly)")),
        (t + 6, vec![f("_SYSTEMD_UNIT", "nomsg.service"), f("CODE_FILE", "main.c"), f("CODE_LINE", "42")]),
        (t + 7, vec![f("_SYSTEMD_UNIT", "nopri.service"), f("MESSAGE", "an entry without PRIORITY")]),
        (
            t + 8,
            service(
                "app.service",
                "app",
                "500",
                "3",
                b"2024-05-01 10:00:04,123 ERROR [main] com.example.App - java exception",
            ),
        ),
        (t + 9, service("app.service", "app", "500", "3", b"\tat com.example.App.main(App.java:10)")),
        (t + 10, service("app.service", "app", "500", "3", b"\tat java.base/java.lang.Thread.run(Thread.java:833)")),
        (
            t + 11,
            service("app.service", "app", "500", "6", b"2024-05-01 10:00:05,000 INFO [main] com.example.App - next"),
        ),
        (t + 12, service("app.service", "app", "500", "6", b"invalid utf8 \xff\xfe message")),
        (t + 13, service("app.service", "app", "500", "6", b"crlf message\r\n")),
    ];
    for p in 0..8u64 {
        let pri = p.to_string();
        v.push((t + 20 + p, service("prio.service", "prio", "600", &pri, format!("priority {p} message").as_bytes())));
    }
    v
}

/// The entries of `job`: the common ones, its built lines, its matches'
/// and relabel rules' fields, and the old ones.
pub fn of(job: &Job, built: &[String]) -> Vec<Entry> {
    let now = now_us();
    let t = now - 300_000_000;
    let mut v = vec![
        (now - 30 * 3_600_000_000, service("old.service", "old", "1", "6", b"thirty hours old")),
        (now - 10 * 3_600_000_000, service("old.service", "old", "1", "6", b"ten hours old")),
        (now - 3 * 3_600_000_000, service("old.service", "old", "1", "6", b"three hours old")),
    ];
    v.extend(common(t));
    for (i, line) in built.iter().enumerate() {
        v.push((t + 100 + i as u64, service("built.service", "built", "700", "6", line.as_bytes())));
    }
    for (i, (field, value)) in jobs::matches(job).iter().enumerate() {
        let mut e = service("matched.service", "matched", "800", "6", format!("matches {field}={value}").as_bytes());
        e.retain(|(k, _)| k != field);
        e.push((field.clone(), value.as_bytes().to_vec()));
        v.push((t + 200 + i as u64, e));
    }
    for (i, (field, regex)) in jobs::relabelled_fields(job).iter().enumerate() {
        let value = regex
            .as_deref()
            .and_then(|re| sample(re, &BTreeMap::new(), 0))
            .filter(|s| !s.is_empty() && !s.contains('\n'))
            .unwrap_or_else(|| format!("{}-value", field.to_ascii_lowercase()));
        let mut e = service("relabelled.service", "relabelled", "900", "6", format!("field {field}").as_bytes());
        e.retain(|(k, _)| k != field);
        e.push((field.clone(), value.into_bytes()));
        v.push((t + 300 + i as u64, e));
    }
    v
}

/// Writes `entries` into a journal file in `dir` (made).
pub fn write(dir: &Path, entries: &[Entry]) {
    std::fs::create_dir_all(dir).unwrap();
    let mut sorted = entries.to_vec();
    sorted.sort_by_key(|(t, _)| *t);
    let mut data = Vec::new();
    for (i, (ts, fields)) in sorted.iter().enumerate() {
        writeln!(data, "__REALTIME_TIMESTAMP={ts}\n__MONOTONIC_TIMESTAMP={}\n_BOOT_ID={BOOT}", i + 1).unwrap();
        for (k, v) in fields {
            if v.iter().all(|b| *b >= 0x20 && *b != 0x7f) && std::str::from_utf8(v).is_ok() {
                data.extend_from_slice(k.as_bytes());
                data.push(b'=');
                data.extend_from_slice(v);
                data.push(b'\n');
            } else {
                writeln!(data, "{k}").unwrap();
                data.extend_from_slice(&(v.len() as u64).to_le_bytes());
                data.extend_from_slice(v);
                data.push(b'\n');
            }
        }
        data.push(b'\n');
    }
    crate::common::journal_remote(&dir.join("system.journal"), &data);
}
