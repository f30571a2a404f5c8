//! Where parked files renamed away went.
//!
//! A parked file (closed to stay under `max_open_files`, see `park`) that a
//! scan no longer finds at its path was renamed away or deleted. It is
//! released, and looked for as an orphan (`rotated`) once its lines in flight
//! are delivered, a second or more later. By then the event that named its
//! new name is long gone, and each orphan cost a listing of its directory: a
//! mass rotation renames thousands of parked files a second beside 150,000
//! rotated ones. So from the scan that releases it, its arrivals (see
//! `arrivals`) are watched for an entry named as a rotation of its path
//! (`app.log.1`, `app-20261123.log`) with its device and inode: one `lstat`
//! per such arrival, not per entry of the directory. Where it went is noted
//! here until its orphan is found, or for [`KEPT`] at most. Its orphan waits
//! for that up to [`AWAIT`] (the event may be read after the scan that
//! released it); one not seen renamed by then (deleted, renamed under
//! another name, events lost) is looked for by listing, as before.

use std::collections::HashMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::generations::rotation_base;

/// How long a released file's new name is waited for and kept.
const KEPT: Duration = Duration::from_secs(300);
/// How long a released file's rename event is waited for before its
/// orphan is looked for by listing.
const AWAIT: Duration = Duration::from_secs(2);
/// Files noted at most (beyond them, orphans are looked for by listing).
const MAX_NOTED: usize = 100_000;

/// A parked file released because its path no longer named it.
struct Moved {
    /// The path it was at.
    from: PathBuf,
    /// Where it was found renamed, once it was.
    to: Option<PathBuf>,
    /// When it was released.
    at: Instant,
}

/// Released parked files by device and inode, and where they went.
#[derive(Default)]
pub(super) struct MovedTo {
    by_id: HashMap<(u64, u64), Moved>,
}

impl MovedTo {
    /// The file `id` is no longer at `from`: its new name is watched for.
    pub(super) fn released(&mut self, id: (u64, u64), from: PathBuf) {
        if self.by_id.len() < MAX_NOTED {
            self.by_id.insert(id, Moved { from, to: None, at: Instant::now() });
        }
    }

    /// Notes where the files still looked for went, among `arrivals`.
    pub(super) fn look<'a>(&mut self, arrivals: impl Iterator<Item = &'a PathBuf>) {
        let cutoff = Instant::now().checked_sub(KEPT);
        self.by_id.retain(|_, m| cutoff.is_none_or(|c| m.at >= c));
        let mut wanted: HashMap<&Path, Vec<(u64, u64)>> = HashMap::new();
        for (id, m) in &self.by_id {
            if m.to.is_none() {
                wanted.entry(m.from.as_path()).or_default().push(*id);
            }
        }
        if wanted.is_empty() {
            return;
        }
        let mut found: Vec<((u64, u64), PathBuf)> = Vec::new();
        for path in arrivals {
            let (Some(dir), Some(name)) = (path.parent(), path.file_name().and_then(|n| n.to_str())) else {
                continue;
            };
            let Some(ids) = rotation_base(name, |base| wanted.get(dir.join(base).as_path())) else { continue };
            let Ok(m) = std::fs::symlink_metadata(path) else { continue };
            if m.is_file() && ids.contains(&(m.dev(), m.ino())) {
                found.push(((m.dev(), m.ino()), path.clone()));
            }
        }
        for (id, to) in found {
            if let Some(m) = self.by_id.get_mut(&id) {
                m.to = Some(to);
            }
        }
    }

    /// True when the file `id` was released less than [`AWAIT`] ago and
    /// where it went is not known yet: its rename's event may still be on
    /// its way (events are read by another thread), so its orphan is looked
    /// for at a later scan, not by a listing now.
    pub(super) fn awaited(&self, id: (u64, u64)) -> bool {
        self.by_id.get(&id).is_some_and(|m| m.to.is_none() && m.at.elapsed() < AWAIT)
    }

    /// Where the file `id` was renamed to, if that was seen.
    pub(super) fn get(&self, id: (u64, u64)) -> Option<&Path> {
        self.by_id.get(&id).and_then(|m| m.to.as_deref())
    }

    /// The file `id`'s orphan was found (or given up): nothing more to note.
    pub(super) fn done(&mut self, id: (u64, u64)) {
        self.by_id.remove(&id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id_of(path: &Path) -> (u64, u64) {
        let m = std::fs::metadata(path).unwrap();
        (m.dev(), m.ino())
    }

    #[test]
    fn a_released_file_is_found_where_an_arrival_named_as_its_rotation_says_it_went() {
        let dir = tempfile::tempdir().unwrap();
        let (log, other) = (dir.path().join("app.log"), dir.path().join("other.log"));
        std::fs::write(&log, "a\n").unwrap();
        std::fs::write(&other, "b\n").unwrap();
        let (id, other_id) = (id_of(&log), id_of(&other));
        let mut moved = MovedTo::default();
        moved.released(id, log.clone());
        moved.released(other_id, other.clone());
        assert!(moved.awaited(id), "its new name is not known yet");
        let rotated = dir.path().join("app.log.1");
        std::fs::rename(&log, &rotated).unwrap();
        std::fs::write(&log, "new\n").unwrap();
        // Arrivals: the new file at the path, the rotation, and a name that is
        // a rotation of no released path.
        let unrelated = dir.path().join("unrelated.log.1");
        std::fs::write(&unrelated, "c\n").unwrap();
        moved.look([log.clone(), rotated.clone(), unrelated].iter());
        assert_eq!(moved.get(id), Some(rotated.as_path()));
        assert!(!moved.awaited(id));
        // Not seen renamed: still awaited, nowhere known.
        assert_eq!(moved.get(other_id), None);
        assert!(moved.awaited(other_id));
        moved.done(id);
        assert_eq!(moved.get(id), None);
    }

    #[test]
    fn an_arrival_with_a_rotations_name_but_another_inode_is_not_taken_for_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("app.log");
        std::fs::write(&log, "a\n").unwrap();
        let id = id_of(&log);
        let mut moved = MovedTo::default();
        moved.released(id, log.clone());
        // A copy under a rotation's name (copytruncate), the original deleted.
        let copy = dir.path().join("app.log.1");
        std::fs::copy(&log, &copy).unwrap();
        std::fs::remove_file(&log).unwrap();
        moved.look(std::iter::once(&copy));
        assert_eq!(moved.get(id), None);
    }
}
