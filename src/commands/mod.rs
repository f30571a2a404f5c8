//! One function per command: the glue between the CLI and the modules.
//! Errors carry context (anyhow); [`CommandError`] picks the exit code.

mod admin;
mod alert;
mod check;
pub mod client_args;
mod cloud;
mod completions;
mod convert;
mod demo;
mod inspect;
mod output;
mod push;
mod query;
mod receive;
mod run;
mod top;

pub use admin::{admin, AdminArgs};
pub use alert::alert;
pub use check::check;
pub use cloud::{cloud, CloudArgs};
pub use completions::{completions, man};
pub use convert::convert;
pub use demo::demo;
pub use inspect::inspect;
pub use push::push;
pub use query::{instant_query, labels, query, series, tail};
pub use receive::receive;
pub use run::run;
pub use top::top;

use std::io::Write;

use crate::cli::{Cli, Command};

/// Exit codes: 0 ok, 1 runtime failure, 2 usage or config error.
pub const EXIT_RUNTIME: i32 = 1;
pub const EXIT_USAGE: i32 = 2;

/// An error that carries its exit code.
#[derive(Debug, thiserror::Error)]
#[error("{source:#}")]
pub struct CommandError {
    pub code: i32,
    #[source]
    pub source: anyhow::Error,
}

impl CommandError {
    pub fn usage(e: impl Into<anyhow::Error>) -> Self {
        Self { code: EXIT_USAGE, source: e.into() }
    }
}

/// Runs one parsed command line; returns the process exit code.
pub fn dispatch(cli: Cli) -> i32 {
    let result = match cli.command {
        Command::Check(a) => check(&a),
        Command::Run(a) => run(&a),
        Command::Push(a) => push(&a),
        Command::Demo(a) => demo(&a),
        Command::Receive(a) => receive(&a),
        Command::Cloud(a) => cloud(&a),
        Command::Admin(a) => admin(&a),
        Command::Query(a) => query(&a),
        Command::Tail(a) => tail(&a),
        Command::Labels(a) => labels(&a),
        Command::InstantQuery(a) => instant_query(&a),
        Command::Series(a) => series(&a),
        Command::Alert(a) => alert(&a),
        Command::Top(a) => top(&a),
        Command::Convert(a) => convert(&a),
        Command::Inspect(a) => inspect(&a),
        Command::Completions(a) => completions(&a),
        Command::Man => man(),
    };
    finish(result)
}

/// Prints an error the way every command does and maps it to an exit code.
pub fn finish(result: anyhow::Result<()>) -> i32 {
    match result {
        Ok(()) => 0,
        Err(e) => {
            if is_broken_pipe(&e) {
                return 0;
            }
            let code = e
                .downcast_ref::<CommandError>()
                .map(|c| c.code)
                .or_else(|| e.downcast_ref::<crate::config::ConfigErrors>().map(|_| EXIT_USAGE));
            let text = chain_text(&e);
            let _ = writeln!(std::io::stderr(), "tailship: {}", crate::util::secrets::scrub(&text));
            code.unwrap_or(EXIT_RUNTIME)
        }
    }
}

/// The error and its causes, `: `-separated, each once. A [`CommandError`]
/// prints its source's whole chain itself, so the causes after it are not
/// printed again; a cause whose text the output already ends with is skipped.
fn chain_text(e: &anyhow::Error) -> String {
    let mut out = String::new();
    for c in e.chain() {
        let s = c.to_string();
        if !out.ends_with(&s) {
            if !out.is_empty() {
                out.push_str(": ");
            }
            out.push_str(&s);
        }
        if c.is::<CommandError>() {
            break;
        }
    }
    out
}

fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| c.downcast_ref::<std::io::Error>().is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_command_error_prints_each_cause_once() {
        let inner = anyhow::anyhow!("connection refused").context("cannot reach the service");
        let e: anyhow::Error = CommandError::usage(inner).into();
        assert_eq!(chain_text(&e), "cannot reach the service: connection refused");
        let wrapped = e.context("query failed");
        assert_eq!(chain_text(&wrapped), "query failed: cannot reach the service: connection refused");
        let plain = anyhow::anyhow!("b").context("a");
        assert_eq!(chain_text(&plain), "a: b");
    }
}
