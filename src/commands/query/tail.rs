//! `tailship tail`: follows a query, polling for lines as they are stored
//! (each poll looks back a little again, lines already shown skipped), until
//! SIGINT or SIGTERM.

use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::super::client_args::query_client_config;
use super::print::Printer;
use super::time::{now, ns};
use super::{checked, connect, print_page, printer, runtime, say_outside, usage};
use crate::cli::TailArgs;
use crate::client::query::{entries_limit, round_ms, Entry, Pager, QueryClient, QueryKind, RangeRequest};
use crate::client::retry::RetryPolicy;
use crate::config::ClientConfig;
use crate::util::format_duration;

/// Longest wait between attempts of a tail: a live view should come back soon after the service does.
const TAIL_MAX_BACKOFF: Duration = Duration::from_secs(30);

/// How late past `--delay` a tail still shows a line: each poll looks this
/// far back again (lines already shown are skipped).
const TAIL_LATE_LINES: Duration = Duration::from_secs(10);

/// `tailship tail`: checks the query and the flags, then follows.
pub fn tail(args: &TailArgs) -> anyhow::Result<()> {
    if checked(&args.query)? == QueryKind::Metric {
        return Err(usage(format!("`{}` is a metric query; tail follows log lines", args.query.trim())));
    }
    if args.interval.is_zero() {
        return Err(usage("--interval must be more than 0".into()));
    }
    let (client_args, loki_addr) = connect::with_logcli_env(&args.service.client);
    let mut c = query_client_config(&client_args)?;
    let prefix = connect::Prefix::of(loki_addr, &mut c);
    let policy = RetryPolicy {
        min_backoff: c.retry.min_backoff.get(),
        max_backoff: c.retry.max_backoff.get().min(TAIL_MAX_BACKOFF),
        max_retries: 0,
        connect_retries: None,
    };
    runtime()?.block_on(follow(args, c, prefix, policy))
}

/// Polls every `--interval` (at once again after a full page or a
/// changed request), prints what is new, and waits out the service's
/// failures with `policy`'s backoff, until SIGINT or SIGTERM.
async fn follow(
    args: &TailArgs,
    mut c: ClientConfig,
    mut prefix: connect::Prefix,
    policy: RetryPolicy,
) -> anyhow::Result<()> {
    let batch = usize::try_from(args.batch).unwrap_or(usize::MAX);
    let shutdown = on_interrupt();
    let mut client = QueryClient::new(&c, policy)?;
    // Lines stored up to the delay plus an agent's batch wait and a retry late still show.
    let overlap = ns(args.delay + TAIL_LATE_LINES);
    let mut pager = Pager::follow(&args.query, now().saturating_sub(ns(args.since)), batch, overlap);
    let mut p = printer(&args.format);
    let mut backoff = None;
    loop {
        let mut wait = args.interval;
        if let Some(req) = pager.request_until(now().saturating_sub(ns(args.delay))) {
            let answer = tokio::select! {
                a = client.range_once(&req) => a,
                _ = shutdown.cancelled() => break,
            };
            match answer {
                Ok(entries) => {
                    backoff = None;
                    if show(&mut pager, &req, entries, &mut p)? {
                        // A full page: the rest is waiting now.
                        wait = Duration::ZERO;
                    }
                }
                Err(e) if entries_limit(&e).is_some_and(|max| pager.lower_batch(max)) => {
                    wait = Duration::ZERO;
                }
                Err(e) if prefix.retry_other(&e, &mut c) => {
                    client = QueryClient::new(&c, policy)?;
                    wait = Duration::ZERO;
                }
                Err(e) if e.is_retriable() => {
                    let b = backoff.get_or_insert_with(|| policy.schedule());
                    wait = b.next_wait(&e).unwrap_or(policy.max_backoff);
                    tracing::warn!("{e}; tail goes on, next try in {}", format_duration(round_ms(wait)));
                }
                Err(e) => return Err(prefix.explain(e, &c)),
            }
        }
        if shutdown.is_cancelled() {
            break;
        }
        if !wait.is_zero() {
            tokio::select! {
                _ = tokio::time::sleep(wait) => {}
                _ = shutdown.cancelled() => break,
            }
        }
    }
    p.flush()?;
    say_outside(&pager);
    Ok(())
}

/// Takes the `entries` answered to `req` into the pager and prints those
/// not shown yet; true when the page was full (the rest is waiting).
fn show<W: std::io::Write>(
    pager: &mut Pager,
    req: &RangeRequest,
    entries: Vec<Entry>,
    p: &mut Printer<W>,
) -> anyhow::Result<bool> {
    let outside = pager.outside();
    let accepted = pager.accept(req, entries);
    if outside == 0 && pager.outside() > 0 {
        // Said at once (a tail runs until stopped) and counted to the end.
        tracing::warn!(
            "the service answers entries outside the time range asked for; they are dropped, \
             not printed (counted until the tail stops)"
        );
    }
    let more = print_page(accepted, pager, p)?;
    p.flush()?;
    Ok(more)
}

/// A token cancelled by SIGINT (Ctrl-C) or SIGTERM: the normal end of a tail,
/// so unlike the agent's shutdown it logs nothing.
fn on_interrupt() -> CancellationToken {
    use tokio::signal::unix::{signal, SignalKind};
    let token = CancellationToken::new();
    let t = token.clone();
    tokio::spawn(async move {
        let (Ok(mut term), Ok(mut int)) = (signal(SignalKind::terminate()), signal(SignalKind::interrupt())) else {
            return;
        };
        tokio::select! {
            _ = term.recv() => {}
            _ = int.recv() => {}
        }
        t.cancel();
    });
    token
}
