//! A client's reader of a network source's spool: segments read like files,
//! oldest first, from the client's delivered offset; each chunk carries the
//! segment's positions key and the offset after its last record, so the
//! offset moves only once the service acknowledged them. A sealed segment
//! delivered to its end is finished in the positions and offered for
//! deletion (see [`crate::spool::SourceSpool::delivered`]).
//!
//! Records that name their stream by a stream line (see
//! [`crate::spool::StreamDef`]) take its tenant and labels; a segment opened
//! past its start first reads the stream lines before its offset. Structured
//! metadata goes on only to a client that takes it
//! (`client.structured_metadata`); otherwise it is left off and counted.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::fs::File;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::metrics::Metrics;
use crate::pipeline::{FileContext, SourceStages};
use crate::positions::{AckRef, Fingerprint, Positions, Replay, FINGERPRINT_BYTES};
use crate::queue::{Chunk, Interner, StreamRef};
use crate::source::Outlet;
use crate::spool::{segment_path, Record, SourceSpool, StreamDef};

use super::streams::ReceivedStreams;

/// Bytes read from a segment at once.
const READ_BYTES: usize = 1 << 20;
/// How often delivery is looked at while nothing new arrives.
const POLL: Duration = Duration::from_millis(100);

/// Streams by (tenant, the record's labels).
type Streams = HashMap<(Option<String>, Vec<(String, String)>), StreamRef>;
/// Builds a source's stages for a tenant.
pub type MakeStages = Box<dyn Fn(Option<&str>) -> SourceStages + Send>;

/// What a reader needs.
pub struct SpoolReader {
    pub spool: Arc<SourceSpool>,
    pub client: String,
    pub name: Arc<str>,
    /// The source's static labels (with the client's external labels); a record's own win.
    pub labels: BTreeMap<String, String>,
    /// `client.tenant_id`, for records without a tenant.
    pub default_tenant: Option<Arc<str>>,
    /// The source's stages, compiled; none: records go on as they are.
    pub stages: Option<StagesFor>,
    pub max_line_bytes: usize,
    pub positions: Arc<Positions>,
    pub interner: Arc<Interner>,
    /// `client.structured_metadata`: else records' metadata is left off (and counted).
    pub structured_metadata: bool,
    /// Received label sets per tenant beyond which a line keeps the source's
    /// own labels (see [`super::streams`]); 0: no bound.
    pub max_streams: usize,
    /// A received label set that brought no line for this long no longer
    /// counts toward `max_streams`; zero: never forgotten.
    pub stream_idle: Duration,
    pub out: Outlet,
}

/// A source's stages, run per tenant (a record's tenant is kept through them).
pub struct StagesFor {
    pub make: MakeStages,
    built: HashMap<Option<String>, (SourceStages, FileContext)>,
}

impl StagesFor {
    pub fn new(make: MakeStages) -> Self {
        Self { make, built: HashMap::new() }
    }
}

struct Segment {
    seq: u64,
    key: u64,
    file: File,
    /// Where the next record starts (the offset handed on).
    offset: u64,
    /// The stream lines read so far, by id, with the stream each became.
    defs: HashMap<u32, (StreamDef<'static>, Option<Known>)>,
    /// After a restart: how the records past the delivered offset went
    /// out, so that those of acknowledged batches are not sent again and
    /// the others go as they went (see [`crate::source::replay`]).
    replay: Option<Replay>,
}

/// The stream a stream line became with its own labels, and the key of its
/// label set in [`ReceivedStreams`] (asked again for each line: a label set
/// forgotten while quiet needs room again).
struct Known {
    stream: StreamRef,
    key: Option<u64>,
}

/// The stream lines of `file` before `offset`.
fn defs_before(file: &File, offset: u64) -> HashMap<u32, (StreamDef<'static>, Option<Known>)> {
    let mut defs = HashMap::new();
    let mut at = 0u64;
    let mut carry: Vec<u8> = Vec::new();
    let mut buf = vec![0u8; READ_BYTES];
    while at < offset {
        let want = ((offset - at) as usize).min(READ_BYTES);
        let n = match file.read_at(&mut buf[..want], at) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        at += n as u64;
        carry.extend_from_slice(&buf[..n]);
        let Some(last) = memchr::memrchr(b'\n', &carry) else { continue };
        for line in carry[..last].split(|&b| b == b'\n') {
            if let Some(d) = StreamDef::decode(line) {
                defs.insert(d.id, (d.into_owned(), None));
            }
        }
        carry.drain(..=last);
    }
    defs
}

impl SpoolReader {
    /// Reads until `out.cancel` fires.
    pub fn run(mut self) {
        let mut open: BTreeMap<u64, Segment> = BTreeMap::new();
        let mut finished: HashSet<u64> = HashSet::new();
        let mut watch = self.spool.watch();
        let mut streams: Streams = HashMap::new();
        let mut received = ReceivedStreams::new(self.max_streams, self.stream_idle);
        while !self.out.stopped() {
            if self.spool.is_retired() {
                // Its source is gone: no receiver keeps its gauge.
                let gauge = &super::metrics::NetMetrics::get().spool_bytes;
                if self.spool.is_drained() {
                    // Every segment was delivered.
                    let _ = gauge.remove_label_values(&[&self.name]);
                    self.spool.remove_drained();
                    break;
                }
                gauge.with_label_values(&[&self.name]).set(self.spool.bytes() as i64);
            }
            let on_disk = self.spool.segments();
            finished.retain(|s| on_disk.contains(s));
            let new: Vec<u64> =
                on_disk.iter().copied().filter(|s| !finished.contains(s) && !open.contains_key(s)).collect();
            for seq in new {
                if let Some(seg) = self.open(seq) {
                    open.insert(seq, seg);
                }
            }
            let mut progressed = false;
            let mut done = Vec::new();
            for seg in open.values_mut() {
                let sealed = self.spool.is_sealed(seg.seq);
                match self.read(seg, &mut streams, &mut received) {
                    Some(true) => progressed = true,
                    Some(false) => {
                        let delivered = self.positions.committed(seg.key).unwrap_or(0) >= seg.offset;
                        if sealed && delivered {
                            done.push(seg.seq);
                        }
                    }
                    None => done.push(seg.seq),
                }
                if self.out.stopped() {
                    break;
                }
                if !sealed {
                    break;
                }
            }
            for seq in done {
                if let Some(seg) = open.remove(&seq) {
                    self.positions.finish(seg.key, seg.offset);
                    finished.insert(seq);
                    self.spool.delivered(seq, &self.client);
                    progressed = true;
                }
            }
            if !progressed {
                let handle = self.out.handle.clone();
                let cancel = self.out.cancel.clone();
                handle.block_on(async {
                    tokio::select! {
                        _ = watch.changed() => {}
                        _ = tokio::time::sleep(POLL) => {}
                        _ = cancel.cancelled() => {}
                    }
                });
            }
        }
        for seg in open.values_mut() {
            let size = seg.file.metadata().map(|m| m.len()).unwrap_or(seg.offset);
            self.positions.keep_replay(seg.key, seg.replay.take(), seg.offset);
            self.positions.release(seg.key, size, seg.offset);
        }
    }

    /// Opens segment `seq` at this client's offset (tracked from 0 when new).
    fn open(&self, seq: u64) -> Option<Segment> {
        let path = segment_path(&self.spool.dir, seq);
        let file = File::open(&path).ok()?;
        let meta = file.metadata().ok()?;
        let mut prefix = vec![0u8; FINGERPRINT_BYTES.min(meta.len() as usize)];
        let n = file.read_at(&mut prefix, 0).ok()?;
        prefix.truncate(n);
        if prefix.is_empty() {
            return None;
        }
        let (key, offset) = match self.positions.resume(&prefix, &path, meta.dev(), meta.ino()) {
            Some(found) => found,
            None => (self.positions.track(&path, Fingerprint::of(&prefix), meta.dev(), meta.ino(), 0), 0),
        };
        let defs = if offset > 0 { defs_before(&file, offset) } else { HashMap::new() };
        let replay = self.positions.take_replay(key, offset);
        Some(Segment { seq, key, file, offset, defs, replay })
    }

    /// Reads what `seg` holds past its offset into one chunk and queues it.
    /// `Some(true)`: something was read; `Some(false)`: nothing new; `None`: the segment is gone.
    fn read(&mut self, seg: &mut Segment, streams: &mut Streams, received: &mut ReceivedStreams) -> Option<bool> {
        // A record longer than one read (a long message) is read whole: the
        // buffer grows until it holds a record's end.
        // Only what was synced: a group whose write failed is cut off again.
        let mut avail = self.spool.synced(seg.seq).saturating_sub(seg.offset) as usize;
        // During a replay a read stops where the current record of lines in
        // flight ends, so that each chunk lies within one record.
        if let Some(b) = seg.replay.as_ref().and_then(|r| r.boundary()).filter(|b| *b > seg.offset) {
            avail = avail.min((b - seg.offset) as usize);
        }
        if avail == 0 {
            return Some(false);
        }
        received.tick(Instant::now());
        let mut want = READ_BYTES.min(avail);
        let (buf, last_nl) = loop {
            let mut buf = vec![0u8; want];
            let n = match seg.file.read_at(&mut buf, seg.offset) {
                Ok(n) => n,
                Err(e) => {
                    tracing::warn!(source = %self.name, segment = seg.seq, error = %e, "cannot read a spool segment");
                    return None;
                }
            };
            buf.truncate(n);
            match memchr::memrchr(b'\n', &buf) {
                Some(i) => break (buf, i),
                None if n == want && want < avail => want = (want * 2).min(avail),
                None => return Some(false),
            }
        };
        let whole = &buf[..=last_nl];
        let mut chunk = Chunk::with_capacity(self.name.clone(), whole.len());
        let mut damaged = 0u64;
        let mut at = seg.offset;
        for line in whole.split(|&b| b == b'\n') {
            let start = at;
            at += line.len() as u64 + 1;
            if line.is_empty() || start == 0 || crate::spool::is_mark(line) {
                continue;
            }
            if crate::spool::is_stream(line) {
                match StreamDef::decode(line) {
                    Some(d) => {
                        seg.defs.insert(d.id, (d.into_owned(), None));
                    }
                    None => damaged += 1,
                }
                continue;
            }
            match Record::decode(line) {
                Some(r) => {
                    if !self.add(&r, &mut seg.defs, &mut chunk, streams, received) {
                        damaged += 1;
                    }
                }
                None => damaged += 1,
            }
        }
        let end = seg.offset + whole.len() as u64;
        if damaged > 0 {
            tracing::warn!(source = %self.name, segment = seg.seq, records = damaged, "damaged spool records skipped");
            Metrics::get().lines_dropped.with_label_values(&[&self.name, "spool_damaged"]).inc_by(damaged);
        }
        if let Some(r) = seg.replay.as_mut() {
            let path = segment_path(&self.spool.dir, seg.seq);
            if crate::source::replay::ended(crate::source::replay::apply(r, &mut chunk, end), &path.display()) {
                seg.replay = None;
            }
        }
        let lines = chunk.entries.len() as u64;
        chunk.ack = Some(AckRef { file: seg.key, offset: end });
        if !self.out.send(chunk) {
            return Some(false);
        }
        Metrics::get().lines_read.with_label_values(&[&self.name]).inc_by(lines);
        seg.offset = end;
        Some(true)
    }

    /// One record into `chunk`: through the stages if the source has some.
    /// False when it names a stream line the segment does not hold (damaged).
    fn add(
        &mut self,
        r: &Record<'_>,
        defs: &mut HashMap<u32, (StreamDef<'static>, Option<Known>)>,
        chunk: &mut Chunk,
        streams: &mut Streams,
        received: &mut ReceivedStreams,
    ) -> bool {
        let line = crate::util::cut_at_char(&r.line, self.max_line_bytes);
        let meta = self.metadata(r);
        let (tenant, labels, known) = match r.stream {
            Some(id) => match defs.get_mut(&id) {
                Some((d, known)) => (d.tenant.as_deref(), &d.labels, Some(known)),
                None => return false,
            },
            None => (r.tenant.as_deref(), &r.labels, None),
        };
        let set_key = match known.as_deref() {
            Some(Some(k)) => k.key,
            _ => received.key(tenant, labels.iter().map(|(k, v)| (k.as_ref(), v.as_ref()))),
        };
        let own = received.admit(&self.name, tenant, set_key);
        if let (true, Some(Some(k))) = (own, known.as_deref()) {
            if self.stages.is_none() {
                chunk.push_line(&k.stream, line, r.ts, meta.as_deref());
                return true;
            }
        }
        let labels: &[_] = if own { labels.as_slice() } else { &[] };
        if let Some(stages) = &mut self.stages {
            let tenant = tenant.map(str::to_string).or_else(|| self.default_tenant.as_deref().map(str::to_string));
            let make = &stages.make;
            let (st, ctx) = stages.built.entry(tenant.clone()).or_insert_with(|| {
                let st = make(tenant.as_deref());
                let ctx = st.context_for(self.labels.clone());
                (st, ctx)
            });
            let labels: Vec<(&str, &str)> = labels.iter().map(|(k, v)| (k.as_ref(), v.as_ref())).collect();
            let before = chunk.entries.len();
            st.process_with_labels(ctx, line.as_bytes(), r.ts, &labels, chunk);
            if let Some(m) = &meta {
                keep_metadata(chunk, before, m);
            }
            return true;
        }
        let stream = self.stream_for(streams, tenant, labels);
        if let Some(known) = known {
            // A label set left off is asked for again with its next line.
            *known = own.then(|| Known { stream: stream.clone(), key: set_key });
        }
        chunk.push_line(&stream, line, r.ts, meta.as_deref());
        true
    }

    /// A record's structured metadata as JSON, when the client sends it
    /// (else left off and counted).
    fn metadata(&self, r: &Record<'_>) -> Option<String> {
        if r.metadata.is_empty() {
            None
        } else if self.structured_metadata {
            r.metadata_json()
        } else {
            super::metrics::NetMetrics::get()
                .metadata_dropped
                .with_label_values(&[&*self.name, self.client.as_str()])
                .inc();
            None
        }
    }

    /// The stream of the source's labels with `labels` over them, in
    /// `tenant` (or the client's): interned once, then looked up in
    /// `streams` (emptied when it holds over 4096).
    fn stream_for(
        &self,
        streams: &mut Streams,
        tenant: Option<&str>,
        labels: &[(Cow<'_, str>, Cow<'_, str>)],
    ) -> StreamRef {
        let key = (
            tenant.map(str::to_string),
            labels.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect::<Vec<_>>(),
        );
        match streams.get(&key) {
            Some(s) => s.clone(),
            None => {
                let mut all = self.labels.clone();
                for (k, v) in &key.1 {
                    all.insert(k.clone(), v.clone());
                }
                let tenant = key.0.as_deref().map(Arc::from).or_else(|| self.default_tenant.clone());
                let s = self.interner.intern(tenant.as_ref(), all);
                if streams.len() > 4096 {
                    streams.clear();
                }
                streams.insert(key, s.clone());
                s
            }
        }
    }
}

/// The record's structured metadata `meta` goes with the one entry the
/// stages made of it (the last since `before`), unless a stage set some.
fn keep_metadata(chunk: &mut Chunk, before: usize, meta: &str) {
    if chunk.entries.len() == before + 1 {
        if let Some(e) = chunk.entries.last_mut() {
            if e.meta == 0 && (e.start + e.len) as usize == chunk.buf.len() {
                chunk.buf.push_str(meta);
                e.meta = meta.len() as u32;
            }
        }
    }
}
