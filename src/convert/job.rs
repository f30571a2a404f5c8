//! One `scrape_configs` entry (a Promtail job) as tailship sources: what
//! the job reads picks the kind of source (files, journal, docker,
//! kubernetes, a network receiver, kafka), and every source takes the job's
//! labels, stages and relabel rules. The kinds' own tables are read in
//! `files.rs`, `sd.rs`, `net.rs` and `kafka.rs`; the stages in `stages.rs`.

use yaml_rust2::Yaml;

use super::render::{Section, Val};
use super::yaml::{list, truthy, Map, Report};
use super::{files, kafka, names, net, relabel, sd, stages};

/// One `scrape_configs` entry: its sources are appended to `out`. Returns
/// whether it sends structured metadata.
pub(super) fn scrape(
    key: &str,
    job: &Yaml,
    external: &[(String, String)],
    out: &mut Vec<Section>,
    r: &mut Report,
) -> bool {
    let mut m = Map::new(key, job, r);
    let mut j = Job::read(&mut m, job, external, r);
    let before = out.len();
    if !j.sources(&mut m, key, out, r) {
        return false;
    }
    m.finish(r, NO_EQUIVALENT);
    j.pipe.metadata && out.len() > before
}

/// What is said of a key the converter leaves unread.
const NO_EQUIVALENT: &str = "no tailship equivalent";

/// One job's name, stages and relabel rules, which each of its sources
/// takes, and the keys that say what it reads.
struct Job<'a> {
    name: String,
    pipe_key: String,
    pipe: stages::Pipeline,
    /// A journal job's relabel rules, as the journal source's own.
    relabel: relabel::Relabel,
    /// A docker job's rules that set the `stream` label, by their index.
    streams: Vec<(usize, String)>,
    /// The other relabel rules, as they are.
    rules: Vec<Val>,
    external: &'a [(String, String)],
    statics: Option<&'a Yaml>,
    file_sd: Option<&'a Yaml>,
    discovered: bool,
    journal: Option<&'a Yaml>,
    docker_sd: Option<&'a Yaml>,
    kubernetes_sd: Option<&'a Yaml>,
}

impl<'a> Job<'a> {
    fn read(m: &mut Map<'a>, job: &Yaml, external: &'a [(String, String)], r: &mut Report) -> Self {
        // A source name is one line of printable text (it is a metric label value too).
        let name: String = m
            .text("job_name", r)
            .unwrap_or_else(|| m.path.clone())
            .chars()
            .map(|c| if c.is_control() { '_' } else { c })
            .collect();
        let pipe_key = m.key("pipeline_stages");
        let stages = list(&pipe_key, m.get("pipeline_stages"), r);
        let mut pipe = stages::convert(&pipe_key, stages, names::available(job), names::every_target(job), r);
        let statics = m.get("static_configs");
        let file_sd = m.get("file_sd_configs");
        let discovered = sd::file_target_keys().any(|k| m.get(k).is_some());
        let journal = m.get("journal");
        if journal.is_some() {
            pipe.drop_container_stages(&pipe_key, r);
            // A journal source joins entries with a `multiline` stage, first in its list.
            pipe.multiline_as_stage();
        }
        let relabel = match journal {
            Some(_) => relabel::journal(&m.key("relabel_configs"), m.get("relabel_configs"), r),
            None => relabel::Relabel::default(),
        };
        let docker_sd = m.get("docker_sd_configs");
        let kubernetes_sd = m.get("kubernetes_sd_configs");
        let unavailable = if docker_sd.is_some() { sd::PER_LINE } else { &[] };
        let streams = if docker_sd.is_some() { sd::stream_rules(m.get("relabel_configs")) } else { Vec::new() };
        let taken: Vec<usize> = streams.iter().map(|(i, _)| *i).collect();
        let rules = match journal {
            Some(_) => Vec::new(),
            None => relabel::as_is(&m.key("relabel_configs"), m.get("relabel_configs"), unavailable, &taken, r),
        };
        Job {
            name,
            pipe_key,
            pipe,
            relabel,
            streams,
            rules,
            external,
            statics,
            file_sd,
            discovered,
            journal,
            docker_sd,
            kubernetes_sd,
        }
    }

    /// The job's sources, by what it reads, appended to `out`; false when
    /// it reads nothing tailship reads (reported).
    fn sources(&mut self, m: &mut Map<'a>, key: &str, out: &mut Vec<Section>, r: &mut Report) -> bool {
        let name = self.name.clone();
        if let Some(j) = self.journal {
            self.read_journal(m, j, out, r);
        } else if self.statics.is_some() || self.file_sd.is_some() || self.discovered {
            if self.docker_sd.is_some() {
                let why = "Promtail runs a job with static_configs or file_sd_configs as a file job and never reads \
                           its docker_sd_configs; nor does the conversion (give the containers a job of their own)";
                r.note(m.key("docker_sd_configs"), why);
            }
            self.read_files(m, out, r);
        } else if let Some(ds) = self.docker_sd {
            self.read_docker(m, ds, out, r);
        } else if let Some(ks) = self.kubernetes_sd {
            self.read_kubernetes(m, ks, out, r);
        } else if let Some(y) = m.get("syslog") {
            let s = net::syslog_source(&m.key("syslog"), y, &name, r);
            out.push(self.relabelled(s));
        } else if let Some((k, y)) = ["gelf", "heroku_drain", "gcplog"].into_iter().find_map(|k| Some((k, m.get(k)?))) {
            let key = m.key(k);
            let s = match k {
                "gelf" => net::gelf_source(&key, y, &name, r),
                "heroku_drain" => net::heroku_source(&key, y, &name, r),
                _ => net::gcplog_source(&key, y, &name, r),
            };
            out.push(self.relabelled(s));
        } else if let Some((k, y)) = ["kafka", "azure_event_hubs"].into_iter().find_map(|k| Some((k, m.get(k)?))) {
            let key = m.key(k);
            let s = if k == "kafka" {
                kafka::kafka_source(&key, y, &name, r)
            } else {
                kafka::azure_source(&key, y, &name, r)
            };
            out.push(self.relabelled(s));
        } else if let Some(y) = m.get("cloudflare") {
            let mut s = net::cloudflare_source(&m.key("cloudflare"), y, &name, r);
            self.finish(&mut s);
            if !self.rules.is_empty() {
                r.skip(m.key("relabel_configs"), "a cloudflare job has no discovered labels to relabel; left out");
            }
            out.push(s);
        } else if let Some(y) = m.get("loki_push_api") {
            let s = net::push_source(&m.key("loki_push_api"), y, &name, r);
            // Pushed lines may carry structured metadata: Promtail sends it on.
            self.pipe.metadata = true;
            // As in Promtail, the rules run over each pushed stream's labels.
            out.push(self.relabelled(s));
        } else if m.get("windows_events").is_some() {
            r.skip(
                m.key("windows_events"),
                format!(
                    "job `{name}` reads the Windows Event Log, through the Windows API: tailship runs on Linux, where \
                     Promtail does not read it either (its Linux build warns that the support is not compiled in)"
                ),
            );
            return false;
        } else {
            no_target(m, key, &name, r);
            return false;
        }
        true
    }

    /// Labels, tenant and stages common to every source of the job.
    fn finish(&self, s: &mut Section) {
        finish_source(s, self.external, &self.relabel.labels, &self.pipe);
    }

    /// [`Job::finish`], and the job's relabel rules.
    fn relabelled(&self, mut s: Section) -> Section {
        self.finish(&mut s);
        if !self.rules.is_empty() {
            s.set("relabel", Val::Arr(self.rules.clone()));
        }
        s
    }

    /// A journal job: one journal source (the job's files, if any, left out).
    fn read_journal(&self, m: &mut Map<'a>, j: &Yaml, out: &mut Vec<Section>, r: &mut Report) {
        if self.statics.is_some() {
            r.skip(m.key("static_configs"), "a job reads files or the journal, not both: the files are left out");
        }
        if self.file_sd.is_some() {
            r.skip(m.key("file_sd_configs"), "a job reads files or the journal, not both: the files are left out");
        }
        let mut s = journal_source(&m.key("journal"), j, &self.name, &self.relabel, !self.external.is_empty(), r);
        self.finish(&mut s);
        out.push(s);
    }

    /// A job of files: its static configs, target files and file
    /// discoveries, each a file source.
    fn read_files(&self, m: &mut Map<'a>, out: &mut Vec<Section>, r: &mut Report) {
        let name = &self.name;
        let decompression = files::decompression(&m.key("decompression"), m.get("decompression"), r);
        let items = list(&m.key("static_configs"), self.statics, r);
        let mut found = Vec::new();
        for (i, st) in items.iter().enumerate() {
            let sk = format!("{}[{i}]", m.key("static_configs"));
            let n = if items.len() == 1 { name.clone() } else { format!("{name}-{i}") };
            found.extend(file_source(&sk, st, &n, &self.pipe, m.get("relabel_configs"), r));
        }
        if let Some(fs) = self.file_sd {
            let n = if items.is_empty() { name.clone() } else { format!("{name}-file-sd") };
            found.extend(files::file_sd(&m.key("file_sd_configs"), fs, &n, self.pipe.multiline.as_ref(), r));
        }
        found.extend(sd::file_targets(m, name, self.pipe.multiline.as_ref(), r));
        for mut s in found {
            self.finish(&mut s);
            if let Some(d) = &decompression {
                s.set("decompression", d.clone());
            }
            if !self.rules.is_empty() {
                s.set("relabel", Val::Arr(self.rules.clone()));
            }
            out.push(s);
        }
    }

    /// A docker discovery job: a docker source per config.
    fn read_docker(&self, m: &mut Map<'a>, ds: &Yaml, out: &mut Vec<Section>, r: &mut Report) {
        for mut s in sd::docker(&m.key("docker_sd_configs"), ds, &self.name, r) {
            self.finish(&mut s);
            sd::note_docker_stage(&s, &self.pipe_key, r);
            sd::stream_labels(&mut s, &self.streams.iter().map(|(_, t)| t.clone()).collect::<Vec<_>>());
            if !self.rules.is_empty() {
                s.set("relabel", Val::Arr(self.rules.clone()));
            }
            out.push(s);
        }
    }

    /// A kubernetes discovery job: a file source per config.
    fn read_kubernetes(&self, m: &mut Map<'a>, ks: &Yaml, out: &mut Vec<Section>, r: &mut Report) {
        for mut s in sd::kubernetes(&m.key("kubernetes_sd_configs"), ks, &self.name, r) {
            self.finish(&mut s);
            if !self.rules.is_empty() {
                s.set("relabel", Val::Arr(self.rules.clone()));
            }
            out.push(s);
        }
    }
}

/// A job that reads nothing tailship knows: reported with what a job reads.
fn no_target(m: &Map<'_>, key: &str, name: &str, r: &mut Report) {
    let known = format!(
        "static_configs, file_sd_configs, kubernetes_sd_configs, docker_sd_configs, {}, journal, syslog, \
         loki_push_api, gelf, heroku_drain, gcplog, cloudflare, kafka or azure_event_hubs",
        sd::file_target_keys().collect::<Vec<_>>().join(", ")
    );
    let kinds: Vec<String> = m.keys().into_iter().filter(|k| k.ends_with("_sd_configs")).collect();
    if kinds.is_empty() {
        r.skip(key, format!("job `{name}` has no target: a job reads {known}"));
    }
    for kind in kinds {
        r.skip(
            m.key(&kind),
            format!("job `{name}`: tailship has no {kind} (Prometheus' discovery of that kind); it reads {known}"),
        );
    }
}

/// A `static_configs` entry as a file source (its `__path__` may come from
/// the job's relabel `rules`, as in Promtail).
fn file_source(
    key: &str,
    st: &Yaml,
    name: &str,
    pipe: &stages::Pipeline,
    rules: Option<&Yaml>,
    r: &mut Report,
) -> Option<Section> {
    let mut m = Map::new(key, st, r);
    let target =
        m.get("targets").and_then(|t| t.as_vec()).and_then(|t| t.first()).and_then(|t| t.as_str().map(str::to_string));
    m.ignore("targets");
    let labels = m.pairs("labels", r);
    let from_rules = match labels.iter().any(|(k, _)| k == "__path__") {
        true => None,
        false => relabel::path_of_target(rules, &labels, target.as_deref()),
    };
    m.finish(r, NO_EQUIVALENT);
    let mut include = Vec::new();
    let mut exclude = Vec::new();
    let mut plain = Vec::new();
    for (k, v) in labels {
        match k.as_str() {
            "__path__" => include.push(v),
            "__path_exclude__" => exclude.push(v),
            // Promtail reads a target of this host only (`$HOSTNAME`, else the host name).
            "__host__" => plain.push((k, v)),
            k if k.starts_with("__") => {} // Promtail drops `__` labels after relabelling.
            _ => plain.push((k, v)),
        }
    }
    include.extend(from_rules);
    if include.is_empty() {
        r.skip(format!("{key}.labels"), "no __path__: Promtail reads nothing for this target, and so does tailship");
        return None;
    }
    let mut s = Section { comments: vec![format!("Promtail job `{name}` ({key})")], entries: Vec::new() };
    s.set("type", Val::str("file"));
    s.set("name", Val::str(name));
    s.set("include", Val::strs(&include));
    if !exclude.is_empty() {
        s.set("exclude", Val::strs(&exclude));
    }
    s.set("labels", Val::pairs(&plain));
    s.set_noted("host_label", Val::Bool(false), "Promtail adds no host label (tailship does by default)");
    s.set_noted(
        "ignore_older",
        Val::str("0"),
        "Promtail reads every file however old (tailship skips a file untouched for 24h by default)",
    );
    if let Some(ml) = &pipe.multiline {
        s.set("multiline", ml.clone());
    }
    Some(s)
}

/// A `journal` block as a journal source.
/// `external`: the client has external labels (the source carries them).
fn journal_source(
    key: &str,
    y: &Yaml,
    name: &str,
    relabel: &relabel::Relabel,
    external: bool,
    r: &mut Report,
) -> Section {
    let mut m = Map::new(key, y, r);
    let mut s = Section { comments: vec![format!("Promtail job `{name}` ({key})")], entries: Vec::new() };
    s.set("type", Val::str("journal"));
    s.set("name", Val::str(name));
    if let Some(p) = m.text("path", r) {
        s.set("path", Val::str(p));
    }
    let mut matches = Vec::new();
    for t in m.text("matches", r).unwrap_or_default().split_whitespace() {
        if is_journal_match(t) {
            matches.push(t.to_string());
        } else {
            r.skip(m.key("matches"), format!("`{t}` is not a FIELD=value match (tailship takes no `+`)"));
        }
    }
    matches.extend(relabel.matches.iter().cloned());
    if !matches.is_empty() {
        s.set("matches", Val::strs(&matches));
    }
    if !relabel.rules.is_empty() {
        s.set("relabel", Val::Arr(relabel.rules.clone()));
    }
    if let Some(a) = m.text("max_age", r) {
        s.set("max_age", Val::str(a));
    }
    let json = m.text("json", r).is_some_and(|v| truthy(&v));
    if json {
        s.set("json", Val::Bool(true));
    }
    let labels = m.pairs("labels", r);
    s.set("labels", Val::pairs(&labels));
    m.finish(r, NO_EQUIVALENT);
    promtail_journal(&mut s, relabel, json);
    if labels.is_empty() && relabel.labels.is_empty() && relabel.rules.is_empty() && relabel.builtin.is_empty() {
        r.note(
            key,
            if external {
                "the job gives its entries no labels: Promtail drops every entry (\"no labels\") before it adds \
                 the client's external_labels; tailship's source carries them, so it ships the entries"
            } else {
                "the job gives its entries no labels: Promtail drops every entry (\"no labels\"), and so does \
                 tailship (counted as journal_no_labels)"
            },
        );
    }
    s
}

/// The journal source's keys that make it read as Promtail's journal target:
/// only the labels the job's rules ask for, the JSON line and the fields
/// the rules see without the address fields, a saved cursor older than
/// `max_age` not resumed from.
fn promtail_journal(s: &mut Section, relabel: &relabel::Relabel, json: bool) {
    let asked: Vec<&str> = relabel.builtin.iter().map(String::as_str).collect();
    if !asked.contains(&"host") {
        s.set_noted("host_label", Val::Bool(false), "Promtail's job had no host label");
    }
    if asked.contains(&"unit") {
        s.set_noted("unit_label", Val::str("systemd_unit"), "Promtail's `__journal__systemd_unit` rule: no fallback");
    } else {
        s.set_noted("unit_label", Val::str("none"), "Promtail's job had no unit label");
    }
    if !asked.contains(&"level") {
        s.set_noted("level_label", Val::Bool(false), "Promtail's job had no level label");
    }
    if json || !relabel.rules.is_empty() {
        s.set_noted(
            "address_fields",
            Val::Bool(false),
            "Promtail 3.6 shows no __CURSOR, __REALTIME_TIMESTAMP, __MONOTONIC_TIMESTAMP",
        );
    }
    s.set_noted("cursor_max_age", Val::Bool(true), "as Promtail: a saved cursor older than max_age is not resumed");
}

/// `FIELD=value` with a journal field name (upper-case letters, digits, `_`).
fn is_journal_match(t: &str) -> bool {
    t.split_once('=').is_some_and(|(f, _)| {
        !f.is_empty()
            && f.len() <= 64
            && !f.starts_with(|c: char| c.is_ascii_digit())
            && f.bytes().all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_')
    })
}

/// Labels, tenant and stages common to both kinds of source.
fn finish_source(
    s: &mut Section,
    external: &[(String, String)],
    relabeled: &[(String, String)],
    pipe: &stages::Pipeline,
) {
    let mut labels = labels_of(s);
    // A job's own label wins over the client's external label of the same name.
    for (k, v) in external {
        if !labels.iter().any(|(l, _)| l == k) {
            labels.push((k.clone(), v.clone()));
        }
    }
    for (k, v) in relabeled.iter().chain(&pipe.static_labels) {
        labels.retain(|(l, _)| l != k);
        labels.push((k.clone(), v.clone()));
    }
    labels.retain(|(l, _)| !pipe.drop_labels.contains(l));
    if pipe.drop_labels.iter().any(|l| l == "host") {
        s.set("host_label", Val::Bool(false));
    }
    s.set("labels", Val::pairs(&labels));
    if let Some(t) = &pipe.tenant {
        s.set("tenant_id", Val::str(t));
    }
    if !pipe.stages.is_empty() {
        s.set("stages", Val::Arr(pipe.stages.iter().map(stages::Stage::to_val).collect()));
    }
}

/// The `labels` table of a section as pairs.
fn labels_of(s: &Section) -> Vec<(String, String)> {
    match s.get("labels") {
        Some(Val::Table(t)) => t
            .iter()
            .filter_map(|(k, v)| match v {
                Val::Str(v) => Some((k.clone(), v.clone())),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    }
}
