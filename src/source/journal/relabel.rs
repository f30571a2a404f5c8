//! A journal source's `relabel` rules, as Promtail's journal target applies
//! its `relabel_configs`: every field of an entry is offered to the rules as
//! `__journal_<field, lowercased>` (a field set more than once: its last
//! value), with `__journal_priority_keyword`, the syslog name of `PRIORITY`
//! (`emerg` ... `debug`; another value as it is, as Promtail has it). `__CURSOR`, `__REALTIME_TIMESTAMP` and
//! `__MONOTONIC_TIMESTAMP` are fields too (`__journal___cursor`, ...) unless
//! the source's `address_fields` is off (Promtail 3.6's reader offers none
//! of them); journalctl's `__SEQNUM` and `__SEQNUM_ID` never are (Promtail
//! has no such fields). What the rules leave, labels starting
//! `__` removed, labels the entry's stream; a rule that drops the set drops
//! the entry (counted). Without rules, none of this runs: journalctl is asked
//! for the few fields the source needs and nothing is allocated per entry.

use std::collections::BTreeMap;

use super::entry::{is_entry_field, priority_keyword, Field};
use crate::relabel::{strip_internal, Labels, Rules};
use crate::util::cut_at_char;

use super::MAX_LABEL_VALUE as MAX_VALUE;

/// The labels the rules make of one entry (journalctl's JSON line), sorted
/// by name; `None` when a rule dropped the entry. `address`: offer the
/// address fields too (see [`is_entry_field`]).
pub fn labels_of(
    rules: &Rules,
    line: &[u8],
    address: bool,
) -> Result<Option<Vec<(String, String)>>, serde_json::Error> {
    let fields: BTreeMap<String, Field> = serde_json::from_slice(line)?;
    let mut labels = Labels::new();
    for (k, v) in &fields {
        if !is_entry_field(k, address) {
            continue;
        }
        let Some(text) = last_text(v) else { continue };
        if k == "PRIORITY" {
            labels.insert("__journal_priority_keyword".into(), priority_keyword(&text).into_owned());
        }
        labels.insert(format!("__journal_{}", k.to_ascii_lowercase()), text);
    }
    if !rules.apply(&mut labels) {
        return Ok(None);
    }
    strip_internal(&mut labels);
    Ok(Some(
        labels
            .into_iter()
            .filter(|(_, v)| !v.is_empty())
            .map(|(k, v)| {
                let v = cut_at_char(&v, MAX_VALUE).to_string();
                (k, v)
            })
            .collect(),
    ))
}

/// A field's last value as text (invalid UTF-8 replaced); `None` for null.
fn last_text(f: &Field) -> Option<String> {
    match f {
        Field::Many(v) => v.iter().rev().find_map(last_text),
        Field::Null => None,
        other => other.bytes().map(|(b, _)| String::from_utf8_lossy(&b).into_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::RelabelConfig;

    fn rule(source: &[&str], target: Option<&str>, action: Option<&str>, regex: Option<&str>) -> RelabelConfig {
        RelabelConfig {
            source_labels: source.iter().map(|s| s.to_string()).collect(),
            target_label: target.map(Into::into),
            action: action.map(Into::into),
            regex: regex.map(Into::into),
            ..Default::default()
        }
    }

    const ENTRY: &[u8] = br#"{"__CURSOR":"s=1","__SEQNUM":"7","__REALTIME_TIMESTAMP":"1700000000000000","MESSAGE":"hello","PRIORITY":"3","_SYSTEMD_UNIT":"nginx.service","_COMM":"nginx","CONTAINER_NAME":["a","web"],"_TRANSPORT":"journal"}"#;

    #[test]
    fn every_field_is_offered_lowercased_with_the_priority_keyword() {
        let rules = Rules::compile(&[
            rule(&["__journal__comm"], Some("comm"), None, None),
            rule(&["__journal_container_name"], Some("container"), None, None),
            rule(&["__journal_priority_keyword"], Some("severity"), None, None),
            rule(&["__journal___cursor"], Some("cursor"), None, None),
            rule(&["__journal___seqnum"], Some("seqnum"), None, None),
        ])
        .unwrap();
        let labels = labels_of(&rules, ENTRY, true).unwrap().unwrap();
        assert_eq!(
            labels,
            [
                ("comm".into(), "nginx".into()),
                ("container".into(), "web".into()),
                ("cursor".into(), "s=1".into()),
                ("severity".into(), "error".into())
            ]
        );
    }

    #[test]
    fn without_address_fields_the_rules_see_no_cursor_nor_timestamps_as_promtail_3_6() {
        let rules = Rules::compile(&[
            rule(&["__journal___cursor"], Some("cursor"), None, None),
            rule(&["__journal___realtime_timestamp"], Some("rt"), None, None),
            rule(&["__journal__comm"], Some("comm"), None, None),
        ])
        .unwrap();
        let labels = labels_of(&rules, ENTRY, false).unwrap().unwrap();
        assert_eq!(labels, [("comm".into(), "nginx".into())]);
    }

    #[test]
    fn a_drop_rule_drops_the_entry_and_keep_keeps_only_what_matches() {
        let drop = Rules::compile(&[rule(&["__journal__transport"], None, Some("drop"), Some("journal"))]).unwrap();
        assert_eq!(labels_of(&drop, ENTRY, true).unwrap(), None);
        let keep = Rules::compile(&[rule(&["__journal__systemd_unit"], None, Some("keep"), Some("ssh.*"))]).unwrap();
        assert_eq!(labels_of(&keep, ENTRY, true).unwrap(), None);
        let keep = Rules::compile(&[rule(&["__journal__systemd_unit"], None, Some("keep"), Some("nginx.*"))]).unwrap();
        assert_eq!(labels_of(&keep, ENTRY, true).unwrap(), Some(Vec::new()));
    }

    #[test]
    fn a_line_that_is_not_an_entry_is_an_error() {
        let rules = Rules::compile(&[]).unwrap();
        assert!(labels_of(&rules, b"not json", true).is_err());
    }
}
