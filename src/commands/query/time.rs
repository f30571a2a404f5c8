//! Time flags of `query` and `tail`: `now`, RFC 3339, Unix nanoseconds or an age.

use std::time::Duration;

use super::usage;
use crate::util::now_ns;

pub(super) fn ns(d: Duration) -> i64 {
    i64::try_from(d.as_nanos()).unwrap_or(i64::MAX)
}

pub(super) fn now() -> i64 {
    i64::try_from(now_ns()).unwrap_or(i64::MAX)
}

/// A time flag: `now`, RFC 3339, Unix nanoseconds, or an age such as `2h` (now minus it).
pub(super) fn parse_time_arg(flag: &str, s: &str, now: i64) -> anyhow::Result<i64> {
    let t = s.trim();
    if t == "now" {
        return Ok(now);
    }
    if let Ok(d) = chrono::DateTime::parse_from_rfc3339(t) {
        return d.timestamp_nanos_opt().ok_or_else(|| usage(format!("{flag} `{s}`: out of range")));
    }
    if !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()) {
        return t.parse::<i64>().map_err(|_| usage(format!("{flag} `{s}`: out of range")));
    }
    match crate::util::parse_duration(t) {
        Ok(d) => Ok(now.saturating_sub(ns(d))),
        Err(_) => Err(usage(format!(
            "{flag} `{s}`: use RFC 3339 (2024-05-01T10:00:00Z), Unix nanoseconds, or an age such as 2h"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::commands::CommandError;

    #[test]
    fn time_args() {
        let now = 10_000_000_000_000;
        assert_eq!(parse_time_arg("--from", "now", now).unwrap(), now);
        assert_eq!(parse_time_arg("--from", "2h", now).unwrap(), now - 7_200_000_000_000);
        assert_eq!(parse_time_arg("--from", "1700000000000000000", now).unwrap(), 1_700_000_000_000_000_000);
        assert_eq!(parse_time_arg("--from", "2023-11-14T22:13:20.5Z", now).unwrap(), 1_700_000_000_500_000_000);
        let e = parse_time_arg("--from", "yesterday", now).unwrap_err();
        assert_eq!(e.downcast_ref::<CommandError>().map(|c| c.code), Some(crate::commands::EXIT_USAGE));
    }
}
