//! A few seconds of samples of running totals, for rates over the last 10 s.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// The window rates are taken over.
pub const RATE_WINDOW: Duration = Duration::from_secs(10);

/// Samples `(when, totals)` of `N` running totals, oldest first, covering at
/// most [`RATE_WINDOW`] (about one sample a second: a dozen at most).
#[derive(Debug, Clone)]
pub struct Ring<const N: usize> {
    samples: VecDeque<(Instant, [u64; N])>,
}

impl<const N: usize> Ring<N> {
    /// A ring whose totals were `v` at `now`.
    pub fn new(now: Instant, v: [u64; N]) -> Self {
        // Room for one: an idle file's ring keeps one sample (see `sample`).
        let mut samples = VecDeque::with_capacity(1);
        samples.push_back((now, v));
        Self { samples }
    }

    /// Adds a sample, dropping those the window no longer needs. Totals
    /// equal to the newest sample's add nothing (the rates are the same
    /// without them: see `rates`), so the ring of an idle file, one of
    /// 100,000, stays one sample long instead of a dozen.
    pub fn sample(&mut self, now: Instant, v: [u64; N]) {
        if self.samples.back().is_some_and(|(_, last)| *last == v) {
            return;
        }
        self.samples.push_back((now, v));
        // Keep the newest sample at least RATE_WINDOW old as the window's start.
        while self.samples.len() > 1 && self.samples.get(1).is_some_and(|(t, _)| now.duration_since(*t) >= RATE_WINDOW)
        {
            self.samples.pop_front();
        }
    }

    /// Per-second rates from the oldest sample in the window to `v` now
    /// (over at least one second, so a file opened a moment ago is not
    /// credited with a burst's rate). With no sample in the window, the
    /// newest is the window's start: the totals it holds were still the
    /// totals at the ticks since (equal totals are not sampled again).
    pub fn rates(&self, now: Instant, v: [u64; N]) -> [f64; N] {
        let base = self.samples.iter().find(|(t, _)| now.duration_since(*t) <= RATE_WINDOW).or(self.samples.back());
        let Some((t, b)) = base else { return [0.0; N] };
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
        assert!(r.samples.len() <= 12, "{} samples kept", r.samples.len());
        for n in 21..=30 {
            r.sample(s(n), [2000]);
        }
        assert_eq!(r.rates(s(30), [2000]), [0.0], "idle for the whole window");
        assert_eq!(r.rates(s(30), [2050]), [5.0], "50 lines since the window's start");
        assert_eq!(r.rates(s(45), [2050]), [5.0], "idle ticks add no sample, and count as the window's start");
        assert_eq!(r.samples.len(), 11, "no sample for equal totals");
    }

    #[test]
    fn a_new_ring_counts_over_at_least_a_second() {
        let t0 = Instant::now();
        let r = Ring::new(t0, [0u64, 0]);
        assert_eq!(r.rates(t0 + Duration::from_millis(100), [10, 500]), [10.0, 500.0]);
        assert_eq!(r.rates(t0 + Duration::from_secs(4), [40, 400]), [10.0, 100.0]);
    }
}
