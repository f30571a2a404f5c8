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
//!
//! Each directory also holds `source.json` (see [`about`]): the source's
//! name, config and clients. A spool whose source is no longer configured
//! is *retired* (its writer stopped, every segment sealed) and delivered as
//! its source would have delivered it ([`Spools::orphans`]); once every
//! segment is delivered its directory goes. A source configured again under
//! that name writes to it again.

pub mod about;
pub mod encode;
mod record;
mod writer;

use std::collections::{BTreeSet, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

pub use about::About;
pub use encode::{stream_key, Encoder, Overflow, Stamps};
#[cfg(test)]
pub use record::resolved;
pub use record::{is_mark, is_stream, Record, StreamDef, MARK_PREFIX, STREAM_PREFIX};

/// Why lines were not spooled.
#[derive(Debug, thiserror::Error)]
pub enum SpoolError {
    #[error("the spool is full ({used} of {max} bytes)")]
    Full { used: u64, max: u64 },
    #[error("cannot write the spool at {path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error("the spool writer stopped")]
    Stopped,
    #[error("{bytes} bytes at once are over the {max} bytes one write may hold (a quarter of spool.max_bytes)")]
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
            s.set_clients(clients);
            s.revive(self.segment_bytes)?;
            return Ok(s.clone());
        }
        let dir = self.root.join(dir_name(name));
        let s = SourceSpool::load(&dir, clients, self.used.clone(), self.max)?;
        s.revive(self.segment_bytes)?;
        map.insert(name.to_string(), s.clone());
        Ok(s)
    }

    /// Retires the spools of sources not in `configured` (their receivers
    /// were stopped) and returns every spool on disk whose source is not
    /// configured and that still holds segments, with what is known of its
    /// source, to be delivered and then removed. A directory without
    /// segments is removed at once.
    pub fn orphans(&self, configured: &[&str]) -> Vec<(About, Arc<SourceSpool>)> {
        let dirs: HashSet<String> = configured.iter().map(|n| dir_name(n)).collect();
        let mut map = self.sources.lock().unwrap_or_else(|p| p.into_inner());
        for (name, s) in map.iter() {
            if !configured.contains(&name.as_str()) {
                s.retire();
            }
        }
        let Ok(entries) = std::fs::read_dir(&self.root) else { return Vec::new() };
        let mut out = Vec::new();
        for e in entries.flatten() {
            let Ok(dir_entry_name) = e.file_name().into_string() else { continue };
            if dirs.contains(&dir_entry_name) || !e.file_type().is_ok_and(|t| t.is_dir()) {
                continue;
            }
            let dir = e.path();
            let about = about::read(&dir).unwrap_or_else(|| {
                tracing::warn!(dir = %dir.display(), "a spool without source.json: its lines go on with the labels they were received with");
                About::unknown(&dir_entry_name)
            });
            if configured.contains(&about.name.as_str()) {
                tracing::warn!(dir = %dir.display(), source = %about.name, "a spool directory whose source.json names a configured source; left alone");
                continue;
            }
            let spool = match map.get(&about.name) {
                Some(s) if s.dir == dir => s.clone(),
                _ => match SourceSpool::load(&dir, about.clients.clone(), self.used.clone(), self.max) {
                    Ok(s) => {
                        map.insert(about.name.clone(), s.clone());
                        s
                    }
                    Err(e) => {
                        tracing::error!(error = %e, "cannot open the spool of a source no longer configured");
                        continue;
                    }
                },
            };
            if spool.segments().is_empty() {
                spool.remove_drained();
                continue;
            }
            out.push((about, spool));
        }
        out.sort_by(|a, b| a.0.name.cmp(&b.0.name));
        out
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
    /// None while retired.
    writer: Mutex<Option<writer::Handle>>,
    /// Its source is not configured: every segment is sealed and, once
    /// delivered, the directory goes.
    retired: AtomicBool,
    /// The `source.json` last written.
    about: Mutex<String>,
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
    /// Opens the spool in `dir` retired: every segment on disk sealed, no
    /// writer (see [`SourceSpool::revive`]).
    fn load(dir: &Path, clients: Vec<String>, used: Arc<AtomicU64>, max: u64) -> Result<Arc<Self>, SpoolError> {
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
        let (written, _) = tokio::sync::watch::channel(0);
        Ok(Arc::new(Self {
            dir: dir.to_path_buf(),
            writer: Mutex::new(None),
            retired: AtomicBool::new(true),
            about: Mutex::new(String::new()),
            segments: Mutex::new(segments),
            current: AtomicU64::new(u64::MAX),
            sizes: Mutex::new(sizes),
            used,
            max,
            clients: Mutex::new(clients),
            delivered: Mutex::new(HashMap::new()),
            written,
        }))
    }

    /// Starts writing again (a source of this name is configured): a new
    /// segment, so that one a crash left half-written is sealed, and a
    /// writer. Nothing when it is not retired.
    fn revive(self: &Arc<Self>, segment_bytes: u64) -> Result<(), SpoolError> {
        let mut w = self.writer.lock().unwrap_or_else(|p| p.into_inner());
        if w.is_some() {
            return Ok(());
        }
        let dir = &self.dir;
        let io = |e| SpoolError::Io { path: dir.clone(), source: e };
        let next = self.segments.lock().unwrap_or_else(|p| p.into_inner()).last().map_or(1, |s| s + 1);
        self.retired.store(false, Ordering::Release);
        self.current.store(0, Ordering::Release);
        // On a full disk the receiver starts all the same: its writer begins
        // a segment once there is room, and refuses appends until then.
        let (file, header) = match writer::begin_segment(dir, next) {
            Ok((file, header)) => {
                self.began(next, header);
                (Some(file), header)
            }
            Err(e) => {
                tracing::error!(dir = %dir.display(), error = %e,
                    "cannot begin a spool segment (the disk full?); the receiver refuses lines until it can");
                self.sealed_before(next);
                (None, 0)
            }
        };
        let spool = Arc::downgrade(self);
        let segment_writer =
            writer::Writer { dir: dir.clone(), seq: next, file, size: header, segment_bytes, spool, failing: false };
        let handle = writer::Handle::start(segment_writer).map_err(io)?;
        *w = Some(handle);
        Ok(())
    }

    /// Its source is no longer configured (its receiver stopped): the writer
    /// stops and every segment is sealed, to be delivered and deleted.
    pub fn retire(&self) {
        let handle = self.writer.lock().unwrap_or_else(|p| p.into_inner()).take();
        if handle.is_none() {
            return;
        }
        drop(handle);
        self.retired.store(true, Ordering::Release);
        self.current.store(u64::MAX, Ordering::Release);
        self.written.send_modify(|n| *n += 1);
    }

    /// True when its source is not configured (see [`SourceSpool::retire`]).
    pub fn is_retired(&self) -> bool {
        self.retired.load(Ordering::Acquire)
    }

    /// True when its source is not configured and every segment was delivered.
    pub fn is_drained(&self) -> bool {
        self.retired.load(Ordering::Acquire) && self.segments.lock().unwrap_or_else(|p| p.into_inner()).is_empty()
    }

    /// Removes a drained spool's directory (its `source.json` with it).
    pub fn remove_drained(&self) {
        if !self.is_drained() {
            return;
        }
        let _ = std::fs::remove_file(self.dir.join(about::ABOUT_FILE));
        match std::fs::remove_dir(&self.dir) {
            Ok(()) => {
                tracing::info!(dir = %self.dir.display(), "the spool of a source no longer configured is delivered; removed")
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => {
                tracing::warn!(dir = %self.dir.display(), error = %e, "cannot remove a delivered spool's directory")
            }
        }
    }

    /// Records what the spool is for in its `source.json` (written when it changed).
    pub fn describe(&self, about: &About) {
        let json = about.to_json();
        let mut last = self.about.lock().unwrap_or_else(|p| p.into_inner());
        if *last == json {
            return;
        }
        match about::write(&self.dir, &json) {
            Ok(()) => *last = json,
            Err(e) => tracing::warn!(dir = %self.dir.display(), error = %e,
                "cannot write the spool's source.json (if the source is removed, its lines go on with their received labels only)"),
        }
    }

    /// Appends `records` (already encoded, see [`Record::encode`]) and
    /// returns once they are on disk. Refused when the spool is full.
    pub async fn append(&self, encoded: Vec<u8>) -> Result<(), SpoolError> {
        let used = self.used.load(Ordering::Relaxed);
        if encoded.len() as u64 > self.max_append() {
            return Err(SpoolError::TooLarge { bytes: encoded.len() as u64, max: self.max_append() });
        }
        if used + encoded.len() as u64 > self.max {
            return Err(SpoolError::Full { used, max: self.max });
        }
        let w = self.writer.lock().unwrap_or_else(|p| p.into_inner()).clone();
        match w {
            Some(w) => w.append(encoded).await,
            None => Err(SpoolError::Stopped),
        }
    }

    /// The most bytes one append may hold: a quarter of the spool, so that
    /// an append can fit once delivery makes room.
    pub fn max_append(&self) -> u64 {
        self.max / 4
    }

    /// The bytes a receiver gathers into one append when it may cut its
    /// input where it likes (syslog, GELF, Kafka): at most 4 MiB.
    pub fn batch_bytes(&self) -> u64 {
        self.max_append().min(4 << 20)
    }

    /// True when `bytes` more would not fit now.
    pub fn is_full(&self, bytes: u64) -> bool {
        self.used.load(Ordering::Relaxed) + bytes > self.max
    }

    /// The values of the mark lines (see [`MARK_PREFIX`]) of the newest
    /// `last` segments, oldest first: what a source wrote for itself.
    pub fn marks(&self, last: usize) -> Vec<serde_json::Value> {
        let segs = self.segments();
        let mut out = Vec::new();
        for seq in segs.iter().skip(segs.len().saturating_sub(last)) {
            let Ok(data) = std::fs::read(segment_path(&self.dir, *seq)) else { continue };
            for line in data.split(|&b| b == b'\n').filter(|l| record::is_mark(l)) {
                if let Ok(serde_json::Value::Object(mut m)) = serde_json::from_slice(line) {
                    if let Some(v) = m.remove("tailship_mark") {
                        out.push(v);
                    }
                }
            }
        }
        out
    }

    /// Segments on disk, oldest first.
    pub fn segments(&self) -> Vec<u64> {
        self.segments.lock().unwrap_or_else(|p| p.into_inner()).iter().copied().collect()
    }

    /// True when segment `seq` will not grow any more.
    pub fn is_sealed(&self, seq: u64) -> bool {
        seq < self.current.load(Ordering::Acquire)
    }

    /// Bytes of segment `seq` written and synced (what readers may read:
    /// a write that fails is undone, so what lies past it may go).
    pub fn synced(&self, seq: u64) -> u64 {
        self.sizes.lock().unwrap_or_else(|p| p.into_inner()).get(&seq).copied().unwrap_or(0)
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
        // Never lowered: a retired spool (current at u64::MAX) stays all sealed.
        self.current.fetch_max(seq, Ordering::AcqRel);
        self.written.send_modify(|n| *n += 1);
    }

    /// The writer sealed every segment before `seq` (a write failed, or it
    /// could not begin one): they can be delivered and deleted.
    fn sealed_before(&self, seq: u64) {
        self.current.fetch_max(seq, Ordering::AcqRel);
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
