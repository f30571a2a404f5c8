//! Client-side pacing of the access policy endpoints.
//!
//! The service allows 600 access policy calls per hour (spec, Limits). The
//! pacer is a GCRA limiter (`governor`) held in memory by one process and
//! shared by all of its access policy calls; nothing is persisted, so two
//! processes started at once each get their own budget (the 429 retry covers
//! that case).
//!
//! The default quota is a burst of [`DEFAULT_BURST`] calls, replenished at
//! [`DEFAULT_PER_HOUR`] per hour. Under GCRA, the most calls any window of
//! one hour can hold is `burst + per_hour` = 590, which stays under the
//! service's 600 while letting short interactive sessions (create, list a few
//! pages, update) run without waiting.
//!
//! The limiter reads time from tokio's clock ([`TokioClock`]), so tests can
//! run it under `tokio::time::pause()` and measure waits without waiting.

use std::num::NonZeroU32;
use std::time::Duration;

use governor::clock::Clock;
use governor::middleware::NoOpMiddleware;
use governor::nanos::Nanos;
use governor::state::{InMemoryState, NotKeyed};
use governor::{Quota, RateLimiter};

/// Calls per hour the pacer allows on average.
pub const DEFAULT_PER_HOUR: u32 = 580;
/// Calls allowed at once before pacing starts.
pub const DEFAULT_BURST: u32 = 10;

pub use crate::util::clock::TokioClock;

#[derive(Debug, thiserror::Error)]
pub enum PaceError {
    #[error("the pace must be at least 1 call per hour with a burst of at least 1")]
    Zero,
}

/// Paces calls to `per_hour` on average with bursts of up to `burst`.
pub struct Pacer<C: Clock<Instant = Nanos> = TokioClock> {
    limiter: RateLimiter<NotKeyed, InMemoryState, C, NoOpMiddleware<Nanos>>,
    clock: C,
    per_hour: u32,
    burst: u32,
}

impl Pacer<TokioClock> {
    pub fn new(per_hour: u32, burst: u32) -> Result<Self, PaceError> {
        Self::with_clock(per_hour, burst, TokioClock::default())
    }
}

impl<C: Clock<Instant = Nanos> + Clone> Pacer<C> {
    pub fn with_clock(per_hour: u32, burst: u32, clock: C) -> Result<Self, PaceError> {
        let burst_nz = NonZeroU32::new(burst).ok_or(PaceError::Zero)?;
        if per_hour == 0 {
            return Err(PaceError::Zero);
        }
        let period = Duration::from_secs(3600) / per_hour;
        let quota = Quota::with_period(period).ok_or(PaceError::Zero)?.allow_burst(burst_nz);
        let limiter = RateLimiter::direct_with_clock(quota, clock.clone());
        Ok(Self { limiter, clock, per_hour, burst })
    }

    /// Takes one call from the budget now, or says how long until one is free.
    pub fn try_take(&self) -> Result<(), Duration> {
        self.limiter.check().map_err(|nu| nu.wait_time_from(self.clock.now()))
    }

    /// Waits (on tokio's clock) until a call is allowed, then takes it.
    /// Returns the total time waited.
    pub async fn acquire(&self) -> Duration {
        let mut waited = Duration::ZERO;
        loop {
            match self.try_take() {
                Ok(()) => return waited,
                Err(wait) => {
                    tracing::info!(
                        wait_ms = wait.as_millis() as u64,
                        per_hour = self.per_hour,
                        burst = self.burst,
                        "pacing access policy calls under the service's rate limit"
                    );
                    tokio::time::sleep(wait).await;
                    waited += wait;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use governor::clock::FakeRelativeClock;

    #[test]
    fn burst_then_one_per_period_with_a_fake_clock() {
        let clock = FakeRelativeClock::default();
        let p = Pacer::with_clock(DEFAULT_PER_HOUR, DEFAULT_BURST, clock.clone()).unwrap();
        for i in 0..DEFAULT_BURST {
            assert_eq!(p.try_take(), Ok(()), "call {i} of the burst");
        }
        let period = Duration::from_secs(3600) / DEFAULT_PER_HOUR;
        let wait = p.try_take().unwrap_err();
        assert_eq!(wait, period);
        clock.advance(period);
        assert_eq!(p.try_take(), Ok(()));
        assert!(p.try_take().is_err());
    }

    #[test]
    fn no_hour_holds_600_calls() {
        // Drive the limiter as fast as it allows for one hour of fake time and
        // count the calls admitted: burst + per_hour, under the service's 600.
        let clock = FakeRelativeClock::default();
        let p = Pacer::with_clock(DEFAULT_PER_HOUR, DEFAULT_BURST, clock.clone()).unwrap();
        let hour = Duration::from_secs(3600);
        let mut elapsed = Duration::ZERO;
        let mut admitted = 0u32;
        loop {
            match p.try_take() {
                Ok(()) => admitted += 1,
                Err(w) => {
                    if elapsed + w > hour {
                        break;
                    }
                    clock.advance(w);
                    elapsed += w;
                }
            }
        }
        assert_eq!(admitted, DEFAULT_BURST + DEFAULT_PER_HOUR);
        assert!(admitted < 600);
    }

    #[tokio::test(start_paused = true)]
    async fn acquire_waits_on_tokio_time() {
        let p = Pacer::new(3600, 2).unwrap();
        let start = tokio::time::Instant::now();
        assert_eq!(p.acquire().await, Duration::ZERO);
        assert_eq!(p.acquire().await, Duration::ZERO);
        let w = p.acquire().await;
        assert_eq!(w, Duration::from_secs(1));
        assert_eq!(start.elapsed(), Duration::from_secs(1));
        p.acquire().await;
        assert_eq!(start.elapsed(), Duration::from_secs(2));
    }

    #[test]
    fn zero_pace_is_refused() {
        assert!(Pacer::new(0, 1).is_err());
        assert!(Pacer::new(1, 0).is_err());
    }
}
