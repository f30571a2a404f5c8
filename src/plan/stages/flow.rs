//! Compiling the stages that decide which lines go on, and when: `limit`
//! (a rate limit, per label value if asked), `sampling`, and `multiline`
//! (lines joined into entries). `drop` and `match` have their own places.

use crate::config::{LimitStage, MultilineConfig, SamplingStage};
use crate::pipeline::{ByLabel, Op};
use crate::plan::names::{regex, Errors};
use crate::util::is_valid_label_name;

/// A `limit` stage: at most `rate` lines a second, `burst` at once.
pub(super) fn limit(l: &LimitStage, e: &mut Errors<'_>) -> Option<Op> {
    if !(l.rate.is_finite() && l.rate > 0.0) {
        e(".limit.rate", "must be a number of lines per second above 0".into());
        return None;
    }
    // Without a burst, a second's worth of lines may come at once.
    let burst = if l.burst == 0 { l.rate.ceil().max(1.0) } else { f64::from(l.burst) };
    let drop = l.drop.unwrap_or(true);
    if !drop && l.by_label_name.is_some() {
        e(".limit.drop", "must be true with by_label_name (Promtail refuses it too)".into());
        return None;
    }
    let by_label = match &l.by_label_name {
        None => None,
        Some(n) if !is_valid_label_name(n) => {
            e(".limit.by_label_name", format!("`{n}` is not a valid label name"));
            return None;
        }
        Some(n) => Some(ByLabel {
            name: n.clone(),
            max_values: l.max_distinct_labels.unwrap_or(0).max(10_000) as usize,
            buckets: Default::default(),
        }),
    };
    Some(Op::Limit { rate: l.rate, burst, by_label, drop, bucket: Default::default() })
}

/// A `sampling` stage: a share of the lines kept.
pub(super) fn sampling(sm: &SamplingStage, e: &mut Errors<'_>) -> Option<Op> {
    if !(sm.rate > 0.0 && sm.rate <= 1.0) {
        e(".sampling.rate", "the share of lines kept: above 0 and at most 1".into());
        return None;
    }
    let reason = sm.reason.clone().unwrap_or_else(|| "sampling_stage".into());
    Some(Op::Sampling { rate: sm.rate, reason })
}

/// A `multiline` stage: lines joined into entries that begin with `start`
/// (a journal source's entries too, as Promtail's stage joins them).
pub(super) fn multiline(m: &MultilineConfig, e: &mut Errors<'_>) -> Option<Op> {
    if m.start.is_empty() {
        e(".multiline.start", "missing: the regex of a line that starts an entry".into());
        return None;
    }
    if m.max_lines == 0 {
        e(".multiline.max_lines", "must be at least 1".into());
        return None;
    }
    let start = regex(".multiline.start", &m.start, e)?;
    Some(Op::Multiline { start, max_lines: m.max_lines, max_wait: m.max_wait.get() })
}
