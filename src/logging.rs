//! tracing setup: level from `RUST_LOG` (default info), human format on a TTY,
//! no colours or own timestamps under systemd (`JOURNAL_STREAM`), JSON with
//! `--log-format json`. Logs go to stderr so stdout stays for command output.
//!
//! Every event goes through [`StderrLine`]: it is scrubbed of known secrets
//! (`util::secrets`) and written whole, and a failed write (stderr closed, as
//! in `tailship run 2>&1 | head -1`) drops the line and counts it instead of
//! panicking: logging never stops the agent.

use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicU64, Ordering};

use tracing_subscriber::EnvFilter;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Default)]
pub enum LogFormat {
    #[default]
    Text,
    Json,
}

/// Logging to stderr at `RUST_LOG`'s level, or `default_level` without it
/// (`info` for most commands; `warn` for the demo, whose live view is the
/// point and would drown in the agent's start-up lines).
pub fn init(format: LogFormat, default_level: &str) {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default_level));
    let under_systemd = std::env::var_os("JOURNAL_STREAM").is_some();
    let tty = std::io::stderr().is_terminal();
    let builder = tracing_subscriber::fmt().with_env_filter(filter).with_writer(StderrLine::default);
    match format {
        LogFormat::Json => builder.json().flatten_event(true).with_current_span(false).init(),
        LogFormat::Text if under_systemd => {
            // Without a time, the formatter's padding of `INFO` and `WARN`
            // to five characters began those lines with a space.
            TRIM_START.store(true, Ordering::Relaxed);
            builder.with_ansi(false).without_time().init()
        }
        LogFormat::Text => builder.with_ansi(tty).init(),
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
