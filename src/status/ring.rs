//! A few seconds of samples of running totals, for rates over the last 10 s.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// The window rates are taken over.
pub const RATE_WINDOW: Duration = Duration::from_secs(10);

/// Samples `(when, totals)` of `N` running totals, oldest first, covering at
/// most [`RATE_WINDOW`] (about one sample a second: a dozen at most). The
/// newest is kept inline, the older ones apart: the ring of an idle file
/// (one of 100,000) is one sample and allocates nothing (#29 item 8).
/// When, and the totals then.
type Sample<const N: usize> = (Instant, [u64; N]);

#[derive(Debug, Clone)]
pub struct Ring<const N: usize> {
    /// Boxed: most rings (idle files') have none.
    // A word in each ring (one per file of 100,000), not a VecDeque's four.
    #[allow(clippy::box_collection)]
    older: Option<Box<VecDeque<Sample<N>>>>,
    newest: (Instant, [u64; N]),
}

impl<const N: usize> Ring<N> {
    /// A ring whose totals were `v` at `now`.
    pub fn new(now: Instant, v: [u64; N]) -> Self {
        Self { older: None, newest: (now, v) }
    }

    fn samples(&self) -> impl Iterator<Item = &(Instant, [u64; N])> {
        self.older.iter().flat_map(|o| o.iter()).chain(std::iter::once(&self.newest))
    }

    /// Adds a sample, dropping those the window no longer needs. Totals
    /// equal to the newest sample's add nothing (the rates are the same
    /// without them: see `rates`), so the ring of an idle file, one of
    /// 100,000, stays one sample long instead of a dozen.
    pub fn sample(&mut self, now: Instant, v: [u64; N]) {
        if now.duration_since(self.newest.0) >= RATE_WINDOW {
            // Every older sample is out of the window for good: the newest
            // is the window's start from now on. Give the room back.
            self.older = None;
        }
        if self.newest.1 == v {
            return;
        }
        let older = self.older.get_or_insert_with(Box::default);
        older.push_back(std::mem::replace(&mut self.newest, (now, v)));
        // Keep the newest sample at least RATE_WINDOW old as the window's start.
        while let Some(second) = older.get(1).or((!older.is_empty()).then_some(&self.newest)) {
            if now.duration_since(second.0) < RATE_WINDOW {
                break;
            }
            older.pop_front();
        }
    }

    /// Per-second rates from the oldest sample in the window to `v` now
    /// (over at least one second, so a file opened a moment ago is not
    /// credited with a burst's rate). With no sample in the window, the
    /// newest is the window's start: the totals it holds were still the
    /// totals at the ticks since (equal totals are not sampled again).
    pub fn rates(&self, now: Instant, v: [u64; N]) -> [f64; N] {
        let (t, b) = self.samples().find(|(t, _)| now.duration_since(*t) <= RATE_WINDOW).unwrap_or(&self.newest);
        let secs = now.duration_since(*t).min(RATE_WINDOW).as_secs_f64().max(1.0);
        let mut out = [0.0; N];
        for i in 0..N {
            out[i] = v[i].saturating_sub(b[i]) as f64 / secs;
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_cover_the_last_ten_seconds_and_forget_what_is_older() {
        let t0 = Instant::now();
        let s = |n: u64| t0 + Duration::from_secs(n);
        let mut r = Ring::new(t0, [0u64]);
        // 100 lines a second for 20 s, then nothing.
        for n in 1..=20 {
            r.sample(s(n), [100 * n]);
        }
        assert_eq!(r.rates(s(20), [2000]), [100.0]);
        assert!(r.samples().count() <= 12, "{} samples kept", r.samples().count());
        for n in 21..=30 {
            r.sample(s(n), [2000]);
        }
        assert_eq!(r.rates(s(30), [2000]), [0.0], "idle for the whole window");
        assert_eq!(r.rates(s(30), [2050]), [5.0], "50 lines since the window's start");
        assert_eq!(r.rates(s(45), [2050]), [5.0], "idle ticks add no sample, and count as the window's start");
        assert_eq!(r.samples().count(), 1, "no sample for equal totals, none older than the window's start");
        assert!(r.older.is_none(), "an idle ring keeps no room");
    }

    #[test]
    fn a_new_ring_counts_over_at_least_a_second() {
        let t0 = Instant::now();
        let r = Ring::new(t0, [0u64, 0]);
        assert_eq!(r.rates(t0 + Duration::from_millis(100), [10, 500]), [10.0, 500.0]);
        assert_eq!(r.rates(t0 + Duration::from_secs(4), [40, 400]), [10.0, 100.0]);
    }
}
