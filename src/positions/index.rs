//! Files by fingerprint: which known entries a file starting with some
//! bytes may be, without hashing those bytes once per entry.
//!
//! A fingerprint is a hash of a file's first `len` bytes (`len` up to
//! [`super::FINGERPRINT_BYTES`], less for a file that was shorter when
//! seen). The index keeps the entries by `(len, hash)` and the lengths in
//! use, so finding the entries a new file may be costs one hash of its
//! prefix per length in use (a handful: full-length fingerprints and those
//! of short files), not one per known file: with 100,000 files, opening
//! each no longer walks every entry.
//!
//! Kept small: a mass rotation's 155,000 entries are 155,000 fingerprints.
//! `(len, hash)` is folded into one word and each maps to one key; the few
//! entries whose fingerprint another entry has too (copies of a file, a
//! file and its copy) are kept apart. Folding may join two fingerprints of
//! different lengths: the caller checks each candidate's fingerprint.
//! (A map of `(len, hash)` to a small vector of keys was 40 bytes a slot,
//! 10 MiB for those entries, and twice that while it grew.)

use std::collections::{BTreeMap, HashMap};

use smallvec::SmallVec;

use super::Fingerprint;

#[derive(Debug, Default, Clone)]
pub(super) struct FpIndex {
    /// One key per folded fingerprint.
    first: HashMap<u64, u64>,
    /// The other keys of a folded fingerprint, for the few that have more.
    more: HashMap<u64, SmallVec<[u64; 2]>>,
    /// Entries per fingerprint length.
    lens: BTreeMap<u32, usize>,
}

/// `(len, hash)` in one word.
fn fold(len: u32, hash: u64) -> u64 {
    hash ^ u64::from(len).wrapping_mul(0x9e37_79b9_7f4a_7c15)
}

impl FpIndex {
    pub(super) fn of(files: &super::entries::Entries) -> Self {
        let mut ix = Self::default();
        for (k, f) in files.iter() {
            ix.add(*k, f.fp);
        }
        ix
    }

    pub(super) fn add(&mut self, key: u64, fp: Fingerprint) {
        let k = fold(fp.len, fp.hash);
        match self.first.entry(k) {
            std::collections::hash_map::Entry::Vacant(v) => {
                v.insert(key);
            }
            std::collections::hash_map::Entry::Occupied(_) => self.more.entry(k).or_default().push(key),
        }
        *self.lens.entry(fp.len).or_default() += 1;
    }

    pub(super) fn remove(&mut self, key: u64, fp: Fingerprint) {
        let k = fold(fp.len, fp.hash);
        let mut removed = 0;
        if let Some(more) = self.more.get_mut(&k) {
            let before = more.len();
            more.retain(|x| *x != key);
            removed = before - more.len();
        }
        if removed == 0 && self.first.get(&k) == Some(&key) {
            removed = 1;
            match self.more.get_mut(&k).and_then(SmallVec::pop) {
                Some(next) => {
                    self.first.insert(k, next);
                }
                None => {
                    self.first.remove(&k);
                }
            }
        }
        if self.more.get(&k).is_some_and(SmallVec::is_empty) {
            self.more.remove(&k);
        }
        if removed > 0 {
            if let Some(n) = self.lens.get_mut(&fp.len) {
                *n = n.saturating_sub(removed);
                if *n == 0 {
                    self.lens.remove(&fp.len);
                }
            }
        }
    }

    /// Keys of entries whose fingerprint a file starting with `prefix` may
    /// match (entries since removed from the store may be among them; so
    /// may entries that do not match: each is to be checked).
    pub(super) fn candidates(&self, prefix: &[u8]) -> Vec<u64> {
        let mut out = Vec::new();
        for &len in self.lens.keys() {
            let n = len as usize;
            if n > prefix.len() {
                break;
            }
            let k = fold(len, xxhash_rust::xxh3::xxh3_64(&prefix[..n]));
            if let Some(key) = self.first.get(&k) {
                out.push(*key);
                if let Some(more) = self.more.get(&k) {
                    out.extend_from_slice(more);
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_of_one_fingerprint_are_all_found_and_removed_one_by_one() {
        let mut ix = FpIndex::default();
        let (a, b) = (Fingerprint::of(b"alpha"), Fingerprint::of(b"beta line"));
        for k in [1, 2, 3] {
            ix.add(k, a);
        }
        ix.add(4, b);
        let mut found = ix.candidates(b"alpha and more");
        found.sort_unstable();
        assert_eq!(found, [1, 2, 3]);
        ix.remove(1, a);
        ix.remove(3, a);
        assert_eq!(ix.candidates(b"alpha"), [2]);
        ix.remove(2, a);
        assert!(ix.candidates(b"alpha").is_empty());
        assert_eq!(ix.candidates(b"beta line!"), [4]);
        ix.remove(4, b);
        assert!(ix.first.is_empty() && ix.more.is_empty() && ix.lens.is_empty());
    }
}
