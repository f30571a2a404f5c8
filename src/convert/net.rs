//! Promtail's `syslog`, `loki_push_api`, `gelf`, `heroku_drain` and `gcplog`
//! jobs as tailship's `syslog`, `loki_push`, `gelf`, `heroku_drain` and `gcplog` sources
//! (their `relabel_configs` go over the same `__syslog_*`, `__gelf_*` and
//! `__heroku_drain_*` labels; see `source/net/`).

use super::render::{Section, Val};
use super::yaml::{truthy, Map, Report};
use yaml_rust2::Yaml;

/// A `syslog` block as a syslog source.
pub(super) fn syslog_source(key: &str, y: &Yaml, name: &str, r: &mut Report) -> Section {
    let mut m = Map::new(key, y, r);
    let mut s = Section { comments: vec![format!("Promtail job `{name}` ({key})")], entries: Vec::new() };
    s.set("type", Val::str("syslog"));
    s.set("name", Val::str(name));
    match m.text("listen_address", r) {
        Some(a) => s.set("listen", Val::str(a)),
        None => r.note(m.key("listen_address"), "unset: tailship listens on 127.0.0.1:1514"),
    }
    if let Some(p) = m.text("listen_protocol", r) {
        match p.to_ascii_lowercase().as_str() {
            "tcp" | "udp" => s.set("protocol", Val::str(p.to_ascii_lowercase())),
            other => r.skip(m.key("listen_protocol"), format!("`{other}` is neither tcp nor udp: tcp is used")),
        }
    }
    s.set("labels", Val::pairs(&m.pairs("labels", r)));
    let mut receiver = Vec::new();
    if let Some(t) = m.text("idle_timeout", r) {
        receiver.push(("idle_timeout".to_string(), Val::str(t)));
    }
    if let Some(n) = m.text("max_message_length", r) {
        match n.parse::<i64>() {
            Ok(n) if n >= 64 => receiver.push(("max_message_bytes".to_string(), Val::Int(n))),
            _ => r.skip(m.key("max_message_length"), format!("`{n}` is not a size of at least 64 bytes")),
        }
    }
    // Promtail's `label_structured_data` offers the structured data to
    // relabel rules (`__syslog_message_sd_*`) and makes no label of it; so do
    // tailship's syslog sources without their `label_structured_data`, which
    // makes labels of it (they also keep it as structured metadata).
    if m.text("label_structured_data", r).is_some_and(|v| truthy(&v)) {
        r.note(
            m.key("label_structured_data"),
            "structured data is offered to relabel rules as `__syslog_message_sd_*`, as in Promtail, and kept as \
             structured metadata (Promtail drops it)",
        );
    }
    // Promtail's default is the time received; tailship's the message's.
    let incoming = m.text("use_incoming_timestamp", r).is_some_and(|v| truthy(&v));
    receiver.push(("use_incoming_timestamp".to_string(), Val::Bool(incoming)));
    if m.text("use_rfc5424_message", r).is_some_and(|v| truthy(&v)) {
        r.skip(
            m.key("use_rfc5424_message"),
            "tailship ships the message part as the line, not the whole RFC 5424 message",
        );
    }
    if let Some(tls) = m.get("tls_config") {
        let mut t = Map::new(m.key("tls_config"), tls, r);
        let cert = t.text("cert_file", r);
        let key_file = t.text("key_file", r);
        // Promtail asks senders for a certificate signed by `ca_file` when it is set.
        let ca = t.text("ca_file", r);
        t.finish(r, "no tailship equivalent");
        match (cert, key_file) {
            (Some(c), Some(k)) => receiver.push(("tls".to_string(), server_tls(c, k, ca))),
            _ => r.skip(key, "tls_config without cert_file and key_file: no TLS"),
        }
    }
    s.set("receiver", Val::Table(receiver));
    s.set_noted("host_label", Val::Bool(false), "Promtail adds no host label (tailship does by default)");
    m.finish(r, "no tailship equivalent");
    s
}

/// A `loki_push_api` block as a loki_push source.
pub(super) fn push_source(key: &str, y: &Yaml, name: &str, r: &mut Report) -> Section {
    let mut m = Map::new(key, y, r);
    let mut s = Section { comments: vec![format!("Promtail job `{name}` ({key})")], entries: Vec::new() };
    s.set("type", Val::str("loki_push"));
    s.set("name", Val::str(name));
    http_server(&mut m, &mut s, "3500", r);
    s.set("labels", Val::pairs(&m.pairs("labels", r)));
    incoming_timestamp(&mut m, &mut s, r);
    s.set_noted("host_label", Val::Bool(false), "Promtail adds no host label (tailship does by default)");
    m.finish(r, "no tailship equivalent");
    s
}

/// A `gelf` block as a gelf source.
pub(super) fn gelf_source(key: &str, y: &Yaml, name: &str, r: &mut Report) -> Section {
    let mut m = Map::new(key, y, r);
    let mut s = Section { comments: vec![format!("Promtail job `{name}` ({key})")], entries: Vec::new() };
    s.set("type", Val::str("gelf"));
    s.set("name", Val::str(name));
    let listen = match m.text("listen_address", r) {
        // Go's `:12201` is every interface.
        Some(a) if a.starts_with(':') => format!("0.0.0.0{a}"),
        Some(a) => a,
        None => {
            r.note(m.key("listen_address"), "unset: Promtail listened on every interface, port 12201; so does this");
            "0.0.0.0:12201".to_string()
        }
    };
    s.set("listen", Val::str(listen));
    s.set("labels", Val::pairs(&m.pairs("labels", r)));
    incoming_timestamp(&mut m, &mut s, r);
    m.finish(r, "no tailship equivalent");
    s
}

/// A `heroku_drain` block as a heroku_drain source.
pub(super) fn heroku_source(key: &str, y: &Yaml, name: &str, r: &mut Report) -> Section {
    let mut m = Map::new(key, y, r);
    let mut s = Section { comments: vec![format!("Promtail job `{name}` ({key})")], entries: Vec::new() };
    s.set("type", Val::str("heroku_drain"));
    s.set("name", Val::str(name));
    http_server(&mut m, &mut s, "8514", r);
    s.set("labels", Val::pairs(&m.pairs("labels", r)));
    incoming_timestamp(&mut m, &mut s, r);
    m.finish(r, "no tailship equivalent");
    s
}

/// A `gcplog` block as a gcplog source (a pull or a push subscription).
pub(super) fn gcplog_source(key: &str, y: &Yaml, name: &str, r: &mut Report) -> Section {
    let mut m = Map::new(key, y, r);
    let mut s = Section { comments: vec![format!("Promtail job `{name}` ({key})")], entries: Vec::new() };
    s.set("type", Val::str("gcplog"));
    s.set("name", Val::str(name));
    let push = m.text("subscription_type", r).is_some_and(|t| t == "push");
    let mut g = Vec::new();
    if push {
        g.push(("subscription_type".to_string(), Val::str("push")));
        http_server(&mut m, &mut s, "8515", r);
        if m.text("push_timeout", r).is_some() {
            r.note(
                m.key("push_timeout"),
                "tailship answers a push once the message is on disk, which takes no wait on the service",
            );
        }
    } else {
        for k in ["project_id", "subscription"] {
            if let Some(v) = m.text(k, r) {
                g.push((k.to_string(), Val::str(v)));
            }
        }
    }
    if m.text("use_full_line", r).is_some_and(|v| truthy(&v)) {
        g.push(("use_full_line".to_string(), Val::Bool(true)));
    }
    s.set("gcplog", Val::Table(g));
    s.set("labels", Val::pairs(&m.pairs("labels", r)));
    incoming_timestamp(&mut m, &mut s, r);
    m.finish(r, "no tailship equivalent");
    s
}

/// A `cloudflare` block as a cloudflare source.
pub(super) fn cloudflare_source(key: &str, y: &Yaml, name: &str, r: &mut Report) -> Section {
    let mut m = Map::new(key, y, r);
    let mut s = Section { comments: vec![format!("Promtail job `{name}` ({key})")], entries: Vec::new() };
    s.set("type", Val::str("cloudflare"));
    s.set("name", Val::str(name));
    let mut c = Vec::new();
    for k in ["api_token", "zone_id", "pull_range", "fields_type"] {
        if let Some(v) = m.text(k, r) {
            c.push((k.to_string(), Val::str(v)));
        }
    }
    if let Some(w) = m.text("workers", r).and_then(|w| w.parse::<i64>().ok()) {
        c.push(("workers".into(), Val::Int(w)));
    }
    let extra = m.texts("additional_fields", r);
    if !extra.is_empty() {
        c.push(("additional_fields".into(), Val::strs(&extra)));
    }
    s.set("cloudflare", Val::Table(c));
    s.set("labels", Val::pairs(&m.pairs("labels", r)));
    s.set_noted("host_label", Val::Bool(false), "Promtail adds no host label (tailship does by default)");
    m.finish(r, "no tailship equivalent");
    s
}

/// `use_incoming_timestamp` (Promtail's default: the time received; tailship's: the message's).
fn incoming_timestamp(m: &mut Map<'_>, s: &mut Section, r: &mut Report) {
    let incoming = m.text("use_incoming_timestamp", r).is_some_and(|v| truthy(&v));
    let stamp = ("use_incoming_timestamp".to_string(), Val::Bool(incoming));
    match s.entries.iter_mut().find(|(k, _, _)| k == "receiver") {
        Some((_, Val::Table(t), _)) => t.push(stamp),
        _ => s.set("receiver", Val::Table(vec![stamp])),
    }
    s.set_noted("host_label", Val::Bool(false), "Promtail adds no host label (tailship does by default)");
}

/// A `server` block (`http_listen_address`, `http_listen_port`,
/// `http_tls_config`) as the source's `listen` and `receiver.tls`.
fn http_server(m: &mut Map<'_>, s: &mut Section, default_port: &str, r: &mut Report) {
    if let Some(server) = m.get("server") {
        let mut sv = Map::new(m.key("server"), server, r);
        let addr = sv.text("http_listen_address", r);
        let port = sv.text("http_listen_port", r);
        sv.ignore("grpc_listen_port");
        sv.ignore("grpc_listen_address");
        if let Some(tls) = sv.get("http_tls_config") {
            let mut t = Map::new(sv.key("http_tls_config"), tls, r);
            let (cert, key_file) = (t.text("cert_file", r), t.text("key_file", r));
            let ca = t.text("client_ca_file", r);
            if let Some(auth) = t.text("client_auth_type", r) {
                if ca.is_some() && auth != "RequireAndVerifyClientCert" {
                    r.skip(
                        t.key("client_auth_type"),
                        "tailship asks for and verifies a sender's certificate whenever client_ca_file is set",
                    );
                }
            }
            t.finish(r, "no tailship equivalent");
            match (cert, key_file) {
                (Some(c), Some(k)) => s.set("receiver", Val::Table(vec![("tls".to_string(), server_tls(c, k, ca))])),
                _ => r.skip(sv.key("http_tls_config"), "without cert_file and key_file: no TLS"),
            }
        }
        sv.finish(r, "no tailship equivalent (tailship receives over HTTP only, no gRPC)");
        match (addr, port) {
            (a, Some(p)) => {
                let a = a.filter(|a| !a.is_empty()).unwrap_or_else(|| {
                    r.note(
                        m.key("server.http_listen_address"),
                        "unset: Promtail listened on every interface; so does this",
                    );
                    "0.0.0.0".to_string()
                });
                s.set("listen", Val::str(format!("{a}:{p}")));
            }
            _ => r.note(m.key("server"), format!("no http_listen_port: tailship listens on 127.0.0.1:{default_port}")),
        }
    }
}

/// A receiver's `tls` table: certificate, key, and the CA senders' certificates must chain to.
fn server_tls(cert: String, key: String, client_ca: Option<String>) -> Val {
    let mut t = vec![("cert_file".into(), Val::str(cert)), ("key_file".into(), Val::str(key))];
    if let Some(ca) = client_ca {
        t.push(("client_ca_file".into(), Val::str(ca)));
    }
    Val::Table(t)
}
