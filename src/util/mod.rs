//! Small shared helpers: human durations and sizes (for config and flags),
//! secrets that never print, label-name rules, and serving HTTP to clients
//! that may be slow ([`serve`]).
//!
//! Not here: anything with a layer of its own (metrics, status, logging).

/// The name of the one client of the `[client]` form (in metrics, `/status`
/// and the positions file).
pub const DEFAULT_CLIENT: &str = "default";

pub mod clock;
pub mod conns;
pub mod pages;
pub mod pathtext;
pub mod secrets;
pub mod serve;
pub mod yaml;

use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Raises the soft limit of open descriptors to the hard limit (systemd's
/// default soft limit is 1,024; thousands of log files need more) and
/// returns the soft limit in force. `None` when it cannot be read.
pub fn raise_fd_limit() -> Option<u64> {
    let mut lim = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit/setrlimit with a valid pointer to an rlimit.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) != 0 {
            return None;
        }
        if lim.rlim_cur < lim.rlim_max {
            let raised = libc::rlimit { rlim_cur: lim.rlim_max, rlim_max: lim.rlim_max };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &raised) == 0 {
                lim.rlim_cur = lim.rlim_max;
            }
        }
    }
    // rlim_t is u64 on Linux, but not on every platform.
    #[allow(clippy::unnecessary_cast)]
    Some(lim.rlim_cur as u64)
}

/// [`parse_duration`] for flags where 0 makes no sense.
pub fn parse_positive_duration(s: &str) -> Result<Duration, String> {
    match parse_duration(s)? {
        d if d.is_zero() => Err("must be more than 0".into()),
        d => Ok(d),
    }
}

/// Parses a human duration such as `500ms`, `10s`, `5m`, `1h30m`. A bare `0` is zero.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let t = s.trim();
    if t == "0" {
        return Ok(Duration::ZERO);
    }
    humantime::parse_duration(t).map_err(|e| format!("invalid duration `{s}` ({e}); use forms like 500ms, 10s, 5m, 1h"))
}

/// Formats a duration the way config files write it (`1s`, `500ms`, `5m`,
/// `24h`, `1h30m`): hours at most, never days or months, so it reads as
/// people write it and parses back to the same value.
pub fn format_duration(d: Duration) -> String {
    if d.is_zero() {
        return "0s".to_string();
    }
    let secs = d.as_secs();
    let (h, m, s) = (secs / 3600, secs / 60 % 60, secs % 60);
    let mut out = String::new();
    for (n, unit) in [(h, "h"), (m, "m"), (s, "s")] {
        if n > 0 {
            out.push_str(&format!("{n}{unit}"));
        }
    }
    let sub = d.subsec_nanos();
    if sub > 0 {
        if sub % 1_000_000 == 0 {
            out.push_str(&format!("{}ms", sub / 1_000_000));
        } else if sub % 1_000 == 0 {
            out.push_str(&format!("{}us", sub / 1_000));
        } else {
            out.push_str(&format!("{sub}ns"));
        }
    }
    out
}

/// Formats a size the way config files write it: `1MiB`, `256KiB`, `4GiB`
/// when it is a whole number of them, else the bytes.
pub fn format_size(n: u64) -> String {
    for (shift, unit) in [(30, "GiB"), (20, "MiB"), (10, "KiB")] {
        if n > 0 && n % (1u64 << shift) == 0 {
            return format!("{}{unit}", n >> shift);
        }
    }
    n.to_string()
}

/// Parses a size: a plain number of bytes, or `64KiB`, `1MiB`, `1MB`, `16 MiB`.
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    if let Ok(n) = t.parse::<u64>() {
        return Ok(n);
    }
    t.parse::<bytesize::ByteSize>()
        .map(|b| b.as_u64())
        .map_err(|e| format!("invalid size `{s}` ({e}); use a number of bytes or forms like 64KiB, 1MiB"))
}

/// A config duration: written as a string (`"10s"`), held as a [`Duration`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Default)]
pub struct HumanDuration(pub Duration);

impl HumanDuration {
    pub const fn secs(s: u64) -> Self {
        Self(Duration::from_secs(s))
    }
    pub const fn millis(ms: u64) -> Self {
        Self(Duration::from_millis(ms))
    }
    pub fn get(self) -> Duration {
        self.0
    }
}

impl<'de> Deserialize<'de> for HumanDuration {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            S(String),
            N(u64),
        }
        match Raw::deserialize(d)? {
            Raw::S(s) => parse_duration(&s).map(HumanDuration).map_err(serde::de::Error::custom),
            Raw::N(0) => Ok(HumanDuration(Duration::ZERO)),
            Raw::N(n) => Err(serde::de::Error::custom(format!(
                "invalid duration `{n}`: a duration needs a unit, such as \"{n}s\" or \"{n}ms\""
            ))),
        }
    }
}

impl Serialize for HumanDuration {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format_duration(self.0))
    }
}

/// A config size in bytes: written as a number or a string (`"1MiB"`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Default)]
pub struct HumanSize(pub u64);

impl HumanSize {
    pub fn get(self) -> u64 {
        self.0
    }
}

impl<'de> Deserialize<'de> for HumanSize {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            N(u64),
            S(String),
        }
        match Raw::deserialize(d)? {
            Raw::N(n) => Ok(HumanSize(n)),
            Raw::S(s) => parse_size(&s).map(HumanSize).map_err(serde::de::Error::custom),
        }
    }
}

impl Serialize for HumanSize {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match format_size(self.0) {
            t if t.ends_with("iB") => s.serialize_str(&t),
            _ => s.serialize_u64(self.0),
        }
    }
}

/// A secret value (password, token, webhook URL). Its `Debug`, `Display` and
/// `Serialize` all print `<redacted>`, so it cannot leak through logs, `check`
/// output or error messages by accident. Read it with [`Secret::expose`].
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// A secret, remembered so that text the agent prints is scrubbed of it
    /// (see [`secrets`]).
    pub fn new(s: impl Into<String>) -> Self {
        let s = s.into();
        secrets::remember(&s);
        Self(s)
    }
    pub fn expose(&self) -> &str {
        &self.0
    }
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

impl<'de> Deserialize<'de> for Secret {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d).map(Secret::new)
    }
}

impl Serialize for Secret {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str("<redacted>")
    }
}

/// Reads a secret from a file, trimming one trailing newline (as written by `echo`).
pub fn read_secret_file(path: &std::path::Path) -> std::io::Result<Secret> {
    let mut s = std::fs::read_to_string(path)?;
    while s.ends_with('\n') || s.ends_with('\r') {
        s.pop();
    }
    Ok(Secret::new(s))
}

/// Why the service would refuse tenant ID `t` (Loki's rules: at most 150
/// characters of `[a-zA-Z0-9!._*'()-]`, not `.` or `..`); `None` when it is good.
pub fn tenant_problem(t: &str) -> Option<&'static str> {
    if t.is_empty() {
        Some("a tenant ID is not empty")
    } else if t.len() > 150 {
        Some("a tenant ID has at most 150 characters")
    } else if t == "." || t == ".." {
        Some("a tenant ID is not `.` or `..`")
    } else if !t.bytes().all(|c| c.is_ascii_alphanumeric() || b"!._*'()-".contains(&c)) {
        Some("a tenant ID has only the characters a-z A-Z 0-9 ! . _ * ' ( ) -")
    } else {
        None
    }
}

/// True when `name` is a valid label name: `[a-zA-Z_][a-zA-Z0-9_]*`.
pub fn is_valid_label_name(name: &str) -> bool {
    let mut chars = name.bytes();
    match chars.next() {
        Some(c) if c.is_ascii_alphabetic() || c == b'_' => {}
        _ => return false,
    }
    chars.all(|c| c.is_ascii_alphanumeric() || c == b'_')
}

/// Turns any string into a valid label name: bad characters become `_`, and a
/// leading digit gets a `_` prefix. An empty name becomes `_`.
pub fn sanitize_label_name(name: &str) -> String {
    let mut out = String::with_capacity(name.len() + 1);
    for (i, c) in name.chars().enumerate() {
        if i == 0 && c.is_ascii_digit() {
            out.push('_');
        }
        if c.is_ascii_alphanumeric() || c == '_' {
            out.push(c);
        } else {
            out.push('_');
        }
    }
    if out.is_empty() {
        out.push('_');
    }
    out
}

/// Current wall-clock time as Unix nanoseconds.
pub fn now_ns() -> i128 {
    match std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH) {
        Ok(d) => d.as_nanos() as i128,
        Err(e) => -(e.duration().as_nanos() as i128),
    }
}

/// `s` with control characters escaped (`\n`, `\t`, `\u{1b}`, `\u{9b}`),
/// safe to print on a terminal: a line or a label from a sender cannot set
/// the terminal's title, clear its screen or move its cursor. What `tailship
/// top` and the query commands print on a terminal goes through this.
pub fn escape_controls(s: &str) -> String {
    if !s.chars().any(char::is_control) {
        return s.to_string();
    }
    s.chars().map(|c| if c.is_control() { c.escape_default().to_string() } else { c.to_string() }).collect()
}

/// `s` cut to at most `max` bytes, at a character boundary.
pub fn cut_at_char(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// Standard base64 with padding (HTTP Basic credentials).
pub fn base64(input: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(input.len().div_ceil(3) * 4);
    for chunk in input.chunks(3) {
        let b = [chunk[0], chunk.get(1).copied().unwrap_or(0), chunk.get(2).copied().unwrap_or(0)];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// Sleeps until `deadline`, or for ever without one (a `select!` arm that
/// only fires when there is something to wait for).
pub async fn sleep_until_opt(deadline: Option<tokio::time::Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep_until(d).await,
        None => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_and_sizes_print_as_people_write_them_and_parse_back() {
        for (d, text) in [
            (Duration::from_secs(86_400), "24h"),
            (Duration::from_secs(5400), "1h30m"),
            (Duration::from_millis(500), "500ms"),
            (Duration::from_millis(1500), "1s500ms"),
            (Duration::from_secs(300), "5m"),
        ] {
            assert_eq!(format_duration(d), text);
            assert_eq!(parse_duration(text), Ok(d), "{text}");
        }
        for (n, text) in [(1 << 20, "1MiB"), (256 << 10, "256KiB"), (4 << 30, "4GiB"), (1000, "1000")] {
            assert_eq!(format_size(n), text);
            assert_eq!(parse_size(text), Ok(n), "{text}");
        }
    }

    #[test]
    fn cuts_land_on_character_boundaries() {
        assert_eq!(cut_at_char("abc", 5), "abc");
        assert_eq!(cut_at_char("abc", 2), "ab");
        assert_eq!(cut_at_char("aé", 2), "a", "é is two bytes: a cut inside it goes before it");
        assert_eq!(cut_at_char("日本", 4), "日");
        assert_eq!(cut_at_char("", 0), "");
    }

    #[test]
    fn durations_parse_and_format() {
        assert_eq!(parse_duration("500ms").unwrap(), Duration::from_millis(500));
        assert_eq!(parse_duration("5m").unwrap(), Duration::from_secs(300));
        assert_eq!(parse_duration("0").unwrap(), Duration::ZERO);
        assert!(parse_duration("5x").is_err());
        assert!(parse_duration("").is_err());
        assert_eq!(format_duration(Duration::from_millis(1500)), "1s500ms");
    }

    #[test]
    fn sizes_parse() {
        assert_eq!(parse_size("1MiB").unwrap(), 1 << 20);
        assert_eq!(parse_size("1048576").unwrap(), 1 << 20);
        assert_eq!(parse_size("64 KiB").unwrap(), 64 << 10);
        assert!(parse_size("lots").is_err());
    }

    #[test]
    fn label_names() {
        assert!(is_valid_label_name("job"));
        assert!(is_valid_label_name("_x9"));
        assert!(!is_valid_label_name("9x"));
        assert!(!is_valid_label_name("a-b"));
        assert!(!is_valid_label_name(""));
        assert_eq!(sanitize_label_name("a-b.c"), "a_b_c");
        assert_eq!(sanitize_label_name("9x"), "_9x");
    }

    #[test]
    fn secrets_never_print() {
        let s = Secret::new("hunter2");
        assert_eq!(format!("{s} {s:?}"), "<redacted> <redacted>");
        assert_eq!(serde_json::to_string(&s).unwrap(), "\"<redacted>\"");
        assert_eq!(s.expose(), "hunter2");
    }
}
