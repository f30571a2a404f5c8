//! One stage over one line: what it does, and whether the line goes on.

use std::borrow::Cow;

use super::super::line::Line;
use super::super::multiline::{self, Block};
use super::super::stage::{take_shared, Op, Stage};
use super::super::{apply, json, metrics, pack};
use super::{count_drop, count_limited_by, FileContext, Processed, SourceStages};
use crate::queue::Chunk;

/// Where a line goes after a stage.
pub(super) enum Flow {
    Next,
    /// It stops here: dropped, or held (a container line's part).
    Stop(Processed),
    /// It is held by a `multiline` stage, which let these blocks go on.
    Blocks(Vec<Block>),
}

impl SourceStages {
    /// Runs stage `i` on `line`: on to the next stage (`next`, which a
    /// `match` may move past the stages it skips), or the line stops here.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn step<'s, 'l>(
        &'s self,
        ctx: &mut FileContext,
        line: &mut Line<'s, 'l>,
        stage: &'s Stage,
        i: usize,
        next: &mut usize,
        read_ts: i64,
        chunk: &mut Chunk,
    ) -> Flow {
        let drop = |ctx: &mut FileContext, reason: &str| {
            count_drop(ctx, reason);
            Flow::Stop(Processed::Dropped)
        };
        match &stage.op {
            Op::Match { selector, drop: dropping, skip, reason } => {
                let base = &ctx.stream.labels;
                let hit = selector.matches_labels(|n| line.label(n, base)) && selector.matches_line(&line.text);
                if *dropping && hit {
                    return drop(ctx, reason);
                }
                if !*dropping && !hit {
                    *next += skip;
                }
            }
            Op::Drop(rule) => {
                let now = if rule.older_than_ns.is_some() { crate::util::now_ns() as i64 } else { 0 };
                if apply::drops(rule, line, now) {
                    return drop(ctx, &rule.reason);
                }
            }
            Op::Json { fields, source, drop_malformed } => {
                if json::apply(line, fields, source.as_deref()) == json::Parsed::Malformed {
                    if *drop_malformed {
                        ctx.malformed_json += 1;
                        return Flow::Stop(Processed::Dropped);
                    }
                    ctx.unparsed[0] += 1;
                }
            }
            Op::Cri(..) | Op::Docker => {
                let p = self.container(ctx, line, i);
                if !ctx.overflow.is_empty() {
                    let over = std::mem::take(&mut ctx.overflow);
                    self.pass_held(ctx, over, read_ts, chunk);
                }
                if p == Processed::Held {
                    return Flow::Stop(Processed::Held);
                }
            }
            Op::Sampling { rate, reason } => {
                if fastrand::f64() >= *rate {
                    return drop(ctx, reason);
                }
            }
            Op::Multiline { start, max_lines, max_wait } => {
                let rule = multiline::Rule { start, max_lines: *max_lines, max_wait: *max_wait };
                let (blocks, started) = (&mut ctx.blocks, &mut ctx.started);
                if let multiline::Offer::Held(done) =
                    multiline::offer(blocks, started, line, i, &rule, ctx.line_start, self.max_line_bytes)
                {
                    return Flow::Blocks(done);
                }
            }
            Op::Limit { rate, burst, by_label: Some(by), .. } => {
                if let Some(v) = line.label(&by.name, &ctx.stream.labels) {
                    if !by.take(v, *rate, *burst, read_ts) {
                        ctx.limited += 1;
                        if crate::metrics::promtail::get().is_some() {
                            count_limited_by(&mut ctx.limited_by, &by.name, v);
                        }
                        return Flow::Stop(Processed::Dropped);
                    }
                }
            }
            Op::Limit { rate, burst, by_label: None, drop: dropping, bucket } => {
                // Waiting runs on the real clock (the lines of one read share `read_ts`).
                let now = if *dropping { read_ts } else { crate::util::now_ns() as i64 };
                match take_shared(bucket, *rate, *burst, now, !*dropping) {
                    None => {}
                    Some(wait) if !*dropping => self.wait(wait),
                    Some(_) => {
                        ctx.limited += 1;
                        return Flow::Stop(Processed::Dropped);
                    }
                }
            }
            op => self.transform(ctx, line, op, i),
        }
        Flow::Next
    }

    /// Stage `i` (`op`), one that never stops a line: what it does to it.
    fn transform<'s>(&'s self, ctx: &mut FileContext, line: &mut Line<'s, '_>, op: &'s Op, i: usize) {
        match op {
            Op::Regex { re, names, source } => apply::regex(line, re, names, source.as_deref()),
            Op::Logfmt { fields, source } => {
                if !apply::logfmt(line, fields, source.as_deref()) {
                    ctx.unparsed[1] += 1;
                }
            }
            Op::Timestamp { source, formats, fudge } => apply::timestamp(ctx, i, line, source, formats, *fudge),
            Op::Output(name) => {
                if let Some(v) = line.extracted.get(name) {
                    line.text = Cow::Owned(v.to_string());
                }
            }
            Op::Replace { re, with, source } => apply::replace(line, re, with, source.as_deref()),
            Op::ReplaceGroups { re, template: t, source } => apply::replace_groups(line, re, t, source.as_deref()),
            Op::Decolorize(re) => apply::replace(line, re, "", None),
            Op::LabelAllow(allow) => apply::label_allow(line, allow, &ctx.stream.labels),
            Op::StaticLabels(labels) => apply::static_labels(line, labels),
            Op::LabelDrop(names) => apply::label_drop(line, names),
            Op::Tenant(from) => {
                if !apply::tenant(line, from, &ctx.stream.labels) {
                    ctx.invalid_tenant += 1;
                }
            }
            Op::Template { source, template } => apply::template(line, source, template),
            Op::Truncate { limit, suffix, target } => {
                if pack::truncate(line, *limit, suffix, target, &ctx.stream.labels) {
                    ctx.truncated += 1;
                }
            }
            Op::Pack { labels, ingest_timestamp } => {
                pack::pack(line, labels, &ctx.stream.labels);
                if *ingest_timestamp {
                    line.ts = crate::util::now_ns() as i64;
                    line.assigned = false;
                }
            }
            Op::Metrics(m) => metrics::apply(m, line, &ctx.stream.labels),
            Op::GeoIp(g) => g.apply(line),
            Op::Match { .. }
            | Op::Drop(_)
            | Op::Json { .. }
            | Op::Cri(..)
            | Op::Docker
            | Op::Sampling { .. }
            | Op::Multiline { .. }
            | Op::Limit { .. }
            | Op::Labels => {}
        }
    }
}
