//! Clients of the log service: the shared HTTP layer (`http`), credentials (`auth`), push
//! bodies encoded as they are sent (`body`), the push encoder and sender (`push`), JSON escaping (`json`), retries and backoff
//! (`retry`), push slots given back while a 429 is waited out (`slot`), the query client (`query`), looking pushes up before sending
//! them again (`lookup`), TLS checked against a chosen name (`tls`),
//! OAuth 2.0 tokens (`oauth2`), what a redirect may do (`redirect`), answers read to a
//! cap per use (`read`), the Docker Engine API (`docker`, for the Docker discoveries and
//! the docker source) and the backoff of calls that find a service down (`backoff`).
//!
//! Not here: the cloud management and admin API clients (`crate::cloud`,
//! `crate::admin`, over this HTTP layer) and the query language
//! (`crate::logql`).

pub mod auth;
pub mod aws;
pub mod backoff;
pub mod body;
pub mod discovery;
pub mod docker;
mod gzip;
pub mod http;
pub mod json;
pub mod lookup;
pub mod oauth2;
pub mod prefix;
pub mod push;
pub mod query;
pub mod read;
pub mod redirect;
mod refusal;
pub mod retry;
pub mod slot;
pub mod tls;
