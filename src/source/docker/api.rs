//! The few Docker Engine API calls discovery needs, over the Engine's Unix
//! socket: `GET /info` (where the Engine keeps its data), `GET
//! /containers/json` (the list, with `filters`), `GET /containers/{id}/json`
//! (a container's log path and log driver) and `GET /events` (a stream of
//! JSON objects, one per event).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

/// A failed Engine API call.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error("cannot reach the Docker Engine at {socket}: {source}")]
    Unreachable { socket: String, source: reqwest::Error },
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
    #[serde(rename = "Image")]
    pub image: String,
    #[serde(rename = "Labels")]
    pub labels: Option<BTreeMap<String, String>>,
    #[serde(rename = "HostConfig")]
    pub host_config: ListedHostConfig,
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

/// The Engine's API on its socket.
#[derive(Debug, Clone)]
pub struct Engine {
    http: reqwest::Client,
    socket: String,
    /// The `filters` query parameter of the container list (JSON), if any.
    filters: Option<String>,
}

/// The host part of request URLs: every request goes to the socket anyway.
const BASE: &str = "http://docker";
/// How long connecting to the socket may take.
const CONNECT: Duration = Duration::from_secs(5);
/// How long one list or inspect call may take.
const CALL: Duration = Duration::from_secs(30);

impl Engine {
    /// The Engine at `socket`, listing containers with `filters` (Engine API filters).
    pub fn new(socket: &Path, filters: &BTreeMap<String, Vec<String>>) -> Result<Self, ApiError> {
        let http = crate::client::http::unix_socket_client(socket, CONNECT)?;
        let filters = (!filters.is_empty()).then(|| serde_json::to_string(filters).unwrap_or_default());
        Ok(Self { http, socket: socket.display().to_string(), filters })
    }

    async fn get_json<T: serde::de::DeserializeOwned>(
        &self,
        path: &str,
        query: &[(&str, &str)],
    ) -> Result<T, ApiError> {
        let resp = self
            .http
            .get(format!("{BASE}{path}"))
            .query(query)
            .timeout(CALL)
            .send()
            .await
            .map_err(|source| ApiError::Unreachable { socket: self.socket.clone(), source })?;
        let status = resp.status().as_u16();
        let body =
            resp.bytes().await.map_err(|source| ApiError::Unreachable { socket: self.socket.clone(), source })?;
        if !(200..300).contains(&status) {
            let body = String::from_utf8_lossy(&body).chars().take(300).collect();
            return Err(ApiError::Status { what: path.to_string(), status, body });
        }
        serde_json::from_slice(&body).map_err(|source| ApiError::Decode { what: path.to_string(), source })
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

    /// Opens the stream of container events.
    pub async fn events(&self) -> Result<reqwest::Response, ApiError> {
        let resp = self
            .http
            .get(format!("{BASE}/events"))
            .query(&[("filters", r#"{"type":["container"]}"#)])
            .send()
            .await
            .map_err(|source| ApiError::Unreachable { socket: self.socket.clone(), source })?;
        let status = resp.status().as_u16();
        if !(200..300).contains(&status) {
            let body = resp.text().await.unwrap_or_default().chars().take(300).collect();
            return Err(ApiError::Status { what: "/events".into(), status, body });
        }
        Ok(resp)
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
    out
}

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
