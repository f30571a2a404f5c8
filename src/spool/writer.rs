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
    /// Starts the writer on segment `seq` (already begun as `file`, `size` bytes long).
    pub(super) fn start(
        dir: PathBuf,
        seq: u64,
        file: File,
        size: u64,
        segment_bytes: u64,
        spool: Weak<SourceSpool>,
    ) -> std::io::Result<Handle> {
        let (tx, rx) = mpsc::channel::<Request>();
        let name = format!("spool-{}", dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default());
        std::thread::Builder::new().name(name).spawn(move || {
            let mut w = Writer { dir, seq, file, size, segment_bytes, spool, broken: false };
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

struct Writer {
    dir: PathBuf,
    seq: u64,
    file: File,
    size: u64,
    segment_bytes: u64,
    spool: Weak<SourceSpool>,
    /// A write failed and no new segment could be begun since: nothing more
    /// goes after the half-written record (the disk full, most likely).
    broken: bool,
}

impl Writer {
    fn commit(&mut self, group: Vec<Request>) {
        if self.broken {
            self.roll();
        }
        let mut written = 0u64;
        let mut result = if self.broken {
            Err(std::io::Error::other("no new spool segment could be begun after a failed write"))
        } else {
            Ok(())
        };
        for r in group.iter().filter(|_| !self.broken) {
            if let Err(e) = self.file.write_all(&r.bytes) {
                result = Err(e);
                break;
            }
            written += r.bytes.len() as u64;
        }
        if result.is_ok() {
            result = self.file.sync_data();
        }
        self.size += written;
        if let Some(s) = self.spool.upgrade() {
            s.grew(self.seq, written);
        }
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
        if let Err(e) = &result {
            tracing::error!(path = %path.display(), error = %e, "spool write failed; senders were refused, beginning a new segment");
        }
        if result.is_err() || self.size >= self.segment_bytes {
            self.roll();
        }
    }

    /// Seals the segment and begins the next.
    fn roll(&mut self) {
        match begin_segment(&self.dir, self.seq + 1) {
            Ok((file, header)) => {
                self.broken = false;
                self.seq += 1;
                self.file = file;
                self.size = header;
                if let Some(s) = self.spool.upgrade() {
                    s.began(self.seq, header);
                }
            }
            Err(e) => {
                // The current one may end with a half-written record: nothing
                // goes after it; the next append tries a new segment again.
                if !self.broken {
                    tracing::error!(dir = %self.dir.display(), error = %e, "cannot begin a new spool segment; appends are refused until one can be");
                }
                self.broken = true;
            }
        }
    }
}
