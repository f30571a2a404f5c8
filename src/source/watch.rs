//! File-system events for a file source, costed per wake-up, not per write.
//!
//! On Linux the process's one inotify instance (see `source::inotify`) is
//! read by one thread, which drains every pending event in one `read` into a
//! 64 KiB buffer and hands each source its share; a source thread waiting
//! for writes takes them after a short coalescing window, so a writer
//! appending 20,000 lines a second costs about a hundred wake-ups a second,
//! not 20,000. Directories of `**` globs are watched recursively, new
//! subdirectories as they appear; a directory that does not exist yet is
//! watched through its nearest existing parent until it appears. Elsewhere,
//! the `notify` crate delivers events over a channel. Without events (the
//! inotify limits reached), the source polls.
//!
//! A busy writer still costs the kernel one queued event per `write`, which
//! the source copies out and the kernel frees (about a tenth of the agent's
//! CPU at 20,000 lines a second). When a wake-up drains more write events
//! than the source has files open, reading every open file once per window
//! is cheaper than the events: the source then turns write events off
//! ([`Events::writes`]) and polls its open files each window until a round
//! finds nothing new, and turns them back on (then reads once more, so a
//! write between its last read and the switch is not missed).

use std::path::PathBuf;
use std::time::Duration;

/// What a wait brought.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wake {
    /// Nothing happened within the timeout.
    Timeout,
    /// Files were written to.
    Data,
    /// Files appeared, moved, vanished or changed permissions: rescan.
    Structural,
}

/// A source's event feed.
pub struct Events {
    inner: Inner,
}

enum Inner {
    #[cfg(target_os = "linux")]
    Inotify(super::inotify::Subscription),
    #[cfg(not(target_os = "linux"))]
    Notify { _watcher: notify::RecommendedWatcher, rx: std::sync::mpsc::Receiver<bool> },
}

impl Events {
    /// Watches `dirs` (`true`: with their subdirectories). `None` when events
    /// are unavailable; the reason is logged once with `source`.
    pub fn start(dirs: &[(PathBuf, bool)], source: &str) -> Option<Events> {
        match Self::try_start(dirs) {
            Ok(e) => Some(e),
            Err((dir, e)) => {
                #[cfg(target_os = "linux")]
                let why = super::inotify::explain(&e);
                #[cfg(not(target_os = "linux"))]
                let why = e.to_string();
                if dir.as_os_str().is_empty() {
                    tracing::warn!(source, error = %why, "cannot watch files; polling them instead");
                } else {
                    tracing::warn!(source, dir = %dir.display(), error = %why,
                        "cannot watch directory; polling files instead");
                }
                None
            }
        }
    }

    #[cfg(target_os = "linux")]
    fn try_start(dirs: &[(PathBuf, bool)]) -> Result<Events, (PathBuf, std::io::Error)> {
        let hub = super::inotify::Hub::get().map_err(|e| (PathBuf::new(), e))?;
        Ok(Events { inner: Inner::Inotify(hub.subscribe(dirs)) })
    }

    #[cfg(not(target_os = "linux"))]
    fn try_start(dirs: &[(PathBuf, bool)]) -> Result<Events, (PathBuf, std::io::Error)> {
        use notify::{EventKind, RecursiveMode, Watcher};
        let (tx, rx) = std::sync::mpsc::channel();
        let handler = move |res: notify::Result<notify::Event>| {
            if let Ok(ev) = res {
                let structural =
                    !matches!(ev.kind, EventKind::Modify(notify::event::ModifyKind::Data(_)) | EventKind::Access(_));
                let _ = tx.send(structural);
            }
        };
        let mut w =
            notify::recommended_watcher(handler).map_err(|e| (PathBuf::new(), std::io::Error::other(e.to_string())))?;
        for (dir, recursive) in dirs {
            let mode = if *recursive { RecursiveMode::Recursive } else { RecursiveMode::NonRecursive };
            w.watch(dir, mode).map_err(|e| (dir.clone(), std::io::Error::other(e.to_string())))?;
        }
        Ok(Events { inner: Inner::Notify { _watcher: w, rx } })
    }

    /// Turns write events on or off (see the module documentation); false
    /// when they cannot be turned off here (they stay on).
    pub fn writes(&mut self, on: bool) -> bool {
        match &mut self.inner {
            #[cfg(target_os = "linux")]
            Inner::Inotify(f) => {
                f.set_writes(on);
                true
            }
            #[cfg(not(target_os = "linux"))]
            Inner::Notify { .. } => on,
        }
    }

    /// Directories that could not be watched: their files are polled.
    pub fn unwatched(&self) -> Vec<(PathBuf, bool)> {
        match &self.inner {
            #[cfg(target_os = "linux")]
            Inner::Inotify(f) => f.unwatched(),
            #[cfg(not(target_os = "linux"))]
            Inner::Notify { .. } => Vec::new(),
        }
    }

    /// The entries created in or moved into the watched directories since
    /// the last call, and whether some may be missing (an overflow, a
    /// directory watched again); `None` where events carry no names (the
    /// `notify` crate): the source then lists directories instead.
    pub fn take_arrivals(&mut self) -> Option<(Vec<PathBuf>, bool)> {
        match &mut self.inner {
            #[cfg(target_os = "linux")]
            Inner::Inotify(f) => Some(f.take_arrivals()),
            #[cfg(not(target_os = "linux"))]
            Inner::Notify { .. } => None,
        }
    }

    /// Write events drained by the last [`Events::wait`].
    pub fn last_writes(&self) -> usize {
        match &self.inner {
            #[cfg(target_os = "linux")]
            Inner::Inotify(f) => f.last_writes,
            #[cfg(not(target_os = "linux"))]
            Inner::Notify { .. } => 0,
        }
    }

    /// Waits up to `timeout` for events. After writes only, waits `coalesce`
    /// more so that further writes are taken in the same wake-up.
    pub fn wait(&mut self, timeout: Duration, coalesce: Duration) -> Wake {
        match &mut self.inner {
            #[cfg(target_os = "linux")]
            Inner::Inotify(f) => match f.wait(timeout, coalesce) {
                None => Wake::Timeout,
                Some(false) => Wake::Data,
                Some(true) => Wake::Structural,
            },
            #[cfg(not(target_os = "linux"))]
            Inner::Notify { rx, .. } => {
                let Ok(first) = rx.recv_timeout(timeout) else { return Wake::Timeout };
                let mut structural = first;
                if !structural {
                    std::thread::sleep(coalesce);
                }
                while let Ok(s) = rx.try_recv() {
                    structural |= s;
                }
                if structural {
                    Wake::Structural
                } else {
                    Wake::Data
                }
            }
        }
    }
}

/// The directories a source would watch, looked at without events: each
/// poll compares their modification times (an entry created, renamed or
/// removed changes its directory's), so a source that has to poll rescans
/// when a directory changed, not only every `scan_interval`. One `stat` per
/// directory per poll (a walk of the tree for `**` globs).
pub struct DirStamps {
    dirs: Vec<(PathBuf, bool)>,
    stamps: std::collections::HashMap<PathBuf, (i64, i64, u64)>,
}

impl DirStamps {
    pub fn new(dirs: Vec<(PathBuf, bool)>) -> Self {
        let mut s = Self { dirs, stamps: Default::default() };
        s.changed();
        s
    }

    /// True when a directory changed (or appeared, or went) since the last look.
    pub fn changed(&mut self) -> bool {
        use std::os::unix::fs::MetadataExt;
        let mut now = std::collections::HashMap::with_capacity(self.stamps.len());
        for (dir, recursive) in &self.dirs {
            let all = if *recursive { crate::discovery::glob::with_subdirs(dir) } else { vec![dir.clone()] };
            for d in all {
                if let Ok(m) = std::fs::metadata(&d) {
                    now.insert(d, (m.mtime(), m.mtime_nsec(), m.ino()));
                }
            }
        }
        let changed = now != self.stamps;
        self.stamps = now;
        changed
    }
}

/// The directories a source polls: every one without events, else those
/// that could not be watched ([`Events::unwatched`]); the others stay
/// watched. Files in them are read at each poll, and a change of their
/// entries rescans (see [`DirStamps`]). `tailship_dirs_polled` counts them.
#[derive(Default)]
pub struct PolledDirs {
    dirs: Vec<(PathBuf, bool)>,
    stamps: Option<DirStamps>,
}

impl PolledDirs {
    /// Looks again at what is polled: `events` (none: all of `wanted`).
    pub fn refresh(&mut self, events: Option<&Events>, wanted: impl FnOnce() -> Vec<(PathBuf, bool)>, source: &str) {
        let dirs = match events {
            Some(ev) => ev.unwatched(),
            None => wanted(),
        };
        if dirs != self.dirs || self.stamps.is_none() {
            crate::metrics::Metrics::get().dirs_polled.with_label_values(&[source]).set(dirs.len() as i64);
            self.stamps = Some(DirStamps::new(dirs.clone()));
            self.dirs = dirs;
        }
    }

    pub fn is_empty(&self) -> bool {
        self.dirs.is_empty()
    }

    /// The directories polled (`true`: with their subdirectories).
    pub fn dirs(&self) -> &[(PathBuf, bool)] {
        &self.dirs
    }

    /// Whether the file at `path` is in a polled directory.
    pub fn covers(&self, path: &std::path::Path) -> bool {
        self.dirs
            .iter()
            .any(|(d, recursive)| if *recursive { path.starts_with(d) } else { path.parent() == Some(d.as_path()) })
    }

    /// True when a polled directory's entries changed since the last look.
    pub fn changed(&mut self) -> bool {
        !self.dirs.is_empty() && self.stamps.as_mut().is_some_and(DirStamps::changed)
    }
}
