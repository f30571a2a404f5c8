//! Parser tests.

use super::*;

fn labels<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl FnMut(&str) -> Option<&'a str> + 'a {
    move |n| pairs.iter().find(|(k, _)| *k == n).map(|(_, v)| *v)
}

#[test]
fn selector_with_every_operator() {
    let s = parse_log_query(r#"{a="x", b!="y", c=~"re.*", d!~"no|nope"}"#).unwrap();
    assert_eq!(s.matchers.len(), 4);
    assert_eq!(s.matchers[1].op, MatchOp::Neq);
    assert!(s.matches_labels(labels(&[("a", "x"), ("c", "regex"), ("d", "yes")])));
    assert!(!s.matches_labels(labels(&[("a", "x"), ("b", "y"), ("c", "re")])));
    // Regexes are anchored: "xre" does not match "re.*".
    assert!(!s.matches_labels(labels(&[("a", "x"), ("c", "xre")])));
    assert!(!s.matches_labels(labels(&[("a", "x"), ("c", "re"), ("d", "nope")])));
}

#[test]
fn line_filters_chain() {
    let s = parse_log_query(r#"{job="a"} |= "err" != `debug` |~ "code=\\d+" !~ "(?i)IGNORED""#).unwrap();
    assert_eq!(s.filters.len(), 4);
    assert!(s.matches_line("err code=42"));
    assert!(!s.matches_line("err code=x"));
    assert!(!s.matches_line("err debug code=1"));
    assert!(!s.matches_line("err code=1 ignored"));
    // Line regexes are not anchored.
    let s = parse_log_query(r#"{job="a"} |~ "b.d""#).unwrap();
    assert!(s.matches_line("abcde"));
}

#[test]
fn strings_and_escapes() {
    let s = parse_log_query(r#"{a="q\"uo\tte\u00e9\x41\101"} |= '\n'"#).unwrap();
    assert_eq!(s.matchers[0].value, "q\"uo\tteéAA");
    assert!(matches!(&s.filters[0], LineFilter::Contains(x) if x == "\n"));
    let s = parse_log_query(r#"{a=`raw\d`}"#).unwrap();
    assert_eq!(s.matchers[0].value, r"raw\d");
    assert!(parse(r#"{a="open}"#).is_err());
    assert!(parse(r#"{a="\q"}"#).is_err());
}

#[test]
fn empty_selectors_are_refused() {
    for q in ["{}", r#"{a=~".*"}"#, r#"{a!="x"}"#, r#"count_over_time({}[5m])"#] {
        let e = parse(q).unwrap_err();
        assert!(matches!(e, ParseError::EmptySelector { .. }), "{q}: {e}");
        assert!(e.to_string().contains("at least one label matcher"), "{e}");
    }
    assert!(parse(r#"{a=~".+", b!="x"}"#).is_ok());
}

#[test]
fn syntax_errors_say_where() {
    let e = parse(r#"{a="x"} | json"#).unwrap_err().to_string();
    assert!(e.contains("line filters"), "{e}");
    let e = parse(r#"{a~"x"}"#).unwrap_err().to_string();
    assert!(e.contains("column 3"), "{e}");
    assert!(parse(r#"{a="x"} extra"#).is_err());
    assert!(parse(r#"{a="(" }"#).is_ok());
    assert!(parse(r#"{a=~"("}"#).unwrap_err().to_string().contains("invalid regex"));
    assert!(parse("").is_err());
}

#[test]
fn metric_queries() {
    let Query::Metric(m) = parse(r#"count_over_time({job="a"} |= "x" [5m])"#).unwrap() else { panic!() };
    assert_eq!(m.func, RangeFn::CountOverTime);
    assert_eq!(m.range_ns, 300_000_000_000);
    assert_eq!(m.selector.filters.len(), 1);
    assert_eq!(m.sum, None);

    let Query::Metric(m) = parse(r#"sum by (level, host) (rate({job="a"}[1m]))"#).unwrap() else { panic!() };
    assert_eq!(m.func, RangeFn::Rate);
    assert_eq!(m.sum, Some(Grouping::By(vec!["level".into(), "host".into()])));

    let Query::Metric(m) = parse(r#"sum(bytes_over_time({job="a"}[1h30m])) by (level)"#).unwrap() else { panic!() };
    assert_eq!(m.func, RangeFn::BytesOverTime);
    assert_eq!(m.range_ns, 5_400_000_000_000);
    assert_eq!(m.sum, Some(Grouping::By(vec!["level".into()])));

    let Query::Metric(m) = parse(r#"sum(bytes_rate({job="a"}[10s]))"#).unwrap() else { panic!() };
    assert_eq!(m.sum, Some(Grouping::All));
    let Query::Metric(m) = parse(r#"sum without (host) (rate({job="a"}[10s]))"#).unwrap() else { panic!() };
    assert_eq!(m.sum, Some(Grouping::Without(vec!["host".into()])));

    assert!(parse(r#"avg_over_time({job="a"}[5m])"#).unwrap_err().to_string().contains("unsupported function"));
    assert!(parse(r#"rate({job="a"}[5x])"#).unwrap_err().to_string().contains("invalid duration"));
    assert!(parse(r#"rate({job="a"})"#).is_err());
    assert!(parse(r#"sum by (a) (rate({job="a"}[1m])) by (b)"#).is_err());
}

#[test]
fn durations() {
    assert_eq!(parse_duration_ns("250ms").unwrap(), 250_000_000);
    assert_eq!(parse_duration_ns("1d").unwrap(), 86_400_000_000_000);
    assert!(parse_duration_ns("0s").is_err());
    assert!(parse_duration_ns("m").is_err());
    assert!(parse_duration_ns("5").is_err());
}

#[test]
fn parse_log_query_refuses_metrics() {
    assert!(parse_log_query(r#"rate({a="b"}[1m])"#).is_err());
}

#[test]
fn a_match_selector_reads_go_comments_unicode_names_and_the_given_regex_dialect() {
    let braces = |re: &str| Regex::new(&re.replace("a{", r"a\{")).map_err(|e| e.to_string());
    let s = parse_match_selector("// the errors\n{ névé=~\"a{\" } /* and */ |~ \"a{\"", braces).unwrap();
    assert!(s.matches_labels(labels(&[("névé", "a{")])));
    assert!(s.matches_line("xa{"));
    assert!(parse_match_selector(r#"{a=~"a{"}"#, |re| Regex::new(re).map_err(|e| e.to_string())).is_err());
    // A query's selector reads no comment.
    assert!(parse_log_query(r#"{a="x"} /* no */"#).is_err());
}
