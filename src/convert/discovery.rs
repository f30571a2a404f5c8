//! Prometheus discoveries whose targets name a file source's files, other
//! than those of [`super::sd`]: `marathon_sd_configs`, ... Each entry becomes
//! a file source with the discovery's table (the job's relabel rules give
//! its targets `__path__`, as in Promtail).

use super::render::{Section, Val};
use super::yaml::{list, Map, Report};
use yaml_rust2::Yaml;

/// An entry of a discovery's list as the keys of its table.
type Convert = fn(&mut Map<'_>, &mut Report) -> Vec<(String, Val)>;

/// The discoveries converted here, in the order their sources are written:
/// the Promtail key of each one's list, its table in a file source, its converter.
pub const KINDS: &[(&str, &str, Convert)] = &[
    ("marathon_sd_configs", "marathon", marathon),
    ("triton_sd_configs", "triton", triton),
    ("digitalocean_sd_configs", "digitalocean", digitalocean),
    ("dns_sd_configs", "dns", dns),
    ("serverset_sd_configs", "serverset", zookeeper),
    ("nerve_sd_configs", "nerve", zookeeper),
    ("gce_sd_configs", "gce", gce),
    ("openstack_sd_configs", "openstack", openstack),
    ("ec2_sd_configs", "ec2", ec2),
    ("azure_sd_configs", "azure", azure),
];

/// The `kind` list at `key` (one of [`KINDS`]) as file sources.
pub fn convert(kind: &str, key: &str, y: &Yaml, name: &str, r: &mut Report) -> Vec<Section> {
    let mut out = Vec::new();
    let Some(&(_, table, convert_one)) = KINDS.iter().find(|k| k.0 == kind) else { return out };
    let items = list(key, Some(y), r);
    for (i, item) in items.iter().enumerate() {
        let ik = format!("{key}[{i}]");
        let mut m = Map::new(ik.clone(), item, r);
        let d = convert_one(&mut m, r);
        m.finish(r, "no tailship equivalent");
        let n = if items.len() == 1 { format!("{name}-{table}") } else { format!("{name}-{table}-{i}") };
        let mut s = Section { comments: vec![format!("Promtail job `{name}` ({ik})")], entries: Vec::new() };
        s.set("type", Val::str("file"));
        s.set("name", Val::str(n));
        s.set(table, Val::Table(d));
        out.push(s);
    }
    out
}

/// Copies the keys `keys` that are set, as strings.
fn texts(m: &mut Map<'_>, keys: &[&str], d: &mut Vec<(String, Val)>, r: &mut Report) {
    for k in keys {
        if let Some(v) = m.text(k, r) {
            d.push((k.to_string(), Val::str(v)));
        }
    }
}

/// `tls_config` as `tls`, and the HTTP client's keys (credentials, proxy).
fn http_keys(m: &mut Map<'_>, d: &mut Vec<(String, Val)>, what: &str, r: &mut Report) {
    super::client::tls_key(m, d, r);
    super::client::discovery_http(m, d, what, r);
}

/// `tls_config` as `tls`, `proxy_url` and `no_proxy` (EC2's and Azure's
/// keys: their credentials are their own).
fn tls_and_proxy(m: &mut Map<'_>, d: &mut Vec<(String, Val)>, r: &mut Report) {
    super::client::tls_key(m, d, r);
    texts(m, &["proxy_url", "no_proxy"], d, r);
}

fn marathon(m: &mut Map<'_>, r: &mut Report) -> Vec<(String, Val)> {
    let servers = m.texts("servers", r);
    if servers.is_empty() {
        r.refuse(m.key("servers"), "Promtail needs at least one Marathon server");
    }
    let mut d = vec![("servers".to_string(), Val::strs(&servers))];
    texts(m, &["refresh_interval", "auth_token", "auth_token_file"], &mut d, r);
    http_keys(m, &mut d, "Marathon", r);
    d
}

fn triton(m: &mut Map<'_>, r: &mut Report) -> Vec<(String, Val)> {
    let mut d = Vec::new();
    for k in ["account", "dns_suffix", "endpoint"] {
        match m.text(k, r) {
            Some(v) => d.push((k.to_string(), Val::str(v))),
            None => r.refuse(m.key(k), format!("Promtail needs the Triton `{k}`")),
        }
    }
    if let Some(role) = m.text("role", r) {
        if role != "container" && role != "cn" {
            r.refuse(m.key("role"), format!("`{role}` is not a Triton role (container or cn)"));
        }
        d.push(("role".into(), Val::str(role)));
    }
    let groups = m.texts("groups", r);
    if !groups.is_empty() {
        d.push(("groups".into(), Val::strs(&groups)));
    }
    ints(m, &["port", "version"], &mut d, r);
    texts(m, &["refresh_interval"], &mut d, r);
    super::client::tls_key(m, &mut d, r);
    d
}

/// Copies the keys `keys` that are set, as numbers (refusing what is none).
fn ints(m: &mut Map<'_>, keys: &[&str], d: &mut Vec<(String, Val)>, r: &mut Report) {
    for k in keys {
        if let Some(v) = m.text(k, r) {
            match v.parse::<u32>() {
                Ok(n) => d.push((k.to_string(), Val::Int(n.into()))),
                Err(_) => r.refuse(m.key(k), format!("`{v}` is not a whole number")),
            }
        }
    }
}

fn digitalocean(m: &mut Map<'_>, r: &mut Report) -> Vec<(String, Val)> {
    let mut d = Vec::new();
    texts(m, &["refresh_interval"], &mut d, r);
    ints(m, &["port"], &mut d, r);
    http_keys(m, &mut d, "DigitalOcean's API", r);
    d
}

fn dns(m: &mut Map<'_>, r: &mut Report) -> Vec<(String, Val)> {
    let names = m.texts("names", r);
    if names.is_empty() {
        r.refuse(m.key("names"), "Promtail needs at least one name to look up");
    }
    let mut d = vec![("names".to_string(), Val::strs(&names))];
    let kind = m.text("type", r).unwrap_or_else(|| "SRV".into());
    match kind.to_ascii_uppercase().as_str() {
        "SRV" | "A" | "AAAA" | "MX" | "NS" => d.push(("type".into(), Val::str(kind.clone()))),
        _ => r.refuse(m.key("type"), format!("`{kind}` is not a DNS-SD record type (SRV, A, AAAA, MX or NS)")),
    }
    ints(m, &["port"], &mut d, r);
    if !kind.eq_ignore_ascii_case("SRV") && !d.iter().any(|(k, _)| k == "port") {
        r.refuse(m.key("port"), format!("Promtail needs a port with type {kind} (only SRV records carry one)"));
    }
    texts(m, &["refresh_interval"], &mut d, r);
    d
}

fn zookeeper(m: &mut Map<'_>, r: &mut Report) -> Vec<(String, Val)> {
    let mut d = Vec::new();
    for k in ["servers", "paths"] {
        let v = m.texts(k, r);
        if v.is_empty() {
            r.refuse(m.key(k), format!("Promtail needs at least one of `{k}`"));
        }
        d.push((k.to_string(), Val::strs(&v)));
    }
    texts(m, &["timeout"], &mut d, r);
    d
}

fn gce(m: &mut Map<'_>, r: &mut Report) -> Vec<(String, Val)> {
    let mut d = Vec::new();
    for k in ["project", "zone"] {
        match m.text(k, r) {
            Some(v) => d.push((k.to_string(), Val::str(v))),
            None => r.refuse(m.key(k), format!("Promtail needs the GCE `{k}`")),
        }
    }
    texts(m, &["filter", "refresh_interval", "tag_separator"], &mut d, r);
    ints(m, &["port"], &mut d, r);
    d
}

fn openstack(m: &mut Map<'_>, r: &mut Report) -> Vec<(String, Val)> {
    let mut d = Vec::new();
    match m.text("role", r) {
        Some(role) if ["instance", "hypervisor", "loadbalancer"].contains(&role.as_str()) => {
            d.push(("role".into(), Val::str(role)))
        }
        Some(role) => {
            r.refuse(m.key("role"), format!("`{role}` is not an OpenStack role (instance, hypervisor, loadbalancer)"))
        }
        None => r.refuse(m.key("role"), "Promtail needs the OpenStack role (instance, hypervisor or loadbalancer)"),
    }
    match m.text("region", r) {
        Some(v) => d.push(("region".into(), Val::str(v))),
        None => r.refuse(m.key("region"), "Promtail needs the OpenStack region"),
    }
    texts(
        m,
        &[
            "identity_endpoint",
            "username",
            "userid",
            "password",
            "project_name",
            "project_id",
            "domain_name",
            "domain_id",
            "application_credential_name",
            "application_credential_id",
            "application_credential_secret",
            "refresh_interval",
            "availability",
        ],
        &mut d,
        r,
    );
    ints(m, &["port"], &mut d, r);
    if let Some(v) = m.text("all_tenants", r) {
        d.push(("all_tenants".into(), Val::Bool(super::yaml::truthy(&v))));
    }
    super::client::tls_key(m, &mut d, r);
    d
}

fn ec2(m: &mut Map<'_>, r: &mut Report) -> Vec<(String, Val)> {
    let mut d = Vec::new();
    texts(
        m,
        &["endpoint", "region", "access_key", "secret_key", "profile", "role_arn", "external_id", "refresh_interval"],
        &mut d,
        r,
    );
    ints(m, &["port"], &mut d, r);
    let mut filters: Vec<(String, Val)> = Vec::new();
    for (j, f) in list(&m.key("filters"), m.get("filters"), r).iter().enumerate() {
        let fk = format!("{}[{j}]", m.key("filters"));
        let mut fm = Map::new(fk.clone(), f, r);
        let (name, values) = (fm.text("name", r), fm.texts("values", r));
        fm.finish(r, "no tailship equivalent");
        match name {
            Some(n) if !values.is_empty() => filters.push((n, Val::strs(&values))),
            _ => r.refuse(fk, "Promtail needs a filter's name and at least one value"),
        }
    }
    if !filters.is_empty() {
        d.push(("filters".into(), Val::Table(filters)));
    }
    tls_and_proxy(m, &mut d, r);
    d
}

fn azure(m: &mut Map<'_>, r: &mut Report) -> Vec<(String, Val)> {
    let mut d = Vec::new();
    match m.text("subscription_id", r) {
        Some(v) => d.push(("subscription_id".into(), Val::str(v))),
        None => r.refuse(m.key("subscription_id"), "Promtail needs the Azure subscription_id"),
    }
    texts(
        m,
        &[
            "environment",
            "tenant_id",
            "client_id",
            "client_secret",
            "authentication_method",
            "resource_group",
            "refresh_interval",
        ],
        &mut d,
        r,
    );
    ints(m, &["port"], &mut d, r);
    tls_and_proxy(m, &mut d, r);
    d
}
