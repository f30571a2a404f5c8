//! Daemon-path benchmark: `tailship run` following FILES files while a writer
//! appends RATE lines/s in total, one `write()` per line, for SECS seconds.
//! Reports the agent's CPU-s per million lines (utime + stime from /proc),
//! its peak RSS, lines lost (must be 0) and write-to-acknowledged latency
//! p50/p99 (each line carries its write time; the receiver here notes when
//! the push holding it arrived, and answers 204 right away).
//!
//! Three rows: `plain` (no stages); `json` (each line a JSON object read by
//! a json + labels + timestamp + output pipeline, Promtail's most common
//! shape); `clients` (plain, shipped to two clients, `[[clients]]` with a
//! receiver each: its CPU per million lines is per client, to compare with
//! `plain`; the target is at most 1.2 times). PIPELINE=plain, json or clients
//! runs one of them.
//!
//! Run: `cargo bench --bench daemon` (env FILES=10, RATE=20000, SECS=10,
//! RUNS=3, PIPELINE; the figures are medians of the runs).

#[path = "common/mod.rs"]
mod common;

use std::collections::HashSet;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use common::{bin, cpu_seconds, median, percentile, status_kb};

fn env_or(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn now_ns() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(0)
}

/// What the receiver saw: line numbers, and write-to-arrival latencies in ms.
#[derive(Default)]
struct Seen {
    seqs: HashSet<u64>,
    latencies_ms: Vec<f64>,
}

/// A push receiver on loopback: decodes each push with the store's own
/// decoder, notes every line, answers 204. Keep-alive, one thread per connection.
fn receiver(seen: Arc<Mutex<Seen>>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    std::thread::spawn(move || {
        for conn in listener.incoming().flatten() {
            let seen = seen.clone();
            std::thread::spawn(move || serve(conn, &seen));
        }
    });
    url
}

fn serve(conn: TcpStream, seen: &Mutex<Seen>) {
    let mut out = match conn.try_clone() {
        Ok(c) => c,
        Err(_) => return,
    };
    let mut r = BufReader::new(conn);
    loop {
        let mut len = 0usize;
        let mut gzip = false;
        let mut post = None;
        let mut line = String::new();
        // Request line and headers.
        loop {
            line.clear();
            if r.read_line(&mut line).unwrap_or(0) == 0 {
                return;
            }
            let l = line.trim_end().to_ascii_lowercase();
            if l.is_empty() {
                break;
            }
            // The request line: the agent asks with OPTIONS which API prefix
            // is served (client::prefix); a push route answers that 405.
            post.get_or_insert_with(|| l.starts_with("post "));
            if let Some(v) = l.strip_prefix("content-length:") {
                len = v.trim().parse().unwrap_or(0);
            }
            if l.starts_with("content-encoding:") && l.contains("gzip") {
                gzip = true;
            }
        }
        let mut body = vec![0u8; len];
        if r.read_exact(&mut body).is_err() {
            return;
        }
        if post != Some(true) {
            if out.write_all(b"HTTP/1.1 405 Method Not Allowed\r\ncontent-length: 0\r\n\r\n").is_err() {
                return;
            }
            continue;
        }
        let arrived = now_ns();
        let json = tailship::lokipush::decode(&body, gzip.then_some("gzip"), 64 << 20).expect("decode");
        let push = tailship::lokipush::parse(&json).expect("parse");
        let mut s = seen.lock().expect("lock");
        for stream in &push.streams {
            for v in &stream.values {
                // "seq=<n> t=<ns> ..."
                let mut parts = v.line.split(' ');
                let seq = parts.next().and_then(|p| p.strip_prefix("seq=")).and_then(|n| n.parse().ok());
                let t = parts.next().and_then(|p| p.strip_prefix("t=")).and_then(|n| n.parse::<u64>().ok());
                if let (Some(seq), Some(t)) = (seq, t) {
                    if s.seqs.insert(seq) {
                        s.latencies_ms.push(arrived.saturating_sub(t) as f64 / 1e6);
                    }
                }
            }
        }
        drop(s);
        if out.write_all(b"HTTP/1.1 204 No Content\r\ncontent-length: 0\r\n\r\n").is_err() {
            return;
        }
    }
}

struct Run {
    cpu_per_million: f64,
    peak_rss_kb: u64,
    lost: u64,
    p50_ms: f64,
    p99_ms: f64,
}

fn run_once(files: usize, rate: u64, secs: u64, json: bool, clients: usize) -> Run {
    let dir = tempfile::tempdir().expect("temp dir");
    let logs = dir.path().join("logs");
    std::fs::create_dir(&logs).expect("mkdir");
    let paths: Vec<_> = (0..files).map(|i| logs.join(format!("app{i:03}.log"))).collect();
    for p in &paths {
        std::fs::write(p, "").expect("create");
    }
    let seens: Vec<Arc<Mutex<Seen>>> = (0..clients).map(|_| Arc::new(Mutex::new(Seen::default()))).collect();
    let client_tables: String = if clients == 1 {
        format!("[client]\nurl = \"{}\"\ncompression = \"none\"\n", receiver(seens[0].clone()))
    } else {
        seens
            .iter()
            .enumerate()
            .map(|(i, seen)| {
                format!("[[clients]]\nname = \"c{i}\"\nurl = \"{}\"\ncompression = \"none\"\n", receiver(seen.clone()))
            })
            .collect()
    };
    let config = dir.path().join("daemon.toml");
    std::fs::write(
        &config,
        format!(
            "[server]\nlisten = \"\"\n{client_tables}[positions]\npath = \"{}/positions.json\"\n[[sources]]\ntype = \"file\"\ninclude = [\"{}/*.log\"]\nlabels = {{ job = \"bench\" }}\n{}",
            dir.path().display(),
            logs.display(),
            if json { JSON_STAGES } else { "" }
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
    // Let it open the files.
    std::thread::sleep(Duration::from_secs(1));
    let mut handles: Vec<std::fs::File> =
        paths.iter().map(|p| std::fs::OpenOptions::new().append(true).open(p).expect("open for append")).collect();
    let cpu0 = cpu_seconds(pid);
    let started = Instant::now();
    let total = rate * secs;
    let mut written = 0u64;
    let filler = "x".repeat(60);
    while written < total {
        let due = ((started.elapsed().as_secs_f64() * rate as f64) as u64).min(total);
        while written < due {
            let f = &mut handles[(written as usize) % files];
            let t = now_ns();
            let line = if json {
                let level = ["info", "warn", "error"][(written % 3) as usize];
                let ts = chrono::DateTime::from_timestamp_nanos(t as i64)
                    .to_rfc3339_opts(chrono::SecondsFormat::Nanos, true);
                format!("{{\"level\":\"{level}\",\"ts\":\"{ts}\",\"msg\":\"seq={written} t={t} request served {filler}\"}}\n")
            } else {
                format!("seq={written} t={t} level=info msg=\"request served\" {filler}\n")
            };
            f.write_all(line.as_bytes()).expect("write");
            written += 1;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    let deadline = Instant::now() + Duration::from_secs(60);
    while seens.iter().any(|seen| (seen.lock().expect("lock").seqs.len() as u64) < total) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let cpu = cpu_seconds(pid) - cpu0;
    let peak_rss_kb = status_kb(pid, "VmHWM:");
    // SAFETY: kill(2) on our own child.
    unsafe { libc::kill(pid as i32, libc::SIGTERM) };
    let _ = agent.wait();
    let lost = seens.iter().map(|seen| total - seen.lock().expect("lock").seqs.len() as u64).sum();
    let mut s = seens[0].lock().expect("lock");
    Run {
        // Per client: each line is shipped once to each.
        cpu_per_million: cpu / (total * clients as u64) as f64 * 1e6,
        peak_rss_kb,
        lost,
        p50_ms: percentile(&mut s.latencies_ms, 0.50),
        p99_ms: percentile(&mut s.latencies_ms, 0.99),
    }
}

/// The `json` row's stages: the line's level a label, its time the entry's, its message the line.
const JSON_STAGES: &str = r#"stages = [
  { json = { level = "level", ts = "ts", msg = "msg" } },
  { labels = ["level"] },
  { timestamp = { source = "ts", format = "rfc3339" } },
  { output = "msg" },
]
"#;

fn main() {
    let rows: &[(&str, bool, usize)] = match std::env::var("PIPELINE").as_deref() {
        Ok("plain") => &[("plain", false, 1)],
        Ok("json") => &[("json", true, 1)],
        Ok("clients") => &[("2 clients", false, 2)],
        _ => &[("plain", false, 1), ("json", true, 1), ("2 clients", false, 2)],
    };
    for &(name, json, clients) in rows {
        row(name, json, clients);
    }
}

fn row(name: &str, json: bool, clients: usize) {
    let files = env_or("FILES", 10) as usize;
    let rate = env_or("RATE", 20_000);
    let secs = env_or("SECS", 10);
    let runs = env_or("RUNS", 3);
    let mut all = Vec::new();
    for i in 0..runs {
        let r = run_once(files, rate, secs, json, clients);
        println!(
            "run {}: {:.2} CPU-s per million lines{}, peak RSS {} kB, lost {}, write->ack p50 {:.0} ms p99 {:.0} ms",
            i + 1,
            r.cpu_per_million,
            if clients == 1 { "" } else { " per client" },
            r.peak_rss_kb,
            r.lost,
            r.p50_ms,
            r.p99_ms
        );
        all.push(r);
    }
    println!(
        "daemon ({name}): {files} files, {rate} lines/s, {secs} s, medians of {runs}: {:.2} CPU-s per million lines{}, peak RSS {:.0} kB, lost {}, p50 {:.0} ms, p99 {:.0} ms",
        median(all.iter().map(|r| r.cpu_per_million).collect()),
        if clients == 1 { "" } else { " per client" },
        median(all.iter().map(|r| r.peak_rss_kb as f64).collect()),
        all.iter().map(|r| r.lost).max().unwrap_or(0),
        median(all.iter().map(|r| r.p50_ms).collect()),
        median(all.iter().map(|r| r.p99_ms).collect()),
    );
}
