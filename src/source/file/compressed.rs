//! Compressed files (`.gz` as logrotate leaves them; with `decompression`
//! also `.z`, `.bz2` and `.tar.gz`, as Promtail's `decompression` block):
//! read once, whole, decompressed. Their position is their compressed size
//! once every line was delivered; a partly sent file is sent again whole at
//! the next start.
//!
//! A compressed file is read only once it has not changed for
//! `decompression.initial_delay`: a file the compressor is still writing is
//! looked at again at the next scans, never read half-written (Promtail
//! sleeps that long once, whatever the file does meanwhile). A `.tar.gz`
//! gives the lines of each regular file it holds, in archive order; a file
//! that does not end in a newline ends its last line there.

use std::fs::File;
use std::io::{BufReader, Read};
use std::path::Path;
use std::time::{Instant, SystemTime};

use super::{FileSource, Mode};
use crate::config::{CompressionFormat, DecompressionConfig};
use crate::metrics::Metrics;
use crate::positions::{AckRef, Fingerprint};
use crate::queue::Chunk;
use crate::source::LineFeed;
use crate::util::now_ns;

/// How reading a compressed file's content ended.
enum Pumped {
    /// The decompressed content was read to its end (or to a corrupt part, logged and counted).
    End,
    /// The source was told to stop: the file is read again at the next start.
    Stopped,
}

impl FileSource {
    /// The format the file at `path` is decompressed with; `None`: it is tailed as text.
    pub(super) fn compressed_format(&self, path: &Path) -> Option<CompressionFormat> {
        DecompressionConfig::format_of(self.cfg.decompression.as_ref(), &path.to_string_lossy())
    }

    /// True while a compressed file changed less than `initial_delay` ago
    /// (the daemon only: `push` reads what it is given).
    pub(super) fn still_changing(&self, meta: &std::fs::Metadata) -> bool {
        let delay = self.cfg.decompression.as_ref().map(|d| d.initial_delay.get()).unwrap_or_default();
        if delay.is_zero() || self.mode == Mode::Once {
            return false;
        }
        let age = meta.modified().ok().and_then(|m| SystemTime::now().duration_since(m).ok());
        age.is_none_or(|age| age < delay)
    }

    /// Reads a compressed file once, decompressed. Its position is its
    /// compressed size once every line was delivered; a partly sent file is sent again whole.
    pub(super) fn read_compressed(
        &mut self,
        path: &Path,
        file: File,
        format: CompressionFormat,
        fp: Fingerprint,
        resumed: Option<(u64, u64)>,
        size: u64,
    ) {
        if !self.gz_done.insert(fp.hash) {
            return;
        }
        let key = match resumed {
            Some((key, off)) if off >= size => {
                self.positions.release(key, 0, 0);
                return;
            }
            Some((key, _)) => key,
            None => self.positions.track(path, fp, 0, 0, 0),
        };
        tracing::info!(path = %path.display(), ?format, "reading compressed file");
        self.event("opened");
        let filename = crate::util::pathtext::text(path).into_owned();
        let mut feed = LineFeed::new(&self.spec, &self.stages, Some(&filename), 0);
        let file = BufReader::new(file);
        let last = &mut b'\n';
        let pumped = match format {
            CompressionFormat::Gzip => self.pump(path, &mut flate2::read::MultiGzDecoder::new(file), &mut feed, last),
            CompressionFormat::Zlib => self.pump(path, &mut flate2::read::ZlibDecoder::new(file), &mut feed, last),
            CompressionFormat::Bzip2 => self.pump(path, &mut bzip2::read::MultiBzDecoder::new(file), &mut feed, last),
            CompressionFormat::TarGz => self.pump_tar(path, flate2::read::MultiGzDecoder::new(file), &mut feed),
        };
        if let Pumped::End = pumped {
            let mut chunk = Chunk::with_capacity(self.name(), 0);
            feed.flush_idle(&self.stages, now_ns() as i64, Instant::now(), true, &mut chunk);
            chunk.ack = Some(AckRef { file: key, offset: size });
            feed.flush_counts(&self.name());
            self.out.send(chunk);
        }
        self.positions.release(key, 0, 0);
    }

    /// Feeds the decompressed content of `reader` to `feed`, chunk by chunk.
    fn pump(&mut self, path: &Path, reader: &mut dyn Read, feed: &mut LineFeed, last: &mut u8) -> Pumped {
        let name = self.name();
        loop {
            if self.out.stopped() {
                return Pumped::Stopped;
            }
            let n = match reader.read(&mut self.buf) {
                Ok(n) => n,
                Err(e) => {
                    self.corrupt(path, &e);
                    0
                }
            };
            if n == 0 {
                return Pumped::End;
            }
            let mut chunk = Chunk::with_capacity(name.clone(), n);
            Metrics::get().bytes_read.with_label_values(&[&name]).inc_by(n as u64);
            feed.feed(&self.stages, &self.buf[..n], now_ns() as i64, Instant::now(), &mut chunk);
            feed.flush_counts(&name);
            if !self.out.send(chunk) {
                return Pumped::Stopped;
            }
            *last = self.buf[n - 1];
        }
    }

    /// Feeds each regular file of a tar archive to `feed`, in archive order.
    fn pump_tar(&mut self, path: &Path, reader: impl Read, feed: &mut LineFeed) -> Pumped {
        let mut archive = tar::Archive::new(reader);
        let entries = match archive.entries() {
            Ok(e) => e,
            Err(e) => {
                self.corrupt(path, &e);
                return Pumped::End;
            }
        };
        for entry in entries {
            let mut entry = match entry {
                Ok(e) => e,
                Err(e) => {
                    self.corrupt(path, &e);
                    return Pumped::End;
                }
            };
            if !entry.header().entry_type().is_file() {
                continue;
            }
            let mut last = b'\n';
            if let Pumped::Stopped = self.pump(path, &mut entry, feed, &mut last) {
                return Pumped::Stopped;
            }
            if last != b'\n' {
                // The file's last line ends with the file, not with the next file's first.
                let mut chunk = Chunk::with_capacity(self.name(), 1);
                feed.feed(&self.stages, b"\n", now_ns() as i64, Instant::now(), &mut chunk);
                if !self.out.send(chunk) {
                    return Pumped::Stopped;
                }
            }
        }
        Pumped::End
    }

    /// A compressed file that cannot be decompressed past some point: the
    /// lines before it are shipped, the rest is logged and counted.
    fn corrupt(&self, path: &Path, e: &std::io::Error) {
        tracing::warn!(path = %path.display(), error = %e, "cannot decompress file; skipping the rest of it");
        self.event("corrupt");
    }
}
