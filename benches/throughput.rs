//! Whole-binary throughput benchmark: `tailship push` of a generated
//! 1,000,000-line log (about 100 bytes a line: timestamps, levels, paths, ids,
//! some JSON lines, some long lines) to `tailship receive --store null`,
//! with `compression = "none"` and `"gzip"`, several runs each.
//!
//! Reports the median and range of lines/s, MB/s, the agent's CPU seconds
//! (user + sys, from the child's rusage) per million lines, and its peak RSS.
//! Writes the table to stdout and `target/bench/throughput.json`.
//!
//! Run: `cargo bench --bench throughput` (env BENCH_LINES, BENCH_RUNS to change the size,
//! BENCH_DAEMON=0 to skip the daemon path, BENCH_KEEP=DIR to keep the generated log).

#[path = "common/mod.rs"]
mod common;

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{bin, median, percentile, Receiver};

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

fn range(v: &[f64]) -> (f64, f64) {
    (v.iter().cloned().fold(f64::INFINITY, f64::min), v.iter().cloned().fold(f64::NEG_INFINITY, f64::max))
}

fn main() {
    // `cargo bench` passes `--bench`; a filter argument that is not ours is ignored.
    let lines: usize = std::env::var("BENCH_LINES").ok().and_then(|v| v.parse().ok()).unwrap_or(1_000_000);
    let runs: usize = std::env::var("BENCH_RUNS").ok().and_then(|v| v.parse().ok()).unwrap_or(5);
    let dir = tempfile::tempdir().expect("temp dir");
    // BENCH_KEEP=DIR keeps the generated log (DIR/bench.log) for profiling by hand.
    let log = match std::env::var_os("BENCH_KEEP") {
        Some(keep) => {
            std::fs::create_dir_all(&keep).expect("BENCH_KEEP dir");
            Path::new(&keep).join("bench.log")
        }
        None => dir.path().join("bench.log"),
    };
    let bytes = generate(&log, lines);
    println!("tailship push throughput: {lines} lines, {:.1} MB, {runs} runs per row", bytes as f64 / 1e6);
    println!("binary: {}", bin().display());
    let r = Receiver::start(&["--store", "null"]);
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
    let daemon = if std::env::var("BENCH_DAEMON").map(|v| v == "0").unwrap_or(false) {
        serde_json::Value::Null
    } else {
        daemon_bench()
    };
    let json = serde_json::json!({ "benchmark": "push", "results": rows, "daemon": daemon });
    let _ = std::fs::write(out.join("throughput.json"), serde_json::to_string_pretty(&json).unwrap_or_default());
    println!("wrote {}", out.join("throughput.json").display());
}

/// The daemon path: `tailship run` tailing 10 files that a writer appends to
/// at a fixed rate. A receiver in this process records when each line arrives;
/// each line carries the time it was written, so latency is written-to-received
/// (the push is acknowledged right after).
fn daemon_bench() -> serde_json::Value {
    let rate: u64 = std::env::var("DAEMON_RATE").ok().and_then(|v| v.parse().ok()).unwrap_or(20_000);
    let secs: u64 = std::env::var("DAEMON_SECS").ok().and_then(|v| v.parse().ok()).unwrap_or(15);
    let files = 10usize;
    let dir = tempfile::tempdir().expect("temp dir");
    let latencies: Arc<Mutex<Vec<f64>>> = Arc::default();
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().expect("runtime");
    let listener = rt.block_on(tokio::net::TcpListener::bind("127.0.0.1:0")).expect("bind");
    let addr = listener.local_addr().expect("addr");
    {
        let latencies = latencies.clone();
        let app = axum::Router::new().route(
            "/logstore/api/v1/push",
            axum::routing::post(move |headers: axum::http::HeaderMap, body: axum::body::Bytes| {
                let latencies = latencies.clone();
                async move {
                    let now = tailship::util::now_ns();
                    let raw = if headers.get("content-encoding").is_some_and(|v| v == "gzip") {
                        use std::io::Read;
                        let mut out = Vec::new();
                        let _ = flate2::read::GzDecoder::new(&body[..]).read_to_end(&mut out);
                        out
                    } else {
                        body.to_vec()
                    };
                    let v: serde_json::Value = serde_json::from_slice(&raw).unwrap_or_default();
                    let mut got = Vec::new();
                    for s in v["streams"].as_array().into_iter().flatten() {
                        for e in s["values"].as_array().into_iter().flatten() {
                            let line = e[1].as_str().unwrap_or("");
                            if let Some(w) = line
                                .strip_prefix('W')
                                .and_then(|l| l.split(' ').next())
                                .and_then(|t| t.parse::<i128>().ok())
                            {
                                got.push((now - w) as f64 / 1e6);
                            }
                        }
                    }
                    if let Ok(mut l) = latencies.lock() {
                        l.extend(got);
                    }
                    axum::http::StatusCode::NO_CONTENT
                }
            }),
        );
        rt.spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
    }
    let logs = dir.path().join("logs");
    std::fs::create_dir(&logs).expect("mkdir");
    for i in 0..files {
        std::fs::write(logs.join(format!("f{i}.log")), "").expect("create");
    }
    let config = dir.path().join("daemon.toml");
    std::fs::write(
        &config,
        format!(
            "[server]\nlisten = \"\"\n[client]\nurl = \"http://{addr}\"\n[positions]\npath = \"{}/positions.json\"\n[[sources]]\ntype = \"file\"\ninclude = [\"{}/*.log\"]\nlabels = {{ job = \"daemon\" }}\n",
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
    std::thread::sleep(Duration::from_millis(500));
    let pid = agent.id();
    let cpu0 = common::cpu_seconds(pid);
    let mut writers: Vec<std::fs::File> = (0..files)
        .map(|i| std::fs::OpenOptions::new().append(true).open(logs.join(format!("f{i}.log"))).expect("open"))
        .collect();
    let started = Instant::now();
    let mut written: u64 = 0;
    let mut buf = Vec::new();
    while started.elapsed() < Duration::from_secs(secs) {
        let due = (started.elapsed().as_secs_f64() * rate as f64) as u64;
        while written < due {
            let f = (written % files as u64) as usize;
            buf.clear();
            let _ = writeln!(
                buf,
                "W{} INFO request path=/api/v1/orders status=200 dur=12ms id={written:016x}",
                tailship::util::now_ns()
            );
            let _ = writers[f].write_all(&buf);
            written += 1;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    let deadline = Instant::now() + Duration::from_secs(30);
    while latencies.lock().map(|l| l.len() as u64).unwrap_or(0) < written && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    let cpu = common::cpu_seconds(pid) - cpu0;
    let peak = common::status_kb(pid, "VmHWM:");
    let _ = agent.kill();
    let _ = agent.wait();
    let mut l = latencies.lock().map(|l| l.clone()).unwrap_or_default();
    let received = l.len() as u64;
    let p50 = percentile(&mut l, 0.50);
    let p99 = percentile(&mut l, 0.99);
    let cpu_per_m = cpu / (written as f64 / 1e6);
    println!(
        "\ndaemon path: tailship run tailing {files} files, {rate} lines/s for {secs} s ({written} written, {received} received)"
    );
    println!("  CPU s / M lines: {cpu_per_m:.3}   written-to-received latency p50 {p50:.1} ms, p99 {p99:.1} ms   peak RSS {:.1} MiB", peak as f64 / 1024.0);
    serde_json::json!({
        "files": files, "rate": rate, "seconds": secs, "written": written, "received": received,
        "cpu_sec_per_million_lines": cpu_per_m, "latency_ms": { "p50": p50, "p99": p99 }, "peak_rss_mib": peak as f64 / 1024.0,
    })
}
