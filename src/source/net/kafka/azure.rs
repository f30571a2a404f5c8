//! Azure Event Hubs messages as Promtail's `azure_event_hubs` target reads
//! them: a message `{"records": [...]}` of Azure resource logs becomes one
//! line per record (the record's JSON), labelled `__azure_event_hubs_category`
//! from its `category` and timed by its `time` (else `timeStamp`, RFC 3339)
//! when `use_incoming_timestamp`. Function apps' logs with single quotes
//! for JSON's double ones are read once more with them replaced.
//!
//! A message that is not such an object (or a record that lacks `time`,
//! `category`, `resourceId` or `operationName`) is a *custom* message: the
//! whole message (or the record) is one line, or, with
//! `disallow_custom_messages`, the message is skipped and counted.

use serde::Deserialize;
use serde_json::value::RawValue;

/// One line of a message: its text, its category (a resource log) and time.
#[derive(Debug, PartialEq)]
pub struct Line {
    pub text: String,
    pub category: Option<String>,
    /// Unix ns of the record's `time`, when it has one that reads.
    pub ts: Option<i64>,
}

#[derive(Deserialize)]
struct Records<'a> {
    #[serde(borrow, default)]
    records: Vec<&'a RawValue>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct ResourceLog {
    time: String,
    #[serde(rename = "timeStamp")]
    time_stamp: String,
    category: String,
    #[serde(rename = "resourceId")]
    resource_id: String,
    #[serde(rename = "operationName")]
    operation_name: String,
}

/// The lines of message `value`; `Err` when it is a custom message and custom messages are not allowed.
pub fn lines(value: &str, disallow_custom: bool) -> Result<Vec<Line>, &'static str> {
    let fixed;
    let parsed = match serde_json::from_str::<Records<'_>>(value) {
        Ok(r) => Some(r),
        Err(_) => {
            fixed = value.replace('\'', "\"");
            serde_json::from_str::<Records<'_>>(&fixed).ok()
        }
    };
    let records = match parsed {
        Some(r) if !r.records.is_empty() => r.records,
        _ => {
            if disallow_custom {
                return Err("not {\"records\": [...]}");
            }
            return Ok(vec![Line { text: value.to_string(), category: None, ts: None }]);
        }
    };
    let mut out = Vec::with_capacity(records.len());
    for raw in records {
        let text = raw.get().to_string();
        let log = serde_json::from_str::<ResourceLog>(raw.get()).ok().filter(|l| {
            let timed = !l.time.is_empty() || !l.time_stamp.is_empty();
            let required = [&l.category, &l.resource_id, &l.operation_name];
            timed && required.iter().all(|f| !f.is_empty())
        });
        match log {
            Some(l) => {
                let t = if l.time.is_empty() { &l.time_stamp } else { &l.time };
                let ts = chrono::DateTime::parse_from_rfc3339(t).ok().and_then(|t| t.timestamp_nanos_opt());
                out.push(Line { text, category: Some(l.category), ts });
            }
            None if disallow_custom => return Err("a record is not an Azure resource log"),
            None => out.push(Line { text, category: None, ts: None }),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_split_with_their_time_and_category() {
        let m = r#"{"records":[{"time":"2023-03-08T12:22:01.0000000Z","category":"FunctionAppLogs","resourceId":"/R","operationName":"Microsoft.Web/sites/functions/log","level":"Informational"},{"timeStamp":"2023-03-08T12:22:02Z","category":"WorkflowRuntime","resourceId":"/R","operationName":"op"}]}"#;
        let l = lines(m, true).unwrap();
        assert_eq!(l.len(), 2);
        assert!(l[0].text.starts_with(r#"{"time":"2023-03-08T12:22:01.0000000Z""#));
        assert_eq!(l[0].category.as_deref(), Some("FunctionAppLogs"));
        assert_eq!(l[0].ts, Some(1_678_278_121_000_000_000));
        assert_eq!(l[1].ts, Some(1_678_278_122_000_000_000));
    }

    #[test]
    fn custom_messages() {
        assert_eq!(lines("plain text", false).unwrap()[0].text, "plain text");
        assert!(lines("plain text", true).is_err());
        let custom = r#"{"records":[{"message":"hi"}]}"#;
        assert_eq!(lines(custom, false).unwrap()[0].text, r#"{"message":"hi"}"#);
        assert!(lines(custom, true).is_err());
        // Single quotes, as function apps send them.
        let quoted =
            "{'records':[{'time':'2023-03-08T12:22:01Z','category':'c','resourceId':'r','operationName':'o'}]}";
        assert_eq!(lines(quoted, true).unwrap()[0].category.as_deref(), Some("c"));
    }
}
