//! gzip for push bodies: the body's parts compressed without first
//! concatenating them, with a reusable compressor and a fast CRC.

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
///
/// The gzip framing (RFC 1952: a 10-byte header, raw deflate, CRC-32 and
/// length) is written here so the CRC can be computed by `crc32fast`, which
/// uses the CPU's carry-less multiply: several times faster than the table
/// CRC the deflate backend would use, a tenth of all gzip time.
pub fn gzip_parts_with<P: AsRef<[u8]>>(
    z: &mut flate2::Compress,
    parts: &[P],
    mut out: Vec<u8>,
) -> Result<Vec<u8>, flate2::CompressError> {
    use flate2::{FlushCompress, Status};
    /// Room kept free at the end of `out` for each deflate call.
    const SPARE: usize = 16 << 10;
    out.clear();
    // Magic, deflate, no flags, no time, no extra flags, unknown OS.
    out.extend_from_slice(&[0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff]);
    let mut crc = crc32fast::Hasher::new();
    z.reset();
    let ensure_room = |out: &mut Vec<u8>| {
        if out.capacity() - out.len() < SPARE {
            out.reserve(out.len().max(SPARE));
        }
    };
    for part in parts {
        let part = part.as_ref();
        crc.update(part);
        let mut input = part;
        while !input.is_empty() {
            ensure_room(&mut out);
            let before = z.total_in();
            z.compress_vec(input, &mut out, FlushCompress::None)?;
            input = &input[(z.total_in() - before) as usize..];
        }
    }
    loop {
        ensure_room(&mut out);
        if z.compress_vec(&[], &mut out, FlushCompress::Finish)? == Status::StreamEnd {
            break;
        }
    }
    out.extend_from_slice(&crc.finalize().to_le_bytes());
    // ISIZE is the input length modulo 2^32.
    out.extend_from_slice(&(z.total_in() as u32).to_le_bytes());
    Ok(out)
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
        let empty = gzip_parts::<&[u8]>(&[], 1, Vec::new()).unwrap();
        let mut back = Vec::new();
        flate2::read::GzDecoder::new(&empty[..]).read_to_end(&mut back).unwrap();
        assert!(back.is_empty());
    }
}
