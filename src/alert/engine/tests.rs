//! The engine under tokio's paused clock: grouping, resolve timers, limits, retries.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Duration;

use super::*;
use crate::config::AlertConfig;
use crate::queue::Interner;
use crate::util::{HumanDuration, Secret};

/// Records every payload with the (paused) time it was sent.
#[derive(Default)]
struct Recorder {
    sent: Mutex<Vec<(Duration, Payload)>>,
    annotations: Mutex<Vec<Vec<(String, String)>>>,
    delay: Duration,
    start: Mutex<Option<Instant>>,
}

impl Deliver for Recorder {
    fn webhook(&self, _rule: &Rule, payload: Payload, _cancel: CancellationToken) -> Delivery {
        let start = *self.start.lock().unwrap().get_or_insert_with(Instant::now);
        self.sent.lock().unwrap().push((Instant::now() - start, payload));
        let delay = self.delay;
        Box::pin(async move {
            tokio::time::sleep(delay).await;
            Outcome::Delivered
        })
    }

    fn annotate(&self, note: Annotation<'_>, _: CancellationToken) -> Delivery {
        let labels = note.labels;
        self.annotations.lock().unwrap().push(labels.to_vec());
        Box::pin(async { Outcome::Delivered })
    }
}

fn rule(f: impl FnOnce(&mut AlertConfig)) -> Rule {
    let mut c = AlertConfig {
        name: "errs".into(),
        pattern: "ERROR".into(),
        webhook_url: Some(Secret::new("http://h:1/integrations/v1/formatted_webhook/k/")),
        group_interval: HumanDuration::secs(60),
        resolve_after: HumanDuration::secs(300),
        max_per_minute: 100,
        ..Default::default()
    };
    f(&mut c);
    Rule::compile(&c).unwrap()
}

fn stream(i: &Interner, file: &str) -> StreamRef {
    let mut l = BTreeMap::new();
    l.insert("job".to_string(), "app".to_string());
    l.insert("filename".to_string(), file.to_string());
    i.intern(None, l)
}

struct Harness {
    tx: Option<mpsc::Sender<Intake>>,
    rec: Arc<Recorder>,
    task: tokio::task::JoinHandle<()>,
}

fn start(rules: Vec<Rule>, delay: Duration) -> Harness {
    let rec = Arc::new(Recorder { delay, ..Default::default() });
    let (tx, rx) = mpsc::channel(1024);
    let engine = Engine::new(rules.into(), rec.clone(), CancellationToken::new(), Default::default());
    let task = tokio::spawn(engine.run(rx));
    Harness { tx: Some(tx), rec, task }
}

impl Harness {
    async fn send(&self, s: &StreamRef, line: &str) {
        let m = Match { rule: 0, generation: 0, stream: s.clone(), count: 1, first_line: line.into(), last_line: None };
        self.tx.as_ref().unwrap().send(Intake::Match(m)).await.unwrap();
        tokio::task::yield_now().await;
    }
    fn sent(&self) -> Vec<(Duration, Payload)> {
        self.rec.sent.lock().unwrap().clone()
    }
}

async fn settle() {
    for _ in 0..10 {
        tokio::task::yield_now().await;
    }
}

#[tokio::test(start_paused = true)]
async fn first_match_at_once_then_one_folded_update_per_interval_then_resolve() {
    let h = start(vec![rule(|_| {})], Duration::ZERO);
    let i = Interner::new();
    let s = stream(&i, "/a");
    h.send(&s, "ERROR first").await;
    settle().await;
    assert_eq!(h.sent().len(), 1);
    assert_eq!(h.sent()[0].1.state, "alerting");
    assert_eq!(h.sent()[0].1.title, "errs: 1 matching line");
    // 36 more over 30 s: folded into one update at t=60s.
    for n in 0..36 {
        tokio::time::advance(Duration::from_millis(800)).await;
        h.send(&s, &format!("ERROR {n}")).await;
    }
    settle().await;
    assert_eq!(h.sent().len(), 1);
    tokio::time::sleep(Duration::from_secs(32)).await;
    settle().await;
    let sent = h.sent();
    assert_eq!(sent.len(), 2, "{sent:?}");
    assert_eq!(sent[1].0, Duration::from_secs(60));
    assert_eq!(sent[1].1.title, "errs: 36 matching lines");
    assert!(sent[1].1.message.contains("first: ERROR 0") && sent[1].1.message.contains("last: ERROR 35"));
    assert!(sent[1].1.message.contains("(37 since the alert opened)"));
    assert_eq!(sent[0].1.alert_uid, sent[1].1.alert_uid);
    // No match for resolve_after (300 s after the last match at ~28.8 s): resolved once.
    tokio::time::sleep(Duration::from_secs(400)).await;
    settle().await;
    let sent = h.sent();
    assert_eq!(sent.len(), 3, "{sent:?}");
    assert_eq!(sent[2].1.state, "ok");
    assert_eq!(sent[2].1.alert_uid, sent[0].1.alert_uid);
    assert_eq!(sent[2].0, Duration::from_millis(28_800) + Duration::from_secs(300));
    // A new match after the resolve opens a new alert at once, same uid.
    h.send(&s, "ERROR again").await;
    settle().await;
    let sent = h.sent();
    assert_eq!(sent.len(), 4);
    assert_eq!((sent[3].1.state, sent[3].1.alert_uid.as_str()), ("alerting", sent[0].1.alert_uid.as_str()));
    assert!(sent[3].1.message.contains("(1 since the alert opened)"), "{}", sent[3].1.message);
}

#[tokio::test(start_paused = true)]
async fn streams_are_separate_groups_unless_group_by_joins_them() {
    let i = Interner::new();
    let (a, b) = (stream(&i, "/a"), stream(&i, "/b"));
    let h = start(vec![rule(|_| {})], Duration::ZERO);
    h.send(&a, "ERROR").await;
    h.send(&b, "ERROR").await;
    settle().await;
    let sent = h.sent();
    assert_eq!(sent.len(), 2);
    assert_ne!(sent[0].1.alert_uid, sent[1].1.alert_uid);

    let h = start(vec![rule(|c| c.group_by = Some(vec!["job".into()]))], Duration::ZERO);
    h.send(&a, "ERROR").await;
    h.send(&b, "ERROR").await;
    settle().await;
    assert_eq!(h.sent().len(), 1);
    assert!(h.sent()[0].1.message.contains(r#"{job="app"}"#));
}

#[tokio::test(start_paused = true)]
async fn max_per_minute_defers_and_folds_never_drops() {
    let i = Interner::new();
    let streams: Vec<_> = (0..5).map(|n| stream(&i, &format!("/{n}"))).collect();
    let h = start(vec![rule(|c| c.max_per_minute = 2)], Duration::ZERO);
    for s in &streams {
        h.send(s, "ERROR").await;
    }
    settle().await;
    assert_eq!(h.sent().len(), 2);
    tokio::time::sleep(Duration::from_secs(59)).await;
    settle().await;
    assert_eq!(h.sent().len(), 2);
    tokio::time::sleep(Duration::from_secs(2)).await;
    settle().await;
    assert_eq!(h.sent().len(), 4);
    tokio::time::sleep(Duration::from_secs(60)).await;
    settle().await;
    let sent = h.sent();
    assert_eq!(sent.len(), 5);
    let mut uids: Vec<_> = sent.iter().map(|(_, p)| p.alert_uid.clone()).collect();
    uids.sort();
    uids.dedup();
    assert_eq!(uids.len(), 5, "every group got its alert");
}

#[tokio::test(start_paused = true)]
async fn one_request_per_group_in_flight_and_shutdown_flushes_and_resolves() {
    let i = Interner::new();
    let s = stream(&i, "/a");
    let mut h = start(vec![rule(|c| c.resolve_on_shutdown = true)], Duration::from_secs(5));
    h.send(&s, "ERROR 1").await;
    settle().await;
    for n in 0..3 {
        h.send(&s, &format!("ERROR {n}")).await;
    }
    // Close the intake: pending goes out after the in-flight request, then the resolve.
    h.tx.take();
    h.task.await.unwrap();
    let sent = h.rec.sent.lock().unwrap().clone();
    let states: Vec<_> = sent.iter().map(|(t, p)| (t.as_secs(), p.state, p.title.clone())).collect();
    assert_eq!(
        states,
        vec![
            (0, "alerting", "errs: 1 matching line".to_string()),
            (5, "alerting", "errs: 3 matching lines".to_string()),
            (10, "ok", "errs: resolved".to_string())
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn annotation_once_when_a_group_opens() {
    let i = Interner::new();
    let s = stream(&i, "/a");
    let h = start(
        vec![rule(|c| {
            c.annotations = Some(crate::config::AnnotationsConfig {
                url: "http://g:3000".into(),
                token: Some(Secret::new("t")),
                ..Default::default()
            })
        })],
        Duration::ZERO,
    );
    h.send(&s, "ERROR").await;
    settle().await;
    tokio::time::sleep(Duration::from_secs(61)).await;
    h.send(&s, "ERROR").await;
    settle().await;
    assert_eq!(h.sent().len(), 2);
    assert_eq!(h.rec.annotations.lock().unwrap().len(), 1);
}

#[tokio::test(start_paused = true)]
async fn updates_held_back_by_max_per_minute_go_out_at_shutdown_with_the_resolves() {
    let i = Interner::new();
    let streams: Vec<_> = (0..3).map(|n| stream(&i, &format!("/{n}"))).collect();
    let mut h = start(
        vec![rule(|c| {
            c.max_per_minute = 1;
            c.resolve_on_shutdown = true;
        })],
        Duration::ZERO,
    );
    for s in &streams {
        h.send(s, "ERROR").await;
    }
    settle().await;
    assert_eq!(h.sent().len(), 1, "one a minute");
    // Shutdown: the intake closes. What the window held back goes now, not a minute later.
    let started = Instant::now();
    drop(h.tx.take());
    tokio::time::timeout(Duration::from_secs(5), &mut h.task).await.expect("drained within 5 s").unwrap();
    assert!(started.elapsed() < Duration::from_secs(5));
    let sent = h.sent();
    let alerting = sent.iter().filter(|(_, p)| p.state == "alerting").count();
    let resolved = sent.iter().filter(|(_, p)| p.state == "ok").count();
    assert_eq!((alerting, resolved), (3, 3), "{sent:?}");
}

#[tokio::test(start_paused = true)]
async fn a_reload_keeps_groups_of_unchanged_rules_and_resolves_those_of_removed_rules() {
    let i = Interner::new();
    let s = stream(&i, "/a");
    let h = start(vec![rule(|_| {}), rule(|c| c.name = "gone".into())], Duration::ZERO);
    h.send(&s, "ERROR one").await;
    let m = Match { rule: 1, generation: 0, stream: s.clone(), count: 1, first_line: "ERROR".into(), last_line: None };
    h.tx.as_ref().unwrap().send(Intake::Match(m)).await.unwrap();
    settle().await;
    assert_eq!(h.sent().len(), 2);
    // Reload: "errs" stays (now with another interval), "gone" is removed, "new" added.
    let rules: Arc<[Rule]> =
        vec![rule(|c| c.group_interval = HumanDuration::secs(10)), rule(|c| c.name = "new".into())].into();
    h.tx.as_ref().unwrap().send(Intake::Rules { generation: 1, rules }).await.unwrap();
    settle().await;
    let sent = h.sent();
    assert_eq!(sent.len(), 3, "the removed rule's group resolves at once: {sent:?}");
    assert_eq!(sent[2].1.state, "ok");
    assert!(sent[2].1.title.contains("gone") || sent[2].1.alert_uid != sent[0].1.alert_uid);
    // A match made with the old rule set (generation 0, index 0 = "errs") is read by name,
    // folds into the open group of "errs" and goes out after the new 10 s interval.
    let m =
        Match { rule: 0, generation: 0, stream: s.clone(), count: 1, first_line: "ERROR two".into(), last_line: None };
    h.tx.as_ref().unwrap().send(Intake::Match(m)).await.unwrap();
    tokio::time::sleep(Duration::from_secs(11)).await;
    settle().await;
    let sent = h.sent();
    assert_eq!(sent.len(), 4, "{sent:?}");
    assert_eq!((sent[3].1.state, &sent[3].1.alert_uid), ("alerting", &sent[0].1.alert_uid), "same group, still open");
}
