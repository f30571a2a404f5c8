//! Sprig's functions against the examples of its documentation
//! (masterminds.github.io/sprig), rendered the way a `template` stage does.

use std::borrow::Cow;

use crate::pipeline::line::Extracted;
use crate::pipeline::GoTemplate;

fn render(t: &str) -> String {
    let mut e = Extracted::default();
    e.set(Cow::Borrowed("v"), "Hello World".to_string());
    e.set(Cow::Borrowed("n"), "12".to_string());
    e.set(Cow::Borrowed("empty"), String::new());
    e.set(Cow::Borrowed("js"), r#"{"a":{"b":5},"c":"x"}"#.to_string());
    let t = GoTemplate::parse(t).unwrap_or_else(|e| panic!("{t}: {e}"));
    t.render(&e, "v", "the line").unwrap_or_else(|e| format!("ERROR {e}"))
}

fn check(cases: &[(&str, &str)]) {
    for (t, want) in cases {
        assert_eq!(render(t), *want, "{t}");
    }
}

#[test]
fn strings() {
    check(&[
        (r#"{{ trim "   hello    " }}"#, "hello"),
        (r#"{{ trimAll "$" "$5.00" }}"#, "5.00"),
        (r#"{{ trimSuffix "-" "hello-" }}"#, "hello"),
        (r#"{{ trimPrefix "-" "-hello" }}"#, "hello"),
        (r#"{{ upper "hello" }}|{{ lower "HELLO" }}"#, "HELLO|hello"),
        (r#"{{ title "hello world" }}|{{ untitle "Hello World" }}"#, "Hello World|hello world"),
        (r#"{{ repeat 3 "hello" }}"#, "hellohellohello"),
        (r#"{{ substr 0 5 "hello world" }}"#, "hello"),
        (r#"{{ nospace "hello w o r l d" }}"#, "helloworld"),
        (r#"{{ trunc 5 "hello world" }}|{{ trunc -5 "hello world" }}"#, "hello|world"),
        (r#"{{ abbrev 5 "hello world" }}"#, "he..."),
        (r#"{{ abbrevboth 5 10 "1234 5678 9123" }}"#, "...5678..."),
        (r#"{{ initials "First Try" }}"#, "FT"),
        (r#"{{ swapcase "This Is A.Test" }}"#, "tHIS iS a.tEST"),
        (
            r#"{{ contains "cat" "catch" }}|{{ hasPrefix "cat" "catch" }}|{{ hasSuffix "cat" "catch" }}"#,
            "true|true|false",
        ),
        (r#"{{ .v | quote }}|{{ squote "x" }}"#, r#""Hello World"|'x'"#),
        (r#"{{ cat "hello" "beautiful" "world" }}"#, "hello beautiful world"),
        (r#"{{ indent 4 "a\nb" }}|{{ nindent 2 "x" }}"#, "    a\n    b|\n  x"),
        (r#"{{ "I Am Henry VIII" | replace " " "-" }}"#, "I-Am-Henry-VIII"),
        (r#"{{ len .v | plural "one anchovy" "many anchovies" }}"#, "many anchovies"),
        (
            r#"{{ snakecase "FirstName" }}|{{ camelcase "http_server" }}|{{ kebabcase "FirstName" }}"#,
            "first_name|HttpServer|first-name",
        ),
        (r#"{{ regexMatch "^[a-z]+@example\\.com$" "test@example.com" }}"#, "true"),
        (r#"{{ regexFindAll "[2,4,6,8]" "123456789" -1 | join "," }}"#, "2,4,6,8"),
        (r#"{{ regexFind "[a-zA-Z][1-9]" "abcd1234" }}"#, "d1"),
        (r#"{{ regexReplaceAll "a(x*)b" "-ab-axxb-" "${1}W" }}"#, "-W-xxW-"),
        (r#"{{ mustRegexReplaceAllLiteral "a(x*)b" "-ab-axxb-" "${1}" }}"#, "-${1}-${1}-"),
        (r#"{{ regexSplit "z+" "pizza" -1 | join "," }}"#, "pi,a"),
        (r#"{{ regexQuoteMeta "1.2.3" }}"#, r"1\.2\.3"),
        (
            r#"{{ base "foo/bar/baz" }}|{{ dir "foo/bar/baz" }}|{{ clean "foo/bar/../baz" }}|{{ ext "foo.bar" }}|{{ isAbs "/a" }}"#,
            "baz|foo/bar|foo/baz|.bar|true",
        ),
        (r#"{{ toString 5 }}|{{ hello }}"#, "5|Hello!"),
        (r#"{{ wrapWith 5 "\t" "Hello World" }}|{{ wrap 5 "Hello World" }}"#, "Hello\tWorld|Hello\nWorld"),
        (
            r#"{{ shuffle "aab" | len }}|{{ uuidv4 | regexMatch "^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$" }}"#,
            "3|true",
        ),
        (
            r#"{{ getHostByName "localhost" | regexMatch "^(127\\.0\\.0\\.1|::1)$" }}|{{ deepCopy (list 1) | first }}"#,
            "true|1",
        ),
    ]);
}

#[test]
fn defaults_json_and_encodings() {
    check(&[
        (r#"{{ .empty | default "foo" }}|{{ .v | default "foo" }}|{{ .missing | default "m" }}"#, "foo|Hello World|m"),
        (r#"{{ empty .empty }}|{{ empty .v }}"#, "true|false"),
        (r#"{{ coalesce .empty .missing "x" }}|{{ all .v .empty }}|{{ any .empty .v }}"#, "x|false|true"),
        (r#"{{ ternary "yes" "no" (eq .n "12") }}|{{ eq .n "1" | ternary "yes" "no" }}"#, "yes|no"),
        (
            r#"{{ b64enc "Hello" }}|{{ b64dec "SGVsbG8=" }}|{{ b32enc "Hello" }}|{{ b32dec "JBSWY3DP" }}"#,
            "SGVsbG8=|Hello|JBSWY3DP|Hello",
        ),
        (r#"{{ sha1sum "Hello world!" }}"#, "d3486ae9136e7856bc42212385ea797094475802"),
        (r#"{{ sha256sum "Hello world!" }}"#, "c0535e4be2b79ffd93291305436bf889314e4a3faec05ecffcbb7df31ad9e51a"),
        (r#"{{ adler32sum "Hello world!" }}"#, "487130206"),
        (
            r#"{{ (fromJson .js).c }}|{{ (fromJson .js).a.b }}|{{ fromJson .js | toJson }}"#,
            r#"x|5|{"a":{"b":5},"c":"x"}"#,
        ),
        (
            r#"{{ dict "b" "<1>" "a" 2 | toJson }}|{{ dict "b" "<1>" | toRawJson }}"#,
            r#"{"a":2,"b":"\u003c1\u003e"}|{"b":"<1>"}"#,
        ),
        (r#"{{ list 1 "a" | toPrettyJson }}"#, "[\n  1,\n  \"a\"\n]"),
        (
            r#"{{ kindOf .v }}|{{ typeOf 1.5 }}|{{ kindIs "slice" (list 1) }}|{{ typeIs "string" .n }}"#,
            "string|float64|true|true",
        ),
        (r#"{{ deepEqual (list 1 2) (list 1 2) }}"#, "true"),
        (
            r#"{{ $v := semver "1.2.3-beta.1+c0ff33" }}{{ $v.Major }}.{{ $v.Minor }}.{{ $v.Patch }}|{{ $v.Prerelease }}|{{ $v.Metadata }}"#,
            "1.2.3|beta.1|c0ff33",
        ),
        (
            r#"{{ semverCompare "^1.2.0" "1.2.3" }}|{{ semverCompare "~1.2.0" "1.3.0" }}|{{ semverCompare ">= 1.2, < 3.0.0" "2.5" }}"#,
            "true|false|true",
        ),
        (
            r#"{{ semverCompare "1.2.3" "v1.2.3" }}|{{ semverCompare "1.2.x" "1.2.9" }}|{{ semverCompare "<1 || >=2" "1.5.0" }}|{{ semverCompare "1.1 - 1.3" "1.2.0" }}|{{ semverCompare "!=1.2.3" "1.2.3" }}"#,
            "true|true|false|true|false",
        ),
        (r#"{{ len (randAlphaNum 8) }}|{{ regexMatch "^[0-9]{3}$" (randNumeric 3) }}"#, "8|true"),
    ]);
    assert!(render(r#"{{ fail "no" }}"#).starts_with("ERROR"));
}

#[test]
fn math_and_conversions() {
    check(&[
        (r#"{{ add 1 2 3 }}|{{ add1 .n }}|{{ sub 3 2 }}|{{ div 7 2 }}|{{ mod 7 2 }}|{{ mul 2 3 4 }}"#, "6|13|1|3|1|24"),
        (r#"{{ max 1 2 3 }}|{{ min 1 2 3 }}|{{ biggest 5 .n }}"#, "3|1|12"),
        (
            r#"{{ addf 1.1 2.2 }}|{{ subf 1.5 0.3 }}|{{ mulf 1.5 2 }}|{{ divf 10 4 }}|{{ add1f 1.5 }}"#,
            "3.3|1.2|3|2.5|2.5",
        ),
        (r#"{{ maxf 1 2.5 3 }}|{{ minf 1.5 2 }}|{{ floor 123.9999 }}|{{ ceil 123.001 }}"#, "3|1.5|123|124"),
        (r#"{{ round 123.555555 3 }}|{{ round 123.5555 3 0.6 }}"#, "123.556|123.555"),
        (r#"{{ atoi "42" }}|{{ int "0x1f" }}|{{ int64 "5.0" }}|{{ float64 "1.5" }}|{{ int "x" }}"#, "42|31|5|1.5|0"),
        (
            r#"{{ seq 5 }}|{{ seq -3 }}|{{ seq 2 5 }}|{{ seq 0 2 10 }}|{{ seq 5 2 }}"#,
            "1 2 3 4 5|1 0 -1 -2 -3|2 3 4 5|0 2 4 6 8 10|5 4 3 2",
        ),
        (r#"{{ until 5 | join "," }}|{{ untilStep 3 6 2 | join "," }}"#, "0,1,2,3,4|3,5"),
        (r#"{{ toDecimal "0777" }}|{{ list 1 2 | toStrings | join "-" }}"#, "511|1-2"),
    ]);
    assert!(render("{{ div 1 0 }}").starts_with("ERROR"));
}

#[test]
fn lists_and_dicts() {
    check(&[
        (
            r#"{{ list 1 2 3 | first }}|{{ list 1 2 3 | last }}|{{ list 1 2 3 | rest | join "," }}|{{ list 1 2 3 | initial | join "," }}"#,
            "1|3|2,3|1,2",
        ),
        (
            r#"{{ list 1 2 3 | reverse | join "," }}|{{ list 1 1 2 | uniq | join "," }}|{{ without (list 1 2 3) 2 | join "," }}"#,
            "3,2,1|1,2|1,3",
        ),
        (
            r#"{{ has 4 (list 1 2 3 4) }}|{{ append (list 1 2) 3 | join "," }}|{{ prepend (list 1 2) 0 | join "," }}"#,
            "true|1,2,3|0,1,2",
        ),
        (
            r#"{{ concat (list 1 2) (list 3) | join "," }}|{{ slice (list 1 2 3 4) 1 3 | join "," }}|{{ compact (list 1 "" "a") | join "," }}"#,
            "1,2,3|2,3|1,a",
        ),
        (
            r#"{{ chunk 2 (list 1 2 3) | toJson }}|{{ splitList "$" "foo$bar$baz" | join "," }}"#,
            "[[1,2],[3]]|foo,bar,baz",
        ),
        (
            r#"{{ (split "$" "foo$bar$baz")._1 }}|{{ (splitn "$" 2 "foo$bar$baz")._1 }}|{{ list "b" "a" | sortAlpha | join "" }}"#,
            "bar|bar$baz|ab",
        ),
        (
            r#"{{ $d := dict "name1" "value1" "name2" "value2" }}{{ get $d "name1" }}|{{ hasKey $d "name2" }}|{{ keys $d | join "," }}"#,
            "value1|true|name1,name2",
        ),
        (
            r#"{{ $d := dict "a" 1 "b" 2 }}{{ set $d "c" 3 | keys | join "," }}|{{ unset $d "a" | keys | join "," }}|{{ pick $d "a" | toJson }}|{{ omit $d "a" | toJson }}"#,
            r#"a,b,c|b,c|{}|{"b":2,"c":3}"#,
        ),
        (
            r#"{{ pluck "a" (dict "a" 1) (dict "a" 2) (dict "b" 3) | join "," }}|{{ values (dict "a" 1 "b" 2) | join "," }}"#,
            "1,2|1,2",
        ),
        (r#"{{ dig "a" "b" "none" (fromJson .js) }}|{{ dig "a" "x" "none" (fromJson .js) }}"#, "5|none"),
        (
            r#"{{ merge (dict "a" 1) (dict "a" 2 "b" 3) | toJson }}|{{ mergeOverwrite (dict "a" 1) (dict "a" 2) | toJson }}"#,
            r#"{"a":1,"b":3}|{"a":2}"#,
        ),
        (r#"{{ join "-" (list "a" 1 true) }}"#, "a-1-true"),
        (
            r#"{{ $u := urlParse "https://ann:pw@example.com:8443/a%20b/c?x=1&y=2#top" }}{{ $u.scheme }}|{{ $u.host }}|{{ $u.hostname }}|{{ $u.path }}|{{ $u.query }}|{{ $u.fragment }}|{{ $u.userinfo }}"#,
            "https|example.com:8443|example.com|/a b/c|x=1&y=2|top|ann:pw",
        ),
        (
            r#"{{ (urlParse "/p/q?k=v").path }}|{{ urlJoin (dict "scheme" "http" "host" "h:1" "path" "/a b" "query" "q=1") }}"#,
            "/p/q|http://h:1/a%20b?q=1",
        ),
    ]);
    assert!(render(r#"{{ first "abc" }}"#).starts_with("ERROR"));
}

#[test]
fn dates() {
    check(&[
        (r#"{{ toDate "2006-01-02" "2017-12-31" | date "02/01/2006" }}"#, "31/12/2017"),
        (
            r#"{{ date "2006-01-02 15:04:05.000 MST" (toDate "2006-01-02T15:04:05Z07:00" "2024-03-05T07:08:09.123+00:00") }}"#,
            "2024-03-05 07:08:09.123 UTC",
        ),
        (
            r#"{{ dateInZone "Jan _2 3:04PM -07:00" (toDate "2006-01-02 15:04" "2024-03-05 17:08") "Europe/Paris" }}"#,
            "Mar  5 6:08PM +01:00",
        ),
        (
            r#"{{ toDate "2006-01-02" "2024-03-05" | unixEpoch }}|{{ htmlDate (toDate "2006-01-02" "2024-03-05") }}"#,
            "1709596800|2024-03-05",
        ),
        (
            r#"{{ toDate "2006-01-02" "2024-03-05" | dateModify "-1.5h" | date "2006-01-02 15:04" }}"#,
            "2024-03-04 22:30",
        ),
        (
            r#"{{ duration "95" }}|{{ duration "3600" }}|{{ durationRound "2h10m5s" }}|{{ durationRound "400h" }}"#,
            "1m35s|1h0m0s|2h|16d",
        ),
        (r#"{{ toDate "2006-01-02" "nope" | date "2006" }}|{{ date "2006" 0 }}"#, "0001|1970"),
        (r#"{{ ago (toDate "2006" "1970") | regexMatch "^[0-9]+h[0-9]+m[0-9]+s$" }}"#, "true"),
    ]);
}
