//! Per-source processing of lines: UTF-8 repair, truncation, the configured
//! stages (regex, json, logfmt, drop, timestamp, output, replace, cri, docker,
//! limit, tenant, labels, match, template) over each line's extracted map (`line.rs`), and
//! labels, resolved to an interned stream (see [`crate::queue`] for streams
//! and the chunks lines travel in).
//!
//! Not here: compiling the stages from the config (`crate::plan`), reading
//! lines (`crate::source`), relabel rules over targets (`crate::relabel`).

mod apply;
mod context;
mod geoip;
pub mod golayout;
mod inspect;
mod json;
mod json_top;
mod line;
mod metrics;
mod multiline;
mod pack;
mod parse;
pub mod re2;
mod sprig;
mod stage;
mod stages;
mod stream_limit;
mod template;
mod timestamp;

pub use geoip::{GeoDb, GeoIp};
pub use inspect::{Inspector, LineState, Stopped};
pub use json::JsonField;
pub use metrics::{Action as MetricAction, Metric};
pub use parse::JsonPath;
pub use stage::{ByLabel, DropRule, Op, Stage, TenantFrom, Truncated};
pub use stages::{pod_labels, FileContext, Processed, SourceStages};
pub use template::GoTemplate;
pub use timestamp::TimeFormat;
