//! Prometheus' own test vectors (model/relabel/relabel_test.go), as data.

use super::*;

fn labels(pairs: &[(&str, &str)]) -> Labels {
    pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

fn rule(
    source: &[&str],
    regex: Option<&str>,
    target: Option<&str>,
    replacement: Option<&str>,
    action: &str,
) -> RelabelConfig {
    RelabelConfig {
        source_labels: source.iter().map(|s| s.to_string()).collect(),
        regex: regex.map(String::from),
        target_label: target.map(String::from),
        replacement: replacement.map(String::from),
        action: Some(action.into()),
        ..Default::default()
    }
}

/// Runs `rules` over `input`: the resulting labels, or None when dropped.
fn run(input: &[(&str, &str)], rules: Vec<RelabelConfig>) -> Option<Labels> {
    let rules = Rules::compile(&rules).unwrap();
    let mut l = labels(input);
    rules.apply(&mut l).then_some(l)
}

const ABC: &[(&str, &str)] = &[("a", "foo"), ("b", "bar"), ("c", "baz")];

#[test]
fn replace_expands_references_in_the_replacement() {
    let out = run(ABC, vec![rule(&["a"], Some("f(.*)"), Some("d"), Some("ch${1}-ch${1}"), "replace")]);
    assert_eq!(out, Some(labels(&[("a", "foo"), ("b", "bar"), ("c", "baz"), ("d", "choo-choo")])));
}

#[test]
fn replace_joins_source_labels_with_the_separator_and_rules_run_in_order() {
    let out = run(
        ABC,
        vec![
            rule(&["a", "b"], Some("f(.*);(.*)r"), Some("a"), Some("b${1}${2}m"), "replace"),
            rule(&["c", "a"], Some("(b).*b(.*)ba(.*)"), Some("d"), Some("$1$2$2$3"), "replace"),
        ],
    );
    assert_eq!(out, Some(labels(&[("a", "boobam"), ("b", "bar"), ("c", "baz"), ("d", "boooom")])));
}

#[test]
fn drop_stops_at_the_first_dropping_rule() {
    let rules = vec![
        rule(&["a"], Some(".*o.*"), None, None, "drop"),
        rule(&["a"], Some("f(.*)"), Some("d"), Some("ch$1-ch$1"), "replace"),
    ];
    assert_eq!(run(&[("a", "foo")], rules), None);
    assert_eq!(run(&[("a", "foo"), ("b", "bar")], vec![rule(&["a"], Some(".*o.*"), None, None, "drop")]), None);
}

#[test]
fn the_regex_is_anchored_at_both_ends() {
    let out = run(&[("a", "abc")], vec![rule(&["a"], Some(".*(b).*"), Some("d"), Some("$1"), "replace")]);
    assert_eq!(out, Some(labels(&[("a", "abc"), ("d", "b")])));
    assert_eq!(
        run(&[("a", "foo")], vec![rule(&["a"], Some("no-match"), None, None, "drop")]),
        Some(labels(&[("a", "foo")]))
    );
    // `f|o` is `^(?:f|o)$`: it matches neither "foo" in part.
    assert_eq!(
        run(&[("a", "foo")], vec![rule(&["a"], Some("f|o"), None, None, "drop")]),
        Some(labels(&[("a", "foo")]))
    );
    assert_eq!(run(&[("a", "foo")], vec![rule(&["a"], Some("no-match"), None, None, "keep")]), None);
    assert_eq!(
        run(&[("a", "foo")], vec![rule(&["a"], Some("f.*"), None, None, "keep")]),
        Some(labels(&[("a", "foo")]))
    );
}

#[test]
fn no_replacement_without_a_match() {
    let out = run(&[("a", "boo")], vec![rule(&["a"], Some("f"), Some("b"), Some("bar"), "replace")]);
    assert_eq!(out, Some(labels(&[("a", "boo")])));
}

#[test]
fn hashmod_takes_the_low_64_bits_of_the_md5() {
    let mut r = rule(&["c"], None, Some("d"), None, "hashmod");
    r.modulus = Some(1000);
    assert_eq!(run(ABC, vec![r]), Some(labels(&[("a", "foo"), ("b", "bar"), ("c", "baz"), ("d", "976")])));
    let mut r = rule(&["a"], None, Some("b"), None, "hashmod");
    r.modulus = Some(1000);
    assert_eq!(run(&[("a", "foo\nbar")], vec![r]), Some(labels(&[("a", "foo\nbar"), ("b", "734")])));
}

#[test]
fn labelmap_copies_matching_names_under_their_replacement() {
    let out = run(
        &[("a", "foo"), ("b1", "bar"), ("b2", "baz")],
        vec![rule(&[], Some("(b.*)"), None, Some("bar_${1}"), "labelmap")],
    );
    assert_eq!(out, Some(labels(&[("a", "foo"), ("b1", "bar"), ("b2", "baz"), ("bar_b1", "bar"), ("bar_b2", "baz")])));
    let meta = &[("a", "foo"), ("__meta_my_bar", "aaa"), ("__meta_my_baz", "bbb"), ("__meta_other", "ccc")];
    let mut out = run(meta, vec![rule(&[], Some("__meta_(my.*)"), None, Some("${1}"), "labelmap")]).unwrap();
    assert_eq!(out.get("my_bar").map(String::as_str), Some("aaa"));
    assert_eq!(out.get("my_baz").map(String::as_str), Some("bbb"));
    assert_eq!(out.len(), 6);
    strip_internal(&mut out);
    assert_eq!(out, labels(&[("a", "foo"), ("my_bar", "aaa"), ("my_baz", "bbb")]));
}

#[test]
fn a_target_label_from_captures_must_be_a_valid_name() {
    let input = &[("a", "some-name-value")];
    let out = run(input, vec![rule(&["a"], Some("some-([^-]+)-([^,]+)"), Some("${1}"), Some("${2}"), "replace")]);
    assert_eq!(out, Some(labels(&[("a", "some-name-value"), ("name", "value")])));
    // An empty replacement sets nothing.
    let out = run(input, vec![rule(&["a"], Some("some-([^-]+)-([^,]+)"), Some("${1}"), Some("${3}"), "replace")]);
    assert_eq!(out, Some(labels(input)));
    let input = &[("a", "some-name-0")];
    let rules = vec![
        rule(&["a"], Some("some-([^-]+)-([^,]+)"), Some("${3}"), Some("${1}"), "replace"),
        rule(&["a"], Some("some-([^-]+)(-[^,]+)"), Some("${3}"), Some("${1}"), "replace"),
    ];
    assert_eq!(run(input, rules), Some(labels(input)));
}

#[test]
fn a_real_life_chain_of_replaces() {
    let input = &[("__meta_sd_tags", "path:/secret,job:some-job,label:foo=bar")];
    let rules = vec![
        rule(&["__meta_sd_tags"], Some("(?:.+,|^)path:(/[^,]+).*"), Some("__metrics_path__"), Some("${1}"), "replace"),
        rule(&["__meta_sd_tags"], Some("(?:.+,|^)job:([^,]+).*"), Some("job"), Some("${1}"), "replace"),
        rule(&["__meta_sd_tags"], Some("(?:.+,|^)label:([^=]+)=([^,]+).*"), Some("${1}"), Some("${2}"), "replace"),
    ];
    let out = run(input, rules).unwrap();
    assert_eq!(
        out,
        labels(&[
            ("__meta_sd_tags", "path:/secret,job:some-job,label:foo=bar"),
            ("__metrics_path__", "/secret"),
            ("job", "some-job"),
            ("foo", "bar")
        ])
    );
}

#[test]
fn labeldrop_then_replace_then_keep_sees_the_changed_labels() {
    let input = &[
        ("__meta_kubernetes_pod_container_port_name", "foo"),
        ("__meta_kubernetes_pod_annotation_XXX_metrics_port", "9091"),
    ];
    let rules = vec![
        rule(&[], Some("^__meta_kubernetes_pod_container_port_name$"), None, None, "labeldrop"),
        rule(
            &["__meta_kubernetes_pod_annotation_XXX_metrics_port"],
            Some("(.+)"),
            Some("__meta_kubernetes_pod_container_port_name"),
            Some("metrics"),
            "replace",
        ),
        rule(&["__meta_kubernetes_pod_container_port_name"], Some("^metrics$"), None, None, "keep"),
    ];
    let out = run(input, rules).unwrap();
    assert_eq!(out.get("__meta_kubernetes_pod_container_port_name").map(String::as_str), Some("metrics"));
}

#[test]
fn labelkeep_and_labeldrop_go_by_name() {
    let input = &[("a", "foo"), ("b1", "bar"), ("b2", "baz")];
    assert_eq!(
        run(input, vec![rule(&[], Some("(b.*)"), None, None, "labelkeep")]),
        Some(labels(&[("b1", "bar"), ("b2", "baz")]))
    );
    assert_eq!(run(input, vec![rule(&[], Some("(b.*)"), None, None, "labeldrop")]), Some(labels(&[("a", "foo")])));
}

#[test]
fn lowercase_and_uppercase() {
    let rules = vec![
        rule(&["foo"], None, Some("foo_uppercase"), None, "uppercase"),
        rule(&["foo"], None, Some("foo_lowercase"), None, "lowercase"),
    ];
    let out = run(&[("foo", "bAr123Foo")], rules);
    assert_eq!(
        out,
        Some(labels(&[("foo", "bAr123Foo"), ("foo_lowercase", "bar123foo"), ("foo_uppercase", "BAR123FOO")]))
    );
}

#[test]
fn keepequal_and_dropequal_compare_with_the_target() {
    let input = &[("__tmp_port", "1234"), ("__port1", "1234"), ("__port2", "5678")];
    let eq = |action: &str, target: &str| run(input, vec![rule(&["__tmp_port"], None, Some(target), None, action)]);
    assert_eq!(eq("keepequal", "__port1"), Some(labels(input)));
    assert_eq!(eq("dropequal", "__port1"), None);
    assert_eq!(eq("dropequal", "__port2"), Some(labels(input)));
    assert_eq!(eq("keepequal", "__port2"), None);
}

#[test]
fn a_missing_source_label_is_an_empty_value() {
    let out = run(&[("a", "x")], vec![rule(&["a", "missing"], Some("x;"), Some("b"), Some("joined"), "replace")]);
    assert_eq!(out, Some(labels(&[("a", "x"), ("b", "joined")])));
    // Replacing with an empty value removes the target.
    let out = run(&[("a", "x"), ("b", "y")], vec![rule(&["missing"], None, Some("b"), None, "replace")]);
    assert_eq!(out, Some(labels(&[("a", "x")])));
}

#[test]
fn bad_rules_name_the_field() {
    let bad = |c: RelabelConfig| Rule::compile(&c).unwrap_err().field;
    assert_eq!(bad(rule(&["a"], None, None, None, "replace")), "target_label");
    assert_eq!(bad(rule(&["a"], None, None, None, "lowercase")), "target_label");
    assert_eq!(bad(rule(&["a"], None, Some("${3}"), None, "lowercase")), "target_label");
    assert_eq!(bad(rule(&["a"], Some("x"), Some("0${3}"), Some("${1}"), "replace")), "target_label");
    assert_eq!(bad(rule(&["a"], Some("x"), Some("-${3}"), Some("${1}"), "replace")), "target_label");
    assert!(Rule::compile(&rule(&["a"], Some("some-([^-]+)-([^,]+)"), Some("${3}"), Some("${1}"), "replace")).is_ok());
    assert_eq!(bad(rule(&["a"], Some("("), Some("b"), None, "replace")), "regex");
    assert_eq!(bad(rule(&["a"], None, None, None, "explode")), "action");
    assert_eq!(bad(rule(&["a"], None, Some("h"), None, "hashmod")), "modulus");
    assert_eq!(bad(rule(&["a"], Some("x"), None, None, "labeldrop")), "action");
    assert_eq!(bad(rule(&["a"], None, Some("b"), Some("x"), "uppercase")), "replacement");
    assert_eq!(bad(rule(&["a-b"], None, Some("b"), None, "replace")), "source_labels");
}

#[test]
fn template_names_follow_prometheus() {
    for (s, ok) in [
        ("-label", false),
        ("label", true),
        ("label${1}", true),
        ("${1}label", true),
        ("${1}", true),
        ("${", false),
        ("$", false),
        ("${}", false),
        ("foo${", false),
        ("$1", true),
        ("asd$2asd", true),
        ("-foo${1}bar-", false),
        ("_${1}_", true),
        ("foo${bar}foo", true),
    ] {
        assert_eq!(TEMPLATE_NAME.is_match(s), ok, "{s}");
    }
}
