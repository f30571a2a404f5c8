use super::*;

const NOW: i64 = 1_717_000_000_000_000_000; // 2024-05-29

#[test]
fn rfc5424_with_structured_data_and_bom() {
    let m = parse(
        "<165>1 2003-10-11T22:14:15.003Z mymachine.example.com evntslog - ID47 [exampleSDID@32473 iut=\"3\" eventSource=\"Appl\\\"ication\"][x@1 a=\"b\\]\"] \u{feff}An application event",
        NOW,
    )
    .unwrap();
    assert_eq!((m.facility, m.severity), (Some(20), Some(5)));
    assert_eq!(m.ts, Some(1_065_910_455_003_000_000));
    assert_eq!(m.hostname, Some("mymachine.example.com"));
    assert_eq!(m.app_name, Some("evntslog"));
    assert_eq!(m.proc_id, None);
    assert_eq!(m.msg_id, Some("ID47"));
    assert_eq!(m.structured[1], ("exampleSDID@32473", "eventSource", "Appl\"ication".to_string()));
    assert_eq!(m.structured[2], ("x@1", "a", "b]".to_string()));
    assert_eq!(m.message, "An application event");
}

#[test]
fn rfc5424_nil_fields_and_no_message() {
    let m = parse("<13>1 - - - - - -", NOW).unwrap();
    assert_eq!(m.ts, None);
    assert_eq!(m.hostname, None);
    assert_eq!(m.message, "");
    assert!(parse("<13>1 2003-10-11T22:14:15Z host app - - [broken", NOW).is_none());
}

#[test]
fn rfc3164_as_devices_send_it() {
    let m = parse("<34>Oct 11 22:14:15 mymachine su[123]: 'su root' failed for lonvick on /dev/pts/8", NOW).unwrap();
    assert_eq!((m.facility, m.severity), (Some(4), Some(2)));
    assert_eq!(m.hostname, Some("mymachine"));
    assert_eq!(m.app_name, Some("su"));
    assert_eq!(m.proc_id, Some("123"));
    assert_eq!(m.message, "'su root' failed for lonvick on /dev/pts/8");
    let d = chrono::Local.timestamp_nanos(m.ts.unwrap());
    assert_eq!((d.year(), d.month(), d.day()), (2023, 10, 11), "October is in the past year in May");

    // No hostname (logger's local form), space-padded day.
    let m = parse("<13>May  5 10:00:00 myapp: hello world", NOW).unwrap();
    assert_eq!((m.hostname, m.app_name, m.message), (None, Some("myapp"), "hello world"));

    // A year after the time, and a fraction.
    let m = parse("<13>May 05 2021 10:00:00.250 host1 app: x", NOW).unwrap();
    let d = chrono::Local.timestamp_nanos(m.ts.unwrap());
    assert_eq!((d.year(), d.timestamp_subsec_millis()), (2021, 250));
    assert_eq!(m.hostname, Some("host1"));

    // rsyslog's high-precision timestamp.
    let m = parse("<30>2024-05-01T10:00:00.123456+02:00 web1 nginx[9]: GET /", NOW).unwrap();
    assert_eq!(m.ts, Some(1_714_550_400_123_456_000));
    assert_eq!((m.hostname, m.app_name, m.proc_id), (Some("web1"), Some("nginx"), Some("9")));

    // Cisco IOS.
    let m = parse("<189>123: *Mar  1 00:00:05.123: %SYS-5-CONFIG_I: Configured from console", NOW).unwrap();
    assert_eq!((m.facility, m.severity), (Some(23), Some(5)));
    assert!(m.ts.is_some());
    assert_eq!(m.message, "%SYS-5-CONFIG_I: Configured from console");

    // PRI only: the rest is the message.
    let m = parse("<14>just some text", NOW).unwrap();
    assert_eq!((m.ts, m.message), (None, "just some text"));
    // No PRI, but a timestamp.
    let m = parse("Oct 11 22:14:15 host app: x", NOW).unwrap();
    assert_eq!((m.facility, m.app_name), (None, Some("app")));
}

#[test]
fn what_is_not_syslog_does_not_parse() {
    for bad in ["hello there", "<999>Oct 11 22:14:15 x", "<abc>x", ""] {
        assert!(parse(bad, NOW).is_none(), "{bad:?}");
    }
}
