//! File names as text, exactly: a path that is not UTF-8 (a Linux name is
//! any bytes but `/` and NUL) is written with each byte that is not part of
//! valid UTF-8 as `\xNN` (two lowercase hex digits) and each `\` as `\\`;
//! a UTF-8 path is written as it is. The `filename` label, `/status` and the
//! positions file all use this text, so they agree, and
//! [`from_text`] gives back the very bytes.
//!
//! The positions file keeps a mark beside an escaped path (`path_escaped`),
//! so a UTF-8 name that happens to contain `\x..` is never read as escaped.
//! Replacing the bytes with U+FFFD (what `Path::display` does) gave two
//! different files the same name; JSON (serde) refuses such a path outright,
//! which used to make every positions save fail (issue 50).

use std::borrow::Cow;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};

/// `path` as text: itself when it is UTF-8, else escaped (see the module documentation).
pub fn text(path: &Path) -> Cow<'_, str> {
    bytes_text(path.as_os_str().as_bytes())
}

/// `bytes` as text: see [`text`].
pub fn bytes_text(bytes: &[u8]) -> Cow<'_, str> {
    if let Ok(s) = std::str::from_utf8(bytes) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(bytes.len() + 8);
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            if c == '\\' {
                out.push_str("\\\\");
            } else {
                out.push(c);
            }
        }
        for b in chunk.invalid() {
            out.push_str(&format!("\\x{b:02x}"));
        }
    }
    Cow::Owned(out)
}

/// True when [`text`] escapes `path` (it is not UTF-8).
pub fn is_escaped(path: &Path) -> bool {
    path.to_str().is_none()
}

/// The path whose [`text`] is `text`; `escaped` says that `text` was
/// escaped (else it is the path itself).
pub fn from_text(text: &str, escaped: bool) -> PathBuf {
    if !escaped {
        return PathBuf::from(text);
    }
    let b = text.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' {
            if b.get(i + 1) == Some(&b'\\') {
                out.push(b'\\');
                i += 2;
                continue;
            }
            if b.get(i + 1) == Some(&b'x') {
                let hex = b.get(i + 2..i + 4).and_then(|h| std::str::from_utf8(h).ok());
                if let Some(v) = hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
                    out.push(v);
                    i += 4;
                    continue;
                }
            }
        }
        out.push(b[i]);
        i += 1;
    }
    PathBuf::from(std::ffi::OsString::from_vec(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(bytes: &[u8]) -> PathBuf {
        PathBuf::from(std::ffi::OsString::from_vec(bytes.to_vec()))
    }

    #[test]
    fn utf8_paths_are_themselves_and_others_are_escaped_exactly() {
        assert_eq!(text(Path::new("/var/log/app é.log")), "/var/log/app é.log");
        assert_eq!(text(Path::new("/a\\b.log")), "/a\\b.log", "a UTF-8 name is never changed");
        assert_eq!(text(&p(b"/logs/bad\xff.log")), "/logs/bad\\xff.log");
        assert_eq!(text(&p(b"/a\\b\xfe")), "/a\\\\b\\xfe", "in an escaped name a backslash is doubled");
        // é cut in half: its first byte alone is not UTF-8.
        assert_eq!(text(&p(b"caf\xc3")), "caf\\xc3");
        assert!(is_escaped(&p(b"x\x80")) && !is_escaped(Path::new("x")));
    }

    #[test]
    fn every_escaped_path_reads_back_to_its_bytes() {
        let mut cases: Vec<Vec<u8>> = vec![
            b"/logs/bad\xff.log".to_vec(),
            b"\\xff\xff".to_vec(),
            b"\\\\\x80\\".to_vec(),
            b"\xc3\xa9\xc3".to_vec(),
            b"\\x4".to_vec(),
        ];
        // Every byte, alone and after a backslash.
        for b in 1..=255u8 {
            cases.push(vec![b'/', b, 0xff]);
            cases.push(vec![b'\\', b, 0xfe, b'\\', b'x', b]);
        }
        for bytes in cases {
            let path = p(&bytes);
            let t = text(&path);
            assert_eq!(from_text(&t, is_escaped(&path)), path, "{t}");
        }
        assert_eq!(from_text("/a\\xff", false), Path::new("/a\\xff"), "a UTF-8 name that looks escaped stays");
    }

    #[test]
    fn two_names_that_differ_in_bytes_differ_as_text() {
        assert_ne!(text(&p(b"a\xff")), text(&p(b"a\xfe")));
        assert_ne!(text(&p(b"a\xff")), text(&p(b"a\xef\xbf\xbd")), "not the lossy U+FFFD");
    }
}
