//! The layering rule of `src/lib.rs` (and DESIGN.md section 2), checked on
//! the source: a module imports only modules of its own layer or below, the
//! product never imports the embedded store, and no file passes the size
//! limits. A `crate::X` path in code (not in comments) counts as an import.

use std::path::{Path, PathBuf};

/// Bottom up; the modules of one row may import each other's.
const LAYERS: &[&[&str]] = &[
    &["util", "metrics", "status", "shutdown", "systemd", "logging", "pool"],
    &["logql", "lokipush"],
    &["config"],
    &["positions"],
    &["client"],
    &["queue"],
    &["batch"],
    &["spool"],
    &["pipeline", "relabel"],
    &["discovery"],
    &["source"],
    &["cloud", "admin"],
    &["alert"],
    &["plan"],
    &["convert"],
    &["agent", "inspect"],
    &["receive"],
    &["cli"],
    &["commands"],
    &["main", "lib"],
];

fn rank(module: &str) -> Option<usize> {
    LAYERS.iter().position(|row| row.contains(&module))
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

fn sources() -> Vec<(String, PathBuf, String)> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    files
        .into_iter()
        .map(|p| {
            let rel = p.strip_prefix(&src).unwrap();
            let top =
                rel.components().next().unwrap().as_os_str().to_string_lossy().trim_end_matches(".rs").to_string();
            let text = std::fs::read_to_string(&p).unwrap();
            (top, p, text)
        })
        .collect()
}

/// `crate::NAME` paths outside comments.
fn imports(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let code = line.split("//").next().unwrap_or("");
        let mut rest = code;
        while let Some(i) = rest.find("crate::") {
            let after = &rest[i + 7..];
            let name: String = after.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
            out.push((n + 1, name));
            rest = after;
        }
    }
    out
}

#[test]
fn every_module_imports_only_its_own_layer_or_below() {
    let mut wrong = Vec::new();
    for (top, path, text) in sources() {
        let Some(own) = rank(&top) else {
            wrong.push(format!("{}: module `{top}` has no layer in tests/layers.rs", path.display()));
            continue;
        };
        for (line, name) in imports(&text) {
            if let Some(r) = rank(&name) {
                if r > own {
                    wrong.push(format!("{}:{line}: `{top}` imports `{name}`, a layer above it", path.display()));
                }
            }
        }
    }
    assert!(wrong.is_empty(), "layering rule broken:\n{}", wrong.join("\n"));
}

#[test]
fn the_product_never_imports_the_embedded_store() {
    for (top, path, text) in sources() {
        if matches!(top.as_str(), "receive" | "commands" | "cli" | "main" | "lib") {
            continue;
        }
        for (line, name) in imports(&text) {
            assert_ne!(name, "receive", "{}:{line} imports the embedded store", path.display());
        }
    }
}

/// Imports the layer order allows that a rule forbids: (module, what it
/// may not import, why).
const FORBIDDEN: &[(&str, &str, &str)] = &[(
    "client",
    "status",
    "the client layer sees the agent's status only as a `push::PushObserver` the agent hands it",
)];

/// The imports of `text` (a file of module `top`) that [`FORBIDDEN`] names.
fn forbidden_imports(top: &str, text: &str) -> Vec<(usize, &'static str, &'static str)> {
    let mut out = Vec::new();
    for (line, name) in imports(text) {
        for (module, banned, why) in FORBIDDEN {
            if top == *module && name == *banned {
                out.push((line, *banned, *why));
            }
        }
    }
    out
}

#[test]
fn no_module_imports_what_a_rule_forbids() {
    let mut wrong = Vec::new();
    for (top, path, text) in sources() {
        for (line, name, why) in forbidden_imports(&top, &text) {
            wrong.push(format!("{}:{line}: `{top}` imports `{name}`: {why}", path.display()));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn the_forbidden_check_sees_the_client_reaching_into_the_status() {
    let text = "// crate::status in a comment\ncrate::status::Status::get().push_request(n, t, e);\n";
    assert_eq!(forbidden_imports("client", text).len(), 1);
    assert!(forbidden_imports("batch", text).is_empty(), "the layers below the agent may write into it");
}

/// What `commands` may take from `agent`: its entry points (the daemon,
/// a plan run once), none of its parts.
const AGENT_ENTRY_POINTS: &[&str] = &["run", "once", "Once", "Finished"];

/// The names `text` takes from module `module` (`crate::agent`: each
/// `crate::agent::X`, and each name of `crate::agent::{X, Y}`), outside
/// comments. `module` counts where it roots a path: a bare `discovery` (after
/// `use crate::discovery;`), not the tail of another (`crate::discovery`,
/// `client::discovery`).
fn names_taken(text: &str, module: &str) -> Vec<(usize, String)> {
    let ident = |s: &str| -> String { s.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect() };
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let code = line.split("//").next().unwrap_or("");
        for (i, _) in code.match_indices(module) {
            let before = &code[..i];
            if before.ends_with("::") || before.ends_with(|c: char| c.is_ascii_alphanumeric() || c == '_') {
                continue;
            }
            let after = &code[i + module.len()..];
            if after.starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_') {
                continue;
            }
            let Some(path) = after.strip_prefix("::") else {
                out.push((n + 1, module.rsplit("::").next().unwrap_or(module).to_string()));
                continue;
            };
            if let Some(list) = path.strip_prefix('{') {
                let list = list.split('}').next().unwrap_or("");
                out.extend(list.split(',').map(|x| (n + 1, ident(x.trim()))).filter(|(_, x)| !x.is_empty()));
            } else {
                out.push((n + 1, ident(path)));
            }
        }
    }
    out
}

#[test]
fn commands_take_only_the_agents_entry_points() {
    let mut wrong = Vec::new();
    for (top, path, text) in sources() {
        if top != "commands" {
            continue;
        }
        for (line, name) in names_taken(&text, "crate::agent") {
            if !AGENT_ENTRY_POINTS.contains(&name.as_str()) {
                wrong.push(format!("{}:{line}: `commands` takes `agent::{name}`, not an entry point", path.display()));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn the_agent_check_sees_paths_and_lists() {
    let text = "use crate::agent::{Finished, Once};\nlet x = crate::agent::once(&p, r);\n// crate::agent::lanes\nuse crate::agent::{join_sources, SourceEnv};\n";
    let names: Vec<String> = names_taken(text, "crate::agent").into_iter().map(|(_, n)| n).collect();
    assert_eq!(names, ["Finished", "Once", "once", "join_sources", "SourceEnv"]);
}

/// The rooms that start discoveries: the agent (each source's, once), the
/// plan, and discovery itself. A source is handed what its discovery found.
const DISCOVERY_STARTERS: &[&str] = &["agent", "plan", "discovery"];

#[test]
fn only_the_agent_starts_discoveries() {
    let mut wrong = Vec::new();
    for (top, path, text) in sources() {
        if DISCOVERY_STARTERS.contains(&top.as_str()) {
            continue;
        }
        for (line, name) in names_taken(&text, "crate::discovery").into_iter().chain(names_taken(&text, "discovery")) {
            if name == "start" {
                wrong.push(format!(
                    "{}:{line}: `{top}` calls `discovery::start`; the agent starts discoveries",
                    path.display()
                ));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn the_discovery_check_sees_calls_and_lists() {
    let text = "let f = crate::discovery::start(&c, &at);\nuse crate::discovery::{start, Found};\n// discovery::start in a comment\nlet o = crate::client::discovery::start(x);\nlet g = discovery::start(&c, &at);\n";
    let lines = |names: Vec<(usize, String)>| -> Vec<usize> {
        names.into_iter().filter(|(_, n)| n == "start").map(|(l, _)| l).collect()
    };
    assert_eq!(lines(names_taken(text, "crate::discovery")), [1, 2]);
    assert_eq!(lines(names_taken(text, "discovery")), [5]);
}

#[test]
fn no_file_passes_the_size_limits() {
    for (top, path, text) in sources() {
        let lines = text.lines().count();
        let limit = if top == "commands" { 250 } else { 600 };
        assert!(lines <= limit, "{} has {lines} lines (limit {limit})", path.display());
    }
}

#[test]
fn the_checker_sees_imports_and_skips_comments() {
    let text = "use crate::batch::Shipper;\n// crate::receive in a comment\nlet x = crate::util::now_ns();\n";
    assert_eq!(imports(text), vec![(1, "batch".to_string()), (3, "util".to_string())]);
}

/// Where an answer may be read chunk by chunk, and what bounds what is kept of it.
const STREAM_READERS: &[(&str, &str)] = &[
    ("discovery/docker/mod.rs", "Docker events: client::docker::take_events keeps at most MAX_EVENT"),
    ("discovery/kubernetes/watch.rs", "watch events: at most MAX_EVENT"),
    ("source/docker/remote.rs", "container logs: stream::Demux keeps at most MAX_FRAME"),
];

/// What `rel` (a path under `src/`) does with HTTP outside `client::http`
/// and `client::read`: a client built elsewhere, a whole body read elsewhere
/// (no cap), a stream read chunk by chunk that is not listed.
fn http_outside_client(rel: &str, text: &str) -> Vec<String> {
    // `Client::new(` and `::builder(` of a type named just `Client` (reqwest's, imported), not `SdClient::new(`.
    let builds = |code: &str| {
        ["Client::builder(", "Client::new("].iter().any(|b| {
            code.match_indices(b).any(|(i, _)| !code[..i].ends_with(|c: char| c.is_ascii_alphanumeric() || c == '_'))
        }) || ["reqwest::ClientBuilder", "reqwest::blocking", "reqwest::get("].iter().any(|b| code.contains(b))
    };
    const READS: &[&str] =
        &[".text().await", ".bytes().await", ".json().await", ".json::<", "request_async(&self.http"];
    let mut wrong = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let code = line.split("//").next().unwrap_or("");
        if rel != "client/http.rs" && builds(code) {
            wrong.push(format!("src/{rel}:{}: an HTTP client built outside client::http", n + 1));
        }
        if rel != "client/read.rs" && READS.iter().any(|r| code.contains(r)) {
            wrong.push(format!("src/{rel}:{}: an answer read outside client::read (no cap)", n + 1));
        }
        if rel != "client/read.rs" && code.contains(".chunk()") && !STREAM_READERS.iter().any(|(f, _)| rel == *f) {
            wrong.push(format!("src/{rel}:{}: a stream read chunk by chunk, not listed in STREAM_READERS", n + 1));
        }
    }
    wrong
}

/// Every outbound HTTP client is built by `client::http` (one redirect
/// policy, no `Referer`) and every answer is read through `client::read`, to
/// a cap fixed per use.
#[test]
fn every_http_client_is_built_and_every_answer_read_in_client() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut wrong = Vec::new();
    for (_, path, text) in sources() {
        let rel = path.strip_prefix(&src).unwrap().to_string_lossy().replace('\\', "/");
        wrong.extend(http_outside_client(&rel, &text));
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn the_http_check_sees_clients_and_reads_outside_client() {
    let text = "let c = reqwest::Client::builder().build()?; let s = SdClient::new(k)?;\n// resp.bytes().await in a comment\nlet b = resp.bytes().await?;\nwhile let Some(c) = r.chunk().await {}\n";
    assert_eq!(http_outside_client("client/http.rs", text).len(), 2, "building is allowed in client::http");
    let found = http_outside_client("alert/sender.rs", text);
    assert_eq!(found.len(), 3, "{found:?}");
    assert!(found[1].starts_with("src/alert/sender.rs:3:"), "{found:?}");
    assert!(http_outside_client("discovery/kubernetes/watch.rs", "r.chunk().await").is_empty());
}

/// tests/ is one binary: a file tests/main.rs does not name as a module
/// would never build or run.
#[test]
fn every_test_file_is_a_module_of_the_one_test_binary() {
    let tests = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    let main = std::fs::read_to_string(tests.join("main.rs")).unwrap();
    let mut missing = Vec::new();
    for entry in std::fs::read_dir(&tests).unwrap().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(module) = name.strip_suffix(".rs").filter(|m| *m != "main") else { continue };
        if !main.lines().any(|l| l.trim() == format!("mod {module};")) {
            missing.push(name);
        }
    }
    assert!(missing.is_empty(), "not in tests/main.rs (add `mod NAME;`): {missing:?}");
}
