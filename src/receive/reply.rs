//! Plain-text answers shared by the store's API and its webhook endpoint.

use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};

/// A plain-text response: `msg` and a newline.
pub(crate) fn text(status: StatusCode, msg: impl Into<String>) -> Response {
    let mut msg = msg.into();
    msg.push('\n');
    (status, [(header::CONTENT_TYPE, "text/plain; charset=utf-8")], msg).into_response()
}
