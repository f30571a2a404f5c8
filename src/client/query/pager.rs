//! The [`Pager`]: many bounded `query_range` requests made into one ordered
//! stream of entries.
//!
//! The log API has no cursor: a range query returns at most `limit` entries of
//! `[start, end)` in time order, and the spec says to page by moving `start`
//! just past the last timestamp received. Moving it to `last + 1` would lose
//! entries when several share the last timestamp and the page ended among them
//! (the service orders entries within one timestamp as it likes). So:
//!
//! - A page that came back with fewer entries than asked for holds everything
//!   left in the window: the query is done (a tail moves `start` to the
//!   request's `end` and waits for more).
//! - After a full page whose last entry has timestamp `T`, the next request
//!   starts *at* `T` (forward; backward sets the exclusive `end` to `T + 1`),
//!   and the entries already seen at `T` are remembered as (stream, line)
//!   pairs. The service stores one entry per stream, timestamp and line, so
//!   that pair names an entry exactly; seen ones are skipped when they come
//!   back.
//! - A request asks for `batch` entries while fewer than `batch` were seen at
//!   the boundary, else for `seen + batch`. A full answer of `limit` entries
//!   holds at most `seen` old ones, so at least one new entry (usually nearly a
//!   batch), whatever order the service picks within `T`: paging always moves
//!   on, even when more entries share one timestamp than fit a batch.
//!
//! The cost: each page after the first re-reads the few entries at its
//! boundary. Only a run of more than `batch` entries at one nanosecond makes a
//! request ask for more than `batch`; against a service that caps `limit`
//! (5,000 by default) such a run can end the query with that service's 400.
//!
//! The service's answer is not taken on trust:
//!
//! - entries outside the range asked for (`[start, end)`) are dropped and
//!   counted ([`Pager::outside`]): a service that widens the range (rounds
//!   `start` down to its own precision, say) would otherwise print entries
//!   twice, and one whose page ends before `start` would move `start` back
//!   and page for ever;
//! - `start` (forward) and `end` (backward) only ever move on;
//! - a full page that brings nothing new (or, for a tail, leaves the next
//!   request what this one was) cannot be paged past: [`Pager::accept`]
//!   returns [`NoProgress`] instead of asking the same again.
//!
//! A tail ([`Pager::follow`]) cannot take a short page as the end of a
//! window: a line stored late (an agent's batch wait, a retried push, a
//! timestamp from the line) lands in a window already polled. So each
//! window after a short page starts `overlap` before the last one ended,
//! and every entry returned within the overlap is remembered as (timestamp,
//! stream, line) and skipped when it comes back: each line shows once,
//! however late it arrives within the overlap.
//!

use std::collections::HashSet;

use super::{Direction, Entry};

/// A page that cannot be paged past: the service answered a full page (as
/// many entries as asked for) and none of them was new within the range
/// asked, so asking again would bring the same.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "the service answered {answered} entries to a request for {limit} from {} to {} and none was new{}: \
     paging cannot go on",
    time(*start),
    time(*end),
    if *outside > 0 { format!(" ({outside} of them outside that range)") } else { String::new() }
)]
pub struct NoProgress {
    /// The request's range (Unix ns; `end` exclusive) and limit.
    pub start: i64,
    pub end: i64,
    pub limit: usize,
    /// Entries in the answer, and how many of them were outside the range.
    pub answered: usize,
    pub outside: usize,
}

/// RFC 3339 in UTC with nanoseconds.
fn time(ts: i64) -> String {
    chrono::DateTime::from_timestamp_nanos(ts).to_rfc3339_opts(chrono::SecondsFormat::Nanos, true)
}

/// One `query_range` request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RangeRequest {
    pub query: String,
    /// Unix nanoseconds, inclusive.
    pub start: i64,
    /// Unix nanoseconds, exclusive.
    pub end: i64,
    pub limit: usize,
    pub direction: Direction,
}

/// The paging state of one query (see the module header).
#[derive(Debug)]
pub struct Pager {
    query: String,
    direction: Direction,
    start: i64,
    end: i64,
    batch: usize,
    /// Entries still to return; `None` returns everything.
    remaining: Option<usize>,
    /// The timestamp the last full page ended on, and the entries seen at it.
    boundary: Option<(i64, HashSet<(String, String)>)>,
    /// A tail: a short page moves `start` to `overlap` before the request's end instead of ending.
    follow: bool,
    overlap: i64,
    /// A tail's entries returned since `start` (see the module header).
    shown: HashSet<(i64, String, String)>,
    /// Entries answered outside the range asked for, dropped (see the module header).
    outside: u64,
    done: bool,
}

impl Pager {
    /// Pages through `[start, end)` in `direction`, `batch` entries per request,
    /// returning at most `limit` entries (`None`: all).
    pub fn range(query: &str, direction: Direction, start: i64, end: i64, limit: Option<usize>, batch: usize) -> Self {
        Self {
            query: query.to_string(),
            direction,
            start,
            end,
            batch: batch.max(1),
            remaining: limit,
            boundary: None,
            follow: false,
            overlap: 0,
            shown: HashSet::new(),
            outside: 0,
            done: limit == Some(0),
        }
    }

    /// Follows new entries forward from `start`; the caller moves the end with
    /// each [`Pager::request_until`]. Each window after a short page starts
    /// `overlap` nanoseconds before the last one ended (see the module header).
    pub fn follow(query: &str, start: i64, batch: usize, overlap: i64) -> Self {
        let mut p = Self::range(query, Direction::Forward, start, start, None, batch);
        p.follow = true;
        p.overlap = overlap.max(0);
        p
    }

    pub fn is_done(&self) -> bool {
        self.done
    }

    /// Where the next request starts (inclusive).
    pub fn start(&self) -> i64 {
        self.start
    }

    /// Entries the service answered outside the range asked for, dropped so far.
    pub fn outside(&self) -> u64 {
        self.outside
    }

    /// Drops the entries of `entries` outside `req`'s range, counting them;
    /// returns how many were dropped.
    fn keep_asked(&mut self, req: &RangeRequest, entries: &mut Vec<Entry>) -> usize {
        let before = entries.len();
        entries.retain(|e| e.ts >= req.start && e.ts < req.end);
        let dropped = before - entries.len();
        self.outside += dropped as u64;
        dropped
    }

    /// The next request of a fixed range, or `None` when paging is over.
    pub fn next_request(&self) -> Option<RangeRequest> {
        if self.done || self.start >= self.end {
            return None;
        }
        let seen = self.boundary.as_ref().map_or(0, |(_, s)| s.len());
        let want = self.remaining.map_or(self.batch, |r| r.min(self.batch));
        Some(RangeRequest {
            query: self.query.clone(),
            start: self.start,
            end: self.end,
            limit: if seen < want { want } else { seen + want },
            direction: self.direction,
        })
    }

    /// For a tail: the next request up to `end`, or `None` when nothing new can
    /// be asked for yet.
    pub fn request_until(&mut self, end: i64) -> Option<RangeRequest> {
        self.end = self.end.max(end);
        self.next_request()
    }

    /// Takes the answer to `req`; returns the entries not returned before, in
    /// order, and whether the page was full (more may be waiting at once).
    /// Entries outside `req`'s range are dropped and counted; a full page
    /// that leaves nothing to ask next but the same is [`NoProgress`].
    pub fn accept(&mut self, req: &RangeRequest, mut entries: Vec<Entry>) -> Result<(Vec<Entry>, bool), NoProgress> {
        let answered = entries.len();
        let full = answered >= req.limit;
        let outside = self.keep_asked(req, &mut entries);
        let no_progress = NoProgress { start: req.start, end: req.end, limit: req.limit, answered, outside };
        if self.follow {
            let (fresh, more) = self.accept_follow(req, entries, full);
            if full && fresh.is_empty() && self.next_request().as_ref() == Some(req) {
                return Err(no_progress);
            }
            return Ok((fresh, more));
        }
        // A stable sort keeps the service's order within one timestamp.
        match self.direction {
            Direction::Forward => entries.sort_by_key(|e| e.ts),
            Direction::Backward => entries.sort_by_key(|e| std::cmp::Reverse(e.ts)),
        }
        let last_ts = entries.last().map(|e| e.ts);
        let prev = self.boundary.take();
        let mut seen_now = HashSet::new();
        let mut fresh = Vec::with_capacity(entries.len());
        for e in entries {
            let at_prev = prev.as_ref().is_some_and(|(ts, _)| *ts == e.ts);
            let at_last = Some(e.ts) == last_ts;
            let key = if at_prev || at_last { Some(e.key()) } else { None };
            let was_seen = match (&prev, &key) {
                (Some((_, seen)), Some(k)) if at_prev => seen.contains(k),
                _ => false,
            };
            if let (true, Some(k)) = (at_last, key) {
                seen_now.insert(k);
            }
            if !was_seen {
                fresh.push(e);
            }
        }
        if let (Some((ts, seen)), Some(last)) = (prev, last_ts) {
            if ts == last {
                // Entries seen at this timestamp earlier may not all have come back this time.
                seen_now.extend(seen);
            }
        }
        // A page with new entries may not be the last, even when it is short:
        // services cap a page below the `limit` asked (Loki's
        // max_entries_limit_per_query). Only a page that brings nothing new ends.
        let brought_new = !fresh.is_empty();
        if let Some(r) = &mut self.remaining {
            fresh.truncate(*r);
            *r -= fresh.len();
            if *r == 0 {
                self.done = true;
            }
        }
        match (brought_new, last_ts) {
            (true, Some(ts)) => {
                // Every entry kept is within the range asked: these only move on.
                match self.direction {
                    Direction::Forward => self.start = self.start.max(ts),
                    Direction::Backward => self.end = self.end.min(ts.saturating_add(1)),
                }
                self.boundary = Some((ts, seen_now));
            }
            // A full page holds something new from a service that keeps to
            // the range and the limit (see the module header): asking again
            // would bring the same.
            _ if full => {
                self.done = true;
                return Err(no_progress);
            }
            _ => self.done = true,
        }
        Ok((fresh, brought_new && !self.done))
    }

    /// A tail's [`Pager::accept`]: entries shown before are skipped; a full
    /// page moves on from its last timestamp, a short one back to `overlap`
    /// before its end.
    fn accept_follow(&mut self, req: &RangeRequest, mut entries: Vec<Entry>, full: bool) -> (Vec<Entry>, bool) {
        entries.sort_by_key(|e| e.ts);
        let last_ts = entries.last().map(|e| e.ts);
        let mut fresh = Vec::with_capacity(entries.len());
        let mut at_last = HashSet::new();
        for e in entries {
            let (stream, line) = e.key();
            if Some(e.ts) == last_ts {
                at_last.insert((stream.clone(), line.clone()));
            }
            if self.shown.insert((e.ts, stream, line)) {
                fresh.push(e);
            }
        }
        match (full, last_ts) {
            (true, Some(ts)) => {
                // More wait at once: on from the last timestamp (its entries are known).
                self.start = self.start.max(ts);
                self.boundary = Some((ts, at_last));
            }
            _ => {
                self.start = self.start.max(req.end.saturating_sub(self.overlap));
                self.boundary = None;
            }
        }
        let start = self.start;
        self.shown.retain(|(ts, _, _)| *ts >= start);
        (fresh, full)
    }

    /// The service refused the `limit` asked as too large and named its
    /// maximum: ask for at most that from now on. False when the batch is
    /// that small already (a run of entries at one timestamp longer than the
    /// service's maximum cannot be paged through; the caller gives up).
    pub fn lower_batch(&mut self, max: usize) -> bool {
        let max = max.max(1);
        let lowered = max < self.batch;
        self.batch = self.batch.min(max);
        lowered
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    use crate::client::query::Stream;

    fn entry(stream: &Arc<Stream>, ts: i64, line: &str) -> Entry {
        Entry { ts, stream: stream.clone(), line: line.to_string() }
    }

    fn stream(v: &str) -> Arc<Stream> {
        Arc::new(Stream::new([("job".to_string(), v.to_string())].into_iter().collect()))
    }

    /// A model service: entries sorted by ts; within a ts, `shuffle` picks an
    /// order per request so the pager cannot rely on it.
    fn serve(all: &[Entry], r: &RangeRequest, flip: bool) -> Vec<Entry> {
        let mut v: Vec<Entry> = all.iter().filter(|e| e.ts >= r.start && e.ts < r.end).cloned().collect();
        v.sort_by_key(|e| e.ts);
        if r.direction == Direction::Backward {
            v.reverse();
        }
        if flip {
            // Reverse the order inside each timestamp.
            let mut out = Vec::new();
            let mut i = 0;
            while i < v.len() {
                let mut j = i;
                while j < v.len() && v[j].ts == v[i].ts {
                    j += 1;
                }
                out.extend(v[i..j].iter().rev().cloned());
                i = j;
            }
            v = out;
        }
        v.truncate(r.limit);
        v
    }

    fn drain(p: &mut Pager, all: &[Entry]) -> Vec<String> {
        let mut got = Vec::new();
        let mut n = 0;
        while let Some(r) = p.next_request() {
            n += 1;
            assert!(n < 10_000, "pager loops");
            let (fresh, _) = p.accept(&r, serve(all, &r, n % 2 == 0)).unwrap();
            got.extend(fresh.into_iter().map(|e| e.line));
        }
        got
    }

    fn data() -> Vec<Entry> {
        let (a, b) = (stream("a"), stream("b"));
        let mut all = Vec::new();
        for i in 0..50i64 {
            // Runs of equal timestamps, longer than a batch, over two streams.
            let ts = 1000 + i / 7;
            let s = if i % 2 == 0 { &a } else { &b };
            all.push(entry(s, ts, &format!("l{i:03}")));
        }
        all
    }

    #[test]
    fn pager_returns_each_entry_once_in_both_directions() {
        let all = data();
        for batch in [1, 2, 3, 5, 100] {
            let mut p = Pager::range("{}", Direction::Forward, 0, 5000, None, batch);
            let mut got = drain(&mut p, &all);
            let mut want: Vec<String> = all.iter().map(|e| e.line.clone()).collect();
            assert_eq!(got.len(), want.len(), "forward batch {batch}");
            got.sort();
            want.sort();
            assert_eq!(got, want);
            let mut p = Pager::range("{}", Direction::Backward, 0, 5000, None, batch);
            let got = drain(&mut p, &all);
            assert_eq!(got.len(), all.len(), "backward batch {batch}");
            let ts: Vec<i64> = got.iter().map(|l| all.iter().find(|e| &e.line == l).unwrap().ts).collect();
            assert!(ts.windows(2).all(|w| w[0] >= w[1]), "backward order");
        }
    }

    #[test]
    fn requests_stay_within_the_batch_unless_one_timestamp_holds_more() {
        // Runs of 7 at one timestamp, batch 10: a service capping `limit` at 10 never sees more.
        let all = data();
        let mut p = Pager::range("{}", Direction::Forward, 0, 5000, None, 10);
        let mut n = 0;
        while let Some(r) = p.next_request() {
            assert!(r.limit <= 10, "{r:?}");
            n += p.accept(&r, serve(&all, &r, false)).unwrap().0.len();
        }
        assert_eq!(n, all.len());
    }

    #[test]
    fn a_service_capping_pages_below_the_limit_asked_still_gives_every_entry() {
        // Caps above the longest run of entries at one timestamp (7 here): a
        // shorter cap cannot be paged past that timestamp by any client.
        let all = data();
        for cap in [8, 13, 20] {
            for dir in [Direction::Forward, Direction::Backward] {
                let mut p = Pager::range("{}", dir, 0, 5000, None, 100);
                let mut got = Vec::new();
                let mut n = 0;
                while let Some(r) = p.next_request() {
                    n += 1;
                    assert!(n < 10_000, "pager loops");
                    let mut page = serve(&all, &r, n % 2 == 0);
                    page.truncate(cap);
                    got.extend(p.accept(&r, page).unwrap().0.into_iter().map(|e| e.line));
                }
                let set: HashSet<_> = got.iter().collect();
                assert_eq!((got.len(), set.len()), (all.len(), all.len()), "cap {cap} {dir:?}");
            }
        }
    }

    #[test]
    fn pager_honours_limit() {
        let all = data();
        let mut p = Pager::range("{}", Direction::Forward, 0, 5000, Some(17), 5);
        assert_eq!(drain(&mut p, &all).len(), 17);
        let p = Pager::range("{}", Direction::Forward, 0, 5000, Some(0), 5);
        assert!(p.next_request().is_none());
    }

    #[test]
    fn follow_moves_start_to_end_after_a_short_page() {
        let all = data();
        let mut p = Pager::follow("{}", 1000, 4, 0);
        let mut got = Vec::new();
        let mut end = 1001;
        let mut n = 0;
        while end <= 1010 {
            n += 1;
            assert!(n < 1000);
            match p.request_until(end) {
                Some(r) => {
                    let (fresh, full) = p.accept(&r, serve(&all, &r, n % 3 == 0)).unwrap();
                    got.extend(fresh.into_iter().map(|e| e.line));
                    if !full {
                        end += 1;
                    }
                }
                None => end += 1,
            }
        }
        assert_eq!(got.len(), all.len());
        let set: HashSet<_> = got.iter().collect();
        assert_eq!(set.len(), all.len());
    }

    #[test]
    fn a_tail_shows_lines_stored_late_into_a_window_it_polled_once_each() {
        let s = stream("a");
        let mut stored: Vec<Entry> = Vec::new();
        let mut p = Pager::follow("{}", 0, 3, 50);
        let mut shown = Vec::new();
        let poll = |p: &mut Pager, stored: &[Entry], end: i64, shown: &mut Vec<String>| loop {
            let Some(r) = p.request_until(end) else { return };
            let (fresh, full) = p.accept(&r, serve(stored, &r, false)).unwrap();
            shown.extend(fresh.into_iter().map(|e| e.line));
            if !full {
                return;
            }
        };
        // Lines at 10, 20, ..., 100, each stored 30 ns after its time (a late batch), polled every 10.
        for now in (10..=200).step_by(10) {
            if now - 30 >= 10 && now - 30 <= 100 {
                stored.push(entry(&s, now - 30, &format!("l{}", now - 30)));
            }
            poll(&mut p, &stored, now, &mut shown);
        }
        let want: Vec<String> = (1..=10).map(|i| format!("l{}", i * 10)).collect();
        assert_eq!(shown, want, "each line once, in order");
    }

    /// A service that answers from `widen` before the `start` asked (it
    /// rounds `start` down, say), and to `widen` past the `end`.
    fn serve_widened(all: &[Entry], r: &RangeRequest, widen: i64) -> Vec<Entry> {
        let wide = RangeRequest { start: r.start - widen, end: r.end + widen, ..r.clone() };
        serve(all, &wide, false)
    }

    #[test]
    fn entries_outside_the_range_asked_are_dropped_counted_and_never_move_the_range_back() {
        let s = stream("a");
        // One entry per ns from 0 to 999; a service widening by 20 (less than a page).
        let all: Vec<Entry> = (0..1000).map(|i| entry(&s, i, &format!("l{i}"))).collect();
        for dir in [Direction::Forward, Direction::Backward] {
            let mut p = Pager::range("{}", dir, 500, 900, None, 100);
            let mut got = Vec::new();
            let mut n = 0;
            while let Some(r) = p.next_request() {
                n += 1;
                assert!(n < 100, "pager loops");
                let (start, end) = (p.start, p.end);
                got.extend(p.accept(&r, serve_widened(&all, &r, 20)).unwrap().0.into_iter().map(|e| e.ts));
                assert!(p.start >= start && p.end <= end, "{dir:?}: the range moved back");
            }
            let mut sorted = got.clone();
            sorted.sort_unstable();
            assert_eq!(sorted, (500..900).collect::<Vec<_>>(), "{dir:?}: each entry of the range once");
            assert!(p.outside() > 0, "{dir:?}: the entries outside were counted");
        }
    }

    #[test]
    fn a_full_page_with_nothing_new_is_an_error_not_a_loop() {
        let s = stream("a");
        let all: Vec<Entry> = (0..1000).map(|i| entry(&s, i, &format!("l{i}"))).collect();
        // The service answers from 1,000 before `start`: a whole page before it.
        let mut p = Pager::range("{}", Direction::Forward, 500, 2000, None, 100);
        let r = p.next_request().unwrap();
        let e = p.accept(&r, serve_widened(&all, &r, 1000)).unwrap_err();
        assert_eq!((e.answered, e.outside, e.limit), (100, 100, 100));
        assert!(e.to_string().contains("paging cannot go on"), "{e}");
        assert!(p.next_request().is_none(), "the pager stops");
        // A service that ignores `start`: the first page, then the same again.
        let mut p = Pager::range("{}", Direction::Forward, 0, 2000, None, 100);
        let ignore_start = |r: &RangeRequest| serve(&all, &RangeRequest { start: 0, ..r.clone() }, false);
        let r = p.next_request().unwrap();
        assert_eq!(p.accept(&r, ignore_start(&r)).unwrap().0.len(), 100);
        let r = p.next_request().unwrap();
        let e = p.accept(&r, ignore_start(&r)).unwrap_err();
        assert_eq!((e.answered, e.outside), (100, 99), "{e}");
        // A short page with nothing new is the end, not an error.
        let mut p = Pager::range("{}", Direction::Forward, 0, 50, None, 100);
        let r = p.next_request().unwrap();
        assert_eq!(p.accept(&r, serve(&all, &r, false)).unwrap().0.len(), 50);
        let r = p.next_request().expect("a short page with new entries may be a capped one");
        assert!(p.accept(&r, serve(&all, &r, false)).unwrap().0.is_empty());
        assert!(p.next_request().is_none());
    }

    #[test]
    fn a_tail_drops_entries_outside_its_window_and_stops_on_a_page_it_cannot_pass() {
        let s = stream("a");
        let all: Vec<Entry> = (0..100).map(|i| entry(&s, i * 10, &format!("l{i}"))).collect();
        let mut p = Pager::follow("{}", 500, 10, 0);
        let mut shown = Vec::new();
        let mut end = 510;
        let mut n = 0;
        while end <= 1000 {
            n += 1;
            assert!(n < 1000, "tail loops");
            let Some(r) = p.request_until(end) else {
                end += 10;
                continue;
            };
            let start = p.start;
            let (fresh, full) = p.accept(&r, serve_widened(&all, &r, 5)).unwrap();
            assert!(p.start >= start, "the tail moved back");
            shown.extend(fresh.into_iter().map(|e| e.ts));
            if !full {
                end += 10;
            }
        }
        assert_eq!(shown, (50..100).map(|i| i * 10).collect::<Vec<_>>(), "each line of the window once, in order");
        assert!(p.outside() > 0);
        // A service answering a full page from before the window, again and
        // again, to a tail that looks back over the whole window each time.
        let mut p = Pager::follow("{}", 500, 10, 500);
        let mut errors = 0;
        for _ in 0..5 {
            let Some(r) = p.request_until(1000) else { break };
            match p.accept(&r, serve_widened(&all, &r, 1000)) {
                Ok((fresh, _)) => assert!(fresh.is_empty()),
                Err(_) => {
                    errors += 1;
                    break;
                }
            }
        }
        assert_eq!(errors, 1, "the tail stops with an error");
    }
}
