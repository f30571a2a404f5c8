//! The alert engine: one task that owns every alert group, its timers and the
//! limits, and hands finished updates to delivery tasks.
//!
//! How it works, in plain words. Matches arrive from the tap on a bounded
//! channel. Each match belongs to a group (its `alert_uid`, see `rule.rs`)
//! and adds to the group's *pending* count, remembering the first and last
//! matching line. A group with pending matches is *due*:
//!
//! * at once when the service does not know it yet (its first `alerting`);
//! * `group_interval` after its previous update otherwise, so a burst of
//!   matches becomes one update ("37 matching lines since 21:04:05");
//! * an open group with nothing pending is due for `state: ok` when its last
//!   match is `resolve_after` old.
//!
//! A due group is sent when the rule's `max_per_minute` window and the
//! webhook's limiter both allow; otherwise it waits (and keeps folding).
//! One request per group is in flight at a time, so an update and its resolve
//! never overtake each other, and at most [`MAX_IN_FLIGHT`] requests run at
//! once: with a hanging webhook the groups just keep folding, the intake keeps
//! draining, and nothing waits on the shipping path.
//!
//! When the intake closes (the batcher ended at shutdown) the engine drains:
//! pending updates are due at once (the per-rule limit is skipped, the
//! webhook's is not), open groups are resolved when `resolve_on_shutdown`, and
//! the task ends when nothing is left. The caller bounds this with the rest of
//! `shutdown_timeout` and cancels what remains, counting it.
//!
//! The engine reads tokio's clock, so tests drive it with paused time.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use tokio::sync::mpsc;
use tokio::task::JoinSet;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::limit::{RuleWindow, WebhookLimiter};
use super::rule::Rule;
use super::sender::{Outcome, Payload, STATE_ALERTING, STATE_OK};
use super::template::Context;
use crate::metrics::Metrics;
use crate::queue::StreamRef;
use crate::status::Status;
use crate::util::sleep_until_opt;

/// Webhook and annotation requests in flight at once, over all rules.
pub const MAX_IN_FLIGHT: usize = 8;
/// Alert groups held at once; matches of further new groups are dropped and counted.
pub const MAX_GROUPS: usize = 10_000;

/// Consecutive matching lines of one rule and stream, as the tap hands them over.
#[derive(Debug)]
pub struct Match {
    /// Index of the rule in the rule set of `generation`.
    pub rule: u16,
    /// Which rule set the tap used (0 at start, one more at each reload).
    pub generation: u32,
    pub stream: StreamRef,
    /// Matching lines this stands for (at least 1).
    pub count: u64,
    /// The first and last of them, cut to [`super::MAX_ALERT_LINE`] bytes
    /// (`last_line` is `None` when `count` is 1).
    pub first_line: Box<str>,
    pub last_line: Option<Box<str>>,
}

/// A future delivery.
pub type Delivery = Pin<Box<dyn Future<Output = Outcome> + Send>>;

/// The seam between the engine and the network (tests record instead).
pub trait Deliver: Send + Sync + 'static {
    fn webhook(&self, rule: &Rule, payload: Payload, cancel: CancellationToken) -> Delivery;
    fn annotate(&self, note: Annotation<'_>, cancel: CancellationToken) -> Delivery;
}

/// An annotation to post when a group opens.
pub struct Annotation<'a> {
    pub rule: &'a Rule,
    pub payload: &'a Payload,
    /// The group's labels.
    pub labels: &'a [(String, String)],
    /// When the group's window started (Unix milliseconds).
    pub time_ms: i64,
}

/// The labels that identify a group, sorted by name.
type GroupLabels = Arc<[(String, String)]>;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Action {
    Alerting,
    Resolve,
    Remove,
}

#[derive(Debug)]
struct Group {
    rule: usize,
    labels: GroupLabels,
    pending: u64,
    total: u64,
    first_line: String,
    last_line: String,
    window_start: Instant,
    window_start_ms: i64,
    opened_ms: i64,
    last_match: Instant,
    last_match_ms: i64,
    last_sent: Option<Instant>,
    /// An `alerting` update was sent: the service shows this group as open.
    open: bool,
    in_flight: bool,
    /// Earliest time the next request may go (set when a limit said wait).
    not_before: Option<Instant>,
}

impl Group {
    /// What this group wants to do next, and from when.
    fn next(&self, rule: &Rule, draining: bool) -> Option<(Instant, Action)> {
        if self.in_flight {
            return None;
        }
        let (due, action) = if self.pending > 0 {
            match self.last_sent {
                Some(sent) if self.open && !draining => (sent + rule.group_interval, Action::Alerting),
                _ => (self.window_start, Action::Alerting),
            }
        } else if self.open {
            if draining {
                if !rule.resolve_on_shutdown {
                    return None;
                }
                (self.last_match, Action::Resolve)
            } else {
                (self.last_match + rule.resolve_after, Action::Resolve)
            }
        } else {
            return Some((self.last_match, Action::Remove));
        };
        Some((self.not_before.map_or(due, |nb| nb.max(due)), action))
    }
}

/// What a finished delivery task reports.
struct Done {
    uid: Option<Arc<str>>,
    rule: usize,
    state: &'static str,
    outcome: Outcome,
}

/// What reaches the engine from the tap: matches, in order with rule changes.
#[derive(Debug)]
pub enum Intake {
    Match(Match),
    /// A reload (SIGHUP) changed the rules: matches that follow are of this
    /// generation's rule set.
    Rules {
        generation: u32,
        rules: Arc<[Rule]>,
    },
}

/// The engine's state; see the module header.
pub struct Engine {
    /// The rules of the current generation, then rules removed by a reload
    /// whose groups are still open (they resolve now).
    rules: Arc<[Rule]>,
    /// How many rules of `rules` are active (the tap's rule set).
    active: usize,
    generation: u32,
    /// The previous generation's active rules: the tap may still send matches
    /// made with them, read by rule name.
    previous: Option<(u32, Arc<[Rule]>)>,
    deliver: Arc<dyn Deliver>,
    windows: Vec<RuleWindow>,
    /// Index into `limiters`, per rule.
    limiter_of: Vec<usize>,
    limiters: Vec<WebhookLimiter>,
    groups: HashMap<Arc<str>, Group>,
    /// `(rule, stream pointer)` -> (the stream, kept alive so the pointer stays its own; uid; group labels).
    uids: HashMap<(u16, usize), (StreamRef, Arc<str>, GroupLabels)>,
    tasks: JoinSet<Done>,
    draining: bool,
    cancel: CancellationToken,
    /// Where open groups and the last webhook calls are shown (the agent's status).
    status: Arc<Status>,
}

impl Engine {
    pub fn new(rules: Arc<[Rule]>, deliver: Arc<dyn Deliver>, cancel: CancellationToken, status: Arc<Status>) -> Self {
        let (limiter_of, limiters) = limiters(&rules);
        let windows = rules.iter().map(|r| RuleWindow::new(r.max_per_minute)).collect();
        Self {
            active: rules.len(),
            generation: 0,
            previous: None,
            rules,
            deliver,
            windows,
            limiter_of,
            limiters,
            groups: HashMap::new(),
            uids: HashMap::new(),
            tasks: JoinSet::new(),
            draining: false,
            cancel,
            status,
        }
    }

    /// A reload's rules (`generation`): groups of rules that stay (by name)
    /// keep their state and take the new settings; groups of removed rules
    /// resolve now if they are open.
    fn reload(&mut self, generation: u32, new: Arc<[Rule]>, now: Instant) {
        let mut combined: Vec<Rule> = new.iter().cloned().collect();
        let mut windows: Vec<RuleWindow> = Vec::new();
        let old_windows: HashMap<&str, &RuleWindow> =
            self.rules.iter().map(|r| r.name.as_str()).zip(self.windows.iter()).collect();
        for r in new.iter() {
            windows.push(
                old_windows.get(r.name.as_str()).map_or_else(|| RuleWindow::new(r.max_per_minute), |w| (*w).clone()),
            );
        }
        let mut removed = 0;
        for g in self.groups.values_mut() {
            let old = &self.rules[g.rule];
            match combined.iter().position(|r| r.name == old.name) {
                Some(i) => g.rule = i,
                None => {
                    // Its rule is gone: resolve the group now (if open), under the old settings.
                    combined.push(old.clone());
                    windows.push(RuleWindow::new(old.max_per_minute));
                    g.rule = combined.len() - 1;
                    g.pending = 0;
                    g.last_match = now.checked_sub(old.resolve_after).unwrap_or(now);
                    g.not_before = None;
                    removed += 1;
                }
            }
        }
        let rules: Arc<[Rule]> = combined.into();
        let (limiter_of, limiters) = limiters(&rules);
        if !new.is_empty() || self.active > 0 {
            tracing::info!(rules = new.len(), groups_resolving = removed, "alert rules reloaded");
        }
        self.previous = Some((self.generation, self.rules[..self.active].to_vec().into()));
        self.active = new.len();
        self.generation = generation;
        self.rules = rules;
        self.windows = windows;
        self.limiter_of = limiter_of;
        self.limiters = limiters;
        self.uids.clear();
    }

    /// Runs until the intake closes and everything due was sent, or `cancel` fires.
    pub async fn run(mut self, mut rx: mpsc::Receiver<Intake>) {
        let mut buf = Vec::with_capacity(256);
        let mut next_wake: Option<Instant> = None;
        let mut rescan = true;
        loop {
            let now = Instant::now();
            if rescan || next_wake.is_some_and(|w| w <= now) {
                next_wake = self.scan(now);
                rescan = false;
            }
            if self.draining && self.tasks.is_empty() && next_wake.is_none() {
                break;
            }
            tokio::select! {
                biased;
                _ = self.cancel.cancelled() => {
                    self.give_up();
                    return;
                }
                Some(done) = self.tasks.join_next(), if !self.tasks.is_empty() => {
                    if let Ok(done) = done {
                        self.on_done(done);
                    }
                    rescan = true;
                }
                n = rx.recv_many(&mut buf, 256), if !self.draining => {
                    if n == 0 {
                        // Shutdown: what a rule's max_per_minute held back goes now
                        // (the window is not checked while draining); only the
                        // webhook's own rate limit still paces the last updates.
                        self.draining = true;
                        for g in self.groups.values_mut() {
                            g.not_before = None;
                        }
                        rescan = true;
                        continue;
                    }
                    let now = Instant::now();
                    let now_ms = (crate::util::now_ns() / 1_000_000) as i64;
                    for item in buf.drain(..) {
                        match item {
                            Intake::Match(m) => {
                                if let Some(due) = self.on_match(m, now, now_ms) {
                                    next_wake = Some(next_wake.map_or(due, |w| w.min(due)));
                                }
                            }
                            Intake::Rules { generation, rules } => {
                                self.reload(generation, rules, now);
                                rescan = true;
                            }
                        }
                    }
                }
                _ = sleep_until_opt(next_wake) => {}
            }
        }
        self.update_gauges();
    }

    /// Folds one match into its group; returns when that group is next due.
    fn on_match(&mut self, m: Match, now: Instant, now_ms: i64) -> Option<Instant> {
        let rule_ix = if m.generation == self.generation {
            m.rule as usize
        } else {
            // Made with the previous rule set (just before a reload): the rule by its name.
            let (g, prev) = self.previous.as_ref()?;
            let name = &prev.get(m.rule as usize).filter(|_| *g == m.generation)?.name;
            self.rules[..self.active].iter().position(|r| &r.name == name)?
        };
        if rule_ix >= self.active {
            return None;
        }
        let rule = self.rules.get(rule_ix)?;
        let key = (rule_ix as u16, Arc::as_ptr(&m.stream) as usize);
        let (_, uid, labels) = self.uids.entry(key).or_insert_with(|| {
            let uid: Arc<str> = Arc::from(rule.alert_uid(&m.stream.labels));
            let labels: GroupLabels = Arc::from(rule.group_labels(&m.stream.labels));
            (m.stream.clone(), uid, labels)
        });
        let g = match self.groups.get_mut(&**uid) {
            Some(g) => g,
            None => {
                if self.groups.len() >= MAX_GROUPS {
                    Metrics::get().alert_updates_dropped.with_label_values(&[&rule.name, "too_many_groups"]).inc();
                    return None;
                }
                let g = Group {
                    rule: rule_ix,
                    labels: labels.clone(),
                    pending: 0,
                    total: 0,
                    first_line: String::new(),
                    last_line: String::new(),
                    window_start: now,
                    window_start_ms: now_ms,
                    opened_ms: now_ms,
                    last_match: now,
                    last_match_ms: now_ms,
                    last_sent: None,
                    open: false,
                    in_flight: false,
                    not_before: None,
                };
                self.groups.entry(uid.clone()).or_insert(g)
            }
        };
        if g.pending == 0 {
            g.first_line = m.first_line.to_string();
            g.window_start = now;
            g.window_start_ms = now_ms;
            if !g.open && !g.in_flight {
                g.opened_ms = now_ms;
                g.total = 0;
            }
        }
        g.pending += m.count;
        g.total += m.count;
        g.last_line = m.last_line.unwrap_or(m.first_line).into();
        g.last_match = now;
        g.last_match_ms = now_ms;
        g.next(rule, self.draining).map(|(due, _)| due)
    }

    /// Sends what is due at `now`; returns the next time something will be due.
    fn scan(&mut self, now: Instant) -> Option<Instant> {
        let mut next_wake: Option<Instant> = None;
        let mut remove = Vec::new();
        let mut in_flight = self.tasks.len();
        let now_ms = (crate::util::now_ns() / 1_000_000) as i64;
        let mut due: Vec<(Arc<str>, Action)> = Vec::new();
        for (uid, g) in &mut self.groups {
            let rule = &self.rules[g.rule];
            let Some((at, action)) = g.next(rule, self.draining) else { continue };
            if action == Action::Remove {
                remove.push(uid.clone());
                continue;
            }
            if at > now {
                next_wake = Some(next_wake.map_or(at, |w| w.min(at)));
                continue;
            }
            if in_flight >= MAX_IN_FLIGHT {
                // A finishing request triggers the next scan.
                continue;
            }
            if !self.draining {
                if let Err(wait) = self.windows[g.rule].check(now) {
                    g.not_before = Some(now + wait);
                    next_wake = Some(next_wake.map_or(now + wait, |w| w.min(now + wait)));
                    continue;
                }
            }
            if let Err(wait) = self.limiters[self.limiter_of[g.rule]].try_take() {
                g.not_before = Some(now + wait);
                next_wake = Some(next_wake.map_or(now + wait, |w| w.min(now + wait)));
                continue;
            }
            self.windows[g.rule].record(now);
            g.not_before = None;
            in_flight += 1;
            due.push((uid.clone(), action));
        }
        for uid in remove {
            self.groups.remove(&uid);
        }
        for (uid, action) in due {
            self.dispatch(uid, action, now, now_ms);
        }
        self.update_gauges();
        next_wake
    }

    fn dispatch(&mut self, uid: Arc<str>, action: Action, now: Instant, now_ms: i64) {
        let Some(g) = self.groups.get_mut(&uid) else { return };
        let rule = &self.rules[g.rule];
        let state = if action == Action::Resolve { STATE_OK } else { STATE_ALERTING };
        let ctx = Context {
            rule: &rule.name,
            count: g.pending,
            total: g.total,
            first_line: &g.first_line,
            last_line: &g.last_line,
            since_ms: g.window_start_ms,
            last_match_ms: g.last_match_ms,
            opened_ms: g.opened_ms,
            now_ms,
            labels: &g.labels,
            alert_uid: &uid,
            state,
        };
        let (title, message) = if action == Action::Resolve {
            (rule.resolved_title.render(&ctx), rule.resolved_message.render(&ctx))
        } else {
            (rule.title.render(&ctx), rule.message.render(&ctx))
        };
        let payload = Payload {
            alert_uid: uid.to_string(),
            title,
            message,
            state,
            link_to_upstream_details: rule.link.as_ref().map(|t| t.render(&ctx)).unwrap_or_default(),
            image_url: rule.image_url.as_ref().map(|t| t.render(&ctx)),
        };
        let opening = action == Action::Alerting && !g.open;
        if opening && rule.annotations.is_some() {
            let note = Annotation { rule, payload: &payload, labels: &g.labels, time_ms: g.window_start_ms };
            let fut = self.deliver.annotate(note, self.cancel.clone());
            let r = g.rule;
            self.tasks.spawn(async move { Done { uid: None, rule: r, state: "annotation", outcome: fut.await } });
        }
        if action == Action::Alerting {
            g.pending = 0;
            g.open = true;
            g.last_sent = Some(now);
        }
        g.in_flight = true;
        let fut = self.deliver.webhook(rule, payload, self.cancel.clone());
        let r = g.rule;
        self.tasks.spawn(async move { Done { uid: Some(uid), rule: r, state, outcome: fut.await } });
    }

    fn on_done(&mut self, d: Done) {
        let m = Metrics::get();
        let name = self.rules.get(d.rule).map(|r| r.name.as_str()).unwrap_or("");
        let Some(uid) = d.uid else {
            // Annotations are counted by the sender; nothing waits on them.
            return;
        };
        match &d.outcome {
            Outcome::Delivered => m.alerts_sent.with_label_values(&[name, d.state]).inc(),
            Outcome::Failed { reason } => m.alert_updates_dropped.with_label_values(&[name, reason]).inc(),
            Outcome::Cancelled => m.alert_updates_dropped.with_label_values(&[name, "shutdown"]).inc(),
        }
        let error = match &d.outcome {
            Outcome::Delivered => None,
            Outcome::Failed { reason } => Some(*reason),
            Outcome::Cancelled => Some("shutdown"),
        };
        let labels = self.groups.get(&uid).map(|g| g.labels.clone());
        self.status.alert_sent(name, &uid, labels.as_deref().unwrap_or(&[]), d.state, error);
        let Some(g) = self.groups.get_mut(&uid) else { return };
        g.in_flight = false;
        if d.state == STATE_OK {
            if g.pending > 0 {
                // Matched again while the resolve was on its way: a new alert.
                g.open = false;
                g.last_sent = None;
                g.total = g.pending;
                g.opened_ms = g.window_start_ms;
            } else {
                self.groups.remove(&uid);
            }
        }
    }

    /// Counts what cancellation leaves unsent.
    fn give_up(&mut self) {
        let m = Metrics::get();
        for g in self.groups.values() {
            let name = &self.rules[g.rule].name;
            if g.pending > 0 || g.in_flight {
                m.alert_updates_dropped.with_label_values(&[name, "shutdown"]).inc();
            }
        }
        self.tasks.abort_all();
        if self.groups.values().any(|g| g.pending > 0) {
            tracing::warn!("shutdown_timeout reached with alert updates unsent");
        }
        self.groups.clear();
        self.status.alerts_cleared();
        self.update_gauges();
    }

    fn update_gauges(&self) {
        let m = Metrics::get();
        let mut open = vec![0i64; self.rules.len()];
        for g in self.groups.values() {
            if g.open {
                open[g.rule] += 1;
            }
        }
        for (r, n) in self.rules.iter().zip(open) {
            m.alert_groups_open.with_label_values(&[&r.name]).set(n);
        }
    }
}

/// One limiter per distinct webhook URL (the smallest limit of the rules
/// sharing it applies), and which limiter each rule uses.
fn limiters(rules: &[Rule]) -> (Vec<usize>, Vec<WebhookLimiter>) {
    let mut urls: Vec<(&str, u32)> = Vec::new();
    let mut limiter_of = Vec::new();
    for r in rules.iter() {
        let u = r.webhook.expose();
        match urls.iter().position(|(x, _)| *x == u) {
            Some(i) => {
                urls[i].1 = urls[i].1.min(r.webhook_limit);
                limiter_of.push(i);
            }
            None => {
                urls.push((u, r.webhook_limit));
                limiter_of.push(urls.len() - 1);
            }
        }
    }
    (limiter_of, urls.iter().map(|(_, l)| WebhookLimiter::new(*l)).collect())
}

#[cfg(test)]
mod tests;
