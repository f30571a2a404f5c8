//! A line on its way through the stages, with its extracted map (Promtail's
//! model): parsing stages write named values; `source`, `labels`,
//! `structured_metadata`, `output`, `timestamp` and `tenant` read them.
//!
//! Everything here starts empty and allocates only when a stage writes, so
//! a source whose stages extract nothing pays nothing per line.

use std::borrow::Cow;

use crate::queue::StreamRef;

/// Values extracted from one line so far, by name (a later value of the
/// same name replaces an earlier one). As in Promtail, the map starts with
/// the line's labels (its file's stream: static, `filename`, `host`, ...):
/// they are read through the stream, not copied, and a stage's value of the
/// same name shadows them.
#[derive(Default)]
pub struct Extracted<'s> {
    /// Values set by stages; `None`: removed (a `template` that rendered "").
    values: Vec<(Cow<'s, str>, Option<String>)>,
    labels: Option<StreamRef>,
}

impl<'s> Extracted<'s> {
    /// A map that starts with the labels of `stream`.
    pub fn seeded(stream: StreamRef) -> Self {
        Self { values: Vec::new(), labels: Some(stream) }
    }

    pub fn set(&mut self, name: Cow<'s, str>, value: String) {
        self.put(name, Some(value));
    }

    fn put(&mut self, name: Cow<'s, str>, value: Option<String>) {
        match self.values.iter_mut().find(|(k, _)| *k == name) {
            Some(slot) => slot.1 = value,
            None => self.values.push((name, value)),
        }
    }

    pub fn get(&self, name: &str) -> Option<&str> {
        match self.values.iter().find(|(k, _)| k == name) {
            Some((_, v)) => v.as_deref(),
            None => self.labels.as_ref()?.labels.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str()),
        }
    }

    pub fn remove(&mut self, name: &'s str) {
        self.put(Cow::Borrowed(name), None);
    }

    /// The values stages set (not the labels the map starts with), owned:
    /// what a held line keeps of its map.
    pub fn owned_values(&self) -> Vec<(String, Option<String>)> {
        self.values.iter().map(|(k, v)| (k.to_string(), v.clone())).collect()
    }

    /// A map that starts with the labels of `stream` and holds `values`
    /// (from [`Extracted::owned_values`]).
    pub fn restored(stream: StreamRef, values: Vec<(String, Option<String>)>) -> Self {
        Self { values: values.into_iter().map(|(k, v)| (Cow::Owned(k), v)).collect(), labels: Some(stream) }
    }

    /// Every `(name, value)`: the labels a stage did not shadow, then the
    /// values stages set, in the order first set.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        let labels = self.labels.iter().flat_map(|s| s.labels.iter());
        let unshadowed = labels.filter(|(k, _)| !self.values.iter().any(|(n, _)| n == k));
        unshadowed
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .chain(self.values.iter().filter_map(|(k, v)| Some((k.as_ref(), v.as_deref()?))))
    }
}

/// A line on its way through the stages.
pub struct Line<'s, 'l> {
    pub text: Cow<'l, str>,
    pub ts: i64,
    /// True while the timestamp is the read time (no stage set one).
    pub assigned: bool,
    /// The time the source gives the line (a journal entry's), which it
    /// takes unless a stage sets one; `ts` stays the read time meanwhile
    /// (a `limit` stage's clock). Kept by a `multiline` block for its line.
    pub own_ts: Option<i64>,
    pub extracted: Extracted<'s>,
    /// Label changes over the file's stream, in the order stages made them:
    /// a value set, or `None` for a label taken away.
    pub labels: Vec<(Cow<'s, str>, Option<String>)>,
    /// Structured metadata picked so far.
    pub metadata: Vec<(Cow<'s, str>, String)>,
    /// A tenant set by a `tenant` stage.
    pub tenant: Option<String>,
}

impl<'s, 'l> Line<'s, 'l> {
    pub fn new(text: Cow<'l, str>, ts: i64, assigned: bool) -> Self {
        Self {
            text,
            ts,
            assigned,
            own_ts: None,
            extracted: Extracted::default(),
            labels: Vec::new(),
            metadata: Vec::new(),
            tenant: None,
        }
    }

    /// Sets (or, with `None` or an empty value, takes away) a label.
    pub fn set_label(&mut self, name: Cow<'s, str>, value: Option<String>) {
        let value = value.filter(|v| !v.is_empty());
        match self.labels.iter_mut().find(|(k, _)| *k == name) {
            Some(slot) => slot.1 = value,
            None => self.labels.push((name, value)),
        }
    }

    /// The line's label `name`: as a stage set it, else the file's `base` one.
    pub fn label<'a>(&'a self, name: &str, base: &'a [(String, String)]) -> Option<&'a str> {
        match self.labels.iter().find(|(k, _)| *k == name) {
            Some((_, v)) => v.as_deref(),
            None => base.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str()),
        }
    }

    /// A hash of the label changes stages made so far (the file's own
    /// labels are its context's): the stream a `fudge` remembers times by,
    /// and a `multiline` stage joins by.
    pub fn labels_hash(&self) -> u64 {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        self.labels.hash(&mut h);
        h.finish()
    }

    pub fn set_metadata(&mut self, name: &'s str, value: String) {
        match self.metadata.iter_mut().find(|(k, _)| *k == name) {
            Some(slot) => slot.1 = value,
            None => self.metadata.push((Cow::Borrowed(name), value)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_set_replace_and_take_away_over_the_base() {
        let base = vec![("job".to_string(), "app".to_string()), ("env".to_string(), "prod".to_string())];
        let mut l = Line::new(Cow::Borrowed("x"), 0, true);
        l.set_label(Cow::Borrowed("level"), Some("info".into()));
        l.set_label(Cow::Borrowed("level"), Some("warn".into()));
        l.set_label(Cow::Borrowed("env"), None);
        l.set_label(Cow::Owned("job".into()), Some(String::new()));
        assert_eq!(l.label("level", &base), Some("warn"));
        assert_eq!(l.label("env", &base), None);
        assert_eq!(l.label("job", &base), None, "an empty value takes the label away");
        assert_eq!(l.label("other", &base), None);
        assert_eq!(l.labels.len(), 3);
    }

    #[test]
    fn a_later_value_of_the_same_name_wins() {
        let mut e = Extracted::default();
        e.set(Cow::Borrowed("a"), "1".into());
        e.set(Cow::Owned("a".into()), "2".into());
        assert_eq!(e.get("a"), Some("2"));
        assert_eq!(e.get("b"), None);
    }
}
