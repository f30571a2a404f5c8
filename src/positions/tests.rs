//! Acknowledgement order, persistence and recovery of the positions store.

use super::persist::write_atomically_with;
use super::*;

#[test]
fn commits_only_acknowledged_prefix() {
    let p = Positions::in_memory();
    let k = p.track(Path::new("/a"), Fingerprint::of(b"x"), 1, 1, 0);
    p.register(1, &[AckRef { file: k, offset: 10 }]);
    p.register(2, &[AckRef { file: k, offset: 20 }]);
    p.register(3, &[AckRef { file: k, offset: 30 }]);
    p.ack(2, &[AckRef { file: k, offset: 20 }]);
    assert_eq!(p.committed(k), Some(0));
    p.ack(1, &[AckRef { file: k, offset: 10 }]);
    assert_eq!(p.committed(k), Some(20));
    p.ack(3, &[AckRef { file: k, offset: 30 }]);
    assert_eq!(p.committed(k), Some(30));
}

/// Found by the chaos run: see `tests/regression.rs`,
/// `copytruncate_with_old_lines_in_flight_never_commits_an_old_offset_for_the_new_content`.
#[test]
fn late_acks_of_a_truncated_files_old_content_do_not_move_the_new_contents_position() {
    let p = Positions::in_memory();
    let old = p.track(Path::new("/a"), Fingerprint::of(b"old"), 1, 1, 0);
    p.register(1, &[AckRef { file: old, offset: 1000 }]);
    // Truncated while batch 1 is in flight and batch 2 (old lines too) is not sealed yet.
    let new = p.restart(old, Fingerprint::of(b"new"));
    assert_ne!(new, old);
    p.register(2, &[AckRef { file: old, offset: 5000 }]);
    p.register(3, &[AckRef { file: new, offset: 40 }]);
    p.ack(3, &[AckRef { file: new, offset: 40 }]);
    p.ack(2, &[AckRef { file: old, offset: 5000 }]);
    p.ack(1, &[AckRef { file: old, offset: 1000 }]);
    assert_eq!(p.committed(new), Some(40));
    assert_eq!(p.committed(old), Some(5000));
}

#[test]
fn fingerprints_match_grown_files_only() {
    let fp = Fingerprint::of(b"first line\n");
    assert!(fp.matches(b"first line\nsecond line\n"));
    assert!(!fp.matches(b"first"));
    assert!(!fp.matches(b"other line\n"));
}

#[test]
fn save_load_and_corrupt_file_moved_aside() {
    let (dir, path, f, p, k) = tracking_a();
    p.register(1, &[AckRef { file: k, offset: 6 }]);
    p.ack(1, &[AckRef { file: k, offset: 6 }]);
    f.save().unwrap();
    let q = one(&PositionsFile::load(&path, false).unwrap());
    assert_eq!(q.resume(b"hello\nworld\n", Path::new("/log/a"), 7, 9), Some((0, 6)));
    assert_eq!(q.resume(b"hello\nworld\n", Path::new("/log/a"), 7, 9), None, "already tailed");
    std::fs::write(&path, b"{not json").unwrap();
    // Not read: an error naming the file and how to start without it; the file stays.
    let e = PositionsFile::load(&path, false).unwrap_err().to_string();
    assert!(e.contains(&path.display().to_string()) && e.contains("corrupt") && e.contains("--fresh-positions"), "{e}");
    assert!(path.exists() && !dir.path().join("positions.json.corrupt").exists());
    // Asked to start fresh: moved aside.
    let r = one(&PositionsFile::load(&path, true).unwrap());
    assert!(r.resume(b"hello\n", Path::new("/log/a"), 7, 9).is_none());
    assert!(dir.path().join("positions.json.corrupt").exists());
}

#[test]
fn a_planted_temp_file_symlink_is_never_followed() {
    use std::os::unix::fs::symlink;
    let dir = tempfile::tempdir().unwrap();
    let victim = dir.path().join("victim");
    std::fs::write(&victim, "precious").unwrap();
    // The fixed temp name earlier versions used, planted as a link to another file.
    symlink(&victim, dir.path().join(".positions.json.tmp")).unwrap();
    let path = dir.path().join("positions.json");
    write_atomically_with(&path, |w| std::io::Write::write_all(w, b"{\"version\":1,\"files\":[]}")).unwrap();
    write_atomically_with(&path, |w| std::io::Write::write_all(w, b"{\"version\":1,\"files\":[]}")).unwrap();
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
    assert!(std::fs::symlink_metadata(&path).unwrap().file_type().is_file());
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".tmp") && n != ".positions.json.tmp")
        .collect();
    assert!(left.is_empty(), "temp files left: {left:?}");
}

#[test]
fn a_journal_cursor_moves_only_over_acknowledged_chunks() {
    let p = Positions::in_memory();
    let (k, start) = p.journal_resume("journal-0", None);
    assert_eq!(start, None);
    let m1 = p.journal_mark(k, "c1".into());
    let m2 = p.journal_mark(k, "c2".into());
    let m3 = p.journal_mark(k, "c3".into());
    // Chunk 2 was split over batches 2 and 3: batch 2 carries the offset-0 mark.
    p.register(1, &[AckRef { file: k, offset: m1 }]);
    p.register(2, &[AckRef { file: k, offset: 0 }]);
    p.register(3, &[AckRef { file: k, offset: m2 }]);
    p.register(4, &[AckRef { file: k, offset: m3 }]);
    p.ack(3, &[AckRef { file: k, offset: m2 }]);
    assert_eq!(p.journal_cursor(k), None, "batch 1 not acknowledged yet");
    p.ack(1, &[AckRef { file: k, offset: m1 }]);
    assert_eq!(p.journal_cursor(k).as_deref(), Some("c1"), "batch 2 (part of chunk 2) still out");
    p.ack(2, &[AckRef { file: k, offset: 0 }]);
    assert_eq!(p.journal_cursor(k).as_deref(), Some("c2"));
    p.ack(4, &[AckRef { file: k, offset: m3 }]);
    assert_eq!(p.journal_cursor(k).as_deref(), Some("c3"));
}

#[test]
fn journal_cursors_are_saved_beside_files_and_old_files_still_load() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("positions.json");
    // A file written before journal sources existed.
    let old = format!(
        r#"{{"version":1,"files":[{{"path":"/log/a","fingerprint":"00000000000000ff","fingerprint_len":6,"offset":6,"updated_at":{}}}]}}"#,
        now_secs()
    );
    std::fs::write(&path, old).unwrap();
    let f = PositionsFile::load(&path, false).unwrap();
    let p = one(&f);
    assert_eq!(p.lock().files.len(), 1, "the old file's position loads");
    let (k, _) = p.journal_resume("sys", Some(Path::new("/var/log/journal")));
    let m = p.journal_mark(k, "s=1;i=2".into());
    p.register(1, &[AckRef { file: k, offset: m }]);
    p.ack(1, &[AckRef { file: k, offset: m }]);
    p.journal_release(k, Some("s=1;i=2".into()));
    f.save().unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains("\"journals\"") && text.contains("s=1;i=2"), "{text}");
    let q = one(&PositionsFile::load(&path, false).unwrap());
    assert_eq!(q.lock().files.len(), 1);
    assert_eq!(q.journal_resume("sys", None).1, None, "another journal (the system one)");
    assert_eq!(q.journal_resume("sys", Some(Path::new("/var/log/journal"))).1.as_deref(), Some("s=1;i=2"));
}

#[test]
fn a_reloaded_journal_source_goes_on_from_what_its_predecessor_queued() {
    let p = Positions::in_memory();
    let (k, _) = p.journal_resume("j", None);
    let m = p.journal_mark(k, "c9".into());
    p.register(1, &[AckRef { file: k, offset: m }]);
    p.journal_release(k, Some("c9".into()));
    let (k2, start) = p.journal_resume("j", None);
    assert_eq!((k2, start.as_deref()), (k, Some("c9")), "in flight, not delivered: not read again");
    p.ack(1, &[AckRef { file: k, offset: m }]);
    assert_eq!(p.journal_cursor(k).as_deref(), Some("c9"));
}

/// The positions of the one client of the `[client]` form.
/// A positions file in a temp dir, its one client, and `/log/a` (first bytes
/// `hello\n`) tracked from 0: (dir, path, file, client, key).
pub(super) fn tracking_a() -> (tempfile::TempDir, PathBuf, PositionsFile, Arc<Positions>, u64) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("positions.json");
    let f = PositionsFile::load(&path, false).unwrap();
    let p = one(&f);
    let k = p.track(Path::new("/log/a"), Fingerprint::of(b"hello\n"), 7, 9, 0);
    (dir, path, f, p, k)
}

pub(super) fn one(f: &PositionsFile) -> Arc<Positions> {
    f.client(crate::config::DEFAULT_CLIENT, None).0
}

/// Tracks `/log/a` (first bytes `hello\n`) delivered to `offset`.
fn delivered(p: &Positions, offset: u64) {
    let k = p.track(Path::new("/log/a"), Fingerprint::of(b"hello\n"), 7, 9, 0);
    p.register(1, &[AckRef { file: k, offset }]);
    p.ack(1, &[AckRef { file: k, offset }]);
}

#[test]
fn a_one_client_file_loads_for_each_of_several_clients_and_is_saved_per_client() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("positions.json");
    let f = PositionsFile::load(&path, false).unwrap();
    delivered(&one(&f), 6);
    f.save().unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(
        text.contains("\"version\": 1") && !text.contains("clients"),
        "the one-client form writes version 1: {text}"
    );
    // The same file under [[clients]] a and b: both go on from offset 6.
    let f = PositionsFile::load(&path, false).unwrap();
    let (a, start_a) = f.client("a", None);
    let (b, _) = f.client("b", None);
    assert_eq!(start_a, Start::Saved);
    assert_eq!(a.resume(b"hello\nworld\n", Path::new("/log/a"), 7, 9), Some((0, 6)));
    assert_eq!(b.resume(b"hello\nworld\n", Path::new("/log/a"), 7, 9), Some((0, 6)));
    // b moves on alone; the file keeps each client's offset.
    b.register(2, &[AckRef { file: 0, offset: 12 }]);
    b.ack(2, &[AckRef { file: 0, offset: 12 }]);
    f.save().unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains("\"version\": 2") && text.contains("\"clients\""), "{text}");
    let f = PositionsFile::load(&path, false).unwrap();
    assert_eq!(f.client("a", None).0.committed(0), Some(6));
    assert_eq!(f.client("b", None).0.committed(0), Some(12));
}

#[test]
fn a_new_client_starts_where_the_others_are_unless_its_start_at_says_otherwise() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("positions.json");
    let f = PositionsFile::load(&path, false).unwrap();
    delivered(&f.client("a", None).0, 6);
    delivered(&f.client("b", None).0, 4);
    f.save().unwrap();
    let f = PositionsFile::load(&path, false).unwrap();
    let (c, start) = f.client("c", None);
    assert_eq!(start, Start::Others);
    assert_eq!(c.resume(b"hello\nworld\n", Path::new("/log/a"), 7, 9), Some((0, 6)), "the furthest of the others");
    let (d, start) = f.client("d", Some(crate::config::StartAt::Beginning));
    assert_eq!(start, Start::Fresh(crate::config::StartAt::Beginning));
    assert_eq!(
        d.resume(b"hello\nworld\n", Path::new("/log/a"), 7, 9),
        None,
        "nothing known: its sources start at the beginning"
    );
}

#[test]
fn a_removed_client_is_not_written_again() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("positions.json");
    let f = PositionsFile::load(&path, false).unwrap();
    delivered(&f.client("a", None).0, 6);
    delivered(&f.client("gone", None).0, 6);
    f.save().unwrap();
    f.remove("gone");
    delivered(&f.client("a", None).0, 6);
    f.save().unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(!text.contains("gone"), "{text}");
}

#[test]
fn a_client_added_later_starts_where_the_running_ones_are_not_where_the_file_was() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("positions.json");
    let f = PositionsFile::load(&path, false).unwrap();
    delivered(&one(&f), 6);
    f.save().unwrap();
    // Started again from that version-1 file; the running client moves on.
    let f = PositionsFile::load(&path, false).unwrap();
    let a = one(&f);
    assert_eq!(a.resume(b"hello\nworld\n", Path::new("/log/a"), 7, 9), Some((0, 6)));
    a.register(2, &[AckRef { file: 0, offset: 12 }]);
    a.ack(2, &[AckRef { file: 0, offset: 12 }]);
    // A client added now (a reload) starts at 12, not at the file's 6.
    let (b, start) = f.client("b", None);
    assert_eq!(start, Start::Others);
    assert_eq!(b.resume(b"hello\nworld\n", Path::new("/log/a"), 7, 9), Some((0, 12)));
}

/// A journal's delivered cursor reaches the log with its acknowledgement.
#[test]
fn a_journal_cursor_acknowledged_after_the_last_save_survives_a_crash() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("positions.json");
    let f = PositionsFile::load(&path, false).unwrap();
    let p = one(&f);
    let (k, _) = p.journal_resume("sys", None);
    f.save().unwrap();
    let m = p.journal_mark(k, "cursor-7".into());
    p.register(9, &[AckRef { file: k, offset: m }]);
    p.ack(9, &[AckRef { file: k, offset: m }]);
    drop(f);
    let q = one(&PositionsFile::load(&path, false).unwrap());
    assert_eq!(q.journal_resume("sys", None).1.as_deref(), Some("cursor-7"));
}

/// The fingerprint index (#29 item 7: each new file walked every entry)
/// finds every entry through grown, reset and restarted fingerprints.
#[test]
fn resume_finds_each_of_many_files_by_its_first_bytes_through_fingerprint_changes() {
    let p = Positions::in_memory();
    let content = |i: usize| format!("file {i} first line\nsecond line of {i}\n");
    let mut keys = Vec::new();
    for i in 0..2000 {
        let c = content(i);
        // Seen when only the first line was written: a short fingerprint, grown later for even files.
        let first = &c.as_bytes()[..c.find('\n').unwrap() + 1];
        let k = p.track(Path::new(&format!("/l/{i}")), Fingerprint::of(first), 1, i as u64, 0);
        keys.push(k);
    }
    // A lookup builds the index; the changes after it must keep it in step.
    assert_eq!(p.resume(b"nothing like it", Path::new("/x"), 9, 9), None);
    for (i, k) in keys.iter().enumerate() {
        if i % 2 == 0 {
            p.update_fingerprint(*k, Fingerprint::of(content(i).as_bytes()));
        }
        p.release(*k, 10, 0);
    }
    let restarted = p.restart(keys[7], Fingerprint::of(b"rewritten seven\n"));
    p.release(restarted, 0, 0);
    for i in (0..2000).rev() {
        if i == 7 {
            continue;
        }
        let got = p.resume(content(i).as_bytes(), Path::new(&format!("/l/{i}")), 1, i as u64);
        assert_eq!(got.map(|g| g.0), Some(keys[i]), "file {i}");
    }
    assert_eq!(p.resume(b"rewritten seven\nmore", Path::new("/l/7"), 1, 7).map(|g| g.0), Some(restarted));
}

/// The positions logs beside `dir`'s positions file.
fn logs_in(dir: &Path) -> usize {
    std::fs::read_dir(dir)
        .unwrap()
        .filter(|e| e.as_ref().unwrap().file_name().to_string_lossy().contains(".wal-"))
        .count()
}

/// A file name that is not UTF-8 is saved (every save failed on it: serde
/// writes no such path as a JSON string), escaped with its mark, and loaded
/// back as the very bytes; its log records too.
#[test]
fn a_file_name_that_is_not_utf8_is_saved_and_loaded_as_its_bytes() {
    use std::os::unix::ffi::OsStringExt;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("positions.json");
    let bad = PathBuf::from(std::ffi::OsString::from_vec(b"/log/bad\xff\\.log".to_vec()));
    let f = PositionsFile::load(&path, false).unwrap();
    let p = one(&f);
    let k = p.track(&bad, Fingerprint::of(b"bad\n"), 7, 9, 0);
    p.track(Path::new("/log/good"), Fingerprint::of(b"good\n"), 7, 10, 0);
    p.register(1, &[AckRef { file: k, offset: 4 }]);
    p.ack(1, &[AckRef { file: k, offset: 4 }]);
    f.save().unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains(r#""path": "/log/bad\\xff\\\\.log""#) && text.contains(r#""path_escaped": true"#), "{text}");
    // Acknowledged after the save: in the log only.
    p.flight(k, 8, 1, vec![Run { batch: 2, ts: Some(5), count: 1, delivered: false }]);
    p.register(2, &[AckRef { file: k, offset: 8 }]);
    p.ack(2, &[AckRef { file: k, offset: 8 }]);
    drop((p, f));
    let q = one(&PositionsFile::load(&path, false).unwrap());
    let (k2, offset) = q.resume(b"bad\nmore\n", &bad, 7, 9).expect("known");
    assert_eq!(offset, 8);
    q.release(k2, 8, 8);
    assert!(q.orphans().iter().any(|o| o.path == bad), "the very bytes");
}

/// A save that fails (a directory where the positions file goes) leaves no
/// log of its own: every failed save used to leave one more, with 4 MiB set
/// aside, never removed (issue 50). What was acknowledged meanwhile (in the
/// log, and in what the failed saves' logs held) is written by the first
/// save that can be, and survives a crash before it.
#[test]
fn failing_saves_start_no_new_logs() {
    let (dir, path, f, p, k) = tracking_a();
    f.save().unwrap();
    assert_eq!(logs_in(dir.path()), 1);
    let kept = dir.path().join("kept.json");
    std::fs::rename(&path, &kept).unwrap();
    std::fs::create_dir_all(path.join("in")).unwrap();
    for seq in 1..30u64 {
        p.register(seq, &[AckRef { file: k, offset: seq }]);
        p.ack(seq, &[AckRef { file: k, offset: seq }]);
        assert!(f.save().is_err());
        assert_eq!(logs_in(dir.path()), 1, "a log left by failed save {seq}");
    }
    // A crash before any save succeeds: the last file written and the log have it all.
    drop((p, f));
    std::fs::remove_dir_all(&path).unwrap();
    std::fs::rename(&kept, &path).unwrap();
    let f = PositionsFile::load(&path, false).unwrap();
    let p = one(&f);
    assert_eq!(p.resume(b"hello\n", Path::new("/log/a"), 7, 9), Some((0, 29)));
    f.save().unwrap();
    assert_eq!(logs_in(dir.path()), 1);
    drop((p, f));
    let q = one(&PositionsFile::load(&path, false).unwrap());
    assert_eq!(q.resume(b"hello\n", Path::new("/log/a"), 7, 9), Some((0, 29)));
}

/// Starts that end before any save (a crash loop) add no log each: a start
/// goes on with the newest, and what every run acknowledged is kept.
#[test]
fn restarts_without_a_save_go_on_with_the_newest_log() {
    let (dir, path, f, p, k) = tracking_a();
    f.save().unwrap();
    drop((p, f));
    for seq in 1..10u64 {
        let f = PositionsFile::load(&path, false).unwrap();
        let p = one(&f);
        let (k, _) = p.resume(b"hello\n", Path::new("/log/a"), 7, 9).unwrap();
        p.register(seq, &[AckRef { file: k, offset: seq }]);
        p.ack(seq, &[AckRef { file: k, offset: seq }]);
        assert!(logs_in(dir.path()) <= 2, "{} logs after {seq} starts", logs_in(dir.path()));
    }
    let _ = k;
    let q = one(&PositionsFile::load(&path, false).unwrap());
    assert_eq!(q.resume(b"hello\n", Path::new("/log/a"), 7, 9).map(|(_, o)| o), Some(9));
}

/// A log past its limit stops growing (its records held) while saves fail,
/// and the save after the first that succeeds starts another with them.
#[test]
fn a_log_stops_growing_at_its_limit() {
    let (dir, path, f, p, k) = tracking_a();
    f.save().unwrap();
    std::fs::remove_file(&path).unwrap();
    std::fs::create_dir_all(path.join("in")).unwrap();
    let size = || -> u64 {
        std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap())
            .filter(|e| e.file_name().to_string_lossy().contains(".wal-"))
            .map(|e| e.metadata().unwrap().len())
            .sum()
    };
    let mut seq = 0;
    while seq < 20_000 {
        seq += 1;
        p.register(seq, &[AckRef { file: k, offset: seq }]);
        p.ack(seq, &[AckRef { file: k, offset: seq }]);
        if seq % 1000 == 0 {
            assert!(f.save().is_err());
        }
    }
    assert!(size() <= 2 * wal::MAX_LOG_BYTES, "{} bytes of logs", size());
    assert!(logs_in(dir.path()) <= 2);
    std::fs::remove_dir_all(&path).unwrap();
    f.save().unwrap();
    f.save().unwrap_or_else(|e| panic!("{e}"));
    p.register(seq + 1, &[AckRef { file: k, offset: seq + 1 }]);
    p.ack(seq + 1, &[AckRef { file: k, offset: seq + 1 }]);
    f.save().unwrap();
    assert_eq!(logs_in(dir.path()), 1);
    drop((p, f));
    let q = one(&PositionsFile::load(&path, false).unwrap());
    assert_eq!(q.resume(b"hello\n", Path::new("/log/a"), 7, 9), Some((0, seq + 1)));
}
