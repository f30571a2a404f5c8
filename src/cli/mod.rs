//! clap definitions of every command and flag. Commands live in
//! `crate::commands`; this file only describes the command line.

pub mod admin;
pub mod cloud;

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::logging::LogFormat;

#[derive(Debug, Parser)]
#[command(
    name = "tailship",
    version,
    // `--version` names the commit of a release build (build.rs); `-V` and the man page do not.
    long_version = concat!(env!("CARGO_PKG_VERSION"), " (", env!("TAILSHIP_COMMIT"), ")"),
    about = "Tail files and stdin, label lines into streams, and ship them to a log service without losing any."
)]
pub struct Cli {
    /// Log format on stderr: human text, or one JSON object per line for collectors.
    #[arg(long, global = true, value_enum, default_value_t = LogFormat::Text, env = "TAILSHIP_LOG_FORMAT")]
    pub log_format: LogFormat,

    /// Log level on stderr (over RUST_LOG, which also takes per-module directives).
    #[arg(long, global = true, value_enum, env = "TAILSHIP_LOG_LEVEL")]
    pub log_level: Option<crate::logging::LogLevel>,

    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the agent: tail the configured sources and ship every line.
    Run(RunArgs),
    /// Validate a config file and print the effective config, secrets redacted.
    Check(CheckArgs),
    /// Cloud management API: access policies, tokens, stacks; `cloud setup` for a ready config.
    Cloud(cloud::CloudArgs),
    /// Tenant admin API: tenants of a metrics cluster and their limits.
    Admin(admin::AdminArgs),
    /// Run the embedded log store: push, query, labels and the alert webhook, in memory.
    Receive(ReceiveArgs),
    /// Ship files or stdin once; exit 0 when every line is acknowledged.
    Push(Box<PushArgs>),
    /// Query logs over a time range (paging as needed), or a metric at one instant.
    Query(Box<QueryArgs>),
    /// A metric query at one instant (`query --instant`, as logcli has it).
    InstantQuery(Box<InstantQueryArgs>),
    /// Follow new lines of a query until Ctrl-C.
    Tail(Box<TailArgs>),
    /// List label names, or the values of one label.
    Labels(Box<LabelsArgs>),
    /// List the label sets (streams) that match a selector, as logcli's `series`.
    Series(Box<SeriesArgs>),
    /// See it work: embedded store, agent, generated log and a live view, for about 20s.
    Demo(DemoArgs),
    /// Alert rules: `alert test` sends a test alert and its resolve through each webhook.
    Alert(AlertArgs),
    /// A live terminal view of a running agent (its /status.json): files by lag, throughput, pushes.
    Top(TopArgs),
    /// Convert another agent's config: `convert promtail FILE` prints a tailship config.
    Convert(ConvertArgs),
    /// Show what a config's stages do to each line of files or stdin, stage by stage; nothing is sent.
    Inspect(InspectArgs),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell) to stdout.
    Completions(CompletionsArgs),
    /// Print the man page (roff) to stdout: `tailship man | man -l -`.
    Man,
}

#[derive(Debug, Args)]
pub struct TopArgs {
    /// The agent's endpoint (`server.listen`), or its full /status.json URL.
    #[arg(long, env = "TAILSHIP_STATUS_URL", default_value = DEFAULT_STATUS_URL, value_name = "URL")]
    pub url: String,
}

/// Where `tailship top` looks by default: the default `server.listen`.
pub const DEFAULT_STATUS_URL: &str = "http://127.0.0.1:9080";

#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell to complete for.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

#[derive(Debug, Args)]
pub struct ConvertArgs {
    #[command(subcommand)]
    pub command: ConvertCommand,
}

#[derive(Debug, Subcommand)]
pub enum ConvertCommand {
    /// Print the tailship config (TOML) equivalent to a Promtail config on stdout; what has no
    /// equivalent is listed on stderr, numbered, by its Promtail key. Exit 2 on unreadable or
    /// invalid YAML.
    Promtail(ConvertPromtailArgs),
}

#[derive(Debug, Args)]
pub struct ConvertPromtailArgs {
    /// The Promtail config file (YAML); `-` reads standard input.
    pub file: PathBuf,
    /// Promtail's positions file (its `positions.filename`): written as tailship's positions file
    /// (each path's offset, with its fingerprint read now), so shipping goes on where Promtail
    /// stopped; files it cannot carry over are listed on stderr.
    #[arg(long, value_name = "FILE")]
    pub positions: Option<PathBuf>,
    /// Where tailship's positions file is written, and the converted config's positions.path
    /// [default: /var/lib/tailship/positions.json, which the packaged service may write]. Written
    /// by root into a directory another user owns, the file is given to that user.
    #[arg(long, value_name = "FILE", requires = "positions")]
    pub positions_out: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct InspectArgs {
    /// Files to read from their start, once; none or `-` reads standard input.
    pub files: Vec<PathBuf>,
    /// The config whose stages run (TOML, or YAML by extension) [default: /etc/tailship/tailship.toml].
    #[arg(long, short = 'c', env = "TAILSHIP_CONFIG", conflicts_with = "promtail")]
    pub config: Option<PathBuf>,
    /// A Promtail config instead, converted in memory as `convert promtail` converts it.
    #[arg(long, value_name = "FILE")]
    pub promtail: Option<PathBuf>,
    /// The source (a Promtail config's job) whose stages run [default: for each file, the file
    /// source whose globs match it (stdin: a stdin source), else the first source].
    #[arg(long, value_name = "NAME")]
    pub source: Option<String>,
    /// `text` for people, `json` for one JSON object per event (line, stage, sent, dropped).
    #[arg(long, short = 'o', value_enum, default_value_t = InspectFormat::Text)]
    pub output: InspectFormat,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum InspectFormat {
    Text,
    Json,
}

#[derive(Debug, Args)]
pub struct AlertArgs {
    #[command(subcommand)]
    pub command: AlertCommand,
}

#[derive(Debug, Subcommand)]
pub enum AlertCommand {
    /// Send a test alert and its resolve through the configured webhook(s) and show what the service answered.
    Test(AlertTestArgs),
}

#[derive(Debug, Args)]
pub struct AlertTestArgs {
    /// The config file (TOML, or YAML by extension).
    #[arg(long, short = 'c', env = "TAILSHIP_CONFIG")]
    pub config: PathBuf,
    /// Only this rule (default: every rule).
    #[arg(long)]
    pub rule: Option<String>,
}

#[derive(Debug, Args)]
pub struct DemoArgs {
    /// How long the demo runs.
    #[arg(long, default_value = "20s", value_parser = crate::util::parse_duration)]
    pub duration: std::time::Duration,
    /// Log entries written per second.
    #[arg(long, default_value_t = 2000)]
    pub rate: u64,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// The config file (TOML, or YAML by extension) [default: /etc/tailship/tailship.toml, where the Debian package puts it].
    #[arg(long, short = 'c', env = "TAILSHIP_CONFIG")]
    pub config: Option<PathBuf>,
    /// Start without the positions file if it exists but cannot be read or is
    /// corrupt (without this, `run` exits 2 naming it): it is moved aside to
    /// `<path>.corrupt` and files are read again per `start_at`. Once; the
    /// config key is `positions.on_unreadable = "start_fresh"`.
    #[arg(long)]
    pub fresh_positions: bool,
}

/// Where `run` and `check` look without `--config`: the Debian package's config.
pub const DEFAULT_CONFIG: &str = "/etc/tailship/tailship.toml";

/// `--config`, or [`DEFAULT_CONFIG`] (logged) without it.
pub fn config_or_default(config: &Option<PathBuf>) -> PathBuf {
    match config {
        Some(p) => p.clone(),
        None => {
            tracing::info!(config = DEFAULT_CONFIG, "no --config given; reading the default config");
            PathBuf::from(DEFAULT_CONFIG)
        }
    }
}

#[derive(Debug, Args)]
pub struct PushArgs {
    /// Files to ship; `-` (or none) reads standard input.
    pub files: Vec<String>,
    /// A label for every line, NAME=VALUE (repeatable). `host` and `filename` are added.
    #[arg(long = "label", short = 'l', value_name = "NAME=VALUE")]
    pub label: Vec<String>,
    /// No progress bar, even on a terminal.
    #[arg(long, short = 'q')]
    pub quiet: bool,
    /// Retries of each batch before its lines are given up (exit 1 naming the
    /// last error); 0 retries for ever. Overrides `client.retry.max_retries`.
    #[arg(long, value_name = "N")]
    pub max_retries: Option<usize>,
    /// Stop retrying after this long in all (such as 30s): exit 1 naming the
    /// last error and how many lines were acknowledged. Default: never.
    #[arg(long, value_parser = crate::util::parse_duration, value_name = "D")]
    pub give_up_after: Option<std::time::Duration>,
    #[command(flatten)]
    pub client: ClientArgs,
}

#[derive(Debug, Args)]
pub struct CheckArgs {
    /// The config file (TOML, or YAML by extension) [default: /etc/tailship/tailship.toml, as for `run`].
    #[arg(long, short = 'c', env = "TAILSHIP_CONFIG")]
    pub config: Option<PathBuf>,
    /// Print nothing when the config is valid: only its problems (on stderr) and the exit code.
    #[arg(long, short = 'q')]
    pub quiet: bool,
}

#[derive(Debug, Args)]
pub struct ReceiveArgs {
    /// Address to listen on; port 0 picks a free port (printed on start).
    #[arg(long, default_value = "127.0.0.1:3100")]
    pub listen: String,
    /// Path prefix of the log API.
    #[arg(long, default_value = crate::receive::DEFAULT_API_PREFIX)]
    pub api_prefix: String,
    /// `memory` keeps entries (bounded by --max-entries); `null` validates and counts only.
    #[arg(long, value_enum, default_value_t = crate::receive::StoreKind::Memory)]
    pub store: crate::receive::StoreKind,
    /// Most entries the memory store keeps; the oldest are evicted and counted.
    #[arg(long, default_value_t = crate::receive::DEFAULT_MAX_ENTRIES)]
    pub max_entries: usize,
    /// Most line bytes the memory store keeps (such as 1GiB); the oldest entries are evicted and counted.
    #[arg(long, default_value = "256MiB", value_parser = crate::util::parse_size)]
    pub max_bytes: u64,
    /// Largest answer of one range query in line bytes; paging clients go on from its last entry.
    #[arg(long, default_value = "64MiB", value_parser = crate::util::parse_size)]
    pub max_query_bytes: u64,
    /// Largest request body, also after decompression (such as 16MiB).
    #[arg(long, default_value = "16MiB", value_parser = crate::util::parse_size)]
    pub max_body: u64,
    /// Largest `limit` a range query may ask for.
    #[arg(long, default_value_t = crate::receive::DEFAULT_MAX_QUERY_LIMIT)]
    pub max_query_limit: usize,
    /// Most connections open at once; more wait in the kernel's queue.
    #[arg(long, default_value_t = crate::receive::DEFAULT_MAX_CONNECTIONS, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    pub max_connections: usize,
    /// A client must send a whole request header within this (also the idle timeout between requests).
    #[arg(long, default_value = "10s", value_parser = crate::util::parse_positive_duration, value_name = "D")]
    pub header_read_timeout: std::time::Duration,
    /// Require X-Scope-OrgID on the log API and keep data per tenant.
    #[arg(long)]
    pub multi_tenant: bool,
    /// Require HTTP basic auth with this user (except on the webhook and /stats).
    #[arg(long, requires = "basic_auth_password_file")]
    pub basic_auth_user: Option<String>,
    /// File holding the basic-auth password.
    #[arg(long, requires = "basic_auth_user")]
    pub basic_auth_password_file: Option<PathBuf>,
    /// Accept only this webhook integration key (repeatable); others get 403.
    #[arg(long = "webhook-key", value_name = "KEY")]
    pub webhook_keys: Vec<String>,
    /// Fault injection: every Nth push request fails with --fail-status and is not stored.
    #[arg(long, default_value_t = 0, value_name = "N")]
    pub fail_every: u64,
    /// Fault injection: the first N push requests fail with --fail-status.
    #[arg(long, default_value_t = 0, value_name = "N")]
    pub fail_first: u64,
    /// Status of injected failures.
    #[arg(long, default_value_t = 429, value_parser = clap::value_parser!(u16).range(100..=599))]
    pub fail_status: u16,
    /// Retry-After seconds sent with injected failures.
    #[arg(long, value_name = "SECONDS")]
    pub retry_after: Option<u64>,
    /// Delay added before answering each push, such as 50ms.
    #[arg(long, default_value = "0", value_parser = crate::util::parse_duration)]
    pub latency: std::time::Duration,
    /// Delay after storing each push and before answering it, such as 1s (a
    /// lost acknowledgement when the sender stops meanwhile).
    #[arg(long, default_value = "0", value_parser = crate::util::parse_duration)]
    pub answer_after_store: std::time::Duration,
}

/// Connection flags shared by `push`, `query`, `tail` and `labels`. Each takes
/// its default from the environment, then from the `client` section of
/// `--config`; a flag given on the command line wins over both.
#[derive(Debug, Args, Clone, Default)]
pub struct ClientArgs {
    /// Base URL of the log service (or a full push URL; `--addr` as logcli has it).
    #[arg(long, visible_alias = "addr", env = "TAILSHIP_URL")]
    pub url: Option<String>,
    /// Path prefix of the log API: /logstore/api/v1 (the spec's) or /loki/api/v1 (Loki); unset, the service is asked.
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
    /// The basic-auth password itself (as logcli has it; --password-file keeps it out of `ps`).
    #[arg(long, conflicts_with = "password_file")]
    pub password: Option<String>,
    /// File holding a bearer token.
    #[arg(long, env = "TAILSHIP_BEARER_TOKEN_FILE")]
    pub bearer_token_file: Option<PathBuf>,
    /// A bearer token itself (as logcli has it).
    #[arg(long, conflicts_with = "bearer_token_file")]
    pub bearer_token: Option<String>,
    /// PEM file of CA certificates to trust (`--ca-cert` as logcli has it).
    #[arg(long, visible_alias = "ca-cert")]
    pub ca_file: Option<PathBuf>,
    /// Accept any TLS certificate (self-signed test setups only; `--tls-skip-verify` as logcli has it).
    #[arg(long, visible_alias = "tls-skip-verify")]
    pub insecure_skip_verify: bool,
    /// Client certificate (PEM) for mutual TLS; needs --key-file (`--cert` as logcli has it).
    #[arg(long, visible_alias = "cert", requires = "key_file")]
    pub cert_file: Option<PathBuf>,
    /// Private key (PEM) of --cert-file (`--key` as logcli has it).
    #[arg(long, visible_alias = "key", requires = "cert_file")]
    pub key_file: Option<PathBuf>,
    /// HTTP(S) proxy for the requests; without it HTTPS_PROXY, HTTP_PROXY and NO_PROXY apply.
    #[arg(long)]
    pub proxy_url: Option<String>,
    /// Request timeout, such as 10s.
    #[arg(long, value_parser = crate::util::parse_duration)]
    pub timeout: Option<std::time::Duration>,
    /// Take connection settings from the `client` section of this config file.
    #[arg(long, short = 'c')]
    pub config: Option<PathBuf>,
}

/// Flags of every command that reads from the log service (`query`,
/// `instant-query`, `tail`, `labels`, `series`): how much it says on stderr,
/// and how it connects.
#[derive(Debug, Args, Clone)]
pub struct ServiceArgs {
    /// Nothing on stderr but errors (no retry warnings), as logcli's --quiet; RUST_LOG still wins.
    #[arg(long, short = 'q')]
    pub quiet: bool,
    #[command(flatten)]
    pub client: ClientArgs,
}

/// How `query` and `tail` print entries.
#[derive(Debug, Args, Clone)]
pub struct EntryFormatArgs {
    /// Time zone of printed times: UTC or Local (the TZ environment variable, else /etc/localtime).
    #[arg(long, short = 'z', value_enum, ignore_case = true, default_value_t = TimeZone::Utc)]
    pub timezone: TimeZone,
    /// Labels left out of the printed label sets (repeatable).
    #[arg(long, value_name = "NAME")]
    pub exclude_label: Vec<String>,
    #[arg(long, short = 'o', value_enum, default_value_t = OutputFormat::Default)]
    pub output: OutputFormat,
    /// Leave the labels out of the default output.
    #[arg(long)]
    pub no_labels: bool,
}

/// The time range of `query` and `series`.
#[derive(Debug, Args, Clone)]
pub struct RangeArgs {
    /// How far before --to (default: now) the range starts, such as 15m or 2h [default: 1h].
    #[arg(long, value_parser = crate::util::parse_duration, conflicts_with = "from", value_name = "D")]
    pub since: Option<std::time::Duration>,
    /// Start of the range: RFC 3339, Unix nanoseconds, or an age such as 2h.
    #[arg(long, value_name = "T")]
    pub from: Option<String>,
    /// End of the range (exclusive), same forms as --from [default: now].
    #[arg(long, value_name = "T")]
    pub to: Option<String>,
}

/// How `query`, `tail` and `labels` print.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Default)]
pub enum OutputFormat {
    /// Time, labels and line (coloured on a terminal).
    #[default]
    Default,
    /// The line alone.
    Raw,
    /// One JSON object per entry.
    Jsonl,
}

#[derive(Debug, Args)]
pub struct QueryArgs {
    /// A log query such as '{job="app"} |= "error"', or with --instant a metric
    /// query such as 'count_over_time({job="app"}[5m])'.
    pub query: String,
    /// Run a metric query at one instant (--time) instead of a range query.
    #[arg(long)]
    pub instant: bool,
    /// The instant of --instant: RFC 3339, Unix nanoseconds, or an age such as 5m (default: now).
    #[arg(long, requires = "instant", value_name = "T")]
    pub time: Option<String>,
    #[command(flatten)]
    pub range: RangeArgs,
    /// Most entries to print; 0 prints every entry in the range.
    #[arg(long, default_value_t = 100)]
    pub limit: usize,
    /// Newest first (backward) or oldest first (forward).
    #[arg(long, value_enum, default_value_t = crate::client::query::Direction::Backward)]
    pub direction: crate::client::query::Direction,
    /// Oldest first: the same as --direction forward (as logcli has it).
    #[arg(long, conflicts_with = "direction")]
    pub forward: bool,
    /// Follow new lines, as `tailship tail` (logcli's `query --tail`).
    #[arg(long, short = 't', conflicts_with = "instant")]
    pub tail: bool,
    #[command(flatten)]
    pub format: EntryFormatArgs,
    /// A metric query over a range: time between its points, such as 1m [default: the range / 250, at least 1s].
    #[arg(long, value_parser = crate::util::parse_duration, value_name = "D")]
    pub step: Option<std::time::Duration>,
    /// Entries per request when paging.
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u64).range(1..))]
    pub batch: u64,
    #[command(flatten)]
    pub service: ServiceArgs,
}

#[derive(Debug, Args)]
pub struct TailArgs {
    /// A log query such as '{job="app"} |= "error"'.
    pub query: String,
    /// Also print lines this far back before following, such as 5m.
    #[arg(long, default_value = "0", value_parser = crate::util::parse_duration, value_name = "D")]
    pub since: std::time::Duration,
    /// How far behind now each poll ends. Each poll also looks 10s further
    /// back again, so a line stored up to that late still shows (once).
    #[arg(long, default_value = "1s", value_parser = crate::util::parse_duration, value_name = "D")]
    pub delay: std::time::Duration,
    /// Wait between polls.
    #[arg(long, default_value = "1s", value_parser = crate::util::parse_duration, value_name = "D")]
    pub interval: std::time::Duration,
    /// Entries per request.
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u64).range(1..))]
    pub batch: u64,
    #[command(flatten)]
    pub format: EntryFormatArgs,
    #[command(flatten)]
    pub service: ServiceArgs,
}

#[derive(Debug, Args)]
pub struct LabelsArgs {
    /// A label name: list its values instead of the label names.
    pub name: Option<String>,
    /// Only labels of entries this recent, such as 24h [default: the service's, often 6h].
    #[arg(long, value_parser = crate::util::parse_duration, value_name = "D")]
    pub since: Option<std::time::Duration>,
    /// `default` or `raw`: one name per line; `jsonl`: one JSON string per line.
    #[arg(long, short = 'o', value_enum, default_value_t = OutputFormat::Default, hide_possible_values = true)]
    pub output: OutputFormat,
    #[command(flatten)]
    pub service: ServiceArgs,
}

/// The time zone of printed times.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum TimeZone {
    /// Coordinated Universal Time (Z).
    #[default]
    #[value(name = "UTC")]
    Utc,
    /// The local zone: TZ, else /etc/localtime.
    #[value(name = "Local")]
    Local,
}

#[derive(Debug, Args)]
pub struct InstantQueryArgs {
    /// A metric query such as 'count_over_time({job="app"}[5m])'.
    pub query: String,
    /// The instant: RFC 3339, Unix nanoseconds, or an age such as 5m (default: now; `--now` as logcli has it).
    #[arg(long, visible_alias = "now", value_name = "T")]
    pub time: Option<String>,
    #[arg(long, short = 'o', value_enum, default_value_t = OutputFormat::Default)]
    pub output: OutputFormat,
    #[command(flatten)]
    pub service: ServiceArgs,
}

/// `--since` and `--to` keep the help series has always had.
#[derive(Debug, Args)]
#[command(
    mut_arg("since", |a| a.help("How far back from now, such as 1h [default: 1h]")),
    mut_arg("to", |a| a.help("End of the range, same forms as --from [default: now]")),
)]
pub struct SeriesArgs {
    /// A stream selector such as '{job="app"}' (`{}` for every stream, where the service allows it).
    pub selector: String,
    #[command(flatten)]
    pub range: RangeArgs,
    /// `default` or `raw`: one label set per line; `jsonl`: one JSON object per line.
    #[arg(long, short = 'o', value_enum, default_value_t = OutputFormat::Default)]
    pub output: OutputFormat,
    #[command(flatten)]
    pub service: ServiceArgs,
}

/// How management commands print results.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Output {
    /// Aligned columns for people.
    #[default]
    Table,
    /// The service's JSON, for scripts.
    Json,
}
