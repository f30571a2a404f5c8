//! Clients of the log service: the shared HTTP layer (`http`), the push
//! encoder and sender (`push`), and the query client (`query`).

pub mod http;
pub mod push;
pub mod query;
