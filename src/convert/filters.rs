//! Promtail's `drop` and `tenant` stages as tailship's.
//!
//! A `drop` stage carries over whole: a regex on the line or on one value
//! keeps the short form (`drop = '...'`, with `source`), anything else
//! becomes a table of conditions. Promtail's byte sizes (`longer_than`)
//! count in 1024s (`1KB` is 1024 bytes), so they are written as `KiB`.

use super::render::Val;
use super::yaml::{Map, Report};
use crate::util::{is_valid_label_name, parse_duration};

/// What the stages translated so far extract, and how a name they do not is reported.
pub trait Known {
    fn extracted(&self, name: &str) -> bool;
    fn unextracted(&self, key: String, name: &str, r: &mut Report);
}

/// A translated `drop` stage.
#[derive(Debug, Clone, Default)]
pub struct DropRule {
    expression: Option<String>,
    sources: Vec<String>,
    separator: Option<String>,
    value: Option<String>,
    older_than: Option<String>,
    longer_than: Option<String>,
    reason: Option<String>,
}

impl DropRule {
    /// The stage's keys: `drop = '...'` (+ `source`) when that says it all.
    pub fn to_vals(&self) -> Vec<(String, Val)> {
        let only_regex = self.sources.len() <= 1
            && self.separator.is_none()
            && self.value.is_none()
            && self.older_than.is_none()
            && self.longer_than.is_none()
            && self.reason.is_none();
        if let (Some(expr), true) = (&self.expression, only_regex) {
            let mut t = vec![("drop".to_string(), Val::str(expr))];
            if let [s] = self.sources.as_slice() {
                t.push(("source".into(), Val::str(s)));
            }
            return t;
        }
        let mut t: Vec<(String, Val)> = Vec::new();
        match self.sources.as_slice() {
            [] => {}
            [one] => t.push(("source".into(), Val::str(one))),
            many => t.push(("source".into(), Val::strs(many))),
        }
        let rest = [
            ("separator", &self.separator),
            ("expression", &self.expression),
            ("value", &self.value),
            ("older_than", &self.older_than),
            ("longer_than", &self.longer_than),
            ("reason", &self.reason),
        ];
        for (k, v) in rest {
            if let Some(v) = v {
                t.push((k.into(), Val::str(v)));
            }
        }
        vec![("drop".into(), Val::Table(t))]
    }
}

/// Promtail's `drop`, over what the translated stages of `p` so far extract.
pub fn drop(m: &mut Map<'_>, p: &dyn Known, r: &mut Report) -> Option<DropRule> {
    let mut rule = DropRule { sources: m.texts("source", r), ..Default::default() };
    if let Some(s) = rule.sources.iter().find(|s| !p.extracted(s)) {
        p.unextracted(m.key("source"), s, r);
        return None;
    }
    if let Some(expr) = m.text("expression", r) {
        if let Err(e) = crate::pipeline::re2::compile(&expr) {
            r.refuse(m.key("expression"), format!("bad regex (Promtail refuses it too): {e}"));
            return None;
        }
        rule.expression = Some(expr);
    }
    rule.value = m.text("value", r);
    rule.separator = m.text("separator", r);
    if let Some(d) = m.text("older_than", r) {
        if let Err(e) = parse_duration(&d) {
            r.skip(m.key("older_than"), e);
            return None;
        }
        rule.older_than = Some(d);
    }
    if let Some(n) = m.text("longer_than", r) {
        let Some(size) = promtail_size(&n) else {
            r.skip(m.key("longer_than"), format!("`{n}` is not a size (bytes, or 10KB, 1MB)"));
            return None;
        };
        rule.longer_than = Some(size);
    }
    rule.reason = m.text("drop_counter_reason", r);
    if rule.sources.is_empty() && rule.expression.is_none() && rule.older_than.is_none() && rule.longer_than.is_none() {
        r.skip(m.path.clone(), "needs one of `source`, `expression`, `older_than` or `longer_than`");
        return None;
    }
    if rule.value.is_some() && (rule.expression.is_some() || rule.sources.is_empty()) {
        r.skip(m.key("value"), "`value` goes with `source` and without `expression`");
        return None;
    }
    Some(rule)
}

/// A Promtail byte size (`1024`, `10KB`, `1mb`: units of 1024) as tailship's.
pub(super) fn promtail_size(s: &str) -> Option<String> {
    let t = s.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: u64 = num.parse().ok()?;
    let unit = match unit.trim().to_ascii_uppercase().as_str() {
        "" | "B" => return Some(n.to_string()),
        "K" | "KB" | "KIB" => "KiB",
        "M" | "MB" | "MIB" => "MiB",
        "G" | "GB" | "GIB" => "GiB",
        _ => return None,
    };
    Some(format!("{n}{unit}"))
}

/// What a Promtail `tenant` stage becomes.
pub enum Tenant {
    /// A fixed `value`: the source's `tenant_id`.
    Fixed(String),
    /// A `tenant` stage: `source` or `label`, and the name.
    Stage(&'static str, String),
}

/// Promtail's `tenant`, over what the translated stages of `p` so far
/// extract and which labels the job's lines carry.
pub fn tenant(m: &mut Map<'_>, p: &dyn Known, r: &mut Report) -> Option<Tenant> {
    let (source, name, value) = (m.text("source", r), m.text("label", r), m.text("value", r));
    match (source, name, value) {
        (None, None, Some(v)) => Some(Tenant::Fixed(v)),
        (Some(s), None, None) if p.extracted(&s) => Some(Tenant::Stage("source", s)),
        (Some(s), None, None) => {
            p.unextracted(m.key("source"), &s, r);
            None
        }
        // Read per line: a line without the label keeps the job's tenant.
        (None, Some(l), None) if is_valid_label_name(&l) => Some(Tenant::Stage("label", l)),
        (None, Some(l), None) => {
            r.skip(m.key("label"), format!("`{l}` is not a valid label name"));
            None
        }
        _ => {
            r.skip(m.path.clone(), "needs exactly one of `source`, `label` or `value`");
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::promtail_size;

    #[test]
    fn promtail_sizes_count_in_1024s() {
        assert_eq!(promtail_size("100").as_deref(), Some("100"));
        assert_eq!(promtail_size("10KB").as_deref(), Some("10KiB"));
        assert_eq!(promtail_size("1mb").as_deref(), Some("1MiB"));
        assert_eq!(promtail_size("2 GiB").as_deref(), Some("2GiB"));
        assert_eq!(promtail_size("ten"), None);
        assert_eq!(promtail_size("5XB"), None);
    }
}
