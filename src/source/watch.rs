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
    }

    fn mask() -> WatchMask {
        WatchMask::MODIFY
            | WatchMask::CREATE
            | WatchMask::DELETE
            | WatchMask::MOVED_FROM
            | WatchMask::MOVED_TO
            | WatchMask::ATTRIB
            | WatchMask::DELETE_SELF
            | WatchMask::MOVE_SELF
    }

    impl InotifyFeed {
        pub fn start(dirs: &[(PathBuf, bool)]) -> Result<Self, (PathBuf, std::io::Error)> {
            let inotify = Inotify::init().map_err(|e| (PathBuf::new(), e))?;
            let mut feed = InotifyFeed { inotify, buf: vec![0; BUFFER], recursive: HashMap::new() };
            for (dir, recursive) in dirs {
                if *recursive {
                    for d in with_subdirs(dir) {
                        let wd = feed.inotify.watches().add(&d, mask()).map_err(|e| (d.clone(), e))?;
                        feed.recursive.insert(wd, d);
                    }
                } else {
                    feed.inotify.watches().add(dir, mask()).map_err(|e| (dir.clone(), e))?;
                }
            }
            Ok(feed)
        }

        pub fn wait(&mut self, timeout: Duration, coalesce: Duration) -> Wake {
            let mut pfd = libc::pollfd { fd: self.inotify.as_raw_fd(), events: libc::POLLIN, revents: 0 };
            let ms = i32::try_from(timeout.as_millis()).unwrap_or(i32::MAX);
            // SAFETY: one valid pollfd for the duration of the call.
            let ready = unsafe { libc::poll(&mut pfd, 1, ms) };
            if ready <= 0 {
                return Wake::Timeout;
            }
            let mut structural = self.drain();
            if !structural {
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
                        self.recursive.remove(&ev.wd);
                    }
                }
            }
            for dir in new_dirs {
                for d in with_subdirs(&dir) {
                    match self.inotify.watches().add(&d, mask()) {
                        Ok(wd) => {
                            self.recursive.insert(wd, d);
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
