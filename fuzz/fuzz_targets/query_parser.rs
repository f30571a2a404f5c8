//! The embedded store's query parser on arbitrary text: log and metric queries,
//! selectors, line filters, durations. Errors are fine; panics are not. A parsed
//! log selector is also run against a line and a label set.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tailship::receive::logql;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Ok(logql::Query::Log(sel)) = logql::parse(text) {
        let _ = sel.matches_line("GET /index.html 200 ERROR timeout");
        let _ = sel.matches_labels(|name| match name {
            "job" => Some("app"),
            "level" => Some("error"),
            _ => None,
        });
    }
    let _ = logql::parse_log_query(text);
    let _ = logql::parse_duration_ns(text);
});
