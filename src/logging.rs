//! tracing setup: level from `RUST_LOG` (default info), human format on a TTY,
//! no colours or own timestamps under systemd (`JOURNAL_STREAM`), JSON with
//! `--log-format json`. Logs go to stderr so stdout stays for command output.

use std::io::IsTerminal;

use tracing_subscriber::EnvFilter;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Default)]
pub enum LogFormat {
    #[default]
    Text,
    Json,
}

pub fn init(format: LogFormat) {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let under_systemd = std::env::var_os("JOURNAL_STREAM").is_some();
    let tty = std::io::stderr().is_terminal();
    let builder = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr);
    match format {
        LogFormat::Json => builder.json().flatten_event(true).with_current_span(false).init(),
        LogFormat::Text if under_systemd => builder.with_ansi(false).without_time().init(),
        LogFormat::Text => builder.with_ansi(tty).init(),
    }
}
