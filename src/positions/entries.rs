//! The store's entries, by key: runs of entries kept in key order, not a
//! hash map.
//!
//! Keys are handed out in increasing order (`State::next_key`), so a new
//! entry goes at the end and a lookup is two binary searches (the run, then
//! the entry). A mass rotation leaves 155,000 entries (5,000 files renamed
//! every second for 30 s, each generation a finished entry kept as a
//! tombstone): as a hash map, its table of 262,144 slots of 120 bytes
//! (31 MiB) stood beside the one it grew out of (16 MiB) while it grew, and
//! was two thirds full after. In runs of [`RUN`] entries, an entry costs its
//! 120 bytes, and the store grows a run at a time: nothing is copied, and
//! nothing stands twice, however many entries there are.

use std::collections::HashSet;
use std::path::Path;
use std::sync::Arc;

use super::FileState;

/// The paths of the entries, each held once: the generations of a rotated
/// file keep the path the globs name, so the 155,000 entries of the mass
/// rotation name 5,000 paths (a copy each was 48 bytes of heap, 7 MiB).
#[derive(Debug, Default, Clone)]
pub(super) struct Paths(HashSet<Arc<Path>>);

impl Paths {
    /// `path`, shared with the entries that already name it.
    pub(super) fn get(&mut self, path: &Path) -> Arc<Path> {
        if let Some(p) = self.0.get(path) {
            return p.clone();
        }
        let p: Arc<Path> = Arc::from(path);
        self.0.insert(p.clone());
        p
    }

    /// Forgets the paths no entry names any more.
    pub(super) fn tidy(&mut self) {
        self.0.retain(|p| Arc::strong_count(p) > 1);
    }
}

/// Entries per run (60 KiB).
const RUN: usize = 512;

#[derive(Debug, Default, Clone)]
pub(super) struct Entries {
    /// Runs in key order, none empty; each in key order.
    runs: Vec<Vec<(u64, FileState)>>,
    len: usize,
}

impl Entries {
    /// The run that holds `key`, or would: the first whose last key is not below it.
    fn run_of(&self, key: u64) -> usize {
        match self.runs.last() {
            Some(r) if r.last().is_some_and(|(k, _)| *k < key) => self.runs.len() - 1,
            _ => self.runs.partition_point(|r| r.last().is_some_and(|(k, _)| *k < key)),
        }
    }

    fn at(&self, key: u64) -> Option<(usize, usize)> {
        let r = self.run_of(key);
        let i = self.runs.get(r)?.binary_search_by_key(&key, |(k, _)| *k).ok()?;
        Some((r, i))
    }

    pub(super) fn get(&self, key: &u64) -> Option<&FileState> {
        self.at(*key).map(|(r, i)| &self.runs[r][i].1)
    }

    pub(super) fn get_mut(&mut self, key: &u64) -> Option<&mut FileState> {
        self.at(*key).map(|(r, i)| &mut self.runs[r][i].1)
    }

    /// Adds (or replaces) the entry of `key`; returns the one it replaced.
    pub(super) fn insert(&mut self, key: u64, f: FileState) -> Option<FileState> {
        if let Some(e) = self.get_mut(&key) {
            return Some(std::mem::replace(e, f));
        }
        self.add(key, f);
        None
    }

    /// Adds the entry of `key`, which is not there; returns where it went.
    fn add(&mut self, key: u64, f: FileState) -> (usize, usize) {
        if self.runs.is_empty() {
            self.runs.push(Vec::with_capacity(RUN));
        }
        let r = self.run_of(key).min(self.runs.len() - 1);
        let last = r + 1 == self.runs.len();
        let run = &mut self.runs[r];
        let i = run.partition_point(|(k, _)| *k < key);
        self.len += 1;
        if run.len() < RUN {
            run.insert(i, (key, f));
            return (r, i);
        }
        if i == RUN && last {
            // Past the last key (as keys are handed out): a new run.
            let mut next = Vec::with_capacity(RUN);
            next.push((key, f));
            self.runs.push(next);
            return (r + 1, 0);
        }
        // A full run: split in two halves, then insert.
        let mut upper = Vec::with_capacity(RUN);
        upper.extend(run.drain(RUN / 2..));
        self.runs.insert(r + 1, upper);
        let (r, i) = if i <= RUN / 2 { (r, i) } else { (r + 1, i - RUN / 2) };
        self.runs[r].insert(i, (key, f));
        (r, i)
    }

    /// The entry of `key`, made by `make` when there is none.
    pub(super) fn get_or_insert_with(&mut self, key: u64, make: impl FnOnce() -> FileState) -> &mut FileState {
        let (r, i) = match self.at(key) {
            Some(at) => at,
            None => self.add(key, make()),
        };
        &mut self.runs[r][i].1
    }

    /// Keeps the entries `keep` says yes to; packs the runs again once
    /// they hold less than half what they have room for.
    pub(super) fn retain(&mut self, mut keep: impl FnMut(&u64, &mut FileState) -> bool) {
        for run in &mut self.runs {
            run.retain_mut(|(k, f)| keep(k, f));
        }
        self.runs.retain(|r| !r.is_empty());
        self.len = self.runs.iter().map(Vec::len).sum();
        if self.runs.len() > 2 * self.len.div_ceil(RUN) + 1 {
            let old = std::mem::take(&mut self.runs);
            let mut run = Vec::with_capacity(RUN);
            for e in old.into_iter().flatten() {
                if run.len() == RUN {
                    self.runs.push(std::mem::replace(&mut run, Vec::with_capacity(RUN)));
                }
                run.push(e);
            }
            if !run.is_empty() {
                self.runs.push(run);
            }
        }
    }

    /// Entries in key order.
    pub(super) fn iter(&self) -> impl Iterator<Item = (&u64, &FileState)> {
        self.runs.iter().flatten().map(|(k, f)| (k, f))
    }

    pub(super) fn keys(&self) -> impl Iterator<Item = &u64> {
        self.iter().map(|(k, _)| k)
    }

    pub(super) fn values(&self) -> impl Iterator<Item = &FileState> {
        self.iter().map(|(_, f)| f)
    }

    pub(super) fn values_mut(&mut self) -> impl Iterator<Item = &mut FileState> {
        self.runs.iter_mut().flatten().map(|(_, f)| f)
    }

    pub(super) fn into_values(self) -> impl Iterator<Item = FileState> {
        self.runs.into_iter().flatten().map(|(_, f)| f)
    }

    pub(super) fn len(&self) -> usize {
        self.len
    }

    /// Entries in any key order (keys unique), put in order at once: a
    /// positions file of 155,000 entries is not sorted one insertion at a time.
    pub(super) fn from_unordered(mut v: Vec<(u64, FileState)>) -> Self {
        v.sort_by_key(|(k, _)| *k);
        let len = v.len();
        let mut runs = Vec::with_capacity(len.div_ceil(RUN));
        let mut it = v.into_iter().peekable();
        while it.peek().is_some() {
            let mut run = Vec::with_capacity(RUN);
            run.extend(it.by_ref().take(RUN));
            runs.push(run);
        }
        Self { runs, len }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::positions::Fingerprint;

    fn entry(n: u64) -> FileState {
        FileState::new(Path::new("/a").into(), Fingerprint::of(b"x"), 1, n, n)
    }

    #[test]
    fn entries_are_found_by_key_whatever_order_they_came_in() {
        let mut e = Entries::default();
        for k in [5, 1, 9, 3, 7] {
            assert!(e.insert(k, entry(k)).is_none());
        }
        assert_eq!(e.keys().copied().collect::<Vec<_>>(), [1, 3, 5, 7, 9]);
        assert_eq!(e.get(&7).map(|f| f.ino), Some(7));
        assert!(e.get(&4).is_none() && e.get(&10).is_none());
        assert_eq!(e.insert(3, entry(30)).map(|f| f.ino), Some(3));
        assert_eq!(e.get_or_insert_with(4, || entry(4)).ino, 4);
        assert_eq!(e.get_or_insert_with(4, || entry(40)).ino, 4);
        e.retain(|k, _| k % 2 == 1);
        assert_eq!(e.keys().copied().collect::<Vec<_>>(), [1, 3, 5, 7, 9]);
        assert_eq!(e.get_mut(&3).map(|f| f.ino), Some(30));
        let e = Entries::from_unordered(vec![(8, entry(8)), (2, entry(2))]);
        assert_eq!(e.iter().map(|(k, _)| *k).collect::<Vec<_>>(), [2, 8]);
    }

    #[test]
    fn many_entries_stay_in_key_order_through_splits_and_packing() {
        let mut e = Entries::default();
        // In order (as keys are handed out), then between them (a log's records).
        for k in 0..(RUN as u64 * 5) {
            e.insert(k * 2, entry(k * 2));
        }
        for k in (0..(RUN as u64 * 5)).rev().step_by(3) {
            e.get_or_insert_with(k * 2 + 1, || entry(k * 2 + 1));
        }
        let keys: Vec<u64> = e.keys().copied().collect();
        assert!(keys.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(keys.len(), e.len());
        assert!(keys.iter().all(|k| e.get(k).is_some_and(|f| f.ino == *k)));
        e.retain(|k, _| k % 7 == 0);
        assert_eq!(e.len(), keys.iter().filter(|k| *k % 7 == 0).count());
        assert!(e.runs.len() <= e.len().div_ceil(RUN) + 1, "{} runs for {}", e.runs.len(), e.len());
        assert!(e.keys().all(|k| k % 7 == 0 && e.get(k).is_some()));
    }

    #[test]
    fn a_path_named_by_many_entries_is_held_once() {
        let mut paths = Paths::default();
        let a = paths.get(Path::new("/l/a.log"));
        let b = paths.get(Path::new("/l/a.log"));
        assert!(Arc::ptr_eq(&a, &b));
        let c = paths.get(Path::new("/l/c.log"));
        drop((a, b));
        paths.tidy();
        assert_eq!(paths.0.len(), 1);
        assert!(Arc::ptr_eq(&c, &paths.get(Path::new("/l/c.log"))));
    }
}
