//! Parsing timestamps taken from log lines into Unix nanoseconds.
//!
//! A pattern may lack fields, as Promtail's Go layouts may: a missing date
//! is January 1st, a missing time midnight, and a missing year is Promtail's
//! guess of the year closest to now: the current one, except that a December
//! time read in January is last year's and a January time read in December
//! next year's. A time without an offset is UTC, or local time of the
//! stage's `location`.

use chrono::{DateTime, Datelike, NaiveDateTime, TimeZone, Utc};
use chrono_tz::Tz;

/// How an extracted value is read as a time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TimeFormat {
    Rfc3339,
    UnixSeconds,
    UnixMillis,
    UnixMicros,
    UnixNanos,
    /// A strftime pattern such as `%Y-%m-%d %H:%M:%S%.f`; UTC (or the
    /// location's time) unless it has `%z`.
    Strftime(Pattern),
}

/// A strftime pattern and the fields it lacks, filled in before parsing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pattern {
    text: String,
    /// Items put in front of the pattern for the fields it lacks (`%m %d `).
    missing: String,
    /// The pattern has no year: Promtail's year rule applies.
    no_year: bool,
    location: Option<Zone>,
}

/// Where times without an offset are read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Zone {
    Tz(Tz),
    /// The machine's own zone (`TZ`, else /etc/localtime): Go's `Local`.
    Local,
}

const FORMATS: &str = "rfc3339, unix, unix_ms, unix_us, unix_ns, a strftime pattern (with %) or a Go layout";

impl TimeFormat {
    /// `s`: a name, a strftime pattern (it has a `%`) or a Go layout
    /// (`2006-01-02 15:04:05.000`, `RFC3339Nano`, `Stamp`, `UnixMs`, ...).
    pub fn parse(s: &str) -> Result<Self, String> {
        Ok(match s {
            "rfc3339" | "RFC3339" => Self::Rfc3339,
            "unix" | "unix_s" => Self::UnixSeconds,
            "unix_ms" => Self::UnixMillis,
            "unix_us" => Self::UnixMicros,
            "unix_ns" => Self::UnixNanos,
            "" => return Err(format!("empty format; use {FORMATS}")),
            p if p.contains('%') => {
                // Reject patterns chrono cannot understand now, not at the first line.
                let items: Vec<_> = chrono::format::StrftimeItems::new(p).collect();
                if items.iter().any(|i| matches!(i, chrono::format::Item::Error)) {
                    return Err(format!("`{p}` is not a valid strftime pattern"));
                }
                Self::Strftime(Pattern::new(p))
            }
            go => match super::golayout::translate(go) {
                Ok(ours) if ours.contains('%') => Self::Strftime(Pattern::new(&ours)),
                Ok(ours) => Self::parse(&ours)?,
                Err(e) => return Err(format!("unknown format `{go}` ({e}); use {FORMATS}")),
            },
        })
    }

    /// This format reading times without an offset in `location` (an IANA
    /// name such as `Europe/Paris`, or `Local`, the machine's zone, as Go
    /// names it); only patterns have such times.
    pub fn in_location(self, location: &str) -> Result<Self, String> {
        let zone = match location {
            "Local" => Zone::Local,
            l => Zone::Tz(l.parse().map_err(|_| format!("`{l}` is not an IANA time zone (Europe/Paris) nor Local"))?),
        };
        Ok(match self {
            Self::Strftime(mut p) => {
                p.location = Some(zone);
                Self::Strftime(p)
            }
            other => other,
        })
    }

    /// Reads `value` as Unix nanoseconds, or `None` when it does not parse.
    pub fn to_unix_ns(&self, value: &str) -> Option<i128> {
        self.to_unix_ns_at(value, Utc::now())
    }

    /// [`TimeFormat::to_unix_ns`] with `now` for a pattern without a year.
    pub fn to_unix_ns_at(&self, value: &str, now: DateTime<Utc>) -> Option<i128> {
        let v = value.trim();
        match self {
            Self::Rfc3339 => DateTime::parse_from_rfc3339(v).ok().and_then(|d| d.timestamp_nanos_opt()).map(i128::from),
            Self::UnixSeconds => parse_decimal(v, 1_000_000_000),
            Self::UnixMillis => parse_decimal(v, 1_000_000),
            Self::UnixMicros => parse_decimal(v, 1_000),
            Self::UnixNanos => v.parse::<i128>().ok(),
            Self::Strftime(p) => p.read(v, now),
        }
    }
}

impl Pattern {
    fn new(text: &str) -> Self {
        let has = |items: &[&str]| items.iter().any(|i| text.contains(i));
        let ordinal = has(&["%j"]);
        let mut missing = String::new();
        let no_year = !has(&["%Y", "%y", "%G", "%C", "%s"]);
        for (item, present) in [
            ("%m ", ordinal || has(&["%m", "%b", "%B", "%h", "%s"])),
            ("%d ", ordinal || has(&["%d", "%e", "%s"])),
            ("%H ", has(&["%H", "%I", "%k", "%l", "%s", "%T", "%R"])),
            ("%M ", has(&["%M", "%s", "%T", "%R"])),
        ] {
            if !present {
                missing.push_str(item);
            }
        }
        Self { text: text.to_string(), missing, no_year, location: None }
    }

    fn read(&self, v: &str, now: DateTime<Utc>) -> Option<i128> {
        if self.missing.is_empty() && !self.no_year {
            return self.parse(&self.text, v);
        }
        // The missing fields go in front: January 1st, midnight.
        let mut pattern = String::from(if self.no_year { "%Y " } else { "" });
        pattern.push_str(&self.missing);
        pattern.push_str(&self.text);
        let filled = |year: i32| {
            let mut s = if self.no_year { format!("{year} ") } else { String::new() };
            for item in self.missing.split_whitespace() {
                s.push_str(if item == "%m" || item == "%d" { "01 " } else { "00 " });
            }
            s.push_str(v);
            s
        };
        if !self.no_year {
            return self.parse(&pattern, &filled(0));
        }
        // The month decides the year (2000 is a leap year: 29 February reads).
        let month = NaiveDateTime::parse_from_str(&filled(2000), &pattern)
            .map(|d| d.month())
            .or_else(|_| DateTime::parse_from_str(&filled(2000), &pattern).map(|d| d.month()))
            .ok()?;
        let year = match (month, now.month()) {
            (12, 1) => now.year() - 1,
            (1, 12) => now.year() + 1,
            _ => now.year(),
        };
        self.parse(&pattern, &filled(year))
    }

    fn parse(&self, pattern: &str, v: &str) -> Option<i128> {
        if let Ok(d) = DateTime::parse_from_str(v, pattern) {
            return d.timestamp_nanos_opt().map(i128::from);
        }
        let naive = NaiveDateTime::parse_from_str(v, pattern).ok()?;
        let ns = match self.location {
            Some(Zone::Tz(tz)) => tz.from_local_datetime(&naive).earliest()?.timestamp_nanos_opt(),
            Some(Zone::Local) => chrono::Local.from_local_datetime(&naive).earliest()?.timestamp_nanos_opt(),
            None => Utc.from_utc_datetime(&naive).timestamp_nanos_opt(),
        };
        ns.map(i128::from)
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

    fn at(y: i32, m: u32, d: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(y, m, d, 12, 0, 0).unwrap()
    }

    fn ns(y: i32, m: u32, d: u32, h: u32, mi: u32, s: u32) -> Option<i128> {
        Utc.with_ymd_and_hms(y, m, d, h, mi, s).unwrap().timestamp_nanos_opt().map(i128::from)
    }

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

    #[test]
    fn go_layouts_are_read_as_convert_reads_them() {
        for go in ["RFC3339Nano", "2006-01-02T15:04:05.999999999Z07:00", "RFC3339"] {
            assert_eq!(TimeFormat::parse(go).unwrap(), TimeFormat::Rfc3339, "{go}");
        }
        assert_eq!(TimeFormat::parse("UnixMs").unwrap(), TimeFormat::UnixMillis);
        let go = TimeFormat::parse("2006-01-02 15:04:05.000").unwrap();
        assert_eq!(go.to_unix_ns("2024-03-05 07:08:09.250"), ns(2024, 3, 5, 7, 8, 9).map(|n| n + 250_000_000));
    }

    #[test]
    fn a_missing_year_is_the_closest_one_as_promtail_guesses_it() {
        let stamp = TimeFormat::parse("Stamp").unwrap();
        assert_eq!(stamp.to_unix_ns_at("Mar  5 07:08:09", at(2024, 6, 1)), ns(2024, 3, 5, 7, 8, 9));
        assert_eq!(stamp.to_unix_ns_at("Dec 31 23:59:59", at(2025, 1, 1)), ns(2024, 12, 31, 23, 59, 59));
        assert_eq!(stamp.to_unix_ns_at("Jan  1 00:00:01", at(2024, 12, 31)), ns(2025, 1, 1, 0, 0, 1));
        assert_eq!(stamp.to_unix_ns_at("Feb 29 10:00:00", at(2024, 3, 1)), ns(2024, 2, 29, 10, 0, 0));
        let strftime = TimeFormat::parse("%b %d %H:%M:%S").unwrap();
        assert_eq!(strftime.to_unix_ns_at("Mar 05 07:08:09", at(2024, 6, 1)), ns(2024, 3, 5, 7, 8, 9));
    }

    #[test]
    fn a_missing_date_or_time_is_january_first_or_midnight() {
        let date = TimeFormat::parse("2006-01-02").unwrap();
        assert_eq!(date.to_unix_ns("2024-03-05"), ns(2024, 3, 5, 0, 0, 0));
        let kitchen = TimeFormat::parse("Kitchen").unwrap();
        assert_eq!(kitchen.to_unix_ns_at("3:04PM", at(2024, 6, 1)), ns(2024, 1, 1, 15, 4, 0));
    }

    #[test]
    fn location_local_reads_times_in_the_machines_zone_as_go_does() {
        let f = TimeFormat::parse("2006-01-02 15:04:05").unwrap().in_location("Local").unwrap();
        let naive = NaiveDateTime::parse_from_str("2024-03-05 08:08:09", "%Y-%m-%d %H:%M:%S").unwrap();
        let want = chrono::Local.from_local_datetime(&naive).earliest().unwrap().timestamp_nanos_opt().unwrap();
        assert_eq!(f.to_unix_ns("2024-03-05 08:08:09"), Some(i128::from(want)));
    }

    #[test]
    fn a_location_reads_local_times_there() {
        let f = TimeFormat::parse("2006-01-02 15:04:05").unwrap().in_location("Europe/Paris").unwrap();
        assert_eq!(f.to_unix_ns("2024-03-05 08:08:09"), ns(2024, 3, 5, 7, 8, 9));
        let with_offset = TimeFormat::parse("%Y-%m-%d %H:%M:%S %z").unwrap().in_location("Asia/Tokyo").unwrap();
        assert_eq!(with_offset.to_unix_ns("2024-03-05 07:08:09 +0000"), ns(2024, 3, 5, 7, 8, 9));
        assert!(TimeFormat::Rfc3339.in_location("Mars/Olympus").is_err());
    }
}
