//! `tailship labels`, `series` and `instant-query`, and the metric sides of
//! `query`: an instant's vector and a range's matrix (printed as logcli
//! prints it: the JSON of the series, indented).

use std::io::Write;

use tokio_util::sync::CancellationToken;

use super::connect::{with_logcli_env, Prefix};
use super::print::{escape_wanted, json_for_terminal, stdout_printer};
use super::time::{now, ns, parse_time_arg};
use super::{one_off_retry, runtime, usage};
use crate::cli::{ClientArgs, InstantQueryArgs, LabelsArgs, OutputFormat, QueryArgs, SeriesArgs, TailArgs};
use crate::client::http::HttpError;
use crate::client::query::{QueryClient, QueryKind};
use crate::config::ClientConfig;
use crate::util::is_valid_label_name;

/// Runs `op` with a client of `args`, once more at Loki's prefix after a 404
/// at the default one; the error names the prefix when it is a 404.
fn with_client<T>(
    args: &ClientArgs,
    op: impl AsyncFn(&QueryClient, &CancellationToken) -> Result<T, HttpError>,
) -> anyhow::Result<T> {
    let (args, loki_addr) = with_logcli_env(args);
    let mut c: ClientConfig = super::query_client_config(&args)?;
    let mut prefix = Prefix::of(loki_addr, &mut c);
    runtime()?.block_on(async {
        let cancel = CancellationToken::new();
        loop {
            let client = QueryClient::new(&c, one_off_retry(&c))?;
            match op(&client, &cancel).await {
                Ok(v) => return Ok(v),
                Err(e) if prefix.retry_other(&e, &mut c) => continue,
                Err(e) => return Err(prefix.explain(e, &c)),
            }
        }
    })
}

/// `tailship query --tail`: the query followed, as `tailship tail`.
pub(super) fn as_tail(a: &QueryArgs) -> TailArgs {
    TailArgs {
        query: a.query.clone(),
        since: a.range.since.unwrap_or_default(),
        delay: std::time::Duration::from_secs(1),
        interval: std::time::Duration::from_secs(1),
        batch: a.batch,
        format: a.format.clone(),
        service: a.service.clone(),
    }
}

/// A metric query at `time` (default: now), one sample per line.
pub(super) fn instant(
    query: &str,
    time: Option<&str>,
    output: OutputFormat,
    client: &ClientArgs,
    now: i64,
) -> anyhow::Result<()> {
    let time = match time {
        Some(t) => parse_time_arg("--time", t, now)?,
        None => now,
    };
    let samples = with_client(client, async |c, cancel| c.instant(query, time, cancel).await)?;
    let mut p = stdout_printer(output, true);
    for s in &samples {
        p.sample(s)?;
    }
    p.flush()?;
    Ok(())
}

pub fn instant_query(args: &InstantQueryArgs) -> anyhow::Result<()> {
    if super::checked(&args.query)? == QueryKind::Log {
        return Err(usage(format!(
            "instant-query needs a metric query, such as count_over_time({}[5m]); use `tailship query` for lines",
            args.query.trim()
        )));
    }
    instant(&args.query, args.time.as_deref(), args.output, &args.service.client, now())
}

/// A range metric query: every series' values from `start` to `end` every
/// `--step` (default: the range in about 250 steps, at least a second).
pub(super) fn matrix(args: &QueryArgs, start: i64, end: i64) -> anyhow::Result<()> {
    let step = match args.step {
        Some(s) if !s.is_zero() => ns(s),
        Some(_) => return Err(usage("--step must be more than 0".into())),
        None => ((end - start) / 250).max(1_000_000_000),
    };
    let series = with_client(&args.service.client, async |c, cancel| {
        c.range_matrix(&args.query, (start, end, step), cancel).await
    })?;
    let json: Vec<serde_json::Value> = series
        .iter()
        .map(|s| {
            let values: Vec<serde_json::Value> =
                s.samples.iter().map(|v| serde_json::json!([seconds(v.ts), v.value])).collect();
            serde_json::json!({ "metric": s.labels, "values": values })
        })
        .collect();
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let escape = escape_wanted();
    let shown = |text: String| if escape { json_for_terminal(text) } else { text };
    match args.format.output {
        OutputFormat::Default => writeln!(out, "{}", shown(serde_json::to_string_pretty(&json)?))?,
        OutputFormat::Jsonl | OutputFormat::Raw => {
            for s in &json {
                writeln!(out, "{}", shown(s.to_string()))?;
            }
        }
    }
    out.flush()?;
    Ok(())
}

/// Unix seconds as a JSON number, to the millisecond (as Loki writes them).
fn seconds(ts: i64) -> serde_json::Value {
    let ms = ts.div_euclid(1_000_000);
    if ms % 1000 == 0 {
        serde_json::json!(ms / 1000)
    } else {
        serde_json::json!(ms as f64 / 1000.0)
    }
}

pub fn series(args: &SeriesArgs) -> anyhow::Result<()> {
    if super::checked(&args.selector)? == QueryKind::Metric {
        return Err(usage(format!("`{}` is a metric query; series takes a stream selector", args.selector.trim())));
    }
    let (start, end) = super::time_range(&args.range, now())?;
    let sets = with_client(&args.service.client, async |c, cancel| c.series(&args.selector, start, end, cancel).await)?;
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let escape = escape_wanted();
    for s in &sets {
        // Values are quoted (JSON's escapes); names too are escaped on a terminal.
        let text = match args.output {
            OutputFormat::Jsonl => serde_json::to_string(s)?,
            OutputFormat::Default | OutputFormat::Raw => crate::client::query::Stream::new(s.clone()).display,
        };
        match (escape, args.output) {
            (false, _) => writeln!(out, "{text}")?,
            (true, OutputFormat::Jsonl) => writeln!(out, "{}", json_for_terminal(text))?,
            (true, _) => writeln!(out, "{}", crate::util::escape_controls(&text))?,
        }
    }
    out.flush()?;
    Ok(())
}

pub fn labels(args: &LabelsArgs) -> anyhow::Result<()> {
    if let Some(n) = &args.name {
        if !is_valid_label_name(n) {
            return Err(usage(format!("`{n}` is not a label name ([a-zA-Z_][a-zA-Z0-9_]*)")));
        }
    }
    let now = now();
    let range = args.since.map(|d| (now.saturating_sub(ns(d)), now));
    let names = with_client(&args.service.client, async |c, cancel| match &args.name {
        Some(n) => c.label_values(n, range, cancel).await,
        None => c.labels(range, cancel).await,
    })?;
    let mut p = stdout_printer(args.output, true);
    for n in &names {
        p.name(n)?;
    }
    p.flush()?;
    Ok(())
}
