//! The stages over a few lines: repair, truncation, extraction, drops, timestamps.

use super::*;
use crate::pipeline::{DropRule, TimeFormat};
use regex::Regex;

#[test]
fn repairs_truncates_and_extracts() {
    let mut src = SourceConfig { host_label: false, ..Default::default() };
    src.max_line_bytes = crate::util::HumanSize(16);
    src.labels.insert("job".into(), "app".into());
    let level = Regex::new(r"(?P<level>ERROR|INFO)").unwrap();
    let stages = vec![
        Stage {
            op: Op::Regex { re: level, names: vec!["level".into()], source: None },
            labels: vec![("level".into(), "level".into())],
            metadata: vec![],
        },
        Stage::plain(Op::Drop(DropRule {
            regex: Some(Regex::new("healthcheck").unwrap()),
            reason: "drop_stage".into(),
            ..Default::default()
        })),
        Stage::plain(Op::Regex { re: Regex::new(r"^(?P<ts>\d+) ").unwrap(), names: vec!["ts".into()], source: None }),
        Stage::plain(Op::Timestamp {
            source: "ts".into(),
            formats: vec![TimeFormat::parse("unix").unwrap()],
            fudge: false,
        }),
    ];
    let s = SourceStages::new(Arc::from("t"), &src, stages, None, Interner::new(), &BTreeMap::new());
    let mut ctx = s.context(Some("/var/log/a.log"));
    let mut chunk = Chunk::default();
    assert_eq!(s.process(&mut ctx, b"12 ERROR boom", 99, &mut chunk), Processed::Kept);
    assert_eq!(s.process(&mut ctx, b"GET /healthcheck", 99, &mut chunk), Processed::Dropped);
    assert_eq!(s.process(&mut ctx, b"bad \xff byte", 99, &mut chunk), Processed::Kept);
    assert_eq!(s.process(&mut ctx, b"INFO a very long line indeed", 99, &mut chunk), Processed::Kept);
    let e = &chunk.entries;
    assert_eq!(e.len(), 3);
    assert_eq!(e[0].ts, 12_000_000_000);
    assert!(!e[0].assigned_ts);
    assert_eq!(chunk.stream(&e[0]).labels_json, r#"{"filename":"/var/log/a.log","job":"app","level":"ERROR"}"#);
    assert_eq!(chunk.line(&e[1]), "bad \u{fffd} byte");
    assert_eq!(e[1].ts, 99);
    assert_eq!(chunk.stream(&e[1]).labels_json, r#"{"filename":"/var/log/a.log","job":"app"}"#);
    assert_eq!(chunk.line(&e[2]), "INFO a very long");
    assert_eq!((ctx.invalid_utf8, ctx.truncated), (1, 1));
    assert_eq!(ctx.dropped, vec![("drop_stage".to_string(), 1)]);
}
