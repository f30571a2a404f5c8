//! Generations of a file that the agent never saw.
//!
//! A generation is what a path held between two rotations. One can come and
//! go unseen: created and rotated away while the agent was down (or before
//! its position was first saved), or while the agent was stuck behind a full
//! queue and logrotate moved copies along (`app.log.1` -> `app.log.2`). Such
//! a generation now sits beside the path under a rotated name, and no
//! positions entry knows its first bytes.
//!
//! It is looked for when the agent has reason to think one slipped by: when
//! a followed file was rotated away or truncated (beside that path, for
//! files changed since the agent began following the old content), when a
//! new file appears at a path while the source runs (for files changed since
//! the source started: Docker may rotate a new container's log before a scan
//! saw it), and at start (beside every path the positions file knows, for
//! files changed since a scan last found that path's known content there).
//! Files older than the positions' tombstones (7 days, less an hour) are
//! never taken for generations. A sibling is a generation of
//! `app.log` when its name is the path's name or stem followed by a rotation
//! suffix (`app.log.1`, `app.log-20261123`, `app.log.ct3`, `app-20261123.log`,
//! `app.1.log`), no include glob names it, it is not followed, and no
//! positions entry, live or finished (a tombstone kept for
//! `FORGET_AFTER`), knows its first bytes. It is read from its start, oldest
//! first, labelled with the path, under a positions entry of its own (a kill
//! -9 meanwhile finds it again as an orphan), and finished at its end, which
//! makes it known: it is never read twice. Rotated files older than that
//! time are history from before the agent and are never read.
//!
//! Bounded: one directory listing per directory and look (at most 10,000
//! entries); only candidates that passed the name and time tests are opened
//! (as many as generations were missed: none are left for a later look that
//! may never come); compressed files are never opened.

use std::collections::HashMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use super::rotated::siblings;
use super::FileSource;
use crate::metrics::Metrics;
use crate::positions::FORGET_AFTER_SECS;
use crate::source::fingerprint::{self, open_regular};

/// What may stand between a file's name (or stem) and a rotation's suffix.
const SEPARATORS: &[char] = &['.', '-', '_'];

/// The name in `names` whose rotation `sibling` is, if any (the longest).
fn rotation_of<'a, T>(sibling: &str, names: &'a HashMap<String, T>) -> Option<&'a T> {
    let ext = sibling.rsplit_once('.').map(|(_, e)| e).filter(|e| !e.is_empty());
    let cuts: Vec<usize> = sibling.match_indices(SEPARATORS).map(|(i, _)| i).filter(|i| *i > 0).collect();
    for &i in cuts.iter().rev() {
        let base = &sibling[..i];
        // `app.log.1`, `app.log-20261123`: the name, then a suffix.
        if let Some(v) = names.get(base) {
            return Some(v);
        }
        // `app-20261123.log`, `app.1.log`: the stem, a suffix, the extension.
        if let Some(ext) = ext {
            let named = format!("{base}.{ext}");
            if named != sibling {
                if let Some(v) = names.get(&named) {
                    return Some(v);
                }
            }
        }
    }
    None
}

impl FileSource {
    /// Reads the generations of each of `paths` that the agent never saw and
    /// that changed after that path's time (see the module documentation).
    pub(super) fn read_missed_generations(&mut self, paths: &[(PathBuf, SystemTime)]) {
        // Tombstones are kept FORGET_AFTER: a file older than that may have
        // been read and forgotten, so it is never taken for a generation.
        let keep = Duration::from_secs(FORGET_AFTER_SECS.saturating_sub(3600));
        let oldest = SystemTime::now().checked_sub(keep).unwrap_or(SystemTime::UNIX_EPOCH);
        let mut by_dir: HashMap<PathBuf, HashMap<String, (PathBuf, SystemTime)>> = HashMap::new();
        for (path, since) in paths {
            let since = &(*since).max(oldest);
            let (Some(dir), Some(name)) = (path.parent(), path.file_name().and_then(|n| n.to_str())) else {
                continue;
            };
            let names = by_dir.entry(dir.to_path_buf()).or_default();
            let slot = names.entry(name.to_string()).or_insert_with(|| (path.clone(), *since));
            // The latest time wins: what changed before it was seen (or is history).
            slot.1 = slot.1.max(*since);
        }
        let mut found = Vec::new();
        for (dir, names) in &by_dir {
            for s in siblings(dir).list {
                let Some(name) = s.path.file_name().and_then(|n| n.to_str()) else { continue };
                let Some((label, since)) = rotation_of(name, names) else { continue };
                if s.modified <= *since || s.size == 0 || self.files.matches(&s.path) || self.is_followed(s.dev, s.ino)
                {
                    continue;
                }
                found.push((s.modified, label.clone(), s.path));
            }
        }
        found.sort();
        for (modified, label, path) in found {
            self.read_unseen(&label, &path, modified);
        }
    }

    /// Reads `path`, a rotation of `label`, from its start unless a positions
    /// entry knows its content.
    fn read_unseen(&mut self, label: &Path, path: &Path, modified: SystemTime) {
        let Ok(Some((file, meta))) = open_regular(path) else { return };
        if self.is_followed(meta.dev(), meta.ino()) {
            return;
        }
        let (fp, prefix) = fingerprint::of_file(&file);
        if prefix.is_empty() || self.positions.knows(&prefix) {
            return;
        }
        let name = self.name();
        tracing::info!(source = %name, path = %label.display(), rotated_to = %path.display(), bytes = meta.len(),
            "found a generation of the file that was rotated away before it was read; reading it");
        Metrics::get().files_recovered.with_label_values(&[&name, "unseen"]).inc();
        let key = self.positions.track(label, fp, meta.dev(), meta.ino(), 0);
        self.follow_detached(key, label, (path.to_path_buf(), file, meta), fp, 0, modified);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rotated_names_are_known_by_the_name_or_stem_they_extend() {
        let names: HashMap<String, &str> = [("app.log".to_string(), "app"), ("a".to_string(), "a")].into();
        for (sibling, of) in [
            ("app.log.1", Some("app")),
            ("app.log-20261123", Some("app")),
            ("app.log.ct3", Some("app")),
            ("app-20261123.log", Some("app")),
            ("app.1.log", Some("app")),
            ("app_2.log", Some("app")),
            ("a.log", Some("a")),
            ("app.log", None),
            ("apple.log", None),
            ("other.log.1", None),
            ("b-a.log", None),
        ] {
            assert_eq!(rotation_of(sibling, &names).copied(), of, "{sibling}");
        }
    }
}
