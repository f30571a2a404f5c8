//! Promtail's `server`, `clients` and `positions` as tailship's `[server]`,
//! `[client]` and `[positions]`.

use super::render::{Section, Val};
use super::yaml::{list, truthy, Map, Report};
use yaml_rust2::Yaml;

/// The largest batch tailship sends (a real service fails bigger requests).
const MAX_BATCH_BYTES: i64 = crate::config::MAX_BATCH_BYTES as i64;

/// `server`: the metrics endpoint.
pub fn server(y: Option<&Yaml>, out: &mut Section, r: &mut Report) {
    let Some(y) = y else { return };
    let mut m = Map::new("server", y, r);
    let port = m.text("http_listen_port", r);
    let addr = m.text("http_listen_address", r);
    if port.is_some() || addr.is_some() {
        // Promtail listens on every interface by default (and on port 80).
        let addr = addr.filter(|a| !a.is_empty()).unwrap_or_else(|| "0.0.0.0".into());
        let port = port.unwrap_or_else(|| "80".into());
        let listen = if addr.contains(':') { format!("[{addr}]:{port}") } else { format!("{addr}:{port}") };
        out.set_noted("listen", Val::str(listen), "/metrics, /healthz and /ready (Promtail: server.http_listen_*)");
    }
    if let Some(p) = m.text("grpc_listen_port", r) {
        if p != "0" {
            r.note(m.key("grpc_listen_port"), "tailship serves no gRPC");
        }
    }
    for k in ["log_level", "log_format"] {
        if m.get(k).is_some() {
            r.note(m.key(k), "tailship takes its log level from RUST_LOG and its format from --log-format");
        }
    }
    if m.text("disable", r).is_some_and(|v| truthy(&v)) {
        out.set_noted("listen", Val::str(""), "off, as Promtail's server.disable");
    }
    m.finish(r, "no tailship equivalent");
}

/// One converted Promtail client.
pub struct Client {
    /// Its `[client]` or `[[clients]]` table (with `name` first when there are several).
    pub section: Section,
    /// Its `external_labels`.
    pub external: Vec<(String, String)>,
}

/// `clients` (or the old single `client`), each converted; none when the
/// config has neither (reported).
pub fn clients(root: &mut Map<'_>, r: &mut Report) -> Vec<Client> {
    let items: Vec<(String, &Yaml)> = match (root.get("clients"), root.get("client")) {
        (Some(many), _) => {
            list("clients", Some(many), r).iter().enumerate().map(|(i, y)| (format!("clients[{i}]"), y)).collect()
        }
        (None, Some(one)) => vec![("client".to_string(), one)],
        (None, None) => {
            r.skip("clients", "missing: [client] keeps tailship's default URL, change it");
            return Vec::new();
        }
    };
    let several = items.len() > 1;
    let mut names = std::collections::HashSet::new();
    items
        .into_iter()
        .enumerate()
        .map(|(i, (key, y))| {
            let mut section = Section::default();
            if several {
                let given = y["name"].as_str().map(client_name).filter(|n| !n.is_empty());
                let mut name = given.unwrap_or_else(|| format!("client-{i}"));
                if !names.insert(name.clone()) {
                    name = format!("{name}-{i}");
                    names.insert(name.clone());
                }
                section.set("name", Val::str(name));
            }
            let external = client(key, y, &mut section, r);
            Client { section, external }
        })
        .collect()
}

/// A client name tailship accepts (letters, digits, `_`, `-`, `.`).
fn client_name(s: &str) -> String {
    s.chars().map(|c| if c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.') { c } else { '-' }).collect()
}

/// One Promtail client as tailship's client table; returns its `external_labels`.
fn client(key: String, y: &Yaml, out: &mut Section, r: &mut Report) -> Vec<(String, String)> {
    let mut m = Map::new(key, y, r);
    if let Some(url) = m.text("url", r) {
        push_url(&m, &url, out, r);
    }
    if let Some(t) = m.text("tenant_id", r) {
        out.set("tenant_id", Val::str(t));
    }
    batch(&mut m, out, r);
    if let Some(t) = m.text("timeout", r) {
        out.set("timeout", Val::str(t));
    }
    let mut proxy = Vec::new();
    proxy_keys(&mut m, &mut proxy, r);
    for (k, v) in proxy {
        out.set(&k, v);
    }
    let headers = m.pairs("headers", r);
    if !headers.is_empty() {
        out.set("headers", Val::pairs(&headers));
    }
    auth(&mut m, out, r);
    oauth2(&mut m, out, r);
    if let Some(tls) = tls(&mut m, r) {
        out.set("tls", tls);
    }
    if let Some(y) = m.get("backoff_config") {
        backoff(m.key("backoff_config"), y, out, r);
    }
    if m.text("drop_rate_limited_batches", r).is_some_and(|v| truthy(&v)) {
        r.note(
            m.key("drop_rate_limited_batches"),
            "tailship retries a 429 with backoff and never drops the batch (Promtail drops it): lines wait on disk",
        );
    }
    if m.text("follow_redirects", r).is_some_and(|v| !truthy(&v)) {
        out.set("follow_redirects", Val::Bool(false));
    }
    if m.text("enable_http2", r).is_some_and(|v| !truthy(&v)) {
        out.set("http2", Val::Bool(false));
    }
    let external = m.pairs("external_labels", r);
    // Its name in Promtail's metrics; tailship's `name` was taken from it.
    m.ignore("name");
    m.finish(r, "no tailship equivalent");
    external
}

/// A client's `url` (at `m`): the base URL and `api_prefix` of a push URL.
fn push_url(m: &Map<'_>, url: &str, out: &mut Section, r: &mut Report) {
    let (base, prefix) = split_url(url);
    out.set("url", Val::str(base));
    match prefix {
        Some(p) => out.set("api_prefix", Val::str(p)),
        // Known when the config is loaded: a URL ending in /push is split there.
        None if url.contains("${") => r.note(
            m.key("url"),
            "the push URL comes from the environment: when tailship loads the config, a URL ending in \
             /push is split into url and api_prefix (one that does not gets api_prefix + /push added)",
        ),
        None => r.skip(m.key("url"), "a URL that does not end in /push: tailship pushes to url + api_prefix + /push"),
    }
}

/// A client's `batchwait` and `batchsize` as the `batch` table (the size
/// lowered to the largest batch a real service accepts).
fn batch(m: &mut Map<'_>, out: &mut Section, r: &mut Report) {
    if let Some(w) = m.text("batchwait", r) {
        out.set("batch", Val::Table(vec![("max_wait".into(), Val::str(w))]));
    }
    if let Some(b) = m.text("batchsize", r).and_then(|b| b.parse::<i64>().ok()) {
        if b > MAX_BATCH_BYTES {
            r.note(m.key("batchsize"), "lowered to 4 MiB, the largest batch a real service accepts");
        }
        let mut t = match out.get("batch") {
            Some(Val::Table(t)) => t.clone(),
            _ => Vec::new(),
        };
        t.insert(0, ("max_bytes".into(), Val::Int(b.min(MAX_BATCH_BYTES))));
        out.set("batch", Val::Table(t));
    }
}

/// A client's `backoff_config` (at `key`) as the `retry` table.
fn backoff(key: String, y: &Yaml, out: &mut Section, r: &mut Report) {
    let mut b = Map::new(key, y, r);
    let mut retry = Vec::new();
    for (ours, theirs) in [("min_backoff", "min_period"), ("max_backoff", "max_period")] {
        if let Some(v) = b.text(theirs, r) {
            retry.push((ours.to_string(), Val::str(v)));
        }
    }
    if let Some(n) = b.text("max_retries", r).and_then(|n| n.parse::<i64>().ok()) {
        retry.push(("max_retries".into(), Val::Int(n)));
    }
    if !retry.is_empty() {
        out.set("retry", Val::Table(retry));
    }
    b.finish(r, "no tailship equivalent");
}

/// A Prometheus `tls_config` at `key` as tailship's `tls` table.
pub fn tls_config(key: String, y: &Yaml, r: &mut Report) -> Vec<(String, Val)> {
    let mut t = Map::new(key, y, r);
    let mut tls = Vec::new();
    for k in ["ca_file", "ca", "cert_file", "cert", "key_file", "key", "server_name"] {
        if let Some(v) = t.text(k, r) {
            tls.push((k.to_string(), Val::str(v)));
        }
    }
    if let Some(v) = t.text("insecure_skip_verify", r) {
        tls.push(("insecure_skip_verify".into(), Val::Bool(truthy(&v))));
    }
    t.finish(
        r,
        "no tailship equivalent (tailship's tls takes ca_file, ca, cert_file, cert, key_file, key, server_name, \
         insecure_skip_verify)",
    );
    tls
}

/// `tls_config` of a discovery entry as its table's `tls` (when it says anything).
pub fn tls_key(m: &mut Map<'_>, d: &mut Vec<(String, Val)>, r: &mut Report) {
    if let Some(y) = m.get("tls_config") {
        let tls = tls_config(m.key("tls_config"), y, r);
        if !tls.is_empty() {
            d.push(("tls".into(), Val::Table(tls)));
        }
    }
}

/// A Prometheus `basic_auth` at `key` as tailship's `basic_auth` table.
pub fn basic_auth(key: String, y: &Yaml, r: &mut Report) -> Vec<(String, Val)> {
    let mut b = Map::new(key, y, r);
    let mut t = Vec::new();
    for k in ["username", "username_file", "password", "password_file"] {
        if let Some(v) = b.text(k, r) {
            t.push((k.to_string(), Val::str(v)));
        }
    }
    b.finish(
        r,
        "no tailship equivalent (tailship's basic_auth takes username, username_file, password, password_file)",
    );
    t
}

/// `basic_auth`, `authorization`, `bearer_token(_file)`.
pub fn auth(m: &mut Map<'_>, out: &mut Section, r: &mut Report) {
    if let Some(y) = m.get("basic_auth") {
        out.set("basic_auth", Val::Table(basic_auth(m.key("basic_auth"), y, r)));
    }
    if let Some(t) = m.text("bearer_token", r) {
        out.set("bearer_token", Val::str(t));
    }
    if let Some(t) = m.text("bearer_token_file", r) {
        out.set("bearer_token_file", Val::str(t));
    }
    if let Some(y) = m.get("authorization") {
        let mut a = Map::new(m.key("authorization"), y, r);
        let kind = a.text("type", r).unwrap_or_else(|| "Bearer".into());
        if kind != "Bearer" {
            r.skip(a.key("type"), format!("tailship sends `Bearer` tokens only, not `{kind}`"));
        } else {
            if let Some(c) = a.text("credentials", r) {
                out.set("bearer_token", Val::str(c));
            }
            if let Some(c) = a.text("credentials_file", r) {
                out.set("bearer_token_file", Val::str(c));
            }
        }
        a.finish(r, "no tailship equivalent");
    }
}

/// A `tls_config` block as tailship's `tls` table (None when it sets nothing).
fn tls(m: &mut Map<'_>, r: &mut Report) -> Option<Val> {
    let y = m.get("tls_config")?;
    let tls = tls_config(m.key("tls_config"), y, r);
    (!tls.is_empty()).then_some(Val::Table(tls))
}

/// `oauth2`: the client credentials grant, key for key.
pub fn oauth2(m: &mut Map<'_>, out: &mut Section, r: &mut Report) {
    let Some(y) = m.get("oauth2") else { return };
    let mut o = Map::new(m.key("oauth2"), y, r);
    let mut t = Vec::new();
    for k in ["client_id", "client_secret", "client_secret_file", "token_url"] {
        if let Some(v) = o.text(k, r) {
            t.push((k.to_string(), Val::str(v)));
        }
    }
    let scopes = o.texts("scopes", r);
    if !scopes.is_empty() {
        t.push(("scopes".into(), Val::strs(&scopes)));
    }
    let params = o.pairs("endpoint_params", r);
    if !params.is_empty() {
        t.push(("endpoint_params".into(), Val::pairs(&params)));
    }
    proxy_keys(&mut o, &mut t, r);
    if let Some(tls) = tls(&mut o, r) {
        t.push(("tls".into(), tls));
    }
    out.set("oauth2", Val::Table(t));
    o.finish(
        r,
        "no tailship equivalent (tailship's oauth2 takes client_id, client_secret, client_secret_file, scopes, \
         token_url, endpoint_params, tls_config, proxy_url, no_proxy, proxy_connect_header)",
    );
}

/// A Promtail push URL as tailship's base URL and API prefix:
/// `http://loki:3100/loki/api/v1/push` -> (`http://loki:3100`, `/loki/api/v1`).
/// No prefix when the URL does not end in `/push`.
pub fn split_url(url: &str) -> (String, Option<String>) {
    let url = url.trim_end_matches('/');
    let path_at = url.find("://").map(|i| i + 3).and_then(|s| url[s..].find('/').map(|p| s + p));
    let Some(at) = path_at else { return (url.to_string(), None) };
    let (base, path) = url.split_at(at);
    match path.strip_suffix("/push") {
        Some(prefix) => (base.to_string(), Some(prefix.to_string())),
        None => (url.to_string(), None),
    }
}

/// Where the converted config keeps tailship's positions file: the packaged
/// service's state directory (`StateDirectory=tailship` in
/// systemd/tailship.service), the only one it may write. Beside Promtail's
/// file, as earlier conversions put it, the service could not write it.
pub const SERVICE_POSITIONS: &str = "/var/lib/tailship/positions.json";
/// Where network sources spool (`spool.path`'s default), in the same directory.
pub const SERVICE_SPOOL: &str = "/var/lib/tailship/spool";

/// `positions`: tailship keeps its own positions file (Promtail's YAML
/// offsets cannot be read) where the packaged service can write it, or at
/// `--positions-out`; `--positions` carries Promtail's offsets over into it.
/// The notes name it and the spool, whether or not Promtail's config has
/// `positions`.
pub fn positions(y: Option<&Yaml>, options: &super::Options, out: &mut Section, r: &mut Report) {
    let path = options.positions_out.clone().unwrap_or_else(|| SERVICE_POSITIONS.to_string());
    let service = options.positions_out.is_none();
    let mut m = y.map(|y| Map::new("positions", y, r));
    let promtail = m.as_mut().and_then(|m| m.text("filename", r));
    let key = match &m {
        Some(m) if promtail.is_some() => m.key("filename"),
        _ => "positions".to_string(),
    };
    let comment = if options.carry_positions {
        "Promtail's offsets carried over by convert --positions"
    } else if service {
        "the packaged service's state directory (convert --positions carries Promtail's offsets over)"
    } else {
        "--positions-out (convert --positions carries Promtail's offsets over)"
    };
    out.set_noted("path", Val::str(&path), comment);
    let whose = match &promtail {
        Some(f) => format!("not Promtail's {f}"),
        None => "Promtail kept none".to_string(),
    };
    let place = if service {
        "the packaged service's state directory, /var/lib/tailship (owned by user tailship; the unit may write \
         nowhere else)"
    } else {
        "as --positions-out says: the user tailship runs as must be able to write there (the packaged service may \
         write only /var/lib/tailship)"
    };
    let carried = if options.carry_positions {
        "--positions carried Promtail's offsets over into it, so shipping goes on where Promtail stopped (stop \
         Promtail before starting tailship)"
    } else {
        "convert with `--positions FILE` (Promtail's positions file) to carry Promtail's offsets over (otherwise \
         files already shipped are read again per start_at)"
    };
    r.note(
        key,
        format!(
            "tailship keeps its own positions file ({whose}) at {path} and network sources' spool at \
             {SERVICE_SPOOL} (spool.path): {place}; {carried}"
        ),
    );
    let Some(mut m) = m else { return };
    if let Some(s) = m.text("sync_period", r) {
        out.set("sync_period", Val::str(s));
    }
    if let Some(v) = m.text("ignore_invalid_yaml", r) {
        if truthy(&v) {
            out.set_noted(
                "on_unreadable",
                Val::str("start_fresh"),
                "ignore_invalid_yaml: a positions file that cannot be read is moved aside",
            );
        }
        r.note(
            m.key("ignore_invalid_yaml"),
            "positions.on_unreadable: a positions file that cannot be read or is corrupt stops `tailship run` \
             (exit 2, as Promtail stops on invalid YAML) unless it is \"start_fresh\" (what ignore_invalid_yaml: \
             true converts to): moved aside to .corrupt, files read again per start_at",
        );
    }
    m.finish(r, "no tailship equivalent");
}

/// A discovery entry's HTTP client keys beyond TLS and auth: `proxy_url`
/// is set on `out`; `follow_redirects`, `enable_http2` and
/// `proxy_from_environment` are read, and noted where tailship's client
/// of `what` (the Engine, the API server) does otherwise.
pub fn discovery_http(m: &mut Map<'_>, out: &mut Vec<(String, Val)>, what: &str, r: &mut Report) {
    auth_and_oauth2(m, out, r);
    proxy_keys(m, out, r);
    if m.text("follow_redirects", r).is_some_and(|v| truthy(&v)) {
        r.note(m.key("follow_redirects"), format!("tailship does not follow redirects of {what}"));
    }
    if m.text("enable_http2", r).is_some_and(|v| truthy(&v)) && what.contains("Engine") {
        r.note(m.key("enable_http2"), format!("tailship speaks HTTP/1.1 to {what} (its log streams are HTTP/1.1)"));
    }
}

/// `proxy_url`, `no_proxy` and `proxy_connect_header` (each header's
/// values joined by `, `, as HTTP reads a repeated header).
fn proxy_keys(m: &mut Map<'_>, out: &mut Vec<(String, Val)>, r: &mut Report) {
    if let Some(p) = m.text("proxy_url", r) {
        out.push(("proxy_url".into(), Val::str(p)));
    }
    if let Some(n) = m.text("no_proxy", r) {
        out.push(("no_proxy".into(), Val::str(n)));
    }
    let key = m.key("proxy_connect_header");
    if let Some(Yaml::Hash(h)) = m.get("proxy_connect_header") {
        let mut headers = Vec::new();
        for (k, v) in h {
            let Some(name) = super::yaml::scalar(k) else { continue };
            let values: Vec<String> = match v {
                Yaml::Array(a) => a.iter().filter_map(super::yaml::scalar).collect(),
                other => super::yaml::scalar(other).into_iter().collect(),
            };
            headers.push((name, Val::str(values.join(", "))));
        }
        if out.iter().all(|(k, _)| k != "proxy_url") {
            r.skip(key, "tailship sends proxy headers to a proxy_url only, not to the environment's proxy");
        } else if !headers.is_empty() {
            out.push(("proxy_connect_header".into(), Val::Table(headers)));
        }
    } else if m.get("proxy_connect_header").is_some() {
        r.refuse(key, "not a mapping of header names to values");
    }
    let direct = !out.iter().any(|(k, _)| k == "proxy_url");
    if m.text("proxy_from_environment", r).is_some_and(|v| !truthy(&v)) && direct {
        r.note(
            m.key("proxy_from_environment"),
            "tailship honours HTTPS_PROXY and NO_PROXY of its environment whenever no proxy_url is set",
        );
    }
}

/// `basic_auth`, `authorization`, `bearer_token(_file)` and `oauth2` of a
/// discovery entry, as keys of its table.
fn auth_and_oauth2(m: &mut Map<'_>, out: &mut Vec<(String, Val)>, r: &mut Report) {
    let mut a = Section { comments: Vec::new(), entries: Vec::new() };
    auth(m, &mut a, r);
    oauth2(m, &mut a, r);
    out.extend(a.entries.into_iter().map(|(k, v, _)| (k, v)));
}

#[cfg(test)]
mod tests {
    use super::split_url;

    #[test]
    fn push_urls_split_into_base_and_prefix() {
        let s = |u: &str| split_url(u);
        assert_eq!(s("http://loki:3100/loki/api/v1/push"), ("http://loki:3100".into(), Some("/loki/api/v1".into())));
        assert_eq!(
            s("https://u:p@logs.example.com/api/prom/push/"),
            ("https://u:p@logs.example.com".into(), Some("/api/prom".into()))
        );
        assert_eq!(s("http://loki:3100/push"), ("http://loki:3100".into(), Some(String::new())));
        assert_eq!(s("http://loki:3100"), ("http://loki:3100".into(), None));
    }
}
