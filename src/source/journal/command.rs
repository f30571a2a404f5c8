//! The `journalctl` command line of a journal source, and the checks `plan`
//! makes on its `matches`.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use super::entry::OUTPUT_FIELDS;
use crate::config::SourceConfig;

/// Where a reader starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Start {
    /// Just after the entry with this cursor (`--after-cursor`).
    After(String),
    /// At entries from this time on, Unix microseconds (`--since=@S.UUUUUU`).
    Since(i64),
    /// At the oldest entry.
    Oldest,
}

/// The PATH searched when the environment has none (that of systemd).
const DEFAULT_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// `journalctl` found on `PATH`, if it is there.
pub fn find_journalctl() -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_else(|| DEFAULT_PATH.into());
    std::env::split_paths(&path).map(|dir| dir.join("journalctl")).find(|p| is_executable(p))
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Checks one `matches` entry: `FIELD=value`, the field as the journal names
/// them (upper-case letters, digits and `_`, not starting with a digit, at
/// most 64 characters). The value may be anything, empty too.
pub fn check_match(m: &str) -> Result<(), String> {
    let Some((field, _)) = m.split_once('=') else {
        return Err(format!("`{m}` is not FIELD=value (such as _SYSTEMD_UNIT=nginx.service)"));
    };
    if field.is_empty() || field.len() > 64 {
        return Err(format!("`{field}` is not a journal field name (1 to 64 characters)"));
    }
    if field.starts_with(|c: char| c.is_ascii_digit())
        || !field.bytes().all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_')
    {
        return Err(format!(
            "`{field}` is not a journal field name (upper-case letters, digits and _, not starting with a digit)"
        ));
    }
    Ok(())
}

/// The time of a cursor's entry, Unix microseconds: its `t=` part (hex).
pub fn cursor_time_us(cursor: &str) -> Option<i64> {
    let t = cursor.split(';').find_map(|part| part.strip_prefix("t="))?;
    i64::from_str_radix(t, 16).ok()
}

/// The arguments of `journalctl` for a source reading from `start`.
///
/// `--merge` keeps journalctl from reading the last boot only, which it does
/// in follow mode otherwise (systemd 252): a cursor saved before a reboot
/// would skip the rest of that boot. `--all` keeps long values (journalctl
/// prints values over 4 KiB as null without it). `--lines=all` keeps follow
/// mode from starting at the last ten entries.
pub fn args(cfg: &SourceConfig, start: &Start, follow: bool) -> Vec<OsString> {
    let mut a: Vec<OsString> = ["--output=json", "--all", "--no-pager", "--quiet", "--merge", "--lines=all"]
        .iter()
        .map(OsString::from)
        .collect();
    // The whole entry is the line with `json`, and relabel rules read every
    // field: then every field is asked for.
    if !cfg.json && cfg.relabel.is_empty() {
        a.push(format!("--output-fields={OUTPUT_FIELDS}").into());
    }
    if follow {
        a.push("--follow".into());
    }
    if let Some(dir) = &cfg.path {
        let mut d = OsString::from("--directory=");
        d.push(dir.as_os_str());
        a.push(d);
    }
    match start {
        Start::After(cursor) => a.push(format!("--after-cursor={cursor}").into()),
        Start::Since(us) => {
            let us = (*us).max(0);
            a.push(format!("--since=@{}.{:06}", us / 1_000_000, us % 1_000_000).into());
        }
        Start::Oldest => {}
    }
    a.extend(cfg.matches.iter().map(OsString::from));
    a
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cursor_tells_its_entry_time() {
        let c = "s=1b88;i=2;b=0123;m=2;t=6616346898577;x=711b";
        assert_eq!(cursor_time_us(c), Some(0x6616346898577));
        assert_eq!(cursor_time_us("s=1;i=2"), None);
        assert_eq!(cursor_time_us("t=zz"), None);
    }

    #[test]
    fn matches_are_field_equals_value() {
        assert!(check_match("_SYSTEMD_UNIT=nginx.service").is_ok());
        assert!(check_match("PRIORITY=").is_ok());
        assert!(check_match("MESSAGE=a=b").is_ok());
        assert!(check_match("nginx.service").unwrap_err().contains("FIELD=value"));
        assert!(check_match("_systemd_unit=x").is_err());
        assert!(check_match("1FIELD=x").is_err());
        assert!(check_match("=x").is_err());
        assert!(check_match("+").is_err());
    }

    #[test]
    fn the_command_line_names_directory_start_and_matches() {
        let cfg = SourceConfig {
            path: Some(PathBuf::from("/j")),
            matches: vec!["_SYSTEMD_UNIT=a.service".into()],
            ..Default::default()
        };
        let a: Vec<String> =
            args(&cfg, &Start::Since(1_700_000_000_000_020), true).iter().map(|s| s.to_string_lossy().into()).collect();
        assert!(a.contains(&"--follow".to_string()) && a.contains(&"--directory=/j".to_string()));
        assert!(a.contains(&"--since=@1700000000.000020".to_string()), "{a:?}");
        assert_eq!(a.last().map(String::as_str), Some("_SYSTEMD_UNIT=a.service"));
        let a = args(&SourceConfig::default(), &Start::After("s=1;i=2".into()), false);
        assert!(a.iter().any(|s| s == "--after-cursor=s=1;i=2"));
        assert!(!a.iter().any(|s| s == "--follow" || s.to_string_lossy().starts_with("--directory")));
    }
}
