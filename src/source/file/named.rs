//! The paths a scan looks at, without listing their directories each time.
//!
//! A scan looks at every path the include globs name (`scan`). Listing the
//! directories to find them costs every entry there, not the paths: a mass
//! rotation of 5,000 files a second leaves 150,000 rotated generations
//! beside the 5,000 paths after 30 s, a scan runs at each batch of rename
//! events (several a second), and those listings were a quarter of the
//! agent's CPU. Where arrivals name every entry that appeared since the last
//! scan (see `arrivals`), a scan takes the paths of the last listing and the
//! arrivals the globs name, and a path found gone is forgotten. The
//! directories are listed again every `scan_interval`, whenever arrivals may
//! be missing (at start, without events, a directory polled, the queue
//! overflowed, a directory watched again), and at every scan for globs that
//! change (a discovery's targets).
//!
//! The paths are kept only where a listing walks more than [`KEEP_OVER`]
//! times as many entries as the globs name (rotated files beside them): a
//! directory of 100,000 files that all match costs about as much to list as
//! to look at, and keeping their paths would hold megabytes for nothing.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::arrivals::Arrivals;
use crate::source::FileMatch;

/// Paths are kept when a listing walks more than this many entries per path named.
const KEEP_OVER: usize = 4;

/// The paths the globs named at the last listing, and the arrivals since.
#[derive(Default)]
pub(super) struct Named {
    kept: Option<HashSet<PathBuf>>,
    listed_at: Option<Instant>,
}

impl Named {
    /// The paths this scan looks at: kept ones and this scan's arrivals the
    /// globs name, or a listing (see the module documentation).
    pub(super) fn paths(&mut self, files: &FileMatch, arrivals: &Arrivals, every: Duration) -> Vec<PathBuf> {
        let due = self.listed_at.is_none_or(|at| at.elapsed() >= every);
        match &mut self.kept {
            Some(kept) if !due && files.is_fixed() && arrivals.cover_all() => {
                kept.extend(arrivals.fresh().iter().filter(|p| files.matches(p)).cloned());
                kept.iter().cloned().collect()
            }
            _ => {
                let listing = files.listing();
                self.listed_at = Some(Instant::now());
                let worth = listing.walked > KEEP_OVER * listing.paths.len().max(1);
                self.kept = (files.is_fixed() && worth).then(|| listing.paths.iter().cloned().collect());
                listing.paths
            }
        }
    }

    /// `path` names nothing now: not looked at again until an arrival or a
    /// listing names it.
    pub(super) fn gone(&mut self, path: &Path) {
        if let Some(kept) = &mut self.kept {
            kept.remove(path);
        }
    }
}
