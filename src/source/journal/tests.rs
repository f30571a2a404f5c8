//! The pieces of the journal source that need no journalctl: bounded line
//! reading and entry labels through the stages.

use std::collections::BTreeMap;

use super::*;
use crate::pipeline::{Op, Processed, Stage};
use crate::queue::Interner;

fn lines_of(data: &[u8], cap: usize) -> Vec<Result<Vec<u8>, usize>> {
    let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    rt.block_on(async {
        // A buffer smaller than the lines, so lines span several fills.
        let mut r = BufReader::with_capacity(4, data);
        let mut line = LineBuf::default();
        let mut out = Vec::new();
        loop {
            match next_line(&mut r, &mut line, cap).await.unwrap() {
                Line::Whole(_) => out.push(Ok(line.bytes.clone())),
                Line::TooLong(n) => out.push(Err(n)),
                Line::End => return out,
            }
        }
    })
}

#[test]
fn lines_over_the_cap_are_skipped_whole_and_a_cut_off_last_line_is_dropped() {
    let got = lines_of(b"{\"a\":1}\n0123456789abcdef\n\nshort\ncut off", 8);
    assert_eq!(got, vec![Ok(b"{\"a\":1}".to_vec()), Err(17), Ok(Vec::new()), Ok(b"short".to_vec())]);
}

#[test]
fn entry_labels_join_the_stream_and_the_timestamp_is_the_entrys() {
    let mut src = SourceConfig { host_label: false, ..Default::default() };
    src.labels.insert("job".into(), "systemd-journal".into());
    let re = regex::Regex::new(r"user=(?P<user>\w+)").unwrap();
    let stages = vec![Stage {
        op: Op::Regex { re, names: vec!["user".into()], source: None },
        labels: vec![("user".into(), "user".into())],
        metadata: vec![],
    }];
    let s = SourceStages::new(Arc::from("j"), &src, stages, None, Interner::new(), &BTreeMap::new());
    let mut a = s.context(None);
    let mut b = s.context(None);
    let mut chunk = Chunk::default();
    let ts = 1_700_000_000_000_123_000;
    let nginx = [("unit", "nginx.service"), ("level", "error")];
    assert_eq!(s.process_with_labels(&mut a, b"boom user=ann", ts, &nginx, &mut chunk), Processed::Kept);
    assert_eq!(s.process_with_labels(&mut b, b"tick", ts, &[("unit", "cron")], &mut chunk), Processed::Kept);
    // Same extracted label, other unit: another stream (the extracted-label cache is per label set).
    assert_eq!(s.process_with_labels(&mut b, b"x user=ann", ts + 1, &[("unit", "cron")], &mut chunk), Processed::Kept);
    // A context given other labels than it holds moves to their stream.
    assert_eq!(s.process_with_labels(&mut a, b"plain", ts, &[("unit", "sshd")], &mut chunk), Processed::Kept);
    let e = &chunk.entries;
    let labels: Vec<&str> = e.iter().map(|e| chunk.stream(e).labels_json.as_str()).collect();
    assert_eq!(
        labels,
        [
            r#"{"job":"systemd-journal","level":"error","unit":"nginx.service","user":"ann"}"#,
            r#"{"job":"systemd-journal","unit":"cron"}"#,
            r#"{"job":"systemd-journal","unit":"cron","user":"ann"}"#,
            r#"{"job":"systemd-journal","unit":"sshd"}"#,
        ]
    );
    assert!(e.iter().all(|e| !e.assigned_ts), "entry times are real, never bumped");
    assert_eq!((e[0].ts, e[2].ts), (ts, ts + 1));
    let mut c = s.context(None);
    assert_eq!(s.process_with_labels(&mut c, b"bad \xff", ts, &[], &mut chunk), Processed::Kept);
    assert_eq!(c.invalid_utf8, 1);
}
