//! clap definitions of `tailship cloud ...`: every flag, with the help an
//! operator reads.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Subcommand};

use super::Output;
use crate::cloud::model::PolicyStatus;
use crate::cloud::pace;

#[derive(Debug, Args)]
pub struct CloudArgs {
    #[command(flatten)]
    pub conn: CloudConn,
    #[command(subcommand)]
    pub command: CloudCommand,
}

/// Flags of every `cloud` command (accepted before or after the subcommand).
#[derive(Debug, Args)]
pub struct CloudConn {
    /// Base address of the cloud management API.
    #[arg(long, global = true, env = "TAILSHIP_CLOUD_URL")]
    pub cloud_url: Option<String>,
    /// File holding the cloud access policy token (or set TAILSHIP_CLOUD_TOKEN to the token itself).
    #[arg(long, global = true)]
    pub token_file: Option<PathBuf>,
    /// Output format.
    #[arg(long, global = true, value_enum, default_value_t = Output::Table)]
    pub output: Output,
    /// Average access policy calls per hour (the service allows 600).
    #[arg(long, global = true, hide = true, default_value_t = pace::DEFAULT_PER_HOUR)]
    pub pace_per_hour: u32,
    /// Access policy calls allowed at once before pacing starts.
    #[arg(long, global = true, hide = true, default_value_t = pace::DEFAULT_BURST)]
    pub pace_burst: u32,
    /// First wait before retrying a 429 (doubles each time).
    #[arg(long, global = true, hide = true, value_parser = crate::util::parse_duration)]
    pub retry_min_backoff: Option<Duration>,
}

#[derive(Debug, Subcommand)]
pub enum CloudCommand {
    /// Access policies: what a token may do, where.
    #[command(subcommand)]
    Policies(PolicyCommand),
    /// Tokens of access policies.
    #[command(subcommand)]
    Tokens(TokenCommand),
    /// Stacks (hosted instances) of an org.
    #[command(subcommand)]
    Stacks(StackCommand),
    /// Create a logs:write policy and token for a stack and write a ready agent config.
    Setup(SetupArgs),
}

/// The record a `get`, `update` or `delete` is about: its ID and region.
#[derive(Debug, Clone, Args)]
pub struct Record {
    pub id: String,
    #[arg(long)]
    pub region: String,
}

/// How a `list` pages.
#[derive(Debug, Clone, Copy, Args)]
pub struct Pages {
    /// Records per page, at most 500.
    #[arg(long)]
    pub page_size: Option<u32>,
    /// Stop after this many records.
    #[arg(long)]
    pub limit: Option<usize>,
}

#[derive(Debug, Subcommand)]
pub enum PolicyCommand {
    /// Create an access policy.
    Create {
        #[arg(long)]
        region: String,
        /// 1-255 characters of a-z, 0-9, `-`, `_`; cannot change later.
        #[arg(long)]
        name: String,
        #[arg(long)]
        display_name: Option<String>,
        /// A scope such as logs:write (repeat for several).
        #[arg(long = "scope")]
        scopes: Vec<String>,
        /// TYPE:ID, type `org` or `stack` (repeat for several).
        #[arg(long = "realm")]
        realms: Vec<String>,
        /// TYPE:ID:SELECTOR: a label selector on the realm TYPE:ID (read scopes of metrics or logs only).
        #[arg(long = "label-policy")]
        label_policies: Vec<String>,
        /// Only these IPv4 or IPv6 subnets (CIDR) may use the policy's tokens.
        #[arg(long = "allowed-subnet")]
        allowed_subnets: Vec<String>,
    },
    /// List access policies (every page unless --limit).
    List {
        #[arg(long)]
        region: String,
        #[arg(long)]
        name: Option<String>,
        /// `org` or `stack`.
        #[arg(long)]
        realm_type: Option<String>,
        /// Needs --realm-type.
        #[arg(long)]
        realm_id: Option<String>,
        #[arg(long, value_enum)]
        status: Option<PolicyStatus>,
        #[command(flatten)]
        pages: Pages,
    },
    /// Show one access policy.
    Get(Record),
    /// Update an access policy; members not given are sent back as they are.
    Update {
        #[command(flatten)]
        record: Record,
        #[arg(long)]
        display_name: Option<String>,
        /// Replaces the scopes.
        #[arg(long = "scope")]
        scopes: Vec<String>,
        /// Replaces the realms (TYPE:ID).
        #[arg(long = "realm")]
        realms: Vec<String>,
        /// TYPE:ID:SELECTOR on one of the --realm given.
        #[arg(long = "label-policy", requires = "realms")]
        label_policies: Vec<String>,
        /// Replaces the allowed subnets.
        #[arg(long = "allowed-subnet", conflicts_with = "clear_conditions")]
        allowed_subnets: Vec<String>,
        /// Remove the IP range conditions (sends `conditions: {}`).
        #[arg(long)]
        clear_conditions: bool,
        #[arg(long, value_enum)]
        status: Option<PolicyStatus>,
    },
    /// Delete an access policy.
    Delete(Record),
}

#[derive(Debug, Subcommand)]
pub enum TokenCommand {
    /// Create a token; its secret is printed once.
    Create {
        #[arg(long)]
        region: String,
        #[arg(long)]
        policy_id: String,
        #[arg(long)]
        name: String,
        #[arg(long)]
        display_name: Option<String>,
        /// ISO 8601 UTC, such as 2030-01-31T00:00:00Z.
        #[arg(long)]
        expires_at: Option<String>,
    },
    /// List tokens (every page unless --limit).
    List {
        #[arg(long)]
        region: String,
        #[arg(long)]
        policy_id: Option<String>,
        #[arg(long)]
        policy_name: Option<String>,
        /// Realm type of the owning policy: `org` or `stack`.
        #[arg(long)]
        realm_type: Option<String>,
        /// Needs --realm-type.
        #[arg(long)]
        realm_id: Option<String>,
        #[arg(long)]
        name: Option<String>,
        /// ISO 8601 UTC.
        #[arg(long)]
        expires_before: Option<String>,
        /// ISO 8601 UTC.
        #[arg(long)]
        expires_after: Option<String>,
        /// Status of the owning policy.
        #[arg(long, value_enum)]
        policy_status: Option<PolicyStatus>,
        #[command(flatten)]
        pages: Pages,
    },
    /// Show one token (never its secret).
    Get(Record),
    /// Update a token's display name or expiry.
    Update {
        #[command(flatten)]
        record: Record,
        #[arg(long)]
        display_name: Option<String>,
        /// ISO 8601 UTC.
        #[arg(long, conflicts_with = "no_expiry")]
        expires_at: Option<String>,
        /// Remove the expiry (sends `expiresAt: null`).
        #[arg(long)]
        no_expiry: bool,
    },
    /// Delete a token.
    Delete(Record),
}

#[derive(Debug, Subcommand)]
pub enum StackCommand {
    /// List the stacks of an org.
    List {
        #[arg(long)]
        org: String,
    },
    /// Create a stack (lowercase only).
    Create {
        /// Conventionally `<slug>.<stack domain>`.
        #[arg(long)]
        name: String,
        #[arg(long)]
        slug: String,
        /// The service's default is `us`.
        #[arg(long)]
        region: Option<String>,
        /// Custom domain (a CNAME to the stack must exist first).
        #[arg(long)]
        url: Option<String>,
        #[arg(long)]
        description: Option<String>,
        /// KEY=VALUE (up to 10).
        #[arg(long = "label")]
        labels: Vec<String>,
        /// Block deletion until turned off.
        #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "true")]
        delete_protection: Option<bool>,
    },
    /// Update a stack. --label gives the complete label set: labels not listed are
    /// removed by the API, unless --org is given to merge with the current ones.
    Update {
        slug: String,
        #[arg(long)]
        name: Option<String>,
        #[arg(long)]
        description: Option<String>,
        /// KEY=VALUE (up to 10).
        #[arg(long = "label", conflicts_with = "clear_labels")]
        labels: Vec<String>,
        /// Remove every label.
        #[arg(long)]
        clear_labels: bool,
        /// Read the stack's current labels from this org's list and keep those not given.
        #[arg(long, requires = "labels")]
        org: Option<String>,
        /// `--delete-protection=false` allows deleting.
        #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "true")]
        delete_protection: Option<bool>,
    },
    /// Delete a stack (refused while delete protection is on).
    Delete { slug: String },
    /// Show a stack's connectivity info.
    Connections { slug: String },
}

#[derive(Debug, Args)]
pub struct SetupArgs {
    /// The org (slug) that owns the stack and the new access policy.
    #[arg(long)]
    pub org: String,
    /// The stack's slug.
    #[arg(long)]
    pub stack: String,
    /// Region of the policy and token; the stack's region when not given.
    #[arg(long)]
    pub region: Option<String>,
    /// Write the config to this file instead of printing it.
    #[arg(long)]
    pub write_config: Option<PathBuf>,
    /// Where the token goes (mode 0600); default `<stack>-token` beside the config (or here).
    #[arg(long)]
    pub token_out: Option<PathBuf>,
    /// Globs of the config's file source.
    #[arg(long, default_value = "/var/log/*.log")]
    pub include: Vec<String>,
    /// Overwrite existing config and token files.
    #[arg(long)]
    pub force: bool,
}
