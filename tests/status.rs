//! Live status end to end: `/status.json` of a real agent shipping real
//! files to `tailship receive`, the `/status` page rendered by headless
//! Chromium, and `tailship top` driven in tmux and through a pipe.
//!
//! The Chromium and tmux tests skip (saying so) where the program is
//! missing; `.ci/run` installs both, so CI runs them all.

use crate::agent;
use crate::common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use agent::{agent_config, write_file, Agent};
use common::{bin, get, request, wait_for, Receiver};
use serde_json::Value;

const HOOK: &str = "/integrations/v1/formatted_webhook";
/// The file name a page must show as text, never as markup.
const HTML_NAME: &str = "<img src=x onerror=alert(1)>.log";

/// Whether `program` runs at all (`--version`).
fn have(program: &str) -> bool {
    Command::new(program).arg("--version").stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok()
}

fn skip(why: &str) {
    eprintln!("SKIPPED: {why}");
}

/// `/status.json`, or `None` while the agent does not answer.
fn status(addr: &str) -> Option<Value> {
    let r = std::panic::catch_unwind(|| get(&format!("http://{addr}/status.json")));
    r.ok().filter(|r| r.status == 200).map(|r| r.json())
}

/// The files of the first source, by path.
fn files(s: &Value) -> Vec<Value> {
    s["sources"][0]["files"].as_array().cloned().unwrap_or_default()
}

fn file<'a>(files: &'a [Value], path: &Path) -> Option<&'a Value> {
    files.iter().find(|f| f["path"] == path.display().to_string())
}

fn lines(prefix: &str, n: usize) -> String {
    (0..n).map(|i| format!("{prefix} line {i} of the status test\n")).collect()
}

/// An agent shipping `names` (each with 200 lines) from `dir/logs` to `r`.
fn shipping(
    dir: &Path,
    r: &Receiver,
    names: &[&str],
    source_extra: &str,
    tail: &str,
) -> (Agent, String, Vec<std::path::PathBuf>) {
    let logs = dir.join("logs");
    std::fs::create_dir_all(&logs).unwrap();
    let paths: Vec<_> = names.iter().map(|n| write_file(&logs, n, &lines(n, 200))).collect();
    let cfg = agent_config(
        dir,
        &r.base,
        &format!("{}/*.log", logs.display()),
        "",
        &format!("name = \"app\"\n{source_extra}"),
    );
    let text = std::fs::read_to_string(&cfg).unwrap() + tail;
    std::fs::write(&cfg, text).unwrap();
    let agent = Agent::start(&cfg);
    let addr = agent.metrics_addr.clone().unwrap();
    (agent, addr, paths)
}

/// Waits until every one of `paths` is delivered to its end; returns the status then.
fn delivered(addr: &str, paths: &[std::path::PathBuf], agent: &Agent) -> Value {
    let mut last = Value::Null;
    let ok = wait_for(Duration::from_secs(20), || {
        let Some(s) = status(addr) else { return false };
        let fs = files(&s);
        let done = paths.iter().all(|p| {
            let len = std::fs::metadata(p).unwrap().len();
            file(&fs, p).is_some_and(|f| f["delivered_offset"] == len && f["size"] == len)
        });
        last = s;
        done
    });
    assert!(ok, "not delivered: {last:#}\n{}", agent.stderr_text());
    last
}

#[test]
fn status_json_shows_each_file_its_offsets_and_rates_the_pushes_positions_and_alerts() {
    let r = Receiver::start(&["--webhook-key", "K1"]);
    let dir = tempfile::tempdir().unwrap();
    let alert = format!(
        "[[alerts]]\nname = \"errs\"\nselector = {{ job = \"test\" }}\nmatch = 'ERROR'\nwebhook_url = \"{}{HOOK}/K1/\"\ngroup_interval = \"1h\"\nresolve_after = \"1h\"\n",
        r.base
    );
    let (agent, addr, paths) = shipping(dir.path(), &r, &["app.log"], "", &alert);
    let log = &paths[0];
    std::fs::OpenOptions::new()
        .append(true)
        .open(log)
        .and_then(|mut f| {
            use std::io::Write;
            f.write_all(b"ERROR the disk is on fire\n")
        })
        .unwrap();
    let s = delivered(&addr, &paths, &agent);
    let len = std::fs::metadata(log).unwrap().len();
    let fs = files(&s);
    let f = file(&fs, log).unwrap();
    assert_eq!(s["sources"][0]["name"], "app");
    assert_eq!(s["sources"][0]["type"], "file");
    assert_eq!(f["state"], "following");
    assert_eq!(f["read_offset"], len);
    assert_eq!(f["lag_bytes"], 0);
    assert!(f["lines_per_s"].as_f64().unwrap() > 0.0, "a file read just now has a rate: {f}");
    assert!(f["bytes_per_s"].as_f64().unwrap() > 0.0, "{f}");
    assert!(s["sources"][0]["lines_per_s"].as_f64().unwrap() > 0.0, "{s:#}");
    assert!(s["push"]["requests"].as_u64().unwrap() >= 1, "{s:#}");
    assert_eq!(s["push"]["lines_total"], 201);
    assert!(s["push"]["latency_p50_ms"].as_f64().unwrap() > 0.0, "{s:#}");
    assert!(s["push"]["latency_p99_ms"].as_f64().unwrap() >= s["push"]["latency_p50_ms"].as_f64().unwrap());
    assert!(s["push"]["last_error"].is_null(), "{s:#}");
    assert_eq!(s["queue"]["bytes_max"], 16 << 20, "queue.max_bytes' default");
    assert!(s["not_ready"].is_null(), "{s:#}");

    // Positions are written within a sync period or so; the alert opens one group.
    let ok = wait_for(Duration::from_secs(10), || {
        status(&addr).is_some_and(|s| {
            s["positions"]["written_ms"].as_u64().is_some()
                && s["alerts"][0]["open_groups"].as_array().is_some_and(|g| g.len() == 1)
        })
    });
    let s = status(&addr).unwrap();
    assert!(ok, "{s:#}");
    assert_eq!(s["positions"]["path"], dir.path().join("positions.json").display().to_string());
    assert_eq!(s["alerts"][0]["rule"], "errs");
    assert_eq!(s["alerts"][0]["open_groups"][0]["labels"]["job"], "test");
    assert_eq!(s["alerts"][0]["last_send"]["state"], "alerting");
    assert!(s["alerts"][0]["last_send"]["error"].is_null());

    // Read only: GET (and HEAD); anything else is 405 and changes nothing.
    for path in ["/status.json", "/status"] {
        for method in ["POST", "PUT", "DELETE"] {
            let resp = request(method, &format!("http://{addr}{path}"), &[], b"{}");
            assert_eq!(resp.status, 405, "{method} {path}");
        }
    }
    // `GET /` was a 404; it leads to the page, relative to itself (a proxy's prefix is kept).
    let root = get(&format!("http://{addr}/"));
    assert_eq!((root.status, root.header("location")), (302, Some("status")));
    let page = get(&format!("http://{addr}/status"));
    assert_eq!(page.status, 200);
    assert_eq!(page.header("content-type"), Some("text/html; charset=utf-8"));
    assert!(page.header("content-security-policy").is_some_and(|c| c.contains("default-src 'none'")));
    let html = page.text();
    assert!(html.contains("fetch(\"status.json\""), "the page polls relative to itself (works behind a path prefix)");
    assert!(!html.contains("<link") && !html.contains("src=\"http") && !html.contains("@import"), "self-contained");
    assert!(agent.terminate(Duration::from_secs(15)).success());
}

#[test]
fn files_show_following_parked_draining_and_done() {
    let r = Receiver::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let (agent, addr, paths) = shipping(dir.path(), &r, &["a.log", "b.log"], "max_open_files = 1", "");
    let states = |s: &Value| -> Vec<String> {
        let mut v: Vec<String> = files(s).iter().map(|f| f["state"].as_str().unwrap().to_string()).collect();
        v.sort();
        v
    };
    // One file open, the other parked (both read to their ends).
    let mut last = Value::Null;
    let ok = wait_for(Duration::from_secs(20), || {
        let Some(s) = status(&addr) else { return false };
        let ok = states(&s) == ["following", "parked"];
        last = s;
        ok
    });
    assert!(ok, "{last:#}\n{}", agent.stderr_text());
    // The followed file is rotated away: drained, then done.
    let followed = files(&last).into_iter().find(|f| f["state"] == "following").unwrap();
    let path = std::path::PathBuf::from(followed["path"].as_str().unwrap());
    std::fs::rename(&path, path.with_extension("log.1")).unwrap();
    let mut seen = Vec::new();
    let ok = wait_for(Duration::from_secs(30), || {
        let Some(s) = status(&addr) else { return false };
        let fs = files(&s);
        let st = file(&fs, &path).map(|f| f["state"].as_str().unwrap().to_string()).unwrap_or_default();
        if seen.last() != Some(&st) {
            seen.push(st.clone());
        }
        last = s;
        st == "done"
    });
    assert!(ok, "states seen {seen:?}: {last:#}");
    assert!(seen.contains(&"draining".to_string()), "draining before done: {seen:?}");
    // The parked file is reopened when it grows (there is room now).
    let other = paths.iter().find(|p| **p != path).unwrap();
    std::fs::OpenOptions::new()
        .append(true)
        .open(other)
        .and_then(|mut f| std::io::Write::write_all(&mut f, b"more\n"))
        .unwrap();
    assert!(wait_for(Duration::from_secs(10), || status(&addr)
        .is_some_and(|s| file(&files(&s), other).is_some_and(|f| f["state"] == "following"))));
    assert!(agent.terminate(Duration::from_secs(15)).success());
}

/// A reverse proxy on a free port that serves `upstream`'s paths under
/// `prefix` (`/agent/status` -> `/status`) and answers 404 to anything else,
/// as a proxy that publishes the agent under a path would.
fn prefix_proxy(upstream: String, prefix: &'static str) -> String {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut client) = conn else { continue };
            let upstream = upstream.clone();
            std::thread::spawn(move || {
                let mut head = Vec::new();
                let mut buf = [0u8; 4096];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match client.read(&mut buf) {
                        Ok(0) | Err(_) => return,
                        Ok(n) => head.extend_from_slice(&buf[..n]),
                    }
                }
                let head = String::from_utf8_lossy(&head).into_owned();
                let mut first = head.split("\r\n").next().unwrap_or("").split(' ');
                let (method, path) = (first.next().unwrap_or(""), first.next().unwrap_or(""));
                let Some(rest) = path.strip_prefix(prefix) else {
                    let _ =
                        client.write_all(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
                    return;
                };
                let mut up = std::net::TcpStream::connect(&upstream).unwrap();
                let _ = write!(up, "{method} {rest} HTTP/1.1\r\nHost: {upstream}\r\nConnection: close\r\n\r\n");
                let mut resp = Vec::new();
                let _ = up.read_to_end(&mut resp);
                let _ = client.write_all(&resp);
            });
        }
    });
    addr
}

#[test]
fn the_page_in_headless_chromium_shows_the_files_and_the_chart_and_escapes_names() {
    if !have("chromium") {
        return skip("chromium is not installed (apt-get install chromium); .ci/run installs it");
    }
    let r = Receiver::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    // A syslog listener too: the page shows it with its counts.
    let listen = format!("127.0.0.1:{}", agent::free_port());
    let syslog = format!(
        "[spool]\npath = \"{}/spool\"\n[[sources]]\ntype = \"syslog\"\nname = \"net\"\nlisten = \"{listen}\"\nprotocol = \"tcp\"\nlabels = {{ job = \"net\" }}\n",
        dir.path().display()
    );
    let (agent, addr, paths) = shipping(dir.path(), &r, &["app.log", HTML_NAME], "", &syslog);
    delivered(&addr, &paths, &agent);
    let mut conn = std::net::TcpStream::connect(&listen).unwrap();
    std::io::Write::write_all(&mut conn, b"<13>1 2026-11-24T07:00:00Z host app - - - over syslog\n").unwrap();
    assert!(wait_for(Duration::from_secs(20), || status(&addr)
        .is_some_and(|s| s["listeners"][0]["lines_received"].as_u64() == Some(1))));
    // Behind a proxy that publishes the agent under /agent/: the page must
    // find its data relative to itself (a fetch of /status.json gets 404).
    let proxy = prefix_proxy(addr.clone(), "/agent");
    let profile = tempfile::tempdir().unwrap();
    let mut child = Command::new("chromium")
        .args(["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run"])
        .args(["--disable-background-networking", "--disable-component-update", "--disable-sync"])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(["--virtual-time-budget=3000", "--dump-dom"])
        .arg(format!("http://{proxy}/agent/status"))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut out = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut out, &mut s).map(|_| s)
    });
    let mut exit = None;
    let finished = wait_for(Duration::from_secs(90), || {
        exit = child.try_wait().unwrap();
        exit.is_some()
    });
    if !finished {
        let _ = child.kill();
        panic!("chromium did not finish within 90s");
    }
    let dom = reader.join().unwrap().unwrap();
    assert!(exit.unwrap().success(), "chromium failed: {dom}");
    assert_eq!(dom.matches("<tr class=\"file").count(), 2, "one row per file: {dom}");
    assert!(dom.contains(&paths[0].display().to_string()), "{dom}");
    let escaped = HTML_NAME.replace('<', "&lt;").replace('>', "&gt;");
    assert!(dom.contains(&escaped), "the HTML-named file shows as text: {dom}");
    assert!(!dom.contains("<img"), "no element made from a file name: {dom}");
    // The chart: both series drawn from the polls.
    for series in ["read", "pushed"] {
        let at = dom.find(&format!("<polyline class=\"series {series}\"")).unwrap_or_else(|| panic!("{series}: {dom}"));
        let tag = &dom[at..at + dom[at..].find('>').unwrap()];
        let points = tag.split("points=\"").nth(1).unwrap_or("");
        assert!(points.split(' ').filter(|p| p.contains(',')).count() >= 2, "{series} has points: {tag}");
    }
    assert!(dom.contains(">ready<"), "{dom}");
    // The listener: one row, its address and what it received.
    let at = dom.find("<tr class=\"listener\"").unwrap_or_else(|| panic!("no listener row: {dom}"));
    let tr = &dom[at..at + dom[at..].find("</tr>").unwrap()];
    assert!(tr.contains(&listen) && tr.contains(">net<") && tr.contains("syslog (tcp)") && tr.contains(">1<"), "{tr}");
    assert!(agent.terminate(Duration::from_secs(15)).success());
}

/// A tmux server of its own (`-L`), gone when dropped.
struct Tmux(String);

impl Tmux {
    fn run(&self, args: &[&str]) -> String {
        let out = Command::new("tmux").args(["-L", &self.0]).args(args).output().unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    }
    fn screen(&self) -> String {
        self.run(&["capture-pane", "-p", "-t", "top"])
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        self.run(&["kill-server"]);
    }
}

#[test]
fn top_in_tmux_shows_the_file_and_quits_on_q_and_ctrl_c_restoring_the_terminal() {
    if !have("tmux") {
        return skip("tmux is not installed (apt-get install tmux); .ci/run installs it");
    }
    let r = Receiver::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let (agent, addr, paths) = shipping(dir.path(), &r, &["app.log"], "", "");
    delivered(&addr, &paths, &agent);
    let tmux = Tmux(format!("tailship-top-{}", std::process::id()));
    let top = format!("{} top --url http://{addr}", bin().display());
    // Between the two runs the shell waits for Enter, so the terminal can be looked at.
    let script = format!("{top}; echo TOP1-EXIT $?; read x; {top}; echo TOP2-EXIT $?; sleep 120");
    tmux.run(&["new-session", "-d", "-s", "top", "-x", "160", "-y", "40", &script]);
    let name = paths[0].display().to_string();
    for (key, done) in [("q", "TOP1-EXIT 0"), ("C-c", "TOP2-EXIT 0")] {
        let shown = wait_for(Duration::from_secs(15), || {
            let s = tmux.screen();
            s.contains(&name) && s.contains("tailship top") && s.contains("most behind first")
        });
        assert!(shown, "top shows the file: {}", tmux.screen());
        assert_eq!(tmux.run(&["display", "-p", "-t", "top", "#{alternate_on}"]).trim(), "1");
        tmux.run(&["send-keys", "-t", "top", key]);
        let quit = wait_for(Duration::from_secs(10), || tmux.screen().contains(done));
        assert!(quit, "{key} quits with 0: {}", tmux.screen());
        // The terminal is given back: out of the alternate screen, the view gone.
        assert_eq!(tmux.run(&["display", "-p", "-t", "top", "#{alternate_on}"]).trim(), "0");
        assert!(!tmux.screen().contains("most behind first"), "{}", tmux.screen());
        tmux.run(&["send-keys", "-t", "top", "Enter"]);
    }
    assert!(agent.terminate(Duration::from_secs(15)).success());
}

/// A terminal narrower than the path: the columns fit it and the path
/// loses its start, not its end (the file's name), behind a `…`.
#[test]
fn top_fits_its_columns_to_a_narrow_terminal_keeping_the_end_of_the_path() {
    if !have("tmux") {
        return skip("tmux is not installed (apt-get install tmux); .ci/run installs it");
    }
    let r = Receiver::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let name = "a-long-file-name-that-a-narrow-terminal-cannot-show-whole.log";
    let (agent, addr, paths) = shipping(dir.path(), &r, &[name], "", "");
    delivered(&addr, &paths, &agent);
    let tmux = Tmux(format!("tailship-top-narrow-{}", std::process::id()));
    let script = format!("{} top --url http://{addr}; sleep 120", bin().display());
    tmux.run(&["new-session", "-d", "-s", "top", "-x", "72", "-y", "30", &script]);
    let tail = &name[name.len() - 20..];
    let shown = wait_for(Duration::from_secs(15), || {
        let s = tmux.screen();
        s.contains("most behind first") && s.lines().any(|l| l.contains('…') && l.contains(tail))
    });
    assert!(shown, "the end of the path shows: {}", tmux.screen());
    let screen = tmux.screen();
    assert!(screen.contains("FILE") && screen.contains("following"), "{screen}");
    tmux.run(&["send-keys", "-t", "top", "q"]);
    assert!(agent.terminate(Duration::from_secs(15)).success());
}

#[test]
fn top_through_a_pipe_prints_one_snapshot_and_exits() {
    let r = Receiver::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let (agent, addr, paths) = shipping(dir.path(), &r, &["app.log", "small.log"], "", "");
    delivered(&addr, &paths, &agent);
    let out = Command::new(bin()).args(["top", "--url", &format!("http://{addr}")]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}{}", String::from_utf8_lossy(&out.stderr));
    assert!(text.starts_with("tailship "), "{text}");
    assert!(text.contains("LAG") && text.contains("FILE"), "{text}");
    for p in &paths {
        let row = text.lines().find(|l| l.ends_with(&p.display().to_string())).unwrap_or_else(|| panic!("{text}"));
        assert!(row.starts_with("0 B ") && row.contains("following"), "{row}");
    }
    assert!(!text.contains('\u{1b}'), "plain text, no terminal codes: {text:?}");

    // No agent there: exit 1, saying where it looked.
    let port = agent::free_port();
    let out = Command::new(bin()).args(["top", "--url", &format!("http://127.0.0.1:{port}")]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains(&format!("127.0.0.1:{port}/status.json")));
    assert!(agent.terminate(Duration::from_secs(15)).success());
}
