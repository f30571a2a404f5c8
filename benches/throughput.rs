//! Whole-binary throughput benchmark: `tailship push` of a generated
//! 1,000,000-line log (about 100 bytes a line: timestamps, levels, paths, ids,
//! some JSON lines, some long lines) to `tailship receive --store null`,
//! with `compression = "none"` and `"gzip"`, several runs each.
//!
//! Reports the median and range of lines/s, MB/s, the agent's CPU seconds
//! (user + sys, from the child's rusage) per million lines, and its peak RSS.
//! Writes the table to stdout and `target/bench/throughput.json`.
//!
//! Run: `cargo bench --bench throughput` (env BENCH_LINES, BENCH_RUNS to change the size).

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Instant;

fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_tailship"))
}

/// Writes a realistic log of `n` lines; returns its size in bytes.
fn generate(path: &Path, n: usize) -> u64 {
    let mut f = std::io::BufWriter::new(std::fs::File::create(path).expect("create log"));
    let levels = ["INFO", "INFO", "INFO", "DEBUG", "WARN", "ERROR"];
    let paths = ["/api/v1/orders", "/api/v1/users/1842", "/static/js/app.4f2a.js", "/healthz", "/api/v1/cart/checkout"];
    let mut x: u64 = 0x9e3779b97f4a7c15;
    for i in 0..n {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let secs = 1_700_000_000 + i as u64 / 1000;
        let ts = format!(
            "2023-11-14T22:{:02}:{:02}.{:06}Z",
            (secs / 60) % 60,
            secs % 60,
            (i % 1000) * 1000 + (x % 1000) as usize
        );
        let level = levels[(x % levels.len() as u64) as usize];
        let line = match i % 50 {
            0 => format!(
                "{{\"ts\":\"{ts}\",\"level\":\"{}\",\"msg\":\"payment declined\",\"order\":{},\"user\":\"u{:05}\"}}",
                level.to_lowercase(),
                x % 1_000_000,
                x % 99_999
            ),
            7 => format!("{ts} {level} worker stack dump: {}", "frame at src/worker.rs:88 -> ".repeat(12)),
            _ => format!(
                "{ts} {level} request method=GET path={} status={} dur={}ms id={:016x}",
                paths[(x % paths.len() as u64) as usize],
                [200, 200, 200, 404, 500][(x % 5) as usize],
                x % 900,
                x
            ),
        };
        writeln!(f, "{line}").expect("write log");
    }
    f.flush().expect("flush log");
    std::fs::metadata(path).map(|m| m.len()).unwrap_or(0)
}

struct Receiver {
    child: Child,
    url: String,
}

impl Receiver {
    fn start() -> Receiver {
        let mut child = Command::new(bin())
            .args(["receive", "--listen", "127.0.0.1:0", "--store", "null"])
            .env("RUST_LOG", "warn")
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start receiver");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("stdout")).read_line(&mut line).expect("listening line");
        let url = line.trim().rsplit(' ').next().expect("url").to_string();
        Receiver { child, url }
    }

    fn cpu_seconds(&self) -> f64 {
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", self.child.id())).unwrap_or_default();
        let fields: Vec<&str> = stat.rsplit(')').next().unwrap_or("").split_whitespace().collect();
        let ticks = |i: usize| fields.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
        // SAFETY: sysconf has no preconditions.
        let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
        (ticks(11) + ticks(12)) / hz
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

struct Run {
    secs: f64,
    cpu: f64,
    rss_kb: u64,
    receiver_cpu: f64,
}

/// Runs `tailship push` once and reads its rusage with wait4.
fn push_once(r: &Receiver, config: &Path, log: &Path) -> Run {
    let recv_cpu_before = r.cpu_seconds();
    let started = Instant::now();
    let child = Command::new(bin())
        .args(["push", "--quiet", "--config"])
        .arg(config)
        .arg(log)
        .env("RUST_LOG", "warn")
        .stdin(Stdio::null())
        .spawn()
        .expect("start push");
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid value to be overwritten by wait4.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: wait4 on our own child with valid pointers.
    let rc = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    let secs = started.elapsed().as_secs_f64();
    assert_eq!(rc, pid, "wait4 failed");
    assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0, "tailship push failed");
    std::mem::forget(child);
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    Run {
        secs,
        cpu: tv(usage.ru_utime) + tv(usage.ru_stime),
        rss_kb: usage.ru_maxrss as u64,
        receiver_cpu: r.cpu_seconds() - recv_cpu_before,
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

fn range(v: &[f64]) -> (f64, f64) {
    (v.iter().cloned().fold(f64::INFINITY, f64::min), v.iter().cloned().fold(f64::NEG_INFINITY, f64::max))
}

fn main() {
    // `cargo bench` passes `--bench`; a filter argument that is not ours is ignored.
    let lines: usize = std::env::var("BENCH_LINES").ok().and_then(|v| v.parse().ok()).unwrap_or(1_000_000);
    let runs: usize = std::env::var("BENCH_RUNS").ok().and_then(|v| v.parse().ok()).unwrap_or(5);
    let dir = tempfile::tempdir().expect("temp dir");
    let log = dir.path().join("bench.log");
    let bytes = generate(&log, lines);
    println!("tailship push throughput: {lines} lines, {:.1} MB, {runs} runs per row", bytes as f64 / 1e6);
    println!("binary: {}", bin().display());
    let r = Receiver::start();
    let mut rows = Vec::new();
    println!(
        "{:<12} {:>14} {:>24} {:>10} {:>22} {:>12} {:>14}",
        "compression", "lines/s (med)", "range", "MB/s", "CPU s / M lines", "peak RSS", "receiver CPU"
    );
    for compression in ["none", "gzip"] {
        let config = dir.path().join(format!("{compression}.toml"));
        std::fs::write(&config, format!("[client]\nurl = \"{}\"\ncompression = \"{compression}\"\n", r.url))
            .expect("config");
        let results: Vec<Run> = (0..runs).map(|_| push_once(&r, &config, &log)).collect();
        let lps: Vec<f64> = results.iter().map(|x| lines as f64 / x.secs).collect();
        let cpu: Vec<f64> = results.iter().map(|x| x.cpu / (lines as f64 / 1e6)).collect();
        let rss: Vec<f64> = results.iter().map(|x| x.rss_kb as f64 / 1024.0).collect();
        let rcpu: Vec<f64> = results.iter().map(|x| x.receiver_cpu / (lines as f64 / 1e6)).collect();
        let (lo, hi) = range(&lps);
        let (clo, chi) = range(&cpu);
        let mbs = median(results.iter().map(|x| bytes as f64 / 1e6 / x.secs).collect());
        println!(
            "{compression:<12} {:>14.0} {:>24} {mbs:>10.1} {:>22} {:>9.1} MiB {:>11.3} s",
            median(lps.clone()),
            format!("{lo:.0}-{hi:.0}"),
            format!("{:.3} ({clo:.3}-{chi:.3})", median(cpu.clone())),
            median(rss.clone()),
            median(rcpu.clone()),
        );
        rows.push(serde_json::json!({
            "compression": compression,
            "lines": lines,
            "bytes": bytes,
            "runs": runs,
            "lines_per_sec": { "median": median(lps.clone()), "min": lo, "max": hi },
            "mb_per_sec_median": mbs,
            "cpu_sec_per_million_lines": { "median": median(cpu.clone()), "min": clo, "max": chi },
            "peak_rss_mib": { "median": median(rss.clone()), "max": range(&rss).1 },
            "receiver_cpu_sec_per_million_lines_median": median(rcpu),
        }));
    }
    let out = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/bench");
    let _ = std::fs::create_dir_all(&out);
    let json = serde_json::json!({ "benchmark": "push", "results": rows });
    let _ = std::fs::write(out.join("throughput.json"), serde_json::to_string_pretty(&json).unwrap_or_default());
    println!("wrote {}", out.join("throughput.json").display());
}
