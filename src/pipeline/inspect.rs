//! What `tailship inspect` sees of a line on its way through the stages:
//! an [`Inspector`] set on a source's stages is told the line's state
//! before the first stage and after each one, and how the line ended (sent
//! with its stream, dropped, or held by a stage until more lines come).
//!
//! Only inspection pays for this: without an inspector the stages check
//! one `Option` per stage, and no state is copied.

use std::collections::BTreeMap;

use super::line::Line;
use crate::queue::Stream;

/// A line's state at one point of its way: what an inspector compares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineState {
    pub text: String,
    /// Unix nanoseconds.
    pub ts: i64,
    /// True while the timestamp is the read time (no stage set one).
    pub read_time: bool,
    /// The extracted map, as stages read it (the line's labels first).
    pub extracted: BTreeMap<String, String>,
    /// The labels the line would be sent with now.
    pub labels: BTreeMap<String, String>,
    pub metadata: BTreeMap<String, String>,
    /// The tenant a `tenant` stage set, else the source's.
    pub tenant: Option<String>,
}

impl LineState {
    /// The state of `line` over its file's stream `base`.
    pub(super) fn of(line: &Line<'_, '_>, base: &Stream) -> Self {
        let mut labels: BTreeMap<String, String> = base.labels.iter().cloned().collect();
        for (k, v) in &line.labels {
            match v {
                Some(v) => labels.insert(k.to_string(), v.clone()),
                None => labels.remove(k.as_ref()),
            };
        }
        Self {
            text: line.text.to_string(),
            ts: line.ts,
            read_time: line.assigned,
            extracted: line.extracted.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
            labels,
            metadata: line.metadata.iter().map(|(k, v)| (k.to_string(), v.clone())).collect(),
            tenant: line.tenant.clone().or_else(|| base.tenant.as_deref().map(str::to_string)),
        }
    }
}

/// How a line's way through the stages ended early.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stopped {
    /// A stage dropped it (a `drop`, `match` with `action: drop`, `limit`,
    /// `sampling`, a malformed `json` with `drop_malformed`).
    Dropped,
    /// A stage holds it until more lines come (a `multiline` block, a
    /// container line's part): it goes on joined with them.
    Held,
}

/// Told what happens to each line (see the module documentation).
pub trait Inspector: Send + Sync {
    /// A line starts at stage `from` (0-based; more than 0 for lines a
    /// stage held, which go on after it) in state `state`.
    fn begin(&self, from: usize, state: LineState);
    /// Stage `index` (0-based, named `name` as in the config) ran.
    fn stage(&self, index: usize, name: &'static str, state: LineState);
    /// Stage `index` stopped the line.
    fn stopped(&self, index: usize, name: &'static str, how: Stopped);
    /// The line is sent with `stream`'s labels and tenant, as `state` says.
    fn sent(&self, stream: &Stream, state: LineState);
}
