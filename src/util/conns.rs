//! The connections a server holds, so that a new client is never shut out
//! by idle ones: at `max` open, the one silent longest (and not in the
//! middle of a request) is closed to make room. A flood of idle or
//! half-open connections then costs the real clients nothing, and a
//! health probe is answered however many connections are open.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

/// The longest wait before the open connections are looked at again.
const POLL: Duration = Duration::from_millis(50);

/// What a connection did last: read time and requests in progress.
#[derive(Debug)]
pub struct Activity {
    start: Instant,
    /// Milliseconds after `start` of the last read.
    last: AtomicU64,
    busy: AtomicUsize,
}

impl Activity {
    fn new(start: Instant) -> Self {
        let a = Self { start, last: AtomicU64::new(0), busy: AtomicUsize::new(0) };
        a.touch();
        a
    }

    /// The connection just read something.
    pub fn touch(&self) {
        self.last.store(self.start.elapsed().as_millis() as u64, Ordering::Relaxed);
    }

    /// A request (or a write the client waits on) is in progress until the guard drops.
    pub fn busy(self: &Arc<Self>) -> Busy {
        self.busy.fetch_add(1, Ordering::AcqRel);
        Busy(self.clone())
    }

    /// How long since it last read, or `None` while it is busy.
    fn idle(&self) -> Option<Duration> {
        if self.busy.load(Ordering::Acquire) > 0 {
            return None;
        }
        let now = self.start.elapsed().as_millis() as u64;
        Some(Duration::from_millis(now.saturating_sub(self.last.load(Ordering::Relaxed))))
    }
}

/// Busy while it lives (see [`Activity::busy`]).
#[derive(Debug)]
pub struct Busy(Arc<Activity>);

impl Drop for Busy {
    fn drop(&mut self) {
        self.0.busy.fetch_sub(1, Ordering::AcqRel);
    }
}

struct Entry {
    id: u64,
    activity: Arc<Activity>,
    close: CancellationToken,
}

/// The open connections of one server.
pub struct Conns {
    max: usize,
    /// Closed for room only once silent this long.
    min_idle: Duration,
    start: Instant,
    next: AtomicU64,
    open: Mutex<Vec<Entry>>,
    /// Woken when a connection goes.
    freed: tokio::sync::Notify,
}

/// One admitted connection: its activity, and a token fired when it is
/// closed to make room. Leaves the table when dropped.
pub struct Conn {
    table: Arc<Conns>,
    id: u64,
    pub activity: Arc<Activity>,
    pub close: CancellationToken,
}

impl Drop for Conn {
    fn drop(&mut self) {
        let mut open = self.table.open.lock().unwrap_or_else(|p| p.into_inner());
        open.retain(|e| e.id != self.id);
        drop(open);
        self.table.freed.notify_waiters();
    }
}

impl Conns {
    /// A table of at most `max` connections, closing for room one silent for `min_idle` at least.
    pub fn new(max: usize, min_idle: Duration) -> Arc<Self> {
        Arc::new(Self {
            max: max.max(1),
            min_idle,
            start: Instant::now(),
            next: AtomicU64::new(0),
            open: Mutex::new(Vec::new()),
            freed: tokio::sync::Notify::new(),
        })
    }

    /// Connections open.
    pub fn len(&self) -> usize {
        self.open.lock().unwrap_or_else(|p| p.into_inner()).len()
    }

    /// True when none is open.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Admits a connection: at once when there is room, else by closing the
    /// one silent longest (at least `min_idle`, and not busy); `None` when
    /// every open one is busy or recently active. `evicted` is told of a
    /// connection closed for room.
    pub fn admit(self: &Arc<Self>, evicted: impl FnOnce()) -> Option<Conn> {
        let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        if open.len() >= self.max {
            let idlest = open
                .iter()
                .enumerate()
                .filter_map(|(i, e)| e.activity.idle().map(|d| (i, d)))
                .filter(|(_, d)| *d >= self.min_idle)
                .max_by_key(|(_, d)| *d)
                .map(|(i, _)| i)?;
            let gone = open.swap_remove(idlest);
            gone.close.cancel();
            evicted();
        }
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let activity = Arc::new(Activity::new(self.start));
        let close = CancellationToken::new();
        open.push(Entry { id, activity: activity.clone(), close: close.clone() });
        Some(Conn { table: self.clone(), id, activity, close })
    }

    /// How long until an open connection has been silent `min_idle` (if it
    /// says nothing meanwhile), between 1 and [`POLL`] ms; [`POLL`] when
    /// every one is busy (a request ending wakes no one: looked at again).
    fn until_one_is_idle(&self) -> Duration {
        let open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        let soonest = open.iter().filter_map(|e| e.activity.idle()).map(|d| self.min_idle.saturating_sub(d)).min();
        soonest.unwrap_or(POLL).clamp(Duration::from_millis(1), POLL)
    }

    /// Admits a connection, waiting (until `stop`) while every open one is
    /// busy or recently active. `None` once stopped.
    pub async fn admit_waiting(self: &Arc<Self>, stop: &CancellationToken, mut evicted: impl FnMut()) -> Option<Conn> {
        loop {
            let freed = self.freed.notified();
            if let Some(c) = self.admit(&mut evicted) {
                return Some(c);
            }
            tokio::select! {
                _ = freed => {}
                // One may have become idle enough meanwhile.
                _ = tokio::time::sleep(self.until_one_is_idle()) => {}
                _ = stop.cancelled() => return None,
            }
        }
    }
}

/// A stream whose reads mark its connection active.
pub struct Tracked<S> {
    inner: S,
    activity: Arc<Activity>,
}

impl<S> Tracked<S> {
    pub fn new(inner: S, activity: Arc<Activity>) -> Self {
        Self { inner, activity }
    }
}

impl<S: tokio::io::AsyncRead + Unpin> tokio::io::AsyncRead for Tracked<S> {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let r = std::pin::Pin::new(&mut self.inner).poll_read(cx, buf);
        if buf.filled().len() > before {
            self.activity.touch();
        }
        r
    }
}

impl<S: tokio::io::AsyncWrite + Unpin> tokio::io::AsyncWrite for Tracked<S> {
    fn poll_write(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        std::pin::Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_full_table_closes_the_connection_silent_longest_but_never_a_busy_one() {
        let t = Conns::new(2, Duration::ZERO);
        let a = t.admit(|| {}).unwrap();
        std::thread::sleep(Duration::from_millis(5));
        let b = t.admit(|| {}).unwrap();
        let _busy = b.activity.busy();
        let mut evicted = 0;
        let c = t.admit(|| evicted += 1).unwrap();
        assert_eq!(evicted, 1);
        assert!(a.close.is_cancelled(), "the idle one goes");
        assert!(!b.close.is_cancelled(), "the busy one stays");
        let _busy_c = c.activity.busy();
        assert!(t.admit(|| {}).is_none(), "every open one is busy");
        drop(a);
        assert_eq!(t.len(), 2);
    }

    #[tokio::test]
    async fn a_recently_active_connection_is_not_closed_for_room() {
        let t = Conns::new(1, Duration::from_secs(60));
        let _a = t.admit(|| {}).unwrap();
        assert!(t.admit(|| {}).is_none());
    }
}
