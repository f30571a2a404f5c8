//! The spool's writer thread: group commit. Appends that arrive while it
//! writes and syncs wait in its channel; it takes them all at once, writes
//! them, syncs the segment once, and answers each.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::sync::Weak;

use super::{segment_path, SourceSpool, SpoolError};

/// Bytes taken into one write and sync, at most (more waits for the next).
const MAX_GROUP_BYTES: usize = 8 << 20;

struct Request {
    bytes: Vec<u8>,
    done: tokio::sync::oneshot::Sender<Result<(), SpoolError>>,
}

/// The way to the writer thread (it ends once every handle is dropped).
#[derive(Debug, Clone)]
pub(super) struct Handle {
    tx: mpsc::Sender<Request>,
}

impl std::fmt::Debug for Request {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Request({} bytes)", self.bytes.len())
    }
}

/// Creates segment `seq` with its header line, synced with its directory.
pub(super) fn begin_segment(dir: &Path, seq: u64) -> std::io::Result<(File, u64)> {
    let path = segment_path(dir, seq);
    std::fs::create_dir_all(dir)?;
    let mut f = std::fs::OpenOptions::new().create_new(true).append(true).open(&path)?;
    let header = format!(
        "{{\"tailship_spool\":1,\"segment\":{seq},\"created_ns\":{},\"pid\":{}}}\n",
        crate::util::now_ns(),
        std::process::id()
    );
    let written = f.write_all(header.as_bytes()).and_then(|_| f.sync_all()).and_then(|_| File::open(dir)?.sync_all());
    if let Err(e) = written {
        // Not begun: the next try creates it again.
        let _ = std::fs::remove_file(&path);
        return Err(e);
    }
    Ok((f, header.len() as u64))
}

impl Handle {
    /// Starts `w` on a thread of its own.
    pub(super) fn start(mut w: Writer) -> std::io::Result<Handle> {
        let (tx, rx) = mpsc::channel::<Request>();
        let name = format!("spool-{}", w.dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default());
        std::thread::Builder::new().name(name).spawn(move || {
            while let Ok(first) = rx.recv() {
                let mut group = vec![first];
                let mut bytes = group[0].bytes.len();
                while bytes < MAX_GROUP_BYTES {
                    match rx.try_recv() {
                        Ok(r) => {
                            bytes += r.bytes.len();
                            group.push(r);
                        }
                        Err(_) => break,
                    }
                }
                w.commit(group);
            }
        })?;
        Ok(Handle { tx })
    }

    /// Sends `bytes` to the writer and waits until they are synced.
    pub(super) async fn append(&self, bytes: Vec<u8>) -> Result<(), SpoolError> {
        let (done, wait) = tokio::sync::oneshot::channel();
        self.tx.send(Request { bytes, done }).map_err(|_| SpoolError::Stopped)?;
        wait.await.map_err(|_| SpoolError::Stopped)?
    }
}

/// The smallest a segment is let grow before it is sealed, however little room the disk has.
const MIN_SEGMENT_BYTES: u64 = 64 << 10;

/// Bytes free on the file system of `dir` (for an unprivileged writer), if it can tell.
fn free_bytes(dir: &Path) -> Option<u64> {
    use std::os::unix::ffi::OsStrExt;
    let path = std::ffi::CString::new(dir.as_os_str().as_bytes()).ok()?;
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: `path` is a valid C string and `st` a statvfs the call fills.
    if unsafe { libc::statvfs(path.as_ptr(), &mut st) } != 0 {
        return None;
    }
    Some((st.f_bavail as u64).saturating_mul(st.f_frsize as u64))
}

/// The writer of a spool directory, made by the spool and run by
/// [`Handle::start`]: on segment `seq`, already begun as `file` (`size`
/// bytes long), or, when `file` is `None` (it could not be begun: the disk
/// full), to be begun by the first append that finds room.
pub(super) struct Writer {
    pub(super) dir: PathBuf,
    /// The segment being written, or (while `file` is none) the next to begin.
    pub(super) seq: u64,
    pub(super) file: Option<File>,
    pub(super) size: u64,
    pub(super) segment_bytes: u64,
    pub(super) spool: Weak<SourceSpool>,
    /// Writes fail (said once until one succeeds); false to start.
    pub(super) failing: bool,
}

impl Writer {
    /// Writes a group, syncs it once and answers each request. A failed
    /// write (the disk full) is undone: the segment is cut back to its last
    /// whole record, so nothing half-written or refused stays, and sealed,
    /// so that once delivered it is deleted and gives its room back; the
    /// next segment is begun by the next append that finds room.
    fn commit(&mut self, group: Vec<Request>) {
        let result = self.write(&group);
        let path = segment_path(&self.dir, self.seq);
        for r in group {
            let answer = match &result {
                Ok(()) => Ok(()),
                Err(e) => {
                    Err(SpoolError::Io { path: path.clone(), source: std::io::Error::new(e.kind(), e.to_string()) })
                }
            };
            let _ = r.done.send(answer);
        }
        match &result {
            Ok(()) => {
                if self.failing {
                    tracing::info!(dir = %self.dir.display(), "the spool is written again");
                }
                self.failing = false;
                if self.size >= self.limit() {
                    self.seal();
                    // Begun now, so an append finds it ready (else the next append begins it).
                    let _ = self.begin();
                }
            }
            Err(e) => {
                if !self.failing {
                    tracing::error!(dir = %self.dir.display(), error = %e,
                        "spool write failed; senders are refused (syslog connections wait) until there is room");
                }
                self.failing = true;
            }
        }
    }

    fn write(&mut self, group: &[Request]) -> std::io::Result<()> {
        if self.file.is_none() {
            self.begin()?;
        }
        let Some(file) = self.file.as_mut() else { return Err(std::io::Error::other("no spool segment")) };
        let mut written = 0u64;
        let mut result = Ok(());
        for r in group {
            if let Err(e) = file.write_all(&r.bytes) {
                result = Err(e);
                break;
            }
            written += r.bytes.len() as u64;
        }
        if result.is_ok() {
            result = file.sync_data();
        }
        if let Err(e) = result {
            // Undo the group: every request of it is refused, so none of it may stay.
            let _ = file.set_len(self.size).and_then(|_| file.sync_data());
            self.seal();
            return Err(e);
        }
        self.size += written;
        if let Some(s) = self.spool.upgrade() {
            s.grew(self.seq, written);
        }
        Ok(())
    }

    /// The size past which the segment is sealed: `segment_bytes`, or less
    /// when the disk has little room, so that a segment never holds room
    /// that delivery could give back.
    fn limit(&self) -> u64 {
        match free_bytes(&self.dir) {
            Some(free) => self.segment_bytes.min((free / 4).max(MIN_SEGMENT_BYTES)),
            None => self.segment_bytes,
        }
    }

    /// Seals the segment being written (nothing more goes into it).
    fn seal(&mut self) {
        if self.file.take().is_some() {
            self.seq += 1;
            self.size = 0;
            if let Some(s) = self.spool.upgrade() {
                s.sealed_before(self.seq);
            }
        }
    }

    /// Begins segment `seq`.
    fn begin(&mut self) -> std::io::Result<()> {
        let (file, header) = begin_segment(&self.dir, self.seq)?;
        self.file = Some(file);
        self.size = header;
        if let Some(s) = self.spool.upgrade() {
            s.began(self.seq, header);
        }
        Ok(())
    }
}
