//! A push body's `Content-Encoding` undone, bounded.

use std::borrow::Cow;
use std::io::Read;

/// Why a body could not be turned into bytes of JSON.
#[derive(Debug, thiserror::Error)]
pub enum BodyError {
    #[error("request body is larger than {max} bytes after decompression")]
    TooLarge { max: usize },
    #[error("cannot decompress {encoding} body: {source}")]
    Corrupt { encoding: &'static str, source: std::io::Error },
    #[error("unsupported Content-Encoding {0:?}; use gzip, deflate or none")]
    UnsupportedEncoding(String),
}

/// Undoes `Content-Encoding`, reading at most `max` bytes of output.
pub fn decode<'a>(body: &'a [u8], encoding: Option<&str>, max: usize) -> Result<Cow<'a, [u8]>, BodyError> {
    let enc = encoding.map(|e| e.trim().to_ascii_lowercase()).unwrap_or_default();
    let (name, reader): (&'static str, Box<dyn Read + '_>) = match enc.as_str() {
        "" | "identity" => return Ok(Cow::Borrowed(body)),
        "gzip" | "x-gzip" => ("gzip", Box::new(flate2::read::MultiGzDecoder::new(body))),
        "deflate" => ("deflate", Box::new(flate2::read::ZlibDecoder::new(body))),
        _ => return Err(BodyError::UnsupportedEncoding(enc)),
    };
    let mut out = Vec::with_capacity(body.len().saturating_mul(4).min(max));
    // One byte more than allowed tells "exactly max" from "over max".
    reader
        .take(max as u64 + 1)
        .read_to_end(&mut out)
        .map_err(|source| BodyError::Corrupt { encoding: name, source })?;
    if out.len() > max {
        return Err(BodyError::TooLarge { max });
    }
    Ok(Cow::Owned(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gzip_is_bounded() {
        use std::io::Write;
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        enc.write_all(&vec![b'a'; 10_000]).unwrap();
        let gz = enc.finish().unwrap();
        assert_eq!(decode(&gz, Some("gzip"), 10_000).unwrap().len(), 10_000);
        assert!(matches!(decode(&gz, Some("gzip"), 9_999), Err(BodyError::TooLarge { .. })));
        assert!(matches!(decode(b"nope", Some("gzip"), 100), Err(BodyError::Corrupt { .. })));
        assert!(matches!(decode(b"x", Some("br"), 100), Err(BodyError::UnsupportedEncoding(_))));
        assert_eq!(&*decode(b"x", None, 100).unwrap(), b"x");
    }
}
