//! Helpers shared by the whole-binary benchmarks: the release binary, a
//! `tailship receive --store null` child, process CPU and memory from /proc.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

/// The binary measured: this build's, or `TAILSHIP_BIN` (another build, to compare).
pub fn bin() -> PathBuf {
    std::env::var_os("TAILSHIP_BIN").map(PathBuf::from).unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_tailship")))
}

/// CPU seconds (user + sys) a process has used so far.
pub fn cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let fields: Vec<&str> = stat.rsplit(')').next().unwrap_or("").split_whitespace().collect();
    let ticks = |i: usize| fields.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    (ticks(11) + ticks(12)) / hz
}

/// A field of /proc/PID/status in kB (`VmRSS`, `VmHWM`).
pub fn status_kb(pid: u32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find(|l| l.starts_with(field))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// `tailship receive` on a free loopback port; killed on drop.
pub struct Receiver {
    pub child: Child,
    pub url: String,
}

impl Receiver {
    pub fn start(args: &[&str]) -> Receiver {
        let mut child = Command::new(bin())
            .args(["receive", "--listen", "127.0.0.1:0"])
            .args(args)
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

    pub fn cpu_seconds(&self) -> f64 {
        cpu_seconds(self.child.id())
    }

    /// Entries the receiver accepted, from `/stats`.
    pub fn entries(&self) -> u64 {
        let addr = self.url.trim_start_matches("http://");
        let Ok(mut s) = std::net::TcpStream::connect(addr) else { return 0 };
        use std::io::{Read, Write};
        let _ = write!(s, "GET /stats HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
        let mut buf = String::new();
        let _ = s.read_to_string(&mut buf);
        let body = buf.split("\r\n\r\n").nth(1).unwrap_or("");
        serde_json::from_str::<serde_json::Value>(body).ok().and_then(|v| v["entries"].as_u64()).unwrap_or(0)
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn median(mut v: Vec<f64>) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

pub fn percentile(v: &mut [f64], p: f64) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(|a, b| a.total_cmp(b));
    let i = ((v.len() as f64 - 1.0) * p).round() as usize;
    v[i]
}
