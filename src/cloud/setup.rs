//! `tailship cloud setup`: from a cloud token to a ready agent config.
//!
//! 1. Find the stack in the org's stack list; its hosted logs instance fields
//!    (`hlInstanceUrl`, `hlInstanceId`) are the log API's URL and basic-auth user.
//! 2. Reuse the access policy named `tailship-<stack>-logs-write` if one exists
//!    (it must grant `logs:write` on the stack and be active), or create it with
//!    scope `logs:write` on the realm `{type: stack, identifier: <stack id>}`.
//! 3. Create a token of that policy, write it to a file of mode 0600, and render
//!    a config whose `client.basic_auth.password_file` points at that file.
//!
//! Files are checked before any call, so a refused path creates nothing; the
//! token secret goes only into the token file.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::model::{AccessPolicy, NewPolicy, NewToken, Realm, Stack, Token};
use super::{CloudClient, CloudError, PolicyFilter};

/// The scope the agent needs to push logs.
pub const LOGS_WRITE_SCOPE: &str = "logs:write";

#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    #[error(transparent)]
    Cloud(#[from] CloudError),
    #[error("{0}")]
    Usage(String),
    #[error("{0}")]
    Refused(String),
    #[error("cannot write {path}: {source}{hint}")]
    Write { path: String, source: std::io::Error, hint: String },
}

impl SetupError {
    pub fn is_usage(&self) -> bool {
        match self {
            Self::Cloud(c) => c.is_usage(),
            Self::Usage(_) => true,
            _ => false,
        }
    }
}

/// What to set up.
#[derive(Debug, Clone)]
pub struct SetupRequest {
    pub org: String,
    pub stack: String,
    /// Region of the policy and token calls; the stack's `regionSlug` when unset.
    pub region: Option<String>,
    /// Where the config goes; printed to stdout when unset.
    pub config_path: Option<PathBuf>,
    /// Where the token goes (mode 0600).
    pub token_path: PathBuf,
    /// Overwrite existing config and token files.
    pub force: bool,
    /// Globs of the config's file source.
    pub include: Vec<String>,
    /// Suffix of the token name (unix seconds), so names stay unique.
    pub now_unix: i64,
}

/// What was done.
#[derive(Debug, Clone)]
pub struct SetupOutcome {
    pub config: String,
    pub token_path: PathBuf,
    pub region: String,
    pub stack_id: i64,
    pub logs_url: String,
    pub username: String,
    pub policy_id: String,
    pub policy_name: String,
    pub policy_reused: bool,
    pub token_id: String,
    pub token_name: String,
}

/// The name of the policy setup creates or reuses for a stack.
pub fn policy_name(stack: &str) -> String {
    format!("tailship-{stack}-logs-write")
}

pub async fn run(client: &CloudClient, req: &SetupRequest) -> Result<SetupOutcome, SetupError> {
    check_target(&req.token_path, req.force, "--token-out")?;
    if let Some(p) = &req.config_path {
        check_target(p, req.force, "--write-config")?;
    }
    let token_path = absolute(&req.token_path)?;

    let list = client.list_stacks(&req.org).await?;
    let raw =
        list.items.into_iter().find(|s| s.get("slug").and_then(Value::as_str) == Some(req.stack.as_str())).ok_or_else(
            || SetupError::Refused(format!("stack `{}` is not in the stack list of org `{}`", req.stack, req.org)),
        )?;
    let stack: Stack = serde_json::from_value(raw)
        .map_err(|e| SetupError::Refused(format!("stack `{}`: unexpected shape ({e})", req.stack)))?;
    let (Some(user), Some(logs_url)) = (stack.hl_instance_id, stack.hl_instance_url.clone().filter(|u| !u.is_empty()))
    else {
        return Err(SetupError::Refused(format!(
            "stack `{}` has no hosted logs instance (hlInstanceId and hlInstanceUrl are missing)",
            req.stack
        )));
    };
    let region = req.region.clone().filter(|r| !r.is_empty()).unwrap_or_else(|| stack.region_slug.clone());
    if region.is_empty() {
        return Err(SetupError::Usage(format!("stack `{}` names no region: pass --region", req.stack)));
    }
    let realm = Realm { kind: "stack".into(), identifier: stack.id.to_string(), label_policies: Vec::new() };

    let name = policy_name(&req.stack);
    let filter = PolicyFilter { name: Some(name.clone()), ..Default::default() };
    let existing = client.list_policies(&region, &filter, None).await?;
    let found = existing.into_iter().find(|p| p.get("name").and_then(Value::as_str) == Some(name.as_str()));
    let (policy, reused) = match found {
        Some(v) => {
            let p: AccessPolicy = serde_json::from_value(v)
                .map_err(|e| SetupError::Refused(format!("access policy `{name}`: unexpected shape ({e})")))?;
            check_reusable(&p, &realm, &region)?;
            tracing::info!(policy = %p.id, "reusing access policy {name}");
            (p, true)
        }
        None => {
            let body = NewPolicy {
                name: name.clone(),
                display_name: Some(format!("tailship logs write for {}", req.stack)),
                scopes: vec![LOGS_WRITE_SCOPE.into()],
                realms: vec![realm.clone()],
                conditions: None,
            };
            let v = client.create_policy(&region, &body).await?;
            let p: AccessPolicy = serde_json::from_value(v)
                .map_err(|e| SetupError::Refused(format!("created access policy `{name}`: unexpected shape ({e})")))?;
            tracing::info!(policy = %p.id, "created access policy {name}");
            (p, false)
        }
    };
    if policy.id.is_empty() {
        return Err(SetupError::Refused(format!("access policy `{name}` came back without an id")));
    }

    let token_name = format!("tailship-{}-{}", req.stack, req.now_unix);
    let body = NewToken {
        access_policy_id: policy.id.clone(),
        name: token_name.clone(),
        display_name: None,
        expires_at: None,
    };
    let v = client.create_token(&region, &body).await?;
    let token: Token = serde_json::from_value(v)
        .map_err(|e| SetupError::Refused(format!("created token `{token_name}`: unexpected shape ({e})")))?;
    let orphan_hint = format!(
        "; token `{token_name}` (id {}) was created: delete it with `tailship cloud tokens delete {} --region {region}`",
        token.id, token.id
    );
    let secret = token
        .token
        .as_ref()
        .filter(|s| !s.is_empty())
        .ok_or_else(|| SetupError::Refused(format!("the create token answer carries no token{orphan_hint}")))?;
    write_secret(&token_path, secret.expose(), req.force).map_err(|source| SetupError::Write {
        path: token_path.display().to_string(),
        source,
        hint: orphan_hint.clone(),
    })?;

    let outcome = SetupOutcome {
        config: String::new(),
        token_path,
        region,
        stack_id: stack.id,
        logs_url,
        username: user.to_string(),
        policy_id: policy.id.clone(),
        policy_name: name,
        policy_reused: reused,
        token_id: token.id.clone(),
        token_name,
    };
    let config = render_config(req, &outcome);
    if let Some(p) = &req.config_path {
        write_file(p, &config, req.force).map_err(|source| SetupError::Write {
            path: p.display().to_string(),
            source,
            hint: String::new(),
        })?;
    }
    Ok(SetupOutcome { config, ..outcome })
}

/// An existing policy is reused only when it grants what the agent needs.
fn check_reusable(p: &AccessPolicy, realm: &Realm, region: &str) -> Result<(), SetupError> {
    let fix = format!(
        "fix it with `tailship cloud policies update {} --region {region} ...` or delete it with \
         `tailship cloud policies delete {} --region {region}`",
        p.id, p.id
    );
    if !p.scopes.iter().any(|s| s == LOGS_WRITE_SCOPE) {
        return Err(SetupError::Refused(format!(
            "access policy `{}` exists but lacks scope {LOGS_WRITE_SCOPE}; {fix}",
            p.name
        )));
    }
    if !p.realms.iter().any(|r| r.kind == realm.kind && r.identifier == realm.identifier) {
        return Err(SetupError::Refused(format!(
            "access policy `{}` exists but is not on stack {}; {fix}",
            p.name, realm.identifier
        )));
    }
    if p.status.as_deref() == Some("inactive") {
        return Err(SetupError::Refused(format!(
            "access policy `{}` exists but is inactive; activate it with \
             `tailship cloud policies update {} --region {region} --status active`",
            p.name, p.id
        )));
    }
    Ok(())
}

/// The agent config: client section from the stack, a file source to start from.
pub fn render_config(req: &SetupRequest, o: &SetupOutcome) -> String {
    let q = |s: &str| toml::Value::String(s.to_string()).to_string();
    let include: Vec<String> = req.include.iter().map(|g| q(g)).collect();
    format!(
        "# Written by `tailship cloud setup` for stack `{stack}` (org `{org}`, region `{region}`).\n\
         # Access policy `{pname}` ({pid}), token `{tname}` ({tid}).\n\
         # Check it with `tailship check --config FILE`, then run it with `tailship run --config FILE`.\n\
         \n\
         [client]\n\
         # The stack's hosted logs instance (hlInstanceUrl); its ID (hlInstanceId) is the user.\n\
         url = {url}\n\
         api_prefix = \"/logstore/api/v1\"\n\
         basic_auth = {{ username = {user}, password_file = {pw} }}\n\
         \n\
         [[sources]]\n\
         type = \"file\"\n\
         include = [{include}]\n\
         labels = {{ job = \"tailship\" }}\n",
        stack = req.stack,
        org = req.org,
        region = o.region,
        pname = o.policy_name,
        pid = o.policy_id,
        tname = o.token_name,
        tid = o.token_id,
        url = q(&o.logs_url),
        user = q(&o.username),
        pw = q(&o.token_path.display().to_string()),
        include = include.join(", "),
    )
}

fn check_target(path: &Path, force: bool, flag: &str) -> Result<(), SetupError> {
    if path.exists() && !force {
        return Err(SetupError::Usage(format!(
            "{flag}: {} already exists; pass --force to overwrite it",
            path.display()
        )));
    }
    if path.is_dir() {
        return Err(SetupError::Usage(format!("{flag}: {} is a directory", path.display())));
    }
    Ok(())
}

fn absolute(p: &Path) -> Result<PathBuf, SetupError> {
    std::path::absolute(p).map_err(|e| SetupError::Usage(format!("cannot resolve {}: {e}", p.display())))
}

/// Opens `path` for writing: a new file, or (with `force`) an existing one emptied.
/// With `private`, only its owner can read it (mode 0600 from creation; an
/// overwritten file keeps its old mode, so it is set again).
fn create(path: &Path, force: bool, private: bool) -> std::io::Result<std::fs::File> {
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true);
    if force {
        opts.create(true).truncate(true);
    } else {
        opts.create_new(true);
    }
    #[cfg(unix)]
    if private {
        use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
        opts.mode(0o600);
        let f = opts.open(path)?;
        f.set_permissions(std::fs::Permissions::from_mode(0o600))?;
        return Ok(f);
    }
    let _ = private;
    opts.open(path)
}

/// Writes the token to a file only its owner can read.
fn write_secret(path: &Path, secret: &str, force: bool) -> std::io::Result<()> {
    let mut f = create(path, force, true)?;
    f.write_all(secret.as_bytes())?;
    f.write_all(b"\n")?;
    f.sync_all()
}

fn write_file(path: &Path, text: &str, force: bool) -> std::io::Result<()> {
    let mut f = create(path, force, false)?;
    f.write_all(text.as_bytes())?;
    f.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_quotes_values_and_loads() {
        let dir = tempfile::tempdir().unwrap();
        let token = dir.path().join("s-token");
        std::fs::write(&token, "x\n").unwrap();
        let req = SetupRequest {
            org: "o".into(),
            stack: "s".into(),
            region: None,
            config_path: None,
            token_path: token.clone(),
            force: false,
            include: vec!["/var/log/*.log".into()],
            now_unix: 1,
        };
        let o = SetupOutcome {
            config: String::new(),
            token_path: token,
            region: "us".into(),
            stack_id: 7,
            logs_url: "https://logs.example/\"x".into(),
            username: "42".into(),
            policy_id: "p".into(),
            policy_name: "tailship-s-logs-write".into(),
            policy_reused: false,
            token_id: "t".into(),
            token_name: "tailship-s-1".into(),
        };
        let text = render_config(&req, &o);
        let cfg_path = dir.path().join("c.toml");
        std::fs::write(&cfg_path, &text).unwrap();
        let c = crate::config::load(&cfg_path).unwrap();
        assert_eq!(c.client.url, "https://logs.example/\"x");
        assert_eq!(c.client.basic_auth.unwrap().username, "42");
    }
}
