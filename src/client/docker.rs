//! The Docker Engine API, for the Docker discoveries and the docker source,
//! over the Engine's Unix socket or over TCP (plain or TLS, basic auth):
//! `GET /info` (where the Engine keeps its data), `GET /containers/json`
//! (the list, with `filters`), `GET /networks` (their labels), `GET
//! /containers/{id}/json` (a container's log path, log driver and TTY), `GET
//! /events` (a stream of JSON objects, one per event, split by
//! [`take_events`]) and `GET /containers/{id}/logs` (a container's log,
//! followed; `source::docker::stream` reads it); and a swarm manager's `GET
//! /services`, `/tasks` and `/nodes`. What a container's labels are is the
//! discovery's (`discovery::docker`), not this client's.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use serde::Deserialize;

use crate::client::auth::Auth;
use crate::client::discovery::{options, Overrides};
use crate::config::{DockerConfig, DockerHost};

/// Failed calls to the Engine back off up to this.
pub const BACKOFF_MAX: Duration = Duration::from_secs(30);
/// What is asked, in messages.
pub const ENGINE: &str = "the Docker Engine";

/// A failed Engine API call.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error("cannot reach the Docker Engine at {socket}: {source}")]
    Unreachable { socket: String, source: reqwest::Error },
    #[error("docker.{0}")]
    Setting(String),
    #[error("the Docker Engine answered {status} to {what}: {body}")]
    Status { what: String, status: u16, body: String },
    #[error("the Docker Engine's answer to {what} is not what its API documents: {source}")]
    Decode { what: String, source: serde_json::Error },
    #[error("{0}")]
    Client(#[from] crate::client::http::HttpError),
}

/// `GET /info`, the part discovery reads.
#[derive(Debug, Clone, Deserialize)]
pub struct Info {
    #[serde(rename = "DockerRootDir")]
    pub root_dir: PathBuf,
}

/// One item of `GET /containers/json`.
#[derive(Debug, Clone, Deserialize, Default)]
#[serde(default)]
pub struct Listed {
    #[serde(rename = "Id")]
    pub id: String,
    #[serde(rename = "Names")]
    pub names: Vec<String>,
    #[serde(rename = "Labels")]
    pub labels: Option<BTreeMap<String, String>>,
    #[serde(rename = "HostConfig")]
    pub host_config: ListedHostConfig,
    /// `running`, `exited`, `created`, ...
    #[serde(rename = "State")]
    pub state: String,
    #[serde(rename = "Ports")]
    pub ports: Option<Vec<Port>>,
    #[serde(rename = "NetworkSettings")]
    pub network_settings: Option<NetworkSettings>,
}

/// A port of a listed container.
#[derive(Debug, Clone, Deserialize, Default)]
#[serde(default)]
pub struct Port {
    #[serde(rename = "IP")]
    pub ip: Option<String>,
    #[serde(rename = "PrivatePort")]
    pub private: u16,
    #[serde(rename = "PublicPort")]
    pub public: Option<u16>,
    #[serde(rename = "Type")]
    pub kind: String,
}

#[derive(Debug, Clone, Deserialize, Default)]
#[serde(default)]
pub struct NetworkSettings {
    #[serde(rename = "Networks")]
    pub networks: Option<BTreeMap<String, Option<Endpoint>>>,
}

/// A container's place on one network.
#[derive(Debug, Clone, Deserialize, Default)]
#[serde(default)]
pub struct Endpoint {
    #[serde(rename = "NetworkID")]
    pub network_id: String,
    #[serde(rename = "IPAddress")]
    pub ip: String,
    #[serde(rename = "GlobalIPv6Address")]
    pub ipv6: String,
}

/// One item of `GET /networks`.
#[derive(Debug, Clone, Deserialize, Default)]
#[serde(default)]
pub struct Network {
    #[serde(rename = "Id")]
    pub id: String,
    #[serde(rename = "Name")]
    pub name: String,
    #[serde(rename = "Scope")]
    pub scope: String,
    #[serde(rename = "Internal")]
    pub internal: bool,
    #[serde(rename = "Ingress")]
    pub ingress: bool,
    #[serde(rename = "Labels")]
    pub labels: Option<BTreeMap<String, String>>,
}

#[derive(Debug, Clone, Deserialize, Default)]
#[serde(default)]
pub struct ListedHostConfig {
    #[serde(rename = "NetworkMode")]
    pub network_mode: String,
}

/// `GET /containers/{id}/json`, the part discovery reads.
#[derive(Debug, Clone, Deserialize, Default)]
#[serde(default)]
pub struct Inspected {
    #[serde(rename = "LogPath")]
    pub log_path: String,
    #[serde(rename = "HostConfig")]
    pub host_config: InspectedHostConfig,
    #[serde(rename = "Config")]
    pub config: InspectedConfig,
    #[serde(rename = "State")]
    pub state: InspectedState,
}

#[derive(Debug, Clone, Deserialize, Default)]
#[serde(default)]
pub struct InspectedState {
    #[serde(rename = "Running")]
    pub running: bool,
}

#[derive(Debug, Clone, Deserialize, Default)]
#[serde(default)]
pub struct InspectedConfig {
    /// A TTY container's log is one raw stream, not multiplexed.
    #[serde(rename = "Tty")]
    pub tty: bool,
}

#[derive(Debug, Clone, Deserialize, Default)]
#[serde(default)]
pub struct InspectedHostConfig {
    #[serde(rename = "LogConfig")]
    pub log_config: LogConfig,
}

#[derive(Debug, Clone, Deserialize, Default)]
#[serde(default)]
pub struct LogConfig {
    #[serde(rename = "Type")]
    pub kind: String,
}

/// One event of `GET /events` (the fields discovery reads).
#[derive(Debug, Clone, Deserialize, Default)]
#[serde(default)]
pub struct Event {
    #[serde(rename = "Type")]
    pub kind: String,
    #[serde(rename = "Action")]
    pub action: String,
}

impl Event {
    /// Whether the container list may have changed (not an exec's or a
    /// health check's event): then it is listed again.
    pub fn changes_containers(&self) -> bool {
        self.kind == "container" && !self.action.starts_with("exec_") && !self.action.starts_with("health_status")
    }
}

/// The Engine's API, on its socket or over the network.
#[derive(Debug, Clone)]
pub struct Engine {
    http: reqwest::Client,
    /// Where requests go: `http://docker` on a socket, else the Engine's URL.
    base: String,
    /// The socket or URL, for messages.
    socket: String,
    /// The `filters` query parameter of the container list (JSON), if any.
    filters: Option<String>,
    auth: Auth,
}

/// The host part of request URLs on a socket: every request goes to the socket anyway.
const BASE: &str = "http://docker";
/// How long connecting to the socket may take.
const CONNECT: Duration = Duration::from_secs(5);
/// How long one list or inspect call may take.
const CALL: Duration = Duration::from_secs(30);

impl Engine {
    /// The Engine of `cfg.host`, listing containers with `cfg.filters` (Engine API filters).
    pub fn new(cfg: &DockerConfig) -> Result<Self, ApiError> {
        let filters = (!cfg.filters.is_empty()).then(|| serde_json::to_string(&cfg.filters).unwrap_or_default());
        match cfg.endpoint().map_err(|m| ApiError::Setting(format!("host: {m}")))? {
            DockerHost::Socket(socket) => {
                let http = crate::client::http::unix_socket_client(&socket, CONNECT)?;
                Ok(Self { http, base: BASE.into(), socket: socket.display().to_string(), filters, auth: Auth::None })
            }
            DockerHost::Url(url) => {
                // Streams stay open: calls get their own timeout.
                let o = Overrides {
                    plain_http: url.starts_with("http://"),
                    timeout: None,
                    http1_only: true,
                    ..Default::default()
                };
                let opts = options(cfg.http(), o);
                let http = crate::client::http::build_client(&opts)?;
                let auth = crate::client::discovery::auth(cfg.http(), opts)?;
                Ok(Self { http, socket: crate::client::http::redact_url(&url), base: url, filters, auth })
            }
        }
    }

    /// A GET of `path` on the Engine, with its auth.
    async fn get(&self, path: &str) -> Result<reqwest::RequestBuilder, ApiError> {
        Ok(self.auth.apply(self.http.get(format!("{}{path}", self.base))).await?)
    }

    async fn get_json<T: serde::de::DeserializeOwned>(
        &self,
        path: &str,
        query: &[(&str, &str)],
    ) -> Result<T, ApiError> {
        let resp = self
            .get(path)
            .await?
            .query(query)
            .timeout(CALL)
            .send()
            .await
            .map_err(|source| ApiError::Unreachable { socket: self.socket.clone(), source })?;
        self.auth.answered_with(Some(resp.status()));
        let (status, body) = crate::client::read::answer(resp, crate::client::read::Cap::Discovery, path).await?;
        let status = status.as_u16();
        if !(200..300).contains(&status) {
            let body = String::from_utf8_lossy(&body).chars().take(300).collect();
            return Err(ApiError::Status { what: path.to_string(), status, body });
        }
        serde_json::from_slice(&body).map_err(|source| ApiError::Decode { what: path.to_string(), source })
    }

    /// Opens a stream (`/events`, a container's logs): no timeout once answered.
    async fn open(&self, path: &str, query: &[(&str, &str)]) -> Result<reqwest::Response, ApiError> {
        let resp = self
            .get(path)
            .await?
            .query(query)
            .send()
            .await
            .map_err(|source| ApiError::Unreachable { socket: self.socket.clone(), source })?;
        self.auth.answered_with(Some(resp.status()));
        let status = resp.status().as_u16();
        if !(200..300).contains(&status) {
            let body = crate::client::read::error_text(resp).await.chars().take(300).collect();
            return Err(ApiError::Status { what: path.to_string(), status, body });
        }
        Ok(resp)
    }

    /// The socket or URL (without credentials), for messages.
    pub fn describe(&self) -> &str {
        &self.socket
    }

    pub async fn info(&self) -> Result<Info, ApiError> {
        self.get_json("/info", &[]).await
    }

    /// Every container the filters select, running or stopped: a stopped
    /// container's log is still read to its end.
    pub async fn containers(&self) -> Result<Vec<Listed>, ApiError> {
        let mut q = vec![("all", "1")];
        if let Some(f) = &self.filters {
            q.push(("filters", f));
        }
        self.get_json("/containers/json", &q).await
    }

    pub async fn inspect(&self, id: &str) -> Result<Inspected, ApiError> {
        self.get_json(&format!("/containers/{id}/json"), &[]).await
    }

    /// A swarm manager's list at `path` (`/services`, `/tasks`, `/nodes`),
    /// with the configured `filters` when `filtered`.
    pub async fn swarm<T: serde::de::DeserializeOwned>(&self, path: &str, filtered: bool) -> Result<T, ApiError> {
        match &self.filters {
            Some(f) if filtered => self.get_json(path, &[("filters", f)]).await,
            _ => self.get_json(path, &[]).await,
        }
    }

    /// Every network, for the `__meta_docker_network_*` labels.
    pub async fn networks(&self) -> Result<Vec<Network>, ApiError> {
        self.get_json("/networks", &[]).await
    }

    /// Opens the stream of container events.
    pub async fn events(&self) -> Result<reqwest::Response, ApiError> {
        self.open("/events", &[("filters", r#"{"type":["container"]}"#)]).await
    }

    /// Opens container `id`'s log, stdout and stderr with their timestamps,
    /// from `since` (`seconds.nanoseconds`; None: from its start), followed
    /// while the container runs when `follow`.
    pub async fn logs(&self, id: &str, since: Option<&str>, follow: bool) -> Result<reqwest::Response, ApiError> {
        let mut q =
            vec![("stdout", "1"), ("stderr", "1"), ("timestamps", "1"), ("follow", if follow { "1" } else { "0" })];
        if let Some(s) = since {
            q.push(("since", s));
        }
        self.open(&format!("/containers/{id}/logs"), &q).await
    }
}

/// Splits the event stream's bytes into events: `buf` keeps an unfinished
/// object for the next chunk. Objects the API may add later are skipped.
pub fn take_events(buf: &mut Vec<u8>, chunk: &[u8]) -> Vec<Event> {
    buf.extend_from_slice(chunk);
    let mut out = Vec::new();
    let mut de = serde_json::Deserializer::from_slice(buf).into_iter::<serde_json::Value>();
    let mut used = 0;
    loop {
        match de.next() {
            Some(Ok(v)) => {
                used = de.byte_offset();
                if let Ok(e) = serde_json::from_value::<Event>(v) {
                    out.push(e);
                }
            }
            Some(Err(e)) if e.is_eof() => break,
            Some(Err(_)) => {
                // Not JSON: drop what was received so far and go on.
                used = buf.len();
                break;
            }
            None => break,
        }
    }
    buf.drain(..used);
    if buf.len() > MAX_EVENT {
        // An event that never ends (an Engine's is a few hundred bytes): dropped, not grown.
        tracing::warn!("a Docker Engine event longer than {} KiB; dropped", MAX_EVENT >> 10);
        buf.clear();
    }
    out
}

/// The longest Docker Engine event kept while its end is awaited.
const MAX_EVENT: usize = 1 << 20;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_are_split_across_chunks() {
        let mut buf = Vec::new();
        let a = br#"{"Type":"container","Action":"start","id":"x"}"#;
        let b = br#"{"Type":"container","Action":"die"}"#;
        let mut all = a.to_vec();
        all.push(b'\n');
        all.extend_from_slice(b);
        all.push(b'\n');
        let (first, second) = all.split_at(a.len() + 10);
        let got = take_events(&mut buf, first);
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].action, "start");
        let got = take_events(&mut buf, second);
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].action, "die");
        assert!(buf.iter().all(|b| b.is_ascii_whitespace()));
    }
}
