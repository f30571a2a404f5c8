//! Knowing a file by its content: the one place that opens a candidate file
//! and reads the first bytes its [`Fingerprint`] is taken of.
//!
//! Files are opened with `O_NONBLOCK` and described by `fstat` of what was
//! opened, never by an earlier `stat` of the path: a rotation between the
//! scan and the open cannot make the agent read one file under another's
//! identity, and a FIFO put in a file's place cannot block the reader.
//! Where the agent may (it owns the file, or has `CAP_FOWNER`, as root
//! does), files are opened with `O_NOATIME`: a read after each write then
//! does not update the access time, which made every read of a followed
//! file dirty its inode (6% of the agent's CPU at 2,000 lines/s).

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;

use crate::positions::{Fingerprint, FINGERPRINT_BYTES};

/// Opens `path` for reading and returns the file with its own metadata.
/// `Ok(None)`: not a regular file.
pub fn open_regular(path: &Path) -> std::io::Result<Option<(File, std::fs::Metadata)>> {
    use std::os::unix::fs::OpenOptionsExt;
    let open = |flags| std::fs::OpenOptions::new().read(true).custom_flags(flags).open(path);
    let file = match open(libc::O_NONBLOCK | libc::O_NOATIME) {
        // Neither the owner nor privileged: open it as usual.
        Err(e) if e.raw_os_error() == Some(libc::EPERM) => open(libc::O_NONBLOCK)?,
        other => other?,
    };
    let meta = file.metadata()?;
    Ok(meta.is_file().then_some((file, meta)))
}

/// The first bytes of `file` (up to [`FINGERPRINT_BYTES`]; fewer when the
/// file is shorter or cannot be read) and their fingerprint.
pub fn of_file(file: &File) -> (Fingerprint, Vec<u8>) {
    let mut prefix = vec![0u8; FINGERPRINT_BYTES];
    let mut n = 0;
    while n < prefix.len() {
        match file.read_at(&mut prefix[n..], n as u64) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        }
    }
    prefix.truncate(n);
    (Fingerprint::of(&prefix), prefix)
}

/// False when `file` no longer starts with the bytes `fp` was taken of
/// (rewritten in place); read into the stack, as this runs at every turn of
/// every followed file.
pub fn still_matches(file: &File, fp: &Fingerprint) -> bool {
    let mut prefix = [0u8; FINGERPRINT_BYTES];
    let want = (fp.len as usize).min(FINGERPRINT_BYTES);
    let mut n = 0;
    while n < want {
        match file.read_at(&mut prefix[n..want], n as u64) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            // Unreadable now: the next read says so.
            Err(_) => return true,
        }
    }
    // Shorter than its fingerprint now: truncated, which the next read finds.
    n < want || fp.matches(&prefix[..n])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_replaced_between_the_scan_and_the_open_is_known_by_the_file_opened() {
        use std::os::unix::fs::MetadataExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("app.log");
        std::fs::write(&path, "old\n").unwrap();
        let scanned = std::fs::metadata(&path).unwrap();
        // Rotation between the scan's stat and the open.
        std::fs::rename(&path, dir.path().join("app.log.1")).unwrap();
        std::fs::write(&path, "new content\n").unwrap();
        let (_file, opened) = open_regular(&path).unwrap().unwrap();
        assert_ne!((opened.dev(), opened.ino()), (scanned.dev(), scanned.ino()));
        assert_eq!(opened.ino(), std::fs::metadata(&path).unwrap().ino());
        assert_eq!(opened.len(), 12, "the size is the opened file's, not the scanned one's");
    }

    #[test]
    fn a_fifo_put_in_a_files_place_after_the_scan_is_not_opened_and_does_not_block() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("app.log");
        let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        // Without O_NONBLOCK this open would wait for a writer for ever.
        assert!(open_regular(&path).unwrap().is_none());
        assert!(open_regular(dir.path()).unwrap().is_none(), "a directory is not a regular file either");
    }

    #[test]
    fn the_fingerprint_covers_at_most_the_first_kilobyte() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.log");
        std::fs::write(&path, "x".repeat(5000)).unwrap();
        let (fp, prefix) = of_file(&File::open(&path).unwrap());
        assert_eq!((fp.len as usize, prefix.len()), (FINGERPRINT_BYTES, FINGERPRINT_BYTES));
        std::fs::write(&path, "short\n").unwrap();
        let (fp2, prefix2) = of_file(&File::open(&path).unwrap());
        assert_eq!((fp2.len, prefix2.as_slice()), (6, &b"short\n"[..]));
        assert!(fp2.matches(&prefix2));
    }

    #[test]
    fn a_file_is_rewritten_only_when_its_first_bytes_change_and_it_is_still_long_enough() {
        use std::io::Write;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.log");
        std::fs::write(&path, "first line\n").unwrap();
        let (file, _) = open_regular(&path).unwrap().unwrap();
        let (fp, _) = of_file(&file);
        std::fs::OpenOptions::new().append(true).open(&path).unwrap().write_all(b"more\n").unwrap();
        assert!(still_matches(&file, &fp), "appended to");
        std::fs::write(&path, "first").unwrap();
        assert!(still_matches(&file, &fp), "shorter: left to the truncation check");
        std::fs::write(&path, "other line\nand more\n").unwrap();
        assert!(!still_matches(&file, &fp), "rewritten");
    }

    #[test]
    fn reading_an_own_file_leaves_its_access_time_alone() {
        use std::os::unix::fs::MetadataExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.log");
        std::fs::write(&path, "line\n").unwrap();
        // An access time older than the modification time: a plain read would update it (relatime).
        let old = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
        std::fs::File::options()
            .write(true)
            .open(&path)
            .unwrap()
            .set_times(std::fs::FileTimes::new().set_accessed(old))
            .unwrap();
        let before = std::fs::metadata(&path).unwrap().atime();
        let (file, _) = open_regular(&path).unwrap().unwrap();
        let _ = of_file(&file);
        assert_eq!(std::fs::metadata(&path).unwrap().atime(), before);
    }
}
