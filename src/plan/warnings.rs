//! What a valid config may still get wrong, said by `check` and logged by
//! `run` at start: nothing here stops the agent, since each can be meant.

use std::collections::BTreeMap;
use std::os::unix::fs::FileTypeExt;
use std::path::PathBuf;

use super::Plan;
use crate::config::SourceType;

/// The longest line Loki (`max_line_size`) and the log service accept by default.
pub const SERVICE_MAX_LINE_BYTES: u64 = 256 << 10;

/// The most labels a stream may have in Loki and the log service by default
/// (`max_label_names_per_series`).
pub const SERVICE_MAX_LABELS: usize = 15;

/// `(key, message)` for each thing worth a second look, looking at the files
/// the globs name now.
pub fn warnings(plan: &Plan) -> Vec<(String, String)> {
    let mut out = plan.skipped.clone();
    default_urls(plan, &mut out);
    let mut claimed: BTreeMap<PathBuf, Vec<usize>> = BTreeMap::new();
    for (i, s) in plan.config.sources.iter().enumerate() {
        let key = format!("sources[{i}]");
        if s.max_line_bytes.get() > SERVICE_MAX_LINE_BYTES {
            out.push((
                format!("{key}.max_line_bytes"),
                format!(
                    "{} is above the {} KiB line limit Loki and the log service apply by default (max_line_size): \
                     longer lines are refused (counted as rejected) unless the service allows them",
                    s.max_line_bytes.get(),
                    SERVICE_MAX_LINE_BYTES >> 10
                ),
            ));
        }
        if s.kind == SourceType::Journal {
            journal_warnings(&key, s, &mut out);
        }
        if s.kind.receives() && !s.kind.consumes() && s.kind != SourceType::Cloudflare {
            receiver_warnings(&key, s, plan.config.client.structured_metadata, &mut out);
        }
        if let Some(names) = plan.sources.get(i).map(|p| &p.label_names).filter(|n| n.len() > SERVICE_MAX_LABELS) {
            out.push((
                format!("{key}.stages"),
                format!(
                    "a line may carry {} labels ({}): Loki and the log service refuse a stream with more than {} \
                     (max_label_names_per_series), so such lines would be refused; drop some (labeldrop, labelallow) \
                     or keep them as structured metadata",
                    names.len(),
                    names.join(", "),
                    SERVICE_MAX_LABELS
                ),
            ));
        }
        if !s.kind.reads_files() {
            continue;
        }
        for inc in &s.include {
            if inc.contains(['*', '?', '[', '{']) {
                continue;
            }
            if let Ok(meta) = std::fs::metadata(inc) {
                if !meta.is_file() {
                    let t = meta.file_type();
                    let what = if meta.is_dir() {
                        "a directory (use a glob such as dir/*.log)"
                    } else if t.is_char_device() || t.is_block_device() {
                        "a device"
                    } else if t.is_fifo() {
                        "a FIFO (pipe it into a stdin source instead)"
                    } else if t.is_socket() {
                        "a socket"
                    } else {
                        "not a regular file"
                    };
                    out.push((format!("{key}.include"), format!("{inc} is {what}; it is never read")));
                }
            }
        }
        if let Some(files) = plan.sources.get(i).and_then(|p| p.spec.files.as_ref()) {
            for path in files.candidates() {
                claimed.entry(path).or_default().push(i);
            }
        }
    }
    let mut overlaps: BTreeMap<Vec<usize>, Vec<PathBuf>> = BTreeMap::new();
    for (path, sources) in claimed {
        if sources.len() > 1 {
            overlaps.entry(sources).or_default().push(path);
        }
    }
    for (sources, paths) in overlaps {
        let names: Vec<String> = sources.iter().map(|i| format!("sources[{i}]")).collect();
        let more = if paths.len() > 1 { format!(" and {} more", paths.len() - 1) } else { String::new() };
        out.push((
            format!("{}.include", names[0]),
            format!(
                "{} all match {}{more}: each line of such a file ships once per source (narrow a glob or add an exclude)",
                names.join(", "),
                paths[0].display()
            ),
        ));
    }
    out
}

/// A client whose `url` was left out pushes to the default, a service on
/// this host: said, with the URL, so that a config that forgot the key is
/// not taken for one shipping somewhere.
fn default_urls(plan: &Plan, out: &mut Vec<(String, String)>) {
    let listed = !plan.config.clients.is_empty();
    for (i, c) in plan.config.clients().iter().enumerate().filter(|(_, c)| c.url_defaulted) {
        let key = if listed { format!("clients[{i}].url") } else { "client.url".to_string() };
        out.push((
            key,
            format!(
                "not set: lines are pushed to {}, the default (a log service on this host); set it to the log \
                 service's URL",
                c.url
            ),
        ));
    }
}

/// A journal source that cannot read here yet: `check` says so and passes,
/// since a config is often checked on another machine than the one it runs
/// on (CI, a container without systemd); `run` refuses to start without
/// journalctl (see `agent`).
fn journal_warnings(key: &str, s: &crate::config::SourceConfig, out: &mut Vec<(String, String)>) {
    if crate::source::journal::find_journalctl().is_none() && !s.optional {
        out.push((
            format!("{key}.type"),
            "journalctl is not on PATH here: a journal source reads through it, and `run` refuses to start without it"
                .into(),
        ));
    }
    if let Some(p) = &s.path {
        match std::fs::metadata(p) {
            Ok(m) if !m.is_dir() => {
                out.push((format!("{key}.path"), format!("{} is not a directory; no journal is read", p.display())))
            }
            Ok(_) => {}
            Err(e) => out.push((
                format!("{key}.path"),
                format!("{}: {e}; journalctl is started again with backoff until it can read it", p.display()),
            )),
        }
    }
}

/// A receiver open to anyone beyond loopback, and metadata its lines will not carry.
fn receiver_warnings(key: &str, s: &crate::config::SourceConfig, metadata_on: bool, out: &mut Vec<(String, String)>) {
    let r = s.receiver.clone().unwrap_or_default();
    let pulled = s.kind == SourceType::Gcplog
        && s.gcplog.as_ref().is_some_and(|g| g.subscription_type == crate::config::SubscriptionType::Pull);
    let loopback = s.listen_addr().parse::<std::net::SocketAddr>().is_ok_and(|a| a.ip().is_loopback());
    let http = !matches!(s.kind, SourceType::Syslog | SourceType::Gelf);
    let authenticated = if http {
        r.basic_auth.is_some()
            || r.bearer_token_file.is_some()
            || r.tls.as_ref().is_some_and(|t| t.client_ca_file.is_some())
    } else {
        r.tls.as_ref().is_some_and(|t| t.client_ca_file.is_some())
    };
    if !pulled && !loopback && !authenticated {
        let how = if http {
            "receiver.basic_auth, receiver.bearer_token_file, or mutual TLS (receiver.tls.client_ca_file)"
        } else if s.kind == SourceType::Syslog {
            "syslog over TLS with receiver.tls.client_ca_file (mutual TLS), or a firewall"
        } else {
            "a firewall: GELF over UDP has no authentication"
        };
        out.push((
            format!("{key}.listen"),
            format!(
                "{} listens on {} beyond loopback and asks senders for no credentials: anyone who reaches it can \
                 write lines (and use the spool); add {how}",
                s.kind.as_str(),
                s.listen_addr()
            ),
        ));
    }
    let carries_metadata = matches!(s.kind, SourceType::LokiPush | SourceType::Otlp)
        || (s.kind == SourceType::Syslog && !r.label_structured_data);
    if carries_metadata && !metadata_on {
        out.push((
            format!("{key}.type"),
            format!(
                "{} lines may carry structured metadata{}; with client.structured_metadata = false it is left off \
                 (counted in tailship_receiver_metadata_dropped_total) so that the service takes the lines; set it \
                 to true for Loki 3, which stores it",
                s.kind.as_str(),
                if s.kind == SourceType::Syslog {
                    " (structured data, unless receiver.label_structured_data)"
                } else {
                    ""
                }
            ),
        ));
    }
}
