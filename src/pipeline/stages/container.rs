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
            Op::Cri(part_max, _) => cri(ctx, &line.text, part_max),
            _ => match self.docker(ctx, line, i) {
                Some(d) => Some(d),
                None => return Processed::Kept,
            },
        };
        let Some((ts, stream, complete, message)) = parsed else {
            ctx.unparsed[2] += 1;
            return Processed::Kept;
        };
        let ts = self.container_time(ctx, i, ts, &stream, line.ts);
        let text = std::mem::take(&mut line.text);
        let message: Cow<'_, str> = match message {
            Ok(owned) => Cow::Owned(owned),
            Err(range) => narrow(text, range),
        };
        if !complete {
            self.hold(ctx, i, stream, ts, &message);
            return Processed::Held;
        }
        line.ts = ts;
        let cap = self.joined_cap(i);
        let slot = ctx.held.iter().position(|h| h.stage == i && h.stream == stream);
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

    /// A container line's time: when it does not read, the last one of this
    /// stream plus 1 ns (Promtail's `fudge`), else `own`, the line's.
    fn container_time(&self, ctx: &mut FileContext, i: usize, ts: Option<i64>, stream: &str, own: i64) -> i64 {
        let last = ctx.container_times.iter_mut().find(|(s, n, _)| *s == i && *n == stream);
        match (ts, last) {
            _ if matches!(self.stages[i].op, Op::Docker) => ts.unwrap_or(own),
            (Some(t), Some(slot)) => {
                slot.2 = t;
                t
            }
            (None, Some(slot)) => {
                slot.2 = slot.2.saturating_add(1);
                slot.2
            }
            (Some(t), None) => {
                ctx.container_times.push((i, stream.to_string(), t));
                t
            }
            (None, None) => own,
        }
    }

    /// The size a joined line is cut to: with `max_partial_line_size`, that
    /// too (Promtail's truncate).
    fn joined_cap(&self, i: usize) -> usize {
        match self.stages[i].op {
            Op::Cri(Some(n), _) => n.min(self.max_line_bytes),
            _ => self.max_line_bytes,
        }
    }

    /// A part of a longer line, held (joined to the parts of its stream
    /// held before) until the last part comes.
    fn hold(&self, ctx: &mut FileContext, i: usize, stream: String, ts: i64, message: &str) {
        if let Op::Cri(_, max) = &self.stages[i].op {
            // Promtail's `max_partial_lines`: at the bound, those held go on alone.
            if ctx.held.iter().filter(|h| h.stage == i).count() >= *max {
                let (over, keep) = std::mem::take(&mut ctx.held).into_iter().partition(|h| h.stage == i);
                ctx.held = keep;
                ctx.overflow = over;
            }
        }
        let cap = self.joined_cap(i);
        match ctx.held.iter().position(|h| h.stage == i && h.stream == stream) {
            Some(n) => {
                let h = &mut ctx.held[n];
                let room = cap.saturating_sub(h.text.len());
                if message.len() > room {
                    ctx.truncated += 1;
                }
                h.text.push_str(cut_at_char(message, room));
            }
            None => ctx.held.push(Held {
                stage: i,
                stream,
                ts,
                text: cut_at_char(message, self.max_line_bytes).to_string(),
                start: ctx.line_start,
            }),
        }
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
        // Promtail's `fudge` remembers times by the labels the line has once
        // its `stream` is labelled: the stream read, else the label it has.
        let key = {
            use std::hash::{Hash, Hasher};
            let mut h = std::collections::hash_map::DefaultHasher::new();
            let labelled = stream.as_deref().or_else(|| line.label("stream", &ctx.stream.labels));
            (line.labels_hash(), labelled).hash(&mut h);
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

/// A CRI line's parts: where its message lies in `text`; a part over
/// `max_partial_line_size` is cut before it is held (Promtail's truncate).
fn cri(ctx: &mut FileContext, text: &str, part_max: Option<usize>) -> Option<Parsed> {
    parse::cri(text).map(|c| {
        let at = c.message.as_ptr() as usize - text.as_ptr() as usize;
        let len = match part_max {
            Some(n) if !c.complete && c.message.len() > n => {
                ctx.truncated += 1;
                cut_at_char(&c.message, n).len()
            }
            _ => c.message.len(),
        };
        (c.ts, c.stream.into_owned(), c.complete, Err(at..at + len))
    })
}
