//! A `multiline` stage anywhere in the list (Promtail's): per labels at
//! that point, a line matching `start` begins a block and the lines after
//! it join it with `\n`, until the next start line, `max_lines`, or no line
//! for `max_wait`. Until a start line was seen, lines pass one by one. The
//! joined line takes the start line's time, labels and extracted map, and
//! goes on through the stages after this one.
//!
//! A block holds the file's position before its first line (see
//! `FileContext::held_from`) until it is handed on.

use std::borrow::Cow;
use std::collections::HashSet;
use std::time::{Duration, Instant};

use regex::Regex;

use super::line::{Extracted, Line};
use crate::queue::StreamRef;
use crate::util::cut_at_char;

/// (stage, labels) pairs remembered as started before the set is cleared.
const MAX_STARTED: usize = 10_000;

/// A `multiline` stage's settings.
pub(super) struct Rule<'a> {
    pub start: &'a Regex,
    pub max_lines: usize,
    pub max_wait: Duration,
}

/// Lines being joined by stage `stage` for one set of labels.
#[derive(Debug)]
pub struct Block {
    stage: usize,
    key: u64,
    /// Offset of the first line in the file.
    pub(super) start: u64,
    text: String,
    lines: usize,
    pub(super) last: Instant,
    pub(super) max_wait: Duration,
    head: Head,
    /// Bytes were cut past the line limit (counted as truncated once handed on).
    pub(super) cut: bool,
}

/// What the joined line keeps of its start line.
#[derive(Debug)]
struct Head {
    ts: i64,
    assigned: bool,
    own_ts: Option<i64>,
    extracted: Vec<(String, Option<String>)>,
    labels: Vec<(String, Option<String>)>,
    metadata: Vec<(String, String)>,
    tenant: Option<String>,
}

impl Head {
    fn of(line: &Line<'_, '_>) -> Self {
        Self {
            ts: line.ts,
            assigned: line.assigned,
            own_ts: line.own_ts,
            extracted: line.extracted.owned_values(),
            labels: line.labels.iter().map(|(k, v)| (k.to_string(), v.clone())).collect(),
            metadata: line.metadata.iter().map(|(k, v)| (k.to_string(), v.clone())).collect(),
            tenant: line.tenant.clone(),
        }
    }
}

/// What a `multiline` stage did with a line.
pub(super) enum Offer {
    /// No start line was seen yet for its labels: it goes on alone.
    Pass,
    /// It joined a block (or began one); these blocks are complete, to be
    /// handed on in order.
    Held(Vec<Block>),
}

/// Stage `i`, a `multiline` stage, on `line` (which starts at `line_start`
/// in its file); `blocks` and `started` are the file's.
pub(super) fn offer(
    blocks: &mut Vec<Block>,
    started: &mut HashSet<(usize, u64)>,
    line: &Line<'_, '_>,
    i: usize,
    rule: &Rule<'_>,
    line_start: u64,
    max: usize,
) -> Offer {
    let key = line.labels_hash();
    let begins = rule.start.is_match(&line.text);
    if !begins && !started.contains(&(i, key)) {
        return Offer::Pass;
    }
    let mut done = Vec::new();
    let mut slot = blocks.iter().position(|b| b.stage == i && b.key == key);
    if begins {
        if let Some(n) = slot.take() {
            done.push(blocks.remove(n));
        }
        if started.len() >= MAX_STARTED {
            started.clear();
        }
        started.insert((i, key));
    }
    let now = Instant::now();
    let n = match slot {
        Some(n) => {
            let b = &mut blocks[n];
            if b.text.len() < max {
                b.text.push('\n');
                let room = max - b.text.len();
                b.cut |= line.text.len() > room;
                b.text.push_str(cut_at_char(&line.text, room));
            } else {
                b.cut = true;
            }
            b.lines += 1;
            b.last = now;
            n
        }
        None => {
            blocks.push(Block {
                stage: i,
                key,
                start: line_start,
                text: cut_at_char(&line.text, max).to_string(),
                lines: 1,
                last: now,
                max_wait: rule.max_wait,
                head: Head::of(line),
                cut: line.text.len() > max,
            });
            blocks.len() - 1
        }
    };
    if blocks[n].lines >= rule.max_lines {
        done.push(blocks.remove(n));
    }
    Offer::Held(done)
}

/// The blocks that waited their `max_wait` (all, with `force`), taken out.
pub(super) fn due(blocks: &mut Vec<Block>, now: Instant, force: bool) -> Vec<Block> {
    let (out, keep) =
        std::mem::take(blocks).into_iter().partition(|b| force || now.duration_since(b.last) >= b.max_wait);
    *blocks = keep;
    out
}

impl Block {
    /// The stage that joined it; the joined line goes on from the next one.
    pub(super) fn stage(&self) -> usize {
        self.stage
    }

    /// The joined line, with its start line's time, labels, extracted
    /// values (over the labels of `stream`), metadata and tenant.
    pub(super) fn into_line<'s>(self, stream: StreamRef) -> Line<'s, 'static> {
        let h = self.head;
        let mut line = Line::new(Cow::Owned(self.text), h.ts, h.assigned);
        line.own_ts = h.own_ts;
        line.extracted = Extracted::restored(stream, h.extracted);
        line.labels = h.labels.into_iter().map(|(k, v)| (Cow::Owned(k), v)).collect();
        line.metadata = h.metadata.into_iter().map(|(k, v)| (Cow::Owned(k), v)).collect();
        line.tenant = h.tenant;
        line
    }
}
