//! Discoveries that list every target on request (Promtail's
//! `dockerswarm_sd_configs`, the cloud and service discoveries, target
//! files, Consul).
//!
//! How it works. A [`Lister`] asks its service for every target and gives
//! each one's labels (`__meta_*`, `__address__`). It is a [`Discovery`]
//! ([`Listed`]) run by the one poller: at start and then every
//! `refresh_interval` (or sooner, when its wait is told of a change); as in
//! Promtail, a target is tailed only when the source's relabel rules give
//! it a `__path__` (a glob; `__path_exclude__` too). The targets with one
//! are published (see [`super::publish`]): files are opened at the next
//! scan with the target's labels through the same rules, and files no
//! target names any more are read to their end and closed. When the
//! service cannot be reached the targets known stay, the failure is said
//! once, and the request is tried again with backoff (1 s doubling to the
//! refresh interval, at most 15 s) until it answers.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use super::poll::{poll, Backoff, Discovery};
use super::publish::{Published, SdTargets};
use super::{Found, Labels, LiveGlobs, Serving};

/// Retries after a failure wait at most this (Prometheus waits 15 s).
const RETRY_MAX: Duration = Duration::from_secs(15);

/// A discovery that lists every target when asked.
pub trait Lister: Send + 'static {
    /// What is asked, for messages (`Docker Swarm at unix:///var/run/docker.sock`).
    fn describe(&self) -> String;
    /// Every target now.
    fn list(&mut self) -> impl Future<Output = Result<Vec<Labels>, String>> + Send;

    /// Waits until the targets may have changed: `every` by default; a
    /// discovery told of changes (ZooKeeper's watches, Consul's blocking
    /// query, a target file's new modification time) returns sooner.
    fn wait(&mut self, every: Duration) -> impl Future<Output = ()> + Send {
        tokio::time::sleep(every)
    }

    /// A target whose `__path__` is no glob, left out (said in the log by default).
    fn bad_path(&self, source: &str, labels: &Labels, error: &globset::Error) {
        let address = labels.get("__address__").map(String::as_str).unwrap_or("");
        tracing::warn!(source = %source, from = %self.describe(), address, error = %error,
            "a target's __path__ is not a glob; left out");
    }
}

/// A [`Lister`] as a [`Discovery`]: each list is offered to `out`.
pub struct Listed<L> {
    pub lister: L,
    pub out: Published,
}

impl<L: Lister> Discovery for Listed<L> {
    fn describe(&self) -> String {
        self.lister.describe()
    }

    async fn refresh(&mut self) -> Result<(), String> {
        let found = self.lister.list().await?;
        let lister = &self.lister;
        self.out.offer(found, &lister.describe(), &mut |name, labels, e| lister.bad_path(name, labels, e));
        Ok(())
    }

    fn wait(&mut self, every: Duration) -> impl Future<Output = ()> + Send {
        self.lister.wait(every)
    }
}

/// A discovery whose [`Lister`] is made from its table: the table `$cfg` is
/// its [`Discover`](super::Discover), the lister made by `$make` (a
/// `Result`), listing again every `$every` (of the table).
macro_rules! listed_kind {
    ($cfg:ty = $make:expr, every $every:expr) => {
        impl $crate::discovery::Discover for $cfg {
            fn start(
                &self,
                _: &$crate::config::SourceConfig,
                at: &$crate::discovery::Serving,
            ) -> Result<$crate::discovery::Found, String> {
                $crate::discovery::lister::start_listed(self, at, $make, $every)
            }
        }
    };
}
pub(crate) use listed_kind;

/// Starts the lister `make` makes of `cfg` for the source `at`, listing
/// again every `every` (of `cfg`).
pub fn start_listed<C, L: Lister, E: std::fmt::Display>(
    cfg: &C,
    at: &Serving,
    make: impl FnOnce(&C) -> Result<L, E>,
    every: impl FnOnce(&C) -> Duration,
) -> Result<Found, String> {
    let lister = make(cfg).map_err(|e| e.to_string())?;
    Ok(spawn(at, lister, every(cfg)))
}

/// The targets and globs `lister` publishes, kept current by the poller
/// (listing again every `every`) on `at.handle` until `at.cancel`.
pub fn spawn(at: &Serving, lister: impl Lister, every: Duration) -> Found {
    let (out, found) = published(at);
    let backoff = Backoff::up_to(RETRY_MAX.min(every));
    at.handle.spawn(poll(Listed { lister, out }, at.name.clone(), every, backoff, at.cancel.clone()));
    found
}

/// Where a lister's targets go for the source `at`, and what the source reads of them.
pub fn published(at: &Serving) -> (Published, Found) {
    let targets = Arc::new(SdTargets::default());
    let live = Arc::new(LiveGlobs::default());
    let out = Published::new(at.name.clone(), at.rules.clone(), targets.clone(), live.clone());
    (out, Found { targets, globs: Some(live), include: Vec::new(), remote: None })
}
