//! Promtail's `kafka` and `azure_event_hubs` jobs as tailship's `kafka` and
//! `azure_event_hubs` sources (their `relabel_configs` go over the same
//! `__meta_kafka_*` and `__azure_event_hubs_category` labels; see
//! `source/net/kafka/`). The one difference: tailship joins no consumer
//! group; `group_id` is kept as the label's value, and the offsets are
//! tailship's own.

use super::render::{Section, Val};
use super::yaml::{truthy, Map, Report};
use yaml_rust2::Yaml;

const NO_GROUP: &str = "tailship joins no consumer group: group_id is kept as the value of __meta_kafka_group_id, \
     the offsets are tailship's own (kept beside the source's spool, not committed to the brokers), and every \
     agent reads every partition of its topics";

/// A `kafka` block as a kafka source.
pub(super) fn kafka_source(key: &str, y: &Yaml, name: &str, r: &mut Report) -> Section {
    let mut m = Map::new(key, y, r);
    let mut s = Section { comments: vec![format!("Promtail job `{name}` ({key})")], entries: Vec::new() };
    s.set("type", Val::str("kafka"));
    s.set("name", Val::str(name));
    let mut k: Vec<(String, Val)> = Vec::new();
    let brokers = m.texts("brokers", r);
    if brokers.is_empty() {
        r.refuse(m.key("brokers"), "no Kafka bootstrap brokers defined (Promtail refuses the config)");
    }
    k.push(("brokers".into(), Val::strs(&brokers)));
    let topics = m.texts("topics", r);
    check_topics(&m.key("topics"), &topics, r);
    k.push(("topics".into(), Val::strs(&topics)));
    let group = m.text("group_id", r).unwrap_or_else(|| crate::config::DEFAULT_GROUP_ID.to_string());
    r.note(m.key("group_id"), NO_GROUP);
    k.push(("group_id".into(), Val::str(group)));
    if m.text("assignor", r).is_some() {
        r.note(m.key("assignor"), "no consumer group, so no assignor: this agent reads every partition");
    }
    if m.text("version", r).is_some() {
        r.note(m.key("version"), "tailship's client negotiates the protocol version with the brokers");
    }
    let incoming = m.text("use_incoming_timestamp", r).is_some_and(|v| truthy(&v));
    k.push(("use_incoming_timestamp".into(), Val::Bool(incoming)));
    if let Some(a) = m.get("authentication") {
        if let Some(auth) = authentication(&m.key("authentication"), a, r) {
            k.push(("authentication".into(), auth));
        }
    }
    s.set("labels", Val::pairs(&m.pairs("labels", r)));
    s.set("kafka", Val::Table(k));
    s.set_noted("host_label", Val::Bool(false), "Promtail adds no host label (tailship does by default)");
    m.finish(r, "no tailship equivalent");
    s
}

/// `authentication`: type none, ssl or sasl, with its TLS and SASL keys.
fn authentication(key: &str, y: &Yaml, r: &mut Report) -> Option<Val> {
    let mut a = Map::new(key, y, r);
    let kind = a.text("type", r).unwrap_or_else(|| "none".into()).to_ascii_lowercase();
    let mut out = vec![("type".to_string(), Val::str(kind.clone()))];
    match kind.as_str() {
        "none" => {}
        "ssl" => {
            if let Some(t) = a.get("tls_config") {
                out.push(("tls".into(), tls(&a.key("tls_config"), t, r)));
            }
        }
        "sasl" => {
            let mut sasl = Vec::new();
            if let Some(sy) = a.get("sasl_config") {
                let mut sm = Map::new(a.key("sasl_config"), sy, r);
                let mech = sm.text("mechanism", r).unwrap_or_else(|| "PLAIN".into());
                if !matches!(mech.as_str(), "PLAIN" | "SCRAM-SHA-256" | "SCRAM-SHA-512") {
                    r.refuse(sm.key("mechanism"), format!("unsupported SASL mechanism `{mech}` (Promtail refuses it)"));
                }
                sasl.push(("mechanism".to_string(), Val::str(mech)));
                sasl.push(("user".to_string(), Val::str(sm.text("user", r).unwrap_or_default())));
                if let Some(p) = sm.text("password", r) {
                    sasl.push(("password".to_string(), Val::str(p)));
                }
                if sm.text("use_tls", r).is_some_and(|v| truthy(&v)) {
                    sasl.push(("use_tls".to_string(), Val::Bool(true)));
                    if let Some(t) = sm.get("tls_config") {
                        out.push(("tls".into(), tls(&sm.key("tls_config"), t, r)));
                    }
                } else {
                    sm.ignore("tls_config");
                }
                sm.finish(r, "no tailship equivalent");
            }
            out.push(("sasl".into(), Val::Table(sasl)));
        }
        other => {
            r.refuse(a.key("type"), format!("unsupported authentication type `{other}` (Promtail refuses it)"));
            a.finish(r, "no tailship equivalent");
            return None;
        }
    }
    a.finish(r, "no tailship equivalent");
    Some(Val::Table(out))
}

/// A Promtail `tls_config` as the kafka source's `tls` (CA, client certificate, name, no check).
fn tls(key: &str, y: &Yaml, r: &mut Report) -> Val {
    let mut t = Map::new(key, y, r);
    let mut out = Vec::new();
    for k in ["ca_file", "cert_file", "key_file", "server_name"] {
        if let Some(v) = t.text(k, r) {
            out.push((k.to_string(), Val::str(v)));
        }
    }
    if let Some(v) = t.text("insecure_skip_verify", r) {
        out.push(("insecure_skip_verify".into(), Val::Bool(truthy(&v))));
    }
    t.finish(
        r,
        "no tailship equivalent (the kafka source's tls takes ca_file, cert_file, key_file, server_name and \
         insecure_skip_verify)",
    );
    Val::Table(out)
}

/// Topics: some, and the regexes (starting `^`) valid.
fn check_topics(key: &str, topics: &[String], r: &mut Report) {
    if topics.is_empty() {
        r.refuse(key, "no topics given to be consumed (Promtail refuses the config)");
    }
    for (i, t) in topics.iter().enumerate() {
        if t.starts_with('^') && regex_syntax::Parser::new().parse(t).is_err() {
            r.refuse(format!("{key}[{i}]"), format!("`{t}` is not a valid regex (Promtail refuses it)"));
        }
    }
}

/// An `azure_event_hubs` block as an azure_event_hubs source.
pub(super) fn azure_source(key: &str, y: &Yaml, name: &str, r: &mut Report) -> Section {
    let mut m = Map::new(key, y, r);
    let mut s = Section { comments: vec![format!("Promtail job `{name}` ({key})")], entries: Vec::new() };
    s.set("type", Val::str("azure_event_hubs"));
    s.set("name", Val::str(name));
    let mut a: Vec<(String, Val)> = Vec::new();
    match m.text("fully_qualified_namespace", r) {
        Some(ns) => a.push(("fully_qualified_namespace".into(), Val::str(ns))),
        None => r.refuse(
            m.key("fully_qualified_namespace"),
            "no fully_qualified_namespace defined (Promtail refuses the config)",
        ),
    }
    match m.text("connection_string", r) {
        Some(c) => a.push(("connection_string".into(), Val::str(c))),
        None => r.skip(m.key("connection_string"), "unset: set connection_string or connection_string_file"),
    }
    let hubs = m.texts("event_hubs", r);
    if hubs.is_empty() {
        r.refuse(m.key("event_hubs"), "no event_hubs defined (Promtail refuses the config)");
    }
    check_topics(&m.key("event_hubs"), &hubs, r);
    a.push(("event_hubs".into(), Val::strs(&hubs)));
    let group = m.text("group_id", r).unwrap_or_else(|| crate::config::DEFAULT_GROUP_ID.to_string());
    r.note(m.key("group_id"), NO_GROUP);
    a.push(("group_id".into(), Val::str(group)));
    for k in ["use_incoming_timestamp", "disallow_custom_messages"] {
        let v = m.text(k, r).is_some_and(|v| truthy(&v));
        a.push((k.into(), Val::Bool(v)));
    }
    s.set("labels", Val::pairs(&m.pairs("labels", r)));
    s.set("azure_event_hubs", Val::Table(a));
    s.set_noted("host_label", Val::Bool(false), "Promtail adds no host label (tailship does by default)");
    m.finish(r, "no tailship equivalent");
    s
}
