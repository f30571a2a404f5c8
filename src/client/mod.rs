//! Clients of the log service: the shared HTTP layer (`http`), the push
//! encoder and sender (`push`), JSON escaping (`json`), retries and backoff
//! (`retry`), the query client (`query`), and looking
//! pushes up before sending them again (`lookup`).

pub mod http;
pub mod json;
pub mod lookup;
pub mod push;
pub mod query;
pub mod retry;
