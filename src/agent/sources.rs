//! Starting sources: one thread each, feeding the queue. Used by the daemon
//! (`agent::run`) and by `tailship push`.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::thread::JoinHandle;

use tokio_util::sync::CancellationToken;

use crate::config::{Reading, SourceType};
use crate::pipeline::SourceStages;
use crate::plan::SourcePlan;
use crate::positions::Positions;
use crate::queue::ChunkSink;
use crate::queue::Interner;
use crate::source::docker::DockerSource;
use crate::source::file::{FileSource, Mode, Tailing};
use crate::source::journal::JournalSource;
use crate::source::net::reader::{SpoolReader, StagesFor};
use crate::source::Outlet;

/// Everything sources need to start.
pub struct SourceEnv {
    /// `client.tenant_id`: the tenant of sources without their own.
    pub default_tenant: Option<String>,
    pub sink: ChunkSink,
    pub positions: Arc<Positions>,
    pub interner: Arc<Interner>,
    pub handle: tokio::runtime::Handle,
    pub mode: Mode,
    /// Labels added to every source (`tailship push --label`).
    pub extra_labels: BTreeMap<String, String>,
    /// These sources read for a client other than their first: what they
    /// count in the metrics goes unreported (their first client's sources
    /// count it); their `status` is one nobody serves.
    pub mute: bool,
    /// Where the sources show their files and problems.
    pub status: Arc<crate::status::Status>,
    /// The client these sources read for (a network source's spool reader keeps its offsets).
    pub client: String,
    /// The network sources' spools (none: no network source runs).
    pub spools: Option<Arc<crate::spool::Spools>>,
    /// `client.structured_metadata`: received lines keep their metadata only for a service that takes it.
    pub structured_metadata: bool,
}

/// Starts one thread per source. `stdin` is taken by the first stdin source.
/// Returns the threads; each ends when `cancel` fires or its input is done.
pub fn start_sources(
    sources: &[SourcePlan],
    env: &SourceEnv,
    cancel: &CancellationToken,
    stdin: &mut Option<Box<dyn std::io::Read + Send>>,
) -> anyhow::Result<Vec<JoinHandle<()>>> {
    let mut threads = Vec::new();
    for src in sources {
        let stages = Arc::new(
            SourceStages::new(
                src.name.clone(),
                &src.spec.config,
                src.stages.clone(),
                env.default_tenant.as_deref(),
                env.interner.clone(),
                &env.extra_labels,
            )
            .with_stop(cancel.clone()),
        );
        let name = stages.name.clone();
        let out = crate::source::Outlet {
            sink: env.sink.clone(),
            handle: env.handle.clone(),
            cancel: cancel.clone(),
            status: env.status.clone(),
        };
        let mute = env.mute;
        let spawn = |f: Box<dyn FnOnce() + Send>| {
            std::thread::Builder::new().name(format!("src-{name}")).spawn(move || {
                if mute {
                    crate::metrics::mute_this_thread();
                }
                f()
            })
        };
        let thread = match src.spec.config.kind.reading() {
            Reading::Globs => {
                let spec = crate::source::target::admitting(&discovered(&src.spec, &name, env, cancel), &stages);
                let fs =
                    FileSource::new(Tailing { spec, stages, positions: env.positions.clone(), out, mode: env.mode })
                        .map_err(|e| anyhow::anyhow!("source {name}: {e}"))?;
                spawn(Box::new(move || fs.run()))?
            }
            Reading::Docker => {
                // The discovery's task stops with the source (a `Mode::Once` source ends by itself).
                let at = serving(&src.spec, &name, env, cancel.child_token());
                let spec = src.spec.clone();
                let ds = DockerSource::new(Tailing {
                    spec: spec.clone(),
                    stages,
                    positions: env.positions.clone(),
                    out,
                    mode: env.mode,
                });
                spawn(Box::new(move || {
                    // On the source's thread: a local Engine is asked where its logs are first, waiting while it is down.
                    ds.run(discover(&spec, &at));
                    at.cancel.cancel();
                }))?
            }
            Reading::Journal => {
                let follow = env.mode == Mode::Follow;
                let js = JournalSource::new(&src.spec, stages, env.positions.clone(), out, follow)
                    .map_err(|e| anyhow::anyhow!("source {name}: {e}"))?;
                spawn(Box::new(move || js.run()))?
            }
            Reading::Spooled => {
                let Some(reader) = spool_reader(src, &name, env, out) else { continue };
                spawn(Box::new(move || reader.run()))?
            }
            Reading::Stdin => {
                let Some(input) = stdin.take() else {
                    tracing::warn!(source = %name, "standard input is already read by another source; skipping");
                    continue;
                };
                let spec = src.spec.clone();
                spawn(Box::new(move || {
                    crate::source::stdin::run(&spec, stages, input, out);
                }))?
            }
        };
        threads.push(thread);
    }
    Ok(threads)
}

/// `spec` reading what its discovery finds, if it has one: the discovery
/// starts on the agent's runtime and stops with `cancel`.
fn discovered(
    spec: &crate::source::SourceSpec,
    name: &Arc<str>,
    env: &SourceEnv,
    cancel: &CancellationToken,
) -> crate::source::SourceSpec {
    let at = serving(spec, name, env, cancel.clone());
    let found = spec.files.as_ref().and_then(|_| discover(spec, &at));
    found.map_or_else(|| spec.clone(), |f| spec.discovered(f))
}

/// Starts the discovery source `spec` names, if any, for `at`: the one
/// entry into `discovery` (a file source's targets, a docker source's Engine).
fn discover(spec: &crate::source::SourceSpec, at: &crate::discovery::Serving) -> Option<crate::discovery::Found> {
    crate::discovery::start(&spec.config, at)
}

/// The source a discovery serves: its tasks on the agent's runtime until `cancel`.
fn serving(
    spec: &crate::source::SourceSpec,
    name: &Arc<str>,
    env: &SourceEnv,
    cancel: CancellationToken,
) -> crate::discovery::Serving {
    crate::discovery::Serving {
        name: name.clone(),
        rules: spec.labels.relabel.clone(),
        handle: env.handle.clone(),
        cancel,
    }
}

/// A client's reader of network source `src`'s spool.
fn spool_reader(src: &SourcePlan, name: &Arc<str>, env: &SourceEnv, out: Outlet) -> Option<SpoolReader> {
    let spool = env.spools.as_ref()?.get(name)?;
    let config = src.spec.config.clone();
    let stages = (!src.stages.is_empty()).then(|| {
        let (name, interner, compiled) = (name.clone(), env.interner.clone(), src.stages.clone());
        // A record's tenant is kept through the stages: each tenant has its own.
        let mut bare = config.clone();
        bare.tenant_id = None;
        bare.host_label = false;
        StagesFor::new(Box::new(move |tenant: Option<&str>| {
            SourceStages::new(name.clone(), &bare, compiled.clone(), tenant, interner.clone(), &Default::default())
        }))
    });
    Some(SpoolReader {
        spool,
        client: env.client.clone(),
        name: name.clone(),
        labels: config.labels.clone(),
        default_tenant: env.default_tenant.as_deref().map(Arc::from),
        stages,
        max_line_bytes: config.max_line_bytes.get() as usize,
        positions: env.positions.clone(),
        interner: env.interner.clone(),
        structured_metadata: env.structured_metadata,
        max_streams: config.stream_bound(),
        stream_idle: config.stream_idle(),
        out,
    })
}

/// Waits for source threads without blocking the runtime.
pub async fn join_sources(threads: Vec<JoinHandle<()>>) {
    let _ = tokio::task::spawn_blocking(move || {
        for t in threads {
            if t.join().is_err() {
                tracing::error!("a source thread panicked");
            }
        }
    })
    .await;
}

/// Descriptors kept for sockets, the positions file, inotify, the runtime and
/// the generations of rotated files a source reads beside `max_open_files`.
const FD_RESERVE: u64 = 128;

/// Lowers the file sources' `max_open_files` so that together they stay
/// under the descriptor limit `limit` less a reserve: with 1,024 descriptors
/// and the default 1,024 files per source, the agent once used them all and
/// could neither push nor save positions. A source read for several clients
/// counts once per client. Says so once when it lowers them.
pub fn fit_open_files(plan: &mut crate::plan::Plan, limit: Option<u64>) {
    let Some(limit) = limit else { return };
    let room = limit.saturating_sub(FD_RESERVE).max(16) as usize;
    let copies: Vec<usize> =
        plan.sources.iter().map(|s| plan.config.clients_of(&s.spec.config).count().max(1)).collect();
    let files = |s: &SourcePlan| s.spec.config.kind.reads_files();
    let total: usize =
        plan.sources.iter().zip(&copies).filter(|(s, _)| files(s)).map(|(s, n)| s.spec.config.max_open_files * n).sum();
    if total <= room {
        return;
    }
    for (s, n) in plan.sources.iter_mut().zip(&copies).filter(|(s, _)| files(s)) {
        let wanted = s.spec.config.max_open_files;
        let fitted = (wanted * room / total).max(1);
        tracing::warn!(source = %s.name, max_open_files = wanted, lowered_to = fitted, clients = n, descriptor_limit = limit,
            reserve = FD_RESERVE, "max_open_files lowered to fit the descriptor limit (raise LimitNOFILE or ulimit -n to follow more files at once)");
        s.spec.config.max_open_files = fitted;
    }
}

/// Every journal source needs journalctl: without it, `run` stops before
/// starting anything, with a config error naming the source's key (exit 2,
/// which the systemd unit does not restart in a loop).
pub fn check_journalctl(plan: &crate::plan::Plan) -> Result<(), crate::config::ConfigErrors> {
    if crate::source::journal::find_journalctl().is_some() {
        return Ok(());
    }
    let errors: Vec<crate::config::ConfigError> = plan
        .sources
        .iter()
        .enumerate()
        .filter(|(_, s)| s.spec.config.kind == SourceType::Journal)
        .map(|(i, s)| crate::config::ConfigError {
            file: plan.file.clone(),
            key: format!("sources[{i}].type"),
            message: format!("source {}: {}", s.name, crate::source::journal::JournalError::NoJournalctl),
        })
        .collect();
    if errors.is_empty() {
        Ok(())
    } else {
        Err(crate::config::ConfigErrors(errors))
    }
}
