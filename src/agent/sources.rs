//! Starting sources: one thread each, feeding the queue. Used by the daemon
//! (`agent::run`) and by `tailship push`.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::thread::JoinHandle;

use tokio_util::sync::CancellationToken;

use crate::config::SourceType;
use crate::pipeline::SourceStages;
use crate::plan::SourcePlan;
use crate::positions::Positions;
use crate::queue::ChunkSink;
use crate::queue::Interner;
use crate::source::file::{FileSource, Mode};

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
        let stages = Arc::new(SourceStages::new(
            src.name.clone(),
            &src.spec.config,
            src.stages.clone(),
            env.default_tenant.as_deref(),
            env.interner.clone(),
            &env.extra_labels,
        ));
        let name = stages.name.clone();
        let out = crate::source::Outlet { sink: env.sink.clone(), handle: env.handle.clone(), cancel: cancel.clone() };
        let thread = match src.spec.config.kind {
            SourceType::File => {
                let fs = FileSource::new(src.spec.clone(), stages, env.positions.clone(), out, env.mode)
                    .map_err(|e| anyhow::anyhow!("source {name}: {e}"))?;
                std::thread::Builder::new().name(format!("src-{name}")).spawn(move || fs.run())?
            }
            SourceType::Stdin => {
                let Some(input) = stdin.take() else {
                    tracing::warn!(source = %name, "standard input is already read by another source; skipping");
                    continue;
                };
                let spec = src.spec.clone();
                std::thread::Builder::new().name(format!("src-{name}")).spawn(move || {
                    crate::source::stdin::run(&spec, stages, input, out);
                })?
            }
        };
        threads.push(thread);
    }
    Ok(threads)
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
