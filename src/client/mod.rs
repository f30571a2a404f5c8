//! Clients of the log service: the shared HTTP layer (`http`), the push
//! encoder and sender (`push`), JSON escaping (`json`), retries and backoff
//! (`retry`), and the query client (`query`).

pub mod http;
pub mod json;
pub mod push;
pub mod query;
pub mod retry;
