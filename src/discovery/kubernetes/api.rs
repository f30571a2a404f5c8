//! The Kubernetes API calls discovery needs: list the objects of one
//! resource (pods of one node, nodes, services, ...), with the label and
//! field selectors of the config, then watch them from the list's
//! resourceVersion (with bookmarks).
//!
//! Credentials: the in-cluster service account (`token_file`, `ca_file`,
//! `https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT`), the
//! current context of a kubeconfig (`server`, `certificate-authority[-data]`,
//! `insecure-skip-tls-verify`, `token`, `tokenFile`), or `api_server` with
//! `tls` (client certificate, `server_name`, ...), `basic_auth`,
//! `bearer_token` or `oauth2` (a token fetched and renewed, dropped on a
//! 401), through `proxy_url` if set. A token or password file is read again for every
//! request: bound service account tokens rotate.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use serde::Deserialize;
use yaml_rust2::Yaml;

use super::objects::ObjectMeta;
use crate::client::auth::Auth;
use crate::client::discovery::{options, Overrides};
use crate::client::http::{build_client, ClientOptions};
use crate::client::oauth2::TokenSource;
use crate::config::{HttpKeys, KubernetesConfig, Pem};
use crate::util::Secret;

#[derive(Debug, thiserror::Error)]
pub enum KubeError {
    #[error("kubeconfig {path}: {message}")]
    Kubeconfig { path: String, message: String },
    #[error("no API server: set kubernetes.api_server, a kubeconfig, or run in a pod (KUBERNETES_SERVICE_HOST)")]
    NoServer,
    #[error("cannot read the token file {path}: {source}")]
    Token { path: String, source: std::io::Error },
    #[error("{0}")]
    Client(#[from] crate::client::http::HttpError),
    #[error("cannot reach the API server: {0}")]
    Unreachable(reqwest::Error),
    #[error("the API server answered {status}: {body}")]
    Status { status: u16, body: String },
    /// 410 Gone: the resourceVersion is too old; list again.
    #[error("resource version too old (410 Gone)")]
    Gone,
    #[error("the API server's answer is not a {what}: {source}")]
    Decode { what: &'static str, source: serde_json::Error },
}

/// A list of objects of one resource.
#[derive(Debug, Deserialize, Default)]
#[serde(default)]
pub struct ObjectList {
    pub metadata: ObjectMeta,
    pub items: Vec<serde_json::Value>,
}

/// What is listed and watched: a path (`/api/v1/nodes`,
/// `/api/v1/namespaces/NS/services`, ...) and its selectors.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resource {
    pub path: String,
    pub label: Option<String>,
    pub field: Option<String>,
}

/// One watch event.
#[derive(Debug, Deserialize)]
pub struct WatchEvent {
    #[serde(rename = "type")]
    pub kind: String,
    pub object: serde_json::Value,
}

/// One API server and its credentials.
#[derive(Debug, Clone)]
pub struct Api {
    http: reqwest::Client,
    server: String,
    auth: Auth,
}

/// A list or the start of a watch may take this long.
const CALL: Duration = Duration::from_secs(30);
/// The server ends a watch after this many seconds; the watch is then opened again.
pub const WATCH_SECONDS: u64 = 300;

impl Api {
    /// Credentials from `cfg` (see the module documentation).
    pub fn new(cfg: &KubernetesConfig) -> Result<Self, KubeError> {
        // Watches stay open: no timeout of the client's own.
        let o = Overrides { plain_http: false, timeout: None, no_redirects: false, http1_only: false };
        // `tls` is the table's own key (its CA may come as `ca_file`), with its proxy keys.
        let keys = HttpKeys { tls: cfg.tls.as_ref(), ..cfg.http() };
        let mut opts = options(keys, o);
        let mut _ca_copy = None;
        let (server, token) = match &cfg.kubeconfig {
            Some(path) => {
                let k = Kubeconfig::read(path)?;
                if let Some(data) = k.ca_data {
                    let mut f = tempfile::NamedTempFile::new().map_err(|e| KubeError::Kubeconfig {
                        path: path.display().to_string(),
                        message: e.to_string(),
                    })?;
                    std::io::Write::write_all(&mut f, &data).map_err(|e| KubeError::Kubeconfig {
                        path: path.display().to_string(),
                        message: e.to_string(),
                    })?;
                    opts.ca = Some(Pem::File(f.path().to_path_buf()));
                    _ca_copy = Some(f);
                } else {
                    opts.ca = k.ca_file.map(Pem::File);
                }
                opts.insecure_skip_verify = k.insecure;
                (cfg.api_server.clone().or(k.server), k.token)
            }
            None => {
                let in_cluster = std::env::var("KUBERNETES_SERVICE_HOST")
                    .ok()
                    .zip(std::env::var("KUBERNETES_SERVICE_PORT").ok())
                    .map(
                        |(h, p)| {
                            if h.contains(':') {
                                format!("https://[{h}]:{p}")
                            } else {
                                format!("https://{h}:{p}")
                            }
                        },
                    );
                // `tls`'s CA, else the service account's.
                opts.ca = opts.ca.take().or_else(|| cfg.ca_file.exists().then(|| Pem::File(cfg.ca_file.clone())));
                let token = match (&cfg.bearer_token, &cfg.basic_auth) {
                    (Some(t), _) => Auth::Bearer(t.clone()),
                    (None, None) if cfg.oauth2.is_some() => Auth::None,
                    (None, Some(b)) => {
                        let user = match &b.username_file {
                            Some(f) => std::fs::read_to_string(f)
                                .map_err(|source| KubeError::Token { path: f.display().to_string(), source })?
                                .trim()
                                .to_string(),
                            None => b.username.clone(),
                        };
                        match (&b.password, &b.password_file) {
                            (None, Some(f)) => Auth::BasicFile { username: user, password_file: f.clone() },
                            (p, _) => Auth::Basic { username: user, password: p.clone().unwrap_or_default() },
                        }
                    }
                    (None, None) => Auth::BearerFileIfAny(cfg.token_file.clone()),
                };
                (cfg.api_server.clone().or(in_cluster), token)
            }
        };
        let server = server.ok_or(KubeError::NoServer)?.trim_end_matches('/').to_string();
        opts.plain_http = server.starts_with("http://");
        let http = build_client(&opts)?;
        let auth = match &cfg.oauth2 {
            Some(o) => Auth::OAuth2(Arc::new(TokenSource::new(ClientOptions { timeout: Some(CALL), ..opts }, o)?)),
            None => token,
        };
        Ok(Self { http, server, auth })
    }

    pub fn server(&self) -> &str {
        &self.server
    }

    async fn request(&self, res: &Resource, query: &[(&str, &str)]) -> Result<reqwest::RequestBuilder, KubeError> {
        let mut q: Vec<(&str, &str)> = Vec::new();
        if let Some(l) = res.label.as_deref().filter(|l| !l.is_empty()) {
            q.push(("labelSelector", l));
        }
        if let Some(f) = res.field.as_deref().filter(|f| !f.is_empty()) {
            q.push(("fieldSelector", f));
        }
        q.extend_from_slice(query);
        let b = self.http.get(format!("{}{}", self.server, res.path)).query(&q);
        Ok(self.auth.apply(b).await?)
    }

    async fn send(&self, b: reqwest::RequestBuilder) -> Result<reqwest::Response, KubeError> {
        let resp = b.send().await.map_err(KubeError::Unreachable)?;
        self.auth.answered_with(Some(resp.status()));
        let status = resp.status().as_u16();
        if status == 410 {
            return Err(KubeError::Gone);
        }
        if !(200..300).contains(&status) {
            let body = crate::client::read::error_text(resp).await.chars().take(300).collect();
            return Err(KubeError::Status { status, body });
        }
        Ok(resp)
    }

    /// Every object of `res`, and the list's resourceVersion.
    pub async fn list(&self, res: &Resource) -> Result<ObjectList, KubeError> {
        let b = self.request(res, &[]).await?.timeout(CALL);
        let body =
            crate::client::read::body(self.send(b).await?, crate::client::read::Cap::Discovery, &res.path).await?;
        serde_json::from_slice(&body).map_err(|source| KubeError::Decode { what: "list", source })
    }

    /// Opens a watch of `res` from `version`.
    pub async fn watch(&self, res: &Resource, version: &str) -> Result<reqwest::Response, KubeError> {
        let secs = WATCH_SECONDS.to_string();
        let q =
            [("watch", "1"), ("allowWatchBookmarks", "true"), ("resourceVersion", version), ("timeoutSeconds", &secs)];
        let b = self.request(res, &q).await?;
        tokio::time::timeout(CALL, self.send(b)).await.unwrap_or_else(|_| {
            Err(KubeError::Status { status: 0, body: "no answer to the watch request in 30s".into() })
        })
    }
}

/// What a kubeconfig's current context says.
struct Kubeconfig {
    server: Option<String>,
    ca_file: Option<PathBuf>,
    ca_data: Option<Vec<u8>>,
    insecure: bool,
    token: Auth,
}

impl Kubeconfig {
    fn read(path: &std::path::Path) -> Result<Self, KubeError> {
        let err = |m: String| KubeError::Kubeconfig { path: path.display().to_string(), message: m };
        let text = std::fs::read_to_string(path).map_err(|e| err(e.to_string()))?;
        let docs = crate::util::yaml::load(&text).map_err(|e| err(e.to_string()))?;
        let doc = docs.first().ok_or_else(|| err("empty".into()))?;
        let current = doc["current-context"].as_str().ok_or_else(|| err("no current-context".into()))?;
        let named = |list: &str, name: &str, inner: &str| -> Option<Yaml> {
            doc[list].as_vec()?.iter().find(|i| i["name"].as_str() == Some(name)).map(|i| i[inner].clone())
        };
        let ctx = named("contexts", current, "context").ok_or_else(|| err(format!("no context `{current}`")))?;
        let cluster = ctx["cluster"].as_str().and_then(|c| named("clusters", c, "cluster")).unwrap_or(Yaml::Null);
        let user = ctx["user"].as_str().and_then(|u| named("users", u, "user")).unwrap_or(Yaml::Null);
        let dir = path.parent().unwrap_or(std::path::Path::new("."));
        let ca_data = match cluster["certificate-authority-data"].as_str() {
            Some(d) => Some(
                base64::engine::general_purpose::STANDARD
                    .decode(d.trim())
                    .map_err(|e| err(format!("certificate-authority-data: {e}")))?,
            ),
            None => None,
        };
        let token = match (user["token"].as_str(), user["tokenFile"].as_str()) {
            (Some(t), _) => Auth::Bearer(Secret::new(t)),
            (None, Some(f)) => Auth::BearerFileIfAny(dir.join(f)),
            _ => Auth::None,
        };
        Ok(Self {
            server: cluster["server"].as_str().map(String::from),
            ca_file: cluster["certificate-authority"].as_str().map(|p| dir.join(p)),
            ca_data,
            insecure: cluster["insecure-skip-tls-verify"].as_bool().unwrap_or(false),
            token,
        })
    }
}
