//! A pull subscription (`gcplog.subscription_type = "pull"`, the default):
//! messages are asked of the Pub/Sub API (`POST /v1/projects/P/subscriptions/S:pull`),
//! written to the spool, and only then acknowledged (`:acknowledge`). A
//! message whose acknowledgement is lost is delivered again by Pub/Sub; one
//! already spooled by this run (its message id seen) is acknowledged again,
//! not spooled twice.
//!
//! Credentials are Google's Application Default Credentials (the `gcp_auth`
//! crate): `GOOGLE_APPLICATION_CREDENTIALS`, gcloud's, or the metadata
//! server; none with `PUBSUB_EMULATOR_HOST`. A failing API, missing
//! credentials or a full spool hold the messages in Pub/Sub: pulls are tried
//! again with backoff (1 s to 10 s, as Promtail's), the failure said once.

use std::collections::{HashSet, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use backon::BackoffBuilder;
use base64::Engine;
use serde::Deserialize;
use tokio_util::sync::CancellationToken;

use super::{label_name, Translator};
use crate::client::http::{self, ClientOptions, HttpError};
use crate::source::net::metrics::NetMetrics;
use crate::spool::{SourceSpool, SpoolError};

/// The OAuth scope of the Pub/Sub API.
const SCOPE: &str = "https://www.googleapis.com/auth/pubsub";

/// Message ids remembered as spooled (a redelivery of one is acknowledged, not spooled).
const REMEMBERED: usize = 100_000;

#[derive(Debug, thiserror::Error)]
pub enum PullError {
    #[error("no Google credentials: {0}")]
    Credentials(String),
    #[error(transparent)]
    Http(#[from] HttpError),
    #[error("the Pub/Sub API's answer does not read: {0}")]
    Answer(String),
    #[error("cannot spool the messages: {0}")]
    Spool(#[from] SpoolError),
    #[error("stopped")]
    Stopped,
}

#[derive(Debug, Deserialize)]
struct Pulled {
    #[serde(default, rename = "receivedMessages")]
    received: Vec<Received>,
}

#[derive(Debug, Deserialize)]
struct Received {
    #[serde(rename = "ackId")]
    ack_id: String,
    message: Message,
}

#[derive(Debug, Deserialize)]
struct Message {
    #[serde(default)]
    data: String,
    #[serde(default)]
    attributes: std::collections::BTreeMap<String, String>,
    #[serde(default, rename = "messageId")]
    message_id: String,
}

/// Pulls one subscription into a source's spool.
pub struct Puller {
    pub translator: Translator,
    pub spool: Arc<SourceSpool>,
    pub tenant: Option<String>,
    http: reqwest::Client,
    base: String,
    emulator: bool,
    subscription: String,
    max_messages: u32,
    credentials: Option<Arc<dyn gcp_auth::TokenProvider>>,
    seen: Recent,
}

impl Puller {
    pub fn new(
        translator: Translator,
        spool: Arc<SourceSpool>,
        config: &crate::config::SourceConfig,
    ) -> Result<Self, HttpError> {
        let g = config.gcplog.clone().unwrap_or_default();
        let (api, emulator) = g.api();
        let opts = ClientOptions {
            timeout: Some(Duration::from_secs(90)),
            plain_http: http::is_plain_http(&api),
            ..Default::default()
        };
        Ok(Self {
            translator,
            spool,
            tenant: config.tenant_id.clone(),
            http: http::build_client(&opts)?,
            subscription: format!("{api}/v1/projects/{}/subscriptions/{}", g.project_id, g.subscription),
            base: api,
            emulator,
            max_messages: g.max_messages,
            credentials: None,
            seen: Recent::default(),
        })
    }

    /// Pulls until `stop`; failures are retried with backoff.
    pub async fn run(mut self, stop: CancellationToken) {
        let name = self.translator.name.clone();
        let backoff = || {
            backon::ExponentialBuilder::default()
                .with_min_delay(Duration::from_secs(1))
                .with_max_delay(Duration::from_secs(10))
                .without_max_times()
                .with_jitter()
                .build()
        };
        let mut delays = backoff();
        let mut failing = false;
        tracing::info!(source = %name, subscription = %http::redact_url(&self.subscription), api = %self.base, "pulling");
        while !stop.is_cancelled() {
            let wait = match self.pull_once(&stop).await {
                Ok(n) => {
                    if failing {
                        tracing::info!(source = %name, "pulls succeed again");
                    }
                    failing = false;
                    delays = backoff();
                    // An empty answer (an emulator answers at once): ask again soon.
                    if n == 0 {
                        Duration::from_millis(500)
                    } else {
                        Duration::ZERO
                    }
                }
                Err(PullError::Stopped) => break,
                Err(e) => {
                    let wait = delays.next().unwrap_or(Duration::from_secs(10));
                    if !failing {
                        tracing::warn!(source = %name, error = %e, retry_in = ?wait, "cannot pull; the messages wait in Pub/Sub");
                    } else {
                        tracing::debug!(source = %name, error = %e, "pull failed again");
                    }
                    NetMetrics::get().refused.with_label_values(&[&name, "pull_failed"]).inc();
                    failing = true;
                    wait
                }
            };
            if !wait.is_zero() {
                tokio::select! {
                    _ = tokio::time::sleep(wait) => {}
                    _ = stop.cancelled() => break,
                }
            }
        }
    }

    /// One pull: spooled and acknowledged; the number of messages.
    async fn pull_once(&mut self, stop: &CancellationToken) -> Result<usize, PullError> {
        let body = serde_json::json!({ "maxMessages": self.max_messages });
        let pulled: Pulled = {
            let url = format!("{}:pull", self.subscription);
            let rb = self.authorize(self.http.post(&url).json(&body)).await?;
            let resp = tokio::select! {
                r = http::send(rb, &url) => r?,
                _ = stop.cancelled() => return Err(PullError::Stopped),
            };
            // A page of messages: a larger one is an error naming its size (lower `max_messages`).
            let bytes = crate::client::read::body(resp, crate::client::read::Cap::QueryPage, &url).await?;
            serde_json::from_slice(&bytes).map_err(|e| PullError::Answer(e.to_string()))?
        };
        if pulled.received.is_empty() {
            return Ok(0);
        }
        let (mut out, mut lines, mut ack, mut fresh) = (Vec::new(), 0u64, Vec::new(), Vec::new());
        let subscription = self.subscription.rsplit('/').next().unwrap_or_default().to_string();
        for r in pulled.received {
            ack.push(r.ack_id);
            if self.seen.contains(&r.message.message_id) {
                continue;
            }
            let data = match base64::engine::general_purpose::STANDARD.decode(r.message.data.trim()) {
                Ok(d) => d,
                Err(_) => r.message.data.into_bytes(),
            };
            let mut extra = vec![
                ("__gcp_message_id".to_string(), r.message.message_id.clone()),
                ("__gcp_subscription_name".to_string(), subscription.clone()),
            ];
            for (k, v) in r.message.attributes {
                extra.push((format!("__gcp_attributes_{}", label_name(&k)), v));
            }
            if self.translator.append(&data, extra, self.tenant.as_deref(), &mut out) {
                lines += 1;
            } else {
                NetMetrics::get().refused.with_label_values(&[&self.translator.name, "relabel_drop"]).inc();
            }
            fresh.push(r.message.message_id);
        }
        let n = ack.len();
        if !out.is_empty() {
            self.spool_all(out, stop).await?;
            NetMetrics::get().received.with_label_values(&[&self.translator.name]).inc_by(lines);
        }
        for id in fresh {
            self.seen.insert(id);
        }
        let url = format!("{}:acknowledge", self.subscription);
        let rb = self.authorize(self.http.post(&url).json(&serde_json::json!({ "ackIds": ack }))).await?;
        http::send(rb, &url).await?;
        Ok(n)
    }

    /// Appends `out` to the spool, waiting while it is full.
    async fn spool_all(&self, out: Vec<u8>, stop: &CancellationToken) -> Result<(), PullError> {
        let mut said = false;
        loop {
            match self.spool.append(out.clone()).await {
                Ok(()) => return Ok(()),
                Err(SpoolError::Full { .. }) => {
                    if !said {
                        tracing::warn!(source = %self.translator.name, "spool full; pulled messages wait, unacknowledged");
                        said = true;
                    }
                    NetMetrics::get().refused.with_label_values(&[&self.translator.name, "spool_full"]).inc();
                    tokio::select! {
                        _ = tokio::time::sleep(Duration::from_secs(1)) => {}
                        _ = stop.cancelled() => return Err(PullError::Stopped),
                    }
                }
                Err(e) => return Err(e.into()),
            }
        }
    }

    /// `rb` with a bearer token of the Application Default Credentials (none for an emulator).
    async fn authorize(&mut self, rb: reqwest::RequestBuilder) -> Result<reqwest::RequestBuilder, PullError> {
        if self.emulator {
            return Ok(rb);
        }
        let provider = match &self.credentials {
            Some(p) => p.clone(),
            None => {
                let p = gcp_auth::provider().await.map_err(|e| PullError::Credentials(e.to_string()))?;
                self.credentials = Some(p.clone());
                p
            }
        };
        let token = provider.token(&[SCOPE]).await.map_err(|e| PullError::Credentials(e.to_string()))?;
        crate::util::secrets::remember(token.as_str());
        Ok(rb.bearer_auth(token.as_str()))
    }
}

/// The ids of the last [`REMEMBERED`] messages spooled.
#[derive(Default)]
struct Recent {
    order: VecDeque<String>,
    set: HashSet<String>,
}

impl Recent {
    fn contains(&self, id: &str) -> bool {
        !id.is_empty() && self.set.contains(id)
    }

    fn insert(&mut self, id: String) {
        if id.is_empty() || !self.set.insert(id.clone()) {
            return;
        }
        self.order.push_back(id);
        if self.order.len() > REMEMBERED {
            if let Some(old) = self.order.pop_front() {
                self.set.remove(&old);
            }
        }
    }
}
