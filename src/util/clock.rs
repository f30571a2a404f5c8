//! A `governor` clock over tokio's monotonic clock, so rate limiters (alert
//! webhooks, the cloud API pacer) run under `tokio::time::pause()` in tests
//! and their waits are measured without waiting.

use governor::clock::Clock;
use governor::nanos::Nanos;

/// A governor clock that reads tokio's (pausable) monotonic clock.
#[derive(Debug, Clone, Copy)]
pub struct TokioClock {
    start: tokio::time::Instant,
}

impl Default for TokioClock {
    fn default() -> Self {
        Self { start: tokio::time::Instant::now() }
    }
}

impl Clock for TokioClock {
    type Instant = Nanos;

    fn now(&self) -> Nanos {
        Nanos::from(self.start.elapsed())
    }
}
