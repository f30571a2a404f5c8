//! `tailship convert promtail`: a Promtail config (YAML) as a tailship config
//! (TOML text), and the list of what could not be carried over.
//!
//! The YAML is read key by key ([`yaml::Map`]): every key the converter
//! does not take is reported by its Promtail path, so the untranslated list
//! is complete by construction. Stages are checked as `tailship check` will
//! check them before they are written, and what would not pass is reported
//! instead, so the output is a config tailship accepts.
//!
//! - `server`, `clients[0]`, `positions`: [`client`]
//! - each `scrape_configs` entry (a job) -> its sources: `job.rs`, by what
//!   the job reads, as follows
//! - `scrape_configs[].static_configs` -> `type = "file"` sources (one per
//!   static config), `journal` -> a `type = "journal"` source, `syslog` and
//!   `loki_push_api` -> `type = "syslog"` and `type = "loki_push"` sources ([`net`])
//! - `pipeline_stages`: [`stages`] (Go time layouts: [`crate::pipeline::golayout`]; the
//!   capture-group semantics of `replace`: [`replace`]; each stage's options:
//!   `mapped.rs`)
//! - `relabel_configs`: [`relabel`]
//! - `docker_sd_configs`, `kubernetes_sd_configs` (role pod) -> `type = "docker"`,
//!   `type = "kubernetes"` sources: [`sd`]
//! - `consul_sd_configs`, `consulagent_sd_configs`, `dockerswarm_sd_configs` and the other
//!   Prometheus discoveries ([`sd::file_target_keys`]; the rest a row each of
//!   [`discovery::KINDS`]) -> file sources with that discovery's table: [`sd`], [`discovery`];
//! - `file_sd_configs` -> a file source's `targets_from`, `decompression` ->
//!   its `decompression` table: [`files`]
//! - `kafka`, `azure_event_hubs` -> `type = "kafka"`, `type = "azure_event_hubs"` sources: [`kafka`]

mod client;
mod defaults;
mod discovery;
mod files;
mod filters;
mod job;
mod kafka;
mod mapped;
mod metrics;
mod names;
mod net;
mod pipeline;
pub mod positions;
mod process;
mod relabel;
mod render;
mod replace;
mod sd;
mod stages;
mod yaml;

use render::{Section, Val};
pub use yaml::Item;
use yaml::{list, Map, Report};
use yaml_rust2::Yaml;

/// A converted config.
#[derive(Debug)]
pub struct Conversion {
    /// The tailship config (TOML).
    pub toml: String,
    /// Promtail keys with no tailship equivalent, in the order of the file.
    pub untranslated: Vec<Item>,
    /// Keys translated with a difference worth knowing.
    pub notes: Vec<Item>,
    /// `[positions].path` of the converted config, when it sets one.
    pub positions_path: Option<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum ConvertError {
    #[error("not valid YAML: {0}")]
    Yaml(String),
    #[error("not a Promtail config: the document is not a mapping of keys (server, clients, scrape_configs, ...)")]
    NotAMapping,
    #[error("no scrape config could be converted, so there is nothing to run:\n{0}")]
    NothingToRun(String),
    #[error("mistakes Promtail refuses, by key:\n{0}")]
    Refused(String),
}

/// What the command was asked besides the config.
#[derive(Debug, Default)]
pub struct Options {
    /// `--positions` was given: Promtail's offsets are carried over.
    pub carry_positions: bool,
    /// `--positions-out`: where tailship's positions file is written, so
    /// the converted config's `[positions].path`.
    pub positions_out: Option<String>,
    /// Where Promtail would send its spans: `JAEGER_AGENT_HOST` (or
    /// `JAEGER_ENDPOINT`) of the environment. Without it Promtail's
    /// `tracing.enabled` (true by default) sends nothing, and tailship's
    /// tracing stays off.
    pub jaeger: Option<String>,
}

/// Converts the Promtail config `text`.
pub fn promtail(text: &str) -> Result<Conversion, ConvertError> {
    promtail_with(text, &Options::default())
}

/// Converts the Promtail config `text` as [`promtail`], knowing `options`.
pub fn promtail_with(text: &str, options: &Options) -> Result<Conversion, ConvertError> {
    if text.len() > crate::util::yaml::MAX_BYTES {
        return Err(ConvertError::Yaml(crate::util::yaml::YamlError::TooLarge(text.len()).to_string()));
    }
    let text = &render::colon_defaults(text);
    let docs = crate::util::yaml::load(text).map_err(|e| ConvertError::Yaml(e.to_string()))?;
    let doc = match docs.as_slice() {
        [d @ Yaml::Hash(_)] => d,
        _ => return Err(ConvertError::NotAMapping),
    };
    let mut r = Report::default();
    let mut doc = doc.clone();
    take_defaults(&mut doc, &mut r);
    let doc = &doc;
    note_env_references(text, &mut r);
    let mut root = Map::new("", doc, &mut r);
    let mut server = Section::default();
    let mut positions = Section::default();
    client::server(root.get("server"), &mut server, &mut r);
    server.set_noted(
        "promtail_metrics",
        Val::Bool(true),
        "Promtail's metrics too (promtail_*, beside tailship_*): its dashboards and alerts keep working",
    );
    let mut clients = client::clients(&mut root, &mut r);
    // One client: `[client]`, its external labels on every source (as
    // before); several: `[[clients]]`, each with its own.
    let external = if clients.len() == 1 { std::mem::take(&mut clients[0].external) } else { Vec::new() };
    for c in clients.iter_mut().filter(|c| !c.external.is_empty()) {
        c.section.set("external_labels", Val::pairs(&c.external));
    }
    client::positions(root.get("positions"), options, &mut positions, &mut r);
    let mut sources = Vec::new();
    let mut metadata = false;
    for (i, job) in list("scrape_configs", root.get("scrape_configs"), &mut r).iter().enumerate() {
        metadata |= job::scrape(&format!("scrape_configs[{i}]"), job, &external, &mut sources, &mut r);
    }
    if metadata {
        for c in &mut clients {
            c.section.set_noted("structured_metadata", Val::Bool(true), "the jobs send structured metadata (Loki 3)");
        }
    }
    if let Some(y) = root.get("limits_config") {
        process::limits(y, &mut sources, &mut r);
    }
    let mut tracing = Section::default();
    process::options(&mut root, options, &mut tracing, &mut r);
    root.ignore("target_config");
    root.finish(&mut r, "no tailship equivalent");
    if !r.refused.is_empty() {
        return Err(ConvertError::Refused(numbered(&r.refused)));
    }
    if sources.is_empty() {
        return Err(ConvertError::NothingToRun(numbered(&r.untranslated)));
    }
    let toml = render_config(&server, &clients, &positions, &tracing, &sources);
    let positions_path = match positions.get("path") {
        Some(Val::Str(p)) => Some(p.clone()),
        _ => None,
    };
    Ok(Conversion { toml, untranslated: r.untranslated, notes: r.notes, positions_path })
}

/// Notes that the `${VAR}` references of `text` are kept, and expanded
/// when tailship loads the config.
fn note_env_references(text: &str, r: &mut Report) {
    if (0..text.len()).any(|i| text.is_char_boundary(i) && render::env_reference(&text[i..]).is_some()) {
        r.note(
            "(file)",
            "${VAR}, ${VAR:-default} and ${VAR:default} are kept as references (the last written ${VAR:-default}): \
             tailship expands them from its environment each time it loads the config, as Promtail does at start \
             with -config.expand-env=true (so a DaemonSet's ${HOSTNAME} is each node's own, not the converting \
             machine's); a variable unset and without a default is an error naming the key, not an empty value",
        );
    }
}

/// The converted config's TOML text: a header, the tables that are not
/// empty (server, the client or clients, positions, tracing), then the
/// sources.
fn render_config(
    server: &Section,
    clients: &[client::Client],
    positions: &Section,
    tracing: &Section,
    sources: &[Section],
) -> String {
    let mut out = String::from(
        "# Converted from a Promtail config by `tailship convert promtail`.\n\
         # Check it with `tailship check --config FILE`; keys not set here keep their defaults\n\
         # (config/tailship.toml lists them all).\n\n",
    );
    let one = clients.len() == 1;
    let mut tables: Vec<(&str, &Section)> = vec![("[server]", server)];
    tables.extend(clients.iter().map(|c| (if one { "[client]" } else { "[[clients]]" }, &c.section)));
    tables.push(("[positions]", positions));
    tables.push(("[tracing]", tracing));
    for (header, s) in tables {
        if !s.is_empty() {
            s.render(header, &mut out);
            out.push('\n');
        }
    }
    for s in sources {
        s.render("[[sources]]", &mut out);
        out.push('\n');
    }
    out
}

/// Takes Promtail's defaults out of `doc` (see [`defaults`]), noting each
/// secret a `/config` page hid and each replacement such a page may show
/// expanded.
fn take_defaults(doc: &mut Yaml, r: &mut Report) {
    if defaults::is_page(doc) {
        defaults::restore_empty_relabel_keys(doc);
        for key in defaults::replacements_to_check(doc) {
            r.note(
                key,
                "a /config page of a Promtail run with -config.expand-env=true shows a `${1}` of a replacement \
                 expanded to nothing (`${1}-x` as `-x`): if the original has one here, write it",
            );
        }
    }
    for h in defaults::remove(doc) {
        r.note(
            h.key,
            format!(
                "Promtail's /config page hides secrets (`<secret>`): the converted config reads this one from \
                 ${{{}}}, which `tailship check` says is unset until it is set; or write the value (or a *_file \
                 key) there",
                h.var
            ),
        );
    }
}

/// `items` as a numbered list, one per line: `N. key: message`.
pub fn numbered(items: &[Item]) -> String {
    items.iter().enumerate().map(|(i, it)| format!("{:>3}. {}: {}\n", i + 1, it.key, it.message)).collect()
}

#[cfg(test)]
mod tests;
