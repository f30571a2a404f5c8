//! The scenario most end-to-end tests share, built in one place: a receiver
//! (on Loki's API prefix, as Promtail's clients push, or on its own), a temp
//! root with log files under `logs/`, a Promtail job converted and checked
//! (or a tailship config checked), the agent running it, and the labels of
//! what it shipped.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use tempfile::TempDir;

use crate::agent::{free_port, write_file, Agent};
use crate::common::{wait_for, Receiver};
use crate::discovery::{check_ok, convert_and_check, labels_at};

/// Loki's API prefix, the one Promtail's clients push to.
pub const LOKI_PREFIX: &str = "/loki/api/v1";

/// A receiver on Loki's API prefix (no query limit to speak of).
pub fn loki_receiver() -> Receiver {
    loki_receiver_with(&[])
}

/// [`loki_receiver`] with more `tailship receive` arguments.
pub fn loki_receiver_with(args: &[&str]) -> Receiver {
    let mut all = vec!["--api-prefix", LOKI_PREFIX, "--max-query-limit", "1000000"];
    all.extend_from_slice(args);
    Receiver::start(&all)
}

/// A Promtail config pushing to `url` on Loki's API prefix, its positions in
/// `root/POSITIONS`, with `scrape_configs` (the YAML list, indented by two) after.
pub fn promtail_yaml_at(root: &Path, url: &str, positions: &str, scrape_configs: &str) -> String {
    format!(
        "server:\n  http_listen_port: {listen}\npositions:\n  filename: {d}/{positions}\nclients:\n  - url: {url}{LOKI_PREFIX}/push\nscrape_configs:\n{scrape_configs}",
        listen = free_port(),
        d = root.display(),
    )
}

/// A receiver, its API prefix and a temp root.
pub struct Scenario {
    pub r: Receiver,
    pub dir: TempDir,
    prefix: &'static str,
}

impl Scenario {
    /// A receiver on Loki's API prefix and a fresh temp root.
    pub fn loki() -> Scenario {
        Scenario { r: loki_receiver(), dir: tempfile::tempdir().unwrap(), prefix: LOKI_PREFIX }
    }

    /// A receiver on its own prefix (`--max-query-limit 1000000`) and a fresh temp root.
    pub fn plain() -> Scenario {
        let r = Receiver::start(&["--max-query-limit", "1000000"]);
        Scenario { r, dir: tempfile::tempdir().unwrap(), prefix: "/logstore/api/v1" }
    }

    /// The temp root.
    pub fn root(&self) -> &Path {
        self.dir.path()
    }

    /// `root/logs`, where [`Scenario::log`] writes.
    pub fn logs(&self) -> PathBuf {
        self.root().join("logs")
    }

    /// Writes `text` to `root/logs/NAME/app.log`; the file's path.
    pub fn log(&self, name: &str, text: &str) -> PathBuf {
        let d = self.logs().join(name);
        std::fs::create_dir_all(&d).unwrap();
        write_file(&d, "app.log", text)
    }

    /// `root/logs/NAME/app.log` holding `NAME line`, for each name.
    pub fn name_logs(&self, names: &[&str]) {
        self.said_logs(names, "line");
    }

    /// `root/logs/NAME/app.log` holding `NAME WORD`, for each name.
    pub fn said_logs(&self, names: &[&str], word: &str) {
        for n in names {
            self.log(n, &format!("{n} {word}\n"));
        }
    }

    /// A Promtail config pushing to the receiver, its positions under the
    /// root, with `scrape_configs` (the YAML list, indented by two) after.
    pub fn promtail_yaml(&self, scrape_configs: &str) -> String {
        promtail_yaml_at(self.root(), &self.r.base, "positions.yaml", scrape_configs)
    }

    /// [`Scenario::promtail_yaml`] converted, every key of `key` translated,
    /// and the result checked: the tailship config's path.
    pub fn convert(&self, scrape_configs: &str, key: &str) -> PathBuf {
        convert_and_check(self.root(), &self.promtail_yaml(scrape_configs), key)
    }

    /// [`Scenario::convert`], and the agent started on it off the async runtime.
    pub async fn run_converted(&self, scrape_configs: &str, key: &str) -> Agent {
        run_agent(self.convert(scrape_configs, key)).await
    }

    /// A tailship config shipping to the receiver (`[client]`, `[server]`,
    /// `[positions]` under the root) with `rest` after, written to
    /// `root/NAME` and checked: its path.
    pub fn toml(&self, name: &str, rest: &str) -> PathBuf {
        let cfg = self.write_toml(name, rest);
        check_ok(&cfg);
        cfg
    }

    /// [`Scenario::toml`] not checked.
    pub fn write_toml(&self, name: &str, rest: &str) -> PathBuf {
        let text = format!(
            "[client]\nurl = \"{url}\"\n[server]\nlisten = \"127.0.0.1:{listen}\"\n[positions]\npath = \"{d}/positions\"\n{rest}",
            url = self.r.base,
            listen = free_port(),
            d = self.root().display(),
        );
        write_file(self.root(), name, &text)
    }

    /// The labels of every entry of `query`.
    pub fn labels(&self, query: &str) -> Vec<BTreeMap<String, String>> {
        labels_at(&self.r, self.prefix, query)
    }

    /// Waits (30s at most) until `query` has `n` entries: their labels.
    /// Panics with the agent's stderr when it does not come.
    pub fn wait_labels(&self, agent: &Agent, query: &str, n: usize) -> Vec<BTreeMap<String, String>> {
        let ok = wait_for(Duration::from_secs(30), || self.labels(query).len() == n);
        assert!(ok, "{query}: {:?}\n{}", self.labels(query), agent.stderr_text());
        self.labels(query)
    }
}

/// Starts the agent on `cfg` off the async runtime (its start blocks while
/// the test's mock servers answer on the runtime).
pub async fn run_agent(cfg: PathBuf) -> Agent {
    tokio::task::spawn_blocking(move || Agent::start(&cfg)).await.unwrap()
}
