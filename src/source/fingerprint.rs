//! Knowing a file by its content: the one place that opens a candidate file
//! and reads the first bytes its [`Fingerprint`] is taken of.
//!
//! Files are opened with `O_NONBLOCK` and described by `fstat` of what was
//! opened, never by an earlier `stat` of the path: a rotation between the
//! scan and the open cannot make the agent read one file under another's
//! identity, and a FIFO put in a file's place cannot block the reader.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;

use crate::positions::{Fingerprint, FINGERPRINT_BYTES};

/// Opens `path` for reading and returns the file with its own metadata.
/// `Ok(None)`: not a regular file.
pub fn open_regular(path: &Path) -> std::io::Result<Option<(File, std::fs::Metadata)>> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK).open(path)?;
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
}
