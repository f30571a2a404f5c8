//! Tests of the memory and null stores.

use super::*;
use crate::logql;
use crate::lokipush as push;

fn push_json(b: &Backend, c: &Counters, tenant: &str, json: &str) {
    let body = push::parse(json.as_bytes()).unwrap();
    let v = push::validate(&body).unwrap();
    b.push(tenant, &v, c);
}

#[test]
fn the_store_and_each_answer_are_bounded_in_bytes() {
    let c = Counters::default();
    let b = Backend::new(StoreKind::Memory, 1_000, 25);
    let line = "0123456789";
    for ts in 1..=5 {
        push_json(&b, &c, "t", &format!(r#"{{"streams":[{{"stream":{{"a":"x"}},"values":[["{ts}","{line}"]]}}]}}"#));
    }
    // 50 bytes pushed, 25 kept: the three oldest went.
    assert_eq!(c.snapshot().evicted, 3);
    let sel = logql::parse_log_query(r#"{a="x"}"#).unwrap();
    let p = RangeParams { selector: &sel, start: 0, end: 10, limit: 10, forward: true, max_bytes: usize::MAX };
    let all: Vec<_> = b.query_range(&["t".to_string()], false, p).into_iter().flat_map(|s| s.values).collect();
    assert_eq!(all.iter().map(|v| v.0).collect::<Vec<_>>(), vec![4, 5]);
    // An answer stops before it passes max_bytes, but holds one entry at least.
    let p = RangeParams { selector: &sel, start: 0, end: 10, limit: 10, forward: true, max_bytes: 15 };
    let some: Vec<_> = b.query_range(&["t".to_string()], false, p).into_iter().flat_map(|s| s.values).collect();
    assert_eq!(some.iter().map(|v| v.0).collect::<Vec<_>>(), vec![4]);
    let p = RangeParams { selector: &sel, start: 0, end: 10, limit: 10, forward: false, max_bytes: 1 };
    let one: Vec<_> = b.query_range(&["t".to_string()], false, p).into_iter().flat_map(|s| s.values).collect();
    assert_eq!(one.iter().map(|v| v.0).collect::<Vec<_>>(), vec![5]);
}

#[test]
fn eviction_and_duplicates() {
    let c = Counters::default();
    let b = Backend::new(StoreKind::Memory, 3, u64::MAX);
    push_json(
        &b,
        &c,
        "t",
        r#"{"streams":[{"stream":{"a":"x"},"values":[["1","l1"],["1","l1"],["1","l1b"],["2","l2"],["3","l3"]]}]}"#,
    );
    let s = c.snapshot();
    assert_eq!((s.entries, s.duplicates, s.evicted, s.streams), (4, 1, 1, 1));
    let sel = logql::parse_log_query(r#"{a="x"}"#).unwrap();
    let p = RangeParams { selector: &sel, start: 0, end: 10, limit: 10, forward: true, max_bytes: usize::MAX };
    let r = b.query_range(&["t".to_string()], false, p);
    assert_eq!(r[0].values, vec![(1, "l1b".to_string()), (2, "l2".to_string()), (3, "l3".to_string())]);

    // A stream whose entries are all evicted frees its slot for the next new stream.
    push_json(&b, &c, "t", r#"{"streams":[{"stream":{"a":"y"},"values":[["4","a"],["5","b"],["6","c"]]}]}"#);
    assert_eq!(c.snapshot().streams, 1);
    push_json(&b, &c, "t", r#"{"streams":[{"stream":{"a":"z"},"values":[["7","d"]]}]}"#);
    assert_eq!(c.snapshot().streams, 2);
    let Backend::Memory(m) = &b else { panic!() };
    assert_eq!(m.lock().unwrap().tenants[0].1.streams.len(), 2);
    let sel = logql::parse_log_query(r#"{a=~"x|y|z"}"#).unwrap();
    let p = RangeParams { selector: &sel, start: 0, end: 10, limit: 10, forward: true, max_bytes: usize::MAX };
    let lines: Vec<_> = b.query_range(&["t".to_string()], false, p).into_iter().flat_map(|s| s.values).collect();
    assert_eq!(lines.len(), 3);
}

/// Loki 3.7.6's rule, pinned: an entry sent again is dropped when it equals
/// the stream's last entry or an entry of the current head block (256 KiB of
/// lines), and stored again once that block was cut; another stream, another
/// timestamp or other structured metadata is never a duplicate.
#[test]
fn an_entry_sent_again_is_dropped_only_within_the_head_block_as_loki_does() {
    let c = Counters::default();
    let b = Backend::new(StoreKind::Memory, 1_000_000, u64::MAX);
    let one = r#"{"streams":[{"stream":{"a":"x"},"values":[["10","again"]]}]}"#;
    push_json(&b, &c, "t", one);
    push_json(&b, &c, "t", one);
    assert_eq!((c.snapshot().entries, c.snapshot().duplicates), (1, 1), "the last entry");
    push_json(&b, &c, "t", r#"{"streams":[{"stream":{"a":"x"},"values":[["11","other"]]}]}"#);
    push_json(&b, &c, "t", one);
    assert_eq!((c.snapshot().entries, c.snapshot().duplicates), (2, 2), "in the head block");
    push_json(&b, &c, "t", r#"{"streams":[{"stream":{"a":"y"},"values":[["10","again"]]}]}"#);
    push_json(&b, &c, "t", r#"{"streams":[{"stream":{"a":"x"},"values":[["12","again"]]}]}"#);
    push_json(&b, &c, "t", r#"{"streams":[{"stream":{"a":"x"},"values":[["10","again",{"m":"1"}]]}]}"#);
    assert_eq!((c.snapshot().entries, c.snapshot().duplicates), (5, 2), "another stream, time or metadata");

    // 256 KiB more of the stream's lines cut the block: the same entry is stored again.
    let filler = "f".repeat(1024);
    for i in 0..(HEAD_BLOCK_BYTES / 1024) {
        let json = format!(r#"{{"streams":[{{"stream":{{"a":"x"}},"values":[["{}","{filler}"]]}}]}}"#, 100 + i);
        push_json(&b, &c, "t", &json);
    }
    let before = c.snapshot();
    push_json(&b, &c, "t", one);
    let after = c.snapshot();
    assert_eq!((after.entries - before.entries, after.duplicates - before.duplicates), (1, 0), "after the cut");
    push_json(&b, &c, "t", one);
    assert_eq!(c.snapshot().duplicates - after.duplicates, 1, "and once more is the last entry again");
    let sel = logql::parse_log_query(r#"{a="x"} |= "again""#).unwrap();
    let p = RangeParams { selector: &sel, start: 0, end: 20, limit: 10, forward: true, max_bytes: usize::MAX };
    let r = b.query_range(&["t".to_string()], false, p);
    let at_10: Vec<_> = r.iter().flat_map(|s| &s.values).filter(|v| v.0 == 10).collect();
    assert_eq!(at_10.len(), 3, "the plain entry twice and the one with metadata: {r:?}");
}
