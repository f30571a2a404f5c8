//! gzip for push bodies: the body compressed as it is encoded, piece by piece
//! (never whole in memory uncompressed), with a reusable compressor and a fast CRC.

use super::body::Encode;

/// Compresses a body with gzip at `level` (1-9).
pub fn gzip(body: &[u8], level: u32) -> Result<Vec<u8>, flate2::CompressError> {
    gzip_parts(&[body], level, Vec::new())
}

/// [`gzip_parts_with`] with a new compressor.
pub fn gzip_parts<P: AsRef<[u8]>>(parts: &[P], level: u32, out: Vec<u8>) -> Result<Vec<u8>, flate2::CompressError> {
    let mut z = flate2::Compress::new(flate2::Compression::new(level), false);
    gzip_parts_with(&mut z, parts, out)
}

/// Compresses the concatenation of `parts` into `out` (cleared first, its
/// room reused) without concatenating them first. `z` is a raw-deflate
/// compressor (no zlib header), reset first: reusing one saves allocating
/// and faulting in its few hundred KiB of tables for every batch.
pub fn gzip_parts_with<P: AsRef<[u8]>>(
    z: &mut flate2::Compress,
    parts: &[P],
    out: Vec<u8>,
) -> Result<Vec<u8>, flate2::CompressError> {
    let mut g = Gzip::new(z, out);
    for part in parts {
        g.write(part.as_ref())?;
    }
    g.finish()
}

/// Bytes of a body encoded at once before they are compressed (see [`gzip_body_with`]).
pub const PIECE: usize = 32 << 10;

/// Compresses `body` as it is encoded, [`PIECE`] bytes at a time through
/// `scratch` (its room reused), into `out`; see [`gzip_parts_with`].
pub fn gzip_body_with(
    z: &mut flate2::Compress,
    body: &dyn Encode,
    scratch: &mut Vec<u8>,
    out: Vec<u8>,
) -> Result<Vec<u8>, flate2::CompressError> {
    let mut g = Gzip::new(z, out);
    let mut failed = None;
    scratch.clear();
    body.encode(scratch, PIECE, &mut |piece| {
        if failed.is_none() {
            failed = g.write(piece).err();
        }
        piece.clear();
    });
    // What the body left in the buffer, less than a piece.
    if failed.is_none() && !scratch.is_empty() {
        failed = g.write(scratch).err();
        scratch.clear();
    }
    match failed {
        Some(e) => Err(e),
        None => g.finish(),
    }
}

/// A gzip stream being written.
///
/// The gzip framing (RFC 1952: a 10-byte header, raw deflate, CRC-32 and
/// length) is written here so the CRC can be computed by `crc32fast`, which
/// uses the CPU's carry-less multiply: several times faster than the table
/// CRC the deflate backend would use, a tenth of all gzip time.
struct Gzip<'a> {
    z: &'a mut flate2::Compress,
    crc: crc32fast::Hasher,
    out: Vec<u8>,
}

/// Room kept free at the end of the output for each deflate call.
const SPARE: usize = 16 << 10;

impl<'a> Gzip<'a> {
    fn new(z: &'a mut flate2::Compress, mut out: Vec<u8>) -> Self {
        out.clear();
        // Magic, deflate, no flags, no time, no extra flags, unknown OS.
        out.extend_from_slice(&[0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff]);
        z.reset();
        Self { z, crc: crc32fast::Hasher::new(), out }
    }

    fn ensure_room(&mut self) {
        if self.out.capacity() - self.out.len() < SPARE {
            self.out.reserve(self.out.len().max(SPARE));
        }
    }

    fn write(&mut self, part: &[u8]) -> Result<(), flate2::CompressError> {
        self.crc.update(part);
        let mut input = part;
        while !input.is_empty() {
            self.ensure_room();
            let before = self.z.total_in();
            self.z.compress_vec(input, &mut self.out, flate2::FlushCompress::None)?;
            input = &input[(self.z.total_in() - before) as usize..];
        }
        Ok(())
    }

    fn finish(mut self) -> Result<Vec<u8>, flate2::CompressError> {
        loop {
            self.ensure_room();
            if self.z.compress_vec(&[], &mut self.out, flate2::FlushCompress::Finish)? == flate2::Status::StreamEnd {
                break;
            }
        }
        let Self { z, crc, mut out } = self;
        out.extend_from_slice(&crc.finalize().to_le_bytes());
        // ISIZE is the input length modulo 2^32.
        out.extend_from_slice(&(z.total_in() as u32).to_le_bytes());
        Ok(out)
    }
}
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gzip_round_trips() {
        use std::io::Read;
        let z = gzip(b"hello hello hello", 1).unwrap();
        let mut out = String::new();
        flate2::read::GzDecoder::new(&z[..]).read_to_string(&mut out).unwrap();
        assert_eq!(out, "hello hello hello");
        // Parts, a reused buffer, every level, and bodies past the deflate buffers.
        let big: Vec<u8> =
            (0..300_000u32).flat_map(|i| format!("line {i} {}\n", i * 7919 % 1000).into_bytes()).collect();
        let mut reused = Vec::with_capacity(64);
        for level in 1..=9 {
            let parts = [&big[..1000], &big[1000..200_000], &big[200_000..], b""];
            reused = gzip_parts(&parts, level, reused).unwrap();
            let mut back = Vec::new();
            let mut d = flate2::read::GzDecoder::new(&reused[..]);
            d.read_to_end(&mut back).unwrap();
            assert_eq!(back, big, "level {level}");
            assert!(reused.len() < big.len() / 2);
        }
        // One compressor for several bodies: each comes out whole.
        let mut z = flate2::Compress::new(flate2::Compression::new(1), false);
        for body in [&big[..5000], &big[..], b"x"] {
            let out = gzip_parts_with(&mut z, &[body], Vec::new()).unwrap();
            let mut back = Vec::new();
            flate2::read::GzDecoder::new(&out[..]).read_to_end(&mut back).unwrap();
            assert_eq!(back, body);
        }
        // A body encoded piece by piece as it is compressed.
        let mut scratch = Vec::new();
        let out = gzip_body_with(&mut z, &big, &mut scratch, Vec::new()).unwrap();
        let mut back = Vec::new();
        flate2::read::GzDecoder::new(&out[..]).read_to_end(&mut back).unwrap();
        assert_eq!(back, big);
        let empty = gzip_parts::<&[u8]>(&[], 1, Vec::new()).unwrap();
        let mut back = Vec::new();
        flate2::read::GzDecoder::new(&empty[..]).read_to_end(&mut back).unwrap();
        assert!(back.is_empty());
    }
}
