//! What the HTTP receivers (`loki_push`, `otlp`, `heroku_drain`, `gcplog`)
//! share: auth, the tenant checked as the service checks it, bodies (gzip,
//! size limit, a time limit, every byte held taken from the receiver's
//! budget), and answers once the lines are spooled: 204 when on disk, 429
//! with `Retry-After` when the spool or the budget is full, 500 when it
//! cannot be written, as Loki answers.

use std::io::Read;
use std::sync::Arc;

use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use base64::Engine;

use http_body_util::BodyExt;

use super::budget::{Budget, Held};
use super::metrics::NetMetrics;
use crate::config::SourceConfig;
use crate::spool::{SourceSpool, SpoolError, Stamps};

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
    pub request_timeout: std::time::Duration,
    /// What requests in progress hold in memory, together.
    pub budget: Arc<Budget>,
    /// Each stream's last timestamp (equal ones are made distinct).
    pub stamps: Stamps,
    /// `receiver.use_incoming_timestamp`: keep each pushed line's time
    /// (else the time its request was received).
    pub incoming_time: bool,
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
            budget: Budget::new(&name, r.max_pending_bytes.get() as usize),
            name,
            spool,
            auth,
            max_body: r.message_bytes(src.kind) as usize,
            tenant: src.tenant_id.clone(),
            request_timeout: r.request_timeout.get(),
            stamps: Stamps::new(),
            incoming_time: r.use_incoming_timestamp,
        })
    }

    /// The most spool bytes one request may become: four times the largest
    /// body (labels are written once per stream, so real requests come to
    /// about their own size), within what one spool write may hold.
    pub fn expand_limit(&self) -> usize {
        (self.max_body.saturating_mul(4)).min(self.spool.max_append() as usize)
    }

    /// A request's credentials checked, its tenant and its body read (what
    /// every HTTP receiver does first): (tenant, body, the bytes it holds of
    /// the budget), or the refusal to answer.
    pub async fn accept(
        &self,
        headers: &HeaderMap,
        body: axum::body::Body,
    ) -> Result<(Option<String>, Vec<u8>, Held), Refusal> {
        self.authorize(headers)?;
        let tenant = self.tenant(headers)?;
        let mut held = self.budget.hold();
        let body = self.read(headers, body, &mut held).await?;
        Ok((tenant, body, held))
    }

    /// 401 unless the request carries the credentials asked for.
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

    /// The tenant of a request's lines: the source's, else the sender's
    /// `X-Scope-OrgID`, refused (400) when the service would refuse it.
    pub fn tenant(&self, headers: &HeaderMap) -> Result<Option<String>, Refusal> {
        if let Some(t) = &self.tenant {
            return Ok(Some(t.clone()));
        }
        match headers.get("x-scope-orgid").map(|v| v.to_str().map(str::trim)) {
            None => Ok(None),
            Some(Ok("")) => Ok(None),
            Some(Ok(t)) if t.contains('|') => {
                Err(self.refusal(StatusCode::BAD_REQUEST, "bad_tenant", "X-Scope-OrgID must be one tenant"))
            }
            Some(Ok(t)) => match crate::util::tenant_problem(t) {
                None => Ok(Some(t.to_string())),
                Some(why) => Err(self.refusal(StatusCode::BAD_REQUEST, "bad_tenant", &format!("X-Scope-OrgID: {why}"))),
            },
            Some(Err(_)) => Err(self.refusal(
                StatusCode::BAD_REQUEST,
                "bad_tenant",
                "X-Scope-OrgID: a tenant ID has only the characters a-z A-Z 0-9 ! . _ * ' ( ) -",
            )),
        }
    }

    /// 429 with `Retry-After`: the receiver holds as much as its budget allows.
    pub fn busy(&self) -> Response {
        NetMetrics::get().refused.with_label_values(&[&self.name, "pending_limit"]).inc();
        (
            StatusCode::TOO_MANY_REQUESTS,
            [(header::RETRY_AFTER, RETRY_AFTER_SECS)],
            format!(
                "the receiver holds {} bytes of requests in progress (receiver.max_pending_bytes = {}); retry later\n",
                self.budget.used(),
                self.budget.max()
            ),
        )
            .into_response()
    }

    /// Reads a request's body (at most `max_message_bytes`, within
    /// `request_timeout`: a sender trickling it is refused with 408), each
    /// piece taken from the budget as it arrives, then [`Self::body`].
    pub async fn read(&self, headers: &HeaderMap, body: axum::body::Body, held: &mut Held) -> Result<Vec<u8>, Refusal> {
        let too_large = || {
            self.refusal(
                StatusCode::PAYLOAD_TOO_LARGE,
                "too_large",
                &format!("body over {} bytes (receiver.max_message_bytes)", self.max_body),
            )
        };
        let declared = headers.get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()?.parse::<usize>().ok());
        if declared.is_some_and(|n| n > self.max_body) {
            return Err(too_large());
        }
        let read = async {
            let mut body = body;
            let mut out = Vec::with_capacity(declared.unwrap_or(0));
            if !held.grow(out.capacity()) {
                return Err(Box::new(self.busy()));
            }
            while let Some(frame) = body.frame().await {
                let frame = frame.map_err(|e| {
                    self.refusal(StatusCode::BAD_REQUEST, "bad_request", &format!("cannot read the body: {e}"))
                })?;
                let Ok(data) = frame.into_data() else { continue };
                if out.len() + data.len() > self.max_body {
                    return Err(too_large());
                }
                if out.len() + data.len() > held.bytes() && !held.set(out.len() + data.len()) {
                    return Err(Box::new(self.busy()));
                }
                out.extend_from_slice(&data);
            }
            Ok(out)
        };
        let bytes = match tokio::time::timeout(self.request_timeout, read).await {
            Ok(r) => r?,
            Err(_) => {
                return Err(self.refusal(
                    StatusCode::REQUEST_TIMEOUT,
                    "timeout",
                    "the body did not arrive within receiver.request_timeout",
                ))
            }
        };
        self.body(headers, bytes, held)
    }

    /// The body, gunzipped when `Content-Encoding: gzip` (bounded by
    /// `max_message_bytes`, what it decompresses to taken from the budget).
    pub fn body(&self, headers: &HeaderMap, body: Vec<u8>, held: &mut Held) -> Result<Vec<u8>, Refusal> {
        let enc = headers.get(header::CONTENT_ENCODING).and_then(|v| v.to_str().ok()).unwrap_or("").trim();
        match enc.to_ascii_lowercase().as_str() {
            "" | "identity" => Ok(body),
            "gzip" => {
                let mut out = Vec::new();
                let mut r = flate2::read::GzDecoder::new(body.as_slice()).take(self.max_body as u64 + 1);
                if let Err(e) = r.read_to_end(&mut out) {
                    return Err(self.refusal(StatusCode::BAD_REQUEST, "bad_request", &format!("bad gzip body: {e}")));
                }
                if out.len() > self.max_body {
                    return Err(self.refusal(
                        StatusCode::PAYLOAD_TOO_LARGE,
                        "too_large",
                        &format!("body over {} bytes once gunzipped (receiver.max_message_bytes)", self.max_body),
                    ));
                }
                if !held.set(out.len()) {
                    return Err(Box::new(self.busy()));
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
