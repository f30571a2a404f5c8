//! `tailship admin ...` flags: the tenant admin API.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Subcommand};

use super::Output;

#[derive(Debug, Args)]
pub struct AdminArgs {
    #[command(flatten)]
    pub conn: AdminConn,
    #[command(subcommand)]
    pub command: AdminCommand,
}

/// Flags of every `admin` command (accepted before or after the subcommand).
#[derive(Debug, Args)]
pub struct AdminConn {
    /// Base address of the admin API (`{admin_url}`; `/admin/api/v2` is added).
    #[arg(long, global = true, env = "TAILSHIP_ADMIN_URL")]
    pub admin_url: Option<String>,
    /// File holding the admin API token (or set TAILSHIP_ADMIN_TOKEN to the token itself).
    #[arg(long, global = true)]
    pub admin_token_file: Option<PathBuf>,
    /// Output format.
    #[arg(long, global = true, value_enum, default_value_t = Output::Table)]
    pub output: Output,
    /// First wait before retrying a 429 (doubles each time).
    #[arg(long, global = true, hide = true, value_parser = crate::util::parse_duration)]
    pub retry_min_backoff: Option<Duration>,
}

#[derive(Debug, Subcommand)]
pub enum AdminCommand {
    /// Tenants of a metrics cluster and their limits.
    #[command(subcommand)]
    Tenants(TenantCommand),
}

#[derive(Debug, Subcommand)]
pub enum TenantCommand {
    /// Show a tenant with all seven limits.
    Get { name: String },
    /// Create a tenant; limits not given are filled from the global defaults.
    Create {
        name: String,
        #[arg(long)]
        cluster: String,
        #[arg(long)]
        display_name: Option<String>,
        #[arg(long)]
        status: Option<String>,
        /// KEY=VALUE, one of the seven limits (repeat for several).
        #[arg(long = "limit")]
        limits: Vec<String>,
    },
    /// Update a tenant. Its limits are read and sent back, unless --clear-limits.
    Update {
        name: String,
        #[arg(long)]
        display_name: Option<String>,
        #[arg(long)]
        status: Option<String>,
        #[arg(long)]
        cluster: Option<String>,
        /// KEY=VALUE: changes one limit, keeps the others.
        #[arg(long = "limit", conflicts_with = "clear_limits")]
        limits: Vec<String>,
        /// Remove the tenant's limits (global defaults apply again).
        #[arg(long)]
        clear_limits: bool,
    },
}
