//! Idle benchmark: `tailship run` with default settings (max_open_files
//! 1,024) over 1,000 and then 10,000 files of one line each under one glob:
//! how long until every first line was delivered, then CPU and RSS with no
//! writes for 30 s.
//!
//! Run: `cargo bench --bench idle` (env IDLE_FILES, a comma-separated list of
//! file counts, and IDLE_SECS to change it).

#[path = "common/mod.rs"]
mod common;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{bin, cpu_seconds, status_kb, Receiver};

fn main() {
    let counts: Vec<usize> = std::env::var("IDLE_FILES")
        .ok()
        .map(|v| v.split(',').filter_map(|n| n.trim().parse().ok()).collect())
        .unwrap_or_else(|| vec![1000, 10_000]);
    let secs: u64 = std::env::var("IDLE_SECS").ok().and_then(|v| v.parse().ok()).unwrap_or(30);
    let mut results = Vec::new();
    for files in counts {
        results.push(run(files, secs));
    }
    let out = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("target/bench");
    let _ = std::fs::create_dir_all(&out);
    let json = serde_json::Value::Array(results);
    let _ = std::fs::write(out.join("idle.json"), serde_json::to_string_pretty(&json).unwrap_or_default());
}

fn run(files: usize, secs: u64) -> serde_json::Value {
    let dir = tempfile::tempdir().expect("temp dir");
    let logs = dir.path().join("logs");
    std::fs::create_dir(&logs).expect("mkdir");
    for i in 0..files {
        std::fs::write(logs.join(format!("f{i:04}.log")), format!("first line of file {i}\n")).expect("write");
    }
    let r = Receiver::start(&["--store", "null"]);
    let config = dir.path().join("idle.toml");
    std::fs::write(
        &config,
        format!(
            "[server]\nlisten = \"\"\n[client]\nurl = \"{}\"\n[positions]\npath = \"{}/positions.json\"\n[[sources]]\ntype = \"file\"\ninclude = [\"{}/*.log\"]\nlabels = {{ job = \"idle\" }}\n",
            r.url,
            dir.path().display(),
            logs.display()
        ),
    )
    .expect("config");
    let mut agent = Command::new(bin())
        .args(["run", "--config"])
        .arg(&config)
        .env("RUST_LOG", "warn")
        .stdin(Stdio::null())
        .spawn()
        .expect("start agent");
    let pid = agent.id();
    let started = Instant::now();
    let deadline = started + Duration::from_secs(120);
    while r.entries() < files as u64 {
        assert!(Instant::now() < deadline, "only {} of {files} first lines delivered", r.entries());
        std::thread::sleep(Duration::from_millis(20));
    }
    let shipped = started.elapsed().as_secs_f64();
    // Let the agent settle: it frees its buffers and returns free memory 2 s
    // after the pipeline last moved a line (`pool::IDLE_TRIM`).
    std::thread::sleep(Duration::from_secs(5));
    let cpu0 = cpu_seconds(pid);
    let t0 = Instant::now();
    let mut rss = Vec::new();
    while t0.elapsed() < Duration::from_secs(secs) {
        std::thread::sleep(Duration::from_secs(1));
        rss.push(status_kb(pid, "VmRSS:"));
    }
    let cpu = cpu_seconds(pid) - cpu0;
    let wall = t0.elapsed().as_secs_f64();
    let peak = status_kb(pid, "VmHWM:");
    let _ = agent.kill();
    let _ = agent.wait();
    let max_rss = rss.iter().copied().max().unwrap_or(0);
    println!("tailship run, {files} files, defaults: every first line delivered {shipped:.2} s after start");
    println!("  then no writes, {wall:.0} s");
    println!("  CPU:           {:.3} s = {:.2}% of one core", cpu, cpu / wall * 100.0);
    println!(
        "  RSS:           {:.1} MiB (max while idle), peak since start {:.1} MiB",
        max_rss as f64 / 1024.0,
        peak as f64 / 1024.0
    );
    serde_json::json!({
        "benchmark": "idle", "files": files, "shipped_seconds": shipped, "seconds": wall,
        "cpu_percent_of_core": cpu / wall * 100.0,
        "rss_mib_max_idle": max_rss as f64 / 1024.0, "peak_rss_mib": peak as f64 / 1024.0,
    })
}
