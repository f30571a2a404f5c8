//! Compressed files (`.gz`, as logrotate leaves them): read once, whole,
//! decompressed. Their position is their compressed size once every line was
//! delivered; a partly sent file is sent again whole at the next start.

use std::fs::File;
use std::io::Read;
use std::path::Path;
use std::time::Instant;

use super::FileSource;
use crate::metrics::Metrics;
use crate::positions::{AckRef, Fingerprint};
use crate::queue::Chunk;
use crate::source::LineFeed;
use crate::util::now_ns;

impl FileSource {
    /// Reads a `.gz` file once, decompressed. Its position is its compressed
    /// size once every line was delivered; a partly sent file is sent again whole.
    pub(super) fn read_gz(&mut self, path: &Path, file: File, fp: Fingerprint, resumed: Option<(u64, u64)>, size: u64) {
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
        tracing::info!(path = %path.display(), "reading compressed file");
        self.event("opened");
        let name = self.name();
        let filename = path.to_string_lossy().into_owned();
        let mut feed = LineFeed::new(&self.spec, &self.stages, Some(&filename), 0);
        let mut dec = flate2::read::MultiGzDecoder::new(std::io::BufReader::new(file));
        loop {
            if self.out.stopped() {
                self.positions.release(key, 0, 0);
                return;
            }
            let n = match dec.read(&mut self.buf) {
                Ok(n) => n,
                Err(e) => {
                    tracing::warn!(path = %path.display(), error = %e, "cannot decompress file; skipping the rest of it");
                    0
                }
            };
            let mut chunk = Chunk::with_capacity(name.clone(), n);
            Metrics::get().bytes_read.with_label_values(&[&name]).inc_by(n as u64);
            if n > 0 {
                feed.feed(&self.stages, &self.buf[..n], now_ns() as i64, Instant::now(), &mut chunk);
            } else {
                feed.flush_idle(&self.stages, now_ns() as i64, Instant::now(), true, &mut chunk);
                chunk.ack = Some(AckRef { file: key, offset: size });
            }
            feed.flush_counts(&name);
            if !self.out.send(chunk) {
                self.positions.release(key, 0, 0);
                return;
            }
            if n == 0 {
                break;
            }
        }
        self.positions.release(key, 0, 0);
    }
}
