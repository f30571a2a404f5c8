//! The "Try it end to end" commands of the book's getting-started chapter
//! (and of the README's quick start, which must be the same), run as they
//! stand (on free ports instead of 3100 and 9080), from an empty directory.

use crate::agent;
use crate::common;

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use agent::free_port;
use common::{bin, wait_for};

/// The first indented (command) lines after `marker` in `file`, up to a blank line.
fn block(file: &str, marker: &str) -> Vec<String> {
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(file)).unwrap();
    let rest = text.split(marker).nth(1).unwrap_or_else(|| panic!("{file}: no `{marker}`"));
    rest.lines()
        .skip_while(|l| !l.starts_with("    "))
        .take_while(|l| !l.trim().is_empty())
        .map(|l| l.trim().to_string())
        .collect()
}

struct Killed(Vec<Child>);

impl Drop for Killed {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

#[test]
fn the_books_try_it_commands_show_the_line() {
    let lines = block("book/src/getting-started.md", "## Try it end to end\n");
    let readme = block("README.md", "Try it end to end on one machine:");
    assert_eq!(readme, lines, "the README's quick start and the book's getting-started chapter differ");
    assert!(lines.iter().any(|l| l.starts_with("tailship query")), "{lines:?}");
    let dir = tempfile::tempdir().unwrap();
    let (store, metrics) = (free_port(), free_port());
    let ports = |s: &str| {
        s.replace("127.0.0.1:3100", &format!("127.0.0.1:{store}"))
            .replace("127.0.0.1:9080", &format!("127.0.0.1:{metrics}"))
    };
    let config = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("config/local.toml")).unwrap();
    std::fs::create_dir(dir.path().join("config")).unwrap();
    std::fs::write(dir.path().join("config/local.toml"), ports(&config)).unwrap();
    let path = format!("{}:{}", bin().parent().unwrap().display(), std::env::var("PATH").unwrap_or_default());
    let sh = |line: &str| {
        let mut c = Command::new("sh");
        c.arg("-c").arg(line).current_dir(dir.path()).env("PATH", &path).env("RUST_LOG", "info");
        c
    };
    let mut background = Killed(Vec::new());
    let mut printed = String::new();
    for line in &lines {
        let mut line = ports(line);
        if line.starts_with("tailship receive") {
            line = line.replacen("tailship receive", &format!("tailship receive --listen 127.0.0.1:{store}"), 1);
        }
        let command = line.split(" #").next().unwrap().trim();
        if let Some(command) = command.strip_suffix('&') {
            let child = sh(&format!("exec {command}")).stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
            background.0.push(child);
            if command.starts_with("tailship receive") {
                // The shell user types the next line after the store started.
                let up =
                    wait_for(Duration::from_secs(10), || std::net::TcpStream::connect(("127.0.0.1", store)).is_ok());
                assert!(up, "the store did not start");
            }
            continue;
        }
        let out = sh(command).output().unwrap();
        assert!(out.status.success() || command.starts_with("curl"), "`{command}`: {out:?}");
        printed.push_str(&String::from_utf8_lossy(&out.stdout));
        if command.starts_with("tailship query") {
            assert!(
                String::from_utf8_lossy(&out.stdout).contains("hello ERROR world"),
                "`{command}` did not show the line: {out:?}"
            );
        }
    }
    assert!(printed.contains("tailship_push_lines_total"), "{printed}");
}
