//! Journal source benchmark: a journal file of N entries (made by
//! `systemd-journal-remote` from export format) read from its beginning by
//! `tailship run` through journalctl and pushed to `tailship receive --store
//! null`. Reports entries per second until all were acknowledged, the CPU
//! seconds per million entries of the agent and of its journalctl, and the
//! agent's peak RSS.
//!
//! Run: `cargo bench --bench journal` (env ENTRIES=200000, RUNS=3; the
//! figures are medians). Needs journalctl and /lib/systemd/systemd-journal-remote.

#[path = "common/mod.rs"]
mod common;

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use common::{bin, cpu_seconds, median, status_kb, Receiver};

const REMOTE: &str = "/lib/systemd/systemd-journal-remote";

fn env_or(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// Writes `n` entries of a typical size (a 100-byte message, unit, priority, host).
fn make_journal(file: &Path, n: u64) {
    let start = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_micros() as u64).unwrap_or(0) - 3_600_000_000;
    let mut child = Command::new(REMOTE)
        .arg(format!("--output={}", file.display()))
        .arg("-")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("systemd-journal-remote");
    let mut stdin = std::io::BufWriter::new(child.stdin.take().expect("stdin"));
    for i in 0..n {
        let unit = ["nginx.service", "sshd.service", "cron.service", "app.service"][(i % 4) as usize];
        writeln!(
            stdin,
            "__REALTIME_TIMESTAMP={}\n__MONOTONIC_TIMESTAMP={}\n_BOOT_ID=0123456789abcdef0123456789abcdef\n\
             MESSAGE=request {i:09} served in 12ms: GET /api/v1/items?page=3 HTTP/1.1 200 bytes=5120 agent=curl/8.1\n\
             _SYSTEMD_UNIT={unit}\nPRIORITY={}\n_HOSTNAME=web-1\n",
            start + i,
            i + 1,
            3 + i % 4
        )
        .expect("write");
    }
    drop(stdin);
    assert!(child.wait().expect("wait").success());
}

/// Pid of the agent's journalctl child.
fn journalctl_of(pid: u32) -> Option<u32> {
    for task in std::fs::read_dir(format!("/proc/{pid}/task")).ok()?.flatten() {
        let children = std::fs::read_to_string(task.path().join("children")).unwrap_or_default();
        for c in children.split_whitespace().filter_map(|c| c.parse::<u32>().ok()) {
            if std::fs::read_to_string(format!("/proc/{c}/comm")).is_ok_and(|n| n.trim() == "journalctl") {
                return Some(c);
            }
        }
    }
    None
}

fn main() {
    if !Path::new(REMOTE).exists() {
        eprintln!("journal bench: needs {REMOTE}");
        return;
    }
    let n = env_or("ENTRIES", 200_000);
    let runs = env_or("RUNS", 3);
    let dir = tempfile::tempdir().expect("tempdir");
    let jdir = dir.path().join("journal");
    std::fs::create_dir(&jdir).expect("mkdir");
    make_journal(&jdir.join("bench.journal"), n);
    let (mut rates, mut agent_cpu, mut jctl_cpu, mut rss) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for run in 0..runs {
        let r = Receiver::start(&["--store", "null"]);
        let cfg = dir.path().join("bench.toml");
        std::fs::write(
            &cfg,
            format!(
                "[server]\nlisten = \"\"\n[client]\nurl = \"{}\"\n[positions]\npath = \"{}/p{run}.json\"\n\
                 [[sources]]\ntype = \"journal\"\npath = \"{}\"\nmax_age = \"0\"\nlabels = {{ job = \"bench\" }}\n",
                r.url,
                dir.path().display(),
                jdir.display()
            ),
        )
        .expect("config");
        let t0 = Instant::now();
        let mut agent = Command::new(bin())
            .args(["run", "--config"])
            .arg(&cfg)
            .env("RUST_LOG", "warn")
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("agent");
        let mut jctl = None;
        while r.entries() < n {
            jctl = jctl.or_else(|| journalctl_of(agent.id()));
            assert!(t0.elapsed() < Duration::from_secs(600), "not delivered in 10 minutes");
            std::thread::sleep(Duration::from_millis(20));
        }
        let secs = t0.elapsed().as_secs_f64();
        let per_m = 1e6 / n as f64;
        agent_cpu.push(cpu_seconds(agent.id()) * per_m);
        jctl_cpu.push(jctl.map(cpu_seconds).unwrap_or(0.0) * per_m);
        rss.push(status_kb(agent.id(), "VmHWM") as f64);
        rates.push(n as f64 / secs);
        // SAFETY: kill(2) on our own child.
        unsafe { libc::kill(agent.id() as i32, libc::SIGTERM) };
        let _ = agent.wait();
        eprintln!("run {run}: {n} entries in {secs:.2}s");
    }
    println!(
        "journal: {n} entries, median of {runs}: {:.0} entries/s; CPU-s per million entries: agent {:.2}, journalctl {:.2}; agent peak RSS {:.0} kB",
        median(rates),
        median(agent_cpu),
        median(jctl_cpu),
        median(rss)
    );
}
