//! The book (`book/`, built with mdbook by `.ci/run`) is kept true by tests:
//! every chapter is in SUMMARY.md and the book builds with its links and
//! anchors resolving; every config key the schema accepts is in the
//! reference (read from the serde structs, not from a list kept by hand),
//! with its default; every TOML config block passes `tailship check`; the
//! command-line reference is what clap prints; every metric the agent serves
//! is in the metrics reference; every test the testing chapter names exists;
//! and the README is the short front page that links into the book.

use crate::agent;
mod cli;
use crate::common;
mod defaults;
mod markdown;
mod schema;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use agent::{agent_config, free_port, Agent};
use common::{bin, wait_for, Receiver};
use markdown::{blocks, chapters, read, relative_links, root, src};

#[test]
fn every_chapter_of_the_summary_exists_and_every_chapter_is_in_it() {
    let summary = read(&src().join("SUMMARY.md"));
    let listed: Vec<String> = relative_links(&summary);
    assert!(listed.len() > 30, "{listed:?}");
    for l in &listed {
        assert!(src().join(l).is_file(), "SUMMARY.md names {l}, which is missing");
    }
    for c in chapters(&src()) {
        let rel = c.strip_prefix(src()).expect("under book/src").to_string_lossy().into_owned();
        assert!(rel == "SUMMARY.md" || listed.contains(&rel), "{rel} is not in SUMMARY.md (mdbook would not build it)");
    }
}

#[test]
fn relative_links_of_the_book_and_the_readme_into_it_resolve() {
    for c in chapters(&src()) {
        for l in relative_links(&read(&c)) {
            let file = l.split('#').next().unwrap_or_default();
            let target = c.parent().expect("a directory").join(file);
            assert!(file.is_empty() || target.exists(), "{}: link {l} resolves to nothing", c.display());
        }
    }
    let readme = read(&root().join("README.md"));
    let into_book: Vec<String> = relative_links(&readme).into_iter().filter(|l| l.starts_with("book/")).collect();
    assert!(into_book.len() >= 5, "the README links into the book: {into_book:?}");
    for l in relative_links(&readme) {
        let file = l.split('#').next().unwrap_or_default();
        assert!(file.is_empty() || root().join(file).exists(), "README: link {l} resolves to nothing");
    }
}

/// `mdbook`, from PATH or cargo's bin directory.
fn mdbook() -> Option<std::path::PathBuf> {
    let home = std::env::var_os("CARGO_HOME")
        .map(std::path::PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".cargo")));
    let candidates = [Some(std::path::PathBuf::from("mdbook")), home.map(|h| h.join("bin/mdbook"))];
    candidates
        .into_iter()
        .flatten()
        .find(|p| Command::new(p).arg("--version").output().is_ok_and(|o| o.status.success()))
}

/// The `id`s of an HTML page.
fn ids(html: &str) -> BTreeSet<String> {
    let re = regex::Regex::new(r#"\bid="([^"]+)""#).expect("a regex");
    re.captures_iter(html).map(|c| c[1].to_string()).collect()
}

#[test]
fn the_book_builds_and_every_link_and_anchor_of_it_resolves() {
    let Some(mdbook) = mdbook() else {
        eprintln!("skipped: mdbook is not installed (cargo install mdbook; .ci/run does)");
        return;
    };
    let out = tempfile::tempdir().expect("a temporary directory");
    let build = Command::new(&mdbook).arg("build").arg(root().join("book")).arg("--dest-dir").arg(out.path()).output();
    let build = build.expect("mdbook runs");
    let log = String::from_utf8_lossy(&build.stderr);
    assert!(build.status.success(), "mdbook build failed:\n{log}");
    assert!(!log.contains("WARN") && !log.contains("ERROR"), "mdbook warned:\n{log}");
    let href = regex::Regex::new(r#"\b(?:href|src)="([^"]+)""#).expect("a regex");
    let mut checked = 0;
    for md in chapters(&src()).iter().filter(|c| !c.ends_with("SUMMARY.md")) {
        let rel = md.strip_prefix(src()).expect("under book/src").with_extension("html");
        let page = out.path().join(&rel);
        let html = read(&page);
        // The chapter itself, not the sidebar mdbook puts around it.
        let main = html.split("<main>").nth(1).and_then(|m| m.split("</main>").next()).unwrap_or(&html);
        for c in href.captures_iter(main) {
            let target = c[1].replace("&amp;", "&");
            if target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            let (file, anchor) = target.split_once('#').unwrap_or((&target, ""));
            let file_path = if file.is_empty() { page.clone() } else { page.parent().expect("a directory").join(file) };
            assert!(file_path.exists(), "{}: {target} resolves to nothing", rel.display());
            if !anchor.is_empty() {
                let anchors = ids(&read(&file_path));
                assert!(anchors.contains(anchor), "{}: {target}: no such anchor; there are {anchors:?}", rel.display());
            }
            checked += 1;
        }
    }
    assert!(checked > 100, "only {checked} links were checked");
}

/// Structs the schema walk cannot see into (they sit behind
/// `deserialize_any`), walked as roots of their own at their path.
fn hidden() -> Vec<(&'static str, schema::Schema)> {
    let drop = schema::walk::<tailship::config::DropRule>("sources[].stages[].drop").expect("the drop rule's keys");
    vec![("sources[].stages[].drop", drop)]
}

#[test]
fn every_config_key_is_in_the_reference_with_its_default() {
    let mut all = schema::walk::<tailship::config::Config>("").expect("the schema's keys");
    let hidden = hidden();
    let declared: BTreeSet<String> = hidden.iter().map(|(p, _)| p.to_string()).collect();
    assert_eq!(all.opaque, declared, "a struct sits where the walk cannot see its keys: walk it in hidden()");
    let defaults = defaults::defaults::<tailship::config::Config>(&all).expect("the schema's defaults");
    for (_, s) in hidden {
        all.keys.extend(s.keys);
        all.shared.extend(s.shared);
    }
    assert!(all.keys.len() > 400, "{} keys", all.keys.len());
    let rows = markdown::reference_rows();
    let documented: BTreeMap<&str, &markdown::Row> = rows.iter().map(|r| (r.key.as_str(), r)).collect();
    let mut problems = Vec::new();
    for (key, values) in &all.keys {
        let Some(row) = documented.get(key.as_str()) else {
            let default = defaults.get(key).map(|d| format!("`{d}`")).unwrap_or_default();
            problems.push(format!("not in the reference; a row to start from: | `{key}` | {default} | |"));
            continue;
        };
        if let Some(d) = defaults.get(key) {
            if !row.default.contains(d.as_str()) {
                problems.push(format!("{}: `{key}`: the default cell does not say `{d}`", row.file));
            }
        }
        for v in values {
            if !row.text.contains(&format!("`{v}`")) && !row.text.contains(&format!("\"{v}\"")) {
                problems.push(format!("{}: `{key}`: the value `{v}` is not named", row.file));
            }
        }
        if let Some(same) = all.shared.get(key) {
            if !row.text.contains(&format!("`{same}`")) {
                problems.push(format!("{}: `{key}` takes the keys of `{same}`: say so", row.file));
            }
        }
    }
    for row in &rows {
        if !all.keys.contains_key(&row.key) {
            problems.push(format!("{}: `{}` is no key of the config schema", row.file, row.key));
        }
    }
    let mut seen = BTreeSet::new();
    for row in &rows {
        if !seen.insert(&row.key) {
            problems.push(format!("{}: `{}` has two rows", row.file, row.key));
        }
    }
    assert!(problems.is_empty(), "the reference (book/src/reference/) and the schema differ:\n{}", problems.join("\n"));
}

/// `tailship check` on `text`: exit 0, or exit 2 only for files the example
/// names that do not exist on this machine.
fn check_example(dir: &Path, name: &str, text: &str) -> Result<(), String> {
    let path = dir.join(name);
    std::fs::write(&path, text).map_err(|e| e.to_string())?;
    let out = Command::new(bin())
        .args(["check", "--quiet", "--config"])
        .arg(&path)
        .current_dir(dir)
        .env_remove("TAILSHIP_CONFIG")
        .output()
        .map_err(|e| e.to_string())?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    let problems: Vec<&str> =
        stderr.lines().filter(|l| l.starts_with("  ") && !l.contains("No such file or directory")).collect();
    match out.status.code() {
        Some(0) => Ok(()),
        Some(2) if problems.is_empty() && stderr.contains("No such file") => Ok(()),
        _ => Err(format!("{stderr}\n---\n{text}")),
    }
}

#[test]
fn every_toml_config_block_of_the_book_passes_check() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let top: BTreeSet<String> = schema::walk::<tailship::config::Config>("")
        .expect("the keys")
        .keys
        .into_keys()
        .filter(|k| !k.contains(['.', '[']))
        .collect();
    let mut failures = Vec::new();
    let mut checked = 0;
    for c in chapters(&src()) {
        for b in blocks(&read(&c)).into_iter().filter(|b| b.lang == "toml") {
            let at = format!("{}:{}", c.strip_prefix(src()).expect("under book/src").display(), b.line);
            let table: toml::Table = match b.text.parse() {
                Ok(t) => t,
                Err(e) => {
                    failures.push(format!("{at}: not TOML: {e}"));
                    continue;
                }
            };
            // A `stages = [...]` block is checked as the stages of a file source.
            let text = if table.keys().all(|k| k == "stages") {
                format!("[[sources]]\ninclude = [\"/var/log/app/*.log\"]\n{}", b.text)
            } else if let Some(k) = table.keys().find(|k| !top.contains(*k)) {
                failures.push(format!("{at}: `{k}` is no top-level key: a TOML block of the book is a config"));
                continue;
            } else if !table.contains_key("sources") {
                format!("{}\n[[sources]]\ntype = \"stdin\"\n", b.text)
            } else {
                b.text.clone()
            };
            checked += 1;
            if let Err(e) = check_example(dir.path(), &format!("block-{checked}.toml"), &text) {
                failures.push(format!("{at}: `tailship check` refuses it:\n{e}"));
            }
        }
    }
    assert!(checked > 40, "only {checked} blocks");
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn the_cli_reference_is_what_clap_prints() {
    let dir = src().join(cli::DIR);
    let pages = cli::pages();
    if std::env::var_os("UPDATE_BOOK").is_some() {
        std::fs::create_dir_all(&dir).expect("book/src/cli");
        for (name, text) in &pages {
            std::fs::write(dir.join(name), text).expect("a page written");
        }
    }
    let on_disk: BTreeSet<String> =
        chapters(&dir).iter().filter_map(|p| p.file_name().map(|f| f.to_string_lossy().into_owned())).collect();
    let expected: BTreeSet<String> = pages.keys().cloned().collect();
    assert_eq!(on_disk, expected, "book/src/cli/ is stale: UPDATE_BOOK=1 cargo test --test it book::cli_reference");
    for (name, text) in &pages {
        assert!(
            read(&dir.join(name)) == *text,
            "book/src/cli/{name} is stale: UPDATE_BOOK=1 cargo test --test it book::cli_reference"
        );
    }
}

/// The file of test module `MODULE::SUB::TEST` (`tests/MODULE/SUB.rs`, or
/// its `mod.rs`, or the file of a module above it, for a module written
/// inline) holds `fn TEST`, or a file under `src/PATH` does.
fn test_exists(name: &str) -> bool {
    let parts: Vec<&str> = name.split("::").collect();
    let last = parts[parts.len() - 1];
    let tests = root().join("tests");
    let module_files = |n: usize| {
        let dir = tests.join(parts[..n].join("/"));
        [dir.with_extension("rs"), dir.join("mod.rs")]
    };
    if last == "*" {
        return module_files(parts.len() - 1).iter().any(|f| f.exists());
    }
    let has = |p: &Path| std::fs::read_to_string(p).is_ok_and(|t| t.contains(&format!("fn {last}(")));
    if (1..parts.len()).rev().flat_map(module_files).any(|f| has(&f)) {
        return true;
    }
    let path: Vec<&str> = parts[..parts.len() - 1].iter().copied().take_while(|p| *p != "tests").collect();
    let module = root().join("src").join(path.join("/"));
    let mut files = vec![module.with_extension("rs")];
    if module.is_dir() {
        files.extend(walkdir::WalkDir::new(&module).into_iter().flatten().map(|e| e.into_path()));
    }
    files.iter().any(|f| has(f))
}

#[test]
fn every_test_the_testing_chapter_names_exists() {
    let re = regex::Regex::new(r"`([a-z_0-9]+(?:::[a-z_0-9]+)*::(?:[a-z_0-9]+|\*))`").expect("a regex");
    let mut named = 0;
    let mut missing = Vec::new();
    for c in chapters(&src().join("testing")) {
        for cap in re.captures_iter(&read(&c)) {
            named += 1;
            if !test_exists(&cap[1]) {
                missing.push(format!("{}: {}", c.display(), &cap[1]));
            }
        }
    }
    assert!(named > 150, "only {named} tests named");
    assert!(missing.is_empty(), "no such test:\n{}", missing.join("\n"));
}

#[test]
fn operator_chapters_name_no_tests() {
    let re = regex::Regex::new(r"`[a-z_0-9]+::[a-z_0-9]+_[a-z_0-9]+_[a-z_0-9]+`|`tests/[a-z_]+\.rs`").expect("a regex");
    for c in chapters(&src()).iter().filter(|c| !c.starts_with(src().join("testing"))) {
        let text = read(c);
        let found: Vec<&str> = re.find_iter(&text).map(|m| m.as_str()).collect();
        assert!(found.is_empty(), "{}: test names belong in testing/: {found:?}", c.display());
    }
}

#[test]
fn every_metric_the_agent_serves_is_in_the_metrics_reference() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let store = Receiver::start(&[]);
    let logs = dir.path().join("logs");
    std::fs::create_dir(&logs).expect("logs/");
    std::fs::write(logs.join("app.log"), "one line\n").expect("a log");
    let config = agent_config(dir.path(), &store.base, &format!("{}/*.log", logs.display()), "", "");
    let mut text = read(&config);
    text.push_str(&format!(
        "[[sources]]\ntype = \"loki_push\"\nname = \"relay\"\nlisten = \"127.0.0.1:{}\"\n[spool]\npath = \"{}/spool\"\n\
         [[alerts]]\nname = \"errors\"\nmatch = \"ERROR\"\nwebhook_url = \"{}/webhook\"\n",
        free_port(),
        dir.path().display(),
        store.base
    ));
    std::fs::write(&config, text).expect("the config");
    let agent = Agent::start(&config);
    assert!(
        wait_for(Duration::from_secs(20), || agent.metric("tailship_push_lines_total") >= 1.0),
        "the line was never delivered: {}",
        agent.stderr_text()
    );
    let served: BTreeSet<String> = agent
        .metrics()
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|n| n.starts_with("tailship_"))
        .map(str::to_string)
        .collect();
    assert!(served.len() > 25, "{served:?}");
    let page = read(&src().join("operations/metrics.md"));
    let missing: Vec<&String> =
        served.iter().filter(|n| !page.contains(&format!("`{n}`")) && !page.contains(&format!("`{n}{{"))).collect();
    assert!(missing.is_empty(), "book/src/operations/metrics.md does not name {missing:?}");
}

#[test]
fn the_readme_is_a_short_front_page_whose_test_command_is_the_one_ci_runs() {
    let readme = read(&root().join("README.md"));
    let lines = readme.lines().count();
    assert!(lines <= 200, "the README is the front page, {lines} lines: the rest belongs in the book");
    let ci = read(&root().join(".ci/run"));
    let command = ci
        .split("# The README's test command:\n")
        .nth(1)
        .and_then(|rest| rest.lines().next())
        .expect(".ci/run marks the README's test command");
    assert!(
        readme.contains(&format!("    {command}\n")),
        "the README's test command is not `{command}`, as .ci/run runs"
    );
}

#[test]
#[ignore = "a tool: prints every key with its struct, default, values and sharing, to start new rows from"]
fn reference_draft() {
    let all = schema::walk::<tailship::config::Config>("").expect("the schema's keys");
    let defaults = defaults::defaults::<tailship::config::Config>(&all).expect("the schema's defaults");
    for (key, values) in &all.keys {
        let owner = all.owner.get(key).copied().unwrap_or_default();
        let default = defaults.get(key).cloned().unwrap_or_default();
        let shared = all.shared.get(key).cloned().unwrap_or_default();
        println!("KEY\t{key}\t{owner}\t{default}\t{}\t{shared}", values.join(","));
    }
    for (_, s) in hidden() {
        for (key, values) in &s.keys {
            let owner = s.owner.get(key).copied().unwrap_or_default();
            println!("KEY\t{key}\t{owner}\t\t{}\t", values.join(","));
        }
    }
}
