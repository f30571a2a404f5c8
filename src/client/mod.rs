//! Clients of the log service: the shared HTTP layer (`http`), the push
//! encoder and sender (`push`), JSON escaping (`json`), retries and backoff
//! (`retry`), the query client (`query`), looking pushes up before sending
//! them again (`lookup`), and TLS checked against a chosen name (`tls`).

pub mod http;
pub mod json;
pub mod lookup;
pub mod push;
pub mod query;
pub mod retry;
pub mod tls;
