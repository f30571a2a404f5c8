//! `tailship push`: ship files or stdin once, exit when every line is acknowledged.

use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use super::client_args::client_config;
use super::CommandError;
use crate::agent::{Finished, Once};
use crate::batch::Totals;
use crate::cli::PushArgs;
use crate::config::{Config, SourceConfig, SourceType};
use crate::metrics::{Health, Metrics};
use crate::plan::Plan;
use crate::util::is_valid_label_name;
use anyhow::Context;

pub fn push(args: &PushArgs) -> anyhow::Result<()> {
    let mut client = client_config(&args.client)?;
    if let Some(n) = args.max_retries {
        client.retry.max_retries = n;
    }
    if args.give_up_after.is_some_and(|d| d.is_zero()) {
        return Err(CommandError::usage(anyhow::anyhow!("--give-up-after must be more than 0")).into());
    }
    let labels = labels(&args.label)?;
    let files: Vec<String> = if args.files.is_empty() { vec!["-".into()] } else { args.files.clone() };
    let (sources, total_bytes) = sources(&files)?;
    let config = Config { client, sources, ..Default::default() };
    let plan = crate::plan::compile(config, Path::new("<command line>")).map_err(CommandError::usage)?;
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    let totals = rt.block_on(ship(args, &plan, labels, &files, total_bytes))?;
    outcome(&totals)
}

/// `--label NAME=VALUE` arguments as labels.
fn labels(args: &[String]) -> anyhow::Result<BTreeMap<String, String>> {
    let mut labels = BTreeMap::new();
    for l in args {
        let Some((k, v)) = l.split_once('=') else {
            return Err(CommandError::usage(anyhow::anyhow!("--label `{l}`: expected NAME=VALUE")).into());
        };
        if !is_valid_label_name(k) {
            return Err(CommandError::usage(anyhow::anyhow!(
                "--label `{l}`: `{k}` is not a valid label name ([a-zA-Z_][a-zA-Z0-9_]*)"
            ))
            .into());
        }
        labels.insert(k.to_string(), v.to_string());
    }
    Ok(labels)
}

/// One source per file (`-`: standard input, once), checked readable; with
/// the files' total size for the progress bar.
fn sources(files: &[String]) -> anyhow::Result<(Vec<SourceConfig>, u64)> {
    let mut sources = Vec::new();
    let mut total_bytes = 0u64;
    for f in files {
        if f == "-" {
            sources.push(SourceConfig { kind: SourceType::Stdin, name: Some("stdin".into()), ..Default::default() });
            continue;
        }
        let path = std::path::absolute(f).with_context(|| format!("{f}: bad path"))?;
        let meta = std::fs::metadata(&path)
            .map_err(|e| CommandError::usage(anyhow::anyhow!("{}: cannot read: {e}", path.display())))?;
        if !meta.is_file() {
            return Err(CommandError::usage(anyhow::anyhow!("{}: not a regular file", path.display())).into());
        }
        std::fs::File::open(&path)
            .map_err(|e| CommandError::usage(anyhow::anyhow!("{}: cannot read: {e}", path.display())))?;
        total_bytes += meta.len();
        sources.push(SourceConfig {
            kind: SourceType::File,
            name: Some("file".into()),
            include: vec![path.to_string_lossy().into_owned()],
            ..Default::default()
        });
    }
    if sources.iter().filter(|s| s.kind == SourceType::Stdin).count() > 1 {
        return Err(CommandError::usage(anyhow::anyhow!("`-` (stdin) given more than once")).into());
    }
    Ok((sources, total_bytes))
}

/// Reads every source once and ships it (the agent's plan run once);
/// returns the pipeline's totals, or why it stopped early
/// (`--give-up-after`, a signal, a refusal no retry cures).
async fn ship(
    args: &PushArgs,
    plan: &Plan,
    labels: BTreeMap<String, String>,
    files: &[String],
    total_bytes: u64,
) -> anyhow::Result<Totals> {
    let shutdown = crate::shutdown::on_signals();
    let health = Health::new();
    // --give-up-after: the deadline cancels the run like a signal, told
    // apart by `gave_up`; so does a refusal no retry cures (a wrong
    // password, URL or prefix), told apart by the run's `refusal`.
    let abort = shutdown.child_token();
    let gave_up = Arc::new(AtomicBool::new(false));
    let deadline = args.give_up_after.map(|d| {
        let (abort, gave_up) = (abort.clone(), gave_up.clone());
        tokio::spawn(async move {
            tokio::time::sleep(d).await;
            gave_up.store(true, Ordering::SeqCst);
            abort.cancel();
        })
    });
    let progress = (std::io::stderr().is_terminal() && !args.quiet).then(|| progress_bar(total_bytes, files));
    let ticker = progress.clone().map(|bar| tick(bar, plan.config.client.name.clone()));
    let run = Once { abort, labels, health: health.clone(), queue_bytes: None };
    let done = crate::agent::once(plan, run).await;
    if let Some(t) = ticker {
        t.abort();
    }
    if let Some(d) = deadline {
        d.abort();
    }
    let done = done?;
    if let Some(bar) = progress {
        bar.finish_with_message(format!("{} lines acknowledged", done.totals.lines_delivered));
    }
    let gave_up = gave_up.load(Ordering::SeqCst).then(|| args.give_up_after.unwrap_or_default());
    stopped_early(done, gave_up, &health, shutdown.is_cancelled())
}

/// Moves the progress bar every 100 ms: bytes read, lines acknowledged.
fn tick(bar: indicatif::ProgressBar, client: String) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        loop {
            let m = Metrics::get();
            let read: u64 =
                m.bytes_read.with_label_values(&["file"]).get() + m.bytes_read.with_label_values(&["stdin"]).get();
            bar.set_position(read);
            bar.set_message(format!("{} lines acknowledged", m.lines_pushed.with_label_values(&[&client]).get()));
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
}

/// The totals of a run that went to its end; why it stopped, if it did not.
fn stopped_early(
    done: Finished,
    gave_up: Option<Duration>,
    health: &Health,
    interrupted: bool,
) -> anyhow::Result<Totals> {
    let delivered = done.totals.lines_delivered;
    if let Some(refusal) = done.refusal {
        anyhow::bail!(
            "the service refused the push, and no retry can cure that: {refusal} ({delivered} lines acknowledged before; check --url, --api-prefix and the credentials)"
        );
    }
    if let Some(after) = gave_up {
        let why = match (health.last_push_error(), health.last_push_failure()) {
            (Some(e), _) => format!("the last push failed: {e}"),
            (None, Some(e)) => format!("pushes were succeeding again, the last failure was: {e}"),
            (None, None) => "no push failed; the lines were still being read".into(),
        };
        anyhow::bail!(
            "gave up after {} (--give-up-after): {delivered} lines acknowledged, the rest not delivered; {why}",
            crate::util::format_duration(after),
        );
    }
    if interrupted {
        anyhow::bail!("interrupted: {delivered} lines acknowledged before the signal");
    }
    Ok(done.totals)
}

/// Exit 0 only when every line was acknowledged; otherwise what was not.
fn outcome(totals: &Totals) -> anyhow::Result<()> {
    if totals.lines_rejected > 0 {
        anyhow::bail!(
            "{} of {} lines were refused by the service: {}",
            totals.lines_rejected,
            totals.lines_rejected + totals.lines_delivered,
            totals.refusals.join("; ")
        );
    }
    if totals.lines_given_up > 0 {
        anyhow::bail!(
            "{} of {} lines were not delivered: {}",
            totals.lines_given_up,
            totals.lines_given_up + totals.lines_rejected + totals.lines_delivered,
            totals.give_ups.join("; ")
        );
    }
    if totals.batches_aborted > 0 {
        anyhow::bail!("{} batches were not delivered", totals.batches_aborted);
    }
    tracing::debug!(lines = totals.lines_delivered, bytes = totals.bytes_delivered, "all lines acknowledged");
    Ok(())
}

fn progress_bar(total_bytes: u64, files: &[String]) -> indicatif::ProgressBar {
    let stdin_only = files.iter().all(|f| f == "-");
    let bar = if stdin_only || total_bytes == 0 {
        indicatif::ProgressBar::new_spinner()
    } else {
        indicatif::ProgressBar::new(total_bytes)
    };
    let style = if stdin_only {
        indicatif::ProgressStyle::with_template("{spinner} {bytes} read, {msg} ({elapsed})")
    } else {
        indicatif::ProgressStyle::with_template("{bar:30} {bytes}/{total_bytes} {bytes_per_sec} {msg} ({eta})")
    };
    if let Ok(s) = style {
        bar.set_style(s);
    }
    bar.set_draw_target(indicatif::ProgressDrawTarget::stderr());
    bar
}
