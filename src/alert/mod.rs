//! Alerts on log lines: `[[alerts]]` rules whose matching lines become
//! formatted-webhook alerts, grouped, rate-limited and auto-resolved, without
//! ever slowing shipping.
//!
//! The shape, from the hot path outwards:
//!
//! * [`AlertTap`] sits in the batcher, which sees every line on its way to
//!   the service. Per stream it caches which rules' selectors match (one hash
//!   lookup for a stream no rule watches); only for those it runs the `match`
//!   and `exclude` regexes. The matches of one chunk are folded per rule and
//!   stream (count, first and last line) and handed to the engine with
//!   `try_send` on a bounded channel of [`QUEUE_CAPACITY`], so a flood of
//!   matching lines costs one message per chunk, not per line. A full channel
//!   drops the message and counts its lines: log lines never wait for alerts.
//! * The engine (`engine.rs`) owns the groups, the `group_interval` and
//!   `resolve_after` timers and the limits (`limit.rs`), and spawns deliveries.
//! * Deliveries (`sender.rs`) post the payload to the webhook with retries, and
//!   an annotation to the hosted instance when a group opens. The webhook URL
//!   holds the integration key and is never printed.
//!
//! Rules are compiled once (`rule.rs`, templates in `template.rs`) by `plan`.
//! SIGHUP reloads them ([`Alerts::reload`]): the engine takes the new rule set
//! at once (so groups of removed rules resolve even when no line flows), the
//! tap at its next chunk; every match carries the generation of the rule set
//! it was made with, and the engine reads a match of the previous generation
//! by its rule's name. Groups of rules that stay (by name) keep their state.

pub mod engine;
pub mod limit;
pub mod rule;
pub mod sender;
pub mod template;

use std::sync::Arc;
use std::time::Duration;

use prometheus::IntCounter;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::client::retry::RetryPolicy;
use crate::config::Config;
use crate::metrics::Metrics;
use crate::queue::{PerStream, StreamRef};
use crate::util::cut_at_char as cut;
use engine::{Annotation, Deliver, Delivery, Engine, Intake, Match};
use rule::Rule;
use sender::{Payload, Sender};

/// Matches waiting for the engine; past this they are dropped and counted.
pub const QUEUE_CAPACITY: usize = 4096;
/// Longest line kept as `first_line` / `last_line`, in bytes.
pub const MAX_ALERT_LINE: usize = 1024;

/// The rule set the tap should use, with its generation (see [`Alerts::reload`]).
struct Current {
    generation: std::sync::atomic::AtomicU32,
    rules: std::sync::Mutex<Arc<[Rule]>>,
}

/// The batcher's view of the rules (see the module header). Never blocks.
pub struct AlertTap {
    rules: Arc<[Rule]>,
    generation: u32,
    current: Arc<Current>,
    tx: mpsc::Sender<Intake>,
    /// Per stream (while it lives): indices of the rules selecting it.
    streams: PerStream<Box<[u16]>>,
    /// Matches of the current chunk, one per rule and stream, sent by [`AlertTap::flush`].
    batch: Vec<Match>,
    matched: Vec<IntCounter>,
    dropped: Vec<IntCounter>,
}

/// Rule-and-stream pairs collected before the tap flushes early (a chunk with many streams).
const MAX_BATCH: usize = 64;

impl AlertTap {
    fn new(rules: Arc<[Rule]>, current: Arc<Current>, tx: mpsc::Sender<Intake>) -> Self {
        let (matched, dropped) = counters(&rules);
        Self { rules, generation: 0, current, tx, streams: PerStream::default(), batch: Vec::new(), matched, dropped }
    }

    /// Takes a reloaded rule set (see [`Alerts::reload`]).
    fn take_new_rules(&mut self) {
        let generation = self.current.generation.load(std::sync::atomic::Ordering::Acquire);
        if generation == self.generation {
            return;
        }
        let Ok(rules) = self.current.rules.lock().map(|r| r.clone()) else { return };
        (self.matched, self.dropped) = counters(&rules);
        self.rules = rules;
        self.generation = generation;
        self.streams.clear();
    }

    /// Looks at one line of `stream`. Cheap for streams no rule selects; never waits.
    /// Matches are collected until [`AlertTap::flush`].
    pub fn observe(&mut self, stream: &StreamRef, line: &str) {
        if self.current.generation.load(std::sync::atomic::Ordering::Relaxed) != self.generation {
            // A reload: what was matched so far goes with the old rules, the rest with the new.
            send(&mut self.batch, &self.tx, &self.matched, &self.dropped);
            self.take_new_rules();
        }
        let Self { rules, generation, tx, streams, batch, matched, dropped, .. } = self;
        if rules.is_empty() {
            return;
        }
        let selected = streams.get_or_insert_with(stream, || {
            let sel: Vec<u16> =
                rules.iter().enumerate().filter(|(_, r)| r.selects(&stream.labels)).map(|(i, _)| i as u16).collect();
            sel.into()
        });
        for &ix in selected.iter() {
            if !rules[ix as usize].matches_line(line) {
                continue;
            }
            let line = cut(line, MAX_ALERT_LINE);
            match batch.iter_mut().find(|m| m.rule == ix && Arc::ptr_eq(&m.stream, stream)) {
                Some(m) => {
                    m.count += 1;
                    match &mut m.last_line {
                        Some(l) if l.len() >= line.len() => {
                            // Reuse the allocation: most lines of a stream are of similar length.
                            let mut s = std::mem::take(l).into_string();
                            s.clear();
                            s.push_str(line);
                            *l = s.into_boxed_str();
                        }
                        l => *l = Some(line.into()),
                    }
                }
                None => {
                    if batch.len() >= MAX_BATCH {
                        send(batch, tx, matched, dropped);
                    }
                    batch.push(Match {
                        rule: ix,
                        generation: *generation,
                        stream: stream.clone(),
                        count: 1,
                        first_line: line.into(),
                        last_line: None,
                    });
                }
            }
        }
    }

    /// Hands the collected matches to the engine (the batcher calls this after
    /// each chunk). A full queue drops them and counts every line they stood for.
    pub fn flush(&mut self) {
        send(&mut self.batch, &self.tx, &self.matched, &self.dropped);
    }
}

impl crate::batch::LineTap for AlertTap {
    fn observe(&mut self, stream: &StreamRef, line: &str) {
        AlertTap::observe(self, stream, line);
    }

    fn flush(&mut self) {
        AlertTap::flush(self);
    }
}

fn send(batch: &mut Vec<Match>, tx: &mpsc::Sender<Intake>, matched: &[IntCounter], dropped: &[IntCounter]) {
    for m in batch.drain(..) {
        let (i, n) = (m.rule as usize, m.count);
        matched[i].inc_by(n);
        if tx.try_send(Intake::Match(m)).is_err() {
            dropped[i].inc_by(n);
        }
    }
}

/// The per-rule match and drop counters.
fn counters(rules: &[Rule]) -> (Vec<IntCounter>, Vec<IntCounter>) {
    let m = Metrics::get();
    let matched = rules.iter().map(|r| m.alert_matches.with_label_values(&[&r.name])).collect();
    let dropped = rules.iter().map(|r| m.alert_updates_dropped.with_label_values(&[&r.name, "queue_full"])).collect();
    (matched, dropped)
}

/// The running engine, for reload and shutdown.
pub struct Alerts {
    task: tokio::task::JoinHandle<()>,
    cancel: CancellationToken,
    current: Arc<Current>,
    /// The engine's intake, for reloads; dropped at [`Alerts::finish`] so the
    /// engine drains once the tap is gone too.
    tx: mpsc::Sender<Intake>,
}

impl Alerts {
    /// New rules (SIGHUP): the engine takes them now, the tap at its next chunk.
    pub async fn reload(&self, rules: Arc<[Rule]>) {
        let generation = match self.current.rules.lock() {
            Ok(mut r) => {
                *r = rules.clone();
                self.current.generation.fetch_add(1, std::sync::atomic::Ordering::AcqRel) + 1
            }
            Err(_) => return,
        };
        let _ = self.tx.send(Intake::Rules { generation, rules }).await;
    }

    /// Another tap into the same engine (one per client's batcher). A new
    /// tap takes the current rules at its first chunk.
    pub fn tap(&self) -> AlertTap {
        let rules = self.current.rules.lock().map(|r| r.clone()).unwrap_or_else(|p| p.into_inner().clone());
        AlertTap::new(rules, self.current.clone(), self.tx.clone())
    }

    /// Waits up to `deadline` for the engine to send what is pending (it starts
    /// once the tap is dropped, when the batcher ends), then cancels the rest.
    pub async fn finish(self, deadline: Duration) {
        let Self { mut task, cancel, tx, .. } = self;
        drop(tx);
        if tokio::time::timeout(deadline, &mut task).await.is_err() {
            tracing::warn!(timeout = ?deadline, "alert updates still unsent at shutdown; giving up on them");
            cancel.cancel();
            let _ = tokio::time::timeout(Duration::from_secs(2), &mut task).await;
        }
    }
}

/// Starts the engine with the rules compiled by `plan` (none is fine: a
/// reload may add some), showing its groups and sends in `status`; returns
/// the tap for the batcher.
pub fn start(
    rules: Arc<[Rule]>,
    config: &Config,
    status: Arc<crate::status::Status>,
) -> anyhow::Result<(AlertTap, Alerts)> {
    let sender = Sender::new(&config.client, RetryPolicy::of(&config.client))?;
    let deliver = Arc::new(Network { sender: Arc::new(sender) });
    let (tx, rx) = mpsc::channel(QUEUE_CAPACITY);
    let cancel = CancellationToken::new();
    let engine = Engine::new(rules.clone(), deliver, cancel.clone(), status);
    let task = tokio::spawn(engine.run(rx));
    if !rules.is_empty() {
        tracing::info!(rules = rules.len(), "alert rules loaded");
    }
    let current = Arc::new(Current { generation: 0.into(), rules: std::sync::Mutex::new(rules.clone()) });
    Ok((AlertTap::new(rules, current.clone(), tx.clone()), Alerts { task, cancel, current, tx }))
}

/// Deliveries over the network.
struct Network {
    sender: Arc<Sender>,
}

impl Deliver for Network {
    fn webhook(&self, rule: &Rule, payload: Payload, cancel: CancellationToken) -> Delivery {
        let sender = self.sender.clone();
        let (name, webhook) = (rule.name.clone(), rule.webhook.clone());
        Box::pin(async move { sender.post_webhook(&name, &webhook, &payload, &cancel).await })
    }

    fn annotate(&self, note: Annotation<'_>, cancel: CancellationToken) -> Delivery {
        let Annotation { rule, payload, labels, time_ms } = note;
        let sender = self.sender.clone();
        let text = format!("{}\n{}", payload.title, payload.message);
        let mut tags = vec!["tailship".to_string(), rule.name.clone()];
        tags.extend(labels.iter().map(|(k, v)| format!("{k}:{v}")));
        let (name, annotations) = (rule.name.clone(), rule.annotations.clone());
        Box::pin(async move {
            let Some(a) = annotations else { return sender::Outcome::Delivered };
            let mut tags = tags;
            tags.extend(a.tags.iter().cloned());
            sender.post_annotation(&name, &a, &text, tags, time_ms, &cancel).await
        })
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::config::{AlertConfig, AlertSelector};
    use crate::queue::Interner;
    use crate::util::Secret;

    fn rule(name: &str, job: &str) -> Rule {
        Rule::compile(&AlertConfig {
            name: name.into(),
            selector: AlertSelector::Labels([("job".to_string(), job.to_string())].into()),
            pattern: "ERROR".into(),
            webhook_url: Some(Secret::new("http://h/integrations/v1/formatted_webhook/k/")),
            ..Default::default()
        })
        .unwrap()
    }

    #[test]
    fn the_tap_folds_a_chunk_per_rule_and_stream_and_counts_what_a_full_queue_drops() {
        let rules: Arc<[Rule]> = vec![rule("tap-a", "app"), rule("tap-d", "db")].into();
        let (tx, mut rx) = mpsc::channel(1);
        let current = Arc::new(Current { generation: 0.into(), rules: std::sync::Mutex::new(rules.clone()) });
        let mut tap = AlertTap::new(rules, current, tx);
        let i = Interner::new();
        let app = i.intern(None, BTreeMap::from([("job".to_string(), "app".to_string())]));
        let other = i.intern(None, BTreeMap::from([("job".to_string(), "web".to_string())]));
        tap.observe(&app, "ERROR 1");
        tap.observe(&app, "fine");
        tap.observe(&other, "ERROR not watched");
        tap.observe(&app, "ERROR 2 longer");
        tap.observe(&app, "ERROR 3");
        tap.flush();
        let Ok(Intake::Match(m)) = rx.try_recv() else { panic!("a match") };
        assert_eq!((m.rule, m.count, &*m.first_line, m.last_line.as_deref()), (0, 3, "ERROR 1", Some("ERROR 3")));
        assert!(rx.try_recv().is_err());
        // The queue (capacity 1) is full after one message: the next chunk's lines are counted as dropped.
        tap.observe(&app, "ERROR 4");
        tap.flush();
        tap.observe(&app, "ERROR 5");
        tap.observe(&app, "ERROR 6");
        tap.flush();
        let m = Metrics::get();
        assert_eq!(m.alert_matches.with_label_values(&["tap-a"]).get(), 6);
        assert_eq!(m.alert_updates_dropped.with_label_values(&["tap-a", "queue_full"]).get(), 2);
        assert_eq!(m.alert_matches.with_label_values(&["tap-d"]).get(), 0);
        assert_eq!(tap.streams.len(), 2, "selection cached per stream");
    }
}
