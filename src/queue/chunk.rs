//! What moves through the queue: a [`Chunk`] of many processed lines in one
//! buffer, so the hot path allocates per read, not per line.

use super::StreamRef;

/// One processed line: its stream, timestamp, and where its text sits in the chunk buffer.
#[derive(Debug, Clone, Copy)]
pub struct Entry {
    /// Index of the line's stream in [`Chunk::streams`].
    pub stream: u32,
    /// Unix nanoseconds.
    pub ts: i64,
    /// True when the agent chose the timestamp (read time); such timestamps
    /// are made strictly increasing within a stream by the batcher.
    pub assigned_ts: bool,
    pub start: u32,
    pub len: u32,
    /// Length of the line's structured metadata, a JSON object that follows
    /// the line in the buffer (0: none).
    pub meta: u32,
    /// Read again after a restart and not to be sent (its batch was
    /// acknowledged before, or the service holds it): the batcher records
    /// it among the file's lines in flight and sends nothing.
    pub skip: bool,
}

/// Processed lines of one source read, moving through the queue as a unit.
#[derive(Debug, Default)]
pub struct Chunk {
    /// Line texts, back to back.
    pub buf: String,
    /// The streams of this chunk's entries (usually one: a file's).
    pub streams: Vec<StreamRef>,
    pub entries: Vec<Entry>,
    pub ack: Option<crate::positions::AckRef>,
    /// Name of the source, for metrics of lines dropped later.
    pub source: std::sync::Arc<str>,
    /// Bytes this chunk holds in the queue's budget, returned when it is acknowledged.
    pub permit: Option<tokio::sync::OwnedSemaphorePermit>,
    /// When the first line of the chunk was read (for the oldest-unacknowledged gauge).
    pub read_at: Option<std::time::Instant>,
    /// Lines another client's reader also reads (or a copy of standard
    /// input's for another client): the alert tap sees them once, elsewhere.
    pub echo: bool,
    /// How many of its lines were read again after a restart and are to be
    /// sent again, with the timestamps they first had (see
    /// `positions::Replay`): they may be stored already.
    pub replayed: u32,
    /// How many of its lines are marked [`Entry::skip`].
    pub skipped: u32,
}

impl Chunk {
    pub fn new(source: std::sync::Arc<str>) -> Self {
        Self { source, ..Default::default() }
    }

    /// A chunk with room for the lines of `bytes` read bytes. Big reads take
    /// a reused buffer (see [`crate::pool`]); the batcher gives it back.
    pub fn with_capacity(source: std::sync::Arc<str>, bytes: usize) -> Self {
        let pool = &crate::pool::CHUNK_TEXT;
        let buf = if bytes >= pool.capacity() / 4 && bytes <= pool.capacity() {
            // An empty buffer is valid UTF-8.
            String::from_utf8(pool.take()).unwrap_or_default()
        } else {
            String::with_capacity(bytes)
        };
        Self {
            source,
            buf,
            entries: Vec::with_capacity(bytes / 64 + 1),
            streams: Vec::with_capacity(1),
            ..Default::default()
        }
    }

    /// A copy for another client's queue: the same lines, streams and
    /// position, without this chunk's budget.
    pub fn duplicate(&self) -> Chunk {
        Chunk {
            buf: self.buf.clone(),
            streams: self.streams.clone(),
            entries: self.entries.clone(),
            ack: self.ack,
            source: self.source.clone(),
            permit: None,
            read_at: self.read_at,
            echo: true,
            replayed: self.replayed,
            skipped: self.skipped,
        }
    }

    /// Lines to be sent (not [`Entry::skip`]).
    pub fn lines_to_send(&self) -> usize {
        self.entries.len() - self.skipped as usize
    }

    pub fn line(&self, e: &Entry) -> &str {
        // Entries are only made by `push_entry`, of whole `&str`s: at char boundaries.
        self.buf.get(e.start as usize..(e.start + e.len) as usize).unwrap_or_default()
    }

    /// The line's structured metadata (a JSON object), if it has any.
    pub fn metadata(&self, e: &Entry) -> Option<&str> {
        let at = (e.start + e.len) as usize;
        (e.meta > 0).then(|| self.buf.get(at..at + e.meta as usize).unwrap_or_default())
    }

    /// Appends a line of `stream` with its own timestamp (never bumped by
    /// the batcher) and its structured metadata (a JSON object), as a
    /// received line arrives (see `source/net/`).
    pub fn push_line(&mut self, stream: &StreamRef, line: &str, ts: i64, meta: Option<&str>) {
        self.push_entry(stream, line, ts, false, meta);
    }

    /// Appends a line of `stream` at `ts` (`assigned`: a time the agent
    /// chose, see [`Entry::assigned_ts`]) and its structured metadata (a JSON
    /// object): the one way entries are made, for tailed and received lines.
    pub fn push_entry(&mut self, stream: &StreamRef, line: &str, ts: i64, assigned: bool, meta: Option<&str>) {
        let start = self.buf.len() as u32;
        self.buf.push_str(line);
        let meta_len = meta.map_or(0, |m| {
            self.buf.push_str(m);
            m.len() as u32
        });
        let stream = self.stream_id(stream);
        self.entries.push(Entry {
            stream,
            ts,
            assigned_ts: assigned,
            start,
            len: line.len() as u32,
            meta: meta_len,
            skip: false,
        });
    }

    pub fn stream(&self, e: &Entry) -> &StreamRef {
        &self.streams[e.stream as usize]
    }

    /// The index of `s` in [`Chunk::streams`], adding it on first use.
    pub fn stream_id(&mut self, s: &StreamRef) -> u32 {
        if let Some(i) = self.streams.iter().rposition(|x| std::sync::Arc::ptr_eq(x, s)) {
            return i as u32;
        }
        self.streams.push(s.clone());
        (self.streams.len() - 1) as u32
    }

    /// Bytes this chunk costs in the queue budget: text plus a fixed overhead per entry.
    pub fn cost(&self) -> usize {
        self.buf.len() + self.entries.len() * ENTRY_OVERHEAD + CHUNK_OVERHEAD
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty() && self.ack.is_none()
    }
}

/// Queue-budget bytes charged per entry beyond its text (metadata, JSON framing).
pub const ENTRY_OVERHEAD: usize = 64;
/// Queue-budget bytes charged per chunk.
pub const CHUNK_OVERHEAD: usize = 128;
