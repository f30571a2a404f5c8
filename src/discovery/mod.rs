//! Discovery: what finds the targets a file source reads, and their
//! `__meta_*` labels. It reads no line: `source/` reads the files discovery
//! names (and the journal, stdin and the network receivers, which need none).
//!
//! - [`glob`]: the files a source's `include`/`exclude` globs name (a scan),
//!   and the globs a discovery replaces while the source runs.
//! - One way to be a discovery: [`Discovery`] (bring the targets up to date,
//!   then wait until they may have changed), run by one poller with one
//!   backoff ([`poll`]). A service that lists every target on request is a
//!   [`Lister`] (the cloud and service discoveries, Docker Swarm, target
//!   files, Consul, whose wait is its blocking query); watch-based ones keep
//!   what a watch tells them (Docker's events, Kubernetes' list-and-watch).
//! - One way to publish: targets whose labels (after the source's relabel
//!   rules) give a `__path__` glob become the source's [`publish::SdTargets`]
//!   and [`glob::LiveGlobs`]; Docker containers and Kubernetes pods, whose
//!   log files are known by place, are [`Targets`] of their own.
//!
//! - One way to be started: each discovery is a [`Discover`] made from its
//!   table; [`start`] matches once over the [`Sd`] a source names.
//!
//! Adding a discovery: its module here (a [`Lister`] and its [`Discover`],
//! one line in `kinds`), its config struct in `config/` (checked by its
//! `SdTable`) and one line of `config::discoveries!`, and its Promtail name
//! in `convert/`.

pub mod azure;
pub mod consul;
pub mod digitalocean;
pub mod dns;
pub mod docker;
pub mod dockerswarm;
pub mod ec2;
pub mod file_sd;
pub mod gce;
pub mod glob;
pub mod kubernetes;
pub mod lister;
pub mod marathon;
pub mod openstack;
pub mod poll;
pub mod publish;
pub mod triton;
pub mod zookeeper;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use tokio_util::sync::CancellationToken;

pub use docker::RemoteEngine;
pub use glob::{FileMatch, LiveGlobs};
pub use kubernetes::defaults::helm_chart_rules;
pub use kubernetes::node as kubernetes_node;
pub use lister::Lister;
pub use poll::{poll, Backoff, Discovery};
pub use publish::promtail_host;

use crate::config::{Sd, SdTable, SourceConfig, SourceType};
use crate::relabel::Rules;

/// One discovered target's labels.
pub type Labels = BTreeMap<String, String>;

/// Files found by a discovery, with their labels.
pub trait Targets: Send + Sync + std::fmt::Debug {
    /// The `__meta_*` labels of the file at `path`, or None when no known
    /// target owns it (yet). An empty set: read the file anyway, with the
    /// labels it has before the rules (its target stayed unknown too long).
    fn meta(&self, path: &Path) -> Option<BTreeMap<String, String>>;

    /// Whether the labels of [`Targets::meta`] went through the source's
    /// relabel rules already (they are then not applied again per file).
    fn relabelled(&self) -> bool {
        false
    }

    /// Whether files keep the `filename` label (Promtail's docker targets have none).
    fn filename_label(&self) -> bool {
        true
    }

    /// A count that grows when the targets change: the file source then
    /// looks again at once, so a new target's files (a pod's, when the pod
    /// list arrives) are opened without waiting for the next scan.
    fn changes(&self) -> u64 {
        0
    }
}

/// What a discovery gives the source it serves: the targets that say
/// which files are read, with which labels, and (for targets named by a
/// `__path__` glob) the include globs that replace the source's own, or
/// (a docker source's) the globs that are its own; or (a docker source's
/// Engine elsewhere) the Engine whose containers' logs are read through its API.
#[derive(Debug, Clone)]
pub struct Found {
    pub targets: Arc<dyn Targets>,
    pub globs: Option<Arc<LiveGlobs>>,
    /// Include globs known once it started, for a source that has none of
    /// its own (a local Docker Engine's json-file logs).
    pub include: Vec<String>,
    /// A docker source's Engine reached over the network: its containers
    /// are listed as the source's readers need, no file is read.
    pub remote: Option<RemoteEngine>,
}

/// The file source a discovery serves, and where its tasks run.
#[derive(Debug, Clone)]
pub struct Serving {
    /// The source's name, for messages.
    pub name: Arc<str>,
    /// The source's relabel rules: they find each target's `__path__`.
    pub rules: Option<Arc<Rules>>,
    pub handle: tokio::runtime::Handle,
    pub cancel: CancellationToken,
}

/// A discovery by type (Prometheus' `SDConfig.NewDiscoverer`): a
/// discovery's table (which checks itself, [`SdTable`]) starts the task that
/// keeps the source's targets current. Each discovery implements it for its
/// table beside its code.
pub trait Discover: SdTable {
    /// Starts it for the source `source`, kept current by tasks on
    /// `at.handle` until `at.cancel`; an error when it cannot be made.
    fn start(&self, source: &SourceConfig, at: &Serving) -> Result<Found, String>;
}

/// Writes [`start_sd`], the one match over the discoveries.
macro_rules! start_by_kind {
    ([] $($(#[$doc:meta])* $key:ident: $variant:ident($ty:ty),)*) => {
        /// Starts the discovery `sd` of `source`.
        fn start_sd(sd: Sd<'_>, source: &SourceConfig, at: &Serving) -> Result<Found, String> {
            match sd {
                $(Sd::$variant(cfg) => Discover::start(cfg, source, at),)*
            }
        }
    };
}
crate::config::discoveries!(start_by_kind[]);

/// Starts the discovery `config` names, if any (a `docker` source without
/// its table: the default Engine), kept current by a task on `at.handle`
/// until `at.cancel`; None without one (or when it cannot be made: said in
/// the log). Entered by the agent alone, for every source that has one.
pub fn start(config: &SourceConfig, at: &Serving) -> Option<Found> {
    let default_engine = crate::config::DockerConfig::default();
    let sd = match config.discoveries().first() {
        Some(sd) => *sd,
        None if config.kind == SourceType::Docker => Sd::Docker(&default_engine),
        None => return None,
    };
    start_sd(sd, config, at)
        .map_err(|e| tracing::error!(source = %at.name, error = %e, "the source's targets cannot be read"))
        .ok()
}

/// What a discovered file is the log of, by its target's labels: a
/// Kubernetes pod's container (`namespace/pod/container`) or a Docker
/// container (its name), for `/status` and `top`. `None` for other files.
pub fn target_name(meta: &BTreeMap<String, String>) -> Option<String> {
    let get = |k: &str| meta.get(k).map(String::as_str).filter(|v| !v.is_empty());
    let pod = get("__meta_kubernetes_pod_name")
        .map(|pod| (get("__meta_kubernetes_namespace"), pod, get("__meta_kubernetes_pod_container_name")));
    let pod = pod.or_else(|| get("pod").map(|pod| (get("namespace"), pod, get("container"))));
    if let Some((ns, pod, container)) = pod {
        let mut name = ns.map(|ns| format!("{ns}/{pod}")).unwrap_or_else(|| pod.to_string());
        if let Some(c) = container {
            name.push('/');
            name.push_str(c);
        }
        return Some(format!("pod {name}"));
    }
    let container = get("__meta_docker_container_name").or_else(|| get("__meta_dockerswarm_container_name"));
    container.map(|c| format!("container {}", c.trim_start_matches('/')))
}

/// Prometheus' label name sanitising: every character other than
/// `[a-zA-Z0-9_]` becomes `_`.
pub fn sanitize(name: &str) -> String {
    name.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' { c } else { '_' }).collect()
}

/// `host:port`, bracketed for an IPv6 host (Go's `net.JoinHostPort`).
pub fn join_host_port(host: &str, port: impl std::fmt::Display) -> String {
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}
