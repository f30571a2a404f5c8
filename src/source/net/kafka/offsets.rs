//! Where a kafka source is in each topic partition: the next offset to
//! read, moved only once what was read before it is in the spool (fsynced).
//!
//! tailship joins no consumer group and commits nothing to the brokers:
//! the offsets are its own, in `kafka-offsets.json` beside the source's
//! spool segments, written atomically (temp file, fsync, rename) as the
//! positions file is. A restart reads on from them: nothing read twice,
//! nothing skipped. Each append to the spool also ends with a *mark* line
//! (`{"tailship_mark":{"kafka":[topic, partition, next]}}`, skipped by
//! readers) in the same fsync, so that a crash between the append and the
//! file's write loses the offset of nothing: at start the newest segments'
//! marks move the offsets on ([`Offsets::catch_up`]).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The file's name in the spool directory.
pub const OFFSETS_FILE: &str = "kafka-offsets.json";

/// Topic -> partition -> next offset.
type Map = BTreeMap<String, BTreeMap<i32, i64>>;

#[derive(Debug)]
pub struct Offsets {
    path: PathBuf,
    map: Mutex<Map>,
}

impl Offsets {
    /// The offsets saved in `dir` (none when absent; a damaged file is said and moved aside).
    pub fn load(dir: &Path) -> Offsets {
        let path = dir.join(OFFSETS_FILE);
        let map = match std::fs::read(&path) {
            Ok(b) => match serde_json::from_slice::<Map>(&b) {
                Ok(m) => m,
                Err(e) => {
                    let aside = path.with_extension("json.corrupt");
                    let _ = std::fs::rename(&path, &aside);
                    tracing::warn!(path = %path.display(), error = %e,
                        "kafka offsets file is damaged; moved aside, partitions start from their earliest message");
                    Map::new()
                }
            },
            Err(_) => Map::new(),
        };
        Offsets { path, map: Mutex::new(map) }
    }

    /// The next offset of `topic`/`partition`, if one was saved.
    pub fn get(&self, topic: &str, partition: i32) -> Option<i64> {
        self.map.lock().unwrap_or_else(|p| p.into_inner()).get(topic).and_then(|m| m.get(&partition)).copied()
    }

    /// Sets the next offset of `topic`/`partition` and writes the file.
    pub fn set(&self, topic: &str, partition: i32, next: i64) -> std::io::Result<()> {
        let mut map = self.map.lock().unwrap_or_else(|p| p.into_inner());
        map.entry(topic.to_string()).or_default().insert(partition, next);
        let json = serde_json::to_vec_pretty(&*map).map_err(std::io::Error::other)?;
        crate::positions::write_atomically_with(&self.path, |f| std::io::Write::write_all(f, &json))
    }
}

/// Appends the mark saying `topic`/`partition` is spooled up to `next` to `out`.
pub fn mark(topic: &str, partition: i32, next: i64, out: &mut Vec<u8>) {
    let m = serde_json::json!({ "tailship_mark": { "kafka": [topic, partition, next] } });
    if serde_json::to_writer(&mut *out, &m).is_ok() {
        out.push(b'\n');
    }
}

impl Offsets {
    /// Moves each partition's offset on to the marks' (the values of the
    /// spool's mark lines) where they are further, and writes the file.
    pub fn catch_up(&self, marks: &[serde_json::Value]) -> std::io::Result<usize> {
        let mut moved = 0;
        for m in marks {
            let Some([t, p, n]) = m.get("kafka").and_then(|k| k.as_array()).map(Vec::as_slice) else { continue };
            let (Some(t), Some(p), Some(n)) = (t.as_str(), p.as_i64(), n.as_i64()) else { continue };
            let Ok(p) = i32::try_from(p) else { continue };
            if self.get(t, p).is_none_or(|o| o < n) {
                self.set(t, p, n)?;
                moved += 1;
            }
        }
        Ok(moved)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_survive_a_reload() {
        let dir = tempfile::tempdir().unwrap();
        let o = Offsets::load(dir.path());
        assert_eq!(o.get("logs", 0), None);
        o.set("logs", 0, 7).unwrap();
        o.set("logs", 3, 2).unwrap();
        let o = Offsets::load(dir.path());
        assert_eq!((o.get("logs", 0), o.get("logs", 3), o.get("other", 0)), (Some(7), Some(2), None));
        let mut marks = Vec::new();
        mark("logs", 0, 9, &mut marks);
        mark("logs", 3, 1, &mut marks);
        let v: Vec<serde_json::Value> = marks
            .split(|&b| b == b'\n')
            .filter(|l| !l.is_empty())
            .map(|l| serde_json::from_slice::<serde_json::Value>(l).unwrap()["tailship_mark"].clone())
            .collect();
        assert!(crate::spool::is_mark(&marks));
        assert_eq!(o.catch_up(&v).unwrap(), 1, "only forward");
        assert_eq!((o.get("logs", 0), o.get("logs", 3)), (Some(9), Some(2)));
        std::fs::write(dir.path().join(OFFSETS_FILE), "{").unwrap();
        assert_eq!(Offsets::load(dir.path()).get("logs", 0), None);
    }
}
