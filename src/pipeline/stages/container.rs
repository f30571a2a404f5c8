//! The `cri` and `docker` stages: a container runtime's line format, its
//! time and stream, and lines split in parts joined again.

use std::borrow::Cow;

use super::{FileContext, Processed, SourceStages};
use crate::pipeline::line::Line;
use crate::pipeline::parse;
use crate::pipeline::stage::{narrow, Held, Op};
use crate::util::cut_at_char;

/// A container line as read: its time, stream, whether it is whole, and its
/// message (owned, or where it lies in the line).
type Parsed = (Option<i64>, String, bool, Result<String, std::ops::Range<usize>>);

impl SourceStages {
    /// A `cri` or `docker` stage (`self.stages[i]`): the line becomes the
    /// message, the runtime's time its timestamp, `stream` an extracted
    /// value; a part of a longer line is held until the last part.
    pub(super) fn container<'s>(&'s self, ctx: &mut FileContext, line: &mut Line<'s, '_>, i: usize) -> Processed {
        let parsed = match self.stages[i].op {
            Op::Cri(part_max, _) => parse::cri(&line.text).map(|c| {
                let at = c.message.as_ptr() as usize - line.text.as_ptr() as usize;
                // A part over `max_partial_line_size` is cut before it is held (Promtail's truncate).
                let len = match part_max {
                    Some(n) if !c.complete && c.message.len() > n => {
                        ctx.truncated += 1;
                        cut_at_char(&c.message, n).len()
                    }
                    _ => c.message.len(),
                };
                (c.ts, c.stream.into_owned(), c.complete, Err(at..at + len))
            }),
            _ => match self.docker(ctx, line, i) {
                Some(d) => Some(d),
                None => return Processed::Kept,
            },
        };
        let Some((ts, stream, complete, message)) = parsed else {
            ctx.unparsed[2] += 1;
            return Processed::Kept;
        };
        // A time that does not read: the last one of this stream plus 1 ns
        // (Promtail's `fudge`), else the line's own.
        let last = ctx.container_times.iter_mut().find(|(s, n, _)| *s == i && *n == stream);
        let ts = match (ts, last) {
            _ if matches!(self.stages[i].op, Op::Docker) => ts.unwrap_or(line.ts),
            (Some(t), Some(slot)) => {
                slot.2 = t;
                t
            }
            (None, Some(slot)) => {
                slot.2 = slot.2.saturating_add(1);
                slot.2
            }
            (Some(t), None) => {
                ctx.container_times.push((i, stream.clone(), t));
                t
            }
            (None, None) => line.ts,
        };
        let text = std::mem::take(&mut line.text);
        let message: Cow<'_, str> = match message {
            Ok(owned) => Cow::Owned(owned),
            Err(range) => narrow(text, range),
        };
        if let (false, Op::Cri(_, max)) = (complete, &self.stages[i].op) {
            // Promtail's `max_partial_lines`: at the bound, those held go on alone.
            if ctx.held.iter().filter(|h| h.stage == i).count() >= *max {
                let (over, keep) = std::mem::take(&mut ctx.held).into_iter().partition(|h| h.stage == i);
                ctx.held = keep;
                ctx.overflow = over;
            }
        }
        // With `max_partial_line_size`, a joined line is cut to it too (Promtail's truncate).
        let cap = match self.stages[i].op {
            Op::Cri(Some(n), _) => n.min(self.max_line_bytes),
            _ => self.max_line_bytes,
        };
        let slot = ctx.held.iter().position(|h| h.stage == i && h.stream == stream);
        if !complete {
            match slot {
                Some(n) => {
                    let h = &mut ctx.held[n];
                    let room = cap.saturating_sub(h.text.len());
                    if message.len() > room {
                        ctx.truncated += 1;
                    }
                    h.text.push_str(cut_at_char(&message, room));
                }
                None => ctx.held.push(Held {
                    stage: i,
                    stream,
                    ts,
                    text: cut_at_char(&message, self.max_line_bytes).to_string(),
                    start: ctx.line_start,
                }),
            }
            return Processed::Held;
        }
        line.ts = ts;
        line.text = match slot {
            Some(n) => {
                let mut h = ctx.held.remove(n);
                // A joined CRI line has its last part's time, as in Promtail
                // (tests/promtail_side_by_side.rs); Docker's, its first part's.
                if !matches!(self.stages[i].op, Op::Cri(..)) {
                    line.ts = h.ts;
                }
                h.text.push_str(&message);
                if h.text.len() > cap {
                    ctx.truncated += 1;
                    h.text.truncate(cut_at_char(&h.text, cap).len());
                }
                Cow::Owned(h.text)
            }
            None => message,
        };
        line.assigned = false;
        if !stream.is_empty() {
            line.extracted.set(Cow::Borrowed("stream"), stream);
        }
        Processed::Kept
    }

    /// The `docker` stage's reading of a line, as Promtail's (a `json`,
    /// `labels`, `timestamp` and `output` stage in one): any JSON object gives
    /// its `stream`, `time` and `log`; a line that is none, or an object
    /// without `log`, stays as it is and passes on (`None`) with its stream and
    /// time where it has them. A time missing or that does not read is the
    /// last one of the same labels and stream plus 1 ns (the timestamp
    /// stage's `fudge`), else the line's own. `Some` is a line with `log`,
    /// its time settled, for [`Self::container`] to ship or hold.
    fn docker(&self, ctx: &mut FileContext, line: &mut Line<'_, '_>, i: usize) -> Option<Parsed> {
        let d = parse::docker(&line.text);
        if d.is_none() {
            ctx.unparsed[3] += 1;
        }
        let (ts, stream, message, complete) = match d {
            Some(d) => (d.ts, d.stream, d.message, d.complete),
            None => (None, None, None, true),
        };
        let key = {
            use std::hash::{Hash, Hasher};
            let mut h = std::collections::hash_map::DefaultHasher::new();
            (line.labels_hash(), &stream).hash(&mut h);
            (i, h.finish())
        };
        let ts = match ts {
            Some(t) => Some(t),
            None => ctx.last_time(key).map(|last| last.saturating_add(1)),
        };
        if let Some(t) = ts {
            ctx.remember_time(key, t);
        }
        let Some(message) = message else {
            if let Some(t) = ts {
                line.ts = t;
                line.assigned = false;
            }
            if let Some(s) = stream {
                line.extracted.set(Cow::Borrowed("stream"), s);
            }
            return None;
        };
        Some((ts, stream.unwrap_or_default(), complete, Ok(message)))
    }
}
