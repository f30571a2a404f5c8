//! Helpers for tests that run the agent (`tailship run` / `push`): a child
//! process with drained output, config files in a temp dir, reading back
//! what a `tailship receive` stored, and the agent's own metrics.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::common::{bin, get_with, wait_exit, with_params, Receiver};

fn drain(pipe: impl Read + Send + 'static, buf: Arc<Mutex<String>>) {
    std::thread::spawn(move || {
        let mut r = BufReader::new(pipe);
        let mut line = String::new();
        while let Ok(n) = r.read_line(&mut line) {
            if n == 0 {
                break;
            }
            if let Ok(mut b) = buf.lock() {
                b.push_str(&line);
            }
            line.clear();
        }
    });
}

/// A free loopback port (bound, then released).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// A running `tailship run`; killed on drop.
pub struct Agent {
    child: Option<Child>,
    pub stderr: Arc<Mutex<String>>,
    pub metrics_addr: Option<String>,
}

impl Agent {
    /// Starts `tailship run --config <config>`.
    pub fn start(config: &Path) -> Agent {
        Self::start_with(config, &[])
    }

    pub fn start_with(config: &Path, env: &[(&str, &str)]) -> Agent {
        Self::start_wrapped(config, env, &[])
    }

    /// [`Agent::start_with`] behind a wrapper command, such as
    /// `setpriv --reuid=65534 ...` to run the agent as another user.
    pub fn start_wrapped(config: &Path, env: &[(&str, &str)], wrapper: &[&str]) -> Agent {
        Self::start_args(config, env, wrapper, &[])
    }

    /// [`Agent::start_wrapped`] with `args` after `run --config CONFIG`.
    pub fn start_args(config: &Path, env: &[(&str, &str)], wrapper: &[&str], args: &[&str]) -> Agent {
        let mut cmd = match wrapper.split_first() {
            Some((program, args)) => {
                let mut c = Command::new(program);
                c.args(args).arg(bin());
                c
            }
            None => Command::new(bin()),
        };
        cmd.args(["run", "--config"]).arg(config).args(args);
        cmd.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::piped());
        cmd.env("RUST_LOG", "info");
        // A converted Promtail config keeps its positions where the packaged
        // service writes them (/var/lib/tailship): a test's agent keeps them
        // beside its config, apart from every other test's.
        let text = std::fs::read_to_string(config).unwrap_or_default();
        if text.contains("\"/var/lib/tailship/positions.json\"")
            && !env.iter().any(|(k, _)| *k == "TAILSHIP_POSITIONS__PATH")
        {
            let dir = config.parent().unwrap_or(Path::new("."));
            cmd.env("TAILSHIP_POSITIONS__PATH", dir.join("tailship-positions.json"));
        }
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().expect("spawn tailship run");
        let stderr = Arc::new(Mutex::new(String::new()));
        drain(child.stderr.take().expect("stderr"), stderr.clone());
        let metrics_addr = text
            .lines()
            .find(|l| l.trim_start().starts_with("listen"))
            .and_then(|l| l.split('"').nth(1))
            .filter(|a| !a.is_empty())
            .map(str::to_string);
        Agent { child: Some(child), stderr, metrics_addr }
    }

    pub fn stderr_text(&self) -> String {
        self.stderr.lock().map(|s| s.clone()).unwrap_or_default()
    }

    pub fn pid(&self) -> i32 {
        self.child.as_ref().map(|c| c.id() as i32).unwrap_or(0)
    }

    pub fn signal(&self, sig: i32) {
        // SAFETY: kill(2) on our own child's pid.
        unsafe { libc::kill(self.pid(), sig) };
    }

    /// SIGTERM, then the exit status (waits up to `deadline`).
    pub fn terminate(mut self, deadline: Duration) -> ExitStatus {
        self.signal(libc::SIGTERM);
        let mut child = self.child.take().expect("child");
        wait_exit(&mut child, deadline).unwrap_or_else(|| {
            let _ = child.kill();
            panic!("agent did not exit within {deadline:?} of SIGTERM: {}", self.stderr_text());
        })
    }

    /// Its exit status once it exits by itself (waits up to `deadline`; `None` if it runs on).
    pub fn exit_within(&mut self, deadline: Duration) -> Option<ExitStatus> {
        wait_exit(self.child.as_mut().expect("child"), deadline)
    }

    /// `kill -9`, and wait for it to be gone.
    pub fn kill9(mut self) {
        let mut child = self.child.take().expect("child");
        let _ = child.kill();
        let _ = child.wait();
    }

    /// The agent's `/metrics` text ("" until it answers).
    pub fn metrics(&self) -> String {
        match &self.metrics_addr {
            Some(a) => {
                let r = crate::common::try_request("GET", &format!("http://{a}/metrics"), &[], b"");
                r.map(|r| r.text()).unwrap_or_default()
            }
            None => String::new(),
        }
    }

    /// The value of one metric line (exact name with labels), summed when the name alone is given.
    pub fn metric(&self, name: &str) -> f64 {
        metric_value(&self.metrics(), name)
    }

    /// Peak RSS in kB so far (VmHWM).
    pub fn peak_rss_kb(&self) -> u64 {
        self.status_kb("VmHWM:")
    }

    /// Current RSS in kB.
    pub fn rss_kb(&self) -> u64 {
        self.status_kb("VmRSS:")
    }

    /// The value in kB of the line `key` of its `/proc/PID/status` (0 when there is none).
    fn status_kb(&self, key: &str) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid())).unwrap_or_default();
        status
            .lines()
            .find(|l| l.starts_with(key))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// Sums the samples of `name` (a full `name{labels}` picks one line).
pub fn metric_value(text: &str, name: &str) -> f64 {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter(|l| {
            if name.contains('{') {
                l.starts_with(name) && l[name.len()..].starts_with(' ')
            } else {
                l.starts_with(name) && (l[name.len()..].starts_with(' ') || l[name.len()..].starts_with('{'))
            }
        })
        .filter_map(|l| l.rsplit(' ').next().and_then(|v| v.parse::<f64>().ok()))
        .sum()
}

/// One stored entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stored {
    pub labels: serde_json::Map<String, serde_json::Value>,
    pub ts: i128,
    pub line: String,
}

/// Every entry of `query` in the receiver (start the receiver with a large
/// `--max-query-limit`), oldest first. `tenant` sets X-Scope-OrgID.
pub fn query_all(r: &Receiver, query: &str, tenant: Option<&str>) -> Vec<Stored> {
    query_all_at(r, "/logstore/api/v1", query, tenant)
}

/// [`query_all`] on a receiver started with `--api-prefix PREFIX`.
pub fn query_all_at(r: &Receiver, prefix: &str, query: &str, tenant: Option<&str>) -> Vec<Stored> {
    let end = (std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos()
        + 3_600_000_000_000)
        .to_string();
    let url = with_params(
        &r.url(&format!("{prefix}/query_range")),
        &[("query", query), ("start", "0"), ("end", &end), ("limit", "1000000"), ("direction", "forward")],
    );
    let headers: Vec<(&str, &str)> = tenant.map(|t| vec![("X-Scope-OrgID", t)]).unwrap_or_default();
    let resp = get_with(&url, &headers);
    assert_eq!(resp.status, 200, "query failed: {}", resp.text());
    let json = resp.json();
    let mut out = Vec::new();
    for s in json["data"]["result"].as_array().cloned().unwrap_or_default() {
        let labels = s["stream"].as_object().cloned().unwrap_or_default();
        for v in s["values"].as_array().cloned().unwrap_or_default() {
            out.push(Stored {
                labels: labels.clone(),
                ts: v[0].as_str().unwrap().parse().unwrap(),
                line: v[1].as_str().unwrap().to_string(),
            });
        }
    }
    out.sort_by_key(|e| e.ts);
    out
}

/// Writes `text` to `dir/name` and returns the path.
pub fn write_file(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

/// A config for `tailship run` shipping `include` to `r`, with `extra` TOML appended
/// to the `[[sources]]` table and `client_extra` to `[client]`.
pub fn agent_config(dir: &Path, url: &str, include: &str, client_extra: &str, source_extra: &str) -> PathBuf {
    let retry = r#"retry = { min_backoff = "20ms", max_backoff = "500ms" }"#;
    let source = format!(
        "[[sources]]\ntype = \"file\"\ninclude = [\"{include}\"]\nlabels = {{ job = \"test\" }}\n\
         scan_interval = \"200ms\"\npartial_line_wait = \"300ms\"\n{source_extra}"
    );
    AgentToml::new(dir, "10s").client(url, &format!("{retry}\n{client_extra}")).then(&source).write("tailship.toml")
}

/// A config for `tailship run` with one network source (`source`: the keys
/// of its `[[sources]]` table) shipping to `url`, its spool under `dir`,
/// written to `dir/name`.
pub fn net_source_config(dir: &Path, name: &str, url: &str, source: &str) -> PathBuf {
    AgentToml::new(dir, "5s")
        .client(url, "")
        .sync_period("")
        .spool("")
        .then(&format!("[[sources]]\n{source}"))
        .write(name)
}

/// An agent's config written piece by piece, in the order `tailship run`
/// reads it: `shutdown_timeout` and other top-level keys, `[server]` on a
/// free loopback port (first, so [`Agent`] finds its metrics address),
/// `[client]`, `[positions]` under the dir, `[spool]`, then the sources.
pub struct AgentToml {
    dir: PathBuf,
    listen: String,
    top: String,
    server: String,
    client: String,
    sync_period: String,
    spool: Option<String>,
    rest: String,
}

/// The `[client]` batches of most tests: 256KiB, sent after 100ms.
pub const BATCH: &str = r#"batch = { max_bytes = "256KiB", max_wait = "100ms" }"#;
/// The `[client]` retries of most tests: backing off from 20ms to 300ms.
pub const RETRY: &str = r#"retry = { min_backoff = "20ms", max_backoff = "300ms" }"#;

impl AgentToml {
    /// `shutdown_timeout = SHUTDOWN` (none for ""), positions in `dir/positions.json` synced every 200ms.
    pub fn new(dir: &Path, shutdown: &str) -> AgentToml {
        AgentToml {
            dir: dir.to_path_buf(),
            listen: format!("127.0.0.1:{}", free_port()),
            top: if shutdown.is_empty() { String::new() } else { format!("shutdown_timeout = \"{shutdown}\"\n") },
            server: String::new(),
            client: String::new(),
            sync_period: "200ms".into(),
            spool: None,
            rest: String::new(),
        }
    }

    /// The `[server]` address.
    pub fn listen(&self) -> &str {
        &self.listen
    }

    /// More top-level keys.
    pub fn top(mut self, keys: &str) -> Self {
        self.top.push_str(keys);
        self.top.push('\n');
        self
    }

    /// More `[server]` keys.
    pub fn server(mut self, keys: &str) -> Self {
        self.server.push_str(keys);
        self.server.push('\n');
        self
    }

    /// `[client]` shipping to `url` with `keys`; [`BATCH`] and [`RETRY`]
    /// unless `keys` has a `batch` or `retry` of its own.
    pub fn client(mut self, url: &str, keys: &str) -> Self {
        let has = |k: &str| {
            keys.lines().any(|l| l.trim_start().strip_prefix(k).is_some_and(|r| r.trim_start().starts_with('=')))
        };
        // The defaults first: `keys` may end in a table of its own (`[client.oauth2]`).
        self.client = format!("[client]\nurl = \"{url}\"\n");
        for (k, default) in [("batch", BATCH), ("retry", RETRY)] {
            if !has(k) {
                self.client.push_str(default);
                self.client.push('\n');
            }
        }
        self.client.push_str(keys);
        self.client.push('\n');
        self
    }

    /// `[client]` shipping to `url` with `keys` alone (the agent's own batch and retry defaults).
    pub fn bare_client(mut self, url: &str, keys: &str) -> Self {
        self.client = format!("[client]\nurl = \"{url}\"\n{keys}\n");
        self
    }

    /// Positions synced every `period` ("" for the agent's default).
    pub fn sync_period(mut self, period: &str) -> Self {
        self.sync_period = period.into();
        self
    }

    /// `[spool]` in `dir/spool`, with `keys`.
    pub fn spool(mut self, keys: &str) -> Self {
        self.spool = Some(keys.into());
        self
    }

    /// TOML after the tables above (`[[sources]]`, `[[alerts]]`, ...).
    pub fn then(mut self, text: &str) -> Self {
        self.rest.push_str(text);
        self.rest.push('\n');
        self
    }

    /// The config's text.
    pub fn text(&self) -> String {
        let dir = self.dir.display();
        let mut t = format!("{}[server]\nlisten = \"{}\"\n{}", self.top, self.listen, self.server);
        t.push_str(&self.client);
        t.push_str(&format!("[positions]\npath = \"{dir}/positions.json\"\n"));
        if !self.sync_period.is_empty() {
            t.push_str(&format!("sync_period = \"{}\"\n", self.sync_period));
        }
        if let Some(keys) = &self.spool {
            t.push_str(&format!("[spool]\npath = \"{dir}/spool\"\n{keys}\n"));
        }
        t.push_str(&self.rest);
        t
    }

    /// Writes it to `dir/NAME`: its path.
    pub fn write(&self, name: &str) -> PathBuf {
        write_file(&self.dir, name, &self.text())
    }
}

/// A `type = "file"` source of `dir/*.log` labelled `job`, scanned every `scan`.
pub fn file_source(dir: &Path, job: &str, scan: &str) -> String {
    format!(
        "[[sources]]\ntype = \"file\"\ninclude = [\"{}/*.log\"]\nlabels = {{ job = \"{job}\" }}\nscan_interval = \"{scan}\"\n",
        dir.display()
    )
}

/// `check` of an [`agent_config`] (written in `dir`) with `source_extra` in
/// its source exits 2, naming `key` and saying `words`: its stderr and the
/// config's path.
pub fn source_exits_2(dir: &Path, source_extra: &str, key: &str, words: &str) -> (String, PathBuf) {
    let cfg = agent_config(dir, "http://127.0.0.1:9", "/tmp/x.log", "", source_extra);
    let out = Command::new(bin()).args(["check", "--config"]).arg(&cfg).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "{source_extra}: {err}");
    assert!(err.contains(key) && err.contains(words), "{source_extra}: {err}");
    (err, cfg)
}
