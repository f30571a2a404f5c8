//! clap definitions of every command and flag. Commands live in
//! `crate::commands`; this file only describes the command line.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::logging::LogFormat;

#[derive(Debug, Parser)]
#[command(
    name = "tailship",
    version,
    about = "Tail files and stdin, label lines into streams, and ship them to a log service without losing any."
)]
pub struct Cli {
    /// Log format on stderr: human text, or one JSON object per line for collectors.
    #[arg(long, global = true, value_enum, default_value_t = LogFormat::Text, env = "TAILSHIP_LOG_FORMAT")]
    pub log_format: LogFormat,

    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Validate a config file and print the effective config, secrets redacted.
    Check(CheckArgs),
    /// Cloud management API: access policies, tokens, stacks; `cloud setup` for a ready config.
    Cloud(crate::commands::CloudArgs),
    /// Tenant admin API: tenants of a metrics cluster and their limits.
    Admin(crate::commands::AdminArgs),
}

#[derive(Debug, Args)]
pub struct CheckArgs {
    /// The config file (TOML, or YAML by extension).
    #[arg(long, short = 'c', env = "TAILSHIP_CONFIG")]
    pub config: PathBuf,
}

/// Connection flags shared by `push`, `query`, `tail` and `labels`. Each takes
/// its default from the environment, then from the `client` section of
/// `--config`; a flag given on the command line wins over both.
#[derive(Debug, Args, Clone, Default)]
pub struct ClientArgs {
    /// Base URL of the log service.
    #[arg(long, env = "TAILSHIP_URL")]
    pub url: Option<String>,
    /// Path prefix of the log API (Loki-compatible servers use /loki/api/v1).
    #[arg(long, env = "TAILSHIP_API_PREFIX")]
    pub api_prefix: Option<String>,
    /// Tenant sent as X-Scope-OrgID (`a|b` queries several tenants).
    #[arg(long, env = "TAILSHIP_ORG_ID")]
    pub org_id: Option<String>,
    /// User for HTTP basic auth.
    #[arg(long, env = "TAILSHIP_USERNAME")]
    pub username: Option<String>,
    /// File holding the basic-auth password or API token.
    #[arg(long, env = "TAILSHIP_PASSWORD_FILE")]
    pub password_file: Option<PathBuf>,
    /// File holding a bearer token.
    #[arg(long, env = "TAILSHIP_BEARER_TOKEN_FILE")]
    pub bearer_token_file: Option<PathBuf>,
    /// PEM file of CA certificates to trust.
    #[arg(long)]
    pub ca_file: Option<PathBuf>,
    /// Accept any TLS certificate (self-signed test setups only).
    #[arg(long)]
    pub insecure_skip_verify: bool,
    /// Request timeout, such as 10s.
    #[arg(long, value_parser = crate::util::parse_duration)]
    pub timeout: Option<std::time::Duration>,
    /// Take connection settings from the `client` section of this config file.
    #[arg(long, short = 'c')]
    pub config: Option<PathBuf>,
}
