//! How requests authenticate: to the log service, `client.basic_auth`,
//! `client.bearer_token` or `client.oauth2` (a token fetched and renewed by
//! [`super::oauth2`]); the discovery sources that reach a service over HTTP
//! (a remote Docker Engine, Consul, the Kubernetes API server with its
//! service account's token) take the same keys.

use std::sync::Arc;

use reqwest::{RequestBuilder, StatusCode};

use super::http::{ClientOptions, HttpError};
use super::oauth2::TokenSource;
use crate::config::ClientConfig;
use crate::util::Secret;

/// How requests authenticate.
#[derive(Debug, Clone, Default)]
pub enum Auth {
    #[default]
    None,
    Basic {
        username: String,
        password: Secret,
    },
    Bearer(Secret),
    /// A bearer token read from this file for every request (tokens rotate).
    BearerFile(std::path::PathBuf),
    /// As `BearerFile` where the file may be absent, and then no credential
    /// is sent (a pod's service account token, when none is mounted).
    BearerFileIfAny(std::path::PathBuf),
    /// Basic auth whose password is read from this file for every request.
    BasicFile {
        username: String,
        password_file: std::path::PathBuf,
    },
    /// `client.oauth2`: a token fetched and renewed as needed.
    OAuth2(Arc<TokenSource>),
}

impl Auth {
    /// `client.basic_auth`, `client.bearer_token` or `client.oauth2`.
    pub fn of(c: &ClientConfig) -> Result<Self, HttpError> {
        Ok(match (&c.basic_auth, &c.bearer_token, &c.oauth2) {
            (Some(b), _, _) => {
                let password = b.password.clone().unwrap_or_default();
                crate::util::secrets::remember_basic(&b.username, password.expose());
                Auth::Basic { username: b.username.clone(), password }
            }
            (None, Some(t), _) => Auth::Bearer(t.clone()),
            (None, None, Some(o)) => Auth::OAuth2(Arc::new(TokenSource::new(ClientOptions::of(c, &o.token_url), o)?)),
            (None, None, None) => Auth::None,
        })
    }

    /// `rb` with its credentials (an OAuth 2.0 token is fetched first if
    /// there is none yet or it is about to expire).
    pub async fn apply(&self, rb: RequestBuilder) -> Result<RequestBuilder, HttpError> {
        Ok(match self {
            Auth::None => rb,
            Auth::Basic { username, password } => rb.basic_auth(username, Some(password.expose())),
            Auth::Bearer(token) => rb.bearer_auth(token.expose()),
            Auth::BearerFile(path) => {
                let token = crate::util::read_secret_file(path).map_err(|e| {
                    HttpError::Setting(format!("cannot read the bearer token file {}: {e}", path.display()))
                })?;
                rb.bearer_auth(token.expose().trim())
            }
            Auth::BearerFileIfAny(path) => match std::fs::read_to_string(path) {
                Ok(token) => rb.bearer_auth(token.trim()),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => rb,
                Err(e) => {
                    return Err(HttpError::Setting(format!(
                        "cannot read the bearer token file {}: {e}",
                        path.display()
                    )))
                }
            },
            Auth::BasicFile { username, password_file } => {
                let password = std::fs::read_to_string(password_file).map_err(|e| {
                    HttpError::Setting(format!("cannot read the password file {}: {e}", password_file.display()))
                })?;
                rb.basic_auth(username, Some(password.trim_end_matches(['\r', '\n'])))
            }
            Auth::OAuth2(source) => rb.header(reqwest::header::AUTHORIZATION, source.header().await?),
        })
    }

    /// Told the outcome of a request: a 401 drops an OAuth 2.0 token (revoked
    /// before it expired), so the next try asks for a new one.
    pub fn answered<T>(&self, r: &Result<T, HttpError>) {
        if let Err(e) = r {
            self.answered_with(e.status());
        }
    }

    /// Told a request was answered `status`: a 401 drops an OAuth 2.0 token.
    pub fn answered_with(&self, status: Option<StatusCode>) {
        if let (Auth::OAuth2(source), Some(StatusCode::UNAUTHORIZED)) = (self, status) {
            source.forget();
        }
    }
}
