//! Prometheus service discoveries that list their targets on request, for a
//! file source (Promtail's `dockerswarm_sd_configs` and the like).
//!
//! How it works. A [`Lister`] asks its service for every target and gives
//! each one's labels (`__meta_*`, `__address__`). A task calls it at start
//! and then every `refresh_interval`; as in Promtail, a target is tailed
//! only when the source's relabel rules give it a `__path__` (a glob;
//! `__path_exclude__` too). The targets with one go to the file machinery as
//! the groups of a target file do (see [`super::file_sd`]): files are opened
//! at the next scan with the target's labels through the same rules, and
//! files no target names any more are read to their end and closed. When the
//! service cannot be reached the targets known stay, the failure is said
//! once, and the request is tried again with backoff (1 s doubling to the
//! refresh interval, at most 15 s) until it answers.

pub mod azure;
pub mod digitalocean;
pub mod dns;
pub mod dockerswarm;
pub mod ec2;
pub mod gce;
pub mod marathon;
pub mod openstack;
pub mod triton;
pub mod zookeeper;

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::discover::LiveGlobs;
use super::file_sd::{compile_targets, publish, SdTargets};
use super::SourceSpec;
use crate::relabel::Rules;

/// One discovered target's labels.
pub type Labels = BTreeMap<String, String>;

/// Retries after a failure: first wait, and the most (Prometheus waits 15 s).
const RETRY_MIN: Duration = Duration::from_secs(1);
const RETRY_MAX: Duration = Duration::from_secs(15);
/// How often ZooKeeper's trees are read again without a watch event.
const ZK_EVERY: Duration = Duration::from_secs(60);

/// A discovery that lists every target when asked.
pub trait Lister: Send + 'static {
    /// What is asked, for messages (`Docker Swarm at unix:///var/run/docker.sock`).
    fn describe(&self) -> String;
    /// Every target now.
    fn list(&mut self) -> impl Future<Output = Result<Vec<Labels>, String>> + Send;

    /// Waits until the targets may have changed: `every` by default; a
    /// discovery told of changes (ZooKeeper's watches) returns sooner.
    fn wait(&mut self, every: Duration) -> impl Future<Output = ()> + Send {
        tokio::time::sleep(every)
    }
}

/// `spec` reading the files its discovery's targets name (unchanged
/// without one of the discoveries here), kept current by a task on `handle`
/// until `cancel`.
pub fn attach_configured(
    spec: &SourceSpec,
    name: &Arc<str>,
    handle: &tokio::runtime::Handle,
    cancel: &CancellationToken,
) -> SourceSpec {
    let c = &spec.config;
    let at = At { spec, name, handle, cancel };
    let made = if let Some(cfg) = &c.dockerswarm {
        at.go(dockerswarm::Swarm::new(cfg), cfg.refresh_interval.get())
    } else if let Some(cfg) = &c.triton {
        at.go(triton::Triton::new(cfg), cfg.refresh_interval.get())
    } else if let Some(cfg) = &c.digitalocean {
        at.go(digitalocean::DigitalOcean::new(cfg), cfg.refresh_interval.get())
    } else if let Some(cfg) = &c.dns {
        at.go(Ok::<_, String>(dns::Dns::new(cfg)), cfg.refresh_interval.get())
    } else if let Some(cfg) = &c.serverset {
        at.go(Ok::<_, String>(zookeeper::Zookeeper::new(cfg, zookeeper::Flavor::Serverset)), ZK_EVERY)
    } else if let Some(cfg) = &c.nerve {
        at.go(Ok::<_, String>(zookeeper::Zookeeper::new(cfg, zookeeper::Flavor::Nerve)), ZK_EVERY)
    } else if let Some(cfg) = &c.gce {
        at.go(gce::Gce::new(cfg), cfg.refresh_interval.get())
    } else if let Some(cfg) = &c.openstack {
        at.go(openstack::Openstack::new(cfg), cfg.refresh_interval.get())
    } else if let Some(cfg) = &c.ec2 {
        at.go(ec2::Ec2::new(cfg), cfg.refresh_interval.get())
    } else if let Some(cfg) = &c.azure {
        at.go(azure::Azure::new(cfg), cfg.refresh_interval.get())
    } else if let Some(cfg) = &c.marathon {
        at.go(marathon::Marathon::new(cfg), cfg.refresh_interval.get())
    } else {
        return spec.clone();
    };
    made.unwrap_or_else(|e| {
        tracing::error!(source = %name, error = %e, "the source's targets cannot be read");
        spec.clone()
    })
}

/// Where a discovery's task is attached.
struct At<'a> {
    spec: &'a SourceSpec,
    name: &'a Arc<str>,
    handle: &'a tokio::runtime::Handle,
    cancel: &'a CancellationToken,
}

impl At<'_> {
    /// The source reading `made`'s targets, read again every `every` (or why it cannot be made).
    fn go<L: Lister>(&self, made: Result<L, impl std::fmt::Display>, every: Duration) -> Result<SourceSpec, String> {
        let l = made.map_err(|e| e.to_string())?;
        Ok(attach(self.spec, self.name, self.handle, self.cancel, l, every))
    }
}

/// `spec` reading the files `lister`'s targets name, read again every
/// `every` by a task on `handle` until `cancel`.
pub fn attach(
    spec: &SourceSpec,
    name: &Arc<str>,
    handle: &tokio::runtime::Handle,
    cancel: &CancellationToken,
    lister: impl Lister,
    every: Duration,
) -> SourceSpec {
    let mut spec = spec.clone();
    let Some(base) = spec.files.clone() else { return spec };
    let targets = Arc::new(SdTargets::default());
    let live = Arc::new(LiveGlobs::default());
    spec.labels.targets = Some(targets.clone());
    spec.files = Some(Arc::new(base.with_live(live.clone())));
    let out = Published::new(name.clone(), spec.labels.relabel.clone(), targets, live);
    handle.spawn(poll(lister, out, every, cancel.clone()));
    spec
}

async fn poll(mut lister: impl Lister, mut out: Published, every: Duration, cancel: CancellationToken) {
    let mut retry = RETRY_MIN;
    let mut failing = false;
    loop {
        match lister.list().await {
            Ok(found) => {
                if std::mem::take(&mut failing) {
                    tracing::info!(source = %out.name, from = %lister.describe(), "the discovery answers again");
                }
                retry = RETRY_MIN;
                out.offer(found, &lister.describe());
                tokio::select! {
                    _ = cancel.cancelled() => return,
                    _ = lister.wait(every) => {}
                }
            }
            Err(e) => {
                if !std::mem::replace(&mut failing, true) {
                    tracing::warn!(source = %out.name, from = %lister.describe(), error = %e,
                        "cannot read targets; the targets known stay, retrying with backoff");
                }
                let wait = retry;
                retry = (retry * 2).min(RETRY_MAX).min(every.max(RETRY_MIN));
                tokio::select! {
                    _ = cancel.cancelled() => return,
                    _ = tokio::time::sleep(wait) => {}
                }
            }
        }
    }
}

/// Where a discovery's targets go: the ones the rules give a `__path__`
/// become the source's targets and globs when they change.
pub struct Published {
    pub name: Arc<str>,
    rules: Option<Arc<Rules>>,
    targets: Arc<SdTargets>,
    live: Arc<LiveGlobs>,
    last: Option<Vec<Labels>>,
}

impl Published {
    pub fn new(name: Arc<str>, rules: Option<Arc<Rules>>, targets: Arc<SdTargets>, live: Arc<LiveGlobs>) -> Self {
        Self { name, rules, targets, live, last: None }
    }

    /// Takes the targets found now (`from` names the discovery in messages).
    pub fn offer(&mut self, found: Vec<Labels>, from: &str) {
        let tailed = with_paths(self.rules.as_deref(), found);
        if self.last.as_ref() == Some(&tailed) {
            return;
        }
        tracing::info!(source = %self.name, from, targets = tailed.len(), "targets read");
        let name = self.name.clone();
        let (groups, include) = compile_targets(tailed.clone(), &mut |l, e| {
            let address = l.get("__address__").map(String::as_str).unwrap_or("");
            tracing::warn!(source = %name, from, address, error = %e, "a target's __path__ is not a glob; left out");
        });
        publish(&self.targets, &self.live, groups, include);
        self.last = Some(tailed);
    }
}

/// The targets `rules` give a `__path__`: their discovered labels with it
/// (and `__path_exclude__`), as a target file would list them.
pub fn with_paths(rules: Option<&Rules>, found: Vec<Labels>) -> Vec<Labels> {
    let mut out = Vec::new();
    for meta in found {
        let mut labels = meta.clone();
        if let Some(rules) = rules {
            if !rules.apply(&mut labels) {
                continue;
            }
        }
        let Some(path) = labels.get("__path__").filter(|p| !p.is_empty()) else { continue };
        let mut t = meta;
        t.insert("__path__".into(), path.clone());
        if let Some(x) = labels.get("__path_exclude__") {
            t.insert("__path_exclude__".into(), x.clone());
        }
        out.push(t);
    }
    out.sort();
    out.dedup();
    out
}

/// `host:port`, bracketed for an IPv6 host (Go's `net.JoinHostPort`).
pub fn join_host_port(host: &str, port: impl std::fmt::Display) -> String {
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}
