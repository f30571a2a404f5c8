//! Promtail's `metrics` stage as tailship's: the same options under the
//! same names, checked as Promtail checks them (a bad `type` or `action`
//! is refused, as Promtail refuses the config).

use yaml_rust2::Yaml;

use super::pipeline::{Kind, Pipeline, Stage};
use super::render::Val;
use super::yaml::{list, scalar, truthy, Map, Report};

/// The `metrics` stage at `k`.
pub(super) fn convert(p: &mut Pipeline, k: &str, body: &Yaml, r: &mut Report) {
    let Yaml::Hash(h) = body else {
        return r.refuse(k, "empty metric stage configuration (Promtail refuses it too)");
    };
    let mut out = Vec::new();
    for (name, cfg) in h {
        let Some(name) = scalar(name) else { continue };
        if let Some(t) = one(p, &format!("{k}.{name}"), &name, cfg, r) {
            out.push((name, t));
        }
    }
    if !out.is_empty() {
        p.stages.push(Stage::plain(Kind::Metrics(Val::Table(out))));
    }
}

/// One metric of the stage, named `name` at `k`: its table, or `None`
/// when it is refused.
fn one(p: &Pipeline, k: &str, name: &str, cfg: &Yaml, r: &mut Report) -> Option<Val> {
    let mut m = Map::new(k, cfg, r);
    let mut t = Vec::new();
    let kind = m.text("type", r).unwrap_or_default().to_ascii_lowercase();
    if !["counter", "gauge", "histogram"].contains(&kind.as_str()) {
        r.refuse(
            m.key("type"),
            format!("invalid metric type `{kind}`: counter, gauge or histogram (Promtail refuses it too)"),
        );
        return None;
    }
    t.push(("type".to_string(), Val::str(&kind)));
    for key in ["description", "prefix"] {
        if let Some(v) = m.text(key, r) {
            t.push((key.into(), Val::str(v)));
        }
    }
    let prefix = t.iter().find_map(|(key, v)| match v {
        Val::Str(p) if key == "prefix" && !p.is_empty() => Some(p.as_str()),
        _ => None,
    });
    let full = format!("{}{name}", prefix.unwrap_or("promtail_custom_"));
    claim_type(full, &kind, m.key("type"), r)?;
    let source = m.text("source", r);
    if let Some(d) = m.text("max_idle_duration", r) {
        match crate::util::parse_duration(&d) {
            Ok(dur) if dur.as_secs() >= 1 => t.push(("max_idle_duration".into(), Val::str(d))),
            Ok(_) => {
                r.refuse(m.key("max_idle_duration"), "less than 1s (Promtail refuses it too)");
                return None;
            }
            Err(e) => {
                r.refuse(m.key("max_idle_duration"), e);
                return None;
            }
        }
    }
    let (opts, match_all) = config(&mut m, &kind, r)?;
    let read = source.clone().unwrap_or_else(|| name.to_string());
    if !(p.extracted(&read) || kind == "counter" && match_all) {
        p.unextracted(m.key("source"), &read, r);
        return None;
    }
    if let Some(s) = source {
        t.push(("source".into(), Val::str(s)));
    }
    m.finish(r, "no tailship equivalent");
    t.push(("config".into(), Val::Table(opts)));
    Some(Val::Table(t))
}

/// Records that metric `full` (its `type` at `here`) is a `kind`; `None`
/// (refused) when an earlier metric of the job gave the name another type.
fn claim_type(full: String, kind: &str, here: String, r: &mut Report) -> Option<()> {
    let earlier = r.metric_types.iter().find(|(n, _, _)| *n == full).cloned();
    match earlier {
        Some((_, other, at)) if other != kind => {
            r.refuse(
                here,
                format!(
                    "`{full}` is a {kind} here but a {other} at {at}: one name, one type (Promtail refuses it too)"
                ),
            );
            None
        }
        Some(_) => Some(()),
        None => {
            r.metric_types.push((full, kind.to_string(), here));
            Some(())
        }
    }
}

/// The metric's `config` table (under `m`) for a metric of type `kind`:
/// its options, and whether it counts every line (`match_all`); `None`
/// when refused.
fn config(m: &mut Map, kind: &str, r: &mut Report) -> Option<(Vec<(String, Val)>, bool)> {
    let ck = m.key("config");
    let mut c = Map::new(&ck, m.get("config").unwrap_or(&Yaml::Null), r);
    let mut opts = Vec::new();
    let action = c.text("action", r).map(|a| a.to_ascii_lowercase());
    let value = c.text("value", r);
    let match_all = c.text("match_all", r).is_some_and(|v| truthy(&v));
    let count_bytes = c.text("count_entry_bytes", r).is_some_and(|v| truthy(&v));
    if let Some(a) = action_for(&c, kind, action.as_deref(), r)? {
        opts.push(("action".to_string(), Val::str(a)));
    }
    if kind == "counter" {
        if match_all && value.is_some() {
            r.refuse(c.key("match_all"), "`match_all: true` cannot be combined with `value` (Promtail refuses it too)");
            return None;
        }
        if count_bytes && (!match_all || action.as_deref() != Some("add")) {
            r.refuse(
                c.key("count_entry_bytes"),
                "goes only with `match_all: true` and `action: add` (Promtail refuses it too)",
            );
            return None;
        }
        if match_all {
            opts.push(("match_all".into(), Val::Bool(true)));
        }
        if count_bytes {
            opts.push(("count_entry_bytes".into(), Val::Bool(true)));
        }
    }
    if let Some(v) = value {
        opts.push(("value".into(), Val::str(v)));
    }
    if kind == "histogram" {
        let key = c.key("buckets");
        let items = list(&key, c.get("buckets"), r);
        let buckets: Vec<f64> = items.iter().filter_map(|b| scalar(b)?.parse().ok()).collect();
        if buckets.len() != items.len() || buckets.windows(2).any(|w| w[0] >= w[1]) {
            r.refuse(key, "buckets must be increasing numbers (Promtail refuses them too)");
            return None;
        }
        if !buckets.is_empty() {
            opts.push(("buckets".into(), Val::Arr(buckets.into_iter().map(Val::Float).collect())));
        }
    }
    c.finish(r, "no tailship equivalent (Promtail ignores it too)");
    Some((opts, match_all))
}

/// The `action` a metric of type `kind` keeps: `Some(None)` when there is
/// none to keep (a histogram's is left out, with a note), `None` when it
/// is refused (missing or not one of the type's).
fn action_for<'a>(c: &Map, kind: &str, action: Option<&'a str>, r: &mut Report) -> Option<Option<&'a str>> {
    let valid: &[&str] = match kind {
        "counter" => &["inc", "add"],
        "gauge" => &["set", "inc", "dec", "add", "sub"],
        _ => &[],
    };
    match action {
        Some(a) if valid.is_empty() => {
            r.note(
                c.key("action"),
                format!("a histogram observes the value; Promtail ignores `action: {a}`, and so it is left out"),
            );
            Some(None)
        }
        Some(a) if valid.contains(&a) => Some(Some(a)),
        other if !valid.is_empty() => {
            let what = other.map_or("missing".to_string(), |a| format!("`{a}`"));
            r.refuse(
                c.key("action"),
                format!("{what}: the action of a {kind} is one of {} (Promtail refuses it too)", valid.join(", ")),
            );
            None
        }
        _ => Some(None),
    }
}
