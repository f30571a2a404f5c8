//! Waiting between failed calls to a service (a discovery's, a Docker
//! Engine's): 1 s doubling to a most, a failure said once per streak and
//! its end once.

use std::time::Duration;

use tokio_util::sync::CancellationToken;

/// Waits between failed attempts, doubling from its least to its most, and
/// says a failure once per streak.
#[derive(Debug, Clone)]
pub struct Backoff {
    least: Duration,
    most: Duration,
    next: Duration,
    failing: bool,
}

impl Backoff {
    /// From 1 s, doubling up to `most` (at least 1 s).
    pub fn up_to(most: Duration) -> Self {
        let least = Duration::from_secs(1);
        Self { least, most: most.max(least), next: least, failing: false }
    }

    /// Notes a failure to reach `from`; said once per streak.
    pub fn failed(&mut self, source: &str, from: &str, error: &dyn std::fmt::Display) {
        if !std::mem::replace(&mut self.failing, true) {
            tracing::warn!(source = %source, error = %error, "cannot reach {from}; what it said last stays, retrying with backoff");
        }
    }

    /// Notes an answer: the next failure waits the least again.
    pub fn recovered(&mut self, source: &str, from: &str) {
        if std::mem::take(&mut self.failing) {
            tracing::info!(source = %source, "{from} answers again");
        }
        self.next = self.least;
    }

    /// Waits the current backoff (then doubles it); false when cancelled meanwhile.
    pub async fn wait(&mut self, cancel: &CancellationToken) -> bool {
        let wait = self.next;
        self.next = (self.next * 2).min(self.most);
        tokio::select! {
            _ = cancel.cancelled() => false,
            _ = tokio::time::sleep(wait) => true,
        }
    }
}
