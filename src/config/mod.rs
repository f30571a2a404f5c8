//! Loading and validating the config file.
//!
//! The flow is: read the file (TOML, or YAML by extension) with the `config`
//! crate; apply `TAILSHIP_SECTION__KEY` environment overrides, typed after the
//! key they replace; expand `${VAR}` (and `${VAR:-default}`) in string values;
//! deserialize into [`Config`] while collecting every unknown key; then check
//! label names, limits and secret files, reporting every problem at once with
//! the file and the key it concerns.
//!
//! This module compiles nothing: regexes, globs, stages, multiline rules,
//! timestamp formats and alert rules are compiled once, by `crate::plan`,
//! which `check`, `run` and reload all go through.

mod client;
mod cloudflare;
mod clouds;
mod consul;
mod discoveries;
mod discovery;
mod expand;
mod files;
mod gcplog;
mod http;
mod http_table;
mod kafka;
mod kubernetes;
mod net;
mod oauth2;
mod print;
mod proxy;
mod schema;
mod sd;
mod source;
mod stage;
mod tls;
mod traces;

use std::fmt;
use std::path::{Path, PathBuf};

use serde_json::Value;

pub use client::validate_client;
pub use cloudflare::{CloudflareConfig, FieldsType};
pub use clouds::*;
pub use consul::ConsulConfig;
pub(crate) use discoveries::discoveries;
pub use discoveries::{Sd, SdTable};
pub use discovery::{DockerConfig, DockerHost, RelabelConfig, SwarmConfig, SwarmRole, DEFAULT_DOCKER_HOST};
use expand::expand_vars;
pub use expand::{expand_str, reference_len};
pub use files::{CompressionFormat, DecompressionConfig, FileSdConfig};
pub use gcplog::{GcplogConfig, SubscriptionType};
pub use http::HttpKeys;
pub use kafka::*;
pub use kubernetes::{KubeAttach, KubeNamespaces, KubeRole, KubeSelector, KubernetesConfig, SERVICE_ACCOUNT_DIR};
pub use net::{NetProtocol, ReceiverBasicAuth, ReceiverConfig, ServerTls, SpoolConfig};
pub use oauth2::OAuth2Config;
pub use print::to_redacted_toml;
pub use schema::*;
pub use sd::*;
pub use source::*;
pub use stage::*;
pub use tls::{client_identity, Pem, TlsConfig};
pub use traces::TracingConfig;

use crate::util::{is_valid_label_name, read_secret_file};

/// Prefix of environment overrides: `TAILSHIP_CLIENT__URL` sets `client.url`.
pub const ENV_PREFIX: &str = "TAILSHIP_";

/// One problem in a config file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    pub file: PathBuf,
    /// Dotted key, such as `client.batch.max_bytes` or `sources[0].include`.
    pub key: String,
    pub message: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.key.is_empty() {
            write!(f, "{}: {}", self.file.display(), self.message)
        } else {
            write!(f, "{}: key `{}`: {}", self.file.display(), self.key, self.message)
        }
    }
}

/// Every problem found in a config file.
#[derive(Debug, Clone, thiserror::Error)]
pub struct ConfigErrors(pub Vec<ConfigError>);

impl fmt::Display for ConfigErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.0.len();
        writeln!(f, "invalid config ({n} problem{}):", if n == 1 { "" } else { "s" })?;
        for (i, e) in self.0.iter().enumerate() {
            if i + 1 < n {
                writeln!(f, "  {e}")?;
            } else {
                write!(f, "  {e}")?;
            }
        }
        Ok(())
    }
}

/// Loads, overrides, expands and validates the config at `path`, reading secret files.
pub fn load(path: &Path) -> Result<Config, ConfigErrors> {
    load_with_env(path, &std::env::vars().collect::<Vec<_>>())
}

/// [`load`] with an explicit environment (tests pass their own).
pub fn load_with_env(path: &Path, env: &[(String, String)]) -> Result<Config, ConfigErrors> {
    load_str(path, &read_file(path)?, env)
}

/// The text of the config file at `path`; an unreadable file is a config error naming it.
pub fn read_file(path: &Path) -> Result<String, ConfigErrors> {
    std::fs::File::open(path).and_then(crate::util::yaml::read_bounded).map_err(|e| {
        ConfigErrors(vec![ConfigError {
            file: path.to_path_buf(),
            key: String::new(),
            message: format!("cannot read config file: {e}"),
        }])
    })
}

/// [`load_with_env`] over the text of a config file already read; `path` names
/// it in errors and chooses TOML or YAML by its extension. Secret files the
/// config names are still read. (The fuzz target `config_loader` enters here.)
pub fn load_str(path: &Path, text: &str, env: &[(String, String)]) -> Result<Config, ConfigErrors> {
    match load_parts(path, text, env) {
        (Some(config), errors) if errors.is_empty() => Ok(config),
        (_, errors) => Err(ConfigErrors(errors)),
    }
}

/// Reads the text of a config file as far as it goes: the config (when it
/// could be read at all, with defaults in place of values of a wrong type)
/// and every problem found. `plan` compiles what was read even when there
/// are problems, so one run reports them all.
pub fn load_parts(path: &Path, text: &str, env: &[(String, String)]) -> (Option<Config>, Vec<ConfigError>) {
    let err = |key: &str, message: String| ConfigError { file: path.to_path_buf(), key: key.to_string(), message };
    let tree = match parse_tree(path, text) {
        Ok(t) => t,
        Err(m) => return (None, vec![err("", m)]),
    };
    // A Promtail config: what to do with it, rather than each of its keys
    // listed as unknown (`scrape_configs`, `server.http_listen_port`, ...).
    if tree.get("scrape_configs").is_some() {
        let shown = crate::util::pathtext::text(path);
        let hint = format!(
            "this looks like a Promtail config (tailship has no scrape_configs): run `tailship convert promtail \
             {shown} > tailship.toml`, then use that"
        );
        return (None, vec![err("scrape_configs", hint)]);
    }
    let mut errors = Vec::new();

    let mut tree = tree;
    let overridden = apply_env_overrides(&mut tree, env, &mut |k, m| errors.push(err(k, m)));
    // A key whose `${...}` failed is reported once, not again when its
    // unexpanded text then fails validation.
    let mut unexpanded = Vec::new();
    expand_vars(&mut tree, "", env, &mut |k, m| {
        unexpanded.push(k.to_string());
        errors.push(err(k, m));
    });
    let reported = errors.len();

    // serde stops at the first value of a wrong type. To report every mistake
    // at once, each such value is noted, removed (its default applies), and the
    // tree is read again; validation then runs on what is left.
    let mut type_errors = Vec::new();
    let (parsed, unknown) = loop {
        let mut unknown = Vec::new();
        let mut on_unknown = |p: serde_ignored::Path<'_>| unknown.push(fmt_ignored_path(&p));
        let de = serde_ignored::Deserializer::new(tree.clone(), &mut on_unknown);
        match serde_path_to_error::deserialize::<_, Config>(de) {
            Ok(c) => break (Some(c), unknown),
            Err(e) => {
                type_errors.push(err(&fmt_path(e.path()), e.inner().to_string()));
                if type_errors.len() >= MAX_TYPE_ERRORS || !remove_path(&mut tree, e.path()) {
                    break (None, unknown);
                }
            }
        }
    };
    for key in unknown {
        errors.push(err(&key, "unknown key".into()));
    }
    if tree.get("client").is_some() && tree.get("clients").and_then(Value::as_array).is_some_and(|a| !a.is_empty()) {
        errors.push(err("clients", "set [client] (one service) or [[clients]] (several), not both".into()));
    }
    errors.extend(type_errors);
    let mut config = parsed;
    if let Some(c) = &mut config {
        mark_default_urls(&tree, c);
        for (key, message) in validate(c) {
            errors.push(err(&key, message));
        }
    }
    let mut i = 0;
    errors.retain(|e| {
        i += 1;
        i <= reported || !unexpanded.contains(&e.key)
    });
    // A value set by a `TAILSHIP_*` variable is blamed on it, not on the file.
    for e in &mut errors {
        if let Some((_, var)) = overridden.iter().find(|(k, _)| e.key == *k || e.key.starts_with(&format!("{k}."))) {
            e.file = PathBuf::from(format!("environment variable {var}"));
        }
    }
    (config, errors)
}

/// Marks each client whose `url` the file (and the environment) left out.
fn mark_default_urls(tree: &Value, c: &mut Config) {
    let unset = |client: Option<&Value>| client.and_then(|v| v.get("url")).is_none();
    c.client.url_defaulted = unset(tree.get("client"));
    let listed = tree.get("clients").and_then(Value::as_array);
    for (i, client) in c.clients.iter_mut().enumerate() {
        client.url_defaulted = unset(listed.and_then(|l| l.get(i)));
    }
}

/// Parses a config file's text into a JSON tree, choosing TOML or YAML by extension.
fn parse_tree(path: &Path, text: &str) -> Result<Value, String> {
    let format = match path.extension().and_then(|e| e.to_str()) {
        Some("yaml" | "yml") => config::FileFormat::Yaml,
        _ => config::FileFormat::Toml,
    };
    // Bounded before the parser sees it: size, and a YAML file's aliases once expanded.
    let bounded = match format {
        config::FileFormat::Yaml => crate::util::yaml::check(text),
        _ if text.len() > crate::util::yaml::MAX_BYTES => Err(crate::util::yaml::YamlError::TooLarge(text.len())),
        _ => Ok(()),
    };
    bounded.map_err(|e| format!("cannot parse config file: {e}"))?;
    let built = config::Config::builder()
        .add_source(config::File::from_str(text, format))
        .build()
        .map_err(|e| format!("cannot parse config file: {e}"))?;
    let value: Value = built.try_deserialize().map_err(|e| format!("cannot parse config file: {e}"))?;
    let sources = value.get("sources").and_then(Value::as_array).map_or(0, Vec::len);
    if sources > MAX_SOURCES {
        return Err(format!(
            "sources: {sources} sources; at most {MAX_SOURCES} are read (one source's globs can name many files)"
        ));
    }
    Ok(match value {
        Value::Null => Value::Object(Default::default()),
        v => v,
    })
}

/// Applies `TAILSHIP_A__B=v` as `a.b = v`. The value takes the type of the key it
/// replaces (bool, number or string), judged from the defaults, so
/// `TAILSHIP_CLIENT__TENANT_ID=42` stays a string.
/// Returns the keys set, with the variable that set each.
fn apply_env_overrides(
    tree: &mut Value,
    env: &[(String, String)],
    report: &mut dyn FnMut(&str, String),
) -> Vec<(String, String)> {
    let mut set = Vec::new();
    let defaults = serde_json::to_value(Config::default()).unwrap_or(Value::Null);
    let mut vars: Vec<&(String, String)> =
        env.iter().filter(|(k, _)| k.starts_with(ENV_PREFIX) && k.contains("__")).collect();
    vars.sort();
    for (name, raw) in vars {
        let segments: Vec<String> = name[ENV_PREFIX.len()..].split("__").map(|s| s.to_ascii_lowercase()).collect();
        let key = segments.join(".");
        if segments.iter().any(|s| s.is_empty()) {
            report(&key, format!("environment variable {name} does not name a key"));
            continue;
        }
        let mut default = Some(&defaults);
        for s in &segments {
            default = default.and_then(|d| d.get(s));
        }
        let value = match default {
            Some(Value::Bool(_)) => match raw.to_ascii_lowercase().as_str() {
                "true" | "1" | "yes" => Value::Bool(true),
                "false" | "0" | "no" => Value::Bool(false),
                _ => {
                    report(&key, format!("environment variable {name}: `{raw}` is not true or false"));
                    continue;
                }
            },
            Some(Value::Number(_)) => match raw.parse::<u64>() {
                Ok(n) => Value::from(n),
                Err(_) => Value::String(raw.clone()),
            },
            _ => Value::String(raw.clone()),
        };
        set_path(tree, &segments, value);
        set.push((key, name.clone()));
    }
    set
}

/// Sets `value` at `path` in `node`, creating tables on the way.
fn set_path(node: &mut Value, path: &[String], value: Value) {
    if !node.is_object() {
        *node = Value::Object(Default::default());
    }
    let Some(map) = node.as_object_mut() else { return };
    match path {
        [] => {}
        [last] => {
            map.insert(last.clone(), value);
        }
        [first, rest @ ..] => {
            let child = map.entry(first.clone()).or_insert_with(|| Value::Object(Default::default()));
            set_path(child, rest, value);
        }
    }
}

/// Values of a wrong type reported in one load, at most.
const MAX_TYPE_ERRORS: usize = 64;

/// The most `[[sources]]` a config may have: loading and checking grow with
/// them, and one source's globs and discovery name any number of files.
pub const MAX_SOURCES: usize = 2_000;

/// Removes the value of the key at `path` (for an item of a list, the whole
/// list, so the indices of later items still name what the file says).
/// Returns false when there is no key to remove.
fn remove_path(tree: &mut Value, path: &serde_path_to_error::Path) -> bool {
    use serde_path_to_error::Segment;
    let segments: Vec<&Segment> = path.iter().collect();
    let Some(last_key) = segments.iter().rposition(|s| matches!(s, Segment::Map { .. })) else { return false };
    let mut node = tree;
    for seg in &segments[..last_key] {
        node = match (seg, node) {
            (Segment::Map { key }, Value::Object(m)) => match m.get_mut(key) {
                Some(v) => v,
                None => return false,
            },
            (Segment::Seq { index }, Value::Array(a)) => match a.get_mut(*index) {
                Some(v) => v,
                None => return false,
            },
            _ => return false,
        };
    }
    match (segments[last_key], node) {
        (Segment::Map { key }, Value::Object(m)) => m.remove(key).is_some(),
        _ => false,
    }
}

fn fmt_path(p: &serde_path_to_error::Path) -> String {
    let mut out = String::new();
    for seg in p.iter() {
        match seg {
            serde_path_to_error::Segment::Seq { index } => out.push_str(&format!("[{index}]")),
            serde_path_to_error::Segment::Map { key } | serde_path_to_error::Segment::Enum { variant: key } => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(key);
            }
            serde_path_to_error::Segment::Unknown => {}
        }
    }
    out
}

fn fmt_ignored_path(p: &serde_ignored::Path<'_>) -> String {
    use serde_ignored::Path as P;
    match p {
        P::Root => String::new(),
        P::Seq { parent, index } => format!("{}[{index}]", fmt_ignored_path(parent)),
        P::Map { parent, key } => {
            let parent = fmt_ignored_path(parent);
            if parent.is_empty() {
                key.clone()
            } else {
                format!("{parent}.{key}")
            }
        }
        P::Some { parent } | P::NewtypeStruct { parent } | P::NewtypeVariant { parent } => fmt_ignored_path(parent),
    }
}

/// Checks every rule serde cannot, and reads secret files into their values.
/// Returns `(key, message)` for each problem.
pub fn validate(c: &mut Config) -> Vec<(String, String)> {
    let mut errs: Vec<(String, String)> = Vec::new();
    let mut e = |k: &str, m: String| errs.push((k.to_string(), m));

    if !c.server.listen.is_empty() && c.server.listen.parse::<std::net::SocketAddr>().is_err() {
        e("server.listen", format!("`{}` is not an address like 127.0.0.1:9080", c.server.listen));
    }
    if c.server.max_connections == 0 {
        e("server.max_connections", "must be at least 1".into());
    }
    if c.server.header_read_timeout.get().is_zero() {
        e("server.header_read_timeout", "must be more than 0".into());
    }
    if c.clients.is_empty() {
        validate_client(&mut c.client, &mut e);
        validate_external_labels("client", &c.client, &mut e);
    } else {
        validate_clients(c, &mut e);
    }
    for (i, client) in c.clients().iter().enumerate() {
        if c.queue.max_bytes.get() < client.batch.max_bytes.get() {
            let key = if c.clients.is_empty() { "client".to_string() } else { format!("clients[{i}]") };
            e(
                "queue.max_bytes",
                format!("must be at least {key}.batch.max_bytes ({} bytes)", client.batch.max_bytes.get()),
            );
        }
    }
    if c.positions.path.as_os_str().is_empty() {
        e("positions.path", "must not be empty".into());
    }
    if c.positions.sync_period.get().is_zero() {
        e("positions.sync_period", "must be more than 0".into());
    }
    traces::validate_tracing(&c.tracing, &mut e);
    for (i, s) in c.sources.iter_mut().enumerate() {
        cloudflare::validate_cloudflare(&format!("sources[{i}]"), s, &mut e);
    }
    for (i, s) in c.sources.iter().enumerate() {
        source::validate_source(&format!("sources[{i}]"), s, &mut e);
        net::validate_net_source(&format!("sources[{i}]"), s, &mut e);
        kafka::validate_kafka_source(&format!("sources[{i}]"), s, &mut e);
        gcplog::validate_gcplog(&format!("sources[{i}]"), s, &mut e);
        for (j, name) in s.clients.iter().enumerate() {
            if !c.clients().iter().any(|cl| cl.name == *name) {
                let known: Vec<&str> = c.clients().iter().map(|cl| cl.name.as_str()).collect();
                e(
                    &format!("sources[{i}].clients[{j}]"),
                    format!("no client is named `{name}` (clients: {})", known.join(", ")),
                );
            }
        }
    }
    if c.sources.iter().any(|s| s.kind.receives()) {
        net::validate_spool(&c.spool, &mut e);
    }
    let stdin_sources = c.sources.iter().filter(|s| s.kind == SourceType::Stdin).count();
    if stdin_sources > 1 {
        e("sources", format!("{stdin_sources} stdin sources; at most one can read standard input"));
    }
    validate_alerts(&mut c.alerts, &mut e);
    errs
}

/// `[[clients]]`: each checked as `[client]` is (keys named `clients[i]....`),
/// names unique; the first becomes `client` (queries and alert webhooks use it).
fn validate_clients(c: &mut Config, e: &mut dyn FnMut(&str, String)) {
    let mut names = std::collections::HashSet::new();
    for (i, client) in c.clients.iter_mut().enumerate() {
        let key = format!("clients[{i}]");
        let mut at = |k: &str, m: String| e(&k.replacen("client", &key, 1), m);
        validate_client(client, &mut at);
        validate_external_labels("client", client, &mut at);
        let valid = !client.name.is_empty()
            && client.name.chars().all(|ch| ch.is_ascii_alphanumeric() || ch == '_' || ch == '-' || ch == '.');
        if !valid {
            e(
                &format!("{key}.name"),
                format!("`{}` is not a client name (letters, digits, `_`, `-`, `.`)", client.name),
            );
        } else if !names.insert(client.name.clone()) {
            e(&format!("{key}.name"), format!("`{}` names two clients; names must be unique", client.name));
        }
    }
    if let Some(first) = c.clients.first() {
        c.client = first.clone();
    }
}

fn validate_external_labels(key: &str, c: &ClientConfig, e: &mut dyn FnMut(&str, String)) {
    for name in c.external_labels.keys() {
        if !is_valid_label_name(name) {
            e(
                &format!("{key}.external_labels.{name}"),
                format!("`{name}` is not a valid label name ([a-zA-Z_][a-zA-Z0-9_]*)"),
            );
        }
    }
}

/// Checks the alert rules' names and reads their secret files (the rules are
/// compiled by `plan`).
fn validate_alerts(alerts: &mut [AlertConfig], e: &mut dyn FnMut(&str, String)) {
    let mut names = std::collections::HashSet::new();
    for (i, a) in alerts.iter_mut().enumerate() {
        let key = format!("alerts[{i}]");
        if !a.name.is_empty() && !names.insert(a.name.clone()) {
            e(&format!("{key}.name"), format!("`{}` names two rules; names must be unique", a.name));
        }
        match (&a.webhook_url, &a.webhook_url_file) {
            (Some(_), Some(_)) => {
                e(&format!("{key}.webhook_url"), "set webhook_url or webhook_url_file, not both".into())
            }
            (None, Some(p)) => match read_secret_file(p) {
                Ok(s) if s.is_empty() => e(&format!("{key}.webhook_url_file"), format!("{} is empty", p.display())),
                Ok(s) => a.webhook_url = Some(s),
                Err(err) => e(&format!("{key}.webhook_url_file"), format!("cannot read {}: {err}", p.display())),
            },
            _ => {}
        }
        if let Some(an) = &mut a.annotations {
            match (&an.token, &an.token_file) {
                (Some(_), Some(_)) => {
                    e(&format!("{key}.annotations.token"), "set token or token_file, not both".into())
                }
                (None, Some(p)) => match read_secret_file(p) {
                    Ok(s) => an.token = Some(s),
                    Err(err) => {
                        e(&format!("{key}.annotations.token_file"), format!("cannot read {}: {err}", p.display()))
                    }
                },
                _ => {}
            }
        }
    }
}
