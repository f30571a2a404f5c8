//! Promtail's process-wide settings: `wal`, `global`, `options`, `tracing`
//! and `limits_config`.

use yaml_rust2::Yaml;

use super::render::{Section, Val};
use super::yaml::{truthy, Map, Report};
use super::Options;

/// Promtail's process settings that tailship needs no key for: `wal`
/// (lines wait in their files and the spool instead), `global`'s file
/// polling (tailship is told of writes by inotify), `options` (its one key
/// is a no-op since Promtail 2.9); `tracing` as tailship's `[tracing]`.
pub fn options(root: &mut Map<'_>, options: &Options, tracing: &mut Section, r: &mut Report) {
    if let Some(y) = root.get("wal") {
        let mut w = Map::new("wal", y, r);
        if w.text("enabled", r).is_some_and(|v| truthy(&v)) {
            r.note(
                "wal",
                "tailship needs no write-ahead log: file lines wait in their files and network lines in the spool \
                 until the service stored them (positions move only after a 2xx)",
            );
        }
        for k in ["dir", "cleanSegmentsOlderThan", "maxSegmentAge", "minSegmentAge"] {
            w.ignore(k);
        }
        w.finish(r, "no tailship equivalent");
    }
    if let Some(y) = root.get("global") {
        let mut g = Map::new("global", y, r);
        if let Some(f) = g.get("file_watch_config") {
            let mut fw = Map::new(g.key("file_watch_config"), f, r);
            if fw.text("min_poll_frequency", r).is_some() | fw.text("max_poll_frequency", r).is_some() {
                r.note(
                    g.key("file_watch_config"),
                    "tailship is told of writes by inotify (and polls every 250 ms only where it cannot watch)",
                );
            }
            fw.finish(r, "no tailship equivalent");
        }
        g.finish(r, "no tailship equivalent");
    }
    if let Some(y) = root.get("options") {
        let mut o = Map::new("options", y, r);
        o.ignore("stream_lag_labels");
        o.finish(r, "no tailship equivalent");
    }
    if let Some(y) = root.get("tracing") {
        let mut t = Map::new("tracing", y, r);
        // Promtail's default is on, and it sends nothing without a Jaeger
        // address in its environment: so tailship's tracing is on only with one.
        let enabled = t.text("enabled", r).is_some_and(|v| truthy(&v));
        if let (true, Some(jaeger)) = (enabled, &options.jaeger) {
            tracing.set("enabled", Val::Bool(true));
            r.note(
                "tracing",
                format!(
                    "tailship sends its spans as OTLP/HTTP to tracing.endpoint (default http://127.0.0.1:4318), \
                     where Promtail sent Jaeger's protocol to {jaeger} (JAEGER_AGENT_HOST): point it at the \
                     collector's OTLP port (Jaeger, Tempo and the OpenTelemetry Collector take OTLP)"
                ),
            );
        }
        t.finish(r, "no tailship equivalent");
    }
}

/// `limits_config`: Promtail's process-wide read rate, as a `limit` stage on
/// every source when it is on; `max_streams` and `max_line_size` per source.
pub fn limits(y: &Yaml, sources: &mut [Section], r: &mut Report) {
    let mut m = Map::new("limits_config", y, r);
    if let Some(n) = m.text("max_streams", r).and_then(|v| v.parse::<i64>().ok()).filter(|n| *n > 0) {
        r.note(
            m.key("max_streams"),
            "max_streams on each source: tailship bounds each source's streams, and past the bound a line keeps its \
             file's stream and is counted (Promtail drops it)",
        );
        for s in sources.iter_mut() {
            s.set("max_streams", Val::Int(n));
        }
    }
    let cut = m.text("max_line_size_truncate", r).is_some_and(|v| truthy(&v));
    if let Some(size) = m.text("max_line_size", r) {
        match crate::util::parse_size(&size) {
            Ok(0) => {}
            Ok(n) => {
                if !cut {
                    r.note(
                        m.key("max_line_size"),
                        "max_line_bytes on each source: a longer line is cut there and counted (Promtail drops it \
                         unless max_line_size_truncate)",
                    );
                }
                for s in sources.iter_mut() {
                    s.set("max_line_bytes", Val::Int(n as i64));
                }
            }
            Err(e) => r.skip(m.key("max_line_size"), e),
        }
    }
    let on = m.text("readline_rate_enabled", r).is_some_and(|v| truthy(&v));
    let rate = m.text("readline_rate", r).and_then(|v| v.parse::<f64>().ok());
    let burst = m.text("readline_burst", r).and_then(|v| v.parse::<i64>().ok());
    let wait = m.text("readline_rate_drop", r).is_some_and(|v| !truthy(&v));
    if let (true, Some(rate)) = (on, rate.filter(|r| *r > 0.0)) {
        r.note(
            "limits_config.readline_rate",
            "a limit stage on each source: tailship limits per source (Promtail's job), not per process",
        );
        let mut t = vec![("rate".to_string(), Val::Float(rate))];
        if let Some(b) = burst {
            t.push(("burst".into(), Val::Int(b)));
        }
        if wait {
            t.push(("drop".into(), Val::Bool(false)));
        }
        let stage = Val::Table(vec![("limit".into(), Val::Table(t))]);
        for s in sources.iter_mut() {
            let mut list = match s.get("stages") {
                Some(Val::Arr(a)) => a.clone(),
                _ => Vec::new(),
            };
            list.push(stage.clone());
            s.set("stages", Val::Arr(list));
        }
    }
    m.finish(r, "no tailship equivalent");
}
