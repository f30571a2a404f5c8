//! Network sources benchmark, to `tailship receive --store null`:
//!
//! - **syslog over TCP**: N octet-counted RFC 5424 messages of ~120 bytes on
//!   one connection to a `type = "syslog"` source; from the first byte sent
//!   until every line is acknowledged by the receiver.
//! - **relay**: an edge `tailship run` reads a file of N lines and pushes it
//!   to a relay (`type = "loki_push"`), which spools and ships it.
//!
//! Reports lines per second, CPU seconds per million lines (of the agent
//! receiving; for the relay, of the relay and of the edge agent) and peak RSS.
//! Every received line is fsynced to the spool before it is acknowledged.
//!
//! Run: `cargo bench --bench net` (env LINES=1000000, RUNS=3; medians).

#[path = "common/mod.rs"]
mod common;

use std::io::Write;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{bin, cpu_seconds, median, status_kb, Receiver};

fn env_or(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("addr").port()
}

fn run_agent(cfg: &Path) -> Child {
    Command::new(bin())
        .args(["run", "--config"])
        .arg(cfg)
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("agent")
}

fn stop(mut c: Child) {
    // SAFETY: kill(2) on our own child.
    unsafe { libc::kill(c.id() as i32, libc::SIGTERM) };
    let _ = c.wait();
}

fn wait_port(port: u16) {
    let t0 = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(t0.elapsed() < Duration::from_secs(30), "port {port} never listened");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn wait_entries(r: &Receiver, n: u64, t0: Instant) -> f64 {
    while r.entries() < n {
        assert!(t0.elapsed() < Duration::from_secs(600), "not delivered in 10 minutes");
        std::thread::sleep(Duration::from_millis(20));
    }
    t0.elapsed().as_secs_f64()
}

fn head(dir: &Path, url: &str, run: u64, name: &str) -> String {
    format!(
        "[server]\nlisten = \"\"\n[client]\nurl = \"{url}\"\n[positions]\npath = \"{d}/{name}{run}.json\"\n\
         [spool]\npath = \"{d}/spool-{name}{run}\"\n",
        d = dir.display()
    )
}

fn syslog(dir: &Path, n: u64, run: u64) -> (f64, f64, f64) {
    let r = Receiver::start(&["--store", "null"]);
    let port = free_port();
    let cfg = dir.join("syslog.toml");
    let text = head(dir, &r.url, run, "syslog")
        + &format!(
            "[[sources]]\ntype = \"syslog\"\nlisten = \"127.0.0.1:{port}\"\nlabels = {{ job = \"bench\" }}\n\
             relabel = [{{ source_labels = [\"__syslog_message_app_name\"], target_label = \"app\" }}]\n"
        );
    std::fs::write(&cfg, text).expect("config");
    let agent = run_agent(&cfg);
    wait_port(port);
    let t0 = Instant::now();
    let sender = std::thread::spawn(move || {
        let mut s = std::io::BufWriter::new(std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect"));
        for i in 0..n {
            let msg = format!(
                "<134>1 2024-05-01T10:00:00.{:06}Z web-1 nginx 812 - - request {i:09} served in 12ms GET /api/v1/items 200",
                i % 1_000_000
            );
            write!(s, "{} {msg}", msg.len()).expect("send");
        }
        s.flush().expect("flush");
    });
    let secs = wait_entries(&r, n, t0);
    sender.join().expect("sender");
    let per_m = 1e6 / n as f64;
    let out = (n as f64 / secs, cpu_seconds(agent.id()) * per_m, status_kb(agent.id(), "VmHWM") as f64);
    stop(agent);
    eprintln!("syslog run {run}: {n} lines in {secs:.2}s");
    out
}

fn relay(dir: &Path, n: u64, run: u64) -> (f64, f64, f64, f64) {
    let r = Receiver::start(&["--store", "null"]);
    let port = free_port();
    let cfg = dir.join("relay.toml");
    let text = head(dir, &r.url, run, "relay")
        + &format!(
            "[[sources]]\ntype = \"loki_push\"\nlisten = \"127.0.0.1:{port}\"\nlabels = {{ relayed = \"1\" }}\n"
        );
    std::fs::write(&cfg, text).expect("config");
    let relay = run_agent(&cfg);
    wait_port(port);
    let logs = dir.join(format!("logs{run}"));
    std::fs::create_dir_all(&logs).expect("mkdir");
    let mut f = std::io::BufWriter::new(std::fs::File::create(logs.join("app.log")).expect("log"));
    for i in 0..n {
        writeln!(f, "2024-05-01 10:00:00.000 INFO request {i:09} served in 12ms: GET /api/v1/items?page=3 200")
            .expect("write");
    }
    f.flush().expect("flush");
    drop(f);
    let edge_cfg = dir.join("edge.toml");
    let text = format!(
        "[server]\nlisten = \"\"\n[client]\nurl = \"http://127.0.0.1:{port}/loki/api/v1/push\"\n\
         [positions]\npath = \"{d}/edge{run}.json\"\n[[sources]]\ntype = \"file\"\ninclude = [\"{l}/*.log\"]\n\
         labels = {{ job = \"bench\" }}\n",
        d = dir.display(),
        l = logs.display()
    );
    std::fs::write(&edge_cfg, text).expect("config");
    let t0 = Instant::now();
    let edge = run_agent(&edge_cfg);
    let secs = wait_entries(&r, n, t0);
    let per_m = 1e6 / n as f64;
    let out = (
        n as f64 / secs,
        cpu_seconds(relay.id()) * per_m,
        cpu_seconds(edge.id()) * per_m,
        status_kb(relay.id(), "VmHWM") as f64,
    );
    stop(edge);
    stop(relay);
    eprintln!("relay run {run}: {n} lines in {secs:.2}s");
    out
}

fn main() {
    let n = env_or("LINES", 1_000_000);
    let runs = env_or("RUNS", 3);
    let dir = tempfile::tempdir().expect("tempdir");
    let (mut rate, mut cpu, mut rss) = (Vec::new(), Vec::new(), Vec::new());
    for run in 0..runs {
        let (a, b, c) = syslog(dir.path(), n, run);
        rate.push(a);
        cpu.push(b);
        rss.push(c);
    }
    println!(
        "syslog over TCP: {n} lines, median of {runs}: {:.0} lines/s; CPU-s per million lines {:.2}; peak RSS {:.0} kB",
        median(rate),
        median(cpu),
        median(rss)
    );
    let (mut rate, mut cpu, mut edge, mut rss) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for run in 0..runs {
        let (a, b, c, d) = relay(dir.path(), n, run);
        rate.push(a);
        cpu.push(b);
        edge.push(c);
        rss.push(d);
    }
    println!(
        "relay (file -> edge agent -> loki_push relay -> receiver): {n} lines, median of {runs}: {:.0} lines/s; \
         CPU-s per million lines: relay {:.2}, edge {:.2}; relay peak RSS {:.0} kB",
        median(rate),
        median(cpu),
        median(edge),
        median(rss)
    );
}
