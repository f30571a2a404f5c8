//! `tailship cloud ...`: access policies, tokens and stacks of the cloud
//! management API, and `cloud setup`. The flags are in `args`, table output
//! in `print`; the client and every request rule live in `crate::cloud`.

mod args;
mod print;

pub use args::*;
use print::*;

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

async fn policies(client: &CloudClient, cmd: &PolicyCommand, out: Output) -> anyhow::Result<()> {
    let mut w = std::io::stdout().lock();
    match cmd {
        PolicyCommand::Create { region, name, display_name, scopes, realms, label_policies, allowed_subnets } => {
            let realms = realms_from_flags(realms, label_policies).map_err(|e| cloud_err(e.into()))?;
            let body = NewPolicy {
                name: name.clone(),
                display_name: display_name.clone(),
                scopes: scopes.clone(),
                realms,
                conditions: (!allowed_subnets.is_empty())
                    .then(|| Conditions { allowed_subnets: allowed_subnets.clone() }),
            };
            let v = client.create_policy(region, &body).await.map_err(cloud_err)?;
            print_policy(&mut w, &v, out)?;
        }
        PolicyCommand::List { region, name, realm_type, realm_id, status, page_size, limit } => {
            let f = PolicyFilter {
                name: name.clone(),
                realm_type: realm_type.clone(),
                realm_identifier: realm_id.clone(),
                status: *status,
                page_size: *page_size,
            };
            let items = client.list_policies(region, &f, *limit).await.map_err(cloud_err)?;
            if out == Output::Json {
                return Ok(output::json(&mut w, &Value::Array(items))?);
            }
            let mut rows = Vec::new();
            for v in &items {
                let p: AccessPolicy = parse(v, "an access policy")?;
                rows.push(vec![
                    p.id.clone(),
                    p.name.clone(),
                    cell(p.status.as_deref()),
                    p.scopes.join(","),
                    realms_text(&p.realms),
                    subnets_text(&p.conditions),
                ]);
            }
            output::table(&mut w, &["ID", "NAME", "STATUS", "SCOPES", "REALMS", "ALLOWED SUBNETS"], &rows)?;
        }
        PolicyCommand::Get { id, region } => {
            let v = client.get_policy(region, id).await.map_err(cloud_err)?;
            print_policy(&mut w, &v, out)?;
        }
        PolicyCommand::Update {
            id,
            region,
            display_name,
            scopes,
            realms,
            label_policies,
            allowed_subnets,
            clear_conditions,
            status,
        } => {
            // Check the flags before anything is sent, the read included.
            let mut c = Checks::new();
            if let Some(d) = display_name {
                c.check("displayName", validate::display_name(d));
            }
            for (i, s) in allowed_subnets.iter().enumerate() {
                c.check(&format!("conditions.allowedSubnets[{i}]"), validate::cidr(s));
            }
            let nothing = display_name.is_none()
                && scopes.is_empty()
                && realms.is_empty()
                && allowed_subnets.is_empty()
                && !clear_conditions
                && status.is_none();
            if nothing {
                c.fail("body", "nothing to update: give --display-name, --scope, --realm, --allowed-subnet, --clear-conditions or --status");
            }
            c.finish().map_err(|e| cloud_err(e.into()))?;
            let given_realms = realms_from_flags(realms, label_policies).map_err(|e| cloud_err(e.into()))?;
            if !scopes.is_empty() && !given_realms.is_empty() {
                let mut c = Checks::new();
                validate::scopes(&mut c, scopes);
                validate::realms(&mut c, &given_realms, scopes);
                c.finish().map_err(|e| cloud_err(e.into()))?;
            }
            // Scopes and realms are required on update, and members left out
            // could be lost: start from the policy as it is.
            let current: AccessPolicy = parse(&client.get_policy(region, id).await.map_err(cloud_err)?, "the policy")?;
            let conditions = if *clear_conditions {
                Some(ConditionsUpdate::Clear)
            } else if !allowed_subnets.is_empty() {
                Some(ConditionsUpdate::Set(Conditions { allowed_subnets: allowed_subnets.clone() }))
            } else {
                current.conditions.clone().filter(|c| !c.allowed_subnets.is_empty()).map(ConditionsUpdate::Set)
            };
            let current_status = match current.status.as_deref() {
                Some("active") => Some(PolicyStatus::Active),
                Some("inactive") => Some(PolicyStatus::Inactive),
                _ => None,
            };
            let body = PolicyUpdate {
                display_name: display_name
                    .clone()
                    .or_else(|| (!current.display_name.is_empty()).then(|| current.display_name.clone())),
                scopes: if scopes.is_empty() { current.scopes.clone() } else { scopes.clone() },
                realms: if given_realms.is_empty() { current.realms.clone() } else { given_realms },
                conditions,
                status: status.or(current_status),
            };
            let v = client.update_policy(region, id, &body).await.map_err(cloud_err)?;
            print_policy(&mut w, &v, out)?;
        }
        PolicyCommand::Delete { id, region } => {
            client.delete_policy(region, id).await.map_err(cloud_err)?;
            print_deleted(&mut w, out, "access policy", id)?;
        }
    }
    Ok(())
}

async fn tokens(client: &CloudClient, cmd: &TokenCommand, out: Output) -> anyhow::Result<()> {
    let mut w = std::io::stdout().lock();
    match cmd {
        TokenCommand::Create { region, policy_id, name, display_name, expires_at } => {
            let body = NewToken {
                access_policy_id: policy_id.clone(),
                name: name.clone(),
                display_name: display_name.clone(),
                expires_at: utc_flag(expires_at),
            };
            let v = client.create_token(region, &body).await.map_err(cloud_err)?;
            print_token(&mut w, &v, out)?;
            if out == Output::Table {
                eprintln!("tailship: this is the only time the token is shown; store it now");
            }
        }
        TokenCommand::List {
            region,
            policy_id,
            policy_name,
            realm_type,
            realm_id,
            name,
            expires_before,
            expires_after,
            policy_status,
            page_size,
            limit,
        } => {
            let f = TokenFilter {
                access_policy_id: policy_id.clone(),
                access_policy_name: policy_name.clone(),
                access_policy_realm_type: realm_type.clone(),
                access_policy_realm_identifier: realm_id.clone(),
                name: name.clone(),
                expires_before: utc_flag(expires_before),
                expires_after: utc_flag(expires_after),
                access_policy_status: *policy_status,
                page_size: *page_size,
            };
            let items = client.list_tokens(region, &f, *limit).await.map_err(cloud_err)?;
            if out == Output::Json {
                return Ok(output::json(&mut w, &Value::Array(items))?);
            }
            let mut rows = Vec::new();
            for v in &items {
                let t: Token = parse(v, "a token")?;
                rows.push(vec![
                    t.id.clone(),
                    t.name.clone(),
                    t.access_policy_id.clone(),
                    cell(t.expires_at.as_deref()),
                    cell(t.last_used_at.as_deref()),
                ]);
            }
            output::table(&mut w, &["ID", "NAME", "POLICY ID", "EXPIRES AT", "LAST USED AT"], &rows)?;
        }
        TokenCommand::Get { id, region } => {
            let v = client.get_token(region, id).await.map_err(cloud_err)?;
            print_token(&mut w, &v, out)?;
        }
        TokenCommand::Update { id, region, display_name, expires_at, no_expiry } => {
            let expires = if *no_expiry { Some(None) } else { utc_flag(expires_at).map(Some) };
            let body = TokenUpdate { display_name: display_name.clone(), expires_at: expires };
            let v = client.update_token(region, id, &body).await.map_err(cloud_err)?;
            print_token(&mut w, &v, out)?;
        }
        TokenCommand::Delete { id, region } => {
            client.delete_token(region, id).await.map_err(cloud_err)?;
            print_deleted(&mut w, out, "token", id)?;
        }
    }
    Ok(())
}

fn parse_labels(flags: &[String]) -> Result<BTreeMap<String, String>, validate::Invalid> {
    let mut c = Checks::new();
    let mut m = BTreeMap::new();
    for f in flags {
        match validate::parse_key_value(f) {
            Ok((k, v)) => {
                if m.insert(k.clone(), v).is_some() {
                    c.fail(&format!("labels.{k}"), "given twice");
                }
            }
            Err(e) => c.fail("labels", e),
        }
    }
    c.finish().map(|()| m)
}

async fn stacks(client: &CloudClient, cmd: &StackCommand, out: Output) -> anyhow::Result<()> {
    let mut w = std::io::stdout().lock();
    match cmd {
        StackCommand::List { org } => {
            let list = client.list_stacks(org).await.map_err(cloud_err)?;
            if let Some(total) = list.total {
                if total > list.items.len() as u64 {
                    tracing::warn!(
                        total,
                        shown = list.items.len(),
                        "the service reports more stacks than one answer holds; the spec shows no paging for this list"
                    );
                }
            }
            if out == Output::Json {
                return Ok(output::json(&mut w, &Value::Array(list.items))?);
            }
            let mut rows = Vec::new();
            for v in &list.items {
                let s: Stack = parse(v, "a stack")?;
                rows.push(vec![
                    s.slug.clone(),
                    s.id.to_string(),
                    s.name.clone(),
                    cell(Some(&s.region_slug)),
                    cell(Some(&s.status)),
                    s.delete_protection.to_string(),
                    labels_text(&s.labels),
                    cell(Some(&s.url)),
                ]);
            }
            output::table(
                &mut w,
                &["SLUG", "ID", "NAME", "REGION", "STATUS", "DELETE PROTECTION", "LABELS", "URL"],
                &rows,
            )?;
        }
        StackCommand::Create { name, slug, region, url, description, labels, delete_protection } => {
            let labels = parse_labels(labels).map_err(|e| cloud_err(e.into()))?;
            let body = NewStack {
                name: name.clone(),
                slug: slug.clone(),
                url: url.clone(),
                region: region.clone(),
                description: description.clone(),
                labels: (!labels.is_empty()).then_some(labels),
                delete_protection: *delete_protection,
            };
            let v = client.create_stack(&body).await.map_err(cloud_err)?;
            print_stack(&mut w, &v, out)?;
        }
        StackCommand::Update { slug, name, description, labels, clear_labels, org, delete_protection } => {
            let given = parse_labels(labels).map_err(|e| cloud_err(e.into()))?;
            let mut body = StackUpdate {
                name: name.clone(),
                description: description.clone(),
                labels: None,
                delete_protection: *delete_protection,
            };
            if *clear_labels {
                body.labels = Some(BTreeMap::new());
            } else if !given.is_empty() {
                let mut c = Checks::new();
                validate::stack_labels(&mut c, &given);
                c.finish().map_err(|e| cloud_err(e.into()))?;
                let merged = match org {
                    Some(org) => {
                        let list = client.list_stacks(org).await.map_err(cloud_err)?;
                        let raw = list
                            .items
                            .iter()
                            .find(|s| s.get("slug").and_then(Value::as_str) == Some(slug.as_str()))
                            .ok_or_else(|| anyhow::anyhow!("stack `{slug}` is not in the stack list of org `{org}`"))?;
                        let current: Stack = parse(raw, "a stack")?;
                        let mut m = current.labels;
                        m.extend(given);
                        m
                    }
                    None => {
                        tracing::warn!("--label sets the complete label set: labels not listed are removed (pass --org to keep them)");
                        given
                    }
                };
                body.labels = Some(merged);
            }
            let v = client.update_stack(slug, &body).await.map_err(cloud_err)?;
            print_stack(&mut w, &v, out)?;
        }
        StackCommand::Delete { slug } => {
            client.delete_stack(slug).await.map_err(cloud_err)?;
            print_deleted(&mut w, out, "stack", slug)?;
        }
        StackCommand::Connections { slug } => {
            let v = client.stack_connections(slug).await.map_err(cloud_err)?;
            if out == Output::Json {
                return Ok(output::json(&mut w, &v)?);
            }
            print_connections(&mut w, &v)?;
        }
    }
    Ok(())
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
