//! Containers of an Engine reached over the network (`docker.host` of
//! `tcp://`, `http://` or `https://`): their logs are not on this machine's
//! disk, so each is read through the API, as Promtail's docker target does.
//!
//! How it works. A task keeps the container list current (the event stream,
//! a full list every `refresh_interval`, again whenever a reader ends) and
//! runs one reader per container the relabel rules keep: `GET
//! /containers/{id}/logs?follow=1&stdout=1&stderr=1&timestamps=1&since=...`,
//! its messages (see [`super::stream`]) given to the stages as the lines of
//! Docker's json-file log would be, so the `docker` stage does what it does
//! for files (the message, Docker's time, `stream`, long lines joined). A
//! stopped container is read to the end of its log and its reader ends; it
//! starts again when the container does. A removed container's reader stops.
//!
//! Where a reader is, is a *cursor*: the Docker time (ns) of the last message
//! and how many messages in a row had that time. It is kept in the positions
//! store as a journal's cursor is (under the path `docker-container:<id>`):
//! saved only once every line up to it was acknowledged (or dropped on
//! purpose). A reader starts again (agent restart, reload, lost connection)
//! from one second before its cursor and skips what it reads up to the
//! cursor's message, so lines stderr and stdout interleaved within that
//! second are neither lost nor sent twice. The guarantee is the files' one:
//! at least once; a clean stop and start sends no line twice, a `kill -9`
//! may send again the batches in flight. It holds while the Engine still
//! has the cursor's message (a `max-file` rotation that drops it while the
//! agent is down loses what went with it; the skip ends at the first message
//! over a second after the cursor). Without a saved cursor a container is
//! read from its first message, or, with `start_at = "end"`, those running
//! when the agent starts from that moment.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::stream::{since_param, Demux};
use crate::client::backoff::Backoff;
use crate::client::docker::{take_events, ApiError, Engine, BACKOFF_MAX, ENGINE};
use crate::config::StartAt;
use crate::discovery::RemoteEngine;
use crate::metrics::Metrics;
use crate::pipeline::SourceStages;
use crate::positions::{AckRef, Positions};
use crate::queue::Chunk;
use crate::source::file::{Mode, Tailing};
use crate::source::{LineFeed, Outlet, SourceSpec};

/// A reader whose stream ended while its container runs opens it again after this.
const REOPEN: Duration = Duration::from_millis(250);
/// An event stream open for less than this waits this long before it is opened again.
const EVENTS_MIN: Duration = Duration::from_secs(1);
/// The window read again before a cursor when a reader starts.
const BEFORE_CURSOR_NS: i64 = 1_000_000_000;

/// What every reader shares.
struct Shared {
    /// The Engine and its containers, as the discovery gives them.
    found: RemoteEngine,
    spec: SourceSpec,
    stages: Arc<SourceStages>,
    positions: Arc<Positions>,
    out: Outlet,
    follow: bool,
    name: Arc<str>,
}

impl Shared {
    fn engine(&self) -> &Engine {
        self.found.engine()
    }
}

/// Where a reader is: the time of the last message and how many in a row had it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Cursor {
    ts: i64,
    n: u64,
}

impl Cursor {
    fn parse(s: &str) -> Option<Cursor> {
        let (ts, n) = s.split_once(' ')?;
        Some(Cursor { ts: ts.parse().ok()?, n: n.parse().ok().filter(|n| *n > 0)? })
    }

    fn text(self) -> String {
        format!("{} {}", self.ts, self.n)
    }

    /// The cursor after a message at `ts`.
    fn after(last: Option<Cursor>, ts: i64) -> Cursor {
        match last {
            Some(c) if c.ts == ts => Cursor { ts, n: c.n + 1 },
            _ => Cursor { ts, n: 1 },
        }
    }
}

/// Skips, after a (re)start from before the cursor, what was read already.
#[derive(Debug)]
struct Skip {
    at: Cursor,
    seen: u64,
}

impl Skip {
    /// True when the message at `ts` is before or at the cursor; `done` is
    /// set once the cursor's message is passed.
    fn skips(&mut self, ts: Option<i64>, done: &mut bool) -> bool {
        match ts {
            Some(t) if t > self.at.ts + BEFORE_CURSOR_NS => {
                *done = true;
                false
            }
            Some(t) if t == self.at.ts => {
                self.seen += 1;
                *done = self.seen >= self.at.n;
                true
            }
            _ => true,
        }
    }
}

/// A running reader.
struct Reader {
    stop: CancellationToken,
    task: tokio::task::JoinHandle<()>,
}

/// Runs the readers of `found`'s containers until cancelled (`Mode::Once`:
/// until each container's log was read to its end).
pub async fn run(parts: Tailing, found: RemoteEngine) {
    let Tailing { spec, stages, positions, out, mode } = parts;
    let cfg = spec.config.docker.clone().unwrap_or_default();
    let name = stages.name.clone();
    let from_end = spec.config.start_at == StartAt::End;
    let follow = mode == Mode::Follow;
    tracing::info!(source = %name, engine = %found.engine().describe(),
        "docker source: reading the containers' logs through the Engine API");
    let shared = Arc::new(Shared { found, spec, stages, positions, out, follow, name: name.clone() });
    let cancel = shared.out.cancel.clone();
    let (done_tx, mut done_rx) = mpsc::unbounded_channel::<String>();
    let mut st = State { readers: HashMap::new(), read: HashSet::new(), first: true, done: done_tx };
    let mut backoff = Backoff::up_to(BACKOFF_MAX);
    loop {
        let listed = if follow {
            let (events, listed) = tokio::join!(shared.engine().events(), st.refresh(&shared, from_end));
            events.and_then(|ev| listed.map(|()| Some(ev)))
        } else {
            st.refresh(&shared, from_end).await.map(|()| None)
        };
        let mut events = match listed {
            Ok(ev) => {
                backoff.recovered(&name, ENGINE);
                ev
            }
            Err(e) => {
                backoff.failed(&name, ENGINE, &e);
                if !backoff.wait(&cancel).await {
                    break;
                }
                continue;
            }
        };
        let Some(ev) = events.as_mut() else {
            // One-off: every reader reads to the end.
            st.drain(false).await;
            return;
        };
        let opened = tokio::time::Instant::now();
        let full_list_at = opened + cfg.refresh_interval.get();
        let mut buf = Vec::new();
        loop {
            let again = tokio::select! {
                _ = cancel.cancelled() => break,
                _ = tokio::time::sleep_until(full_list_at) => break,
                id = done_rx.recv() => {
                    if let Some(id) = id {
                        st.readers.remove(&id);
                    }
                    true
                }
                chunk = ev.chunk() => match chunk {
                    Ok(Some(bytes)) => take_events(&mut buf, &bytes).iter().any(|e| e.changes_containers()),
                    Ok(None) | Err(_) => {
                        tracing::info!(source = %name, "the Docker Engine's event stream ended; listing again");
                        break;
                    }
                },
            };
            if again {
                if let Err(e) = st.refresh(&shared, from_end).await {
                    backoff.failed(&name, ENGINE, &e);
                    break;
                }
            }
        }
        if cancel.is_cancelled() {
            break;
        }
        // An event stream that ends as soon as it opens (a proxy in between) is not opened in a loop.
        if opened.elapsed() < EVENTS_MIN {
            tokio::select! {
                _ = cancel.cancelled() => break,
                _ = tokio::time::sleep(EVENTS_MIN) => {}
            }
        }
    }
    st.drain(true).await;
}

/// The readers and what the list loop remembers.
struct State {
    readers: HashMap<String, Reader>,
    /// Containers whose log a reader of this run has read (a stopped one is not read again until it starts).
    read: HashSet<String>,
    /// The first list: `start_at = "end"` applies to the containers running then.
    first: bool,
    done: mpsc::UnboundedSender<String>,
}

impl State {
    /// Waits until every reader ended; `stop` tells them to stop first.
    async fn drain(&mut self, stop: bool) {
        for (_, r) in self.readers.drain() {
            if stop {
                r.stop.cancel();
            }
            let _ = r.task.await;
        }
    }

    /// Lists the containers and starts or stops readers accordingly.
    async fn refresh(&mut self, sh: &Arc<Shared>, from_end: bool) -> Result<(), ApiError> {
        let listed = sh.found.containers().await?;
        let mut live = HashSet::with_capacity(listed.len());
        for c in listed {
            live.insert(c.id.clone());
            let labels = sh.spec.labels.resolve_meta(&sh.stages, c.meta);
            let running = c.running;
            match (labels, self.readers.get(&c.id)) {
                (None, Some(_)) => {
                    if let Some(r) = self.readers.remove(&c.id) {
                        r.stop.cancel();
                    }
                }
                (None, None) | (Some(_), Some(_)) => {}
                (Some(labels), None) => {
                    if !running && self.read.contains(&c.id) {
                        continue;
                    }
                    let tty = match sh.engine().inspect(&c.id).await {
                        Ok(i) => i.config.tty,
                        Err(ApiError::Status { status: 404, .. }) => continue,
                        Err(e) => return Err(e),
                    };
                    self.read.insert(c.id.clone());
                    let stop = sh.out.cancel.child_token();
                    let start =
                        ReaderStart { id: c.id.clone(), labels, tty, from_end: from_end && self.first && running };
                    let task = tokio::spawn(follow(sh.clone(), start, stop.clone(), self.done.clone()));
                    self.readers.insert(c.id, Reader { stop, task });
                }
            }
        }
        self.first = false;
        self.read.retain(|id| live.contains(id));
        self.readers.retain(|id, r| {
            if !live.contains(id) {
                r.stop.cancel();
            }
            live.contains(id)
        });
        Ok(())
    }
}

/// What a reader starts with.
struct ReaderStart {
    id: String,
    labels: BTreeMap<String, String>,
    tty: bool,
    from_end: bool,
}

/// How one opening of a log stream ended.
enum Ended {
    Stopped,
    End,
    Failed(String),
}

/// One container's reader; see the module documentation.
async fn follow(sh: Arc<Shared>, start: ReaderStart, stop: CancellationToken, done: mpsc::UnboundedSender<String>) {
    let name = sh.name.clone();
    let path = std::path::PathBuf::from(format!("docker-container:{}", start.id));
    let (key, saved) = sh.positions.journal_resume(&name, Some(&path));
    let saved = saved.and_then(|s| Cursor::parse(&s));
    let mut r = Read {
        feed: LineFeed::with_context(&sh.spec, sh.stages.context_for(start.labels), 0),
        fed: 0,
        pending: VecDeque::new(),
        last: saved,
        read_to: saved,
        skip: saved.map(|at| Skip { at, seen: 0 }),
        key,
    };
    let mut since = match saved {
        Some(c) => Some(since_param(c.ts.saturating_sub(BEFORE_CURSOR_NS).max(1))),
        None if start.from_end => Some(since_param(crate::util::now_ns() as i64)),
        None => None,
    };
    let short = &start.id[..start.id.len().min(12)];
    let mut backoff = Backoff::up_to(BACKOFF_MAX);
    loop {
        let ended = match sh.engine().logs(&start.id, since.as_deref(), sh.follow).await {
            Ok(resp) => {
                backoff.recovered(&name, ENGINE);
                r.stream(&sh, resp, start.tty, &stop).await
            }
            Err(ApiError::Status { status: 404, .. }) => Ended::End,
            Err(e) => Ended::Failed(e.to_string()),
        };
        let gone_or_stopped = match ended {
            Ended::Stopped => break,
            Ended::Failed(e) => {
                tracing::debug!(source = %name, container = short, error = %e, "reading a container's log failed");
                backoff.failed(&name, ENGINE, &ApiError::Setting(format!("logs of container {short}: {e}")));
                if !backoff.wait(&stop).await {
                    break;
                }
                false
            }
            Ended::End if !sh.follow => true,
            Ended::End => match sh.engine().inspect(&start.id).await {
                Ok(i) if i.state.running => {
                    tokio::select! {
                        _ = stop.cancelled() => break,
                        _ = tokio::time::sleep(REOPEN) => {}
                    }
                    false
                }
                Ok(_) | Err(ApiError::Status { status: 404, .. }) => true,
                Err(_) => false,
            },
        };
        if gone_or_stopped {
            // Read to the end of a stopped (or removed) container's log: what is held goes now.
            let mut chunk = Chunk::new(name.clone());
            r.feed.flush_idle(&sh.stages, crate::util::now_ns() as i64, Instant::now(), true, &mut chunk);
            r.send(&sh, chunk).await;
            break;
        }
        // Opened again from before the last message read, skipping up to it.
        if let Some(at) = r.last {
            since = Some(since_param(at.ts.saturating_sub(BEFORE_CURSOR_NS).max(1)));
            r.skip = Some(Skip { at, seen: 0 });
        }
    }
    r.feed.flush_counts(&name);
    sh.positions.journal_release(key, r.read_to.map(Cursor::text));
    let _ = done.send(start.id);
}

/// A reader's state across openings of its stream.
struct Read {
    feed: LineFeed,
    /// Bytes given to the feed so far (its offsets).
    fed: u64,
    /// (feed offset after a message, cursor after it), not yet in a sent chunk.
    pending: VecDeque<(u64, Cursor)>,
    /// The cursor after the last message read.
    last: Option<Cursor>,
    /// The cursor of the last chunk queued.
    read_to: Option<Cursor>,
    skip: Option<Skip>,
    key: u64,
}

impl Read {
    /// Reads one opening of the log until it ends or the reader stops.
    async fn stream(&mut self, sh: &Shared, mut resp: reqwest::Response, tty: bool, stop: &CancellationToken) -> Ended {
        let m = Metrics::get();
        let mut demux = Demux::new(tty);
        loop {
            let due = self.feed.due_at().map(tokio::time::Instant::from_std);
            let next = tokio::select! {
                _ = stop.cancelled() => return Ended::Stopped,
                _ = async { match due { Some(d) => tokio::time::sleep_until(d).await, None => std::future::pending().await } } => None,
                c = resp.chunk() => Some(c),
            };
            let now_ts = crate::util::now_ns() as i64;
            let mut chunk = Chunk::new(sh.name.clone());
            match next {
                None => self.feed.flush_idle(&sh.stages, now_ts, Instant::now(), false, &mut chunk),
                Some(Ok(Some(bytes))) => {
                    m.bytes_read.with_label_values(&[&sh.name]).inc_by(bytes.len() as u64);
                    let msgs = match demux.push(&bytes) {
                        Ok(msgs) => msgs,
                        Err(e) => return Ended::Failed(e.to_string()),
                    };
                    chunk.read_at = Some(Instant::now());
                    for msg in msgs {
                        if let Some(s) = &mut self.skip {
                            let mut done = false;
                            let skipped = s.skips(msg.ts, &mut done);
                            if done {
                                self.skip = None;
                            }
                            if skipped {
                                continue;
                            }
                        }
                        if let Some(ts) = msg.ts {
                            self.last = Some(Cursor::after(self.last, ts));
                        }
                        let mut line = msg.json_file_line();
                        line.push('\n');
                        self.feed.feed(&sh.stages, line.as_bytes(), now_ts, Instant::now(), &mut chunk);
                        self.fed += line.len() as u64;
                        if let Some(c) = self.last {
                            self.pending.push_back((self.fed, c));
                        }
                    }
                }
                Some(Ok(None)) => return Ended::End,
                Some(Err(e)) => return Ended::Failed(e.to_string()),
            }
            if !self.send(sh, chunk).await {
                return Ended::Stopped;
            }
        }
    }

    /// Queues `chunk` with a mark for the cursor of the last message whose
    /// line is handled (not held by a multiline rule or a split line); false when stopped.
    async fn send(&mut self, sh: &Shared, mut chunk: Chunk) -> bool {
        let safe = self.feed.safe_offset();
        let mut cursor = None;
        while let Some(&(off, c)) = self.pending.front() {
            if off > safe {
                break;
            }
            cursor = Some(c);
            self.pending.pop_front();
        }
        if let Some(c) = cursor {
            let mark = sh.positions.journal_mark(self.key, c.text());
            chunk.ack = Some(AckRef { file: self.key, offset: mark });
            self.read_to = Some(c);
        }
        self.feed.flush_counts(&sh.name);
        if chunk.entries.is_empty() && chunk.ack.is_none() {
            return true;
        }
        sh.out.sink.send(chunk, &sh.out.cancel).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_restart_skips_to_just_after_the_cursor() {
        let at = Cursor { ts: 10_000_000_000, n: 2 };
        assert_eq!(Cursor::parse(&at.text()), Some(at));
        let mut s = Skip { at, seen: 0 };
        let mut done = false;
        // Read again from a second before: earlier ones, the two at the cursor's time.
        assert!(s.skips(Some(9_500_000_000), &mut done) && !done);
        assert!(s.skips(Some(10_000_000_000), &mut done) && !done);
        assert!(s.skips(Some(10_000_000_001), &mut done) && !done, "interleaved before the cursor's message");
        assert!(s.skips(Some(10_000_000_000), &mut done) && done);
        // The cursor's message gone from the log: the skip ends a second after it.
        let mut s = Skip { at, seen: 0 };
        let mut done = false;
        assert!(!s.skips(Some(11_000_000_001), &mut done) && done);
        assert_eq!(Cursor::after(Some(at), 10_000_000_000).n, 3);
        assert_eq!(Cursor::after(Some(at), 10_000_000_001).n, 1);
    }
}
