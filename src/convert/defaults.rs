//! Promtail's defaults, taken out of a config before it is converted.
//!
//! A config copied from Promtail's `/config` page (the running config with
//! every default written out) is a common start of a migration. In Promtail a
//! key at its default is the same as no key, so it is here too: such keys are
//! removed first and change nothing (none is listed as not translated), and
//! an empty list (`static_configs: []`) is no list. The page also writes
//! `external_labels` as a YAML string and each secret as `<secret>` (a
//! URL's password as `********`): the first is read back as the mapping it
//! was; each secret becomes a `${SECRET_...}` reference named after its key
//! (no value stands in for it, so `tailship check` says it is unset until
//! the variable is set or the value written), reported by key.
//!
//! The defaults below are Promtail 3.6's, as its `/config` page prints them.

use yaml_rust2::{Yaml, YamlLoader};

/// Promtail's `server` block (also the `server` of `loki_push_api`, where
/// `register_instrumentation` defaults to false instead).
const SERVER: &str = r#"
http_listen_network: tcp
http_listen_address: ""
http_listen_port: 80
http_listen_conn_limit: 0
grpc_listen_network: tcp
grpc_listen_address: ""
grpc_listen_port: 9095
grpc_listen_conn_limit: 0
grpc_collect_max_streams_by_conn: true
proxy_protocol_enabled: false
tls_cipher_suites: ""
tls_min_version: ""
http_tls_config: &tls { cert: "", key: null, client_ca: "", cert_file: "", key_file: "", client_auth_type: "", client_ca_file: "" }
grpc_tls_config: *tls
report_grpc_codes_in_instrumentation_label_enabled: false
graceful_shutdown_timeout: 30s
http_server_read_timeout: 30s
http_server_read_header_timeout: 0s
http_server_write_timeout: 30s
http_server_idle_timeout: 2m
http_log_closed_connections_without_response_enabled: false
grpc_server_max_recv_msg_size: 4194304
grpc_server_max_send_msg_size: 4194304
grpc_server_max_concurrent_streams: 100
grpc_server_max_connection_idle: 2562047h47m16.854775807s
grpc_server_max_connection_age: 2562047h47m16.854775807s
grpc_server_max_connection_age_grace: 2562047h47m16.854775807s
grpc_server_keepalive_time: 2h
grpc_server_keepalive_timeout: 20s
grpc_server_min_time_between_pings: 5m
grpc_server_ping_without_stream_allowed: false
grpc_server_num_workers: 0
grpc_server_stats_tracking_enabled: true
grpc_server_recv_buffer_pools_enabled: false
log_format: logfmt
log_level: info
log_source_ips_enabled: false
log_source_ips_full: false
log_source_ips_header: ""
log_source_ips_regex: ""
log_request_headers: false
log_request_at_info_level_enabled: false
log_request_exclude_headers_list: ""
trace_request_headers: false
trace_request_exclude_headers_list: ""
http_path_prefix: ""
cluster_validation:
  label: ""
  grpc: { enabled: false, soft_validation: false }
  http: { enabled: false, soft_validation: false, excluded_paths: "", excluded_user_agents: "" }
external_url: ""
health_check_target: null
disable: false
profiling_enabled: false
enable_runtime_reload: false
"#;

/// A client (`clients[]`); the old single `client` defaults to the same
/// but for an empty URL and no redirects or HTTP/2.
const CLIENT: &str = r#"
batchwait: 1s
batchsize: 1048576
backoff_config: { min_period: 500ms, max_period: 5m, max_retries: 10 }
timeout: 10s
tenant_id: ""
drop_rate_limited_batches: false
"#;

/// What a scrape config holds by default, by key.
const SCRAPE: &str = r#"
static_configs: []
relabel_configs: [{ separator: ";", regex: "(.*)", replacement: "$1", action: replace }]
syslog:
  listen_protocol: ""
  labels: {}
  idle_timeout: 0s
  label_structured_data: false
  use_incoming_timestamp: false
  use_rfc5424_message: false
  syslog_format: rfc5424
  max_message_length: 0
docker_sd_configs:
  - { follow_redirects: true, enable_http2: true, port: 80, filters: [], host_networking_host: localhost,
      refresh_interval: 1m, match_first_network: true }
journal: { max_age: "", json: false, path: "", matches: "" }
gelf: { labels: {}, use_incoming_timestamp: false }
kubernetes_sd_configs: [{ kubeconfig_file: "", follow_redirects: true, enable_http2: true, selectors: [] }]
consul_sd_configs:
  - { tag_separator: ",", scheme: http, allow_stale: true, refresh_interval: 30s, follow_redirects: true,
      enable_http2: true }
consulagent_sd_configs: [{ tag_separator: ",", scheme: http, allow_stale: true, refresh_interval: 30s }]
file_sd_configs: [{ refresh_interval: 5m }]
"#;

/// The rest of the top level.
const TOP: &str = r#"
positions: { sync_period: 10s, ignore_invalid_yaml: false }
target_config: { sync_period: 10s, stdin: false }
limits_config:
  readline_rate_enabled: false
  readline_rate: 10000
  readline_burst: 10000
  readline_rate_drop: true
  max_streams: 0
  max_line_size: 0B
  max_line_size_truncate: false
wal: { enabled: false, dir: "", cleanSegmentsOlderThan: 0s, watchConfig: { minReadFrequency: 0s, maxReadFrequency: 0s } }
global: { file_watch_config: { min_poll_frequency: 250ms, max_poll_frequency: 250ms } }
"#;

/// The text Promtail's `/config` page writes for a secret.
const HIDDEN: &str = "<secret>";

/// A URL's password as the page writes it: `********`, percent-encoded.
const HIDDEN_URL_PASSWORD: [&str; 2] = ["%2A%2A%2A%2A%2A%2A%2A%2A", "********"];

/// A secret the page hid: its key, and the variable the converted config
/// reads it from instead.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hidden {
    pub key: String,
    pub var: String,
}
/// Promtail's defaults as one document: the top level, with `server`,
/// `client`, `clients[]` and `scrape_configs[]`.
fn table() -> Option<Yaml> {
    let load = |s: &str| YamlLoader::load_from_str(s).ok().and_then(|d| d.into_iter().next());
    let with = |base: &str, extra: &[(&str, Yaml)]| -> Option<Yaml> {
        let Yaml::Hash(mut h) = load(base)? else { return None };
        for (k, v) in extra {
            h.insert(Yaml::String((*k).into()), v.clone());
        }
        Some(Yaml::Hash(h))
    };
    let text = |s: &str| Yaml::String(s.into());
    let Yaml::Hash(mut scrape) = load(SCRAPE)? else { return None };
    let push_server = with(SERVER, &[("register_instrumentation", Yaml::Boolean(false))])?;
    let push = with("max_send_msg_size: 104857600\nlabels: {}", &[("server", push_server)])?;
    scrape.insert(text("loki_push_api"), push);
    let Yaml::Hash(mut top) = load(TOP)? else { return None };
    top.insert(text("server"), with(SERVER, &[("register_instrumentation", Yaml::Boolean(true))])?);
    let off = [("follow_redirects", Yaml::Boolean(false)), ("enable_http2", Yaml::Boolean(false)), ("url", text(""))];
    top.insert(text("client"), with(CLIENT, &off)?);
    let on = [("follow_redirects", Yaml::Boolean(true)), ("enable_http2", Yaml::Boolean(true))];
    top.insert(text("clients"), Yaml::Array(vec![with(CLIENT, &on)?]));
    top.insert(text("scrape_configs"), Yaml::Array(vec![Yaml::Hash(scrape)]));
    Some(Yaml::Hash(top))
}

/// Whether `doc` is a copy of Promtail's `/config` page: only the page
/// writes all of these (each at its default unless set).
pub fn is_page(doc: &Yaml) -> bool {
    ["global", "limits_config", "target_config", "wal", "tracing"].iter().all(|k| !doc[*k].is_badvalue())
}

/// Relabel rules written as the `/config` page writes them: a
/// `replacement` of `${1}` as `$1`, the default (Go's regexp reads both
/// alike; the page of a Promtail run with `-config.expand-env=true` shows
/// `${1}` expanded to nothing and leaves the key out), and the `action` in
/// lower case (`Replace` is `replace`). Defaults then go as they do.
fn canonical_relabel_rules(doc: &mut Yaml) {
    let Some(Yaml::Array(scrapes)) = doc.as_mut_hash().and_then(|h| h.get_mut(&Yaml::String("scrape_configs".into())))
    else {
        return;
    };
    for scrape in scrapes {
        let Some(Yaml::Array(rules)) =
            scrape.as_mut_hash().and_then(|h| h.get_mut(&Yaml::String("relabel_configs".into())))
        else {
            continue;
        };
        for rule in rules.iter_mut().filter_map(Yaml::as_mut_hash) {
            let key = Yaml::String("replacement".into());
            if rule.get(&key).and_then(Yaml::as_str) == Some("${1}") {
                rule.insert(key, Yaml::String("$1".into()));
            }
            // Prometheus reads an action in any case; the page writes it lower.
            let key = Yaml::String("action".into());
            if let Some(a) = rule.get(&key).and_then(Yaml::as_str).map(str::to_ascii_lowercase) {
                rule.insert(key, Yaml::String(a));
            }
        }
    }
}

/// On a `/config` page (see [`is_page`]), a relabel rule's empty keys as
/// they were written: the page leaves out an empty `separator` (Go's
/// `omitempty`; it writes every other rule's, `;` by default), so a rule
/// without one had `separator: ""`; and it writes an empty `regex` as
/// `regex: null` (the default, `(.*)`, it leaves out), which had `regex: ""`.
pub fn restore_empty_relabel_keys(doc: &mut Yaml) {
    let Some(Yaml::Array(scrapes)) = doc.as_mut_hash().and_then(|h| h.get_mut(&Yaml::String("scrape_configs".into())))
    else {
        return;
    };
    let key = |k: &str| Yaml::String(k.into());
    for scrape in scrapes {
        let Some(Yaml::Array(rules)) = scrape.as_mut_hash().and_then(|h| h.get_mut(&key("relabel_configs"))) else {
            continue;
        };
        for rule in rules.iter_mut().filter_map(Yaml::as_mut_hash) {
            if !rule.contains_key(&key("separator")) {
                rule.insert(key("separator"), key(""));
            }
            if rule.get(&key("regex")).is_some_and(|r| matches!(r, Yaml::Null)) {
                rule.insert(key("regex"), key(""));
            }
        }
    }
}

/// On a `/config` page (see [`is_page`]), the relabel rules whose
/// `replacement` has no `$` while their regex captures, and starts or ends
/// with a joining character: where Promtail ran with
/// `-config.expand-env=true`, a `${1}` in it was expanded to nothing
/// (`${1}-x` shows as `-x`), and the page cannot tell. Their keys.
pub fn replacements_to_check(doc: &Yaml) -> Vec<String> {
    let mut out = Vec::new();
    for (i, scrape) in doc["scrape_configs"].as_vec().into_iter().flatten().enumerate() {
        for (j, rule) in scrape["relabel_configs"].as_vec().into_iter().flatten().enumerate() {
            let action = rule["action"].as_str().unwrap_or("replace");
            let captures = rule["regex"]
                .as_str()
                .is_some_and(|re| crate::pipeline::re2::compile(re).is_ok_and(|c| c.captures_len() > 1));
            // What is left of `${1}-x` or `a/${1}`: text that starts or ends a join.
            let joint = |c: Option<char>| c.is_some_and(|c| "-_.:/@,;| ".contains(c));
            let constant = rule["replacement"]
                .as_str()
                .is_some_and(|r| !r.contains('$') && (joint(r.chars().next()) || joint(r.chars().last())));
            if action.eq_ignore_ascii_case("replace") && captures && constant {
                out.push(format!("scrape_configs[{i}].relabel_configs[{j}].replacement"));
            }
        }
    }
    out
}

/// Takes Promtail's defaults out of `doc` (see the module's header); returns
/// the secrets the `/config` page hid, each now a `${SECRET_...}` reference.
pub fn remove(doc: &mut Yaml) -> Vec<Hidden> {
    canonical_durations(doc);
    canonical_relabel_rules(doc);
    if let Some(Yaml::Array(scrapes)) =
        doc.as_mut_hash().and_then(|h| h.get_mut(&Yaml::String("scrape_configs".into())))
    {
        scrapes.iter_mut().for_each(own_node_selectors);
    }
    if let Some(defaults) = table() {
        strip(doc, &defaults);
    }
    if let Yaml::Hash(top) = doc {
        if let Some(Yaml::Array(clients)) = top.get_mut(&Yaml::String("clients".into())) {
            for c in clients {
                read_back_external_labels(c);
            }
        }
        if let Some(c) = top.get_mut(&Yaml::String("client".into())) {
            read_back_external_labels(c);
        }
    }
    let mut hidden = Vec::new();
    find_hidden(doc, "", &mut hidden);
    hidden
}

/// Removes from `v` each key at its value in `d`, recursively; a mapping
/// left empty and an empty list go too. Keys `d` does not name (a
/// pipeline's stages among them) are left as they are.
fn strip(v: &mut Yaml, d: &Yaml) {
    let (Yaml::Hash(vh), Yaml::Hash(dh)) = (v, d) else { return };
    let keys: Vec<Yaml> = vh.keys().cloned().collect();
    for k in keys {
        let Some(dv) = dh.get(&k) else { continue };
        let Some(child) = vh.get_mut(&k) else { continue };
        let remove = match (child, dv) {
            (c @ Yaml::Hash(_), Yaml::Hash(_)) => {
                strip(c, dv);
                matches!(c, Yaml::Hash(h) if h.is_empty())
            }
            (Yaml::Array(items), Yaml::Array(ds)) => {
                if let Some(d0) = ds.first() {
                    items.iter_mut().for_each(|it| strip(it, d0));
                }
                items.is_empty()
            }
            (c, dv) => same(c, dv),
        };
        if remove {
            vh.remove(&k);
        }
    }
}

/// Whether a value equals a default: the same text, or the same duration
/// however written (`2m0s` and `2m`).
fn same(v: &Yaml, d: &Yaml) -> bool {
    match (scalar(v), scalar(d)) {
        (Some(a), Some(b)) if a == b => true,
        (Some(a), Some(b)) => matches!(
            (go_duration(&a), go_duration(&b)),
            (Some(x), Some(y)) if x == y
        ),
        _ => matches!((v, d), (Yaml::Null, Yaml::Null)),
    }
}

fn scalar(v: &Yaml) -> Option<String> {
    match v {
        Yaml::String(s) | Yaml::Real(s) => Some(s.clone()),
        Yaml::Integer(i) => Some(i.to_string()),
        Yaml::Boolean(b) => Some(b.to_string()),
        _ => None,
    }
}

/// A Go duration (`1h2m3.5s`, `500ms`, `0s`) in nanoseconds.
fn go_duration(s: &str) -> Option<u128> {
    if s == "0" {
        return Some(0);
    }
    let mut total = 0u128;
    let mut rest = s;
    while !rest.is_empty() {
        let num_len = rest.bytes().take_while(|b| b.is_ascii_digit() || *b == b'.').count();
        let (num, after) = rest.split_at(num_len);
        let unit_len = after.bytes().take_while(|b| b.is_ascii_alphabetic() || *b == 0xC2 || *b == 0xB5).count();
        let (unit, next) = after.split_at(unit_len);
        let scale: f64 = match unit {
            "ns" => 1.0,
            "us" | "µs" => 1e3,
            "ms" => 1e6,
            "s" => 1e9,
            "m" => 60e9,
            "h" => 3600e9,
            _ => return None,
        };
        let (whole, frac) = num.split_once('.').unwrap_or((num, ""));
        let whole: u128 = whole.parse().ok()?;
        let frac_value: f64 = if frac.is_empty() { 0.0 } else { format!("0.{frac}").parse().ok()? };
        total += whole * scale as u128 + (frac_value * scale).round() as u128;
        rest = next;
    }
    Some(total)
}

/// Keys whose values are no config of Promtail's own (labels, stages,
/// relabel rules): left as written.
const FREE_FORM: &[&str] = &["pipeline_stages", "labels", "static_configs", "relabel_configs", "external_labels"];

/// Each duration of Promtail's own keys written one way (`1m`, `1h30m`,
/// `500ms`): the page writes Go's form (`1m0s`, `2h0m0s`) where the
/// original had `60s` or `2h`, which are the same value.
fn canonical_durations(v: &mut Yaml) {
    match v {
        Yaml::Hash(h) => {
            for (k, child) in h.iter_mut() {
                let Some(k) = k.as_str() else { continue };
                if FREE_FORM.contains(&k) {
                    continue;
                }
                let timed = ["timeout", "interval", "period", "wait", "age", "time", "frequency", "duration", "older"]
                    .iter()
                    .any(|w| k.to_ascii_lowercase().contains(w));
                match child {
                    Yaml::String(s) if timed && s.bytes().any(|b| b.is_ascii_alphabetic()) => {
                        if let Some(ns) = go_duration(s) {
                            let d = std::time::Duration::from_nanos(u64::try_from(ns).unwrap_or(u64::MAX));
                            *s = crate::util::format_duration(d);
                        }
                    }
                    c => canonical_durations(c),
                }
            }
        }
        Yaml::Array(items) => items.iter_mut().for_each(canonical_durations),
        _ => {}
    }
}

/// Promtail adds to each pod discovery a selector of its own node
/// (`{role: pod, field: spec.nodeName=HOST}`), which its page shows;
/// tailship always watches its own node's pods, so such a selector is no
/// setting and goes.
fn own_node_selectors(scrape: &mut Yaml) {
    let Some(Yaml::Array(sds)) =
        scrape.as_mut_hash().and_then(|h| h.get_mut(&Yaml::String("kubernetes_sd_configs".into())))
    else {
        return;
    };
    for sd in sds {
        let Some(Yaml::Array(selectors)) = sd.as_mut_hash().and_then(|h| h.get_mut(&Yaml::String("selectors".into())))
        else {
            continue;
        };
        selectors.retain(|sel| {
            let Yaml::Hash(h) = sel else { return true };
            let own = h.len() == 2
                && sel["role"].as_str() == Some("pod")
                && sel["field"].as_str().is_some_and(|f| f.starts_with("spec.nodeName=") && !f.contains(','));
            !own
        });
    }
}

/// The page writes `external_labels` as a YAML string (`"cluster: prod\n"`):
/// read back as the mapping it was.
fn read_back_external_labels(client: &mut Yaml) {
    let Yaml::Hash(h) = client else { return };
    let key = Yaml::String("external_labels".into());
    let Some(Yaml::String(text)) = h.get(&key) else { return };
    let parsed = YamlLoader::load_from_str(text).ok().and_then(|docs| docs.into_iter().next());
    match parsed {
        Some(m @ Yaml::Hash(_)) => {
            h.insert(key, m);
        }
        Some(Yaml::Null) | None if text.trim().is_empty() || text.trim() == "{}" => {
            h.remove(&key);
        }
        _ => {}
    }
}

/// Each secret the page hid in `v` (at `path`) as a reference to the
/// variable named after its key (see [`secret_var`]), pushed on `out`.
fn find_hidden(v: &mut Yaml, path: &str, out: &mut Vec<Hidden>) {
    match v {
        Yaml::String(s) if s == HIDDEN => {
            let var = secret_var(path);
            *s = format!("${{{var}}}");
            out.push(Hidden { key: path.to_string(), var });
        }
        Yaml::String(s) if path.ends_with("url") => {
            let Some((head, rest)) = s.split_once("://") else { return };
            let Some((userinfo, host)) = rest.split_once('@') else { return };
            let Some((user, password)) = userinfo.split_once(':') else { return };
            if HIDDEN_URL_PASSWORD.contains(&password) && !host.contains('@') {
                let key = format!("{path} (its password)");
                let var = secret_var(&format!("{path}_password"));
                *s = format!("{head}://{user}:${{{var}}}@{host}");
                out.push(Hidden { key, var });
            }
        }
        Yaml::Hash(h) => {
            for (k, child) in h.iter_mut() {
                let name = scalar(k).unwrap_or_default();
                // Stages, labels and rules are the user's text: `<secret>` there is no secret the page hid.
                if FREE_FORM.contains(&name.as_str()) {
                    continue;
                }
                let p = if path.is_empty() { name } else { format!("{path}.{name}") };
                find_hidden(child, &p, out);
            }
        }
        Yaml::Array(items) => {
            for (i, child) in items.iter_mut().enumerate() {
                find_hidden(child, &format!("{path}[{i}]"), out);
            }
        }
        _ => {}
    }
}

/// The variable a hidden secret at `key` is read from:
/// `clients[0].basic_auth.password` gives `SECRET_CLIENTS_0_BASIC_AUTH_PASSWORD`.
fn secret_var(key: &str) -> String {
    let mut var = String::from("SECRET");
    for part in key.split(|c: char| !c.is_ascii_alphanumeric()).filter(|p| !p.is_empty()) {
        var.push('_');
        var.push_str(&part.to_ascii_uppercase());
    }
    var
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(text: &str) -> Yaml {
        YamlLoader::load_from_str(text).unwrap().remove(0)
    }

    #[test]
    fn the_table_parses_and_names_each_part() {
        let t = table().expect("the defaults parse");
        assert_eq!(t["server"]["register_instrumentation"], Yaml::Boolean(true));
        assert_eq!(t["clients"][0]["follow_redirects"], Yaml::Boolean(true));
        assert_eq!(t["client"]["url"], Yaml::String(String::new()));
        assert_eq!(t["scrape_configs"][0]["relabel_configs"][0]["action"], Yaml::String("replace".into()));
        assert_eq!(t["scrape_configs"][0]["loki_push_api"]["server"]["register_instrumentation"], Yaml::Boolean(false));
        assert_eq!(t["scrape_configs"][0]["syslog"]["syslog_format"], Yaml::String("rfc5424".into()));
        assert_eq!(t["limits_config"]["readline_burst"], Yaml::Integer(10000));
    }

    #[test]
    fn defaults_go_and_the_rest_stays() {
        let mut doc = load(
            "server: { http_listen_port: 9080, http_server_idle_timeout: 2m0s, log_level: info }\n\
             clients: [{ url: http://x, tenant_id: \"\", batchwait: 2s, external_labels: \"a: b\\n\", basic_auth: { password: <secret> } }]\n\
             scrape_configs:\n  - job_name: s\n    static_configs: []\n    syslog: { listen_address: ':1', idle_timeout: 0s }\n    pipeline_stages: [{ labels: { level: null } }]\n",
        );
        let hidden = remove(&mut doc);
        let var = "SECRET_CLIENTS_0_BASIC_AUTH_PASSWORD".to_string();
        assert_eq!(hidden, [Hidden { key: "clients[0].basic_auth.password".into(), var }]);
        assert_eq!(
            doc["clients"][0]["basic_auth"]["password"].as_str(),
            Some("${SECRET_CLIENTS_0_BASIC_AUTH_PASSWORD}")
        );
        assert_eq!(doc["server"], load("http_listen_port: 9080"));
        assert_eq!(doc["clients"][0]["tenant_id"], Yaml::BadValue);
        assert_eq!(doc["clients"][0]["batchwait"], Yaml::String("2s".into()));
        assert_eq!(doc["clients"][0]["external_labels"], load("a: b"));
        assert_eq!(doc["scrape_configs"][0]["static_configs"], Yaml::BadValue);
        assert_eq!(doc["scrape_configs"][0]["syslog"], load("listen_address: ':1'"));
        assert_eq!(doc["scrape_configs"][0]["pipeline_stages"][0]["labels"]["level"], Yaml::Null);
    }

    #[test]
    fn a_stages_own_secret_text_is_no_hidden_secret() {
        let mut doc = load(
            "scrape_configs: [{ pipeline_stages: [{ replace: { expression: 'pw=(\\S+)', replace: '<secret>' } }] }]",
        );
        assert!(remove(&mut doc).is_empty());
        assert_eq!(doc["scrape_configs"][0]["pipeline_stages"][0]["replace"]["replace"].as_str(), Some("<secret>"));
    }

    #[test]
    fn a_urls_hidden_password_becomes_a_reference() {
        let mut doc = load("clients: [{ url: 'http://u:%2A%2A%2A%2A%2A%2A%2A%2A@h:3100/loki/api/v1/push' }]");
        let hidden = remove(&mut doc);
        assert_eq!(hidden[0].key, "clients[0].url (its password)");
        assert_eq!(
            doc["clients"][0]["url"].as_str(),
            Some("http://u:${SECRET_CLIENTS_0_URL_PASSWORD}@h:3100/loki/api/v1/push")
        );
        let mut plain = load("clients: [{ url: 'http://u:pw@h/' }]");
        assert!(remove(&mut plain).is_empty());
    }

    #[test]
    fn go_durations_compare_by_value() {
        assert_eq!(go_duration("2m0s"), go_duration("2m"));
        assert_eq!(go_duration("1h30m"), Some(5_400_000_000_000));
        assert_eq!(go_duration("2562047h47m16.854775807s"), Some(9_223_372_036_854_775_807));
        assert_eq!(go_duration("1.5s"), Some(1_500_000_000));
        assert_eq!(go_duration("10"), None);
    }
}
