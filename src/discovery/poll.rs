//! The one way a discovery runs: [`Discovery`] brings the targets it
//! publishes up to date, then waits until they may have changed; [`poll`]
//! drives it until cancelled. A failure leaves the targets known as they
//! are, is said once per streak (and its end once), and is tried again
//! with [`Backoff`] (1 s doubling to its most; `client::backoff`).

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

pub use crate::client::backoff::Backoff;

/// A discovery; see the module documentation.
pub trait Discovery: Send + 'static {
    /// What is asked, for messages (`Docker Swarm at unix:///var/run/docker.sock`).
    fn describe(&self) -> String;

    /// Brings the targets it publishes up to date with its service: a full
    /// list, or what a watch reported since the last call.
    fn refresh(&mut self) -> impl Future<Output = Result<(), String>> + Send;

    /// Waits until the targets may have changed: `every` by default; a
    /// discovery told of changes (a watch, a blocking query) returns sooner.
    fn wait(&mut self, every: Duration) -> impl Future<Output = ()> + Send {
        tokio::time::sleep(every)
    }
}

/// Runs `discovery` for the source `name` until `cancel`: refresh, then
/// wait `every` (or less, when it is told of a change); after a failure,
/// `backoff`.
pub async fn poll(
    mut discovery: impl Discovery,
    name: Arc<str>,
    every: Duration,
    mut backoff: Backoff,
    cancel: CancellationToken,
) {
    loop {
        match discovery.refresh().await {
            Ok(()) => {
                backoff.recovered(&name, &discovery.describe());
                tokio::select! {
                    _ = cancel.cancelled() => return,
                    _ = discovery.wait(every) => {}
                }
            }
            Err(e) => {
                backoff.failed(&name, &discovery.describe(), &e);
                if !backoff.wait(&cancel).await {
                    return;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Fails `fails` times, then answers; counts its refreshes.
    struct Flaky {
        fails: u32,
        calls: Arc<std::sync::atomic::AtomicU32>,
    }

    impl Discovery for Flaky {
        fn describe(&self) -> String {
            "flaky".into()
        }

        async fn refresh(&mut self) -> Result<(), String> {
            self.calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            if self.fails > 0 {
                self.fails -= 1;
                return Err("down".into());
            }
            Ok(())
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_failing_discovery_is_retried_with_backoff_then_polled_every_interval() {
        let calls = Arc::new(std::sync::atomic::AtomicU32::new(0));
        let cancel = CancellationToken::new();
        let d = Flaky { fails: 3, calls: calls.clone() };
        let task = tokio::spawn(poll(
            d,
            "s".into(),
            Duration::from_secs(60),
            Backoff::up_to(Duration::from_secs(15)),
            cancel.clone(),
        ));
        let at = |secs: u64| tokio::time::sleep(Duration::from_millis(secs * 1000 + 100));
        // Fails at 0, 1 and 3 s (1 s, then 2 s); answers at 7 s (4 s); then every 60 s.
        at(6).await;
        assert_eq!(calls.load(std::sync::atomic::Ordering::SeqCst), 3);
        tokio::time::sleep(Duration::from_secs(1)).await;
        assert_eq!(calls.load(std::sync::atomic::Ordering::SeqCst), 4);
        tokio::time::sleep(Duration::from_secs(60)).await;
        assert_eq!(calls.load(std::sync::atomic::Ordering::SeqCst), 5);
        cancel.cancel();
        task.await.unwrap();
    }

    #[tokio::test(start_paused = true)]
    async fn the_backoff_stops_growing_at_its_most() {
        let mut b = Backoff::up_to(Duration::from_secs(5));
        let cancel = CancellationToken::new();
        let waits: Vec<Duration> = {
            let mut out = Vec::new();
            for _ in 0..5 {
                let t = tokio::time::Instant::now();
                assert!(b.wait(&cancel).await);
                out.push(t.elapsed());
            }
            out
        };
        let secs: Vec<u64> = waits.iter().map(|d| d.as_secs()).collect();
        assert_eq!(secs, [1, 2, 4, 5, 5]);
        b.recovered("s", "x");
        let t = tokio::time::Instant::now();
        assert!(b.wait(&cancel).await);
        assert_eq!(t.elapsed().as_secs(), 1);
    }
}
