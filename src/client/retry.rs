//! Retries with exponential backoff and jitter (`backon`) that honour
//! `Retry-After`, a few quick retries of refused connections for one-off
//! commands, and a wake-up that ends a wait at once (a reload).

use std::time::Duration;

use backon::BackoffBuilder;
use tokio_util::sync::CancellationToken;

use super::http::HttpError;
use crate::config::ClientConfig;

/// When and how often to retry.
#[derive(Debug, Clone, Copy)]
pub struct RetryPolicy {
    pub min_backoff: Duration,
    pub max_backoff: Duration,
    /// 0 retries for ever.
    pub max_retries: usize,
    /// Failed connections (nothing listening) retried at most this many
    /// times, quickly (100 ms, then 200 ms, ...), apart from `max_retries`:
    /// one-off commands say "connection refused" within a second instead of
    /// backing off for tens of seconds. `None`: like any other error.
    pub connect_retries: Option<usize>,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            min_backoff: Duration::from_millis(500),
            max_backoff: Duration::from_secs(300),
            max_retries: 0,
            connect_retries: None,
        }
    }
}

impl RetryPolicy {
    /// `client.retry`.
    pub fn of(c: &ClientConfig) -> Self {
        Self {
            min_backoff: c.retry.min_backoff.get(),
            max_backoff: c.retry.max_backoff.get(),
            max_retries: c.retry.max_retries,
            connect_retries: None,
        }
    }

    /// The policy of one-off commands (query, labels, cloud, admin): a few
    /// retries, and refused connections reported soon.
    pub fn one_off(min_backoff: Duration, max_backoff: Duration, max_retries: usize) -> Self {
        Self { min_backoff, max_backoff, max_retries, connect_retries: Some(ONE_OFF_CONNECT_RETRIES) }
    }

    /// The waits between attempts: exponential from `min_backoff`, doubled each
    /// time, with up to 100% jitter, capped at `max_backoff`.
    pub fn schedule(&self) -> Backoff {
        let b = backon::ExponentialBuilder::default()
            .with_min_delay(self.min_backoff)
            .with_max_delay(self.max_backoff)
            .with_factor(2.0)
            .with_jitter()
            // backon without its `std` feature seeds every schedule alike, so every
            // batch would retry at the same instants: seed each one apart.
            .with_jitter_seed(jitter_seed())
            .without_max_times()
            .build();
        Backoff { inner: b, policy: *self, attempts: 0, connect_attempts: 0 }
    }
}

/// A seed that differs between calls (std's per-process random hash keys).
fn jitter_seed() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    std::collections::hash_map::RandomState::new().build_hasher().finish()
}

/// `connect_retries` of one-off commands (query, labels, cloud, admin): two
/// quick retries ride out a service restarting, then "connection refused".
pub const ONE_OFF_CONNECT_RETRIES: usize = 2;

/// The first wait after a failed connection when `connect_retries` is set.
const CONNECT_RETRY_WAIT: Duration = Duration::from_millis(100);

/// An iterator of waits (see [`RetryPolicy::schedule`]).
pub struct Backoff {
    inner: backon::ExponentialBackoff,
    policy: RetryPolicy,
    attempts: usize,
    connect_attempts: u32,
}

impl Backoff {
    /// The wait before the next retry after `err`, or `None` when retries are used up.
    /// `Retry-After` lengthens the wait, never shortens it, and is itself capped at `max_backoff`.
    pub fn next_wait(&mut self, err: &HttpError) -> Option<Duration> {
        if let (Some(n), true) = (self.policy.connect_retries, err.is_connect()) {
            if self.connect_attempts as usize >= n {
                return None;
            }
            self.connect_attempts += 1;
            return Some(CONNECT_RETRY_WAIT * 2u32.saturating_pow(self.connect_attempts - 1));
        }
        if self.policy.max_retries != 0 && self.attempts >= self.policy.max_retries {
            return None;
        }
        self.attempts += 1;
        let base = self.inner.next().unwrap_or(self.policy.max_backoff).min(self.policy.max_backoff);
        Some(match err.retry_after() {
            Some(ra) => base.max(ra.min(self.policy.max_backoff)),
            None => base,
        })
    }

    pub fn attempts(&self) -> usize {
        self.attempts
    }
}

/// Runs `op` until it succeeds, fails with an error that must not be retried,
/// runs out of retries, or `cancel` fires. `on_retry` sees each retriable error
/// and the wait chosen.
pub async fn with_retry<T, F, Fut>(
    policy: RetryPolicy,
    cancel: &CancellationToken,
    on_retry: impl FnMut(&HttpError, Duration),
    op: F,
) -> Result<T, HttpError>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, HttpError>>,
{
    with_retry_woken(policy, cancel, None, HttpError::is_retriable, on_retry, op).await
}

/// [`with_retry`] with the caller's judgement of which errors to retry, and
/// where `wake` (when given) ends a wait for the next try at once and starts
/// the backoff again: a reload that corrects the URL or a password applies
/// now, not when a backoff of up to `max_backoff` ran out.
pub async fn with_retry_woken<T, F, Fut>(
    policy: RetryPolicy,
    cancel: &CancellationToken,
    wake: Option<&tokio::sync::Notify>,
    retriable: impl Fn(&HttpError) -> bool,
    mut on_retry: impl FnMut(&HttpError, Duration),
    mut op: F,
) -> Result<T, HttpError>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, HttpError>>,
{
    let mut backoff = policy.schedule();
    loop {
        let err = tokio::select! {
            r = op() => match r {
                Ok(v) => return Ok(v),
                Err(e) => e,
            },
            _ = cancel.cancelled() => return Err(HttpError::Cancelled),
        };
        if !retriable(&err) {
            return Err(err);
        }
        let Some(wait) = backoff.next_wait(&err) else { return Err(err) };
        on_retry(&err, wait);
        let woken = async {
            match wake {
                Some(n) => n.notified().await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            _ = tokio::time::sleep(wait) => {}
            _ = woken => backoff = policy.schedule(),
            _ = cancel.cancelled() => return Err(HttpError::Cancelled),
        }
    }
}

#[cfg(test)]
mod tests {
    use reqwest::StatusCode;

    use super::*;

    fn status(code: u16, ra: Option<u64>) -> HttpError {
        HttpError::Status {
            url: "u".into(),
            status: StatusCode::from_u16(code).unwrap(),
            body: String::new(),
            retry_after: ra.map(Duration::from_secs),
        }
    }

    /// Found in the chaos run's agent logs: every batch retried after the same
    /// "random" waits (29.6 ms, 77.9 ms, 122.3 ms...), all at once after an
    /// outage, because the jitter generator had one fixed seed.
    #[test]
    fn retry_jitter_differs_between_batches() {
        let policy = RetryPolicy {
            min_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_secs(60),
            max_retries: 0,
            connect_retries: None,
        };
        let err = status(500, None);
        let waits = |_| {
            let mut b = policy.schedule();
            (0..6).map(|_| b.next_wait(&err).unwrap()).collect::<Vec<_>>()
        };
        let runs: Vec<Vec<Duration>> = (0..4).map(waits).collect();
        assert!(runs.windows(2).all(|w| w[0] != w[1]), "identical retry waits: {runs:?}");
    }

    #[test]
    fn retriable_statuses() {
        assert!(status(429, None).is_retriable());
        assert!(status(503, None).is_retriable());
        assert!(!status(400, None).is_retriable());
        assert!(!status(401, None).is_retriable());
    }

    #[test]
    fn backoff_grows_caps_and_honours_retry_after() {
        let p = RetryPolicy {
            min_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_secs(2),
            max_retries: 0,
            connect_retries: None,
        };
        let mut b = p.schedule();
        let e = status(500, None);
        let waits: Vec<_> = (0..10).map(|_| b.next_wait(&e).unwrap()).collect();
        assert!(waits[0] >= Duration::from_millis(100) && waits[0] <= Duration::from_millis(200));
        assert!(waits.iter().all(|w| *w <= Duration::from_secs(2)));
        assert_eq!(*waits.last().unwrap(), Duration::from_secs(2));
        let mut b = p.schedule();
        assert_eq!(b.next_wait(&status(429, Some(1))).unwrap(), Duration::from_secs(1));
        assert_eq!(b.next_wait(&status(429, Some(100))).unwrap(), Duration::from_secs(2));
    }

    #[test]
    fn refused_connections_get_quick_retries_of_their_own() {
        let p = RetryPolicy {
            min_backoff: Duration::from_secs(3600),
            max_backoff: Duration::from_secs(7200),
            max_retries: 0,
            connect_retries: Some(2),
        };
        let refused = HttpError::Transport { url: "u".into(), message: "refused".into(), connect: true };
        let mut b = p.schedule();
        assert_eq!(b.next_wait(&refused), Some(Duration::from_millis(100)));
        assert_eq!(b.next_wait(&refused), Some(Duration::from_millis(200)));
        assert_eq!(b.next_wait(&refused), None);
        // Timeouts and statuses keep the configured backoff.
        let timeout = HttpError::Transport { url: "u".into(), message: "timed out".into(), connect: false };
        assert!(p.schedule().next_wait(&timeout).is_some_and(|w| w >= Duration::from_secs(1800)));
        assert!(p.schedule().next_wait(&status(503, None)).is_some_and(|w| w >= Duration::from_secs(1800)));
    }

    #[test]
    fn max_retries_ends() {
        let p = RetryPolicy { max_retries: 2, ..Default::default() };
        let mut b = p.schedule();
        let e = status(500, None);
        assert!(b.next_wait(&e).is_some());
        assert!(b.next_wait(&e).is_some());
        assert!(b.next_wait(&e).is_none());
    }

    #[tokio::test(start_paused = true)]
    async fn with_retry_waits_without_real_time() {
        let cancel = CancellationToken::new();
        let mut calls = 0;
        let p = RetryPolicy {
            min_backoff: Duration::from_secs(60),
            max_backoff: Duration::from_secs(600),
            max_retries: 0,
            connect_retries: None,
        };
        let mut seen = Vec::new();
        let r: Result<u32, _> = with_retry(
            p,
            &cancel,
            |_, w| seen.push(w),
            || {
                calls += 1;
                let n = calls;
                async move {
                    if n < 4 {
                        Err(status(503, None))
                    } else {
                        Ok(n)
                    }
                }
            },
        )
        .await;
        assert_eq!(r.unwrap(), 4);
        assert_eq!(seen.len(), 3);
    }

    /// Found by an operator: with a wrong password fixed and SIGHUP sent,
    /// `/ready` stayed "401" for 52 s (up to `max_backoff`) until the running
    /// backoff ran out. A wake (the reload) ends the wait at once.
    #[tokio::test(start_paused = true)]
    async fn a_wake_ends_the_wait_and_starts_the_backoff_again() {
        use std::sync::atomic::{AtomicU32, Ordering};
        use std::sync::Arc;
        let wake = Arc::new(tokio::sync::Notify::new());
        let calls = Arc::new(AtomicU32::new(0));
        let p = RetryPolicy {
            min_backoff: Duration::from_secs(60),
            max_backoff: Duration::from_secs(600),
            max_retries: 0,
            connect_retries: None,
        };
        let task = tokio::spawn({
            let (wake, calls) = (wake.clone(), calls.clone());
            async move {
                let cancel = CancellationToken::new();
                with_retry_woken(
                    p,
                    &cancel,
                    Some(&wake),
                    |_| true,
                    |_, _| {},
                    || {
                        let n = calls.fetch_add(1, Ordering::SeqCst) + 1;
                        async move {
                            if n < 2 {
                                Err(status(401, None))
                            } else {
                                Ok(n)
                            }
                        }
                    },
                )
                .await
            }
        });
        let start = tokio::time::Instant::now();
        // The main task never idles, so paused time does not jump ahead: only a
        // wake can end the minute's wait.
        for _ in 0..10_000 {
            if calls.load(Ordering::SeqCst) >= 2 {
                break;
            }
            wake.notify_waiters();
            tokio::task::yield_now().await;
        }
        assert_eq!(calls.load(Ordering::SeqCst), 2, "the wake did not end the wait");
        assert!(start.elapsed() < Duration::from_secs(1));
        assert_eq!(task.await.unwrap().unwrap(), 2);
    }
}
