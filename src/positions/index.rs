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

use std::collections::{BTreeMap, HashMap};

use smallvec::SmallVec;

use super::{FileState, Fingerprint};

#[derive(Debug, Default, Clone)]
pub(super) struct FpIndex {
    /// One key per fingerprint but for copies of a file: held inline, not
    /// in an allocation of its own per file.
    by: HashMap<(u32, u64), SmallVec<[u64; 1]>>,
    /// Entries per fingerprint length.
    lens: BTreeMap<u32, usize>,
}

impl FpIndex {
    pub(super) fn of(files: &HashMap<u64, FileState>) -> Self {
        let mut ix = Self::default();
        for (k, f) in files {
            ix.add(*k, f.fp);
        }
        ix
    }

    pub(super) fn add(&mut self, key: u64, fp: Fingerprint) {
        self.by.entry((fp.len, fp.hash)).or_default().push(key);
        *self.lens.entry(fp.len).or_default() += 1;
    }

    pub(super) fn remove(&mut self, key: u64, fp: Fingerprint) {
        let k = (fp.len, fp.hash);
        let Some(keys) = self.by.get_mut(&k) else { return };
        let before = keys.len();
        keys.retain(|x| *x != key);
        let removed = before - keys.len();
        if keys.is_empty() {
            self.by.remove(&k);
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
    /// match (entries since removed from the store may be among them).
    pub(super) fn candidates(&self, prefix: &[u8]) -> Vec<u64> {
        let mut out = Vec::new();
        for &len in self.lens.keys() {
            let n = len as usize;
            if n > prefix.len() {
                break;
            }
            let hash = xxhash_rust::xxh3::xxh3_64(&prefix[..n]);
            if let Some(keys) = self.by.get(&(len, hash)) {
                out.extend_from_slice(keys);
            }
        }
        out
    }
}
