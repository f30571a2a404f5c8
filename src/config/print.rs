//! The effective config printed for `tailship check`: TOML with every
//! secret shown as `<redacted>` (a proxy's host shown, its credentials not),
//! and the keys a source's type does not use left out.

use super::{ClientConfig, Config};

/// The effective config as TOML, with every secret shown as `<redacted>`.
pub fn to_redacted_toml(c: &Config) -> String {
    let mut value = match toml::Value::try_from(c) {
        Ok(v) => v,
        Err(e) => return format!("# cannot print config: {e}\n"),
    };
    // Leave out the keys another type of source uses: a stdin source has no
    // files, a journal source no globs, and only a journal has cursors.
    if let Some(sources) = value.get_mut("sources").and_then(toml::Value::as_array_mut) {
        for s in sources.iter_mut().filter_map(toml::Value::as_table_mut) {
            let kind = s.get("type").and_then(toml::Value::as_str).unwrap_or_default().to_string();
            let unused: &[&[&str]] = match kind.as_str() {
                "stdin" => &[FILE_ONLY_KEYS, JOURNAL_ONLY_KEYS],
                "journal" => &[JOURNAL_UNUSED_KEYS],
                "syslog" | "loki_push" | "otlp" | "gelf" | "heroku_drain" => &[FILE_ONLY_KEYS, JOURNAL_ONLY_KEYS],
                _ => &[JOURNAL_ONLY_KEYS],
            };
            for k in unused.iter().copied().flatten() {
                s.remove(*k);
            }
        }
    }
    // No alert rules is no key (`alerts = []` would read as one a config set).
    if let Some(t) = value.as_table_mut() {
        if t.get("alerts").and_then(toml::Value::as_array).is_some_and(|a| a.is_empty()) {
            t.remove("alerts");
        }
    }
    // A proxy's host is shown (a reviewer must see where requests go); only
    // credentials in its URL are secret.
    let shown = |c: &ClientConfig| c.proxy_url.as_ref().map(|p| proxy_shown(p.expose()));
    if let (Some(t), Some(p)) = (value.get_mut("client").and_then(toml::Value::as_table_mut), shown(&c.client)) {
        t.insert("proxy_url".into(), toml::Value::String(p));
    }
    if let Some(list) = value.get_mut("clients").and_then(toml::Value::as_array_mut) {
        for (t, client) in list.iter_mut().zip(&c.clients) {
            if let (Some(t), Some(p)) = (t.as_table_mut(), shown(client)) {
                t.insert("proxy_url".into(), toml::Value::String(p));
            }
        }
    }
    toml::to_string_pretty(&value).unwrap_or_else(|e| format!("# cannot print config: {e}\n"))
}

/// A proxy URL with its credentials (and query) replaced by `<redacted>`.
fn proxy_shown(url: &str) -> String {
    match reqwest::Url::parse(url) {
        Ok(u) => {
            let secret = !u.username().is_empty() || u.password().is_some() || u.query().is_some();
            let host = u.host_str().unwrap_or_default();
            let port = u.port().map(|p| format!(":{p}")).unwrap_or_default();
            let cred = if secret { "<redacted>@" } else { "" };
            format!("{}://{cred}{host}{port}{}", u.scheme(), u.path().trim_end_matches('/'))
        }
        Err(_) => "<redacted>".into(),
    }
}

/// Source keys that mean something for files only.
const FILE_ONLY_KEYS: &[&str] = &["include", "exclude", "start_at", "ignore_older", "scan_interval", "max_open_files"];
/// Source keys that mean something for journal sources only.
const JOURNAL_ONLY_KEYS: &[&str] = &[
    "path",
    "matches",
    "max_age",
    "optional",
    "json",
    "cursor_max_age",
    "unit_label",
    "level_label",
    "address_fields",
];
/// Source keys a journal source does not use.
const JOURNAL_UNUSED_KEYS: &[&str] =
    &["include", "exclude", "ignore_older", "scan_interval", "max_open_files", "partial_line_wait", "multiline"];
