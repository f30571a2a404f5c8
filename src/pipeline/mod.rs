//! Per-source processing of lines: labels, timestamps, drops (`stages`), and
//! stream identity with strictly increasing timestamps (`stream`).

mod timestamp;

pub use timestamp::TimeFormat;
