//! GELF's UDP framing: a datagram is a whole message (plain JSON, gzip or
//! zlib) or one chunk of one (magic `0x1e 0x0f`, an 8-byte message id, a
//! sequence number and a count of at most 128). Chunks are put together in
//! any order; a message not whole 5 seconds after its first chunk expires
//! and is counted. The whole message is then decompressed if it is.
//!
//! What waits is held to a byte budget (`receiver.max_pending_bytes`) for
//! all messages together: past it, the messages waiting longest are given
//! up (and counted) to make room, so a flood of chunks that never complete
//! costs a bounded amount of memory and cannot starve messages that do.

use std::collections::{HashMap, VecDeque};
use std::io::Read;
use std::time::{Duration, Instant};

/// The most chunks a message may have (the GELF spec's limit).
pub const MAX_CHUNKS: usize = 128;
/// How long the chunks of a message wait for the others.
pub const EXPIRY: Duration = Duration::from_secs(5);
/// The most messages whose chunks wait at once.
const MAX_PENDING: usize = 4096;

/// Why a datagram gave no message (each is counted under its name).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    #[error("a chunk header that does not read (count 0 or over 128, or a sequence number past it)")]
    BadChunk,
    #[error("the message does not decompress")]
    Decompress,
    #[error("the message is over receiver.max_message_bytes")]
    TooLarge,
    #[error("too many messages' chunks wait at once")]
    PendingLimit,
}

impl FrameError {
    /// The `reason` it is counted under.
    pub fn reason(self) -> &'static str {
        match self {
            Self::BadChunk => "bad_chunk",
            Self::Decompress => "decompress",
            Self::TooLarge => "too_large",
            Self::PendingLimit => "chunks_pending_limit",
        }
    }
}

struct Pending {
    first: Instant,
    parts: Vec<Option<Vec<u8>>>,
    got: usize,
    bytes: usize,
}

impl Pending {
    /// What it holds in memory: its chunks and their slots.
    fn cost(&self) -> usize {
        self.bytes + self.parts.len() * std::mem::size_of::<Option<Vec<u8>>>() + 64
    }
}

/// Puts chunked messages together.
pub struct Assembler {
    max: usize,
    pending: HashMap<[u8; 8], Pending>,
    /// Messages by the arrival of their first chunk (some may be gone already).
    order: VecDeque<[u8; 8]>,
    /// Bytes the waiting messages hold, and the most they may.
    held: usize,
    budget: usize,
    /// Messages given up to keep within the budget, not yet counted by the caller.
    evicted: usize,
}

impl Assembler {
    /// An assembler for messages of at most `max` bytes (compressed or
    /// not), all waiting ones together holding at most `budget` bytes.
    pub fn new(max: usize, budget: usize) -> Self {
        Self { max, pending: HashMap::new(), order: VecDeque::new(), held: 0, budget, evicted: 0 }
    }

    /// Bytes the waiting messages hold.
    pub fn held(&self) -> usize {
        self.held
    }

    /// Messages given up for the budget since the last call.
    pub fn take_evicted(&mut self) -> usize {
        std::mem::take(&mut self.evicted)
    }

    fn remove(&mut self, id: &[u8; 8]) -> Option<Pending> {
        let p = self.pending.remove(id)?;
        self.held -= p.cost();
        Some(p)
    }

    /// Gives up the messages waiting longest (not `keep`) until `need` more bytes fit.
    fn make_room(&mut self, need: usize, keep: &[u8; 8]) -> bool {
        while self.held + need > self.budget {
            let Some(id) = self.order.pop_front() else { return false };
            if &id == keep {
                self.order.push_back(id);
                if self.order.len() == 1 {
                    return false;
                }
                continue;
            }
            if self.remove(&id).is_some() {
                self.evicted += 1;
            }
        }
        true
    }

    /// One datagram: `Ok(Some(message))` when a message is whole (decompressed),
    /// `Ok(None)` when a chunk waits for the others.
    pub fn datagram(&mut self, data: &[u8], now: Instant) -> Result<Option<Vec<u8>>, FrameError> {
        if !data.starts_with(&[0x1e, 0x0f]) {
            return decompress(data, self.max).map(Some);
        }
        if data.len() < 12 {
            return Err(FrameError::BadChunk);
        }
        let mut id = [0u8; 8];
        id.copy_from_slice(&data[2..10]);
        let (seq, count) = (data[10] as usize, data[11] as usize);
        if count == 0 || count > MAX_CHUNKS || seq >= count {
            return Err(FrameError::BadChunk);
        }
        let body = &data[12..];
        if count == 1 {
            return decompress(body, self.max).map(Some);
        }
        if !self.pending.contains_key(&id) {
            if self.pending.len() >= MAX_PENDING {
                return Err(FrameError::PendingLimit);
            }
            let fresh = Pending { first: now, parts: vec![None; count], got: 0, bytes: 0 };
            if !self.make_room(fresh.cost() + body.len(), &id) {
                return Err(FrameError::PendingLimit);
            }
            self.held += fresh.cost();
            self.pending.insert(id, fresh);
            self.order.push_back(id);
        }
        let Some(p) = self.pending.get(&id) else { return Ok(None) };
        if p.parts.len() != count {
            self.remove(&id);
            return Err(FrameError::BadChunk);
        }
        if p.parts[seq].is_none() {
            if p.bytes + body.len() > self.max {
                self.remove(&id);
                return Err(FrameError::TooLarge);
            }
            if !self.make_room(body.len(), &id) {
                self.remove(&id);
                return Err(FrameError::PendingLimit);
            }
            let Some(p) = self.pending.get_mut(&id) else { return Ok(None) };
            p.bytes += body.len();
            p.got += 1;
            p.parts[seq] = Some(body.to_vec());
            self.held += body.len();
        }
        let Some(p) = self.pending.get(&id) else { return Ok(None) };
        if p.got < count {
            return Ok(None);
        }
        let Some(p) = self.remove(&id) else { return Ok(None) };
        let whole: Vec<u8> = p.parts.into_iter().flatten().flatten().collect();
        decompress(&whole, self.max).map(Some)
    }

    /// Drops the messages whose first chunk came over [`EXPIRY`] before
    /// `now`; returns how many.
    pub fn expire(&mut self, now: Instant) -> usize {
        let before = self.pending.len();
        let mut freed = 0;
        self.pending.retain(|_, p| {
            let keep = now.duration_since(p.first) < EXPIRY;
            if !keep {
                freed += p.cost();
            }
            keep
        });
        self.held -= freed;
        let pending = &self.pending;
        self.order.retain(|id| pending.contains_key(id));
        before - self.pending.len()
    }

    /// Messages whose chunks wait.
    pub fn pending(&self) -> usize {
        self.pending.len()
    }
}

/// A whole message: gzip (`1f 8b`), zlib (`78 ..`, RFC 1950 header check) or plain.
pub fn decompress(data: &[u8], max: usize) -> Result<Vec<u8>, FrameError> {
    let limit = max as u64 + 1;
    let mut out = Vec::new();
    let read = if data.starts_with(&[0x1f, 0x8b]) {
        flate2::read::MultiGzDecoder::new(data).take(limit).read_to_end(&mut out)
    } else if data.len() >= 2 && data[0] & 0x0f == 8 && (u16::from(data[0]) << 8 | u16::from(data[1])) % 31 == 0 {
        flate2::read::ZlibDecoder::new(data).take(limit).read_to_end(&mut out)
    } else {
        if data.len() > max {
            return Err(FrameError::TooLarge);
        }
        return Ok(data.to_vec());
    };
    read.map_err(|_| FrameError::Decompress)?;
    if out.len() > max {
        return Err(FrameError::TooLarge);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn chunk(id: u64, seq: u8, count: u8, body: &[u8]) -> Vec<u8> {
        let mut c = vec![0x1e, 0x0f];
        c.extend_from_slice(&id.to_be_bytes());
        c.extend_from_slice(&[seq, count]);
        c.extend_from_slice(body);
        c
    }

    // The GELF 1.1 spec's example message.
    const SPEC: &str = r#"{"version":"1.1","host":"example.org","short_message":"A short message that helps you identify what is going on","full_message":"Backtrace here\n\nmore stuff","timestamp":1385053862.3072,"level":1,"_user_id":9001,"_some_info":"foo","_some_env_var":"bar"}"#;

    #[test]
    fn plain_gzip_and_zlib_messages() {
        let mut a = Assembler::new(1 << 20, 64 << 20);
        let now = Instant::now();
        assert_eq!(a.datagram(SPEC.as_bytes(), now).unwrap().unwrap(), SPEC.as_bytes());
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gz.write_all(SPEC.as_bytes()).unwrap();
        assert_eq!(a.datagram(&gz.finish().unwrap(), now).unwrap().unwrap(), SPEC.as_bytes());
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
        z.write_all(SPEC.as_bytes()).unwrap();
        assert_eq!(a.datagram(&z.finish().unwrap(), now).unwrap().unwrap(), SPEC.as_bytes());
        assert_eq!(a.datagram(&[0x1f, 0x8b, 1, 2, 3], now), Err(FrameError::Decompress));
    }

    #[test]
    fn chunks_in_any_order_of_a_compressed_message() {
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gz.write_all(SPEC.repeat(3).as_bytes()).unwrap();
        let packed = gz.finish().unwrap();
        let parts: Vec<&[u8]> = packed.chunks(packed.len() / 3 + 1).collect();
        assert_eq!(parts.len(), 3);
        let mut a = Assembler::new(1 << 20, 64 << 20);
        let now = Instant::now();
        assert_eq!(a.datagram(&chunk(7, 2, 3, parts[2]), now), Ok(None));
        assert_eq!(a.datagram(&chunk(7, 0, 3, parts[0]), now), Ok(None));
        // A chunk sent twice is taken once.
        assert_eq!(a.datagram(&chunk(7, 0, 3, parts[0]), now), Ok(None));
        assert_eq!(a.datagram(&chunk(7, 1, 3, parts[1]), now).unwrap().unwrap(), SPEC.repeat(3).as_bytes());
        assert_eq!(a.pending(), 0);
    }

    #[test]
    fn bad_chunks_and_expiry() {
        let mut a = Assembler::new(1 << 20, 64 << 20);
        let now = Instant::now();
        assert_eq!(a.datagram(&chunk(1, 0, 0, b"x"), now), Err(FrameError::BadChunk));
        assert_eq!(a.datagram(&chunk(1, 0, 129, b"x"), now), Err(FrameError::BadChunk));
        assert_eq!(a.datagram(&chunk(1, 3, 3, b"x"), now), Err(FrameError::BadChunk));
        assert_eq!(a.datagram(&[0x1e, 0x0f, 1, 2], now), Err(FrameError::BadChunk));
        // The most chunks the spec allows.
        for seq in 0..127u8 {
            assert_eq!(a.datagram(&chunk(2, seq, 128, b"a"), now), Ok(None));
        }
        assert_eq!(a.datagram(&chunk(3, 0, 2, b"{"), now), Ok(None));
        assert_eq!(a.expire(now + Duration::from_secs(4)), 0);
        assert_eq!(a.expire(now + EXPIRY), 2);
        assert_eq!(a.datagram(&chunk(2, 127, 128, b"a"), now + EXPIRY), Ok(None));
    }

    #[test]
    fn too_large_whole_or_in_chunks() {
        let mut a = Assembler::new(100, 64 << 20);
        let now = Instant::now();
        assert_eq!(a.datagram(&[b'a'; 101], now), Err(FrameError::TooLarge));
        assert_eq!(a.datagram(&chunk(4, 0, 3, &[b'a'; 60]), now), Ok(None));
        assert_eq!(a.datagram(&chunk(4, 1, 3, &[b'a'; 60]), now), Err(FrameError::TooLarge));
        assert_eq!(a.pending(), 0);
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gz.write_all(&[b'a'; 1000]).unwrap();
        assert_eq!(a.datagram(&gz.finish().unwrap(), now), Err(FrameError::TooLarge));
    }

    #[test]
    fn a_flood_of_messages_never_whole_stays_within_the_budget_and_whole_ones_still_arrive() {
        let budget = 1 << 20;
        let mut a = Assembler::new(8 << 20, budget);
        let now = Instant::now();
        let body = vec![b'a'; 8000];
        for id in 0..2_000u64 {
            for seq in 0..127u8 {
                let _ = a.datagram(&chunk(id, seq, 128, &body), now);
            }
            assert!(a.held() <= budget, "{} held", a.held());
        }
        assert!(a.take_evicted() > 0);
        // A message whose chunks come together is put together despite the flood.
        assert_eq!(a.datagram(&chunk(99_999, 0, 2, b"{\"a\":"), now), Ok(None));
        assert_eq!(a.datagram(&chunk(99_999, 1, 2, b"1}"), now).unwrap().unwrap(), b"{\"a\":1}");
    }
}
