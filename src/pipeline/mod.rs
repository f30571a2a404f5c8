//! Per-source processing of lines: UTF-8 repair, truncation, the configured
//! stages (regex, drop, timestamp) and labels, resolved to an interned stream
//! (see [`crate::queue`] for streams and the chunks lines travel in).

mod stages;
mod timestamp;

pub use stages::{FileContext, Processed, SourceStages, Stage};
pub use timestamp::TimeFormat;
