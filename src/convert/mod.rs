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
//! - `scrape_configs[].static_configs` -> `type = "file"` sources (one per
//!   static config), `journal` -> a `type = "journal"` source, `syslog` and
//!   `loki_push_api` -> `type = "syslog"` and `type = "loki_push"` sources ([`net`])
//! - `pipeline_stages`: [`stages`] (Go time layouts: [`crate::pipeline::golayout`]; the
//!   capture-group semantics of `replace`: [`replace`])
//! - `relabel_configs`: [`relabel`]
//! - `docker_sd_configs`, `kubernetes_sd_configs` (role pod) -> `type = "docker"`,
//!   `type = "kubernetes"` sources: [`sd`]
//! - `consul_sd_configs`, `consulagent_sd_configs`, `dockerswarm_sd_configs` and the other
//!   Prometheus discoveries ([`sd::FILE_TARGETS`]: marathon, triton, digitalocean, dns,
//!   serverset, nerve, gce, openstack, ec2, azure) -> file sources with that discovery's
//!   table: [`sd`], [`discovery`];
//! - `file_sd_configs` -> a file source's `targets_from`, `decompression` ->
//!   its `decompression` table: [`files`]
//! - `kafka`, `azure_event_hubs` -> `type = "kafka"`, `type = "azure_event_hubs"` sources: [`kafka`]

mod client;
mod defaults;
mod discovery;
mod files;
mod filters;
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
use yaml::{list, truthy, Map, Report};
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
    for key in defaults::remove(&mut doc) {
        r.note(
            key,
            "Promtail's /config page hides secrets as `<secret>`: write the value (or a *_file key) in the converted \
             config",
        );
    }
    let doc = &doc;
    if (0..text.len()).any(|i| text.is_char_boundary(i) && render::env_reference(&text[i..]).is_some()) {
        r.note(
            "(file)",
            "${VAR}, ${VAR:-default} and ${VAR:default} are kept as references (the last written ${VAR:-default}): \
             tailship expands them from its environment each time it loads the config, as Promtail does at start \
             with -config.expand-env=true (so a DaemonSet's ${HOSTNAME} is each node's own, not the converting \
             machine's); a variable unset and without a default is an error naming the key, not an empty value",
        );
    }
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
        metadata |= scrape(&format!("scrape_configs[{i}]"), job, &external, &mut sources, &mut r);
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
    let mut out = String::from(
        "# Converted from a Promtail config by `tailship convert promtail`.\n\
         # Check it with `tailship check --config FILE`; keys not set here keep their defaults\n\
         # (config/tailship.toml lists them all).\n\n",
    );
    let one = clients.len() == 1;
    let mut tables: Vec<(&str, &Section)> = vec![("[server]", &server)];
    tables.extend(clients.iter().map(|c| (if one { "[client]" } else { "[[clients]]" }, &c.section)));
    tables.push(("[positions]", &positions));
    tables.push(("[tracing]", &tracing));
    for (header, s) in tables {
        if !s.is_empty() {
            s.render(header, &mut out);
            out.push('\n');
        }
    }
    for s in &sources {
        s.render("[[sources]]", &mut out);
        out.push('\n');
    }
    let positions_path = match positions.get("path") {
        Some(Val::Str(p)) => Some(p.clone()),
        _ => None,
    };
    Ok(Conversion { toml: out, untranslated: r.untranslated, notes: r.notes, positions_path })
}

/// `items` as a numbered list, one per line: `N. key: message`.
pub fn numbered(items: &[Item]) -> String {
    items.iter().enumerate().map(|(i, it)| format!("{:>3}. {}: {}\n", i + 1, it.key, it.message)).collect()
}

/// One `scrape_configs` entry: its sources are appended to `out`. Returns
/// whether it sends structured metadata.
fn scrape(key: &str, job: &Yaml, external: &[(String, String)], out: &mut Vec<Section>, r: &mut Report) -> bool {
    let mut m = Map::new(key, job, r);
    // A source name is one line of printable text (it is a metric label value too).
    let name: String = m
        .text("job_name", r)
        .unwrap_or_else(|| key.to_string())
        .chars()
        .map(|c| if c.is_control() { '_' } else { c })
        .collect();
    let pipe_key = m.key("pipeline_stages");
    let stages = list(&pipe_key, m.get("pipeline_stages"), r);
    let mut pipe = stages::convert(&pipe_key, stages, names::available(job), names::every_target(job), r);
    let statics = m.get("static_configs");
    let file_sd = m.get("file_sd_configs");
    let discovered = sd::FILE_TARGETS.iter().any(|k| m.get(k).is_some());
    let journal = m.get("journal");
    if journal.is_some() {
        pipe.drop_container_stages(&pipe_key, r);
    }
    let relabel = match journal {
        Some(_) => relabel::journal(&m.key("relabel_configs"), m.get("relabel_configs"), r),
        None => relabel::Relabel::default(),
    };
    let docker_sd = m.get("docker_sd_configs");
    let kubernetes_sd = m.get("kubernetes_sd_configs");
    let unavailable = if docker_sd.is_some() { sd::PER_LINE } else { &[] };
    let streams = if docker_sd.is_some() { sd::stream_rules(m.get("relabel_configs")) } else { Vec::new() };
    let taken: Vec<usize> = streams.iter().map(|(i, _)| *i).collect();
    let rules = match journal {
        Some(_) => Vec::new(),
        None => relabel::as_is(&m.key("relabel_configs"), m.get("relabel_configs"), unavailable, &taken, r),
    };
    let before = out.len();
    if let Some(j) = journal {
        if statics.is_some() {
            r.skip(m.key("static_configs"), "a job reads files or the journal, not both: the files are left out");
        }
        if file_sd.is_some() {
            r.skip(m.key("file_sd_configs"), "a job reads files or the journal, not both: the files are left out");
        }
        let mut s = journal_source(&m.key("journal"), j, &name, &relabel, &pipe, r);
        finish_source(&mut s, external, &relabel.labels, &pipe);
        out.push(s);
    } else if statics.is_some() || file_sd.is_some() || discovered {
        let decompression = files::decompression(&m.key("decompression"), m.get("decompression"), r);
        let items = list(&m.key("static_configs"), statics, r);
        let mut found = Vec::new();
        for (i, st) in items.iter().enumerate() {
            let sk = format!("{}[{i}]", m.key("static_configs"));
            let n = if items.len() == 1 { name.clone() } else { format!("{name}-{i}") };
            found.extend(file_source(&sk, st, &n, &pipe, m.get("relabel_configs"), r));
        }
        if let Some(fs) = file_sd {
            let n = if items.is_empty() { name.clone() } else { format!("{name}-file-sd") };
            found.extend(files::file_sd(&m.key("file_sd_configs"), fs, &n, pipe.multiline.as_ref(), r));
        }
        found.extend(sd::file_targets(&mut m, &name, pipe.multiline.as_ref(), r));
        for mut s in found {
            finish_source(&mut s, external, &relabel.labels, &pipe);
            if let Some(d) = &decompression {
                s.set("decompression", d.clone());
            }
            if !rules.is_empty() {
                s.set("relabel", Val::Arr(rules.clone()));
            }
            out.push(s);
        }
    } else if let Some(ds) = docker_sd {
        for mut s in sd::docker(&m.key("docker_sd_configs"), ds, &name, r) {
            finish_source(&mut s, external, &relabel.labels, &pipe);
            sd::drop_own_stage(&mut s, "docker", &pipe_key, r);
            sd::stream_labels(&mut s, &streams.iter().map(|(_, t)| t.clone()).collect::<Vec<_>>());
            if !rules.is_empty() {
                s.set("relabel", Val::Arr(rules.clone()));
            }
            out.push(s);
        }
    } else if let Some(ks) = kubernetes_sd {
        for k in sd::kubernetes(&m.key("kubernetes_sd_configs"), ks, &name, &rules, r) {
            let mut s = k.section;
            finish_source(&mut s, external, &relabel.labels, &pipe);
            if k.pod {
                sd::drop_own_stage(&mut s, "cri", &pipe_key, r);
            }
            if !k.rules.is_empty() {
                s.set("relabel", Val::Arr(k.rules));
            }
            out.push(s);
        }
    } else if let Some(y) = m.get("syslog") {
        let mut s = net::syslog_source(&m.key("syslog"), y, &name, r);
        finish_source(&mut s, external, &relabel.labels, &pipe);
        if !rules.is_empty() {
            s.set("relabel", Val::Arr(rules.clone()));
        }
        out.push(s);
    } else if let Some((k, y)) = ["gelf", "heroku_drain", "gcplog"].into_iter().find_map(|k| Some((k, m.get(k)?))) {
        let key = m.key(k);
        let mut s = match k {
            "gelf" => net::gelf_source(&key, y, &name, r),
            "heroku_drain" => net::heroku_source(&key, y, &name, r),
            _ => net::gcplog_source(&key, y, &name, r),
        };
        finish_source(&mut s, external, &relabel.labels, &pipe);
        if !rules.is_empty() {
            s.set("relabel", Val::Arr(rules.clone()));
        }
        out.push(s);
    } else if let Some((k, y)) = ["kafka", "azure_event_hubs"].into_iter().find_map(|k| Some((k, m.get(k)?))) {
        let key = m.key(k);
        let mut s =
            if k == "kafka" { kafka::kafka_source(&key, y, &name, r) } else { kafka::azure_source(&key, y, &name, r) };
        finish_source(&mut s, external, &relabel.labels, &pipe);
        if !rules.is_empty() {
            s.set("relabel", Val::Arr(rules.clone()));
        }
        out.push(s);
    } else if let Some(y) = m.get("cloudflare") {
        let mut s = net::cloudflare_source(&m.key("cloudflare"), y, &name, r);
        finish_source(&mut s, external, &relabel.labels, &pipe);
        if !rules.is_empty() {
            r.skip(m.key("relabel_configs"), "a cloudflare job has no discovered labels to relabel; left out");
        }
        out.push(s);
    } else if let Some(y) = m.get("loki_push_api") {
        let mut s = net::push_source(&m.key("loki_push_api"), y, &name, r);
        // Pushed lines may carry structured metadata: Promtail sends it on.
        pipe.metadata = true;
        finish_source(&mut s, external, &relabel.labels, &pipe);
        if !rules.is_empty() {
            r.skip(m.key("relabel_configs"), "relabel rules are not applied to pushed streams; they are left out");
        }
        out.push(s);
    } else if m.get("windows_events").is_some() {
        r.skip(
            m.key("windows_events"),
            format!(
                "job `{name}` reads the Windows Event Log, through the Windows API: tailship runs on Linux, where \
                 Promtail does not read it either (its Linux build warns that the support is not compiled in)"
            ),
        );
        return false;
    } else {
        let known = format!(
            "static_configs, file_sd_configs, kubernetes_sd_configs, docker_sd_configs, {}, journal, syslog, \
             loki_push_api, gelf, heroku_drain, gcplog, cloudflare, kafka or azure_event_hubs",
            sd::FILE_TARGETS.join(", ")
        );
        let kinds: Vec<String> = m.keys().into_iter().filter(|k| k.ends_with("_sd_configs")).collect();
        if kinds.is_empty() {
            r.skip(key, format!("job `{name}` has no target: a job reads {known}"));
        }
        for kind in kinds {
            r.skip(
                m.key(&kind),
                format!("job `{name}`: tailship has no {kind} (Prometheus' discovery of that kind); it reads {known}"),
            );
        }
        return false;
    }
    m.finish(r, "no tailship equivalent");
    pipe.metadata && out.len() > before
}

/// A `static_configs` entry as a file source (its `__path__` may come from
/// the job's relabel `rules`, as in Promtail).
fn file_source(
    key: &str,
    st: &Yaml,
    name: &str,
    pipe: &stages::Pipeline,
    rules: Option<&Yaml>,
    r: &mut Report,
) -> Option<Section> {
    let mut m = Map::new(key, st, r);
    let target =
        m.get("targets").and_then(|t| t.as_vec()).and_then(|t| t.first()).and_then(|t| t.as_str().map(str::to_string));
    m.ignore("targets");
    let labels = m.pairs("labels", r);
    let from_rules = match labels.iter().any(|(k, _)| k == "__path__") {
        true => None,
        false => relabel::path_of_target(rules, &labels, target.as_deref()),
    };
    m.finish(r, "no tailship equivalent");
    let mut include = Vec::new();
    let mut exclude = Vec::new();
    let mut plain = Vec::new();
    for (k, v) in labels {
        match k.as_str() {
            "__path__" => include.push(v),
            "__path_exclude__" => exclude.push(v),
            k if k.starts_with("__") => {} // Promtail drops `__` labels after relabelling.
            _ => plain.push((k, v)),
        }
    }
    include.extend(from_rules);
    if include.is_empty() {
        r.skip(format!("{key}.labels"), "no __path__: Promtail reads nothing for this target, and so does tailship");
        return None;
    }
    let mut s = Section { comments: vec![format!("Promtail job `{name}` ({key})")], entries: Vec::new() };
    s.set("type", Val::str("file"));
    s.set("name", Val::str(name));
    s.set("include", Val::strs(&include));
    if !exclude.is_empty() {
        s.set("exclude", Val::strs(&exclude));
    }
    s.set("labels", Val::pairs(&plain));
    s.set_noted("host_label", Val::Bool(false), "Promtail adds no host label (tailship does by default)");
    s.set_noted(
        "ignore_older",
        Val::str("0"),
        "Promtail reads every file however old (tailship skips a file untouched for 24h by default)",
    );
    if let Some(ml) = &pipe.multiline {
        s.set("multiline", ml.clone());
    }
    Some(s)
}

/// A `journal` block as a journal source.
fn journal_source(
    key: &str,
    y: &Yaml,
    name: &str,
    relabel: &relabel::Relabel,
    pipe: &stages::Pipeline,
    r: &mut Report,
) -> Section {
    let mut m = Map::new(key, y, r);
    let mut s = Section { comments: vec![format!("Promtail job `{name}` ({key})")], entries: Vec::new() };
    s.set("type", Val::str("journal"));
    s.set("name", Val::str(name));
    if let Some(p) = m.text("path", r) {
        s.set("path", Val::str(p));
    }
    let mut matches = Vec::new();
    for t in m.text("matches", r).unwrap_or_default().split_whitespace() {
        if is_journal_match(t) {
            matches.push(t.to_string());
        } else {
            r.skip(m.key("matches"), format!("`{t}` is not a FIELD=value match (tailship takes no `+`)"));
        }
    }
    matches.extend(relabel.matches.iter().cloned());
    if !matches.is_empty() {
        s.set("matches", Val::strs(&matches));
    }
    if !relabel.rules.is_empty() {
        s.set("relabel", Val::Arr(relabel.rules.clone()));
    }
    if let Some(a) = m.text("max_age", r) {
        s.set("max_age", Val::str(a));
    }
    if m.text("json", r).is_some_and(|v| truthy(&v)) {
        s.set("json", Val::Bool(true));
    }
    s.set("labels", Val::pairs(&m.pairs("labels", r)));
    m.finish(r, "no tailship equivalent");
    let asked: Vec<&str> = relabel.builtin.iter().map(String::as_str).collect();
    if !asked.contains(&"host") {
        s.set_noted("host_label", Val::Bool(false), "Promtail's job had no host label");
    }
    let extra: Vec<&str> = ["unit", "level"].into_iter().filter(|l| !asked.contains(l)).collect();
    if !extra.is_empty() {
        r.note(key, format!("tailship's journal source always adds the label(s) {}", extra.join(", ")));
    }
    if pipe.multiline.is_some() {
        r.skip(format!("{key}.multiline"), "the journal source joins no lines: the multiline stage is left out");
    }
    s
}

/// `FIELD=value` with a journal field name (upper-case letters, digits, `_`).
fn is_journal_match(t: &str) -> bool {
    t.split_once('=').is_some_and(|(f, _)| {
        !f.is_empty()
            && f.len() <= 64
            && !f.starts_with(|c: char| c.is_ascii_digit())
            && f.bytes().all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_')
    })
}

/// Labels, tenant and stages common to both kinds of source.
fn finish_source(
    s: &mut Section,
    external: &[(String, String)],
    relabeled: &[(String, String)],
    pipe: &stages::Pipeline,
) {
    let mut labels = labels_of(s);
    // A job's own label wins over the client's external label of the same name.
    for (k, v) in external {
        if !labels.iter().any(|(l, _)| l == k) {
            labels.push((k.clone(), v.clone()));
        }
    }
    for (k, v) in relabeled.iter().chain(&pipe.static_labels) {
        labels.retain(|(l, _)| l != k);
        labels.push((k.clone(), v.clone()));
    }
    labels.retain(|(l, _)| !pipe.drop_labels.contains(l));
    if pipe.drop_labels.iter().any(|l| l == "host") {
        s.set("host_label", Val::Bool(false));
    }
    s.set("labels", Val::pairs(&labels));
    if let Some(t) = &pipe.tenant {
        s.set("tenant_id", Val::str(t));
    }
    if !pipe.stages.is_empty() {
        s.set("stages", Val::Arr(pipe.stages.iter().map(stages::Stage::to_val).collect()));
    }
}

/// The `labels` table of a section as pairs.
fn labels_of(s: &Section) -> Vec<(String, String)> {
    match s.get("labels") {
        Some(Val::Table(t)) => t
            .iter()
            .filter_map(|(k, v)| match v {
                Val::Str(v) => Some((k.clone(), v.clone())),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests;
