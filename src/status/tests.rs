//! The status registry's file list (see the parent module).

use super::*;

/// One per file of 100,000 (#29 item 8): 208 bytes with its path in a
/// `PathBuf` and its ring's samples inline in a `VecDeque`.
#[test]
fn a_file_status_is_small() {
    assert!(std::mem::size_of::<FileStatus>() <= 176, "{}", std::mem::size_of::<FileStatus>());
}

/// `tests/status.rs` failed now and then: a source's lines all read before
/// the first tick gave it a rate of 0 (its ring started at its total).
#[test]
fn a_total_counted_before_its_first_tick_shows_as_a_rate() {
    let s = Status::default();
    s.tick(&[("source:a".to_string(), [201, 5000])]);
    let [lines, bytes] = s.rates("source:a", [201, 5000]);
    assert!(lines > 0.0 && bytes > 0.0, "{lines} {bytes}");
}

fn listed(s: &Status, path: &str) -> Option<Arc<FileStatus>> {
    s.files().into_iter().find(|f| f.path() == Path::new(path))
}

#[test]
fn a_file_is_listed_while_its_handle_lives_and_a_while_longer_once_done() {
    let s = &Status::default();
    let src: Arc<str> = Arc::from("t");
    let a = s.track(&src, Path::new("/status-test/a.log"), 1, 7, 70001, 0, 100, FileState::Following);
    let b = s.track(&src, Path::new("/status-test/b.log"), 2, 7, 70002, 0, 100, FileState::Following);
    a.read(100, 4, 100, 100);
    let f = listed(s, "/status-test/a.log").unwrap();
    assert_eq!((f.offset(), f.size(), f.key()), (100, 100, 1));
    assert!(f.rates(Instant::now())[0] > 0.0);
    a.set_state(FileState::Parked);
    assert_eq!(listed(s, "/status-test/a.log").unwrap().state(), FileState::Parked);
    a.restart(9);
    a.renamed(Path::new("/status-test/a.log.1"));
    assert_eq!(listed(s, "/status-test/a.log.1").unwrap().key(), 9);
    drop(a);
    assert!(listed(s, "/status-test/a.log.1").is_none(), "a source that stopped forgets its files");
    b.set_state(FileState::Done);
    drop(b);
    assert_eq!(listed(s, "/status-test/b.log").unwrap().state(), FileState::Done, "done files stay listed");
    // Taken over again (same device and inode): one entry, following.
    let b2 = s.track(&src, Path::new("/status-test/b.log"), 3, 7, 70002, 100, 100, FileState::Following);
    let all: Vec<_> = s.files().into_iter().filter(|f| f.path() == Path::new("/status-test/b.log")).collect();
    assert_eq!(all.len(), 1);
    assert_eq!(all[0].state(), FileState::Following);
    drop(b2);
}

#[test]
fn push_percentiles_come_from_the_recent_requests_and_the_last_error_stays() {
    let s = Status::default();
    assert_eq!(s.push(None).2, None);
    for ms in 1..=100 {
        s.push_request(
            "default",
            Duration::from_millis(ms),
            (ms == 50).then(|| "HTTP 503 from http://x/push".to_string()),
        );
    }
    let (requests, failures, p50, p99, last, _) = s.push(None);
    assert_eq!((requests, failures), (100, 1));
    assert_eq!(p50, Some(50.0));
    assert_eq!(p99, Some(99.0));
    assert_eq!(last.unwrap().message, "HTTP 503 from http://x/push", "the successes after it do not hide it");
}

#[test]
fn an_alert_group_opens_on_a_delivered_alerting_and_closes_on_a_delivered_ok() {
    let s = Status::default();
    let labels = vec![("job".to_string(), "app".to_string())];
    s.alert_sent("errs", "uid1", &labels, "alerting", None);
    s.alert_sent("errs", "uid2", &labels, "alerting", Some("rejected"));
    let (open, last) = s.alert("errs");
    assert_eq!(open.len(), 1, "a failed send opens nothing");
    assert_eq!(last.unwrap().error.as_deref(), Some("rejected"));
    s.alert_sent("errs", "uid1", &labels, "ok", None);
    assert!(s.alert("errs").0.is_empty());
    assert!(s.alert("other").1.is_none());
}

/// Issue #53: a mass rotation (5,000 files, 30 s) left 150,000 done files
/// in the registry, some 50 MiB of the agent's peak, because done files
/// were forgotten only when `/status` was looked at.
#[test]
fn done_files_are_forgotten_without_a_look_at_status() {
    let s = Status::default();
    let source: Arc<str> = "done-held-test".into();
    for i in 0..(DONE_HELD as u64 * 3) {
        let path = PathBuf::from(format!("/done-held/{i}.log"));
        let h = s.track(&source, &path, i, 77, 1_000_000 + i, 0, 0, FileState::Following);
        h.set_state(FileState::Done);
    }
    let held = lock(&s.files).all.values().filter(|f| f.source == source).count();
    assert!(held <= DONE_HELD, "{held} done files held");
}
