//! The spool: where network sources' lines wait on disk.
//!
//! A receiver (see `source/net/`) turns what it received into [`Record`]s
//! and appends them to its source's spool with [`SourceSpool::append`],
//! which returns once they are written *and* fsynced (group commit: the
//! writer thread takes everything that arrived while it was busy, writes it
//! and syncs once). Only then is the sender told the lines were received.
//!
//! Each source has its own directory under `[spool] path`, holding numbered
//! segments (`0000000000000001.seg`, ...): a header line, then one JSON
//! record per line. The writer appends to the newest; past
//! `spool.segment_bytes` it begins the next, and at every start it begins a
//! new one (a record half-written by a crash is never followed by more).
//!
//! The shipping path reads segments like files (see `source/net/reader.rs`):
//! each client has its own reader and its own offsets in the positions
//! file, which move only once the service acknowledged the lines. A sealed
//! segment (one with a newer beside it) that every client of the source
//! has delivered to its end is deleted.
//!
//! The spools of all sources together hold at most `spool.max_bytes`: past
//! it, [`SourceSpool::append`] refuses with [`SpoolError::Full`] and the
//! receiver answers 429, stops reading its sockets, or counts a UDP drop.

mod record;
mod writer;

use std::collections::{BTreeSet, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

pub use record::Record;

/// Why lines were not spooled.
#[derive(Debug, thiserror::Error)]
pub enum SpoolError {
    #[error("the spool is full ({used} of {max} bytes)")]
    Full { used: u64, max: u64 },
    #[error("cannot write the spool at {path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error("the spool writer stopped")]
    Stopped,
    #[error("{bytes} bytes at once can never fit a spool of {max} bytes")]
    TooLarge { bytes: u64, max: u64 },
}

/// Every source's spool: the shared byte bound.
#[derive(Debug)]
pub struct Spools {
    root: PathBuf,
    max: u64,
    segment_bytes: u64,
    used: Arc<AtomicU64>,
    sources: Mutex<HashMap<String, Arc<SourceSpool>>>,
}

impl Spools {
    pub fn new(config: &crate::config::SpoolConfig) -> Arc<Self> {
        Arc::new(Self {
            root: config.path.clone(),
            max: config.max_bytes.get(),
            segment_bytes: config.segment_bytes.get(),
            used: Arc::new(AtomicU64::new(0)),
            sources: Mutex::new(HashMap::new()),
        })
    }

    /// The spool of source `name` (opened, and its writer started, on first use).
    /// `clients`: the clients that must deliver a segment before it is deleted.
    pub fn source(&self, name: &str, clients: Vec<String>) -> Result<Arc<SourceSpool>, SpoolError> {
        let mut map = self.sources.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(s) = map.get(name) {
            return Ok(s.clone());
        }
        let dir = self.root.join(dir_name(name));
        let s = SourceSpool::open(&dir, clients, self.used.clone(), self.max, self.segment_bytes)?;
        map.insert(name.to_string(), s.clone());
        Ok(s)
    }

    /// The spool of source `name`, if it was opened.
    pub fn get(&self, name: &str) -> Option<Arc<SourceSpool>> {
        self.sources.lock().unwrap_or_else(|p| p.into_inner()).get(name).cloned()
    }

    /// Bytes of every segment on disk.
    pub fn used(&self) -> u64 {
        self.used.load(Ordering::Relaxed)
    }
}

/// A source name as a directory name: anything but `[A-Za-z0-9._-]` becomes `_`.
fn dir_name(name: &str) -> String {
    let s: String =
        name.chars().map(|c| if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') { c } else { '_' }).collect();
    if s.is_empty() || s.starts_with('.') {
        format!("_{s}")
    } else {
        s
    }
}

/// `encoded` records cut (at record ends) into pieces of at most `max`
/// bytes each (a record longer than `max` is a piece of its own).
pub fn pieces(encoded: &[u8], max: usize) -> Vec<&[u8]> {
    let mut out = Vec::new();
    let mut rest = encoded;
    while !rest.is_empty() {
        if rest.len() <= max {
            out.push(rest);
            break;
        }
        let cut = match memchr::memrchr(b'\n', &rest[..max]) {
            Some(i) => i + 1,
            None => memchr::memchr(b'\n', rest).map_or(rest.len(), |i| i + 1),
        };
        out.push(&rest[..cut]);
        rest = &rest[cut..];
    }
    out
}

/// The path of segment `seq` in `dir`.
pub fn segment_path(dir: &Path, seq: u64) -> PathBuf {
    dir.join(format!("{seq:016}.seg"))
}

/// One source's spool: its segments, its writer, and which clients have delivered what.
#[derive(Debug)]
pub struct SourceSpool {
    pub dir: PathBuf,
    writer: std::sync::OnceLock<writer::Handle>,
    /// Segments on disk, oldest first.
    segments: Mutex<BTreeSet<u64>>,
    /// The segment being written (every older one is sealed).
    current: AtomicU64,
    /// Bytes on disk per segment.
    sizes: Mutex<HashMap<u64, u64>>,
    used: Arc<AtomicU64>,
    max: u64,
    /// Clients that must deliver a segment before it goes.
    clients: Mutex<Vec<String>>,
    delivered: Mutex<HashMap<u64, HashSet<String>>>,
    /// Bumped at every write (and deletion): readers wait on it.
    written: tokio::sync::watch::Sender<u64>,
}

impl SourceSpool {
    fn open(
        dir: &Path,
        clients: Vec<String>,
        used: Arc<AtomicU64>,
        max: u64,
        segment_bytes: u64,
    ) -> Result<Arc<Self>, SpoolError> {
        let io = |e| SpoolError::Io { path: dir.to_path_buf(), source: e };
        std::fs::create_dir_all(dir).map_err(io)?;
        let mut segments = BTreeSet::new();
        let mut sizes = HashMap::new();
        for e in std::fs::read_dir(dir).map_err(io)? {
            let e = e.map_err(io)?;
            let name = e.file_name();
            let Some(seq) = name.to_str().and_then(|n| n.strip_suffix(".seg")).and_then(|n| n.parse::<u64>().ok())
            else {
                continue;
            };
            let len = e.metadata().map(|m| m.len()).unwrap_or(0);
            segments.insert(seq);
            sizes.insert(seq, len);
            used.fetch_add(len, Ordering::Relaxed);
        }
        let next = segments.last().map_or(1, |s| s + 1);
        let (written, _) = tokio::sync::watch::channel(0);
        let spool = Arc::new(Self {
            dir: dir.to_path_buf(),
            writer: std::sync::OnceLock::new(),
            segments: Mutex::new(segments),
            current: AtomicU64::new(0),
            sizes: Mutex::new(sizes),
            used,
            max,
            clients: Mutex::new(clients),
            delivered: Mutex::new(HashMap::new()),
            written,
        });
        // A new segment at every start: one a crash left half-written is sealed.
        let (file, header) = writer::begin_segment(dir, next).map_err(io)?;
        spool.began(next, header);
        let handle =
            writer::Handle::start(dir.to_path_buf(), next, file, header, segment_bytes, Arc::downgrade(&spool))
                .map_err(io)?;
        let _ = spool.writer.set(handle);
        Ok(spool)
    }

    /// Appends `records` (already encoded, see [`Record::encode`]) and
    /// returns once they are on disk. Refused when the spool is full.
    pub async fn append(&self, encoded: Vec<u8>) -> Result<(), SpoolError> {
        let used = self.used.load(Ordering::Relaxed);
        if encoded.len() as u64 > self.max_append() {
            return Err(SpoolError::TooLarge { bytes: encoded.len() as u64, max: self.max });
        }
        if used + encoded.len() as u64 > self.max {
            return Err(SpoolError::Full { used, max: self.max });
        }
        match self.writer.get() {
            Some(w) => w.append(encoded).await,
            None => Err(SpoolError::Stopped),
        }
    }

    /// The most bytes one append may hold: a quarter of the spool (at most
    /// 4 MiB), so that an append can fit once delivery makes room.
    pub fn max_append(&self) -> u64 {
        (self.max / 4).min(4 << 20)
    }

    /// True when `bytes` more would not fit now.
    pub fn is_full(&self, bytes: u64) -> bool {
        self.used.load(Ordering::Relaxed) + bytes > self.max
    }

    /// Segments on disk, oldest first.
    pub fn segments(&self) -> Vec<u64> {
        self.segments.lock().unwrap_or_else(|p| p.into_inner()).iter().copied().collect()
    }

    /// True when segment `seq` will not grow any more.
    pub fn is_sealed(&self, seq: u64) -> bool {
        seq < self.current.load(Ordering::Acquire)
    }

    /// Bytes of this source's segments on disk.
    pub fn bytes(&self) -> u64 {
        self.sizes.lock().unwrap_or_else(|p| p.into_inner()).values().sum()
    }

    /// A receiver of writes, for readers to wait on.
    pub fn watch(&self) -> tokio::sync::watch::Receiver<u64> {
        self.written.subscribe()
    }

    /// The clients a segment waits for (a reload may change them).
    pub fn set_clients(&self, clients: Vec<String>) {
        *self.clients.lock().unwrap_or_else(|p| p.into_inner()) = clients;
    }

    /// Client `client` delivered sealed segment `seq` to its end: once every
    /// client has, it is deleted. Returns true when it was.
    pub fn delivered(&self, seq: u64, client: &str) -> bool {
        let clients = self.clients.lock().unwrap_or_else(|p| p.into_inner()).clone();
        let all = {
            let mut d = self.delivered.lock().unwrap_or_else(|p| p.into_inner());
            let set = d.entry(seq).or_default();
            set.insert(client.to_string());
            let all = clients.iter().all(|c| set.contains(c));
            if all {
                d.remove(&seq);
            }
            all
        };
        if !all {
            return false;
        }
        let path = segment_path(&self.dir, seq);
        if let Err(e) = std::fs::remove_file(&path) {
            if e.kind() != std::io::ErrorKind::NotFound {
                tracing::warn!(path = %path.display(), error = %e, "cannot delete a delivered spool segment");
                return false;
            }
        }
        self.segments.lock().unwrap_or_else(|p| p.into_inner()).remove(&seq);
        if let Some(n) = self.sizes.lock().unwrap_or_else(|p| p.into_inner()).remove(&seq) {
            self.used.fetch_sub(n, Ordering::Relaxed);
        }
        self.written.send_modify(|n| *n += 1);
        tracing::debug!(path = %path.display(), "spool segment delivered to every client; deleted");
        true
    }

    /// The writer began segment `seq`.
    fn began(&self, seq: u64, header: u64) {
        self.segments.lock().unwrap_or_else(|p| p.into_inner()).insert(seq);
        self.sizes.lock().unwrap_or_else(|p| p.into_inner()).insert(seq, header);
        self.used.fetch_add(header, Ordering::Relaxed);
        self.current.store(seq, Ordering::Release);
        self.written.send_modify(|n| *n += 1);
    }

    /// The writer appended `bytes` to segment `seq`.
    fn grew(&self, seq: u64, bytes: u64) {
        *self.sizes.lock().unwrap_or_else(|p| p.into_inner()).entry(seq).or_default() += bytes;
        self.used.fetch_add(bytes, Ordering::Relaxed);
        self.written.send_modify(|n| *n += 1);
    }
}

#[cfg(test)]
mod tests;
