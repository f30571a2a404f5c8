use super::*;

fn config(dir: &Path, max: u64, segment: u64) -> crate::config::SpoolConfig {
    crate::config::SpoolConfig {
        path: dir.to_path_buf(),
        max_bytes: crate::util::HumanSize(max),
        segment_bytes: crate::util::HumanSize(segment),
    }
}

fn record(line: &str) -> Vec<u8> {
    let mut out = Vec::new();
    Record { ts: 1, line: line.into(), ..Default::default() }.encode(&mut out);
    out
}

#[tokio::test]
async fn appends_are_on_disk_when_they_return_and_segments_roll_and_go_once_every_client_delivered_them() {
    let dir = tempfile::tempdir().unwrap();
    let spools = Spools::new(&config(dir.path(), 1 << 20, 4096));
    let s = spools.source("net/1", vec!["a".into(), "b".into()]).unwrap();
    assert!(s.dir.ends_with("net_1"));
    let first = s.segments()[0];
    for i in 0..100 {
        s.append(record(&format!("line {i} {}", "x".repeat(60)))).await.unwrap();
    }
    let segs = s.segments();
    assert!(segs.len() > 1, "{segs:?}");
    assert!(s.is_sealed(first));
    assert!(!s.is_sealed(*segs.last().unwrap()));
    let text = std::fs::read_to_string(segment_path(&s.dir, first)).unwrap();
    let mut lines = text.lines();
    assert!(Record::decode(lines.next().unwrap().as_bytes()).is_none(), "the header is no record");
    assert_eq!(Record::decode(lines.next().unwrap().as_bytes()).unwrap().line, format!("line 0 {}", "x".repeat(60)));
    let before = spools.used();
    assert!(!s.delivered(first, "a"));
    assert!(segment_path(&s.dir, first).exists());
    assert!(s.delivered(first, "b"));
    assert!(!segment_path(&s.dir, first).exists());
    assert!(spools.used() < before);
}

#[tokio::test]
async fn a_full_spool_refuses_and_a_restart_begins_a_new_segment() {
    let dir = tempfile::tempdir().unwrap();
    {
        let spools = Spools::new(&config(dir.path(), 8192, 4096));
        let s = spools.source("n", vec!["a".into()]).unwrap();
        let mut refused = false;
        for _ in 0..200 {
            if let Err(SpoolError::Full { .. }) = s.append(record(&"y".repeat(100))).await {
                refused = true;
                break;
            }
        }
        assert!(refused);
    }
    let spools = Spools::new(&config(dir.path(), 1 << 20, 4096));
    let s = spools.source("n", vec!["a".into()]).unwrap();
    let segs = s.segments();
    assert!(segs.len() >= 3, "{segs:?}");
    assert!(segs[..segs.len() - 1].iter().all(|&q| s.is_sealed(q)));
    assert!(spools.used() > 8000);
}

#[test]
fn records_round_trip_with_tenant_labels_and_metadata() {
    let r = Record {
        ts: 1_700_000_000_000_000_001,
        tenant: Some("team-a".into()),
        labels: vec![("job".into(), "x".into())],
        line: "a \"quoted\"\nline".into(),
        stream: None,
        metadata: vec![("trace_id".into(), "abc".into())],
    };
    let mut out = Vec::new();
    r.encode(&mut out);
    assert_eq!(out.iter().filter(|&&b| b == b'\n').count(), 1);
    let back = Record::decode(&out[..out.len() - 1]).unwrap();
    assert_eq!(back, r);
    assert_eq!(back.metadata_json().unwrap(), r#"{"trace_id":"abc"}"#);
}

fn about(name: &str) -> About {
    let config = crate::config::SourceConfig {
        kind: crate::config::SourceType::Syslog,
        name: Some(name.into()),
        labels: [("job".to_string(), "syslog".to_string())].into(),
        ..Default::default()
    };
    About { name: name.into(), config, clients: vec!["a".into()] }
}

fn deliver_all(s: &SourceSpool, client: &str) {
    for seq in s.segments() {
        s.delivered(seq, client);
    }
}

#[tokio::test]
async fn a_spool_whose_source_is_gone_is_retired_sealed_listed_with_its_source_and_removed_once_delivered() {
    let dir = tempfile::tempdir().unwrap();
    let spools = Spools::new(&config(dir.path(), 1 << 20, 4096));
    let s = spools.source("gone", vec!["a".into()]).unwrap();
    s.describe(&about("gone"));
    s.append(record("acknowledged")).await.unwrap();
    let kept = spools.source("kept", vec!["a".into()]).unwrap();
    let last = *s.segments().last().unwrap();
    assert!(!s.is_sealed(last));
    let orphans = spools.orphans(&["kept"]);
    assert_eq!(orphans.len(), 1);
    let (found, spool) = &orphans[0];
    assert_eq!(found.name, "gone");
    assert_eq!(found.config.labels["job"], "syslog");
    assert!(Arc::ptr_eq(spool, &s), "the running spool itself, not a second count of its bytes");
    assert!(s.is_sealed(last), "retired: every segment sealed");
    assert!(matches!(s.append(record("late")).await, Err(SpoolError::Stopped)));
    assert!(!kept.is_sealed(*kept.segments().last().unwrap()), "a configured source's spool goes on");
    assert!(!s.is_drained());
    deliver_all(&s, "a");
    assert!(s.is_drained());
    s.remove_drained();
    assert!(!s.dir.exists());
    assert!(spools.orphans(&["kept"]).is_empty());
}

#[tokio::test]
async fn a_spool_left_by_a_source_removed_while_the_agent_was_down_is_found_at_the_next_start() {
    let dir = tempfile::tempdir().unwrap();
    {
        let spools = Spools::new(&config(dir.path(), 1 << 20, 4096));
        let s = spools.source("old", vec!["a".into()]).unwrap();
        s.describe(&about("old"));
        s.append(record("waiting")).await.unwrap();
    }
    // Written before source.json existed: found under its directory's name.
    std::fs::create_dir_all(dir.path().join("older")).unwrap();
    std::fs::write(segment_path(&dir.path().join("older"), 1), "{\"tailship_spool\":1}\n").unwrap();
    // Nothing in it: removed at once.
    std::fs::create_dir_all(dir.path().join("empty")).unwrap();
    let spools = Spools::new(&config(dir.path(), 1 << 20, 4096));
    let orphans = spools.orphans(&[]);
    let names: Vec<&str> = orphans.iter().map(|(a, _)| a.name.as_str()).collect();
    assert_eq!(names, ["old", "older"]);
    assert_eq!(orphans[0].0.config.kind, crate::config::SourceType::Syslog);
    assert!(orphans[1].0.config.labels.is_empty());
    assert!(!dir.path().join("empty").exists());
    assert!(spools.used() > 0, "their bytes count in max_bytes");
    let (_, s) = &orphans[0];
    assert!(s.segments().iter().all(|&q| s.is_sealed(q)));
}

#[tokio::test]
async fn a_source_configured_again_writes_to_its_retired_spool() {
    let dir = tempfile::tempdir().unwrap();
    let spools = Spools::new(&config(dir.path(), 1 << 20, 4096));
    let s = spools.source("back", vec!["a".into()]).unwrap();
    s.append(record("one")).await.unwrap();
    assert_eq!(spools.orphans(&[]).len(), 1);
    let again = spools.source("back", vec!["a".into()]).unwrap();
    assert!(Arc::ptr_eq(&again, &s));
    again.append(record("two")).await.unwrap();
    let segs = again.segments();
    assert!(!again.is_sealed(*segs.last().unwrap()));
    assert!(segs[..segs.len() - 1].iter().all(|&q| again.is_sealed(q)));
    assert!(!again.is_drained());
}
