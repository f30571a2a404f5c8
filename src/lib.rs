//! tailship: a log shipping and tailing agent.
//!
//! The binary (`src/main.rs`) only parses arguments and dispatches; every
//! command is a function over the modules below. See `DESIGN.md` for the data
//! flow: sources -> stages -> bounded queue -> batcher -> push client, with
//! file positions advancing only after the service acknowledged a batch.

pub mod admin;
pub mod agent;
pub mod alert;
pub mod batch;
pub mod cli;
pub mod client;
pub mod cloud;
pub mod commands;
pub mod config;
pub mod logging;
pub mod logql;
pub mod metrics;
pub mod pipeline;
pub mod plan;
pub mod pool;
pub mod positions;
pub mod queue;
pub mod receive;
pub mod shutdown;
pub mod source;
pub mod systemd;
pub mod util;
