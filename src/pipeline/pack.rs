//! The stages that reshape a line as a whole: `pack` (Promtail's packing
//! format: the line and some labels as one JSON object) and `truncate`
//! (Alloy's: cut the line, labels, structured metadata or extracted values).

use std::borrow::Cow;

use super::line::Line;
use super::stage::Truncated;
use crate::util::cut_at_char;

/// A `pack` stage: the line becomes `{"name":"value",...,"_entry":"line"}`,
/// names sorted, each an extracted value (which, as in Promtail, includes
/// the line's labels) or a label set by an earlier stage; a packed name that
/// is a label leaves the stream. Names with no value are left out.
pub fn pack<'s>(line: &mut Line<'s, '_>, names: &'s [String], base: &[(String, String)]) {
    let mut packed: Vec<(&'s str, String)> = Vec::with_capacity(names.len());
    for n in names {
        let v = line.extracted.get(n).or_else(|| line.label(n, base));
        if let Some(v) = v {
            packed.push((n.as_str(), v.to_string()));
        }
    }
    packed.sort_by(|a, b| a.0.cmp(b.0));
    packed.dedup_by(|a, b| a.0 == b.0);
    let mut out = String::with_capacity(line.text.len() + 16 * packed.len() + 12);
    out.push('{');
    for (k, v) in &packed {
        out.push_str(&serde_json::Value::from(*k).to_string());
        out.push(':');
        out.push_str(&serde_json::Value::from(v.as_str()).to_string());
        out.push(',');
    }
    out.push_str("\"_entry\":");
    out.push_str(&serde_json::Value::from(line.text.as_ref()).to_string());
    out.push('}');
    for (k, _) in &packed {
        if line.label(k, base).is_some() {
            line.set_label(Cow::Borrowed(k), None);
        }
    }
    line.text = Cow::Owned(out);
}

/// A `truncate` stage; true when it cut something.
pub fn truncate<'s>(
    line: &mut Line<'s, '_>,
    limit: usize,
    suffix: &str,
    target: &'s Truncated,
    base: &[(String, String)],
) -> bool {
    let cut = |v: &str| -> Option<String> {
        (v.len() > limit).then(|| {
            let keep = limit.saturating_sub(suffix.len());
            let mut s = cut_at_char(v, keep).to_string();
            s.push_str(suffix);
            s
        })
    };
    let wanted = |names: &[String], n: &str| names.is_empty() || names.iter().any(|w| w == n);
    let mut any = false;
    match target {
        Truncated::Line => {
            if let Some(s) = cut(&line.text) {
                line.text = Cow::Owned(s);
                any = true;
            }
        }
        Truncated::Labels(names) => {
            let mut changes: Vec<(String, String)> = Vec::new();
            for (k, v) in base {
                if wanted(names, k) && !line.labels.iter().any(|(n, _)| n == k) {
                    changes.extend(cut(v).map(|s| (k.clone(), s)));
                }
            }
            for (k, v) in &line.labels {
                if let (true, Some(v)) = (wanted(names, k), v) {
                    changes.extend(cut(v).map(|s| (k.to_string(), s)));
                }
            }
            any = !changes.is_empty();
            for (k, v) in changes {
                line.set_label(Cow::Owned(k), Some(v));
            }
        }
        Truncated::Metadata(names) => {
            for (k, v) in &mut line.metadata {
                if wanted(names, k) {
                    if let Some(s) = cut(v) {
                        *v = s;
                        any = true;
                    }
                }
            }
        }
        Truncated::Extracted(names) => {
            let changes: Vec<(String, String)> = line
                .extracted
                .iter()
                .filter(|(k, _)| wanted(names, k))
                .filter_map(|(k, v)| cut(v).map(|s| (k.to_string(), s)))
                .collect();
            any = !changes.is_empty();
            for (k, v) in changes {
                line.extracted.set(Cow::Owned(k), v);
            }
        }
    }
    any
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pack_sorts_names_escapes_and_ends_with_the_entry() {
        // Promtail's pack_test.go: labels sorted, `_entry` last, JSON-escaped.
        let names = vec!["pod".to_string(), "container".to_string(), "missing".to_string()];
        let base = vec![("pod".to_string(), "foo-xsfs3".to_string()), ("job".to_string(), "a".to_string())];
        let mut l = Line::new(Cow::Borrowed(r#"a "quoted" line"#), 0, true);
        l.extracted.set(Cow::Borrowed("container"), "test".into());
        pack(&mut l, &names, &base);
        assert_eq!(l.text, r#"{"container":"test","pod":"foo-xsfs3","_entry":"a \"quoted\" line"}"#);
        assert_eq!(l.label("pod", &base), None, "a packed label leaves the stream");
        assert_eq!(l.label("job", &base), Some("a"));
        let mut none = Line::new(Cow::Borrowed("x"), 0, true);
        pack(&mut none, &[], &base);
        assert_eq!(none.text, r#"{"_entry":"x"}"#);
    }

    #[test]
    fn truncate_keeps_the_limit_with_the_suffix() {
        let mut l = Line::new(Cow::Borrowed("héllo world"), 0, true);
        assert!(truncate(&mut l, 8, "...", &Truncated::Line, &[]));
        assert_eq!(l.text, "héll...");
        assert!(!truncate(&mut l, 100, "...", &Truncated::Line, &[]));
        let base = vec![("app".to_string(), "abcdefgh".to_string()), ("k".to_string(), "abcdefgh".to_string())];
        let labels = Truncated::Labels(vec!["app".into()]);
        assert!(truncate(&mut l, 4, "", &labels, &base));
        assert_eq!((l.label("app", &base), l.label("k", &base)), (Some("abcd"), Some("abcdefgh")));
        l.extracted.set(Cow::Borrowed("msg"), "0123456789".into());
        let all = Truncated::Extracted(Vec::new());
        assert!(truncate(&mut l, 5, "~", &all, &base));
        assert_eq!(l.extracted.get("msg"), Some("0123~"));
    }
}
