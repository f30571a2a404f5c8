//! `tailship query`, `tailship tail` and `tailship labels`: the command-line
//! edge of [`crate::client::query`]. Checks the query before any request,
//! turns time flags into nanoseconds, drives the pager (or the tail loop) and
//! prints entries as `default` (UTC time with nanoseconds, labels, line;
//! coloured when stdout is a terminal and `NO_COLOR` is unset), `raw` (the
//! line) or `jsonl` (one object per entry).
//!
//! Output goes through one buffered writer; a closed pipe (`| head`) surfaces
//! as an `io::Error` of kind `BrokenPipe`, which [`super::finish`] treats as
//! success.

use std::time::Duration;

use anyhow::Context;
use tokio_util::sync::CancellationToken;

mod connect;
mod more;
mod print;
mod tail;
mod time;

pub use tail::tail;

pub use more::{instant_query, labels, series};

use super::client_args::query_client_config;
use super::CommandError;
use crate::cli::{EntryFormatArgs, QueryArgs, RangeArgs, TimeZone};
use crate::client::query::{check_query, entries_limit, Pager, QueryClient, QueryKind};
use crate::client::retry::RetryPolicy;
use crate::config::ClientConfig;
use print::{rfc3339, stdout_printer};
use time::{now, ns, parse_time_arg};

/// The range of `query` without `--since` or `--from`.
const DEFAULT_SINCE: Duration = Duration::from_secs(3600);
/// Retries of one request of `query` and `labels` when `client.retry.max_retries` is 0 (push's "for ever").
const ONE_OFF_RETRIES: usize = 5;
fn usage(msg: String) -> anyhow::Error {
    CommandError::usage(anyhow::anyhow!(msg)).into()
}

fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread().enable_all().build().context("cannot start the async runtime")
}

fn one_off_retry(c: &ClientConfig) -> RetryPolicy {
    RetryPolicy::one_off(
        c.retry.min_backoff.get(),
        c.retry.max_backoff.get(),
        if c.retry.max_retries == 0 { ONE_OFF_RETRIES } else { c.retry.max_retries },
    )
}

/// The client check, with the hint each command needs.
/// `--from`/`--to`/`--since` as (start, end) in Unix ns: `--to` or now, and
/// `--from` or `--since` (default an hour) before the end; an empty range is a usage error.
fn time_range(range: &RangeArgs, now: i64) -> anyhow::Result<(i64, i64)> {
    let end = match &range.to {
        Some(t) => parse_time_arg("--to", t, now)?,
        None => now,
    };
    let start = match &range.from {
        Some(f) => parse_time_arg("--from", f, now)?,
        None => end.saturating_sub(ns(range.since.unwrap_or(DEFAULT_SINCE))),
    };
    if start >= end {
        return Err(usage(format!("the range is empty: start {} is not before end {}", rfc3339(start), rfc3339(end))));
    }
    Ok((start, end))
}

fn checked(query: &str) -> anyhow::Result<QueryKind> {
    check_query(query).map_err(|e| CommandError::usage(e).into())
}

pub fn query(args: &QueryArgs) -> anyhow::Result<()> {
    let kind = checked(&args.query)?;
    let now = now();
    if args.tail {
        return tail(&more::as_tail(args));
    }
    if args.instant {
        if kind == QueryKind::Log {
            return Err(usage(format!(
                "--instant needs a metric query, such as count_over_time({}[5m]); `{}` is a log selector: drop \
                 --instant to read its lines",
                args.query.trim(),
                args.query.trim()
            )));
        }
        return more::instant(&args.query, args.time.as_deref(), args.format.output, &args.service.client, now);
    }
    let (start, end) = time_range(&args.range, now)?;
    if kind == QueryKind::Metric {
        return more::matrix(args, start, end);
    }
    let limit = (args.limit > 0).then_some(args.limit);
    let batch = usize::try_from(args.batch).unwrap_or(usize::MAX);
    let (client_args, loki_addr) = connect::with_logcli_env(&args.service.client);
    let mut c = query_client_config(&client_args)?;
    let mut prefix = connect::Prefix::of(loki_addr, &mut c);
    runtime()?.block_on(async {
        let mut client = QueryClient::new(&c, one_off_retry(&c))?;
        let cancel = CancellationToken::new();
        let direction = if args.forward { crate::client::query::Direction::Forward } else { args.direction };
        let mut pager = Pager::range(&args.query, direction, start, end, limit, batch);
        let mut p = printer(&args.format);
        while let Some(req) = pager.next_request() {
            tracing::debug!(start = req.start, end = req.end, limit = req.limit, "query_range");
            let entries = match client.range(&req, &cancel).await {
                Ok(entries) => entries,
                Err(e) if prefix.retry_other(&e, &mut c) => {
                    client = QueryClient::new(&c, one_off_retry(&c))?;
                    continue;
                }
                Err(e) => match entries_limit(&e) {
                    Some(max) if pager.lower_batch(max) => {
                        tracing::info!(max, "the service takes at most {max} entries per request; paging by {max}");
                        continue;
                    }
                    _ => return Err(prefix.explain(e, &c)),
                },
            };
            let accepted = pager.accept(&req, entries);
            print_page(accepted, &pager, &mut p)?;
        }
        p.flush()?;
        say_outside(&pager);
        Ok(())
    })
}

/// Prints a page the pager accepted; true when it was full (more may be
/// waiting). A page that made no progress ends the command, with what was
/// printed flushed and the entries dropped said.
fn print_page<W: std::io::Write>(
    accepted: Result<(Vec<crate::client::query::Entry>, bool), crate::client::query::NoProgress>,
    pager: &Pager,
    p: &mut print::Printer<W>,
) -> anyhow::Result<bool> {
    let (fresh, more) = match accepted {
        Ok(page) => page,
        Err(e) => {
            p.flush()?;
            say_outside(pager);
            return Err(e.into());
        }
    };
    for e in &fresh {
        p.entry(e)?;
    }
    Ok(more)
}

/// Says on stderr how many entries the service answered outside the range
/// asked for (the pager dropped them), if any.
fn say_outside(pager: &Pager) {
    let n = pager.outside();
    if n > 0 {
        tracing::warn!(
            "the service answered {n} {} outside the time range asked for; dropped, not printed",
            if n == 1 { "entry" } else { "entries" }
        );
    }
}

/// The printer of `query` and `tail`.
fn printer(f: &EntryFormatArgs) -> print::Printer<std::io::BufWriter<std::io::StdoutLock<'static>>> {
    let mut p = stdout_printer(f.output, !f.no_labels);
    p.local = f.timezone == TimeZone::Local;
    p.exclude = f.exclude_label.clone();
    p
}
