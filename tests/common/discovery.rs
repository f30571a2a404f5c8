//! Helpers of the tests of a file source's discoveries (`tests/dockerswarm.rs`,
//! `tests/ec2.rs`, ...): the labels of what was stored, a Promtail job
//! converted and checked, and the "bad config exits 2" round.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::agent::{free_port, query_all_at, write_file, Stored};
use crate::common::{bin, Receiver};

/// The labels of the stored entry `e`, but the `service_name` and `filename` the agent adds.
pub fn stored_labels(e: &Stored) -> BTreeMap<String, String> {
    e.labels
        .iter()
        .filter(|(k, _)| !matches!(k.as_str(), "service_name" | "filename"))
        .map(|(k, v)| (k.clone(), v.as_str().unwrap().to_string()))
        .collect()
}

/// `pairs` as a label map.
pub fn label_map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

/// The labels of every entry of `query` (receiver on the default prefix).
pub fn labels_of(r: &Receiver, query: &str) -> Vec<BTreeMap<String, String>> {
    labels_at(r, "/logstore/api/v1", query)
}

/// [`labels_of`] on a receiver started with `--api-prefix PREFIX`.
pub fn labels_at(r: &Receiver, prefix: &str, query: &str) -> Vec<BTreeMap<String, String>> {
    query_all_at(r, prefix, query, None)
        .into_iter()
        .map(|e| e.labels.iter().map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string())).collect())
        .collect()
}

/// Converts the Promtail config `yaml` (written to `dir/promtail.yaml`): it
/// must exit 0 and report nothing of `key` (every key of it translated); the
/// result, written to `dir/tailship.toml`, must pass `check`. Its path.
pub fn convert_and_check(dir: &Path, yaml: &str, key: &str) -> PathBuf {
    let (toml, stderr) = convert_promtail(dir, yaml);
    assert!(!stderr.contains(key), "every key of {key} translated: {stderr}");
    let cfg = write_file(dir, "tailship.toml", &toml);
    check_ok(&cfg);
    cfg
}

/// Converts the Promtail config `yaml` (written to `dir/promtail.yaml`),
/// which must exit 0: the tailship config it prints and its stderr.
pub fn convert_promtail(dir: &Path, yaml: &str) -> (String, String) {
    let promtail = write_file(dir, "promtail.yaml", yaml);
    let out = Command::new(bin()).args(["convert", "promtail"]).arg(&promtail).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    (String::from_utf8_lossy(&out.stdout).into_owned(), stderr)
}

/// `tailship check --config cfg` exits 0.
pub fn check_ok(cfg: &Path) {
    let check = Command::new(bin()).args(["check", "--config"]).arg(cfg).output().unwrap();
    assert_eq!(check.status.code(), Some(0), "{}", String::from_utf8_lossy(&check.stderr));
}

/// Each of `cases` (the keys of one `[[sources]]` table, and a key the
/// error must name) makes `check` exit 2 naming that key and the file.
pub fn bad_sources_exit_2<S: AsRef<str>>(cases: &[(S, &str)]) {
    let dir = tempfile::tempdir().unwrap();
    for (source, key) in cases {
        let source = source.as_ref();
        let text = format!(
            "[client]\nurl = \"http://127.0.0.1:1\"\n[server]\nlisten = \"127.0.0.1:{}\"\n[[sources]]\n{source}\n",
            free_port()
        );
        let cfg = write_file(dir.path(), "bad.toml", &text);
        let out = Command::new(bin()).args(["check", "--config"]).arg(&cfg).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{source}: {stderr}");
        assert!(stderr.contains(key) && stderr.contains("bad.toml"), "{source}: {stderr}");
    }
}

/// `check` prints the config at `cfg` without `secret` (it is redacted).
pub fn check_hides(cfg: &Path, secret: &str) {
    let out = Command::new(bin()).args(["check", "--config"]).arg(cfg).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(!String::from_utf8_lossy(&out.stdout).contains(secret), "`{secret}` is a secret");
}

/// Each of `cases` (the keys of one network source of type `ty` after its
/// `type`, and a key the error must name) makes `check` exit 2 naming that
/// key and the file.
pub fn bad_net_sources_exit_2(ty: &str, cases: &[(&str, &str)]) {
    let dir = tempfile::tempdir().unwrap();
    for (source, key) in cases {
        let text = format!("type = \"{ty}\"\n{source}");
        let cfg = crate::agent::net_source_config(dir.path(), "bad.toml", "http://127.0.0.1:9", &text);
        let out = Command::new(bin()).args(["check", "--config"]).arg(&cfg).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{source}: {err}");
        assert!(err.contains(key) && err.contains("bad.toml"), "{key}: {err}");
    }
}
