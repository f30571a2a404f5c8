//! Lines in flight across crashes, through the real positions file and its
//! log: what each line went out as, read again after one kill or two.

use super::tests::{one, tracking_a};
use super::*;

/// The write-ahead log: acknowledgements and lines in flight after the last
/// save survive a crash (no save at all here), and a save starts a new log
/// and removes the old ones.
#[test]
fn the_log_carries_acknowledgements_and_lines_in_flight_past_a_crash() {
    let (dir, path, f, p, k) = tracking_a();
    f.save().unwrap();
    // Three chunks of 10 bytes, 2 lines each, in batches 1, 2 and 3; only 2 and 1 are acknowledged.
    for (seq, to, ts) in [(1u64, 10u64, 100i64), (2, 20, 200), (3, 30, 300)] {
        p.flight(k, to, 2, vec![Run { batch: seq, ts: Some(ts), count: 2, delivered: false }]);
        p.register(seq, &[AckRef { file: k, offset: to }]);
    }
    p.ack(2, &[AckRef { file: k, offset: 20 }]);
    p.ack(1, &[AckRef { file: k, offset: 10 }]);
    // A kill -9: nothing saved since the track.
    drop(f);
    let f = PositionsFile::load(&path, false).unwrap();
    let q = one(&f);
    let (k2, offset) = q.resume(b"hello\nworld\n", Path::new("/log/a"), 7, 9).unwrap();
    assert_eq!(offset, 20, "acknowledged through the log");
    let mut r = q.take_replay(k2, offset).expect("batch 3 was in flight");
    let again: Vec<Again> = std::iter::from_fn(|| r.next_line()).collect();
    assert_eq!(again, [Again::Send(Some(300)), Again::Send(Some(301))]);
    assert!(q.take_replay(k2, offset).is_none(), "taken once");

    // A save holds everything and removes the logs before it.
    f.save().unwrap();
    let logs = || {
        std::fs::read_dir(dir.path())
            .unwrap()
            .filter(|e| e.as_ref().unwrap().file_name().to_string_lossy().contains(".wal-"))
            .count()
    };
    assert_eq!(logs(), 1, "only the log started by the save");
}

/// A batch holding part of a chunk in flight: its records are saved in the
/// positions file and loaded again, with what was delivered marked.
#[test]
fn lines_in_flight_are_saved_and_loaded_with_what_was_delivered() {
    let (_dir, path, f, p, k) = tracking_a();
    // One chunk split over batches 5 (acknowledged) and 6 (not).
    p.flight(
        k,
        40,
        5,
        vec![
            Run { batch: 5, ts: Some(1000), count: 3, delivered: false },
            Run { batch: 6, ts: Some(1003), count: 2, delivered: false },
        ],
    );
    p.register(5, &[AckRef { file: k, offset: 0 }]);
    p.register(6, &[AckRef { file: k, offset: 40 }]);
    p.ack(5, &[AckRef { file: k, offset: 0 }]);
    f.save().unwrap();
    drop(f);
    let q = one(&PositionsFile::load(&path, false).unwrap());
    let (k2, offset) = q.resume(b"hello\nworld\n", Path::new("/log/a"), 7, 9).unwrap();
    assert_eq!(offset, 0);
    let mut r = q.take_replay(k2, offset).unwrap();
    let again: Vec<Again> = std::iter::from_fn(|| r.next_line()).collect();
    use Again::*;
    assert_eq!(again, [Skip, Skip, Skip, Send(Some(1003)), Send(Some(1004))]);
}

/// A source stopped (a reload, a park) before it read all its lines in
/// flight again: the next one goes on with the rest, also after a save and
/// a crash, where this run's records of what it read again come first.
#[test]
fn what_a_stopped_source_did_not_read_again_goes_to_the_next_one() {
    let (_dir, path, f, p, k) = tracking_a();
    p.flight(k, 30, 3, vec![Run { batch: 1, ts: Some(50), count: 3, delivered: false }]);
    p.register(1, &[AckRef { file: k, offset: 30 }]);
    f.save().unwrap();
    drop(f);
    let f = PositionsFile::load(&path, false).unwrap();
    let q = one(&f);
    let (k, start) = q.resume(b"hello\n", Path::new("/log/a"), 7, 9).unwrap();
    let mut r = q.take_replay(k, start).unwrap();
    // One line read again up to 10 and batched (batch 7), then a reload.
    assert_eq!(r.next_line(), Some(Again::Send(Some(50))));
    assert!(r.chunk_done(10));
    q.flight(k, 10, 1, vec![Run { batch: 7, ts: Some(50), count: 1, delivered: false }]);
    q.keep_replay(k, Some(r), 10);
    f.save().unwrap();
    let mut again = q.take_replay(k, 10).unwrap();
    assert_eq!(again.next_line(), Some(Again::Send(Some(51))));
    assert!(again.chunk_done(20));
    q.flight(k, 20, 1, vec![Run { batch: 8, ts: Some(51), count: 1, delivered: false }]);
    q.keep_replay(k, Some(again), 20);
    f.save().unwrap();
    drop(f);
    let q = one(&PositionsFile::load(&path, false).unwrap());
    let (k, start) = q.resume(b"hello\n", Path::new("/log/a"), 7, 9).unwrap();
    assert_eq!(start, 0);
    let mut r = q.take_replay(k, start).unwrap();
    let mut fates = Vec::new();
    for end in [10, 20, 30] {
        fates.extend(std::iter::from_fn(|| r.next_line()));
        assert!(r.chunk_done(end));
    }
    assert_eq!(fates, [Again::Send(Some(50)), Again::Send(Some(51)), Again::Send(Some(52))], "saved as it was left");
    assert!(r.is_done());
}

/// The loss the chaos test found in CI (2026-11-24), through the real log:
/// an agent restarted, read lines in flight again, and was killed before it
/// wrote the positions file; the next loaded both runs' records of those
/// lines and gave lines the fates of others (delivered ones: never sent).
#[test]
fn an_agent_killed_twice_before_a_save_replays_each_line_as_it_last_went() {
    let (_dir, path, f, p, k) = tracking_a();
    f.save().unwrap();
    // The first run: lines 0..4 (to 40) in batch 1, 4..8 (to 80) in batch 2; only 2 acknowledged.
    p.flight(k, 40, 4, vec![Run { batch: 1, ts: Some(100), count: 4, delivered: false }]);
    p.register(1, &[AckRef { file: k, offset: 40 }]);
    p.flight(k, 80, 4, vec![Run { batch: 2, ts: Some(200), count: 4, delivered: false }]);
    p.register(2, &[AckRef { file: k, offset: 80 }]);
    p.ack(2, &[AckRef { file: k, offset: 80 }]);
    drop(f);
    // The second: lines 0..4 sent again in batch 9 (not acknowledged), 4..8 skipped.
    let f = PositionsFile::load(&path, false).unwrap();
    let q = one(&f);
    let (k, start) = q.resume(b"hello\n", Path::new("/log/a"), 7, 9).unwrap();
    assert_eq!(start, 0);
    let mut r = q.take_replay(k, start).unwrap();
    let first: Vec<Again> = std::iter::from_fn(|| r.next_line()).collect();
    assert_eq!(first, [Again::Send(Some(100)), Again::Send(Some(101)), Again::Send(Some(102)), Again::Send(Some(103))]);
    assert!(r.chunk_done(40));
    q.flight(k, 40, 4, vec![Run { batch: 9, ts: Some(100), count: 4, delivered: false }]);
    q.register(9, &[AckRef { file: k, offset: 40 }]);
    let second: Vec<Again> = std::iter::from_fn(|| r.next_line()).collect();
    assert_eq!(second, [Again::Skip; 4]);
    assert!(r.chunk_done(80));
    let mut skipped = Vec::new();
    (0..4).for_each(|_| Run::push_skipped(&mut skipped));
    q.flight(k, 80, 4, skipped);
    q.register(10, &[AckRef { file: k, offset: 80 }]);
    drop(f);
    // The third: each line as it last went.
    let q = one(&PositionsFile::load(&path, false).unwrap());
    let (k, start) = q.resume(b"hello\n", Path::new("/log/a"), 7, 9).unwrap();
    let mut r = q.take_replay(k, start).unwrap();
    let mut fates = Vec::new();
    for end in [40, 80] {
        fates.extend(std::iter::from_fn(|| r.next_line()));
        assert!(r.chunk_done(end));
    }
    use Again::*;
    assert_eq!(fates, [Send(Some(100)), Send(Some(101)), Send(Some(102)), Send(Some(103)), Skip, Skip, Skip, Skip]);
}

/// Found by the soak (`benches/soak.py`, seed 2): an agent restarted after a
/// kill handed its records of the lines in flight to the file's source,
/// saved its positions, and was killed again while the source waited on a
/// lookup (the service resetting connections) before those lines went out:
/// the save no longer held the records, so the third run sent the lines
/// with new timestamps and Loki kept both copies (510 lines twice).
#[test]
fn records_handed_to_a_replay_survive_a_save_and_a_second_kill_before_the_lines_go_again() {
    let (_dir, path, f, p, k) = tracking_a();
    f.save().unwrap();
    p.flight(k, 40, 4, vec![Run { batch: 1, ts: Some(100), count: 4, delivered: false }]);
    p.register(1, &[AckRef { file: k, offset: 40 }]);
    drop(f);
    // The second run: the source takes the records, the agent saves, a kill before the lines go again.
    let f = PositionsFile::load(&path, false).unwrap();
    let q = one(&f);
    let (k2, start) = q.resume(b"hello\n", Path::new("/log/a"), 7, 9).unwrap();
    assert!(q.take_replay(k2, start).is_some());
    assert!(q.take_replay(k2, start).is_none(), "handed out once");
    f.save().unwrap();
    drop(f);
    // The third: the lines go again as they first went.
    let q = one(&PositionsFile::load(&path, false).unwrap());
    let (k3, start) = q.resume(b"hello\n", Path::new("/log/a"), 7, 9).unwrap();
    let mut r = q.take_replay(k3, start).expect("the records were saved");
    let fates: Vec<Again> = std::iter::from_fn(|| r.next_line()).collect();
    assert_eq!(fates, [Again::Send(Some(100)), Again::Send(Some(101)), Again::Send(Some(102)), Again::Send(Some(103))]);
    assert!(r.chunk_done(40));
    // Once delivered past, the records are gone from the next save.
    q.register(5, &[AckRef { file: k3, offset: 40 }]);
    q.ack(5, &[AckRef { file: k3, offset: 40 }]);
    assert!(q.take_replay(k3, 40).is_none());
}
