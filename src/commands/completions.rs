//! `tailship completions SHELL` and `tailship man`: shell completion scripts
//! and the roff man page, generated from the clap definitions so they never
//! drift from the real command line. Packages ship copies of both
//! (`packaging/generated/`); a test keeps those copies current.

use std::io::Write;

use clap::CommandFactory;

use crate::cli::{Cli, CompletionsArgs};

/// Prints the completion script for `args.shell` to stdout.
pub fn completions(args: &CompletionsArgs) -> anyhow::Result<()> {
    let mut out = Vec::new();
    clap_complete::generate(args.shell, &mut Cli::command(), "tailship", &mut out);
    std::io::stdout().lock().write_all(&out)?;
    Ok(())
}

/// Prints the man page tailship(1) to stdout.
pub fn man() -> anyhow::Result<()> {
    let mut out = Vec::new();
    render_man(&mut out)?;
    std::io::stdout().lock().write_all(&out)?;
    Ok(())
}

/// One page for the whole tool: the top-level options, then a subsection per
/// command (nested ones by their full name, such as `tailship cloud tokens
/// create`) with its synopsis and options, then environment, files and exit
/// status. One page rather than one per command, so `man tailship` has it all.
fn render_man(out: &mut Vec<u8>) -> std::io::Result<()> {
    // The page is the same for every build: the version without the commit `--version` adds.
    let mut cmd = Cli::command().disable_help_subcommand(true).long_version(None::<&str>);
    cmd.build();
    let page = clap_mangen::Man::new(cmd.clone());
    page.render_title(out)?;
    page.render_name_section(out)?;
    page.render_synopsis_section(out)?;
    page.render_description_section(out)?;
    page.render_options_section(out)?;
    out.extend_from_slice(b".SH COMMANDS\n");
    for sub in cmd.get_subcommands() {
        render_command(&cmd, sub, out)?;
    }
    out.extend_from_slice(EXTRA_SECTIONS.as_bytes());
    page.render_version_section(out)?;
    Ok(())
}

/// A command as a `.SS` subsection: its about text, synopsis and options with
/// their `.SH` headings dropped, then its own subcommands. Global options and
/// `--help` are described once, where they are defined, not in every command.
fn render_command(parent: &clap::Command, cmd: &clap::Command, out: &mut Vec<u8>) -> std::io::Result<()> {
    if cmd.is_hide_set() {
        return Ok(());
    }
    let name = cmd.get_bin_name().unwrap_or_else(|| cmd.get_name()).to_string();
    let inherited: Vec<clap::Id> =
        parent.get_arguments().filter(|a| a.is_global_set()).map(|a| a.get_id().clone()).collect();
    let own = cmd.clone().mut_args(|a| {
        let hide = a.is_hide_set() || inherited.contains(a.get_id()) || a.get_id() == "help";
        a.hide(hide)
    });
    let page = clap_mangen::Man::new(own.clone());
    let mut part = Vec::new();
    page.render_synopsis_section(&mut part)?;
    if own.get_arguments().any(|a| !a.is_hide_set()) {
        page.render_options_section(&mut part)?;
    }
    writeln!(out, ".SS \"{}\"", roff_escape(&name))?;
    if let Some(about) = cmd.get_about() {
        writeln!(out, "{}", roff_escape(&about.to_string()))?;
        out.extend_from_slice(b".PP\n");
    }
    for line in String::from_utf8_lossy(&part).lines() {
        if !line.starts_with(".SH ") {
            writeln!(out, "{line}")?;
        }
    }
    for sub in cmd.get_subcommands() {
        render_command(cmd, sub, out)?;
    }
    Ok(())
}

/// Escapes text for a roff line: backslashes, dashes, and a leading `.` or `'`.
fn roff_escape(text: &str) -> String {
    let s = text.replace('\\', "\\e").replace('-', "\\-");
    if s.starts_with('.') || s.starts_with('\'') {
        format!("\\&{s}")
    } else {
        s
    }
}

const EXTRA_SECTIONS: &str = r#".SH ENVIRONMENT
.TP
\fBTAILSHIP_\fR\fISECTION\fR\fB__\fR\fIKEY\fR
Overrides a config key, such as \fBTAILSHIP_CLIENT__URL=http://loki:3100\fR; the value keeps the type of the key.
Config values may also name variables as \fB${VAR}\fR or \fB${VAR:\-default}\fR.
.TP
\fBTAILSHIP_CONFIG\fR
The config file of \fBrun\fR and \fBcheck\fR when \fB\-\-config\fR is not given.
.TP
\fBTAILSHIP_URL\fR, \fBTAILSHIP_ORG_ID\fR, \fBTAILSHIP_USERNAME\fR, \fBTAILSHIP_PASSWORD_FILE\fR, \fBTAILSHIP_BEARER_TOKEN_FILE\fR, \fBTAILSHIP_API_PREFIX\fR
Connection settings of \fBpush\fR, \fBquery\fR, \fBtail\fR and \fBlabels\fR.
.TP
\fBHTTPS_PROXY\fR, \fBHTTP_PROXY\fR, \fBALL_PROXY\fR, \fBNO_PROXY\fR
The proxy of every request when \fBclient.proxy_url\fR (\fB\-\-proxy\-url\fR) is not set; \fBNO_PROXY\fR applies to both.
.TP
\fBRUST_LOG\fR
Log level and filters, such as \fBinfo\fR (the default) or \fBtailship::source=debug\fR.
.TP
\fBTAILSHIP_LOG_FORMAT\fR
\fBtext\fR or \fBjson\fR, as \fB\-\-log\-format\fR.
.TP
\fBJOURNAL_STREAM\fR
Set by systemd: logs carry no colours and no timestamps of their own.
.TP
\fBNOTIFY_SOCKET\fR, \fBWATCHDOG_USEC\fR
Set by systemd for \fBType=notify\fR: \fBrun\fR reports READY=1 once its sources and endpoint are up,
STOPPING=1 when it begins to shut down, and WATCHDOG=1 at half the watchdog interval.
.SH FILES
.TP
\fI/etc/tailship/tailship.toml\fR
The config of the systemd service.
.TP
\fI/etc/tailship/tailship.env\fR
Environment overrides of the systemd service.
.TP
\fI/var/lib/tailship/positions.json\fR
Delivered offsets of tailed files.
.SH SIGNALS
\fBSIGTERM\fR and \fBSIGINT\fR stop reading, flush, wait for acknowledgements (up to \fBshutdown_timeout\fR) and exit 0;
a second signal exits at once. \fBSIGHUP\fR reloads the sources of the config file.
.SH "EXIT STATUS"
0 success, 1 a runtime failure (the service or the network), 2 a usage or config error.
"#;
