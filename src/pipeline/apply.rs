//! What each stage that reads or writes the extracted map does to a line.
//! The container stages (`cri`, `docker`) and `limit` keep per-file state
//! and live with [`super::SourceStages`].

use std::borrow::Cow;

use regex::Regex;

use super::context::FileContext;
use super::line::Line;
use super::parse;
use super::stage::{DropRule, Stage, TenantFrom};
use super::template::GoTemplate;
use super::TimeFormat;

/// The text a stage reads: the extracted value `source`, or the line.
/// `None` when the value is missing (the stage then does nothing).
fn input<'a>(text: &'a str, extracted: &'a super::line::Extracted<'_>, source: Option<&str>) -> Option<&'a str> {
    match source {
        Some(s) => extracted.get(s),
        None => Some(text),
    }
}

/// A `regex` stage: every named capture is extracted ("" for one that did
/// not take part, as Promtail does).
pub fn regex<'s>(line: &mut Line<'s, '_>, re: &'s Regex, names: &'s [String], source: Option<&str>) {
    let Some(text) = input(&line.text, &line.extracted, source) else { return };
    let Some(caps) = re.captures(text) else { return };
    let found: Vec<String> = names.iter().map(|n| caps.name(n).map_or("", |m| m.as_str()).to_string()).collect();
    // A name given twice: the last group gives its value (as in Promtail).
    for (n, v) in names.iter().zip(found) {
        line.extracted.set(Cow::Borrowed(crate::pipeline::re2::group_name(n)), v);
    }
}

/// A `logfmt` stage; false when the text holds no `key=value` pair or a
/// stray quote (the pairs before it are extracted, as Promtail does).
pub fn logfmt<'s>(line: &mut Line<'s, '_>, fields: &'s [(String, String)], source: Option<&str>) -> bool {
    let Some(text) = input(&line.text, &line.extracted, source) else { return true };
    let (pairs, ok) = parse::logfmt(text);
    let found: Vec<(Cow<'s, str>, String)> = if fields.is_empty() {
        pairs.into_iter().map(|(k, v)| (Cow::Owned(k.to_string()), v.into_owned())).collect()
    } else {
        fields
            .iter()
            .filter_map(|(name, key)| {
                let (_, v) = pairs.iter().rev().find(|(k, _)| k == key)?;
                Some((Cow::Borrowed(name.as_str()), v.to_string()))
            })
            .collect()
    };
    for (k, v) in found {
        line.extracted.set(k, v);
    }
    ok
}

/// A `replace` stage: every match rewritten, in the line or in the
/// extracted value `source`.
pub fn replace<'s>(line: &mut Line<'s, '_>, re: &Regex, with: &str, source: Option<&'s str>) {
    match source {
        None => {
            if let Cow::Owned(s) = re.replace_all(&line.text, with) {
                line.text = Cow::Owned(s);
            }
        }
        Some(name) => {
            let Some(v) = line.extracted.get(name) else { return };
            let Cow::Owned(out) = re.replace_all(v, with) else { return };
            line.extracted.set(Cow::Borrowed(name), out);
        }
    }
}

/// A `replace` stage with a Go template (Promtail's): each capture group
/// that took part in a match, not overlapping one already replaced, becomes
/// the template rendered with `.Value` = its text; the named groups of the
/// first match are extracted with their rendered values. A template that
/// fails leaves everything as it was.
pub fn replace_groups<'s>(line: &mut Line<'s, '_>, re: &'s Regex, t: &GoTemplate, source: Option<&'s str>) {
    let Some(input) = input(&line.text, &line.extracted, source).map(str::to_string) else { return };
    let mut out = String::new();
    let mut end = 0;
    let mut rendered: Vec<(String, String)> = Vec::new();
    let mut named: Vec<(&'s str, String)> = Vec::new();
    for (n, caps) in re.captures_iter(&input).enumerate() {
        for (g, name) in re.capture_names().enumerate().skip(1) {
            let Some(m) = caps.get(g) else { continue };
            let Ok(st) = t.render_with(&line.extracted, Some(m.as_str()), None) else { return };
            // Promtail's condition: the first group, or one after the last replaced.
            if end == 0 || end < m.start() {
                out.push_str(&input[end..m.start()]);
                out.push_str(&st);
                end = m.end();
            }
            if let (0, Some(name)) = (n, name) {
                named.push((name, m.as_str().to_string()));
            }
            rendered.push((m.as_str().to_string(), st));
        }
    }
    if rendered.is_empty() && re.find(&input).is_none() {
        return;
    }
    out.push_str(&input[end..]);
    match source {
        Some(s) => line.extracted.set(Cow::Borrowed(s), out),
        None => line.text = Cow::Owned(out),
    }
    for (name, text) in named {
        if let Some((_, v)) = rendered.iter().rev().find(|(k, _)| *k == text) {
            line.extracted.set(Cow::Borrowed(name), v.clone());
        }
    }
}

/// True when a `drop` stage's conditions all hold for the line.
pub fn drops(rule: &DropRule, line: &Line<'_, '_>, now_ns: i64) -> bool {
    if rule.longer_than.is_some_and(|n| line.text.len() <= n) {
        return false;
    }
    if rule.older_than_ns.is_some_and(|age| line.ts >= now_ns.saturating_sub(age)) {
        return false;
    }
    let joined: Option<Cow<'_, str>> = match rule.sources.as_slice() {
        [] => None,
        [one] => match line.extracted.get(one) {
            Some(v) => Some(Cow::Borrowed(v)),
            None => return false,
        },
        many => {
            let mut parts = Vec::with_capacity(many.len());
            for s in many {
                match line.extracted.get(s) {
                    Some(v) => parts.push(v),
                    None => return false,
                }
            }
            Some(Cow::Owned(parts.join(&rule.separator)))
        }
    };
    match (joined, &rule.regex, &rule.value) {
        (Some(v), Some(re), _) => re.is_match(&v),
        (Some(v), None, Some(want)) => v == want.as_str(),
        (Some(_), None, None) => true,
        (None, Some(re), _) => re.is_match(&line.text),
        (None, None, _) => true,
    }
}

/// A `timestamp` stage (`ctx.stages[i]`): see [`super::Op::Timestamp`].
pub fn timestamp(
    ctx: &mut FileContext,
    i: usize,
    line: &mut Line<'_, '_>,
    source: &str,
    formats: &[TimeFormat],
    fudge: bool,
) {
    let read = line.extracted.get(source).and_then(|v| formats.iter().find_map(|f| f.to_unix_ns(v)));
    let key = fudge.then(|| (i, line.labels_hash()));
    match (read, key) {
        (Some(t), _) => {
            line.ts = t.clamp(0, i64::MAX as i128) as i64;
            line.assigned = false;
            if let Some(key) = key {
                ctx.remember_time(key, line.ts);
            }
        }
        (None, Some(key)) => {
            if let Some(last) = ctx.last_time(key) {
                line.ts = last.saturating_add(1);
                line.assigned = false;
                ctx.remember_time(key, line.ts);
            }
        }
        (None, None) => {}
    }
}

/// A `template` stage: `source` becomes the rendered text; an empty
/// result removes it; a template that fails leaves it as it was.
pub fn template<'s>(line: &mut Line<'s, '_>, source: &'s str, t: &GoTemplate) {
    match t.render(&line.extracted, source, &line.text) {
        Ok(out) if out.is_empty() => line.extracted.remove(source),
        Ok(out) => line.extracted.set(Cow::Borrowed(source), out),
        Err(_) => {}
    }
}

/// A `labelallow` stage: every label of the line not in `allow` is taken away.
pub fn label_allow<'s>(line: &mut Line<'s, '_>, allow: &[String], base: &[(String, String)]) {
    for (k, _) in base {
        if !allow.contains(k) {
            line.set_label(Cow::Owned(k.clone()), None);
        }
    }
    for (k, v) in &mut line.labels {
        if !allow.iter().any(|a| *a == *k) {
            *v = None;
        }
    }
}

/// A `static_labels` stage: each label set on the line.
pub fn static_labels<'s>(line: &mut Line<'s, '_>, labels: &'s [(String, String)]) {
    for (k, v) in labels {
        line.set_label(Cow::Borrowed(k), Some(v.clone()));
    }
}

/// A `labeldrop` stage: each label taken off the line.
pub fn label_drop<'s>(line: &mut Line<'s, '_>, names: &'s [String]) {
    for k in names {
        line.set_label(Cow::Borrowed(k), None);
    }
}

/// A `tenant` stage: the line's tenant, when the value is there and not
/// empty. A value the service would refuse (Loki's rules, see
/// [`crate::util::tenant_problem`]) is not sent as a header it cannot be:
/// the line keeps the tenant it had and false is returned (counted as
/// repaired, `invalid_tenant`).
pub fn tenant(line: &mut Line<'_, '_>, from: &TenantFrom, base: &[(String, String)]) -> bool {
    let found = match from {
        TenantFrom::Extracted(name) => line.extracted.get(name),
        TenantFrom::Label(name) => line.label(name, base),
        TenantFrom::Value(v) => Some(v.as_str()),
    };
    let Some(t) = found.filter(|t| !t.is_empty()) else { return true };
    if let Some(why) = crate::util::tenant_problem(t) {
        warn_invalid_tenant(t, why);
        return false;
    }
    line.tenant = Some(t.to_string());
    true
}

/// Says once per process that a `tenant` stage met a value the service would refuse.
fn warn_invalid_tenant(t: &str, why: &str) {
    static WARNED: std::sync::Once = std::sync::Once::new();
    WARNED.call_once(|| {
        let shown: String = t.escape_debug().take(160).collect();
        tracing::warn!(tenant = %shown, "a tenant stage's value cannot be a tenant ID ({why}): such lines keep their source's tenant and are counted in tailship_lines_repaired_total{{reason=\"invalid_tenant\"}}");
    });
}

/// A stage's `labels` and `structured_metadata` picks, at this point of the
/// line's way: a label takes the extracted value; metadata takes the
/// extracted value (which starts as the labels), else a label of the line,
/// and a label of that name leaves the stream (as in Promtail).
pub fn picks<'s>(line: &mut Line<'s, '_>, stage: &'s Stage, base: &[(String, String)]) {
    for (label, src) in &stage.labels {
        if let Some(v) = line.extracted.get(src) {
            let v = v.to_string();
            line.set_label(Cow::Borrowed(label), Some(v));
        }
    }
    for (name, src) in &stage.metadata {
        let label = line.label(src, base).map(str::to_string);
        if let Some(v) = line.extracted.get(src).map(|v| v.to_string()).or_else(|| label.clone()) {
            line.set_metadata(name, v);
        }
        if label.is_some() {
            line.set_label(Cow::Borrowed(src), None);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(text: &str) -> Line<'static, '_> {
        Line::new(Cow::Borrowed(text), 1_000, true)
    }

    #[test]
    fn structured_metadata_reads_the_extracted_value_before_the_label_as_promtail_does() {
        let stage =
            Stage { op: super::super::stage::Op::Labels, labels: vec![], metadata: vec![("app".into(), "app".into())] };
        let base = vec![("app".to_string(), "from-label".to_string())];
        let mut l = line("x");
        l.extracted.set(Cow::Borrowed("app"), "from-extracted".into());
        picks(&mut l, &stage, &base);
        assert_eq!(l.metadata, vec![(Cow::Borrowed("app"), "from-extracted".to_string())]);
        assert_eq!(l.label("app", &base), None, "the label leaves the stream");
        let mut only_label = line("y");
        picks(&mut only_label, &stage, &base);
        assert_eq!(only_label.metadata, vec![(Cow::Borrowed("app"), "from-label".to_string())]);
    }

    #[test]
    fn drop_conditions_all_hold_or_the_line_stays() {
        let mut l = line("a rather long line");
        l.extracted.set(Cow::Borrowed("app"), "web".into());
        l.extracted.set(Cow::Borrowed("level"), "debug".into());
        let rule = |f: &dyn Fn(&mut DropRule)| {
            let mut r = DropRule { separator: ";".into(), ..Default::default() };
            f(&mut r);
            r
        };
        assert!(drops(&rule(&|r| r.sources = vec!["level".into()]), &l, 2_000));
        assert!(!drops(&rule(&|r| r.sources = vec!["missing".into()]), &l, 2_000));
        assert!(drops(
            &rule(&|r| {
                r.sources = vec!["level".into()];
                r.value = Some("debug".into())
            }),
            &l,
            0
        ));
        assert!(!drops(
            &rule(&|r| {
                r.sources = vec!["level".into()];
                r.value = Some("info".into())
            }),
            &l,
            0
        ));
        let both = rule(&|r| {
            r.sources = vec!["app".into(), "level".into()];
            r.regex = Some(Regex::new("^web;debug$").unwrap());
        });
        assert!(drops(&both, &l, 0));
        assert!(drops(&rule(&|r| r.longer_than = Some(10)), &l, 0));
        assert!(!drops(&rule(&|r| r.longer_than = Some(100)), &l, 0));
        assert!(drops(&rule(&|r| r.older_than_ns = Some(500)), &l, 2_000));
        assert!(!drops(&rule(&|r| r.older_than_ns = Some(5_000)), &l, 2_000));
        let and = rule(&|r| {
            r.longer_than = Some(10);
            r.regex = Some(Regex::new("short").unwrap());
        });
        assert!(!drops(&and, &l, 0), "every condition must hold");
    }

    #[test]
    fn metadata_from_a_label_takes_it_off_the_stream() {
        let stage = Stage {
            op: super::super::Op::Labels,
            labels: vec![("lvl".into(), "level".into())],
            metadata: vec![("trace".into(), "trace_id".into()), ("pod".into(), "pod".into())],
        };
        let base = vec![("pod".to_string(), "p-1".to_string())];
        let mut l = line("x");
        l.extracted.set(Cow::Borrowed("level"), "warn".into());
        l.extracted.set(Cow::Borrowed("trace_id"), "abc".into());
        picks(&mut l, &stage, &base);
        assert_eq!(l.label("lvl", &base), Some("warn"));
        assert_eq!(l.label("pod", &base), None);
        let meta: Vec<(&str, &str)> = l.metadata.iter().map(|(k, v)| (k.as_ref(), v.as_str())).collect();
        assert_eq!(meta, vec![("trace", "abc"), ("pod", "p-1")]);
    }
}
