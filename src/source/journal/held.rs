//! The cursor a journal source may save while `multiline` stages hold
//! entries. A held entry is not yet in any chunk: saving the cursor of an
//! entry read after it would skip it after a restart. So each entry gets a
//! number (the line start its context's blocks remember), and while blocks
//! are held the cursor saved is that of the last entry before the oldest
//! held one. Without `multiline` stages nothing is kept.

use std::collections::VecDeque;

/// Entry numbers and, while blocks may be held, the cursors by number.
#[derive(Debug, Default)]
pub struct Held {
    /// The source has `multiline` stages: cursors are kept.
    on: bool,
    /// The number of the last entry read.
    seq: u64,
    /// `(number, cursor)` of the entries read since no block was held, and
    /// of the last one read before (the last one before the oldest held
    /// entry first).
    recent: VecDeque<(u64, String)>,
}

impl Held {
    pub fn new(on: bool) -> Self {
        Self { on, ..Self::default() }
    }

    /// Numbers the next entry (with its cursor): its line start.
    pub fn entry(&mut self, cursor: Option<&str>) -> u64 {
        self.seq += 1;
        if let (true, Some(c)) = (self.on, cursor) {
            self.recent.push_back((self.seq, c.to_string()));
        }
        self.seq
    }

    /// The cursor safe to save now: `last` (that of the last entry read)
    /// when no entry is held (`held_from`, the number of the oldest held
    /// one, is `None`); else that of the last entry before it, `None` when
    /// no such entry was read.
    pub fn safe(&mut self, held_from: Option<u64>, last: Option<String>) -> Option<String> {
        let Some(h) = held_from else {
            // Only the last entry read is kept: a block that begins after it
            // saves its cursor.
            let keep = self.recent.len().saturating_sub(1);
            self.recent.drain(..keep);
            return last;
        };
        while self.recent.len() >= 2 && self.recent[1].0 < h {
            self.recent.pop_front();
        }
        self.recent.front().filter(|(n, _)| *n < h).map(|(_, c)| c.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn while_a_block_is_held_the_safe_cursor_is_the_one_before_it() {
        let mut h = Held::new(true);
        let a = h.entry(Some("a"));
        let b = h.entry(Some("b"));
        let _c = h.entry(Some("c"));
        assert_eq!(h.safe(None, Some("c".into())).as_deref(), Some("c"), "nothing held: the last read");
        let d = h.entry(Some("d"));
        let _e = h.entry(Some("e"));
        assert_eq!(h.safe(Some(d), Some("e".into())).as_deref(), Some("c"), "d held: c is the last before it");
        assert_eq!(h.safe(Some(d), Some("e".into())).as_deref(), Some("c"), "asked again: the same");
        assert!(a < b && b < d);
        let mut first = Held::new(true);
        let x = first.entry(Some("x"));
        assert_eq!(first.safe(Some(x), Some("x".into())), None, "the first entry held: no cursor to save");
    }

    #[test]
    fn without_multiline_stages_no_cursor_is_kept() {
        let mut h = Held::new(false);
        h.entry(Some("a"));
        assert!(h.recent.is_empty());
        assert_eq!(h.safe(None, Some("a".into())).as_deref(), Some("a"));
    }
}
