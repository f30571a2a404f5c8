//! The stdin source: lines until EOF. Reading stops while the queue is full,
//! so a fast writer blocks on its pipe instead of the agent buffering without
//! bound. Nothing can be re-read, so stdin lines carry no position.

use std::io::Read;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::{LineFeed, Outlet, SourceSpec, READ_BLOCK};
use crate::metrics::Metrics;
use crate::pipeline::SourceStages;
use crate::queue::Chunk;
use crate::util::now_ns;

/// Reads `input` until EOF (or `cancel`) on the calling thread; returns lines read.
pub fn run(spec: &SourceSpec, stages: Arc<SourceStages>, input: Box<dyn Read + Send>, out: Outlet) -> u64 {
    // A reader thread hands blocks over a channel of two, so idle flushes can
    // run on a timer while the read blocks, and back-pressure still reaches the writer.
    let (tx, rx) = std::sync::mpsc::sync_channel::<Vec<u8>>(2);
    let reader = std::thread::Builder::new().name("stdin-read".into()).spawn(move || {
        let mut input = input;
        loop {
            let mut buf = vec![0u8; READ_BLOCK];
            match input.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => {
                    buf.truncate(n);
                    if tx.send(buf).is_err() {
                        break;
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    tracing::error!(error = %e, "cannot read standard input");
                    break;
                }
            }
        }
    });
    if let Err(e) = reader {
        tracing::error!(error = %e, "cannot start the stdin reader");
        return 0;
    }
    let m = Metrics::get();
    let name = stages.name.clone();
    let mut feed = LineFeed::new(spec, &stages, None, 0);
    let mut total = 0u64;
    loop {
        if out.stopped() {
            break;
        }
        let wait =
            feed.due_at().map(|d| d.saturating_duration_since(Instant::now())).unwrap_or(Duration::from_millis(250));
        let mut chunk = Chunk::new(name.clone());
        let eof = match rx.recv_timeout(wait.max(Duration::from_millis(1))) {
            Ok(block) => {
                chunk = Chunk::with_capacity(name.clone(), block.len());
                m.bytes_read.with_label_values(&[&name]).inc_by(block.len() as u64);
                feed.feed(&stages, &block, now_ns() as i64, Instant::now(), &mut chunk);
                false
            }
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => false,
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => true,
        };
        feed.flush_idle(&stages, now_ns() as i64, Instant::now(), eof, &mut chunk);
        total += chunk.entries.len() as u64;
        feed.flush_counts(&name);
        if !out.send(chunk) {
            break;
        }
        if eof {
            break;
        }
    }
    tracing::debug!(lines = total, "stdin source done");
    total
}
