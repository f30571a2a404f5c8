//! One inotify instance for the whole process, shared by every file source.
//!
//! `fs.inotify.max_user_instances` is 128 per user by default, and every
//! program of that user (editors, IDEs, other agents) takes from it: one
//! instance per source ran out on busy hosts. Here one thread reads the one
//! instance and hands each event to the sources watching its directory
//! (a directory two sources watch has one watch, whose mask is the union of
//! what they want). A source waits on its own [`Subscription`]; while events
//! are only writes, the reader takes them in batches (at most one wake-up of
//! each kind every [`WRITE_BATCH`]).
//!
//! Each source is also handed the names of the entries created in or moved
//! into its directories (`IN_CREATE`, `IN_MOVED_TO`), in order, and told
//! when some may be missing (`IN_Q_OVERFLOW`, a directory watched again
//! after it changed unseen): it finds the generations of its files among
//! those, and lists a directory only then (see `source::file::arrivals`).
//!
//! A directory that does not exist yet (or is removed) is not a reason to
//! poll: its nearest existing parent is watched instead, and the moment the
//! directory appears it is watched and its source told to rescan, so
//! `tailship run` before `mkdir -p logs` ships the first line at once.

use std::collections::{HashMap, HashSet};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock};
use std::time::Duration;

use inotify::{EventMask, Inotify, WatchDescriptor, WatchMask, Watches};

/// Room for a few thousand events per `read`.
const BUFFER: usize = 64 << 10;
/// After a read of writes only, the reader waits this long before the next.
const WRITE_BATCH: Duration = Duration::from_millis(20);

/// Why a watch could not be made, in an operator's words (the limit and its sysctl).
pub fn explain(e: &std::io::Error) -> String {
    let sysctl = |name: &str, what: &str| {
        let now = std::fs::read_to_string(format!("/proc/sys/fs/inotify/{name}"))
            .map(|s| s.trim().to_string())
            .unwrap_or_else(|_| "?".into());
        format!(
            "the inotify {what} limit is reached: fs.inotify.{name} = {now} (other programs of this user hold \
             the rest; raise it with `sysctl -w fs.inotify.{name}=N` and in /etc/sysctl.d/)"
        )
    };
    match e.raw_os_error() {
        Some(libc::EMFILE) => sysctl("max_user_instances", "instance"),
        Some(libc::ENOSPC) => sysctl("max_user_watches", "watch"),
        Some(libc::ENFILE) => "the system's open file limit is reached (fs.file-max)".into(),
        _ => e.to_string(),
    }
}

/// What a watch is for.
#[derive(Clone, PartialEq, Eq)]
enum Kind {
    /// A directory a source wants (`top`: as named, not a subdirectory of a
    /// recursive one); `recursive`: new subdirectories are watched too.
    Target { recursive: bool, top: bool },
    /// The nearest existing parent of a wanted directory that does not exist.
    Parent,
}

struct Entry {
    sub: u64,
    path: PathBuf,
    kind: Kind,
}

struct SubState {
    wanted: Vec<(PathBuf, bool)>,
    writes: bool,
    shared: Arc<Shared>,
    /// Wanted directories that could not be watched (the watch limit, a file
    /// system without inotify): the source polls the files in these only.
    unwatched: Vec<(PathBuf, bool)>,
}

/// What the reader handed a source since its last wait.
#[derive(Default)]
struct Pending {
    writes: usize,
    structural: bool,
    /// Entries created or moved into its directories, in order: where the
    /// source looks for generations it never saw (see `source::file::arrivals`).
    arrived: Vec<PathBuf>,
    /// Some arrivals may be missing: the queue overflowed, a directory was
    /// watched again (or newly) after changing unseen, or too many waited.
    lost: bool,
}

/// Arrivals waiting for a source, at most; past it they are dropped and
/// the source is told they were lost (it lists its directories instead).
const MAX_ARRIVED: usize = 1 << 20;

#[derive(Default)]
struct Shared {
    pending: Mutex<Pending>,
    cv: Condvar,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Pending> {
        self.pending.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn post(&self, post: Pending) {
        let mut p = self.lock();
        p.writes += post.writes;
        p.structural |= post.structural;
        p.lost |= post.lost;
        if p.arrived.len() + post.arrived.len() > MAX_ARRIVED {
            p.arrived = Vec::new();
            p.lost = true;
        } else {
            p.arrived.extend(post.arrived);
        }
        self.cv.notify_all();
    }
}

#[derive(Default)]
struct State {
    next_id: u64,
    by_wd: HashMap<WatchDescriptor, Vec<Entry>>,
    subs: HashMap<u64, SubState>,
}

/// The process's inotify instance and who watches what.
pub struct Hub {
    watches: Mutex<Watches>,
    state: Mutex<State>,
}

fn structural_mask() -> WatchMask {
    WatchMask::CREATE
        | WatchMask::DELETE
        | WatchMask::MOVED_FROM
        | WatchMask::MOVED_TO
        | WatchMask::ATTRIB
        | WatchMask::DELETE_SELF
        | WatchMask::MOVE_SELF
}

fn parent_mask() -> WatchMask {
    WatchMask::CREATE | WatchMask::MOVED_TO | WatchMask::DELETE_SELF | WatchMask::MOVE_SELF
}

/// The nearest existing ancestor of `dir` (`.` for a relative path none of whose parts exist).
fn nearest_existing(dir: &Path) -> PathBuf {
    let mut d = dir;
    while let Some(p) = d.parent() {
        if p.as_os_str().is_empty() {
            return PathBuf::from(".");
        }
        if p.is_dir() {
            return p.to_path_buf();
        }
        d = p;
    }
    PathBuf::from("/")
}

impl Hub {
    /// The process's hub, started on first use; an error (the instance limit)
    /// is returned to each caller until an instance can be made.
    pub fn get() -> std::io::Result<&'static Hub> {
        static HUB: OnceLock<&'static Hub> = OnceLock::new();
        static START: Mutex<()> = Mutex::new(());
        if let Some(h) = HUB.get() {
            return Ok(h);
        }
        let _one = START.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(h) = HUB.get() {
            return Ok(h);
        }
        let inotify = Inotify::init()?;
        let hub: &'static Hub =
            Box::leak(Box::new(Hub { watches: Mutex::new(inotify.watches()), state: Mutex::new(State::default()) }));
        std::thread::Builder::new().name("inotify".into()).spawn(move || hub.read_loop(inotify))?;
        let _ = HUB.set(hub);
        Ok(hub)
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Watches `dirs` (`true`: with their subdirectories) for one source;
    /// those that cannot be watched are [`Subscription::unwatched`].
    pub fn subscribe(&'static self, dirs: &[(PathBuf, bool)]) -> Subscription {
        let shared = Arc::new(Shared::default());
        let mut st = self.state();
        let id = st.next_id;
        st.next_id += 1;
        st.subs.insert(
            id,
            SubState { wanted: dirs.to_vec(), writes: true, shared: shared.clone(), unwatched: Vec::new() },
        );
        self.resolve(&mut st, id);
        Subscription { hub: self, id, shared, last_writes: 0 }
    }

    /// The mask of the watch that holds `entries`.
    fn mask_of(st: &State, entries: &[Entry]) -> WatchMask {
        let mut m = WatchMask::empty();
        for e in entries {
            m |= match e.kind {
                Kind::Parent => parent_mask(),
                Kind::Target { .. } => {
                    let writes = st.subs.get(&e.sub).is_some_and(|s| s.writes);
                    if writes {
                        structural_mask() | WatchMask::MODIFY
                    } else {
                        structural_mask()
                    }
                }
            };
        }
        m
    }

    /// Adds a watch of `path` for `sub`.
    fn add(&self, st: &mut State, sub: u64, path: &Path, kind: Kind) -> std::io::Result<()> {
        let own = match kind {
            Kind::Parent => parent_mask(),
            Kind::Target { .. } => {
                let writes = st.subs.get(&sub).is_some_and(|s| s.writes);
                structural_mask() | if writes { WatchMask::MODIFY } else { WatchMask::empty() }
            }
        };
        let wd = self.watches.lock().unwrap_or_else(|p| p.into_inner()).add(path, own | WatchMask::MASK_ADD)?;
        let entries = st.by_wd.entry(wd).or_default();
        if !entries.iter().any(|e| e.sub == sub && e.path == path && e.kind == kind) {
            entries.push(Entry { sub, path: path.to_path_buf(), kind });
        }
        Ok(())
    }

    /// Watches `dir` (and its subdirectories when `recursive`) for `sub`.
    fn add_tree(&self, st: &mut State, sub: u64, dir: &Path, recursive: bool, top: bool) -> std::io::Result<()> {
        if !recursive {
            return self.add(st, sub, dir, Kind::Target { recursive, top });
        }
        for (i, d) in crate::discovery::glob::with_subdirs(dir).into_iter().enumerate() {
            self.add(st, sub, &d, Kind::Target { recursive, top: top && i == 0 })?;
        }
        Ok(())
    }

    /// Makes `sub`'s watches match its wanted directories: each existing one
    /// watched, each missing one through its nearest existing parent.
    /// Watches what `sub` wants and is not watched yet; returns true when a
    /// wanted directory is newly watched (rescan). A directory that cannot
    /// be watched is noted as unwatched (said once): its files are polled.
    fn resolve(&self, st: &mut State, sub: u64) -> bool {
        let Some(wanted) = st.subs.get(&sub).map(|s| s.wanted.clone()) else { return false };
        let mut parents = HashSet::new();
        let mut added = false;
        let mut unwatched = Vec::new();
        for (dir, recursive) in wanted {
            let watched = st
                .by_wd
                .values()
                .flatten()
                .any(|e| e.sub == sub && e.path == dir && matches!(e.kind, Kind::Target { top: true, .. }));
            if watched {
                continue;
            }
            let failed = match self.watch_or_parent(st, sub, &dir, recursive) {
                Ok(Some(p)) => {
                    parents.insert(p);
                    None
                }
                Ok(None) => {
                    added = true;
                    None
                }
                Err(e) => Some(e),
            };
            if let Some((at, e)) = failed {
                let Some(s) = st.subs.get(&sub) else { continue };
                if !s.unwatched.iter().any(|(d, _)| *d == dir) {
                    tracing::warn!(dir = %at.display(), error = %explain(&e),
                        "cannot watch directory; polling the files in it (other directories stay watched)");
                }
                unwatched.push((dir, recursive));
            }
        }
        if let Some(s) = st.subs.get_mut(&sub) {
            s.unwatched = unwatched;
        }
        // Parents no longer needed are let go.
        let stale: Vec<(WatchDescriptor, PathBuf)> = st
            .by_wd
            .iter()
            .flat_map(|(wd, es)| {
                es.iter()
                    .filter(|e| e.sub == sub && e.kind == Kind::Parent && !parents.contains(&e.path))
                    .map(move |e| (wd.clone(), e.path.clone()))
            })
            .collect();
        for (wd, path) in stale {
            self.drop_entries(st, &wd, |e| e.sub == sub && e.kind == Kind::Parent && e.path == path);
        }
        added
    }

    /// Watches `dir` when it exists (`Ok(None)`), else its nearest existing
    /// parent (`Ok(Some(parent))`). A directory made between the look and
    /// the parent's watch raised no event the watch could see (`mkdir -p
    /// a/b` while `a` is being watched), so after a parent is watched the
    /// path is looked at again, until it stands still.
    fn watch_or_parent(
        &self,
        st: &mut State,
        sub: u64,
        dir: &Path,
        recursive: bool,
    ) -> Result<Option<PathBuf>, (PathBuf, std::io::Error)> {
        // Each turn follows a directory made meanwhile, one level deeper (a
        // path made and removed over and over settles on the last parent).
        let mut parent = None;
        for _ in 0..=dir.components().count() {
            if dir.is_dir() {
                return self.add_tree(st, sub, dir, recursive, true).map(|()| None).map_err(|e| (dir.to_path_buf(), e));
            }
            let p = nearest_existing(dir);
            if let Err(e) = self.add(st, sub, &p, Kind::Parent) {
                return Err((p, e));
            }
            if !dir.is_dir() && nearest_existing(dir) == p {
                return Ok(Some(p));
            }
            // A parent watched on the way and no longer needed goes with the
            // other stale ones at the end of `resolve`.
            parent = Some(p);
        }
        Ok(parent)
    }

    /// Removes the entries of `wd` that `pick` selects; the watch goes with
    /// its last entry, or gets the mask of those left.
    fn drop_entries(&self, st: &mut State, wd: &WatchDescriptor, pick: impl Fn(&Entry) -> bool) {
        let Some(mut entries) = st.by_wd.remove(wd) else { return };
        entries.retain(|e| !pick(e));
        let mut w = self.watches.lock().unwrap_or_else(|p| p.into_inner());
        if entries.is_empty() {
            let _ = w.remove(wd.clone());
            return;
        }
        let mask = Self::mask_of(st, &entries);
        let _ = w.add(&entries[0].path, mask);
        drop(w);
        st.by_wd.insert(wd.clone(), entries);
    }

    fn remove_sub(&self, st: &mut State, sub: u64) {
        let wds: Vec<WatchDescriptor> =
            st.by_wd.iter().filter(|(_, es)| es.iter().any(|e| e.sub == sub)).map(|(wd, _)| wd.clone()).collect();
        st.subs.remove(&sub);
        for wd in wds {
            self.drop_entries(st, &wd, |e| e.sub == sub);
        }
    }

    /// Turns write events of `sub` on or off (a watch another source wants
    /// writes from keeps reporting them; `sub` does not see them).
    fn set_writes(&self, sub: u64, on: bool) {
        let mut st = self.state();
        match st.subs.get_mut(&sub) {
            Some(s) if s.writes != on => s.writes = on,
            _ => return,
        }
        let st = &mut *st;
        let mut w = self.watches.lock().unwrap_or_else(|p| p.into_inner());
        for entries in st.by_wd.values() {
            if entries.iter().any(|e| e.sub == sub) {
                if let Err(e) = w.add(&entries[0].path, Self::mask_of(st, entries)) {
                    tracing::debug!(dir = %entries[0].path.display(), error = %e, "cannot change a directory watch");
                }
            }
        }
    }

    /// The reader thread: waits for events, hands them out, for ever.
    fn read_loop(&'static self, mut inotify: Inotify) {
        let mut buf = vec![0u8; BUFFER];
        loop {
            let mut pfd = libc::pollfd { fd: inotify.as_raw_fd(), events: libc::POLLIN, revents: 0 };
            // SAFETY: one valid pollfd for the duration of the call.
            let ready = unsafe { libc::poll(&mut pfd, 1, -1) };
            if ready <= 0 {
                continue;
            }
            if self.drain(&mut inotify, &mut buf) {
                std::thread::sleep(WRITE_BATCH);
            }
        }
    }

    /// Reads and hands out every pending event; true when they were all writes.
    fn drain(&self, inotify: &mut Inotify, buf: &mut [u8]) -> bool {
        let mut posts: HashMap<u64, Pending> = HashMap::new();
        let mut new_dirs: Vec<(u64, PathBuf)> = Vec::new();
        let mut resolve: HashSet<u64> = HashSet::new();
        let mut only_writes = true;
        let mut st = self.state();
        loop {
            let events = match inotify.read_events(buf) {
                Ok(e) => e,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    // Lost events (an overflow): every source rescans.
                    tracing::debug!(error = %e, "reading file-system events failed; rescanning");
                    for (id, _) in st.subs.iter() {
                        let p = posts.entry(*id).or_default();
                        (p.structural, p.lost) = (true, true);
                    }
                    break;
                }
            };
            for ev in events {
                if ev.mask.contains(EventMask::Q_OVERFLOW) {
                    for (id, _) in st.subs.iter() {
                        let p = posts.entry(*id).or_default();
                        (p.structural, p.lost) = (true, true);
                    }
                    only_writes = false;
                    continue;
                }
                let write = ev.mask == EventMask::MODIFY;
                only_writes &= write;
                let Some(entries) = st.by_wd.get(&ev.wd) else { continue };
                for e in entries {
                    match e.kind {
                        Kind::Target { recursive, top } => {
                            if write {
                                if st.subs.get(&e.sub).is_some_and(|s| s.writes) {
                                    posts.entry(e.sub).or_default().writes += 1;
                                }
                                continue;
                            }
                            let p = posts.entry(e.sub).or_default();
                            p.structural = true;
                            let arrived = ev.mask.intersects(EventMask::CREATE | EventMask::MOVED_TO);
                            let new_dir = ev.mask.contains(EventMask::ISDIR) && arrived;
                            match (new_dir, arrived, ev.name) {
                                (true, _, Some(name)) if recursive => new_dirs.push((e.sub, e.path.join(name))),
                                (false, true, Some(name)) => p.arrived.push(e.path.join(name)),
                                _ => {}
                            }
                            if top && ev.mask.intersects(EventMask::DELETE_SELF | EventMask::MOVE_SELF) {
                                resolve.insert(e.sub);
                            }
                        }
                        Kind::Parent if !write => {
                            resolve.insert(e.sub);
                        }
                        Kind::Parent => {}
                    }
                }
                if ev.mask.contains(EventMask::IGNORED) {
                    // The directory is gone (or was let go): a wanted one is
                    // watched through its parent until it is back.
                    if let Some(es) = st.by_wd.remove(&ev.wd) {
                        resolve.extend(es.iter().map(|e| e.sub));
                    }
                }
            }
        }
        for (sub, dir) in new_dirs {
            // What was made in it before its watch came was not seen.
            posts.entry(sub).or_default().lost = true;
            if let Err(e) = self.add_tree(&mut st, sub, &dir, true, false) {
                tracing::warn!(dir = %dir.display(), error = %explain(&e),
                    "cannot watch a new directory; its files are found at the next scan");
            }
        }
        for sub in resolve {
            // A top directory moved away: its watch follows it, so let it go.
            let moved: Vec<WatchDescriptor> = st
                .by_wd
                .iter()
                .filter(|(_, es)| {
                    es.iter()
                        .any(|e| e.sub == sub && matches!(e.kind, Kind::Target { top: true, .. }) && !e.path.is_dir())
                })
                .map(|(wd, _)| wd.clone())
                .collect();
            for wd in moved {
                self.drop_entries(&mut st, &wd, |e| e.sub == sub && !e.path.is_dir());
            }
            if self.resolve(&mut st, sub) {
                // A directory watched (again): it changed unseen meanwhile.
                let p = posts.entry(sub).or_default();
                (p.structural, p.lost) = (true, true);
            }
        }
        for (sub, post) in posts {
            if let Some(s) = st.subs.get(&sub) {
                if post.writes > 0 || post.structural {
                    s.shared.post(post);
                }
            }
        }
        only_writes
    }
}

/// One source's share of the hub: its events, waited for on its own thread.
pub struct Subscription {
    hub: &'static Hub,
    id: u64,
    shared: Arc<Shared>,
    /// Write events taken by the last wait.
    pub last_writes: usize,
}

impl Subscription {
    pub fn set_writes(&mut self, on: bool) {
        self.hub.set_writes(self.id, on);
    }

    /// The wanted directories that could not be watched (see [`SubState`]).
    pub fn unwatched(&self) -> Vec<(PathBuf, bool)> {
        self.hub.state().subs.get(&self.id).map(|s| s.unwatched.clone()).unwrap_or_default()
    }

    /// Waits up to `timeout` for events; after writes only, `coalesce` more.
    /// `None`: nothing came; `Some(true)`: files appeared, moved or went
    /// (rescan); `Some(false)`: writes only.
    pub fn wait(&mut self, timeout: Duration, coalesce: Duration) -> Option<bool> {
        self.last_writes = 0;
        let mut p = self.shared.lock();
        if p.writes == 0 && !p.structural {
            p = self
                .shared
                .cv
                .wait_timeout_while(p, timeout, |p| p.writes == 0 && !p.structural)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        if p.writes == 0 && !p.structural {
            return None;
        }
        if !p.structural && !coalesce.is_zero() {
            // Writes: let more of them gather, then take them all at once.
            drop(p);
            std::thread::sleep(coalesce);
            p = self.shared.lock();
        }
        self.last_writes = std::mem::take(&mut p.writes);
        Some(std::mem::take(&mut p.structural))
    }

    /// The entries created in or moved into the watched directories since
    /// the last call, and whether some may be missing (see [`Pending`]).
    pub fn take_arrivals(&mut self) -> (Vec<PathBuf>, bool) {
        let mut p = self.shared.lock();
        (std::mem::take(&mut p.arrived), std::mem::take(&mut p.lost))
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        let mut st = self.hub.state();
        self.hub.remove_sub(&mut st, self.id);
    }
}

#[cfg(test)]
mod tests;
