//! The daemon: start from a [`Plan`], reload on SIGHUP, shut down in phases.
//!
//! Start: the metrics endpoint, the positions store, the pusher, the alert
//! engine, the batcher, then the sources (stdin first, then files), then tell
//! systemd. Reload (SIGHUP): load and compile the config again; if it is
//! valid, stop the file and journal sources, save positions, and start the
//! new ones over the same queue, positions and pusher (stdin keeps reading).
//! Shutdown: stop reading, flush and wait for acknowledgements (up to
//! `shutdown_timeout`), let alert updates go out, write the final positions.
//! `tailship run` and `tailship demo` both run this; `tailship push` runs
//! the same lanes once to the end ([`once`]).
//!
//! Not here: what the sources read (`crate::source`), batching and pushing
//! (`crate::batch`), compiling the config (`crate::plan`).

mod lanes;
mod net;
mod once;
mod sources;
mod status;

use lanes::{Keep, Lane};

/// Positions are written at most this long after an acknowledgement moved one.
const ACK_SYNC_DELAY: Duration = Duration::from_secs(1);

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use tokio_util::sync::CancellationToken;

pub use once::{once, Finished, Once};
use sources::{join_sources, start_sources, SourceEnv};

use crate::batch::LineTap;
use crate::config::SourceType;
use crate::metrics::Health;
use crate::plan::Plan;
use crate::positions::PositionsFile;
use crate::queue::{ChunkSink, Interner};
use crate::source::file::Mode;
use crate::status::Status;

/// `server.*`: a request in progress at shutdown gets a second to finish.
/// At `max_connections`, the connection silent longest makes room for a
/// new one at once (no [`crate::util::serve::MIN_IDLE`]): the endpoint's
/// clients (probes, scrapers, `top`) speak plain HTTP and send their request
/// as soon as they connect, so a connection silent the longest has nothing
/// coming, and a probe must not wait a second per 64 idle connections
/// (a Kubernetes probe gives up after 1 s).
fn endpoint_limits(c: &crate::config::ServerConfig) -> crate::util::serve::ServeLimits {
    crate::util::serve::ServeLimits {
        header_timeout: c.header_read_timeout.get(),
        max_connections: c.max_connections,
        min_idle: Duration::ZERO,
        shutdown_grace: Duration::from_secs(1),
    }
}

/// Runs the agent until `shutdown` fires.
pub async fn run(mut plan: Plan, shutdown: CancellationToken) -> anyhow::Result<()> {
    sources::check_journalctl(&plan)?;
    let fd_limit = crate::util::raise_fd_limit();
    sources::fit_open_files(&mut plan, fd_limit);
    let config = &plan.config;
    // What `/status`, `/status.json` and `top` show, handed to what writes into it.
    let status = Arc::new(Status::default());
    let health = Health::with_sources_of(status.clone());
    let fresh = config.positions.on_unreadable == crate::config::OnUnreadable::StartFresh;
    let file = Arc::new(PositionsFile::load(&config.positions.path, fresh)?.shown_in(status.clone()));
    // Alerts: a tap rides in each client's batcher; the engine flushes when the batchers end.
    let (first_tap, alerts) = crate::alert::start(plan.rules.clone(), config, status.clone())?;
    let mut first_tap = Some(first_tap);
    let queue_bytes = config.queue.max_bytes.get() as usize;
    let mut lanes = Vec::new();
    for client in config.clients() {
        let tap = first_tap.take().unwrap_or_else(|| alerts.tap());
        lanes.push(
            Lane::start(
                client,
                Keep::File(&file),
                &health,
                &status,
                queue_bytes,
                Some(Box::new(tap) as Box<dyn LineTap>),
            )
            .await?,
        );
    }
    prepare_metrics(&plan, &lanes, &status);
    let board = status::Board::new(&plan, health.clone(), status.clone());
    board.set_lanes(&lanes);
    let endpoint_stop = CancellationToken::new();
    let endpoint = start_endpoint(&config.server, &health, &board, &endpoint_stop).await?;
    let interner = Interner::new();
    let mut stdin: Option<Box<dyn std::io::Read + Send>> = Some(Box::new(std::io::stdin()));
    let stdin_source = StdinSource::start(&plan, &lanes, &interner, shutdown.child_token(), &mut stdin, &status)?;
    let mut receivers = net::start_receivers(&plan).await?;
    board.set_listeners(receivers.listeners(), receivers.spools.clone());
    let spools = Some(receivers.spools.clone());
    let shipping = net::with_drains(&plan, net::drains(&plan, &receivers.spools));
    for lane in &mut lanes {
        lane.start_sources(&shipping, &interner, &shutdown, &mut stdin, spools.clone())?;
    }
    health.sources_started.store(true, Ordering::Relaxed);
    announce(&plan, &lanes);
    let watchdog = crate::systemd::Watchdog::start();
    let sync = spawn_positions_sync(file.clone(), health.clone(), config.positions.sync_period.get(), shutdown.clone());
    let told = spawn_status_line(health.clone(), shutdown.clone());

    let mut hup = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup())?;
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => break,
            _ = hup.recv() => {
                let promtail = crate::metrics::promtail::PromtailMetrics::all();
                let Some(new) = reload_plan(&plan.file, fd_limit) else {
                    promtail.reload_fail.inc();
                    continue;
                };
                promtail.reload_success.inc();
                net::reload(&mut receivers, &plan, &new).await;
                board.set_listeners(receivers.listeners(), receivers.spools.clone());
                alerts.reload(new.rules.clone()).await;
                board.set_plan(&new);
                let mut running = Running { lanes: &mut lanes, stdin: &mut stdin, stdin_sink: &stdin_source.sink, interner: &interner, spools: spools.clone(), status: &status };
                let shipping = net::with_drains(&new, net::drains(&new, &receivers.spools));
                reload(&shipping, config, &file, &health, &alerts, &shutdown, &mut running).await;
                prepare_metrics(&new, &lanes, &status);
                board.set_lanes(&lanes);
            }
        }
    }

    let delivered = shut_down(config.shutdown_timeout.0.get(), receivers, stdin_source, lanes, alerts).await;
    let _ = sync.await;
    let _ = told.await;
    let saved = save_positions(&file, &health).await;
    endpoint_stop.cancel();
    if let Some((served, tick)) = endpoint {
        let _ = served.await;
        let _ = tick.await;
    }
    drop(watchdog);
    if let Err(e) = saved {
        // What was delivered since the last good write is sent again at the next start.
        anyhow::bail!("stopped, but the final positions were not saved: {e}");
    }
    tracing::info!(lines = delivered, "stopped");
    Ok(())
}

/// The stdin source, started before the others: it reads on across reloads.
struct StdinSource {
    cancel: CancellationToken,
    sink: ChunkSink,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl StdinSource {
    /// Starts the plan's stdin source, if it has one, into every lane's queue.
    fn start(
        plan: &Plan,
        lanes: &[Lane],
        interner: &Arc<Interner>,
        cancel: CancellationToken,
        stdin: &mut Option<Box<dyn std::io::Read + Send>>,
        status: &Arc<Status>,
    ) -> anyhow::Result<Self> {
        let config = &plan.config;
        let sink = ChunkSink::fan_out(stdin_sinks(plan, lanes, interner));
        let sources: Vec<_> =
            plan.sources.iter().filter(|s| s.spec.config.kind == SourceType::Stdin).cloned().collect();
        let env = SourceEnv {
            default_tenant: config.client.tenant_id.clone(),
            sink: sink.clone(),
            positions: lanes[0].positions.clone(),
            interner: interner.clone(),
            handle: tokio::runtime::Handle::current(),
            mode: Mode::Follow,
            extra_labels: Default::default(),
            mute: false,
            status: status.clone(),
            client: lanes[0].name().to_string(),
            spools: None,
            structured_metadata: config.client.structured_metadata,
        };
        let threads = start_sources(&sources, &env, &cancel, stdin)?;
        Ok(Self { cancel, sink, threads })
    }
}

/// Tells systemd the agent is ready, and logs what it ships and the
/// config's warnings.
fn announce(plan: &Plan, lanes: &[Lane]) {
    let config = &plan.config;
    crate::systemd::ready(&format!("shipping from {} sources to {} clients", config.sources.len(), lanes.len()));
    for lane in lanes {
        tracing::info!(
            sources = config.sources.len(),
            client = %lane.name(),
            push_url = %lane.pusher.url(),
            positions = %config.positions.path.display(),
            "tailship running"
        );
    }
    for (key, message) in crate::plan::warnings(plan) {
        tracing::warn!(%key, "{message}");
    }
    let bytes = crate::util::pages::release_startup();
    tracing::debug!(bytes, "pages read only to start released");
}

/// The first phases of the shutdown: stop reading, flush and wait for
/// acknowledgements, let alert updates go out. Returns the lines delivered.
async fn shut_down(
    deadline: Duration,
    receivers: crate::source::net::Receivers,
    stdin: StdinSource,
    mut lanes: Vec<Lane>,
    alerts: crate::alert::Alerts,
) -> u64 {
    // Shutdown in phases: stop reading, flush and wait for acknowledgements,
    // write the final positions, exit. `shutdown_timeout` counts from here,
    // for every phase: stopping the sources took 45 s when SIGTERM came while
    // a file source opened 100,000 files, and the flush then had its whole
    // timeout on top.
    let stopping = tokio::time::Instant::now();
    let left = || deadline.saturating_sub(stopping.elapsed());
    crate::systemd::stopping();
    tracing::info!("stopping sources");
    // Senders are refused from here on; what they were told is received is in the spool.
    receivers.stop().await;
    stdin.cancel.cancel();
    let mut joining = Vec::new();
    for lane in &mut lanes {
        joining.push(lane.stop_sources());
    }
    joining.push(tokio::spawn(join_sources(stdin.threads)));
    for j in joining {
        if tokio::time::timeout(left(), j).await.is_err() {
            // A source still busy (a blocked read) holds its queue open: the
            // flush below gives up on it at the deadline; it ends with the process.
            tracing::warn!(timeout = ?deadline, "shutdown_timeout reached while stopping the sources");
            break;
        }
    }
    drop(stdin.sink);
    let flushing: Vec<_> = lanes.into_iter().map(|l| tokio::spawn(l.flush(left()))).collect();
    let mut delivered = 0;
    for f in flushing {
        delivered += f.await.map(|t| t.lines_delivered).unwrap_or(0);
    }
    // Pending alert updates get what is left of shutdown_timeout (at least 1s).
    alerts.finish(deadline.saturating_sub(stopping.elapsed()).max(Duration::from_secs(1))).await;
    delivered
}

/// Keeps systemd's `STATUS=` line saying what `/ready` says: every failing
/// client, or a positions file that cannot be written; checked every 2 s.
fn spawn_status_line(health: Arc<Health>, stop: CancellationToken) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut last: Result<(), String> = Ok(());
        loop {
            tokio::select! {
                _ = tokio::time::sleep(Duration::from_secs(2)) => {}
                _ = stop.cancelled() => break,
            }
            let now = health.ready();
            if now != last {
                match &now {
                    Ok(()) => crate::systemd::status("shipping"),
                    Err(why) => crate::systemd::status(&format!("not ready: {why}")),
                }
                last = now;
            }
        }
    })
}

/// The queues standard input's lines go to: its clients'.
fn stdin_sinks(plan: &Plan, lanes: &[Lane], interner: &Arc<Interner>) -> Vec<ChunkSink> {
    let Some(stdin) = plan.sources.iter().find(|s| s.spec.config.kind == SourceType::Stdin) else {
        return Vec::new();
    };
    let names: Vec<&str> = plan.config.clients_of(&stdin.spec.config).map(|c| c.name.as_str()).collect();
    lanes.iter().filter(|l| names.contains(&l.name())).map(|l| l.stdin_sink(interner)).collect()
}

/// The metrics and status endpoint on `server.listen` (none when it is empty),
/// with the status board's tick.
async fn start_endpoint(
    server: &crate::config::ServerConfig,
    health: &Arc<Health>,
    board: &Arc<status::Board>,
    stop: &CancellationToken,
) -> anyhow::Result<Option<(tokio::task::JoinHandle<()>, tokio::task::JoinHandle<()>)>> {
    if server.listen.is_empty() {
        return Ok(None);
    }
    let addr = server.listen.parse().context("server.listen")?;
    let limits = endpoint_limits(server);
    let serve = crate::metrics::serve(addr, limits, health.clone(), board.router(), stop.clone());
    let served = serve.await.with_context(|| format!("cannot listen on {addr} (server.listen)"))?;
    Ok(Some((served, board.start_tick(stop.clone()))))
}

/// Positions are written every `sync_period`, and at most ACK_SYNC_DELAY
/// after an acknowledgement moved one: a kill -9 then resends little more
/// than the batches in flight. Writes are coalesced, so a busy agent
/// writes (and fsyncs) the file at most once per ACK_SYNC_DELAY.
fn spawn_positions_sync(
    positions: Arc<PositionsFile>,
    health: Arc<Health>,
    period: Duration,
    stop: CancellationToken,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        loop {
            tokio::select! {
                _ = tokio::time::sleep(period) => {}
                _ = positions.acked.notified() => {
                    tokio::select! {
                        _ = tokio::time::sleep(ACK_SYNC_DELAY.min(period)) => {}
                        _ = stop.cancelled() => break,
                    }
                }
                _ = stop.cancelled() => break,
            }
            let _ = save_positions(&positions, &health).await;
        }
    })
}

/// What a reload changes: the clients' lanes and their sources, and where
/// standard input's lines go; with the status new lanes show in.
struct Running<'a> {
    lanes: &'a mut Vec<Lane>,
    stdin: &'a mut Option<Box<dyn std::io::Read + Send>>,
    stdin_sink: &'a ChunkSink,
    interner: &'a Arc<Interner>,
    spools: Option<Arc<crate::spool::Spools>>,
    status: &'a Arc<Status>,
}

/// The config file loaded and compiled again, or `None` (logged) if it is not valid.
fn reload_plan(file: &std::path::Path, fd_limit: Option<u64>) -> Option<Plan> {
    match crate::plan::load(file) {
        Err(e) => {
            tracing::error!("reload refused, keeping the running config: {e}");
            None
        }
        Ok(mut new) => {
            sources::fit_open_files(&mut new, fd_limit);
            Some(new)
        }
    }
}

/// Applies a reloaded plan: each client's URL, credentials and TLS at once
/// (batches waiting for a retry too); the sources stopped, positions saved;
/// clients removed (their positions dropped) and added (starting where the
/// others are, unless their `start_at` says otherwise); then every client's
/// sources started again. Standard input keeps reading.
async fn reload(
    new: &Plan,
    config: &crate::config::Config,
    file: &Arc<PositionsFile>,
    health: &Arc<Health>,
    alerts: &crate::alert::Alerts,
    shutdown: &CancellationToken,
    running: &mut Running<'_>,
) {
    let server_changed =
        crate::config::ServerConfig { promtail_metrics: config.server.promtail_metrics, ..new.config.server.clone() }
            != config.server;
    if new.config.queue != config.queue || server_changed {
        tracing::warn!("reload applies sources, stages and clients; queue and server changes need a restart");
    }
    let stopping: Vec<_> = running.lanes.iter_mut().map(|l| l.stop_sources()).collect();
    for s in stopping {
        let _ = s.await;
    }
    let _ = save_positions(file, health).await;
    let wanted = new.config.clients();
    // Clients added start where the others are: seeded while every running
    // client, those about to be removed too, still has its positions (a
    // client renamed by the reload goes on where its old name was).
    let added: Vec<&crate::config::ClientConfig> =
        wanted.iter().filter(|c| !running.lanes.iter().any(|l| l.name() == c.name)).collect();
    for client in added {
        let tap = Box::new(alerts.tap()) as Box<dyn LineTap>;
        let queue_bytes = new.config.queue.max_bytes.get() as usize;
        match Lane::start(client, Keep::File(file), health, running.status, queue_bytes, Some(tap)).await {
            Ok(lane) => {
                tracing::info!(client = %client.name, "client added");
                running.lanes.push(lane);
            }
            Err(e) => tracing::error!(client = %client.name, error = %e, "reload could not add the client"),
        }
    }
    let (kept, gone): (Vec<Lane>, Vec<Lane>) =
        std::mem::take(running.lanes).into_iter().partition(|l| wanted.iter().any(|c| c.name == l.name()));
    *running.lanes = kept;
    // Standard input stops writing to removed clients before they stop.
    running.stdin_sink.set_fan_out(stdin_sinks(new, running.lanes, running.interner));
    for lane in gone {
        let name = lane.name().to_string();
        lane.discard().await;
        file.remove(&name);
        health.push_result(&name, None);
        tracing::info!(client = %name, "client removed; its positions are dropped");
    }
    for lane in running.lanes.iter_mut() {
        let Some(client) = wanted.iter().find(|c| c.name == lane.name()) else { continue };
        let (client, _) = crate::client::prefix::resolve(client, &client.name).await;
        let client = &client;
        if let Err(e) = lane.pusher.reconfigure(client) {
            tracing::error!(client = %client.name, error = %e, "reload could not apply the client settings; keeping the running ones");
        }
        if lane.client.batch != client.batch {
            tracing::warn!(client = %client.name, "batch changes need a restart");
        }
        lane.client = client.clone();
    }
    running.stdin_sink.set_fan_out(stdin_sinks(new, running.lanes, running.interner));
    let mut started = 0;
    for lane in running.lanes.iter_mut() {
        match lane.start_sources(new, running.interner, shutdown, running.stdin, running.spools.clone()) {
            Ok(n) => started += n,
            Err(e) => tracing::error!(client = %lane.name(), error = %e, "reload failed to start sources"),
        }
    }
    let stdin = new.sources.iter().any(|s| s.spec.config.kind == SourceType::Stdin);
    if stdin {
        tracing::info!(sources = started, clients = running.lanes.len(), "config reloaded (stdin keeps reading)");
    } else {
        tracing::info!(sources = started, clients = running.lanes.len(), "config reloaded");
    }
}

/// The series the shipped alert rules and dashboard watch, at 0 until their first event.
fn prepare_metrics(plan: &Plan, lanes: &[Lane], status: &Arc<Status>) {
    let clients: Vec<&str> = lanes.iter().map(|l| l.name()).collect();
    let sources: Vec<&str> = plan.sources.iter().map(|s| &*s.name).collect();
    crate::metrics::Metrics::get().prepare(&clients, &sources, plan.config.queue.max_bytes.get());
    prepare_promtail_metrics(plan, lanes, status);
    let net = crate::source::net::metrics::NetMetrics::get();
    for s in plan.sources.iter().filter(|s| s.spec.config.kind.receives()) {
        net.received.with_label_values(&[&s.name]);
    }
}

/// Promtail's metrics on or off (`server.promtail_metrics`, applied by a
/// reload too), with what they read of the plan: each client's host and
/// tenant, each source's clients, the file targets without discovery; and
/// the status their file metrics are read from.
fn prepare_promtail_metrics(plan: &Plan, lanes: &[Lane], status: &Arc<Status>) {
    use crate::metrics::promtail;
    promtail::set_enabled(plan.config.server.promtail_metrics);
    if !plan.config.server.promtail_metrics {
        return;
    }
    let clients: Vec<(String, String)> =
        lanes.iter().map(|l| (l.pusher.host().to_string(), l.client.tenant_id.clone().unwrap_or_default())).collect();
    let sources = plan
        .sources
        .iter()
        .map(|s| {
            let of: Vec<usize> = plan
                .config
                .clients_of(&s.spec.config)
                .filter_map(|c| lanes.iter().position(|l| l.name() == c.name))
                .collect();
            (s.name.to_string(), of)
        })
        .collect();
    let static_targets = plan
        .sources
        .iter()
        .filter(|s| {
            s.spec.config.kind == SourceType::File
                && s.spec.config.targets_from.is_none()
                && s.spec.config.discoveries().is_empty()
        })
        .map(|s| s.spec.config.include.len())
        .sum();
    promtail::PromtailMetrics::all().configure(promtail::Setup {
        clients,
        sources,
        static_targets,
        status: Some(status.clone()),
    });
}

/// Writes the positions file if anything changed; a failure is logged, shown
/// in `/ready` (until a write succeeds) and returned.
async fn save_positions(positions: &Arc<PositionsFile>, health: &Health) -> Result<(), String> {
    let p = positions.clone();
    let r = match tokio::task::spawn_blocking(move || p.save()).await {
        Ok(Ok(())) => Ok(()),
        Ok(Err(e)) => {
            tracing::warn!(error = %e, "positions not saved; the previous file stays valid, retrying later");
            Err(e.to_string())
        }
        Err(e) => {
            tracing::warn!(error = %e, "positions save task failed");
            Err(e.to_string())
        }
    };
    health.positions_result(r.as_ref().err().cloned());
    r
}
