//! Reused large buffers for the hot path, and giving memory back when idle.
//!
//! Read chunks (a block of lines) and batch bodies are big (256 KiB to a few
//! MiB). Allocating them fresh for every read and every batch makes the
//! allocator map and unmap memory each time, and every page of it is faulted
//! in again: at full speed that was a third of the agent's system time. These
//! pools keep a few such buffers for reuse; a pool holds at most `max`.
//!
//! When the pipeline has moved nothing for [`IDLE_TRIM`], [`trim_idle`] frees
//! the pooled buffers and asks the allocator to return its free pages to the
//! system (glibc keeps freed memory inside its arenas otherwise), so an idle
//! agent holds only what it uses.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Bytes read from a file or stdin at once: the size of a read chunk.
pub const READ_BLOCK: usize = 256 << 10;

/// The pipeline idle this long frees pooled and free memory (see [`trim_idle`]).
pub const IDLE_TRIM: Duration = Duration::from_secs(2);

/// Bumped for every chunk the batcher takes: how [`trim_idle`] tells activity.
static ACTIVITY: AtomicU64 = AtomicU64::new(0);

/// Notes pipeline activity (one relaxed atomic add; called per chunk).
pub fn note_activity() {
    ACTIVITY.fetch_add(1, Ordering::Relaxed);
}

/// A bounded pool of `Vec<T>` buffers with at least `capacity` elements of room.
pub struct Pool<T> {
    inner: Mutex<Inner<T>>,
    capacity: usize,
    max: usize,
}

struct Inner<T> {
    free: Vec<Vec<T>>,
}

impl<T> Pool<T> {
    pub const fn new(capacity: usize, max: usize) -> Self {
        Self { inner: Mutex::new(Inner { free: Vec::new() }), capacity, max }
    }

    /// The room every buffer of this pool has.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// An empty buffer with room for at least [`Pool::capacity`] elements:
    /// a reused one when there is one.
    pub fn take(&self) -> Vec<T> {
        if let Ok(mut inner) = self.inner.lock() {
            if let Some(v) = inner.free.pop() {
                return v;
            }
        }
        Vec::with_capacity(self.capacity)
    }

    /// Returns a buffer for reuse. Buffers of another size, or beyond the
    /// pool's bound, are simply freed.
    pub fn give(&self, mut v: Vec<T>) {
        let cap = v.capacity();
        // A buffer that grew far past the pool's size would pin that memory.
        if cap < self.capacity || cap > self.capacity * 2 {
            return;
        }
        v.clear();
        if let Ok(mut inner) = self.inner.lock() {
            if inner.free.len() < self.max {
                inner.free.push(v);
            }
        }
    }

    /// Frees the pooled buffers.
    pub fn clear(&self) {
        let dropped = self.inner.lock().map(|mut i| std::mem::take(&mut i.free)).unwrap_or_default();
        drop(dropped);
    }

    /// Buffers waiting for reuse.
    pub fn pooled(&self) -> usize {
        self.inner.lock().map(|i| i.free.len()).unwrap_or(0)
    }
}

/// Read chunks' text: one per block read from a file or stdin. Reads smaller
/// than a quarter of a block allocate exactly what they need instead.
pub static CHUNK_TEXT: Pool<u8> = Pool::new(READ_BLOCK, 4);

/// Uncompressed push bodies. Sized by
/// [`batch_capacity`] for the configured `batch.max_bytes`.
pub static BODIES: std::sync::OnceLock<Pool<u8>> = std::sync::OnceLock::new();

/// Compressed bodies.
pub static GZIP_OUT: std::sync::OnceLock<Pool<u8>> = std::sync::OnceLock::new();

/// Room for a batch body of `max_bytes` (plus framing slack).
pub fn batch_capacity(max_bytes: usize) -> usize {
    max_bytes + (max_bytes >> 4)
}

/// The body pool for batches of `max_bytes` (the first caller's size wins;
/// buffers of another size are not reused).
pub fn bodies(max_bytes: usize, in_flight: usize) -> &'static Pool<u8> {
    BODIES.get_or_init(|| Pool::new(batch_capacity(max_bytes), in_flight + 1))
}

/// The pool for gzip output of batches of `max_bytes`.
pub fn gzip_out(max_bytes: usize, in_flight: usize) -> &'static Pool<u8> {
    // Level-1 deflate of log text is a quarter to a third of the input; room
    // for half avoids growing in all but unusual batches.
    GZIP_OUT.get_or_init(|| Pool::new(max_bytes / 2 + 1024, in_flight + 1))
}

/// What [`trim_idle`] saw last: the activity count, since when, and whether it trimmed since.
static LAST_SEEN: Mutex<Option<(u64, Instant, bool)>> = Mutex::new(None);

/// Called periodically: once the pipeline has been idle for [`IDLE_TRIM`],
/// frees the pooled buffers and returns free allocator memory to the system
/// (once per idle period). Returns true when it trimmed.
pub fn trim_idle() -> bool {
    let now = Instant::now();
    let activity = ACTIVITY.load(Ordering::Relaxed);
    let Ok(mut last) = LAST_SEEN.lock() else { return false };
    match &mut *last {
        Some((seen, since, trimmed)) if *seen == activity => {
            if *trimmed || now.duration_since(*since) < IDLE_TRIM {
                return false;
            }
            *trimmed = true;
        }
        other => {
            *other = Some((activity, now, false));
            return false;
        }
    }
    drop(last);
    release_memory();
    true
}

/// Frees every pool's buffers and asks the allocator to give free pages back.
pub fn release_memory() {
    CHUNK_TEXT.clear();
    if let Some(p) = BODIES.get() {
        p.clear();
    }
    if let Some(p) = GZIP_OUT.get() {
        p.clear();
    }
    release_code();
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only releases free memory of glibc's arenas; it is
    // thread-safe and touches no memory in use.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Drops the pages of the agent's own machine code from its resident set.
///
/// Two thirds of the daemon's resident memory was the code it had run (the
/// file-backed pages of the binary, `RssFile`), most of it once: argument
/// parsing, config loading, compiling the plan, starting the runtime. Those
/// pages stay mapped, counted in the process's RSS, until it exits. This asks
/// the kernel to unmap them from this process (the page cache keeps them);
/// what runs again is mapped back by a minor fault, so after a moment only
/// the code in use is resident. Only the binary's executable mappings
/// (`r-xp` in `/proc/self/maps`) are dropped: they are never written (no
/// text relocations), so mapping them again from the file gives the same
/// bytes. Read-only data is left alone (relocated pages of it are private
/// copies that the file does not hold).
pub fn release_code() {
    #[cfg(target_os = "linux")]
    {
        let (Ok(maps), Ok(exe)) = (std::fs::read_to_string("/proc/self/maps"), std::fs::read_link("/proc/self/exe"))
        else {
            return;
        };
        for (start, end) in code_ranges(&maps, &exe.to_string_lossy()) {
            // SAFETY: [start, end) is a whole mapping of this process's
            // executable, read-only and file-backed: MADV_DONTNEED drops its
            // pages from the page tables and the next access maps the same
            // bytes from the file again; no memory anyone holds changes.
            unsafe {
                libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_DONTNEED);
            }
        }
    }
}

/// The address ranges of `exe`'s executable mappings in a `/proc/PID/maps` text.
fn code_ranges(maps: &str, exe: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    for line in maps.lines() {
        // `start-end perms offset dev inode   path`
        let mut f = line.splitn(6, ' ');
        let (Some(range), Some(perms)) = (f.next(), f.next()) else { continue };
        let path = f.nth(3).map(str::trim_start);
        if perms != "r-xp" || path != Some(exe) {
            continue;
        }
        let Some((a, b)) = range.split_once('-') else { continue };
        if let (Ok(a), Ok(b)) = (usize::from_str_radix(a, 16), usize::from_str_radix(b, 16)) {
            if a < b {
                out.push((a, b));
            }
        }
    }
    out
}

/// A pooled buffer that goes back to its pool when the last `Bytes` over it is dropped.
pub struct Pooled {
    buf: Vec<u8>,
    pool: &'static Pool<u8>,
}

impl Pooled {
    pub fn new(buf: Vec<u8>, pool: &'static Pool<u8>) -> Self {
        Self { buf, pool }
    }

    /// Wraps the buffer in `Bytes` without copying it.
    pub fn into_bytes(self) -> bytes::Bytes {
        bytes::Bytes::from_owner(self)
    }
}

impl AsRef<[u8]> for Pooled {
    fn as_ref(&self) -> &[u8] {
        &self.buf
    }
}

impl Drop for Pooled {
    fn drop(&mut self) {
        self.pool.give(std::mem::take(&mut self.buf));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_given_buffer_is_taken_again_and_the_pool_is_bounded() {
        let pool: Pool<u8> = Pool::new(1024, 2);
        let mut a = pool.take();
        assert!(a.capacity() >= 1024);
        a.extend_from_slice(b"hello");
        let ptr = a.as_ptr();
        pool.give(a);
        let b = pool.take();
        assert_eq!(b.as_ptr(), ptr, "the same allocation is reused");
        assert!(b.is_empty(), "a reused buffer is empty");
        pool.give(b);
        pool.give(Vec::with_capacity(1024));
        pool.give(Vec::with_capacity(1024));
        assert_eq!(pool.pooled(), 2, "at most `max` buffers are kept");
        pool.give(Vec::with_capacity(10));
        pool.give(Vec::with_capacity(1 << 20));
        assert_eq!(pool.pooled(), 2, "buffers of another size are not kept");
    }

    #[test]
    fn a_cleared_pool_frees_its_buffers() {
        let pool: Pool<u8> = Pool::new(64, 4);
        let v = pool.take();
        pool.give(v);
        assert_eq!(pool.pooled(), 1);
        pool.clear();
        assert_eq!(pool.pooled(), 0);
    }

    #[test]
    fn bytes_over_a_pooled_buffer_return_it_when_dropped() {
        static POOL: Pool<u8> = Pool::new(16, 2);
        let mut v = POOL.take();
        v.extend_from_slice(b"abc");
        let bytes = Pooled::new(v, &POOL).into_bytes();
        let clone = bytes.clone();
        drop(bytes);
        assert_eq!(POOL.pooled(), 0, "still in use by a clone");
        assert_eq!(&clone[..], b"abc");
        drop(clone);
        assert_eq!(POOL.pooled(), 1);
    }

    #[test]
    fn only_the_executables_code_mappings_are_dropped() {
        let maps = "\
55d0c0000000-55d0c0100000 r--p 00000000 fd:01 42   /usr/bin/tailship
55d0c0100000-55d0c0900000 r-xp 00100000 fd:01 42   /usr/bin/tailship
55d0c0900000-55d0c0a00000 r--p 00900000 fd:01 42   /usr/bin/tailship
55d0c0a00000-55d0c0a10000 rw-p 00a00000 fd:01 42   /usr/bin/tailship
7f0000000000-7f0000100000 r-xp 00000000 fd:01 77   /usr/lib/libc.so.6
7f0000200000-7f0000300000 r-xp 00000000 fd:01 43   /usr/bin/tailship with space
7ffc00000000-7ffc00021000 rw-p 00000000 00:00 0    [stack]";
        assert_eq!(code_ranges(maps, "/usr/bin/tailship"), vec![(0x55d0c0100000, 0x55d0c0900000)]);
        assert_eq!(code_ranges(maps, "/usr/bin/tailship with space"), vec![(0x7f0000200000, 0x7f0000300000)]);
        // This process: its own code, dropped and mapped back as it runs on.
        release_code();
        let v: Vec<u64> = (0..1000).collect();
        assert_eq!(v.iter().sum::<u64>(), 499_500);
    }
}
