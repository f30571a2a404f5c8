//! The chaos run's writers: `app.log` at [`RATE`] lines a second, rotated by
//! rename or copytruncate at random, and the busy neighbours.

use super::*;

#[derive(Debug, Default)]
pub(super) struct WriterReport {
    pub(super) lines: u64,
    pub(super) renames: u64,
    pub(super) copytruncates: u64,
    /// Inclusive sequence ranges that were in `app.log` when it was copytruncated.
    pub(super) windows: Vec<(u64, u64)>,
    /// (first sequence number after it, kind, seconds into the run) of each rotation.
    pub(super) rotations: Vec<(u64, &'static str, f64)>,
}

pub(super) fn run_writer(dir: PathBuf, secs: u64, seed: u64) -> WriterReport {
    let log = dir.join("app.log");
    let open = || std::fs::OpenOptions::new().create(true).append(true).open(&log).unwrap();
    let mut f = open();
    let mut rng = Rng::new(seed ^ 0x5eed);
    let mut rep = WriterReport::default();
    let start = Instant::now();
    let end = start + Duration::from_secs(secs);
    let mut next_rotation = start + rng.millis(1000, 4000);
    let mut file_first = 0u64;
    let mut seq = 0u64;
    let mut burst = String::with_capacity(64 << 10);
    while Instant::now() < end {
        let due = (start.elapsed().as_micros() as u64) * RATE / 1_000_000;
        burst.clear();
        while seq < due {
            burst.push_str(&line_text(seq));
            burst.push('\n');
            seq += 1;
        }
        if !burst.is_empty() {
            f.write_all(burst.as_bytes()).unwrap();
        }
        if Instant::now() >= next_rotation {
            next_rotation = Instant::now() + rng.millis(1000, 4000);
            if rng.below(100) < 60 {
                rep.renames += 1;
                std::fs::rename(&log, dir.join(format!("app.log.{}", rep.renames))).unwrap();
                f = open();
                rep.rotations.push((seq, "rename", start.elapsed().as_secs_f64()));
            } else {
                rep.copytruncates += 1;
                std::fs::copy(&log, dir.join(format!("app.log.ct{}", rep.copytruncates))).unwrap();
                f.set_len(0).unwrap();
                if seq > file_first {
                    rep.windows.push((file_first, seq - 1));
                }
                rep.rotations.push((seq, "copytruncate", start.elapsed().as_secs_f64()));
            }
            file_first = seq;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    rep.lines = seq;
    rep
}

/// Writes the busy neighbours for `secs`; returns how many lines each got.
pub(super) fn run_neighbours(dir: PathBuf, secs: u64) -> u64 {
    let mut files: Vec<std::fs::File> = NEIGHBOURS
        .iter()
        .map(|n| std::fs::OpenOptions::new().create(true).append(true).open(dir.join(n)).unwrap())
        .collect();
    let start = Instant::now();
    let end = start + Duration::from_secs(secs);
    let mut seq = 0u64;
    while Instant::now() < end {
        let due = (start.elapsed().as_micros() as u64) * NEIGHBOUR_RATE / 1_000_000;
        // Line by line, alternating files: one write event per line, as busy applications cause.
        while seq < due {
            for (i, f) in files.iter_mut().enumerate() {
                f.write_all(format!("{}\n", neighbour_line(i, seq)).as_bytes()).unwrap();
            }
            seq += 1;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    seq
}

// ---------------------------------------------------------------------------
