//! Turning the common client flags into a validated [`ClientConfig`].

use crate::cli::ClientArgs;
use crate::commands::CommandError;
use crate::config::{BasicAuth, ClientConfig, ConfigError, ConfigErrors};
use crate::util::read_secret_file;

/// The `client` section of `--config` (or defaults), overridden by flags and
/// their environment variables, then validated. Config errors exit 2.
pub fn client_config(args: &ClientArgs) -> Result<ClientConfig, CommandError> {
    let mut c = match &args.config {
        Some(path) => crate::config::load(path).map_err(CommandError::usage)?.client,
        None => ClientConfig::default(),
    };
    apply_connection_flags(args, &mut c);
    apply_auth_flags(args, &mut c)?;
    // Secrets were read above; clear the file paths so validation does not read them again.
    if let Some(b) = &mut c.basic_auth {
        if b.password.is_some() {
            b.password_file = None;
        }
    }
    if c.bearer_token.is_some() {
        c.bearer_token_file = None;
    }
    validate(args, c)
}

/// The flags that say where and how to connect: URL, API prefix, tenant,
/// TLS, proxy and timeout.
fn apply_connection_flags(args: &ClientArgs, c: &mut ClientConfig) {
    if let Some(u) = &args.url {
        c.url = u.clone();
    }
    if let Some(p) = &args.api_prefix {
        c.api_prefix = Some(p.clone());
    }
    if let Some(o) = &args.org_id {
        c.tenant_id = Some(o.clone());
    }
    if let Some(ca) = &args.ca_file {
        c.tls.ca_file = Some(ca.clone());
    }
    if args.insecure_skip_verify {
        c.tls.insecure_skip_verify = true;
    }
    if let (Some(cert), Some(key)) = (&args.cert_file, &args.key_file) {
        c.tls.cert_file = Some(cert.clone());
        c.tls.key_file = Some(key.clone());
    }
    if let Some(p) = &args.proxy_url {
        c.proxy_url = Some(crate::util::Secret::new(p.clone()));
    }
    if let Some(t) = args.timeout {
        c.timeout = crate::util::HumanDuration(t);
    }
}

/// The credential flags: a username and password (or its file) replace
/// the config's credentials, a password alone the config's password; a
/// bearer token (or its file) replaces basic auth. Secret files are read here.
fn apply_auth_flags(args: &ClientArgs, c: &mut ClientConfig) -> Result<(), CommandError> {
    if let Some(p) = &args.password {
        crate::util::secrets::remember(p);
    }
    if let Some(t) = &args.bearer_token {
        crate::util::secrets::remember(t);
    }
    if let (None, Some(p)) = (&args.username, &args.password) {
        match &mut c.basic_auth {
            Some(b) => {
                b.password = Some(crate::util::Secret::new(p.clone()));
                b.password_file = None;
            }
            None => return Err(CommandError::usage(anyhow::anyhow!("--password needs --username"))),
        }
    }
    if let Some(u) = &args.username {
        let password = match (&args.password_file, &args.password) {
            (None, Some(p)) => Some(crate::util::Secret::new(p.clone())),
            (None, None) => c.basic_auth.as_ref().and_then(|b| b.password.clone()),
            (Some(p), _) => Some(read_secret_file(p).map_err(|e| {
                CommandError::usage(anyhow::anyhow!("--password-file {}: cannot read: {e}", p.display()))
            })?),
        };
        c.basic_auth = Some(BasicAuth { username: u.clone(), password, ..Default::default() });
        c.bearer_token = None;
    } else if let Some(p) = &args.password_file {
        match &mut c.basic_auth {
            Some(b) => {
                b.password = Some(read_secret_file(p).map_err(|e| {
                    CommandError::usage(anyhow::anyhow!("--password-file {}: cannot read: {e}", p.display()))
                })?);
                b.password_file = None;
            }
            None => return Err(CommandError::usage(anyhow::anyhow!("--password-file needs --username"))),
        }
    }
    if let Some(t) = &args.bearer_token {
        c.bearer_token = Some(crate::util::Secret::new(t.clone()));
        c.basic_auth = None;
    }
    if let Some(p) = &args.bearer_token_file {
        c.bearer_token = Some(read_secret_file(p).map_err(|e| {
            CommandError::usage(anyhow::anyhow!("--bearer-token-file {}: cannot read: {e}", p.display()))
        })?);
        c.basic_auth = None;
    }
    Ok(())
}

/// Validates `c` as the `client` section; a value a flag (or its
/// variable) set is blamed on the flag, the rest on the config file.
fn validate(args: &ClientArgs, mut c: ClientConfig) -> Result<ClientConfig, CommandError> {
    let mut errors = Vec::new();
    let flags: [(&str, bool, &str); 6] = [
        ("client.url", args.url.is_some(), "--url (TAILSHIP_URL)"),
        ("client.api_prefix", args.api_prefix.is_some(), "--api-prefix (TAILSHIP_API_PREFIX)"),
        ("client.tenant_id", args.org_id.is_some(), "--org-id (TAILSHIP_ORG_ID)"),
        ("client.timeout", args.timeout.is_some(), "--timeout"),
        ("client.tls.cert_file", args.cert_file.is_some(), "--cert-file"),
        ("client.proxy_url", args.proxy_url.is_some(), "--proxy-url"),
    ];
    let config_file = args.config.clone().unwrap_or_else(|| "command line".into());
    crate::config::validate_client(&mut c, &mut |key: &str, message: String| {
        let (file, key) = match flags.iter().find(|(k, given, _)| *given && *k == key) {
            Some((_, _, flag)) => ("command line".into(), flag.to_string()),
            None => (config_file.clone(), key.to_string()),
        };
        errors.push(ConfigError { file, key, message })
    });
    if errors.is_empty() {
        Ok(c)
    } else {
        Err(CommandError::usage(ConfigErrors(errors)))
    }
}

/// Like [`client_config`], for the query commands: `--org-id` (or
/// `TAILSHIP_ORG_ID`) may name several tenants as `a|b`, which queries accept
/// and pushes do not, so it is checked here instead of by the push rules.
pub fn query_client_config(args: &ClientArgs) -> Result<ClientConfig, CommandError> {
    let mut rest = args.clone();
    let org_id = rest.org_id.take();
    let mut c = client_config(&rest)?;
    if let Some(org) = org_id {
        if org.split('|').any(|t| t.trim().is_empty()) {
            return Err(CommandError::usage(anyhow::anyhow!(
                "--org-id `{org}`: give a tenant, or several joined with `|` such as `a|b`"
            )));
        }
        c.tenant_id = Some(org);
    }
    Ok(c)
}
