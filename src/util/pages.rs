//! The program's own pages: giving back the ones only starting needed.
//!
//! Starting reads more of the binary than running does: the loader reads
//! every relocation (`.rela.dyn`, 1.3 MiB), and parsing the command line and
//! the config, compiling the plan and starting the sources run code and read
//! constants that a running agent never touches again. Those pages stay
//! resident (and counted in its RSS) until the kernel needs the memory.
//! [`release_startup`] drops the read-only and code pages of the executable
//! from this process's memory once; what is used later is read back from
//! the page cache on its first touch (the code that runs sits together: see
//! `build.rs`). Only segments that were never written are dropped: the
//! relocated data (RELRO) and writable data keep their contents.

/// Drops the executable's resident read-only and code pages (Linux); the
/// kernel reads back what is touched again. Returns the bytes advised.
pub fn release_startup() -> usize {
    #[cfg(target_os = "linux")]
    {
        let mut advised = 0usize;
        // SAFETY: the callback only reads the program headers glibc hands it,
        // and `advised` outlives the call.
        unsafe {
            libc::dl_iterate_phdr(Some(each_object), (&mut advised as *mut usize).cast());
        }
        advised
    }
    #[cfg(not(target_os = "linux"))]
    0
}

/// Called for each loaded object; the first is the executable itself (an
/// empty name), and it stops the iteration there (returns 1).
#[cfg(target_os = "linux")]
unsafe extern "C" fn each_object(
    info: *mut libc::dl_phdr_info,
    _size: libc::size_t,
    data: *mut libc::c_void,
) -> libc::c_int {
    // SAFETY: glibc passes a valid `dl_phdr_info` whose `dlpi_phdr` points at
    // `dlpi_phnum` program headers, and `data` is the `usize` given above.
    unsafe {
        let info = &*info;
        let advised = &mut *data.cast::<usize>();
        let phdrs = std::slice::from_raw_parts(info.dlpi_phdr, usize::from(info.dlpi_phnum));
        let page = page_size();
        for ph in phdrs {
            if ph.p_type != libc::PT_LOAD || ph.p_flags & libc::PF_W != 0 {
                continue;
            }
            let Some((start, len)) = inner_pages(info.dlpi_addr + ph.p_vaddr, ph.p_memsz, page) else { continue };
            if libc::madvise(start as *mut libc::c_void, len, libc::MADV_DONTNEED) == 0 {
                *advised += len;
            }
        }
    }
    1
}

#[cfg(target_os = "linux")]
fn page_size() -> u64 {
    // SAFETY: sysconf has no preconditions.
    let n = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    u64::try_from(n).ok().filter(|n| n.is_power_of_two()).unwrap_or(4096)
}

/// The whole pages inside `[addr, addr + len)`: a page shared with a
/// neighbouring (perhaps written) segment is left alone.
fn inner_pages(addr: u64, len: u64, page: u64) -> Option<(usize, usize)> {
    let start = addr.checked_add(page - 1)? & !(page - 1);
    let end = addr.checked_add(len)? & !(page - 1);
    (end > start).then(|| (start as usize, (end - start) as usize))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_whole_pages_inside_the_segment() {
        assert_eq!(inner_pages(0x1000, 0x3000, 0x1000), Some((0x1000, 0x3000)));
        assert_eq!(inner_pages(0x10c0, 0x3000, 0x1000), Some((0x2000, 0x2000)));
        assert_eq!(inner_pages(0x10c0, 0x800, 0x1000), None);
        assert_eq!(inner_pages(u64::MAX - 10, 5, 0x1000), None);
    }

    #[test]
    fn releasing_keeps_the_program_running() {
        let advised = release_startup();
        if cfg!(target_os = "linux") {
            assert!(advised > 0);
        }
        // Code and constants are read back on their next touch.
        let v: Vec<String> = (0..100).map(|i| format!("{i:>4}")).collect();
        assert_eq!(v[42], "  42");
    }
}
