//! The real Promtail 3.6.15 on loopback (from `../shared/peers`), for tests
//! that compare tailship with what it replaces; `None` (the test skips,
//! saying so) where the binary is absent.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::common::wait_for;

/// The Promtail binary of `../shared/peers`, if there is one.
pub fn binary() -> Option<PathBuf> {
    let get = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/peers/get");
    let out = Command::new(get).arg("promtail").output().ok()?;
    if !out.status.success() {
        return None;
    }
    let path = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    path.exists().then_some(path)
}

/// A running Promtail; killed on drop.
pub struct Promtail {
    child: Child,
    /// What it wrote to stderr so far.
    pub log: Arc<Mutex<String>>,
    /// `http://127.0.0.1:PORT`: its `server.http_listen_port`.
    pub base: String,
}

impl Promtail {
    /// Starts `promtail -config.file <config>` in `dir` (its working
    /// directory), serving on `port` (the config's `server.http_listen_port`).
    /// `None`, saying so, where the binary is absent.
    pub fn start(dir: &Path, config: &Path, port: u16) -> Option<Promtail> {
        let Some(bin) = binary() else {
            eprintln!("no Promtail binary in ../shared/peers: skipping");
            return None;
        };
        Some(Self::try_start(&bin, dir, config, port).unwrap_or_else(|log| panic!("Promtail never listened: {log}")))
    }

    /// [`Promtail::start`] with the binary given; `Err` with what it said
    /// where it exits (a config it refuses) instead of listening.
    pub fn try_start(bin: &Path, dir: &Path, config: &Path, port: u16) -> Result<Promtail, String> {
        Self::try_start_args(bin, dir, config, port, &[])
    }

    /// [`Promtail::try_start`] with more arguments (`-config.expand-env=true`).
    pub fn try_start_args(bin: &Path, dir: &Path, config: &Path, port: u16, args: &[&str]) -> Result<Promtail, String> {
        Self::try_start_env(bin, dir, config, port, args, &[])
    }

    /// [`Promtail::try_start_args`] with variables set in its environment
    /// (the test binary's own environment is every test's: never set there).
    pub fn try_start_env(
        bin: &Path,
        dir: &Path,
        config: &Path,
        port: u16,
        args: &[&str],
        env: &[(&str, &str)],
    ) -> Result<Promtail, String> {
        // The peers' Promtail is a `dev` build: its pages read their templates
        // from ./templates. Two that print a page's data alone.
        std::fs::create_dir_all(dir.join("templates")).unwrap();
        std::fs::write(dir.join("templates/_base.html"), "{{template \"content\" .}}").unwrap();
        std::fs::write(dir.join("templates/config.html"), "{{define \"content\"}}{{.}}{{end}}").unwrap();
        let mut child = Command::new(bin)
            .arg(format!("-config.file={}", config.display()))
            .args(args)
            .envs(env.iter().copied())
            .current_dir(dir)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // Its log goes to stderr; a config it refuses is said on stdout.
        let log = Arc::new(Mutex::new(String::new()));
        let read_into = |from: Box<dyn std::io::Read + Send>| {
            let sink = log.clone();
            std::thread::spawn(move || {
                use std::io::BufRead;
                for line in std::io::BufReader::new(from).lines().map_while(Result::ok) {
                    sink.lock().unwrap().push_str(&(line + "\n"));
                }
            })
        };
        let readers =
            [read_into(Box::new(child.stdout.take().unwrap())), read_into(Box::new(child.stderr.take().unwrap()))];
        let mut p = Promtail { child, log, base: format!("http://127.0.0.1:{port}") };
        let addr = format!("127.0.0.1:{port}");
        let up = wait_for(Duration::from_secs(30), || {
            let exited = p.child.try_wait().ok().flatten().is_some();
            exited || std::net::TcpStream::connect(&addr).is_ok()
        });
        if up && p.child.try_wait().ok().flatten().is_none() {
            return Ok(p);
        }
        let _ = p.child.kill();
        let _ = p.child.wait();
        for r in readers {
            let _ = r.join();
        }
        Err(p.log_text())
    }

    pub fn log_text(&self) -> String {
        self.log.lock().unwrap().clone()
    }

    /// Its `/config` page as a user copies it: the running config, every
    /// default written out (HTML entities decoded).
    pub fn config_page(&mut self) -> String {
        self.try_config_page().unwrap_or_else(|e| panic!("{e}"))
    }

    /// [`Promtail::config_page`]; `Err` with what it logged where it exits
    /// after it began to listen (a target it fails to start). A connection
    /// refused or reset while it still runs is tried again for 10 s.
    pub fn try_config_page(&mut self) -> Result<String, String> {
        let url = format!("{}/config", self.base);
        let mut last = String::new();
        let mut page = None;
        wait_for(Duration::from_secs(10), || {
            if self.child.try_wait().ok().flatten().is_some() {
                return true;
            }
            match crate::common::try_request("GET", &url, &[], b"") {
                Ok(r) => page = Some(r),
                Err(e) => last = e,
            }
            page.is_some()
        });
        match page {
            Some(r) => {
                assert_eq!(r.status, 200, "{}", r.text());
                Ok(unescape_html(&r.text()))
            }
            None => {
                let status = self.child.try_wait().ok().flatten();
                Err(format!("no /config page ({last}); Promtail exited: {status:?}; it logged:\n{}", self.log_text()))
            }
        }
    }
}

impl Drop for Promtail {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The text of HTML that Go's html/template escaped.
fn unescape_html(s: &str) -> String {
    s.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&#34;", "\"")
        .replace("&#39;", "'")
        .replace("&#43;", "+")
        .replace("&quot;", "\"")
        .replace("&amp;", "&")
}
