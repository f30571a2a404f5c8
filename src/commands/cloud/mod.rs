//! `tailship cloud ...`: access policies, tokens and stacks of the cloud
//! management API, and `cloud setup`. The flags are in `crate::cli::cloud`,
//! table output in `print`; the client and every request rule live in `crate::cloud`.

mod policies;
mod print;
mod stacks;
mod tokens;

use policies::policies;
use print::*;
use stacks::stacks;
use tokens::tokens;

pub use crate::cli::cloud::*;

use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;

use anyhow::Context;
use serde_json::Value;

use super::output::{self, cell, Output};
use super::CommandError;
use crate::cloud::model::{
    AccessPolicy, Conditions, ConditionsUpdate, LabelPolicy, NewPolicy, NewStack, NewToken, PolicyStatus, PolicyUpdate,
    Realm, Stack, StackUpdate, Token, TokenUpdate,
};
use crate::cloud::setup::{self, SetupRequest};
use crate::cloud::validate::{self, Checks};
use crate::cloud::{CloudClient, CloudError, CloudOptions, PolicyFilter, TokenFilter};
use crate::util::Secret;

/// Environment variable holding the cloud token itself.
pub const CLOUD_TOKEN_ENV: &str = "TAILSHIP_CLOUD_TOKEN";

/// `tailship cloud ...`
pub fn cloud(args: &CloudArgs) -> anyhow::Result<()> {
    let client = connect(&args.conn)?;
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().context("cannot start the runtime")?;
    let out = args.conn.output;
    rt.block_on(async {
        match &args.command {
            CloudCommand::Policies(c) => policies(&client, c, out).await,
            CloudCommand::Tokens(c) => tokens(&client, c, out).await,
            CloudCommand::Stacks(c) => stacks(&client, c, out).await,
            CloudCommand::Setup(a) => setup_cmd(&client, a).await,
        }
    })
}

fn connect(c: &CloudConn) -> anyhow::Result<CloudClient> {
    let url = c.cloud_url.clone().unwrap_or_default();
    if url.is_empty() {
        return Err(CommandError::usage(anyhow::anyhow!(
            "no cloud address: pass --cloud-url URL or set TAILSHIP_CLOUD_URL"
        ))
        .into());
    }
    let token = cloud_token(c.token_file.as_deref())?;
    let mut opts = CloudOptions::new(url, token);
    opts.pace_per_hour = c.pace_per_hour;
    opts.pace_burst = c.pace_burst;
    if let Some(d) = c.retry_min_backoff {
        opts.retry.min_backoff = d;
        opts.retry.max_backoff = opts.retry.max_backoff.max(d);
    }
    CloudClient::new(opts).map_err(cloud_err)
}

/// The token from `--token-file`, else from TAILSHIP_CLOUD_TOKEN.
fn cloud_token(file: Option<&std::path::Path>) -> anyhow::Result<Secret> {
    token_from(file, CLOUD_TOKEN_ENV, "--token-file")
}

/// Reads a token from a file flag, else from an environment variable holding it.
pub(crate) fn token_from(file: Option<&std::path::Path>, env: &str, flag: &str) -> anyhow::Result<Secret> {
    let t = match file {
        Some(p) => crate::util::read_secret_file(p)
            .map_err(|e| CommandError::usage(anyhow::anyhow!("{flag}: cannot read {}: {e}", p.display())))?,
        None => Secret::new(std::env::var(env).unwrap_or_default()),
    };
    if t.is_empty() {
        return Err(CommandError::usage(anyhow::anyhow!("no token: pass {flag} FILE or set {env}")).into());
    }
    Ok(t)
}

/// Rule violations and bad flags exit 2; everything else 1.
fn cloud_err(e: CloudError) -> anyhow::Error {
    if e.is_usage() {
        CommandError::usage(e).into()
    } else {
        e.into()
    }
}

fn parse<T: serde::de::DeserializeOwned>(v: &Value, what: &str) -> anyhow::Result<T> {
    serde_json::from_value(v.clone()).with_context(|| format!("unexpected shape of {what}"))
}

/// Realms from `--realm` with `--label-policy` selectors attached.
fn realms_from_flags(realms: &[String], label_policies: &[String]) -> Result<Vec<Realm>, validate::Invalid> {
    let mut c = Checks::new();
    let mut out = Vec::new();
    for (i, r) in realms.iter().enumerate() {
        match validate::parse_realm(r) {
            Ok(realm) => out.push(realm),
            Err(m) => c.fail(&format!("realms[{i}]"), m),
        }
    }
    for lp in label_policies {
        match validate::parse_label_policy(lp) {
            Ok((t, id, sel)) => match out.iter_mut().find(|r| r.kind == t && r.identifier == id) {
                Some(r) => r.label_policies.push(LabelPolicy { selector: sel }),
                None => c.fail("labelPolicies", format!("`{lp}`: no --realm {t}:{id} to attach it to")),
            },
            Err(m) => c.fail("labelPolicies", m),
        }
    }
    c.finish().map(|()| out)
}

/// `--expires-at` style flags: normalized when valid; the client names a bad one.
fn utc_flag(v: &Option<String>) -> Option<String> {
    v.as_ref().map(|s| validate::utc_time(s).unwrap_or_else(|_| s.clone()))
}

async fn setup_cmd(client: &CloudClient, a: &SetupArgs) -> anyhow::Result<()> {
    let token_path = match (&a.token_out, &a.write_config) {
        (Some(p), _) => p.clone(),
        (None, Some(cfg)) => {
            let dir = cfg.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(std::path::Path::new("."));
            dir.join(format!("{}-token", a.stack))
        }
        (None, None) => PathBuf::from(format!("{}-token", a.stack)),
    };
    let now_unix = chrono::Utc::now().timestamp();
    let req = SetupRequest {
        org: a.org.clone(),
        stack: a.stack.clone(),
        region: a.region.clone(),
        config_path: a.write_config.clone(),
        token_path,
        force: a.force,
        include: a.include.clone(),
        now_unix,
    };
    let o = setup::run(client, &req).await.map_err(|e| -> anyhow::Error {
        if e.is_usage() {
            CommandError::usage(e).into()
        } else {
            e.into()
        }
    })?;
    let policy = if o.policy_reused { "reused" } else { "created" };
    eprintln!("tailship: stack {} (id {}), logs at {} as user {}", a.stack, o.stack_id, o.logs_url, o.username);
    eprintln!("tailship: {policy} access policy {} ({}) in region {}", o.policy_name, o.policy_id, o.region);
    eprintln!(
        "tailship: created token {} ({}); written to {} (mode 0600)",
        o.token_name,
        o.token_id,
        o.token_path.display()
    );
    match &a.write_config {
        Some(p) => {
            eprintln!("tailship: wrote {}; check it with `tailship check --config {}`", p.display(), p.display());
        }
        None => {
            std::io::stdout().lock().write_all(o.config.as_bytes())?;
        }
    }
    Ok(())
}
