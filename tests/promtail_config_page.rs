//! A config copied from Promtail's `/config` page (the running config with
//! every default written out) converts as the original does: the real
//! Promtail 3.6.15 (from `../shared/peers`) runs each config of
//! `tests/data/promtail_configs`, its page is fetched and converted, and the
//! result must equal the original's conversion: the same tailship config, the
//! same keys listed, nothing of Promtail's defaults. Skips, saying so, where
//! the Promtail binary is absent.

#[path = "common/agent.rs"]
mod agent;
mod common;
#[path = "common/promtail.rs"]
mod promtail;

use std::path::Path;
use std::process::Command;

use agent::{free_port, write_file};
use common::bin;
use promtail::Promtail;

/// `tests/data/promtail_configs/NAME` with its placeholders filled: `PORT`
/// (Promtail's own server), `PORT2` and `PORT3` (receivers), `DIR`.
fn corpus_config(name: &str, dir: &Path, port: u16) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/promtail_configs").join(name);
    let text = std::fs::read_to_string(&path).unwrap();
    text.replace("PORT2", &free_port().to_string())
        .replace("PORT3", &free_port().to_string())
        .replace("PORT", &port.to_string())
        .replace("DIR", &dir.display().to_string())
}

/// `tailship convert promtail FILE`: exit code, config, and the report on
/// stderr with the file's name taken out.
fn convert(file: &Path) -> (Option<i32>, String, Vec<String>) {
    let out =
        Command::new(bin()).args(["convert", "promtail"]).arg(file).env_remove("JAEGER_AGENT_HOST").output().unwrap();
    let name = file.display().to_string();
    let report = String::from_utf8_lossy(&out.stderr).lines().map(|l| l.replace(&name, "FILE")).collect();
    (out.status.code(), String::from_utf8_lossy(&out.stdout).into_owned(), report)
}

#[test]
fn configs_copied_from_promtails_config_page_convert_as_their_originals() {
    let names = ["file_pipeline.yaml", "syslog_push.yaml", "docker_json.yaml", "two_clients_cri.yaml"];
    let mut same = 0;
    for name in names {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        let port = free_port();
        let original = write_file(dir, "original.yaml", &corpus_config(name, dir, port));
        let Some(promtail) = Promtail::start(dir, &original, port) else { return };
        let page = write_file(dir, "page.yaml", &promtail.config_page());
        drop(promtail);

        let (code, toml, report) = convert(&original);
        assert_eq!(code, Some(0), "{name}: {report:?}");
        let (page_code, page_toml, mut page_report) = convert(&page);
        assert_eq!(page_code, Some(0), "{name}: the page converts too: {page_report:?}");
        // The page hides secrets: that is said, by key, and is the one difference.
        let hidden = page_report.iter().position(|l| l.contains("hides secrets"));
        let page_toml = match hidden {
            Some(i) => {
                page_report.remove(i);
                page_toml.replace("password = \"<secret>\"", "password = \"p\"")
            }
            None => page_toml,
        };
        let parse = |t: &str| t.parse::<toml::Table>().unwrap_or_else(|e| panic!("{name}: {e}\n{t}"));
        assert_eq!(
            parse(&page_toml),
            parse(&toml),
            "{name}: the page's conversion\n{page_toml}\nthe original's\n{toml}"
        );
        assert_eq!(page_report, report, "{name}: the same keys listed and noted");
        // And it runs: `check` takes it (no empty tenant, no tracing to nowhere).
        let cfg = write_file(dir, "page.toml", &page_toml);
        let check = Command::new(bin()).args(["check", "--config"]).arg(&cfg).output().unwrap();
        assert!(check.status.success(), "{name}: {}", String::from_utf8_lossy(&check.stderr));
        same += 1;
    }
    eprintln!("{same} of {} /config pages convert as their originals", names.len());
}
