//! What a source's stages extract so far, for checking the names later
//! stages read; and the regex compiler whose errors name the key.

use regex::Regex;

/// Labels a line may carry without a stage setting them: the automatic ones
/// of file, Kubernetes and journal sources.
const AUTOMATIC_LABELS: [&str; 7] = ["host", "filename", "namespace", "pod", "container", "unit", "level"];

/// What earlier stages extract and which labels a line may have, for
/// checking the names later stages use.
#[derive(Default)]
pub(super) struct Names {
    pub known: Vec<String>,
    /// An earlier stage extracts names known only per line (`json = {}`).
    pub any: bool,
    /// Labels of the source and labels set by earlier stages.
    pub labels: Vec<String>,
    /// The source's own labels: the extracted map starts with them.
    pub initial: Vec<String>,
}

impl Names {
    /// True when `n` is in the extracted map by now: a stage extracts it,
    /// or it is one of the labels the map starts with.
    pub(super) fn has(&self, n: &str) -> bool {
        self.any
            || self.known.iter().any(|k| k == n)
            || self.initial.iter().any(|k| k == n)
            || AUTOMATIC_LABELS.contains(&n)
    }

    pub(super) fn may_be_label(&self, n: &str) -> bool {
        AUTOMATIC_LABELS.contains(&n) || self.labels.iter().any(|l| l == n)
    }
}

/// Reports a problem under a key relative to the stage's.
pub(super) type Errors<'a> = dyn FnMut(&str, String) + 'a;

/// Compiles the RE2 regex `r` (Promtail's dialect, see [`crate::pipeline::re2`]).
pub(super) fn regex(k: &str, r: &str, e: &mut Errors<'_>) -> Option<Regex> {
    match crate::pipeline::re2::compile(r) {
        Ok(re) => Some(re),
        Err(err) => {
            e(k, format!("bad regex: {err}"));
            None
        }
    }
}

/// A multi-line message (a regex error) on one line.
pub fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}
