//! A source whose stages extract nothing allocates nothing per line: heap
//! allocations counted on this thread while lines go through such stages.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::collections::BTreeMap;
use std::sync::Arc;

use regex::Regex;

use super::SourceStages;
use crate::config::SourceConfig;
use crate::pipeline::{DropRule, Op, Stage};
use crate::queue::{Chunk, Interner};

thread_local! {
    static ALLOCS: Cell<u64> = const { Cell::new(0) };
}

/// The system allocator, counting allocations per thread.
struct Counting;

// SAFETY: every call is passed on to the system allocator unchanged.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCS.with(|n| n.set(n.get() + 1));
        // SAFETY: the caller's contract is the system allocator's.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `alloc` above, that is from `System`.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static COUNTING: Counting = Counting;

fn allocations() -> u64 {
    ALLOCS.with(Cell::get)
}

#[test]
fn stages_that_extract_nothing_allocate_nothing_per_line() {
    let src = SourceConfig { host_label: false, ..Default::default() };
    let selector = crate::logql::parse_log_query(r#"{job="none"} |= "x""#).unwrap();
    let stages = vec![
        Stage::plain(Op::Drop(DropRule {
            regex: Some(Regex::new("healthcheck").unwrap()),
            reason: "drop_stage".into(),
            ..Default::default()
        })),
        Stage::plain(Op::Match { selector, drop: true, skip: 0, reason: "match_stage".into() }),
        Stage::plain(Op::Decolorize(Regex::new(r"\x1b\[[0-9;]*m").unwrap())),
    ];
    let s = SourceStages::new(Arc::from("t"), &src, stages, None, Interner::new(), &BTreeMap::new());
    let mut ctx = s.context(Some("/var/log/a.log"));
    let mut chunk = Chunk::default();
    chunk.buf.reserve(1 << 20);
    chunk.entries.reserve(10_000);
    let line = "2026-01-02T03:04:05Z GET /index.html 200 512 0.003";
    s.process_valid(&mut ctx, line, 1, &mut chunk);
    let before = allocations();
    for _ in 0..1000 {
        s.process_valid(&mut ctx, line, 1, &mut chunk);
    }
    assert_eq!(allocations() - before, 0, "allocations for 1000 lines");
    assert_eq!(chunk.entries.len(), 1001);
}

/// The `json` row of `benches/daemon.rs`: json, a label, the time, the message as the line.
#[test]
fn a_json_labels_timestamp_output_pipeline_allocates_a_few_times_per_line() {
    use crate::pipeline::{JsonField, TimeFormat};
    let src = SourceConfig { host_label: false, ..Default::default() };
    let field = |n: &str| (n.to_string(), JsonField::parse(n).unwrap());
    let stages = vec![
        Stage::plain(Op::Json {
            fields: vec![field("level"), field("ts"), field("msg")],
            source: None,
            drop_malformed: false,
        }),
        Stage { op: Op::Labels, labels: vec![("level".into(), "level".into())], metadata: vec![] },
        Stage::plain(Op::Timestamp {
            source: "ts".into(),
            formats: vec![TimeFormat::parse("rfc3339").unwrap()],
            fudge: false,
        }),
        Stage::plain(Op::Output("msg".into())),
    ];
    let s = SourceStages::new(Arc::from("t"), &src, stages, None, Interner::new(), &BTreeMap::new());
    let mut ctx = s.context(Some("/var/log/a.log"));
    let mut chunk = Chunk::default();
    chunk.buf.reserve(1 << 20);
    chunk.entries.reserve(10_000);
    let line = |i: usize| {
        let level = ["info", "warn", "error"][i % 3];
        format!(r#"{{"level":"{level}","ts":"2026-01-02T03:04:05.{i:09}Z","msg":"seq={i} request served"}}"#)
    };
    let lines: Vec<String> = (0..1003).map(line).collect();
    for l in &lines[..3] {
        s.process_valid(&mut ctx, l, 1, &mut chunk);
    }
    let before = allocations();
    for l in &lines[3..] {
        s.process_valid(&mut ctx, l, 1, &mut chunk);
    }
    let per_line = (allocations() - before) as f64 / 1000.0;
    println!("json + labels + timestamp + output: {per_line} allocations per line");
    assert!(per_line <= 8.0, "{per_line} allocations per line (17 before #24's fourth pass)");
    assert_eq!(chunk.line(&chunk.entries[1002]), "seq=1002 request served");
}
