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
        metadata: vec![("trace_id".into(), "abc".into())],
    };
    let mut out = Vec::new();
    r.encode(&mut out);
    assert_eq!(out.iter().filter(|&&b| b == b'\n').count(), 1);
    let back = Record::decode(&out[..out.len() - 1]).unwrap();
    assert_eq!(back, r);
    assert_eq!(back.metadata_json().unwrap(), r#"{"trace_id":"abc"}"#);
}
