//! The shape of one `[[sources]].stages` entry: raw data, compiled by `plan`.
//!
//! A stage names what it does with one key (`regex`, `json`, `drop`, ...);
//! `labels` and `structured_metadata` may ride on it or stand alone. Values
//! that stages extract go into the line's extracted map (Promtail's model),
//! which later stages read by name (`source`).

use std::collections::BTreeMap;
use std::fmt;

use serde::de::{self, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::util::{HumanDuration, HumanSize};

/// One processing stage: exactly one of `regex`, `json`, `logfmt`, `drop`,
/// `timestamp`, `output`, `replace`, `cri`, `docker`, `limit`, `tenant`,
/// `match`, ... is set, or only `labels` and/or `structured_metadata`.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(default)]
pub struct StageConfig {
    /// Named captures are extracted; those listed in `labels` become labels.
    pub regex: Option<String>,
    /// Values extracted from a JSON line: `NAME = "dotted.path"` (`a.b[0].c`)
    /// or a JMESPath expression (`length(items)`, `items[*].id`); an empty
    /// table extracts every top-level scalar field.
    pub json: Option<BTreeMap<String, String>>,
    /// With `json`: a line that is not a JSON object is dropped (counted
    /// under reason `malformed_json`) instead of passed on.
    pub drop_malformed: Option<bool>,
    /// Values extracted from a logfmt line: `NAME = "key"`; an empty table
    /// extracts every key.
    pub logfmt: Option<BTreeMap<String, String>>,
    /// `regex`, `json`, `logfmt`, `replace` and a `drop` regex read this
    /// extracted value instead of the line (a line without it is passed on).
    pub source: Option<String>,
    /// Which extracted values become labels: a list of names, or a table
    /// `{ label = "extracted name" }` ("" = the same name). A `regex` stage
    /// without it makes every named capture a label; other stages make none.
    pub labels: Option<Picks>,
    /// Which extracted values (or labels, which then leave the stream) go
    /// with each line as structured metadata (needs `client.structured_metadata = true`).
    pub structured_metadata: Option<Picks>,
    /// Drop lines: a regex on the line (or on `source`), or a table of
    /// conditions that must all hold (see [`DropRule`]).
    pub drop: Option<DropSpec>,
    /// Take the entry's timestamp from an extracted value.
    pub timestamp: Option<TimestampStage>,
    /// Replace the line with this extracted value.
    pub output: Option<String>,
    /// Rewrite every match of this regex in the line (or in `source`) with `with`.
    pub replace: Option<String>,
    /// The replacement of `replace`: `$1`, `${name}` insert captures.
    pub with: Option<String>,
    /// Instead of `with`, Promtail's `replace` with a Go template: each
    /// capture group becomes the template rendered with `.Value` = its text
    /// (and every extracted value by name); named groups are extracted.
    pub with_template: Option<String>,
    /// CRI-O/containerd log lines: `TIME STREAM P|F MESSAGE`.
    pub cri: Option<CriStage>,
    /// Docker json-file log lines: `{"log": ..., "stream": ..., "time": ...}`.
    pub docker: Option<EmptyStage>,
    /// A per-stream line rate limit; lines over it are dropped and counted.
    pub limit: Option<LimitStage>,
    /// The tenant of each line, from an extracted value or a label.
    pub tenant: Option<TenantStage>,
    /// Only these labels stay on the line (every other one is taken away).
    pub labelallow: Option<Vec<String>>,
    /// `{ team = "a" }`: labels set on each line that reaches this stage
    /// (Promtail's `static_labels`; under a `match`, only the lines it
    /// selects). An empty value sets nothing. The source's own `labels` are
    /// cheaper for labels every line has.
    pub static_labels: Option<BTreeMap<String, String>>,
    /// `["job"]`: these labels are taken off each line that reaches this
    /// stage (Promtail's `labeldrop`).
    pub labeldrop: Option<Vec<String>>,
    /// `{}`: ANSI colour and cursor escape sequences are removed from the line.
    pub decolorize: Option<EmptyStage>,
    /// `{ source = "name", template = "{{ .Value | ToUpper }}" }`: the
    /// extracted value `source` becomes the rendered Go template.
    pub template: Option<TemplateStage>,
    /// Stages run only on lines a selector picks, or those lines dropped.
    #[serde(rename = "match")]
    pub match_: Option<MatchStage>,
    /// Cut the line (or labels, structured metadata, extracted values) to a size.
    pub truncate: Option<TruncateStage>,
    /// Keep a random share of the lines (`rate`, 0 to 1); the rest are dropped and counted.
    pub sampling: Option<SamplingStage>,
    /// The line becomes a JSON object of some labels or extracted values and
    /// the line itself (`_entry`), Promtail's packing format.
    pub pack: Option<PackStage>,
    /// Metrics from the lines, served on `/metrics` (Promtail's `metrics`
    /// stage): `{ NAME = { type = "counter", config = { action = "inc" } } }`.
    pub metrics: Option<BTreeMap<String, MetricStage>>,
    /// Lines joined from a start line on, at this point of the stages
    /// (Promtail's `multiline` stage): `{ start = '^\d{4}-', max_lines = 128, max_wait = "3s" }`.
    pub multiline: Option<super::MultilineConfig>,
    /// Labels from a MaxMind database for the address in an extracted value
    /// (Promtail's `geoip`): `{ db = "/path/GeoLite2-City.mmdb", source = "ip", db_type = "city" }`.
    pub geoip: Option<GeoipStage>,
}

/// A `geoip` stage.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(default)]
pub struct GeoipStage {
    /// The MaxMind database file (`.mmdb`), read when the config loads.
    pub db: String,
    /// The extracted value holding the IP address.
    pub source: Option<String>,
    /// `city`, `asn` or `country`.
    pub db_type: String,
}

/// One metric of a `metrics` stage (Promtail's options).
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(default)]
pub struct MetricStage {
    /// `counter`, `gauge` or `histogram`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The metric's help text.
    pub description: Option<String>,
    /// The extracted value read (default: the metric's name).
    pub source: Option<String>,
    /// Put before the name (default `promtail_custom_`, as Promtail does).
    pub prefix: Option<String>,
    /// A series not updated for this long is removed (default 5m, at least 1s).
    pub max_idle_duration: Option<HumanDuration>,
    pub config: MetricOptions,
}

/// The `config` of one metric.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(default)]
pub struct MetricOptions {
    /// Only lines whose value equals this update the metric.
    pub value: Option<String>,
    /// Counter: `inc` or `add`; gauge: `set`, `inc`, `dec`, `add` or `sub`.
    pub action: Option<String>,
    /// Counter: every line counts, whether the value is there or not.
    pub match_all: Option<bool>,
    /// Counter with `match_all` and `add`: add the line's length in bytes.
    pub count_entry_bytes: Option<bool>,
    /// Histogram: the buckets' upper bounds (default Prometheus's).
    pub buckets: Option<Vec<f64>>,
}

/// `truncate = { limit = 1000, suffix = "...", source_type = "line" }` (Alloy's `stage.truncate`).
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(default)]
pub struct TruncateStage {
    /// The most bytes a value keeps, the suffix included (cut at a character boundary).
    pub limit: HumanSize,
    /// Put at the end of a value that was cut.
    pub suffix: String,
    /// `line` (default), `label`, `structured_metadata` or `extracted`.
    pub source_type: Option<String>,
    /// The names cut (labels, metadata or extracted values); empty: all of them.
    pub sources: Vec<String>,
}

/// `sampling = { rate = 0.1 }`.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(default)]
pub struct SamplingStage {
    /// The share of lines kept, above 0 and at most 1.
    pub rate: f64,
    /// The `reason` label of the drop counter (default `sampling_stage`).
    pub reason: Option<String>,
}

/// `pack = { labels = ["app", "level"] }`.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(default)]
pub struct PackStage {
    /// Extracted values or labels packed into the line; a label packed leaves the stream.
    pub labels: Vec<String>,
    /// The entry takes the time it is packed at (default true, as in Promtail).
    pub ingest_timestamp: Option<bool>,
}

/// A `template` stage.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(default)]
pub struct TemplateStage {
    /// The extracted value written (it need not exist before).
    pub source: String,
    /// Go template text over the extracted values, `.Value` (this one) and `.Entry` (the line).
    pub template: String,
}

/// `match = { selector = '{app="web"} |= "error"', stages = [...] }`.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(default)]
pub struct MatchStage {
    /// A stream selector over the line's labels at this point, with optional
    /// line filters (`|=`, `!=`, `|~`, `!~`).
    pub selector: String,
    /// Run on the lines selected (action "keep").
    pub stages: Vec<StageConfig>,
    /// "keep" (default: run `stages`) or "drop" (drop the lines selected).
    pub action: Option<String>,
    /// The `reason` label of the drop counter (default `match_stage`).
    pub reason: Option<String>,
}

/// `cri = {}`, or with Promtail's cut of long parts:
/// `{ max_partial_line_size = "16KiB", max_partial_line_size_truncate = true }`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(default)]
pub struct CriStage {
    /// With `max_partial_line_size_truncate`: a part (`P`) longer than this is cut before it is joined.
    pub max_partial_line_size: Option<HumanSize>,
    pub max_partial_line_size_truncate: Option<bool>,
    /// When a part comes while this many streams of a file hold one, those
    /// held are passed on as lines of their own (Promtail's
    /// `max_partial_lines`; default 100).
    pub max_partial_lines: Option<u32>,
}

/// The options of a stage that has none (`{ docker = {} }`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
pub struct EmptyStage {}

#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(default)]
pub struct LimitStage {
    /// Lines per second, for the whole source (Promtail's: per job).
    pub rate: f64,
    /// Lines allowed at once above the rate (at least 1).
    pub burst: u32,
    /// Limit per value of this label (at this point of the stages), across
    /// the source's files; lines without the label are never limited.
    pub by_label_name: Option<String>,
    /// With `by_label_name`: values remembered before all are forgotten (default and at least 10000).
    pub max_distinct_labels: Option<u32>,
    /// `false`: a line over the limit waits for its turn (the source's
    /// reading waits with it, Promtail's `drop: false`) instead of being
    /// dropped. Default `true`. Not with `by_label_name`.
    pub drop: Option<bool>,
}

#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(default)]
pub struct TimestampStage {
    /// Name of a value extracted by an earlier stage.
    pub source: String,
    /// `rfc3339`, `unix`, `unix_ms`, `unix_us`, `unix_ns`, a strftime
    /// pattern, or a Go layout (`2006-01-02 15:04:05.000`, `RFC3339Nano`).
    pub format: String,
    /// Formats tried in order when `format` does not read the value.
    pub fallback_formats: Vec<String>,
    /// An IANA time zone for times without an offset (default UTC).
    pub location: Option<String>,
    /// When no format reads the value: `skip` (default: the line keeps its
    /// read time) or `fudge` (the last time this stage set for the same
    /// labels, plus 1 ns: Promtail's default).
    pub action_on_failure: Option<String>,
}

/// `tenant = { source = "org" }`, `{ label = "team" }` or `{ value = "a" }`:
/// exactly one. A line without the value or label keeps the source's tenant.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(default)]
pub struct TenantStage {
    /// An extracted value.
    pub source: Option<String>,
    /// A label of the line at this point (static, discovered or set by an
    /// earlier stage), read per line.
    pub label: Option<String>,
    /// A fixed tenant for each line that reaches this stage (under a
    /// `match`: the lines it selects; the source's `tenant_id` is that for
    /// every line).
    pub value: Option<String>,
}

/// `labels` / `structured_metadata`: `(label, extracted name)` pairs, from a
/// list of names (`["level"]`) or a table (`{ lvl = "level", app = "" }`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Picks(pub Vec<(String, String)>);

impl<'de> Deserialize<'de> for Picks {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Picks;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a list of names or a table of label = \"extracted name\"")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Picks, A::Error> {
                let mut out = Vec::new();
                while let Some(n) = seq.next_element::<String>()? {
                    out.push((n.clone(), n));
                }
                Ok(Picks(out))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Picks, A::Error> {
                let mut out = Vec::new();
                while let Some((k, v)) = map.next_entry::<String, String>()? {
                    let v = if v.is_empty() { k.clone() } else { v };
                    out.push((k, v));
                }
                Ok(Picks(out))
            }
        }
        d.deserialize_any(V)
    }
}

impl Serialize for Picks {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if self.0.iter().all(|(l, src)| l == src) {
            s.collect_seq(self.0.iter().map(|(l, _)| l))
        } else {
            s.collect_map(self.0.iter().map(|(l, src)| (l, src)))
        }
    }
}

/// `drop = 'regex'` or `drop = { ... }`.
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
pub enum DropSpec {
    Regex(String),
    Rule(DropRule),
}

impl<'de> Deserialize<'de> for DropSpec {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = DropSpec;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a regex or a table of drop conditions")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<DropSpec, E> {
                Ok(DropSpec::Regex(v.to_string()))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<DropSpec, A::Error> {
                // Through the map's own deserializer, so unknown keys are still reported.
                DropRule::deserialize(de::value::MapAccessDeserializer::new(map)).map(DropSpec::Rule)
            }
        }
        d.deserialize_any(V)
    }
}

/// A line is dropped when every condition set holds (Promtail's `drop`).
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(default)]
pub struct DropRule {
    /// Extracted values to test, joined by `separator`; unset: the line.
    /// A line missing any of them is kept.
    pub source: Option<OneOrMany>,
    pub separator: Option<String>,
    /// Drop when this regex matches (the line or the joined values).
    pub expression: Option<String>,
    /// Drop when the joined values equal this (needs `source`).
    pub value: Option<String>,
    /// Drop entries whose timestamp is older than now minus this.
    pub older_than: Option<HumanDuration>,
    /// Drop lines longer than this many bytes.
    pub longer_than: Option<HumanSize>,
    /// The `reason` label of `tailship_lines_dropped_total` (default `drop_stage`).
    pub reason: Option<String>,
}

/// A name or a list of names.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(untagged)]
pub enum OneOrMany {
    One(String),
    Many(Vec<String>),
}

impl OneOrMany {
    pub fn names(&self) -> Vec<String> {
        match self {
            Self::One(s) => vec![s.clone()],
            Self::Many(v) => v.clone(),
        }
    }
}
