//! `tailship demo`: the README's and the book's first command. Starts the embedded store on
//! a free loopback port, runs the agent on `config/demo.toml` over a generated
//! log (with ERROR lines and multiline stack traces), shows what arrives live,
//! and ends after `--duration` (default 20s) or at Ctrl-C with a summary.

use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::Context;
use tokio_util::sync::CancellationToken;

use crate::cli::DemoArgs;
use crate::receive::{EmbeddedStore, ReceiveOptions};

const DEMO_CONFIG: &str = include_str!("../../config/demo.toml");

pub fn demo(args: &DemoArgs) -> anyhow::Result<()> {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    let result = rt.block_on(run(args));
    // Nothing left running may hold the exit (the log writer is a blocking task).
    rt.shutdown_timeout(Duration::from_secs(2));
    result
}

/// The demo's output: standard output until it is closed (`tailship demo |
/// head -3`), which ends the demo as Ctrl-C does; the summary then goes to
/// standard error.
struct Out {
    closed: bool,
}

impl Out {
    fn say(&mut self, args: std::fmt::Arguments<'_>) {
        if self.closed {
            return;
        }
        let mut o = std::io::stdout();
        if o.write_fmt(args).and_then(|_| o.write_all(b"\n")).and_then(|_| o.flush()).is_err() {
            self.closed = true;
        }
    }

    /// The summary: to standard output, or standard error once that is closed.
    fn summary(&mut self, args: std::fmt::Arguments<'_>) {
        if self.closed {
            let _ = writeln!(std::io::stderr(), "{args}");
        } else {
            self.say(args);
        }
    }
}

async fn run(args: &DemoArgs) -> anyhow::Result<()> {
    let dir = tempfile::Builder::new().prefix("tailship-demo-").tempdir().context("cannot create a temp dir")?;
    let stop = crate::shutdown::on_signals();
    let store_stop = CancellationToken::new();
    let store = EmbeddedStore::new(ReceiveOptions { print_alerts: false, ..Default::default() });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}", listener.local_addr()?);
    let server = tokio::spawn(store.clone().serve(listener, store_stop.clone()));
    let plan = demo_plan(dir.path(), &url)?;

    let mut out = Out { closed: false };
    intro(&mut out, &url, dir.path(), args);
    let agent_stop = CancellationToken::new();
    let agent = tokio::spawn(crate::agent::run(plan, agent_stop.clone()));
    let writer_stop = CancellationToken::new();
    let writer = {
        let (path, rate, stop) = (dir.path().join("app.log"), args.rate, writer_stop.clone());
        tokio::task::spawn_blocking(move || write_log(&path, rate, &stop))
    };
    let started = Instant::now();
    watch(&mut out, &store, args.duration, &stop).await;
    writer_stop.cancel();
    let written = writer.await.unwrap_or(Ok(0)).unwrap_or(0);
    // Let the agent ship what is left, then stop it (SIGTERM semantics: flush, wait, exit).
    let drain_deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < drain_deadline && store.stats().entries + dropped_healthz(written) < written {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    agent_stop.cancel();
    let agent_result = agent.await;
    store_stop.cancel();
    let _ = server.await;
    summary(&mut out, &store, written, started.elapsed().as_secs_f64());
    match agent_result {
        Ok(Ok(())) => {}
        Ok(Err(e)) => return Err(e.context("the agent failed")),
        Err(e) => anyhow::bail!("the agent task failed: {e}"),
    }
    out.summary(format_args!("\n{NEXT}"));
    Ok(())
}

/// The agent's plan: `config/demo.toml` reading `dir`, shipping to `url`.
fn demo_plan(dir: &Path, url: &str) -> anyhow::Result<crate::plan::Plan> {
    let config_path = dir.join("demo.toml");
    std::fs::write(&config_path, DEMO_CONFIG)?;
    let env: Vec<(String, String)> = std::env::vars()
        .chain([("DEMO_DIR".into(), dir.display().to_string()), ("DEMO_URL".into(), url.to_string())])
        .collect();
    Ok(crate::plan::load_with_env(&config_path, &env)?)
}

fn intro(out: &mut Out, url: &str, dir: &Path, args: &DemoArgs) {
    out.say(format_args!("tailship demo"));
    out.say(format_args!("  embedded log store: {url}/logstore/api/v1 (tailship receive)"));
    out.say(format_args!("  generated log:      {}/app.log ({} lines/s)", dir.display(), args.rate));
    out.say(format_args!("  agent config:       config/demo.toml (job=\"demo\", level label, healthz lines dropped)"));
    out.say(format_args!("  alert rule:         ERROR lines -> formatted webhook of the embedded store"));
    out.say(format_args!(
        "  writing for {}s, then shipping the rest and a summary; Ctrl-C ends it early\n",
        args.duration.as_secs()
    ));
}

/// Says what arrives, every second, for `duration` or until `stop` (or
/// standard output is closed): lines stored, the last ERROR lines, alerts.
async fn watch(out: &mut Out, store: &EmbeddedStore, duration: Duration, stop: &CancellationToken) {
    let started = Instant::now();
    let mut last_error_ts = 0i64;
    let mut alerts_seen = 0usize;
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    tick.tick().await;
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = stop.cancelled() => break,
        }
        if out.closed {
            break;
        }
        let s = store.stats();
        out.say(format_args!(
            "[{:>2}s] {:>8} lines stored, {:>6.1} MB, {} streams",
            started.elapsed().as_secs(),
            s.entries,
            s.bytes as f64 / 1e6,
            s.streams
        ));
        if let Ok(results) = store.query_range(None, r#"{job="demo", level="ERROR"}"#, None, None, 3, false) {
            let mut errors: Vec<(i64, String)> =
                results.into_iter().flat_map(|r| r.values).filter(|(ts, _)| *ts > last_error_ts).collect();
            errors.sort();
            for (ts, line) in errors.iter().rev().take(2).rev() {
                out.say(format_args!("       live tail {{level=\"ERROR\"}}: {}", first_line(line)));
                last_error_ts = last_error_ts.max(*ts);
            }
        }
        let alerts = store.alerts("demo-key");
        for a in alerts.iter().skip(alerts_seen) {
            out.say(format_args!(
                "       alert webhook [{}] {}",
                a["state"].as_str().unwrap_or("?"),
                a["title"].as_str().unwrap_or("")
            ));
        }
        alerts_seen = alerts.len();
        if started.elapsed() >= duration {
            break;
        }
    }
}

/// What was written, stored and alerted, over `secs`.
fn summary(out: &mut Out, store: &EmbeddedStore, written: u64, secs: f64) {
    let s = store.stats();
    out.summary(format_args!("\nsummary"));
    out.summary(format_args!("  entries written:   {written} (healthz lines are dropped by a stage)"));
    let expected = written - dropped_healthz(written);
    let verdict = if s.entries == expected { "every one delivered" } else { "some still on the way at shutdown" };
    out.summary(format_args!("  entries stored:    {} ({expected} expected: {verdict})", s.entries));
    out.summary(format_args!("  throughput:        {:.0} entries/s over {secs:.1}s", s.entries as f64 / secs));
    out.summary(format_args!("  push requests:     {:?}", s.requests));
    let alerts = store.alerts("demo-key");
    let resolved = alerts.iter().filter(|a| a["state"] == "ok").count();
    out.summary(format_args!(
        "  alert webhooks:    {} ({} alerting, {resolved} resolved)",
        alerts.len(),
        alerts.len() - resolved
    ));
}

/// What to try after the demo: a config that works as is against `tailship receive`.
const NEXT: &str = "Next, the same against a store you keep running (config/local.toml; the package has it in \
/usr/share/doc/tailship/examples/local.toml):
  tailship receive                                  # terminal 1
  tailship run --config config/local.toml           # terminal 2: ships ./logs/*.log
  mkdir -p logs && echo 'hello ERROR world' >> logs/app.log
  tailship query '{job=\"local\"}' --since 5m --url http://127.0.0.1:3100";

fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or(s)
}

/// One in this many entries is a health check line (dropped by the demo's stage).
const HEALTHZ_EVERY: u64 = 10;

fn dropped_healthz(written: u64) -> u64 {
    written / HEALTHZ_EVERY
}

/// Writes entries to `path` at `rate` per second until `stop`; returns entries written.
fn write_log(path: &Path, rate: u64, stop: &CancellationToken) -> std::io::Result<u64> {
    let mut f = std::io::BufWriter::new(std::fs::OpenOptions::new().create(true).append(true).open(path)?);
    let started = Instant::now();
    let mut n: u64 = 0;
    let users = ["alice", "bob", "carol", "dave"];
    let paths = ["/api/orders", "/api/users/42", "/api/cart", "/static/app.js"];
    while !stop.is_cancelled() {
        let due = (started.elapsed().as_secs_f64() * rate as f64) as u64;
        while n < due {
            n += 1;
            let now = chrono::Utc::now().format("%Y-%m-%dT%H:%M:%S%.6fZ");
            if n % HEALTHZ_EVERY == 0 {
                writeln!(f, "{now} INFO GET /healthz 200 0.1ms")?;
            } else if n % 97 == 0 {
                writeln!(f, "{now} ERROR payment failed order={} user={}", n, users[(n % 4) as usize])?;
                writeln!(f, "    at payments::charge (src/payments.rs:{})", 100 + n % 50)?;
                writeln!(f, "    at orders::checkout (src/orders.rs:88)")?;
            } else if n % 31 == 0 {
                writeln!(f, "{now} WARN slow request path={} took={}ms", paths[(n % 4) as usize], 500 + n % 900)?;
            } else {
                writeln!(
                    f,
                    "{now} INFO request path={} status=200 user={} took={}ms id={n:08x}",
                    paths[(n % 4) as usize],
                    users[(n % 4) as usize],
                    n % 40
                )?;
            }
        }
        f.flush()?;
        std::thread::sleep(Duration::from_millis(20));
    }
    f.flush()?;
    Ok(n)
}
