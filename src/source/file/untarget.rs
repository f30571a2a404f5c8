//! Files that stop being targets: a source whose include globs change while
//! it runs (`targets_from`) reads a file no target names any more to its end
//! and closes it, as it does a deleted file; its position stays, so a target
//! that names it again resumes it where it was delivered.

use std::collections::HashSet;
use std::os::unix::fs::MetadataExt;

use super::FileSource;
use crate::metrics::Metrics;
use crate::status::report::FileState;

impl FileSource {
    /// Detaches the followed files the last scan did not find (`claimed`:
    /// the files it found) that are still at their paths: no target names them.
    pub(super) fn untarget(&mut self, claimed: &HashSet<(u64, u64)>) {
        if !self.files.is_live() {
            return;
        }
        for t in &mut self.tailers {
            if t.detached || claimed.contains(&(t.dev, t.ino)) {
                continue;
            }
            let at_path = std::fs::metadata(&t.path).is_ok_and(|m| (m.dev(), m.ino()) == (t.dev, t.ino));
            if !at_path {
                continue; // Rotated or deleted: the scan's own business.
            }
            t.detached = true;
            t.status.set_state(FileState::Draining);
            tracing::info!(path = %t.path.display(), "no target names this file any more; reading it to its end before closing it");
            Metrics::get().file_events.with_label_values(&[&self.stages.name, "untargeted"]).inc();
        }
    }
}
