//! What the HTTP receivers (`loki_push`, `otlp`) share: auth, bodies
//! (gzip, size limit), and answers once the lines are spooled: 204 when on
//! disk, 429 with `Retry-After` when the spool is full, 500 when it cannot
//! be written, as Loki answers.

use std::io::Read;
use std::sync::Arc;

use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use base64::Engine;

use super::metrics::NetMetrics;
use crate::config::SourceConfig;
use crate::spool::{SourceSpool, SpoolError};

/// Seconds a sender is asked to wait when the spool is full.
const RETRY_AFTER_SECS: &str = "1";

/// A refusal already answered (boxed: a response is large).
pub type Refusal = Box<Response>;

/// What senders must present.
#[derive(Debug, Clone)]
pub enum Auth {
    Open,
    /// The whole `Authorization` value expected.
    Exact(String),
}

/// One HTTP receiver's state.
#[derive(Debug)]
pub struct HttpReceiver {
    pub name: Arc<str>,
    pub spool: Arc<SourceSpool>,
    pub auth: Auth,
    pub max_body: usize,
    /// `tenant_id` of the source: replaces the sender's.
    pub tenant: Option<String>,
    /// A body not received whole within this is refused (408).
    pub idle: std::time::Duration,
}

impl HttpReceiver {
    pub fn new(name: Arc<str>, src: &SourceConfig, spool: Arc<SourceSpool>) -> anyhow::Result<Self> {
        let r = src.receiver.clone().unwrap_or_default();
        let auth = if let Some(b) = &r.basic_auth {
            let password = crate::util::read_secret_file(&b.password_file)?;
            let pair = format!("{}:{}", b.username, password.expose());
            Auth::Exact(format!("Basic {}", base64::engine::general_purpose::STANDARD.encode(pair)))
        } else if let Some(p) = &r.bearer_token_file {
            Auth::Exact(format!("Bearer {}", crate::util::read_secret_file(p)?.expose()))
        } else {
            Auth::Open
        };
        Ok(Self {
            name,
            spool,
            auth,
            max_body: r.max_message_bytes.get() as usize,
            tenant: src.tenant_id.clone(),
            idle: r.idle_timeout.get(),
        })
    }

    /// 401 unless the request carries the credentials asked for.
    /// A request's credentials checked, its tenant and its body read (what
    /// every HTTP receiver does first): (tenant, body), or the refusal to answer.
    pub async fn accept(
        &self,
        headers: &HeaderMap,
        body: axum::body::Body,
    ) -> Result<(Option<String>, Vec<u8>), Refusal> {
        self.authorize(headers)?;
        let tenant = self.tenant(headers)?;
        Ok((tenant, self.read(headers, body).await?))
    }

    pub fn authorize(&self, headers: &HeaderMap) -> Result<(), Refusal> {
        let Auth::Exact(want) = &self.auth else { return Ok(()) };
        let got = headers.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok()).unwrap_or("");
        // Compared in constant time: the length is no secret, the content is.
        let same = got.len() == want.len() && got.bytes().zip(want.bytes()).fold(0u8, |d, (a, b)| d | (a ^ b)) == 0;
        if same {
            Ok(())
        } else {
            Err(self.refusal(StatusCode::UNAUTHORIZED, "unauthorized", "authentication required"))
        }
    }

    /// The tenant of a request's lines: the source's, else the sender's `X-Scope-OrgID`.
    pub fn tenant(&self, headers: &HeaderMap) -> Result<Option<String>, Refusal> {
        if let Some(t) = &self.tenant {
            return Ok(Some(t.clone()));
        }
        match headers.get("x-scope-orgid").map(|v| v.to_str().map(str::trim)) {
            None => Ok(None),
            Some(Ok("")) => Ok(None),
            Some(Ok(t)) if !t.contains('|') => Ok(Some(t.to_string())),
            Some(_) => Err(self.refusal(StatusCode::BAD_REQUEST, "bad_request", "X-Scope-OrgID must be one tenant")),
        }
    }

    /// Reads a request's body (at most `max_message_bytes`, within
    /// `idle_timeout`: a sender trickling it is refused with 408), then [`Self::body`].
    pub async fn read(&self, headers: &HeaderMap, body: axum::body::Body) -> Result<Vec<u8>, Refusal> {
        match tokio::time::timeout(self.idle, axum::body::to_bytes(body, self.max_body)).await {
            Ok(Ok(bytes)) => self.body(headers, &bytes),
            Ok(Err(e)) if e.to_string().contains("length limit") => Err(self.refusal(
                StatusCode::PAYLOAD_TOO_LARGE,
                "too_large",
                &format!("body over {} bytes (receiver.max_message_bytes)", self.max_body),
            )),
            Ok(Err(e)) => {
                Err(self.refusal(StatusCode::BAD_REQUEST, "bad_request", &format!("cannot read the body: {e}")))
            }
            Err(_) => Err(self.refusal(
                StatusCode::REQUEST_TIMEOUT,
                "timeout",
                "the body did not arrive within receiver.idle_timeout",
            )),
        }
    }

    /// The body, gunzipped when `Content-Encoding: gzip` (bounded by `max_message_bytes`).
    pub fn body(&self, headers: &HeaderMap, body: &[u8]) -> Result<Vec<u8>, Refusal> {
        let enc = headers.get(header::CONTENT_ENCODING).and_then(|v| v.to_str().ok()).unwrap_or("").trim();
        match enc.to_ascii_lowercase().as_str() {
            "" | "identity" => Ok(body.to_vec()),
            "gzip" => {
                let mut out = Vec::new();
                let mut r = flate2::read::GzDecoder::new(body).take(self.max_body as u64 + 1);
                if let Err(e) = r.read_to_end(&mut out) {
                    return Err(self.refusal(StatusCode::BAD_REQUEST, "bad_request", &format!("bad gzip body: {e}")));
                }
                if out.len() > self.max_body {
                    return Err(self.refusal(
                        StatusCode::PAYLOAD_TOO_LARGE,
                        "too_large",
                        "body too large once gunzipped",
                    ));
                }
                Ok(out)
            }
            other => Err(self.refusal(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "bad_request",
                &format!("unsupported Content-Encoding {other:?}"),
            )),
        }
    }

    /// Writes encoded records (`lines` of them) to the spool and answers.
    pub async fn spool(&self, encoded: Vec<u8>, lines: u64, ok: StatusCode) -> Response {
        if lines == 0 {
            return ok.into_response();
        }
        match self.spool.append(encoded).await {
            Ok(()) => {
                NetMetrics::get().received.with_label_values(&[&self.name]).inc_by(lines);
                ok.into_response()
            }
            Err(SpoolError::Full { .. }) => {
                NetMetrics::get().refused.with_label_values(&[&self.name, "spool_full"]).inc();
                (StatusCode::TOO_MANY_REQUESTS, [(header::RETRY_AFTER, RETRY_AFTER_SECS)], "spool full, retry later\n")
                    .into_response()
            }
            Err(e @ SpoolError::TooLarge { .. }) => {
                self.refuse(StatusCode::PAYLOAD_TOO_LARGE, "too_large", &format!("{e}; send smaller requests"))
            }
            Err(e) => {
                NetMetrics::get().refused.with_label_values(&[&self.name, "spool_error"]).inc();
                tracing::error!(source = %self.name, error = %e, "cannot spool received lines; the sender is told to retry");
                (StatusCode::INTERNAL_SERVER_ERROR, "cannot write the spool\n").into_response()
            }
        }
    }

    fn refusal(&self, status: StatusCode, reason: &str, message: &str) -> Refusal {
        Box::new(self.refuse(status, reason, message))
    }

    /// A refusal, counted under `reason`, with `message` as its body.
    pub fn refuse(&self, status: StatusCode, reason: &str, message: &str) -> Response {
        NetMetrics::get().refused.with_label_values(&[&self.name, reason]).inc();
        (status, format!("{message}\n")).into_response()
    }
}
