//! Push bodies encoded when they are sent: the batcher keeps each line where
//! it was read and says how long the JSON will be; the pusher has it written
//! once, straight into one buffer of that length, or piece by piece into the
//! compressor (see `gzip`), so a line's bytes are copied once on their way.

/// A push body, encoded when it is sent.
pub trait Encode: Send + 'static {
    /// The encoded body's length in bytes.
    fn encoded_len(&self) -> usize;

    /// Appends the body to `out`, handing `out` to `flush` (which empties it)
    /// whenever it holds `piece` bytes or more. With `piece` at
    /// `usize::MAX`, `out` receives the whole body.
    fn encode(&self, out: &mut Vec<u8>, piece: usize, flush: &mut dyn FnMut(&mut Vec<u8>));
}

/// A body encoded already.
impl Encode for Vec<u8> {
    fn encoded_len(&self) -> usize {
        self.len()
    }

    fn encode(&self, out: &mut Vec<u8>, piece: usize, flush: &mut dyn FnMut(&mut Vec<u8>)) {
        for part in self.chunks(piece.max(1)) {
            out.extend_from_slice(part);
            if out.len() >= piece {
                flush(out);
            }
        }
    }
}

/// A body on its way to the pusher.
pub type Body = Box<dyn Encode>;

/// The whole body in one buffer taken from `pool` (or of its exact size when
/// it does not fit one of the pool's).
pub fn encode_whole(body: &dyn Encode, pool: &crate::pool::Pool<u8>) -> Vec<u8> {
    let len = body.encoded_len();
    let mut out = if len <= pool.capacity() { pool.take() } else { Vec::with_capacity(len) };
    body.encode(&mut out, usize::MAX, &mut |_| {});
    debug_assert_eq!(out.len(), len, "a body's encoded length is exact");
    out
}
