//! Tests of the printer of `query` and `tail`.

use std::sync::Arc;

use super::*;
use crate::client::query::Stream;

#[test]
fn formats() {
    let stream = Arc::new(Stream::new([("job".to_string(), "a".to_string())].into_iter().collect()));
    let e = Entry { ts: 1_700_000_000_000_000_001, stream, line: "hello \"x\"".into() };
    let mut out = Vec::new();
    for (format, labels) in [(OutputFormat::Default, true), (OutputFormat::Default, false)] {
        let mut p =
            Printer { out: &mut out, format, labels, color: false, escape: false, local: false, exclude: Vec::new() };
        p.entry(&e).unwrap();
    }
    for format in [OutputFormat::Raw, OutputFormat::Jsonl] {
        let mut p = Printer {
            out: &mut out,
            format,
            labels: true,
            color: false,
            escape: false,
            local: false,
            exclude: Vec::new(),
        };
        p.entry(&e).unwrap();
    }
    let text = String::from_utf8(out).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], r#"2023-11-14T22:13:20.000000001Z {job="a"} hello "x""#);
    assert_eq!(lines[1], r#"2023-11-14T22:13:20.000000001Z hello "x""#);
    assert_eq!(lines[2], r#"hello "x""#);
    assert_eq!(time_in(1_700_000_000_500_000_000, false, true), "2023-11-14T22:13:20.5Z");
    assert_eq!(time_in(1_700_000_000_000_000_000, false, true), "2023-11-14T22:13:20Z");
    assert_eq!(
        lines[3],
        r#"{"labels":{"job":"a"},"line":"hello \"x\"","timestamp":"2023-11-14T22:13:20.000000001Z","ts":"1700000000000000001"}"#
    );
}

#[test]
fn on_a_terminal_control_characters_of_lines_and_labels_are_escaped_and_json_stays_json() {
    let hostile = "a\x1b]0;pwned\x07b\x1b[2J\u{9b}c";
    let labels: Labels = [(format!("n{hostile}"), hostile.to_string())].into_iter().collect();
    let stream = Arc::new(Stream::new(labels));
    let e = Entry { ts: 1, stream, line: hostile.into() };
    for format in [OutputFormat::Default, OutputFormat::Raw, OutputFormat::Jsonl] {
        for escape in [true, false] {
            let mut out = Vec::new();
            let mut p =
                Printer { out: &mut out, format, labels: true, color: false, escape, local: false, exclude: vec![] };
            p.entry(&e).unwrap();
            p.name(hostile).unwrap();
            p.sample(&Sample { labels: e.stream.labels.clone(), ts: 1, value: hostile.into() }).unwrap();
            let text = String::from_utf8(out).unwrap();
            let (esc_bel, c1) = (text.contains('\x1b') || text.contains('\x07'), text.contains('\u{9b}'));
            if escape {
                assert!(!esc_bel && !c1, "{format:?}: {text:?}");
            } else if format == OutputFormat::Jsonl {
                assert!(!esc_bel && c1, "JSON escapes C0 itself, not C1: {text:?}");
            } else {
                assert!(esc_bel && c1, "into a pipe as stored: {format:?}: {text:?}");
            }
            if format == OutputFormat::Jsonl {
                for l in text.lines() {
                    let v: serde_json::Value = serde_json::from_str(l).expect("still JSON");
                    assert!(l.contains("pwned"), "{v}");
                }
                if escape {
                    let v: serde_json::Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
                    assert_eq!(v["line"], hostile, "the same value");
                }
            }
            if format == OutputFormat::Raw && !escape {
                assert!(text.starts_with(&format!("{hostile}\n")), "raw into a pipe is byte-exact");
            }
        }
    }
}
