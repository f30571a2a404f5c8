//! Answers read to a cap fixed per use, so that no service (or anything in
//! between) can make the agent grow past its bound: an endless or huge body
//! ends the read with [`HttpError::TooLarge`], and an error body is kept to
//! its first KiB, the rest left unread and the connection dropped.
//!
//! Every body the agent reads comes through here (`tests/layers.rs` fails on
//! a read of a whole body anywhere else).

use bytes::{Bytes, BytesMut};

use super::http::{redact_url, HttpError};

/// How much of an answer a use may read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cap {
    /// A page of a query, labels or series (the query commands, the reconcile lookup).
    QueryPage,
    /// A discovery's answer (a list of targets, instances, services).
    Discovery,
    /// A small document: a token, credentials, a management API's answer.
    Small,
    /// An alert webhook's or a probe's answer: read only to be dropped.
    Ignored,
    /// An agent's `/status.json` (`tailship top`): a few hundred KiB at most
    /// (200 files done, every file followed); an endless body once grew `top` to 323 MB.
    Status,
}

impl Cap {
    /// The cap in bytes.
    pub const fn bytes(self) -> usize {
        match self {
            Self::QueryPage => 64 << 20,
            Self::Discovery => 64 << 20,
            Self::Small => 4 << 20,
            Self::Ignored => 64 << 10,
            Self::Status => 16 << 20,
        }
    }
}

/// The largest part of an error body read (kept for messages, scrubbed,
/// then cut to what a message shows).
pub const ERROR_READ: usize = 8 << 10;

/// The whole body of `resp`, at most `cap`; `url` names the request in errors.
pub async fn body(mut resp: reqwest::Response, cap: Cap, url: &str) -> Result<Bytes, HttpError> {
    let max = cap.bytes();
    let too_large = || HttpError::TooLarge { url: redact_url(url), cap: max };
    if resp.content_length().is_some_and(|n| n > max as u64) {
        return Err(too_large());
    }
    let mut out = BytesMut::with_capacity(resp.content_length().map_or(0, |n| n as usize));
    while let Some(chunk) = resp.chunk().await.map_err(|e| HttpError::transport(url, &e))? {
        if out.len() + chunk.len() > max {
            return Err(too_large());
        }
        out.extend_from_slice(&chunk);
    }
    Ok(out.freeze())
}

/// The body as text (invalid UTF-8 replaced), at most `cap`.
pub async fn text(resp: reqwest::Response, cap: Cap, url: &str) -> Result<String, HttpError> {
    let bytes = body(resp, cap, url).await?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// The body as JSON of type `T`, at most `cap`.
pub async fn json<T: serde::de::DeserializeOwned>(
    resp: reqwest::Response,
    cap: Cap,
    url: &str,
) -> Result<T, HttpError> {
    let bytes = body(resp, cap, url).await?;
    serde_json::from_slice(&bytes).map_err(|e| HttpError::Decode { url: redact_url(url), message: e.to_string() })
}

/// The first [`ERROR_READ`] bytes of an error answer, as text; the rest is
/// never read (dropping the answer closes its connection). A body that
/// fails midway gives what came.
pub async fn error_text(mut resp: reqwest::Response) -> String {
    let mut out = Vec::new();
    while out.len() < ERROR_READ {
        match resp.chunk().await {
            Ok(Some(chunk)) => {
                let take = chunk.len().min(ERROR_READ - out.len());
                out.extend_from_slice(&chunk[..take]);
            }
            Ok(None) | Err(_) => break,
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Reads an answer that is not wanted (a webhook's, a probe's) to at most
/// [`Cap::Ignored`], so that its connection may be reused; a longer one is
/// dropped unread.
pub async fn discard(mut resp: reqwest::Response) {
    let mut left = Cap::Ignored.bytes();
    while let Ok(Some(chunk)) = resp.chunk().await {
        if chunk.len() >= left {
            return;
        }
        left -= chunk.len();
    }
}

/// A stream of chunks (an event or watch stream, a page served in pieces):
/// each call gives the next chunk; the caller bounds what it keeps of them.
pub async fn next_chunk(resp: &mut reqwest::Response, url: &str) -> Result<Option<Bytes>, HttpError> {
    resp.chunk().await.map_err(|e| HttpError::transport(url, &e))
}

/// The status and body of an answer: the whole body (at most `cap`) of a
/// 2xx, the first [`ERROR_READ`] bytes of any other (for its message).
pub async fn answer(resp: reqwest::Response, cap: Cap, url: &str) -> Result<(reqwest::StatusCode, Bytes), HttpError> {
    let status = resp.status();
    if status.is_success() {
        Ok((status, body(resp, cap, url).await?))
    } else {
        Ok((status, Bytes::from(error_text(resp).await)))
    }
}
