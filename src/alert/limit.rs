//! The two limits on webhook requests, both read on tokio's (pausable) clock.
//!
//! * Per rule, `max_per_minute`: an exact sliding window (the last N send
//!   times), so any 60 seconds hold at most N requests of the rule. It can be
//!   asked without spending, which lets the engine check both limits before
//!   taking from either.
//! * Per webhook URL, `webhook_limit` per 5 minutes: a GCRA limiter
//!   (`governor`) shared by every rule posting to the URL. Its burst is a
//!   tenth of the limit (at least 1) and the rest is spread evenly over 5
//!   minutes, so the busiest 5-minute window holds `burst + rest` = the limit:
//!   250 by default, under the service's about 300 per 5 minutes.
//!
//! A limited update is never dropped: it stays pending, keeps folding new
//! matches, and is sent when both limits allow.

use std::collections::VecDeque;
use std::num::NonZeroU32;
use std::time::Duration;

use governor::clock::Clock;
use governor::middleware::NoOpMiddleware;
use governor::nanos::Nanos;
use governor::state::{InMemoryState, NotKeyed};
use governor::{Quota, RateLimiter};
use tokio::time::Instant;

use crate::util::clock::TokioClock;

/// The window of `max_per_minute`.
pub const RULE_WINDOW: Duration = Duration::from_secs(60);
/// The window of `webhook_limit`.
pub const WEBHOOK_WINDOW: Duration = Duration::from_secs(300);

/// At most `max` sends in any [`RULE_WINDOW`].
#[derive(Debug, Clone)]
pub struct RuleWindow {
    max: usize,
    sent: VecDeque<Instant>,
}

impl RuleWindow {
    pub fn new(max_per_minute: u32) -> Self {
        Self { max: max_per_minute.max(1) as usize, sent: VecDeque::new() }
    }

    /// `Ok` when a send is allowed at `now`, else how long until one is.
    pub fn check(&mut self, now: Instant) -> Result<(), Duration> {
        while self.sent.front().is_some_and(|t| now.saturating_duration_since(*t) >= RULE_WINDOW) {
            self.sent.pop_front();
        }
        match self.sent.front() {
            Some(oldest) if self.sent.len() >= self.max => Err((*oldest + RULE_WINDOW).saturating_duration_since(now)),
            _ => Ok(()),
        }
    }

    /// Records a send (after [`RuleWindow::check`] allowed it).
    pub fn record(&mut self, now: Instant) {
        self.sent.push_back(now);
    }
}

/// `limit` requests per [`WEBHOOK_WINDOW`] to one URL.
pub struct WebhookLimiter {
    limiter: RateLimiter<NotKeyed, InMemoryState, TokioClock, NoOpMiddleware<Nanos>>,
    clock: TokioClock,
}

impl WebhookLimiter {
    /// `limit` must be at least 2 (checked by config validation; smaller values are raised).
    pub fn new(limit: u32) -> Self {
        let limit = limit.max(2);
        let burst = (limit / 10).max(1);
        let rest = limit - burst;
        let period = WEBHOOK_WINDOW / rest;
        let burst_nz = NonZeroU32::new(burst).unwrap_or(NonZeroU32::MIN);
        let quota = Quota::with_period(period).unwrap_or_else(|| Quota::per_second(NonZeroU32::MIN));
        let clock = TokioClock::default();
        Self { limiter: RateLimiter::direct_with_clock(quota.allow_burst(burst_nz), clock), clock }
    }

    /// Takes one request now, or says how long until one is free.
    pub fn try_take(&self) -> Result<(), Duration> {
        self.limiter.check().map_err(|nu| nu.wait_time_from(self.clock.now()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn rule_window_allows_n_per_60s() {
        let mut w = RuleWindow::new(3);
        let t0 = Instant::now();
        for _ in 0..3 {
            assert!(w.check(Instant::now()).is_ok());
            w.record(Instant::now());
            tokio::time::advance(Duration::from_secs(1)).await;
        }
        let wait = w.check(Instant::now()).unwrap_err();
        assert_eq!(wait, Duration::from_secs(57));
        tokio::time::advance(wait).await;
        assert!(w.check(Instant::now()).is_ok());
        assert_eq!(Instant::now() - t0, Duration::from_secs(60));
    }

    #[tokio::test(start_paused = true)]
    async fn webhook_limiter_holds_any_5_minutes_under_its_limit() {
        let l = WebhookLimiter::new(250);
        // Take as fast as allowed for 20 minutes, recording times.
        let start = Instant::now();
        let mut times = Vec::new();
        while Instant::now() - start < Duration::from_secs(1200) {
            match l.try_take() {
                Ok(()) => times.push(Instant::now()),
                Err(w) => tokio::time::advance(w.max(Duration::from_millis(1))).await,
            }
        }
        // The busiest 5-minute window.
        let mut max = 0;
        for (i, t) in times.iter().enumerate() {
            let n = times[i..].iter().take_while(|u| **u - *t < WEBHOOK_WINDOW).count();
            max = max.max(n);
        }
        assert!(max <= 250, "{max} in 5 minutes");
        assert!(max >= 240, "{max} in 5 minutes");
        assert!(max < 300);
    }
}
