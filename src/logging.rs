//! tracing setup: level from `RUST_LOG` (default info), human format on a TTY,
//! no colours or own timestamps under systemd (`JOURNAL_STREAM`), JSON with
//! `--log-format json`. Logs go to stderr so stdout stays for command output.
//! `[tracing]` adds OTLP/HTTP export of the agent's spans.
//!
//! Every event goes through [`StderrLine`]: it is scrubbed of known secrets
//! (`util::secrets`) and written whole, and a failed write (stderr closed, as
//! in `tailship run 2>&1 | head -1`) drops the line and counts it instead of
//! panicking: logging never stops the agent.

use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

use opentelemetry::trace::TracerProvider as _;
use tracing_subscriber::filter::{filter_fn, FilterExt, Targets};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer, Registry};

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Default)]
pub enum LogFormat {
    #[default]
    Text,
    Json,
}

/// `--log-level`: the level of the log on stderr, over `RUST_LOG`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LogLevel {
    Error,
    Warn,
    Info,
    Debug,
    Trace,
}

impl LogLevel {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Error => "error",
            Self::Warn => "warn",
            Self::Info => "info",
            Self::Debug => "debug",
            Self::Trace => "trace",
        }
    }
}

/// Where the agent's spans go (`[tracing]`, when enabled).
#[derive(Debug, Clone)]
pub struct Traces {
    /// The OTLP/HTTP traces URL (`.../v1/traces`).
    pub url: String,
    pub service_name: String,
    /// The share of traces kept, 0 to 1.
    pub sampling_ratio: f64,
}

/// The exporter of `[tracing]`, shut down (its last spans sent) by [`shutdown`].
static TRACES: OnceLock<opentelemetry_sdk::trace::SdkTracerProvider> = OnceLock::new();

/// Logging to stderr at `level` (`--log-level`), else `RUST_LOG`'s level,
/// else `default_level` (`info` for most commands; `warn` for the demo,
/// whose live view is the point and would drown in the agent's start-up
/// lines). With `traces`
/// enabled, the agent's spans (`tailship` targets, info and above) also go
/// out as OTLP traces; the log lines show no spans either way.
pub fn init(format: LogFormat, level: Option<LogLevel>, default_level: &str, traces: Option<Traces>) {
    // The Kafka client logs each connection and each retry itself; the kafka
    // source says what matters once (source::net::kafka). `RUST_LOG` naming
    // `rskafka` brings its lines back.
    let env = std::env::var("RUST_LOG").ok().filter(|v| !v.trim().is_empty());
    let directives = match (level, env) {
        (Some(l), _) => format!("{},rskafka=off", l.as_str()),
        (None, env) => match env {
            Some(v) if v.contains("rskafka") => v,
            Some(v) => format!("{v},rskafka=off"),
            None => format!("{default_level},rskafka=off"),
        },
    };
    let filter = EnvFilter::try_new(&directives).unwrap_or_else(|_| EnvFilter::new(default_level));
    let under_systemd = std::env::var_os("JOURNAL_STREAM").is_some();
    let tty = std::io::stderr().is_terminal();
    let fmt = tracing_subscriber::fmt::layer().with_writer(StderrLine::default);
    let fmt: Box<dyn Layer<Registry> + Send + Sync> = match format {
        LogFormat::Json => fmt.json().flatten_event(true).with_current_span(false).with_span_list(false).boxed(),
        LogFormat::Text if under_systemd => {
            // Without a time, the formatter's padding of `INFO` and `WARN`
            // to five characters began those lines with a space.
            TRIM_START.store(true, Ordering::Relaxed);
            fmt.with_ansi(false).without_time().boxed()
        }
        LogFormat::Text => fmt.with_ansi(tty).boxed(),
    };
    let events = filter_fn(|m| m.is_event());
    let otel = traces.and_then(|t| match exporter(&t) {
        Ok(provider) => {
            let tracer = provider.tracer("tailship");
            let _ = TRACES.set(provider);
            Some(
                tracing_opentelemetry::layer()
                    .with_tracer(tracer)
                    .with_filter(Targets::new().with_target("tailship", tracing::Level::INFO)),
            )
        }
        Err(e) => {
            eprintln!("tailship: tracing: {e}; no traces are sent");
            None
        }
    });
    let _ = tracing_subscriber::registry().with(fmt.with_filter(filter.and(events))).with(otel).try_init();
}

/// The OTLP/HTTP exporter of `t`, batching spans in its own thread.
fn exporter(t: &Traces) -> Result<opentelemetry_sdk::trace::SdkTracerProvider, String> {
    use opentelemetry_otlp::WithExportConfig;
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_endpoint(t.url.clone())
        .build()
        .map_err(|e| e.to_string())?;
    let resource = opentelemetry_sdk::Resource::builder().with_service_name(t.service_name.clone()).build();
    Ok(opentelemetry_sdk::trace::SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_sampler(opentelemetry_sdk::trace::Sampler::ParentBased(Box::new(
            opentelemetry_sdk::trace::Sampler::TraceIdRatioBased(t.sampling_ratio),
        )))
        .with_resource(resource)
        .build())
}

/// Sends the spans not sent yet (at exit).
pub fn shutdown() {
    if let Some(p) = TRACES.get() {
        let _ = p.shutdown_with_timeout(std::time::Duration::from_secs(5));
    }
}

/// Log lines that could not be written (stderr closed or full).
static DROPPED: AtomicU64 = AtomicU64::new(0);
/// Log lines lose their leading spaces (under systemd, see [`init`]).
static TRIM_START: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Log lines dropped because stderr could not take them.
pub fn dropped_lines() -> u64 {
    DROPPED.load(Ordering::Relaxed)
}

/// One log event on its way to stderr: gathered, scrubbed of secrets, written
/// in one piece when dropped; a write error drops the line and counts it.
#[derive(Default)]
pub struct StderrLine {
    buf: Vec<u8>,
}

impl Write for StderrLine {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.buf.extend_from_slice(b);
        Ok(b.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Drop for StderrLine {
    fn drop(&mut self) {
        if self.buf.is_empty() {
            return;
        }
        let text = String::from_utf8_lossy(&self.buf);
        let text: &str = if TRIM_START.load(Ordering::Relaxed) { text.trim_start_matches(' ') } else { &text };
        let clean = crate::util::secrets::scrub(text);
        if std::io::stderr().lock().write_all(clean.as_bytes()).is_err() {
            DROPPED.fetch_add(1, Ordering::Relaxed);
        }
    }
}
