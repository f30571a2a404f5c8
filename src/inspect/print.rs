//! How `tailship inspect` reports, as text for people or as JSON lines for
//! tools. Text, after Promtail's `-inspect` (each stage with what it
//! changed, `+` added, `-` removed) and its dry run (the line as sent):
//!
//! ```text
//! # /var/log/app.log: source `app`, 4 stages
//! line 1: 2024-05-01T10:00:00Z info hello
//!   labels {filename="/var/log/app.log", job="app"}
//!   [1] regex        extracted +level="info" +msg="hello" +ts="2024-05-01T10:00:00Z"
//!   [2] labels       labels +level="info"
//!   [3] timestamp    timestamp 2024-05-01T10:00:00Z (was the read time)
//!   [4] output       line "hello"
//!   => sent at 2024-05-01T10:00:00Z with {filename="/var/log/app.log", job="app", level="info"}: hello
//! ```
//!
//! A line a stage drops ends with `dropped` at that stage; one a stage
//! holds (a multiline block, a container line's part) with `held`, and
//! goes on joined with the lines that complete it.

use std::collections::BTreeMap;
use std::io::Write;
use std::sync::{Mutex, MutexGuard};

use serde_json::{json, Map, Value};

use crate::pipeline::{Inspector, LineState, Stopped};
use crate::queue::Stream;

/// How the report is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Text,
    /// One JSON object per event (input, line, stage, sent, dropped, held).
    Json,
}

/// What became of the lines inspected.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Totals {
    /// Lines (or multiline entries of the source) that entered the stages.
    pub lines: u64,
    pub sent: u64,
    pub dropped: u64,
}

/// Reports what the stages do (an [`Inspector`]).
pub(super) struct Printer {
    format: Format,
    state: Mutex<State>,
}

struct State {
    out: Box<dyn Write + Send>,
    /// The first write that failed; the rest is not written.
    error: Option<std::io::Error>,
    /// The line's state before the stage that runs next.
    prev: Option<LineState>,
    totals: Totals,
}

/// Width of the stage column (`[12] static_labels`).
const STAGE: usize = 17;

impl Printer {
    pub(super) fn new(out: Box<dyn Write + Send>, format: Format) -> Self {
        Self { format, state: Mutex::new(State { out, error: None, prev: None, totals: Totals::default() }) }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Writes one line of text, or one JSON event.
    fn emit(&self, s: &mut State, text: impl FnOnce() -> String, event: impl FnOnce() -> Value) {
        if s.error.is_some() {
            return;
        }
        let line = match self.format {
            Format::Text => text(),
            Format::Json => event().to_string(),
        };
        if let Err(e) = writeln!(s.out, "{line}") {
            s.error = Some(e);
        }
    }

    /// A new input, read through `source`'s `stages` stages.
    pub(super) fn input(&self, shown: &str, source: &str, stages: usize) {
        let s = &mut self.lock();
        let plural = if stages == 1 { "" } else { "s" };
        self.emit(
            s,
            || format!("# {shown}: source `{source}`, {stages} stage{plural}"),
            || json!({"input": shown, "source": source, "stages": stages}),
        );
    }

    /// Something to say about the input.
    pub(super) fn note(&self, what: &str) {
        let s = &mut self.lock();
        self.emit(s, || format!("  {what}"), || json!({ "note": what }));
    }

    /// The input ended: what stages held goes on now.
    pub(super) fn end_of_input(&self) {
        let s = &mut self.lock();
        self.emit(s, || "# end of input: lines held by stages go on".into(), || json!({"end_of_input": true}));
    }

    /// Fails with the first write error, if any.
    pub(super) fn check(&self) -> std::io::Result<()> {
        match self.lock().error.take() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// Writes the totals, flushes, and returns them.
    pub(super) fn finish(&self) -> std::io::Result<Totals> {
        let s = &mut self.lock();
        let t = s.totals;
        self.emit(
            s,
            || format!("# {} line(s): {} sent, {} dropped", t.lines, t.sent, t.dropped),
            || json!({"lines": t.lines, "sent": t.sent, "dropped": t.dropped}),
        );
        if let Some(e) = s.error.take() {
            return Err(e);
        }
        s.out.flush()?;
        Ok(t)
    }
}

impl Inspector for Printer {
    fn begin(&self, from: usize, state: LineState) {
        let s = &mut self.lock();
        if from == 0 {
            s.totals.lines += 1;
            let n = s.totals.lines;
            self.emit(
                s,
                || {
                    let tenant = state.tenant.as_deref().map(|t| format!(" tenant {t:?}")).unwrap_or_default();
                    format!("line {n}: {}\n  labels {}{tenant}", shown(&state.text), selector(&state.labels))
                },
                || json!({"line": n, "text": state.text, "labels": state.labels, "tenant": state.tenant}),
            );
        } else {
            self.emit(
                s,
                || format!("  lines held by stage {from} go on as one: {}", shown(&state.text)),
                || json!({"held_by": from, "text": state.text, "labels": state.labels}),
            );
        }
        s.prev = Some(state);
    }

    fn stage(&self, index: usize, name: &'static str, state: LineState) {
        let s = &mut self.lock();
        let changes = s.prev.as_ref().map(|p| changes(p, &state)).unwrap_or_default();
        let head = format!("  [{}] {name}", index + 1);
        self.emit(
            s,
            || {
                if changes.is_empty() {
                    return format!("{head:<STAGE$} no change");
                }
                let pad = " ".repeat(STAGE);
                let mut out = String::new();
                for (i, c) in changes.iter().enumerate() {
                    let lead = if i == 0 { format!("{head:<STAGE$}") } else { pad.clone() };
                    out.push_str(&format!("{}{lead} {}", if i == 0 { "" } else { "\n" }, c.text));
                }
                out
            },
            || {
                let obj: Map<String, Value> = changes.iter().map(|c| (c.what.to_string(), c.json.clone())).collect();
                json!({"stage": index + 1, "name": name, "changes": obj})
            },
        );
        s.prev = Some(state);
    }

    fn stopped(&self, index: usize, name: &'static str, how: Stopped) {
        let s = &mut self.lock();
        let head = format!("  [{}] {name}", index + 1);
        let (word, text) = match how {
            Stopped::Dropped => ("dropped", "dropped"),
            Stopped::Held => ("held", "held: goes on with the lines that complete it"),
        };
        if how == Stopped::Dropped {
            s.totals.dropped += 1;
        }
        self.emit(s, || format!("{head:<STAGE$} {text}"), || json!({"stage": index + 1, "name": name, word: true}));
        s.prev = None;
    }

    fn sent(&self, stream: &Stream, state: LineState) {
        let s = &mut self.lock();
        s.totals.sent += 1;
        let labels: BTreeMap<String, String> = stream.labels.iter().cloned().collect();
        let tenant = stream.tenant.as_deref();
        self.emit(
            s,
            || {
                let read = if state.read_time { " (the read time)" } else { "" };
                let to = tenant.map(|t| format!(" to tenant {t:?}")).unwrap_or_default();
                let meta = if state.metadata.is_empty() {
                    String::new()
                } else {
                    format!(" and metadata {}", selector(&state.metadata))
                };
                format!(
                    "  => sent at {}{read} with {}{meta}{to}: {}",
                    rfc3339(state.ts),
                    selector(&labels),
                    shown(&state.text)
                )
            },
            || {
                json!({"sent": {"timestamp": rfc3339(state.ts), "read_time": state.read_time, "labels": labels,
                    "tenant": tenant, "metadata": state.metadata, "line": state.text}})
            },
        );
        s.prev = None;
    }
}

/// One kind of change a stage made: as text, and as JSON under `what`.
struct Change {
    what: &'static str,
    text: String,
    json: Value,
}

/// What differs from `a` to `b`: extracted values, labels, metadata, tenant, timestamp, line.
fn changes(a: &LineState, b: &LineState) -> Vec<Change> {
    let mut out = Vec::new();
    for (what, x, y) in [
        ("extracted", &a.extracted, &b.extracted),
        ("labels", &a.labels, &b.labels),
        ("metadata", &a.metadata, &b.metadata),
    ] {
        if let Some(c) = map_change(what, x, y) {
            out.push(c);
        }
    }
    if a.tenant != b.tenant {
        let text = format!("tenant {:?}", b.tenant.as_deref().unwrap_or(""));
        out.push(Change { what: "tenant", text, json: json!([a.tenant, b.tenant]) });
    }
    if a.ts != b.ts || a.read_time != b.read_time {
        let was = if a.read_time { " (was the read time)".to_string() } else { format!(" (was {})", rfc3339(a.ts)) };
        let text = format!("timestamp {}{was}", rfc3339(b.ts));
        out.push(Change { what: "timestamp", text, json: json!([rfc3339(a.ts), rfc3339(b.ts)]) });
    }
    if a.text != b.text {
        out.push(Change { what: "line", text: format!("line {:?}", b.text), json: json!([a.text, b.text]) });
    }
    out
}

/// Added (`+k="v"`), removed (`-k`) and changed (`k="old"->"new"`) entries of a map.
fn map_change(what: &'static str, a: &BTreeMap<String, String>, b: &BTreeMap<String, String>) -> Option<Change> {
    let mut parts = Vec::new();
    let mut obj = Map::new();
    for (k, v) in b {
        match a.get(k) {
            None => parts.push(format!("+{k}={v:?}")),
            Some(old) if old != v => parts.push(format!("{k}={old:?}->{v:?}")),
            Some(_) => continue,
        }
        obj.insert(k.clone(), json!([a.get(k), v]));
    }
    for k in a.keys().filter(|k| !b.contains_key(*k)) {
        parts.push(format!("-{k}"));
        obj.insert(k.clone(), json!([a.get(k), Value::Null]));
    }
    (!parts.is_empty()).then(|| Change { what, text: format!("{what} {}", parts.join(" ")), json: Value::Object(obj) })
}

/// `{a="1", b="2"}`.
fn selector(labels: &BTreeMap<String, String>) -> String {
    crate::logql::format_selector(labels.iter().map(|(k, v)| (k.as_str(), v.as_str())))
}

/// A line as printed: as it is, or quoted with escapes when it holds control characters.
fn shown(text: &str) -> String {
    if text.chars().any(char::is_control) {
        format!("{text:?}")
    } else {
        text.to_string()
    }
}

/// RFC 3339 in UTC with nanoseconds.
fn rfc3339(ts: i64) -> String {
    chrono::DateTime::from_timestamp_nanos(ts).to_rfc3339_opts(chrono::SecondsFormat::Nanos, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(text: &str, extracted: &[(&str, &str)], labels: &[(&str, &str)]) -> LineState {
        let map = |kv: &[(&str, &str)]| kv.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        LineState {
            text: text.into(),
            ts: 1_000,
            read_time: true,
            extracted: map(extracted),
            labels: map(labels),
            metadata: BTreeMap::new(),
            tenant: None,
        }
    }

    #[test]
    fn changes_say_what_was_added_removed_and_changed() {
        let a = state("x", &[("a", "1"), ("gone", "z")], &[("job", "app")]);
        let mut b = state("y", &[("a", "2"), ("new", "n")], &[("job", "app"), ("level", "info")]);
        b.ts = 2_000_000_000;
        b.read_time = false;
        let text: Vec<String> = changes(&a, &b).into_iter().map(|c| c.text).collect();
        assert_eq!(
            text,
            vec![
                r#"extracted a="1"->"2" +new="n" -gone"#,
                r#"labels +level="info""#,
                "timestamp 1970-01-01T00:00:02.000000000Z (was the read time)",
                r#"line "y""#,
            ]
        );
        assert!(changes(&a, &a).is_empty());
    }
}
