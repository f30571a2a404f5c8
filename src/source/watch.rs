//! File-system events for a file source, costed per wake-up, not per write.
//!
//! On Linux the source thread itself waits on an inotify descriptor (no
//! helper thread, no channel): when it becomes readable, every pending event
//! is drained in one `read` into a 64 KiB buffer; if they were all writes,
//! the thread waits a short coalescing window and drains again, so a writer
//! appending 20,000 lines a second costs about a hundred wake-ups a second,
//! not 20,000, and no event allocates. Directories of `**` globs are watched
//! recursively, new subdirectories as they appear. Elsewhere, the `notify`
//! crate delivers events over a channel. Without events (the watch limit
//! reached, a directory missing at start), the source polls.
//!
//! A busy writer still costs the kernel one queued event per `write`, which
//! the source copies out and the kernel frees (about a tenth of the agent's
//! CPU at 20,000 lines a second). When a wake-up drains more write events
//! than the source has files open, reading every open file once per window
//! is cheaper than the events: the source then turns write events off
//! ([`Events::writes`]) and polls its open files each window until a round
//! finds nothing new, and turns them back on (then reads once more, so a
//! write between its last read and the switch is not missed).

use std::path::{Path, PathBuf};
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
    Inotify(linux::InotifyFeed),
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
                tracing::warn!(source, dir = %dir.display(), error = %e,
                    "cannot watch directory (missing, or the watch limit is reached); polling files instead");
                None
            }
        }
    }

    #[cfg(target_os = "linux")]
    fn try_start(dirs: &[(PathBuf, bool)]) -> Result<Events, (PathBuf, std::io::Error)> {
        Ok(Events { inner: Inner::Inotify(linux::InotifyFeed::start(dirs)?) })
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
            Inner::Inotify(f) => f.wait(timeout, coalesce),
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
            let all = if *recursive { with_subdirs(dir) } else { vec![dir.clone()] };
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

/// Every directory under `dir` (itself included), for recursive watches.
fn with_subdirs(dir: &Path) -> Vec<PathBuf> {
    walkdir::WalkDir::new(dir)
        .follow_links(true)
        .into_iter()
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_dir())
        .map(|e| e.into_path())
        .collect()
}

#[cfg(target_os = "linux")]
mod linux {
    use std::collections::HashMap;
    use std::os::fd::AsRawFd;
    use std::path::PathBuf;
    use std::time::Duration;

    use inotify::{EventMask, Inotify, WatchDescriptor, WatchMask};

    use super::{with_subdirs, Wake};

    /// Room for a few thousand events per `read`.
    const BUFFER: usize = 64 << 10;

    pub struct InotifyFeed {
        inotify: Inotify,
        buf: Vec<u8>,
        /// Directories watched with their subdirectories, by descriptor.
        recursive: HashMap<WatchDescriptor, PathBuf>,
        /// Every watched directory, to change what its watch reports.
        dirs: Vec<PathBuf>,
        /// Write events are on (see [`InotifyFeed::set_writes`]).
        writes: bool,
        /// Write events drained by the last wait.
        pub last_writes: usize,
    }

    fn mask(writes: bool) -> WatchMask {
        let structural = WatchMask::CREATE
            | WatchMask::DELETE
            | WatchMask::MOVED_FROM
            | WatchMask::MOVED_TO
            | WatchMask::ATTRIB
            | WatchMask::DELETE_SELF
            | WatchMask::MOVE_SELF;
        if writes {
            structural | WatchMask::MODIFY
        } else {
            structural
        }
    }

    impl InotifyFeed {
        pub fn start(dirs: &[(PathBuf, bool)]) -> Result<Self, (PathBuf, std::io::Error)> {
            let inotify = Inotify::init().map_err(|e| (PathBuf::new(), e))?;
            let mut feed = InotifyFeed {
                inotify,
                buf: vec![0; BUFFER],
                recursive: HashMap::new(),
                dirs: Vec::new(),
                writes: true,
                last_writes: 0,
            };
            for (dir, recursive) in dirs {
                if *recursive {
                    for d in with_subdirs(dir) {
                        let wd = feed.inotify.watches().add(&d, mask(true)).map_err(|e| (d.clone(), e))?;
                        feed.recursive.insert(wd, d.clone());
                        feed.dirs.push(d);
                    }
                } else {
                    feed.inotify.watches().add(dir, mask(true)).map_err(|e| (dir.clone(), e))?;
                    feed.dirs.push(dir.clone());
                }
            }
            Ok(feed)
        }

        /// Changes every watch to report writes or not (the descriptors stay).
        /// A directory that cannot be watched any more is left to the scan.
        pub fn set_writes(&mut self, on: bool) {
            if self.writes == on {
                return;
            }
            self.writes = on;
            for d in &self.dirs {
                if let Err(e) = self.inotify.watches().add(d, mask(on)) {
                    tracing::debug!(dir = %d.display(), error = %e, "cannot change a directory watch");
                }
            }
        }

        pub fn wait(&mut self, timeout: Duration, coalesce: Duration) -> Wake {
            let mut pfd = libc::pollfd { fd: self.inotify.as_raw_fd(), events: libc::POLLIN, revents: 0 };
            let ms = i32::try_from(timeout.as_millis()).unwrap_or(i32::MAX);
            // SAFETY: one valid pollfd for the duration of the call.
            let ready = unsafe { libc::poll(&mut pfd, 1, ms) };
            self.last_writes = 0;
            if ready <= 0 {
                return Wake::Timeout;
            }
            let mut structural = self.drain();
            if !structural && self.writes {
                // Writes: let more of them gather, then take them all at once.
                std::thread::sleep(coalesce);
                structural = self.drain();
            }
            if structural {
                Wake::Structural
            } else {
                Wake::Data
            }
        }

        /// Reads every pending event; true when one was not a plain write.
        fn drain(&mut self) -> bool {
            let mut structural = false;
            let mut new_dirs = Vec::new();
            loop {
                let events = match self.inotify.read_events(&mut self.buf) {
                    Ok(e) => e,
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    Err(e) => {
                        tracing::debug!(error = %e, "reading file-system events failed; rescanning");
                        return true;
                    }
                };
                for ev in events {
                    if ev.mask == EventMask::MODIFY {
                        self.last_writes += 1;
                        continue;
                    }
                    structural = true;
                    if ev.mask.contains(EventMask::ISDIR)
                        && (ev.mask.contains(EventMask::CREATE) || ev.mask.contains(EventMask::MOVED_TO))
                    {
                        if let (Some(parent), Some(name)) = (self.recursive.get(&ev.wd), ev.name) {
                            new_dirs.push(parent.join(name));
                        }
                    }
                    if ev.mask.contains(EventMask::IGNORED) {
                        if let Some(d) = self.recursive.remove(&ev.wd) {
                            self.dirs.retain(|x| *x != d);
                        }
                    }
                }
            }
            for dir in new_dirs {
                for d in with_subdirs(&dir) {
                    match self.inotify.watches().add(&d, mask(self.writes)) {
                        Ok(wd) => {
                            self.recursive.insert(wd, d.clone());
                            self.dirs.push(d);
                        }
                        Err(e) => tracing::warn!(dir = %d.display(), error = %e,
                            "cannot watch a new directory; its files are found at the next scan"),
                    }
                }
            }
            structural
        }
    }
}
