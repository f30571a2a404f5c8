//! `tailship admin tenants ...`: the tenant admin API. The client and the
//! read-then-update rule live in `crate::admin`.

use std::io::Write;
use std::time::Duration;

use anyhow::Context;
use serde_json::Value;

use super::cloud::token_from;
use super::output::{self, cell, Output};
use super::CommandError;
use crate::admin::{parse_limits, AdminClient, AdminError, Tenant, TenantChanges, LIMIT_KEYS};
pub use crate::cli::admin::*;
use crate::client::retry::RetryPolicy;

/// Environment variable holding the admin token itself.
pub const ADMIN_TOKEN_ENV: &str = "TAILSHIP_ADMIN_TOKEN";

/// `tailship admin ...`
pub fn admin(args: &AdminArgs) -> anyhow::Result<()> {
    let url = args.conn.admin_url.clone().unwrap_or_default();
    if url.is_empty() {
        return Err(CommandError::usage(anyhow::anyhow!(
            "no admin address: pass --admin-url URL or set TAILSHIP_ADMIN_URL"
        ))
        .into());
    }
    let AdminCommand::Tenants(cmd) = &args.command;
    // Check the flags before anything is sent.
    let limits = match cmd {
        TenantCommand::Create { limits, .. } | TenantCommand::Update { limits, .. } => {
            parse_limits(limits).map_err(admin_err)?
        }
        TenantCommand::Get { .. } => Vec::new(),
    };
    let token = token_from(args.conn.admin_token_file.as_deref(), ADMIN_TOKEN_ENV, "--admin-token-file")?;
    let mut retry =
        RetryPolicy::one_off(Duration::from_millis(500), Duration::from_secs(30), crate::cloud::DEFAULT_MAX_RETRIES);
    if let Some(d) = args.conn.retry_min_backoff {
        retry.min_backoff = d;
    }
    let client = AdminClient::new(&url, token, retry).map_err(admin_err)?;
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().context("cannot start the runtime")?;
    let v = rt.block_on(async {
        match cmd {
            TenantCommand::Get { name } => client.get(name).await,
            TenantCommand::Create { name, cluster, display_name, status, .. } => {
                let body = AdminClient::new_tenant(name, cluster, display_name.clone(), status.clone(), &limits);
                client.create(&body).await
            }
            TenantCommand::Update { name, display_name, status, cluster, clear_limits, .. } => {
                let changes = TenantChanges {
                    display_name: display_name.clone(),
                    status: status.clone(),
                    cluster: cluster.clone(),
                    limits: limits.clone(),
                    clear_limits: *clear_limits,
                };
                client.update(name, &changes).await
            }
        }
    });
    let v = v.map_err(admin_err)?;
    let mut w = std::io::stdout().lock();
    if args.conn.output == Output::Json {
        output::json(&mut w, &v)?;
        return Ok(());
    }
    if v.is_null() {
        // The create answer's body is not specified; it may be empty.
        let name = match cmd {
            TenantCommand::Create { name, .. } => name.as_str(),
            TenantCommand::Get { name } | TenantCommand::Update { name, .. } => name.as_str(),
        };
        writeln!(w, "done: tenant {name} (the service sent no body; `tailship admin tenants get {name}` shows it)")?;
        return Ok(());
    }
    print_tenant(&mut w, &v)
}

fn admin_err(e: AdminError) -> anyhow::Error {
    if e.is_usage() {
        CommandError::usage(e).into()
    } else {
        e.into()
    }
}

/// Prints a tenant with all seven limit members (`-` when the tenant has no
/// limits: the global defaults apply).
fn print_tenant(w: &mut impl Write, v: &Value) -> anyhow::Result<()> {
    let t: Tenant = serde_json::from_value(v.clone()).context("unexpected shape of the tenant")?;
    let mut pairs: Vec<(&str, String)> = vec![
        ("name", t.name.clone()),
        ("display name", cell(t.display_name.as_deref())),
        ("status", cell(t.status.as_deref())),
        ("cluster", cell(t.cluster.as_deref())),
        ("created at", cell(t.created_at.as_deref())),
        ("limits", if t.limits.is_some() { "set".to_string() } else { "none (global defaults apply)".to_string() }),
    ];
    for k in LIMIT_KEYS {
        let v = t.limits.as_ref().and_then(|l| l.get(k)).map(|v| v.to_string()).unwrap_or_else(|| "-".into());
        pairs.push((k, v));
    }
    output::fields(w, &pairs)?;
    Ok(())
}
