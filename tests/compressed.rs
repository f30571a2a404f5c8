//! Compressed files through the real binary: `.gz`, `.z` (zlib), `.bz2` and
//! `.tar.gz` with `decompression`, each read once, whole; `initial_delay`
//! keeps a file still being compressed from being read half-written.

use crate::agent;
use crate::common;

use std::io::Write;
use std::path::Path;
use std::time::Duration;

use agent::{agent_config, query_all, Agent};
use common::{wait_for, Receiver};

const BIG: &[&str] = &["--max-query-limit", "1000000"];

fn stored(r: &Receiver) -> u64 {
    r.stats()["entries"].as_u64().unwrap_or(0)
}

fn lines(prefix: &str, n: usize) -> String {
    (0..n).map(|i| format!("{prefix} line {i}\n")).collect()
}

fn zlib(data: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

fn bz2(data: &[u8]) -> Vec<u8> {
    let mut e = bzip2::write::BzEncoder::new(Vec::new(), bzip2::Compression::default());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

/// A `.tar.gz` of `files` (name, content), in order.
fn tar_gz(files: &[(&str, &str)]) -> Vec<u8> {
    let mut b = tar::Builder::new(flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default()));
    for (name, text) in files {
        let mut h = tar::Header::new_gnu();
        h.set_size(text.len() as u64);
        h.set_mode(0o644);
        h.set_cksum();
        b.append_data(&mut h, name, text.as_bytes()).unwrap();
    }
    b.into_inner().unwrap().finish().unwrap()
}

fn shipped_lines(r: &Receiver, filename: &Path) -> Vec<String> {
    let q = format!(r#"{{job="test", filename="{}"}}"#, filename.display());
    query_all(r, &q, None).into_iter().map(|e| e.line).collect()
}

#[test]
fn every_format_is_read_once_whole_and_not_again_after_a_restart() {
    let r = Receiver::start(BIG);
    let dir = tempfile::tempdir().unwrap();
    let logs = dir.path().join("logs");
    std::fs::create_dir(&logs).unwrap();
    let (gz, z, bz, tgz) = (logs.join("a.log.gz"), logs.join("b.log.z"), logs.join("c.log.bz2"), logs.join("d.tar.gz"));
    std::fs::write(&gz, common::gzip(lines("gz", 300).as_bytes())).unwrap();
    std::fs::write(&z, zlib(lines("zlib", 300).as_bytes())).unwrap();
    std::fs::write(&bz, bz2(lines("bz2", 300).as_bytes())).unwrap();
    // The first file of the archive does not end in a newline: its last line is its own.
    std::fs::write(&tgz, tar_gz(&[("one.log", "tar one 1\ntar one 2"), ("two.log", "tar two 1\n")])).unwrap();
    let include = format!("{}/*", logs.display());
    let cfg = agent_config(dir.path(), &r.base, &include, "", "decompression = { enabled = true }");
    let agent = Agent::start(&cfg);
    assert!(wait_for(Duration::from_secs(30), || stored(&r) >= 903), "{}", agent.stderr_text());
    assert_eq!(shipped_lines(&r, &gz), lines("gz", 300).lines().collect::<Vec<_>>());
    assert_eq!(shipped_lines(&r, &z), lines("zlib", 300).lines().collect::<Vec<_>>());
    assert_eq!(shipped_lines(&r, &bz), lines("bz2", 300).lines().collect::<Vec<_>>());
    assert_eq!(shipped_lines(&r, &tgz), ["tar one 1", "tar one 2", "tar two 1"]);
    assert_eq!(agent.metric("tailship_file_events_total{event=\"corrupt\",source=\"file-0\"}"), 0.0);
    assert!(agent.terminate(Duration::from_secs(10)).success());
    // Their positions say they were delivered: a restart reads none again.
    let agent = Agent::start(&cfg);
    assert!(wait_for(Duration::from_secs(10), || !agent.metrics().is_empty()));
    assert!(!wait_for(Duration::from_millis(800), || stored(&r) > 903), "{}", agent.stderr_text());
    assert!(agent.terminate(Duration::from_secs(10)).success());
}

#[test]
fn a_file_still_being_compressed_waits_for_initial_delay() {
    let r = Receiver::start(BIG);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("late.log.bz2");
    let whole = bz2(lines("late", 2000).as_bytes());
    let (first, rest) = whole.split_at(whole.len() / 2);
    std::fs::write(&path, first).unwrap();
    let cfg = agent_config(
        dir.path(),
        &r.base,
        &path.display().to_string(),
        "",
        "decompression = { enabled = true, initial_delay = \"1500ms\", format = \"bz2\" }",
    );
    let agent = Agent::start(&cfg);
    assert!(wait_for(Duration::from_secs(10), || !agent.metrics().is_empty()));
    // Scanned every 200 ms, the half-written file is not read while it changes.
    assert!(!wait_for(Duration::from_millis(1000), || stored(&r) > 0), "{}", agent.stderr_text());
    std::fs::OpenOptions::new().append(true).open(&path).unwrap().write_all(rest).unwrap();
    assert!(wait_for(Duration::from_secs(30), || stored(&r) >= 2000), "{}", agent.stderr_text());
    assert_eq!(shipped_lines(&r, &path), lines("late", 2000).lines().collect::<Vec<_>>());
    assert!(agent.terminate(Duration::from_secs(10)).success());
}

#[test]
fn a_bad_decompression_key_exits_2_naming_key_and_file() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = agent_config(
        dir.path(),
        "http://127.0.0.1:1",
        "/nonexistent/*.bz2",
        "",
        "decompression = { enabled = true, formt = \"gz\", initial_delay = \"soon\" }",
    );
    let out = std::process::Command::new(common::bin()).args(["check", "--config"]).arg(&cfg).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains(&cfg.display().to_string()), "{err}");
    assert!(err.contains("sources[0].decompression.formt"), "{err}");
    assert!(err.contains("sources[0].decompression.initial_delay"), "{err}");
}
