//! The daemon: start from a [`Plan`], reload on SIGHUP, shut down in phases.
//!
//! Start: the metrics endpoint, the positions store, the pusher, the alert
//! engine, the batcher, then the sources (stdin first, then files), then tell
//! systemd. Reload (SIGHUP): load and compile the config again; if it is
//! valid, stop the file and journal sources, save positions, and start the
//! new ones over the same queue, positions and pusher (stdin keeps reading).
//! Shutdown: stop reading, flush and wait for acknowledgements (up to
//! `shutdown_timeout`), let alert updates go out, write the final positions.
//! `tailship run` and `tailship demo` both run this.

mod sources;
mod status;

/// Positions are written at most this long after an acknowledgement moved one.
const ACK_SYNC_DELAY: Duration = Duration::from_secs(1);

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use tokio_util::sync::CancellationToken;

pub use sources::{join_sources, start_sources, SourceEnv};

use crate::batch::{BatchSettings, LineTap, Shipper};
use crate::client::push::Pusher;
use crate::config::SourceType;
use crate::metrics::Health;
use crate::plan::Plan;
use crate::positions::Positions;
use crate::queue::Interner;
use crate::source::file::Mode;

/// `server.*`: a request in progress at shutdown gets a second to finish.
fn endpoint_limits(c: &crate::config::ServerConfig) -> crate::util::serve::ServeLimits {
    crate::util::serve::ServeLimits {
        header_timeout: c.header_read_timeout.get(),
        max_connections: c.max_connections,
        shutdown_grace: Duration::from_secs(1),
    }
}

/// Runs the agent until `shutdown` fires.
pub async fn run(mut plan: Plan, shutdown: CancellationToken) -> anyhow::Result<()> {
    sources::check_journalctl(&plan)?;
    let fd_limit = crate::util::raise_fd_limit();
    sources::fit_open_files(&mut plan.sources, fd_limit);
    let config = &plan.config;
    let health = Health::new();
    let positions = Arc::new(Positions::load(&config.positions.path));
    let pusher = Arc::new(Pusher::new(&config.client, health.clone())?);
    let board = status::Board::new(&plan, positions.clone(), health.clone(), pusher.clone());
    let endpoint_stop = CancellationToken::new();
    let endpoint = start_endpoint(&config.server, &health, &board, &endpoint_stop).await?;
    let abort = CancellationToken::new();
    // Alerts: the tap rides in the batcher; the engine flushes when the batcher ends.
    let (alert_tap, alerts) = crate::alert::start(plan.rules.clone(), config)?;
    let tap = Some(Box::new(alert_tap) as Box<dyn LineTap>);
    let pipeline = Shipper::start_with_tap(
        BatchSettings::of(&config.client),
        config.queue.max_bytes.get() as usize,
        pusher.clone(),
        positions.clone(),
        abort.clone(),
        tap,
    );
    let mut running = Running {
        env: SourceEnv {
            default_tenant: config.client.tenant_id.clone(),
            sink: pipeline.sink.clone(),
            positions: positions.clone(),
            interner: Interner::new(),
            handle: tokio::runtime::Handle::current(),
            mode: Mode::Follow,
            extra_labels: Default::default(),
        },
        stdin: Some(Box::new(std::io::stdin())),
        files_cancel: shutdown.child_token(),
        file_threads: Vec::new(),
    };
    let stdin_cancel = shutdown.child_token();
    let (stdin_sources, file_sources): (Vec<_>, Vec<_>) =
        plan.sources.iter().cloned().partition(|s| s.spec.config.kind == SourceType::Stdin);
    let mut threads = start_sources(&stdin_sources, &running.env, &stdin_cancel, &mut running.stdin)?;
    running.file_threads = start_sources(&file_sources, &running.env, &running.files_cancel, &mut running.stdin)?;
    health.sources_started.store(true, Ordering::Relaxed);
    crate::systemd::ready(&format!("shipping from {} sources", config.sources.len()));
    let watchdog = crate::systemd::Watchdog::start();
    tracing::info!(
        sources = config.sources.len(),
        push_url = %pusher.url(),
        positions = %config.positions.path.display(),
        "tailship running"
    );
    for (key, message) in crate::plan::warnings(&plan) {
        tracing::warn!(%key, "{message}");
    }
    let sync = spawn_positions_sync(positions.clone(), config.positions.sync_period.get(), shutdown.clone());

    let mut hup = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup())?;
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => break,
            _ = hup.recv() => {
                let Some(new) = reload_plan(&plan.file, fd_limit) else { continue };
                alerts.reload(new.rules.clone()).await;
                board.set_plan(&new);
                reload(&new, config, &pusher, &positions, &shutdown, &mut running).await;
            }
        }
    }

    // Shutdown in phases: stop reading, flush and wait for acknowledgements,
    // write the final positions, exit.
    crate::systemd::stopping();
    tracing::info!("stopping sources");
    threads.append(&mut running.file_threads);
    join_sources(threads).await;
    drop(running);
    let deadline = config.shutdown_timeout.0.get();
    let stopping = tokio::time::Instant::now();
    let totals = flush(pipeline, deadline, &abort).await;
    // Pending alert updates get what is left of shutdown_timeout (at least 1s).
    alerts.finish(deadline.saturating_sub(stopping.elapsed()).max(Duration::from_secs(1))).await;
    let _ = sync.await;
    save_positions(&positions).await;
    endpoint_stop.cancel();
    if let Some((served, tick)) = endpoint {
        let _ = served.await;
        let _ = tick.await;
    }
    drop(watchdog);
    tracing::info!(lines = totals.lines_delivered, "stopped");
    Ok(())
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
    positions: Arc<Positions>,
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
            save_positions(&positions).await;
        }
    })
}

/// What a reload replaces: the file and journal sources and what they need.
struct Running {
    env: SourceEnv,
    stdin: Option<Box<dyn std::io::Read + Send>>,
    files_cancel: CancellationToken,
    file_threads: Vec<std::thread::JoinHandle<()>>,
}

/// The config file loaded and compiled again, or `None` (logged) if it is not valid.
fn reload_plan(file: &std::path::Path, fd_limit: Option<u64>) -> Option<Plan> {
    match crate::plan::load(file) {
        Err(e) => {
            tracing::error!("reload refused, keeping the running config: {e}");
            None
        }
        Ok(mut new) => {
            sources::fit_open_files(&mut new.sources, fd_limit);
            Some(new)
        }
    }
}

/// Applies a reloaded plan: the client's URL, credentials and TLS at once;
/// the file and journal sources stopped, positions saved, and the new ones
/// started over the same queue, positions and pusher (stdin keeps reading).
async fn reload(
    new: &Plan,
    config: &crate::config::Config,
    pusher: &Pusher,
    positions: &Arc<Positions>,
    shutdown: &CancellationToken,
    running: &mut Running,
) {
    // Where pushes go and how they authenticate applies at once, to
    // batches waiting for a retry too (a fixed URL or password).
    if let Err(e) = pusher.reconfigure(&new.config.client) {
        tracing::error!(error = %e, "reload could not apply the client settings; keeping the running ones");
    }
    if new.config.client.batch != config.client.batch
        || new.config.queue != config.queue
        || new.config.server != config.server
    {
        tracing::warn!("reload applies sources, stages and the client's URL, credentials and TLS; batch, queue and server changes need a restart");
    }
    running.files_cancel.cancel();
    join_sources(std::mem::take(&mut running.file_threads)).await;
    save_positions(positions).await;
    running.files_cancel = shutdown.child_token();
    running.env.default_tenant = new.config.client.tenant_id.clone();
    let files: Vec<_> = new.sources.iter().filter(|s| s.spec.config.kind != SourceType::Stdin).cloned().collect();
    match start_sources(&files, &running.env, &running.files_cancel, &mut running.stdin) {
        Ok(t) => {
            running.file_threads = t;
            let stdin = if running.stdin.is_none() { " (stdin keeps reading)" } else { "" };
            tracing::info!(sources = files.len(), "config reloaded{stdin}");
        }
        Err(e) => tracing::error!(error = %e, "reload failed to start sources"),
    }
}

/// Waits for every queued line to be acknowledged, up to `deadline`; then
/// gives up on what is left (it is sent again at the next start).
async fn flush(pipeline: Shipper, deadline: Duration, abort: &CancellationToken) -> crate::batch::Totals {
    let finish = pipeline.finish();
    tokio::pin!(finish);
    match tokio::time::timeout(deadline, &mut finish).await {
        Ok(t) => t,
        Err(_) => {
            tracing::warn!(timeout = ?deadline, "shutdown_timeout reached with batches undelivered; they are sent again at the next start");
            abort.cancel();
            tokio::time::timeout(Duration::from_secs(5), &mut finish).await.unwrap_or_default()
        }
    }
}

async fn save_positions(positions: &Arc<Positions>) {
    let p = positions.clone();
    match tokio::task::spawn_blocking(move || p.save()).await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => tracing::warn!(error = %e, "positions not saved; the previous file stays valid, retrying later"),
        Err(e) => tracing::warn!(error = %e, "positions save task failed"),
    }
}
