//! Parsing timestamps taken from log lines into Unix nanoseconds.

use chrono::{DateTime, NaiveDateTime, TimeZone, Utc};

/// How an extracted value is read as a time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TimeFormat {
    Rfc3339,
    UnixSeconds,
    UnixMillis,
    UnixMicros,
    UnixNanos,
    /// A strftime pattern such as `%Y-%m-%d %H:%M:%S%.f`; UTC unless it has `%z`.
    Strftime(String),
}

impl TimeFormat {
    pub fn parse(s: &str) -> Result<Self, String> {
        Ok(match s {
            "rfc3339" | "RFC3339" => Self::Rfc3339,
            "unix" | "unix_s" => Self::UnixSeconds,
            "unix_ms" => Self::UnixMillis,
            "unix_us" => Self::UnixMicros,
            "unix_ns" => Self::UnixNanos,
            "" => return Err("empty format; use rfc3339, unix, unix_ms, unix_us, unix_ns or a strftime pattern".into()),
            p if p.contains('%') => {
                // Reject patterns chrono cannot understand now, not at the first line.
                let items: Vec<_> = chrono::format::StrftimeItems::new(p).collect();
                if items.iter().any(|i| matches!(i, chrono::format::Item::Error)) {
                    return Err(format!("`{p}` is not a valid strftime pattern"));
                }
                Self::Strftime(p.to_string())
            }
            other => {
                return Err(format!(
                "unknown format `{other}`; use rfc3339, unix, unix_ms, unix_us, unix_ns or a strftime pattern with %"
            ))
            }
        })
    }

    /// Reads `value` as Unix nanoseconds, or `None` when it does not parse.
    pub fn to_unix_ns(&self, value: &str) -> Option<i128> {
        let v = value.trim();
        match self {
            Self::Rfc3339 => DateTime::parse_from_rfc3339(v).ok().and_then(|d| d.timestamp_nanos_opt()).map(i128::from),
            Self::UnixSeconds => parse_decimal(v, 1_000_000_000),
            Self::UnixMillis => parse_decimal(v, 1_000_000),
            Self::UnixMicros => parse_decimal(v, 1_000),
            Self::UnixNanos => v.parse::<i128>().ok(),
            Self::Strftime(p) => {
                if let Ok(d) = DateTime::parse_from_str(v, p) {
                    return d.timestamp_nanos_opt().map(i128::from);
                }
                NaiveDateTime::parse_from_str(v, p)
                    .ok()
                    .and_then(|n| Utc.from_utc_datetime(&n).timestamp_nanos_opt())
                    .map(i128::from)
            }
        }
    }
}

/// Parses `123` or `123.456` in some unit, scaled to nanoseconds.
fn parse_decimal(v: &str, scale: i128) -> Option<i128> {
    let (int, frac) = v.split_once('.').unwrap_or((v, ""));
    let whole: i128 = int.parse().ok()?;
    if !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let digits = scale.to_string().len() - 1;
    let mut f = frac.to_string();
    f.truncate(digits);
    while f.len() < digits {
        f.push('0');
    }
    let fv: i128 = if digits == 0 { 0 } else { f.parse().ok()? };
    Some(whole * scale + if whole < 0 { -fv } else { fv })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats() {
        let f = TimeFormat::parse("rfc3339").unwrap();
        assert_eq!(f.to_unix_ns("1970-01-01T00:00:01.5Z"), Some(1_500_000_000));
        assert_eq!(TimeFormat::UnixSeconds.to_unix_ns("2.25"), Some(2_250_000_000));
        assert_eq!(TimeFormat::UnixMillis.to_unix_ns("1500"), Some(1_500_000_000));
        assert_eq!(TimeFormat::UnixNanos.to_unix_ns("42"), Some(42));
        let s = TimeFormat::parse("%Y-%m-%d %H:%M:%S").unwrap();
        assert_eq!(s.to_unix_ns("1970-01-01 00:00:02"), Some(2_000_000_000));
        assert_eq!(s.to_unix_ns("garbage"), None);
        assert!(TimeFormat::parse("nope").is_err());
        assert!(TimeFormat::parse("%Q").is_err());
    }
}
