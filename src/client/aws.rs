//! Requests to AWS query APIs (EC2, STS), signed with Signature Version 4
//! (`aws-sigv4`), and the credentials they are signed with, found as AWS's
//! SDKs find them: the keys given, else `AWS_ACCESS_KEY_ID` and
//! `AWS_SECRET_ACCESS_KEY` (with `AWS_SESSION_TOKEN`), else a profile of the
//! shared credentials file (`AWS_SHARED_CREDENTIALS_FILE`, default
//! `~/.aws/credentials`; the profile given, else `AWS_PROFILE`, else
//! `default`), else the instance's role (its metadata service, IMDSv2, at
//! `AWS_EC2_METADATA_SERVICE_ENDPOINT` or `http://169.254.169.254`). With a
//! role ARN, those credentials assume the role (STS `AssumeRole`, at
//! `AWS_ENDPOINT_URL_STS` or the region's STS) and its temporary ones sign.

use std::time::{Duration, SystemTime};

use aws_credential_types::Credentials;
use aws_sigv4::http_request::{sign, SignableBody, SignableRequest, SigningSettings};
use aws_sigv4::sign::v4;

/// How long before expiry temporary credentials are renewed.
const RENEW_BEFORE: Duration = Duration::from_secs(300);
const IMDS: &str = "http://169.254.169.254";

/// Where the credentials come from, as configured.
#[derive(Debug, Clone, Default)]
pub struct CredentialSource {
    pub access_key: String,
    pub secret_key: String,
    pub profile: String,
    pub role_arn: String,
    pub external_id: String,
}

/// Keys to sign with, and when they expire.
#[derive(Debug, Clone)]
struct Keys {
    access_key: String,
    secret_key: String,
    session_token: Option<String>,
    expires: Option<SystemTime>,
}

/// A signer of one region's requests, renewing temporary credentials.
pub struct Signer {
    http: reqwest::Client,
    source: CredentialSource,
    pub region: String,
    keys: Option<Keys>,
}

impl Signer {
    pub fn new(http: reqwest::Client, source: CredentialSource, region: String) -> Self {
        Self { http, source, region, keys: None }
    }

    /// The region given, else `AWS_REGION`, else the instance's (its metadata service).
    pub async fn region(http: &reqwest::Client, given: &str) -> Result<String, String> {
        if !given.is_empty() {
            return Ok(given.to_string());
        }
        if let Some(r) = env("AWS_REGION").or_else(|| env("AWS_DEFAULT_REGION")) {
            return Ok(r);
        }
        imds(http, "/latest/meta-data/placement/region").await.map_err(|e| format!("no region given, and {e}"))
    }

    /// POSTs the form `params` to `url` for `service`, signed; the answer's body.
    pub async fn post(&mut self, url: &str, service: &str, params: &[(String, String)]) -> Result<String, String> {
        let keys = self.keys().await?;
        let body = url::form_urlencoded::Serializer::new(String::new()).extend_pairs(params).finish();
        let content_type = "application/x-www-form-urlencoded; charset=utf-8";
        let headers = [("content-type", content_type)];
        let signed = signed_headers(&keys, &self.region, service, url, &headers, body.as_bytes())?;
        let mut rb = self.http.post(url).header("content-type", content_type).body(body);
        for (k, v) in signed {
            rb = rb.header(k, v);
        }
        let resp = rb.send().await.map_err(|e| format!("cannot reach {url}: {e}"))?;
        let (status, text) = super::read::answer(resp, super::read::Cap::Small, url)
            .await
            .map_err(|e| format!("cannot read the answer of {url}: {e}"))?;
        let text = String::from_utf8_lossy(&text);
        if !status.is_success() {
            if status.as_u16() == 401 || status.as_u16() == 403 {
                // Perhaps expired or revoked: found again next time.
                self.keys = None;
            }
            let short: String = text.chars().take(300).collect();
            return Err(format!("{url} answered {status}: {short}"));
        }
        Ok(text.into_owned())
    }

    /// The keys to sign with now.
    async fn keys(&mut self) -> Result<Keys, String> {
        let fresh = |k: &Keys| k.expires.is_none_or(|t| t > SystemTime::now() + RENEW_BEFORE);
        if let Some(k) = self.keys.as_ref().filter(|k| fresh(k)) {
            return Ok(k.clone());
        }
        let mut keys = base_keys(&self.http, &self.source).await?;
        if !self.source.role_arn.is_empty() {
            keys = self.assume_role(&keys).await?;
        }
        crate::util::secrets::remember(&keys.secret_key);
        if let Some(t) = &keys.session_token {
            crate::util::secrets::remember(t);
        }
        self.keys = Some(keys.clone());
        Ok(keys)
    }

    async fn assume_role(&self, base: &Keys) -> Result<Keys, String> {
        let url = env("AWS_ENDPOINT_URL_STS").unwrap_or_else(|| format!("https://sts.{}.amazonaws.com/", self.region));
        let mut params = vec![
            ("Action".to_string(), "AssumeRole".to_string()),
            ("Version".to_string(), "2011-06-15".to_string()),
            ("RoleArn".to_string(), self.source.role_arn.clone()),
            ("RoleSessionName".to_string(), "tailship".to_string()),
        ];
        if !self.source.external_id.is_empty() {
            params.push(("ExternalId".to_string(), self.source.external_id.clone()));
        }
        let body = url::form_urlencoded::Serializer::new(String::new()).extend_pairs(&params).finish();
        let content_type = "application/x-www-form-urlencoded; charset=utf-8";
        let signed =
            signed_headers(base, &self.region, "sts", &url, &[("content-type", content_type)], body.as_bytes())?;
        let mut rb = self.http.post(&url).header("content-type", content_type).body(body);
        for (k, v) in signed {
            rb = rb.header(k, v);
        }
        let resp = rb.send().await.map_err(|e| format!("cannot reach STS at {url}: {e}"))?;
        let (status, text) = super::read::answer(resp, super::read::Cap::Small, &url)
            .await
            .map_err(|e| format!("cannot read STS's answer: {e}"))?;
        let text = String::from_utf8_lossy(&text);
        if !status.is_success() {
            let short: String = text.chars().take(300).collect();
            return Err(format!("STS answered {status} to AssumeRole of {}: {short}", self.source.role_arn));
        }
        let c: AssumeRoleResponse = quick_xml::de::from_str(&text).map_err(|e| format!("STS's answer: {e}"))?;
        let c = c.result.credentials;
        Ok(Keys {
            access_key: c.access_key_id,
            secret_key: c.secret_access_key,
            session_token: Some(c.session_token),
            expires: parse_time(&c.expiration),
        })
    }
}

#[derive(Debug, serde::Deserialize)]
struct AssumeRoleResponse {
    #[serde(rename = "AssumeRoleResult")]
    result: AssumeRoleResult,
}

#[derive(Debug, serde::Deserialize)]
struct AssumeRoleResult {
    #[serde(rename = "Credentials")]
    credentials: StsCredentials,
}

#[derive(Debug, serde::Deserialize)]
#[serde(rename_all = "PascalCase")]
struct StsCredentials {
    access_key_id: String,
    secret_access_key: String,
    session_token: String,
    expiration: String,
}

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

fn parse_time(s: &str) -> Option<SystemTime> {
    chrono::DateTime::parse_from_rfc3339(s).ok().map(SystemTime::from)
}

/// The headers that sign a request (`x-amz-date`, `authorization`, maybe `x-amz-security-token`).
fn signed_headers(
    keys: &Keys,
    region: &str,
    service: &str,
    url: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Result<Vec<(String, String)>, String> {
    let identity =
        Credentials::new(&keys.access_key, &keys.secret_key, keys.session_token.clone(), keys.expires, "tailship")
            .into();
    let params = v4::SigningParams::builder()
        .identity(&identity)
        .region(region)
        .name(service)
        .time(SystemTime::now())
        .settings(SigningSettings::default())
        .build()
        .map_err(|e| format!("cannot sign: {e}"))?
        .into();
    let request = SignableRequest::new("POST", url, headers.iter().copied(), SignableBody::Bytes(body))
        .map_err(|e| format!("cannot sign a request to {url}: {e}"))?;
    let (instructions, _) = sign(request, &params).map_err(|e| format!("cannot sign: {e}"))?.into_parts();
    let (headers, _) = instructions.into_parts();
    Ok(headers.iter().map(|h| (h.name().to_string(), h.value().to_string())).collect())
}

/// The credentials before any role is assumed.
async fn base_keys(http: &reqwest::Client, s: &CredentialSource) -> Result<Keys, String> {
    if !s.access_key.is_empty() {
        return Ok(Keys {
            access_key: s.access_key.clone(),
            secret_key: s.secret_key.clone(),
            session_token: None,
            expires: None,
        });
    }
    let profile = if s.profile.is_empty() { env("AWS_PROFILE") } else { Some(s.profile.clone()) };
    if profile.is_none() {
        if let (Some(a), Some(k)) = (env("AWS_ACCESS_KEY_ID"), env("AWS_SECRET_ACCESS_KEY")) {
            return Ok(Keys { access_key: a, secret_key: k, session_token: env("AWS_SESSION_TOKEN"), expires: None });
        }
    }
    let profile = profile.unwrap_or_else(|| "default".into());
    let file = env("AWS_SHARED_CREDENTIALS_FILE")
        .map(std::path::PathBuf::from)
        .or_else(|| env("HOME").map(|h| std::path::Path::new(&h).join(".aws/credentials")));
    if let Some(keys) = file.as_deref().and_then(|f| profile_keys(f, &profile)) {
        return Ok(keys);
    }
    if !s.profile.is_empty() {
        return Err(format!("no keys of profile `{profile}` in the shared credentials file"));
    }
    instance_keys(http).await.map_err(|e| format!("no AWS credentials found (keys, environment, profile): {e}"))
}

/// The keys of `profile` in the shared credentials file at `path` (an INI file).
fn profile_keys(path: &std::path::Path, profile: &str) -> Option<Keys> {
    let text = std::fs::read_to_string(path).ok()?;
    let mut section = String::new();
    let (mut access, mut secret, mut token) = (None, None, None);
    for line in text.lines() {
        let line = line.trim();
        if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            section = name.trim().trim_start_matches("profile ").to_string();
            continue;
        }
        let Some((k, v)) = line.split_once('=') else { continue };
        if section != profile {
            continue;
        }
        let v = v.trim().to_string();
        match k.trim() {
            "aws_access_key_id" => access = Some(v),
            "aws_secret_access_key" => secret = Some(v),
            "aws_session_token" => token = Some(v),
            _ => {}
        }
    }
    Some(Keys { access_key: access?, secret_key: secret?, session_token: token, expires: None })
}

/// A path of the instance metadata service, with an IMDSv2 token.
async fn imds(http: &reqwest::Client, path: &str) -> Result<String, String> {
    let base = env("AWS_EC2_METADATA_SERVICE_ENDPOINT").unwrap_or_else(|| IMDS.into());
    let base = base.trim_end_matches('/');
    let token_url = format!("{base}/latest/api/token");
    let rb =
        http.put(&token_url).header("X-aws-ec2-metadata-token-ttl-seconds", "21600").timeout(Duration::from_secs(2));
    let token = super::http::fetch(rb, &token_url, super::read::Cap::Small)
        .await
        .map_err(|e| format!("the instance metadata service: {e}"))?;
    let url = format!("{base}{path}");
    let rb = http
        .get(&url)
        .header("X-aws-ec2-metadata-token", String::from_utf8_lossy(&token).trim())
        .timeout(Duration::from_secs(2));
    let body = super::http::fetch(rb, &url, super::read::Cap::Small)
        .await
        .map_err(|e| format!("the instance metadata service ({path}): {e}"))?;
    Ok(String::from_utf8_lossy(&body).into_owned())
}

/// The instance role's temporary keys.
async fn instance_keys(http: &reqwest::Client) -> Result<Keys, String> {
    let dir = "/latest/meta-data/iam/security-credentials/";
    let roles = imds(http, dir).await?;
    let role = roles.lines().next().filter(|r| !r.is_empty()).ok_or("the instance has no role")?;
    let body = imds(http, &format!("{dir}{role}")).await?;
    let v: serde_json::Value = serde_json::from_str(&body).map_err(|e| format!("the role's credentials: {e}"))?;
    let s = |k: &str| v[k].as_str().map(str::to_string);
    Ok(Keys {
        access_key: s("AccessKeyId").ok_or("the role's credentials have no AccessKeyId")?,
        secret_key: s("SecretAccessKey").ok_or("the role's credentials have no SecretAccessKey")?,
        session_token: s("Token"),
        expires: s("Expiration").as_deref().and_then(parse_time),
    })
}
