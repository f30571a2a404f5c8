//! Prometheus relabelling: rules over a label set, applied in order, that
//! rewrite labels or drop the whole set (a target, here a file).
//!
//! The semantics are Prometheus' (and so Promtail's `relabel_configs`): the
//! values of `source_labels` are joined by `separator` (a missing label is an
//! empty value), `regex` is anchored at both ends, `replacement` and a
//! `replace` rule's `target_label` expand `$1`, `${1}` and `${name}`; a label
//! set to an empty value is removed. Rules are compiled once, by
//! `crate::plan`, from [`crate::config::RelabelConfig`]; [`Rules::apply`]
//! never fails. Discovery sources offer `__meta_*` labels to the rules;
//! [`strip_internal`] then removes every label starting `__`, as Promtail does.

use std::collections::BTreeMap;
use std::sync::LazyLock;

use md5::{Digest, Md5};
use regex::Regex;

use crate::config::RelabelConfig;
use crate::util::is_valid_label_name;

#[cfg(test)]
mod tests;

/// Labels as the rules see them.
pub type Labels = BTreeMap<String, String>;

/// What a rule does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Replace,
    Keep,
    Drop,
    KeepEqual,
    DropEqual,
    HashMod,
    LabelMap,
    LabelDrop,
    LabelKeep,
    Lowercase,
    Uppercase,
}

impl Action {
    fn parse(s: &str) -> Option<Self> {
        Some(match s.to_ascii_lowercase().as_str() {
            "replace" => Self::Replace,
            "keep" => Self::Keep,
            "drop" => Self::Drop,
            "keepequal" => Self::KeepEqual,
            "dropequal" => Self::DropEqual,
            "hashmod" => Self::HashMod,
            "labelmap" => Self::LabelMap,
            "labeldrop" => Self::LabelDrop,
            "labelkeep" => Self::LabelKeep,
            "lowercase" => Self::Lowercase,
            "uppercase" => Self::Uppercase,
            _ => return None,
        })
    }
}

const DEFAULT_SEPARATOR: &str = ";";
const DEFAULT_REGEX: &str = "(.*)";
const DEFAULT_REPLACEMENT: &str = "$1";

/// A `target_label` of a `replace` rule, or a `labelmap` replacement: label
/// name characters and `$1`/`${name}` references (Prometheus' own check).
static TEMPLATE_NAME: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^(?:(?:[a-zA-Z_]|\$(?:\{\w+\}|\w+))+\w*)+$").unwrap_or_else(|_| unreachable!("a fixed regex"))
});

/// A problem with one rule: the field it concerns and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct RuleError {
    /// `action`, `regex`, `target_label`, `replacement`, `modulus`, ...
    pub field: &'static str,
    pub message: String,
}

fn err(field: &'static str, message: impl Into<String>) -> RuleError {
    RuleError { field, message: message.into() }
}

/// One compiled rule.
#[derive(Debug, Clone)]
pub struct Rule {
    source_labels: Vec<String>,
    separator: String,
    /// `^(?:regex)$`.
    regex: Regex,
    target_label: String,
    replacement: String,
    modulus: u64,
    action: Action,
}

impl Rule {
    /// Compiles one rule, checking it as Prometheus does.
    pub fn compile(c: &RelabelConfig) -> Result<Self, RuleError> {
        let action = match c.action.as_deref() {
            None => Action::Replace,
            Some(a) => Action::parse(a).ok_or_else(|| {
                err(
                    "action",
                    format!(
                        "unknown action `{a}` (replace, keep, drop, keepequal, dropequal, hashmod, labelmap, \
                         labeldrop, labelkeep, lowercase, uppercase)"
                    ),
                )
            })?,
        };
        let raw_regex = c.regex.as_deref().unwrap_or(DEFAULT_REGEX);
        let regex = Regex::new(&format!("^(?:{raw_regex})$"))
            .map_err(|e| err("regex", format!("bad regex: {}", e.to_string().replace('\n', " "))))?;
        let target = c.target_label.clone().unwrap_or_default();
        let replacement = c.replacement.clone().unwrap_or_else(|| DEFAULT_REPLACEMENT.into());
        use Action::*;
        let needs_target = matches!(action, Replace | HashMod | Lowercase | Uppercase | KeepEqual | DropEqual);
        if needs_target && target.is_empty() {
            return Err(err("target_label", format!("action `{}` needs a target_label", action_name(action))));
        }
        if action == Replace && !TEMPLATE_NAME.is_match(&target) {
            return Err(err("target_label", format!("`{target}` is not a label name (nor one with $1 references)")));
        }
        if needs_target && action != Replace && !is_valid_label_name(&target) {
            return Err(err("target_label", format!("`{target}` is not a valid label name ([a-zA-Z_][a-zA-Z0-9_]*)")));
        }
        if matches!(action, Lowercase | Uppercase | KeepEqual | DropEqual) && replacement != DEFAULT_REPLACEMENT {
            return Err(err("replacement", format!("action `{}` takes no replacement", action_name(action))));
        }
        if action == LabelMap && !TEMPLATE_NAME.is_match(&replacement) {
            return Err(err("replacement", format!("`{replacement}` cannot name a label")));
        }
        if action == HashMod && c.modulus.unwrap_or(0) == 0 {
            return Err(err("modulus", "action `hashmod` needs a modulus above 0"));
        }
        if matches!(action, LabelDrop | LabelKeep)
            && (!c.source_labels.is_empty()
                || c.target_label.is_some()
                || c.modulus.is_some()
                || c.separator.is_some()
                || replacement != DEFAULT_REPLACEMENT)
        {
            return Err(err("action", format!("action `{}` takes only a regex", action_name(action))));
        }
        if matches!(action, KeepEqual | DropEqual) && (c.regex.is_some() || c.modulus.is_some()) {
            return Err(err(
                "action",
                format!("action `{}` takes only source_labels and target_label", action_name(action)),
            ));
        }
        for (i, l) in c.source_labels.iter().enumerate() {
            if !is_valid_label_name(l) {
                return Err(err("source_labels", format!("source_labels[{i}]: `{l}` is not a valid label name")));
            }
        }
        Ok(Self {
            source_labels: c.source_labels.clone(),
            separator: c.separator.clone().unwrap_or_else(|| DEFAULT_SEPARATOR.into()),
            regex,
            target_label: target,
            replacement,
            modulus: c.modulus.unwrap_or(0),
            action,
        })
    }

    /// Applies the rule; false when it drops the label set.
    fn apply(&self, labels: &mut Labels) -> bool {
        let value = || {
            let mut v = String::new();
            for (i, l) in self.source_labels.iter().enumerate() {
                if i > 0 {
                    v.push_str(&self.separator);
                }
                v.push_str(labels.get(l).map_or("", String::as_str));
            }
            v
        };
        match self.action {
            Action::Replace => {
                let val = value();
                let Some(caps) = self.regex.captures(&val) else { return true };
                let mut target = String::new();
                caps.expand(&self.target_label, &mut target);
                if !is_valid_label_name(&target) {
                    return true;
                }
                let mut res = String::new();
                caps.expand(&self.replacement, &mut res);
                set(labels, target, res);
            }
            Action::Keep => return self.regex.is_match(&value()),
            Action::Drop => return !self.regex.is_match(&value()),
            Action::KeepEqual => return labels.get(&self.target_label).map_or("", String::as_str) == value(),
            Action::DropEqual => return labels.get(&self.target_label).map_or("", String::as_str) != value(),
            Action::HashMod => {
                let hash = Md5::digest(value().as_bytes());
                let mut low = [0u8; 8];
                low.copy_from_slice(&hash[8..16]);
                let m = u64::from_be_bytes(low) % self.modulus;
                set(labels, self.target_label.clone(), m.to_string());
            }
            Action::Lowercase => set(labels, self.target_label.clone(), value().to_lowercase()),
            Action::Uppercase => set(labels, self.target_label.clone(), value().to_uppercase()),
            Action::LabelMap => {
                let mut add = Vec::new();
                for (name, v) in labels.iter() {
                    if let Some(caps) = self.regex.captures(name) {
                        let mut to = String::new();
                        caps.expand(&self.replacement, &mut to);
                        if is_valid_label_name(&to) {
                            add.push((to, v.clone()));
                        }
                    }
                }
                for (k, v) in add {
                    set(labels, k, v);
                }
            }
            Action::LabelDrop => labels.retain(|k, _| !self.regex.is_match(k)),
            Action::LabelKeep => labels.retain(|k, _| self.regex.is_match(k)),
        }
        true
    }
}

/// Sets a label; an empty value removes it (as Prometheus' label builder does).
fn set(labels: &mut Labels, name: String, value: String) {
    if value.is_empty() {
        labels.remove(&name);
    } else {
        labels.insert(name, value);
    }
}

fn action_name(a: Action) -> &'static str {
    match a {
        Action::Replace => "replace",
        Action::Keep => "keep",
        Action::Drop => "drop",
        Action::KeepEqual => "keepequal",
        Action::DropEqual => "dropequal",
        Action::HashMod => "hashmod",
        Action::LabelMap => "labelmap",
        Action::LabelDrop => "labeldrop",
        Action::LabelKeep => "labelkeep",
        Action::Lowercase => "lowercase",
        Action::Uppercase => "uppercase",
    }
}

/// A source's rules, in order.
#[derive(Debug, Clone, Default)]
pub struct Rules(Vec<Rule>);

impl Rules {
    /// Compiles every rule; errors are `(index, error)`, one per bad rule.
    pub fn compile(configs: &[RelabelConfig]) -> Result<Self, Vec<(usize, RuleError)>> {
        let mut rules = Vec::new();
        let mut errors = Vec::new();
        for (i, c) in configs.iter().enumerate() {
            match Rule::compile(c) {
                Ok(r) => rules.push(r),
                Err(e) => errors.push((i, e)),
            }
        }
        if errors.is_empty() {
            Ok(Self(rules))
        } else {
            Err(errors)
        }
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Applies the rules in order; false when one of them drops the set
    /// (the rules after it do not run).
    pub fn apply(&self, labels: &mut Labels) -> bool {
        self.0.iter().all(|r| r.apply(labels))
    }
}

/// Removes the labels starting `__` (`__meta_*`, `__path__`, temporary
/// labels of the rules): they are for relabelling only, never sent.
pub fn strip_internal(labels: &mut Labels) {
    labels.retain(|k, _| !k.starts_with("__"));
}
