//! Per-source processing of lines: UTF-8 repair, truncation, the configured
//! stages (regex, json, logfmt, drop, timestamp, output, replace, cri, docker,
//! limit) and labels, resolved to an interned stream (see [`crate::queue`] for
//! streams and the chunks lines travel in).

mod parse;
mod stage;
mod stages;
mod timestamp;

pub use parse::JsonPath;
pub use stage::{Op, Stage};
pub use stages::{pod_labels, FileContext, Processed, SourceStages};
pub use timestamp::TimeFormat;
