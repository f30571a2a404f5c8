use clap::Parser;

fn main() {
    tune_allocator();
    let cli = tailship::cli::Cli::parse();
    use tailship::cli::Command;
    let default_level = match &cli.command {
        Command::Demo(_) => "warn",
        Command::Top(_) => "error",
        Command::Inspect(_) => "warn",
        Command::Query(a) if a.service.quiet => "error",
        Command::Tail(a) if a.service.quiet => "error",
        Command::Labels(a) if a.service.quiet => "error",
        Command::InstantQuery(a) if a.service.quiet => "error",
        Command::Series(a) if a.service.quiet => "error",
        _ => "info",
    };
    // `[tracing]` is read before logging starts (its layer cannot be added
    // later); the config is loaded again, with its errors reported, by `run`.
    let traces = match &cli.command {
        Command::Run(a) => {
            let path = a.config.clone().unwrap_or_else(|| tailship::cli::DEFAULT_CONFIG.into());
            tailship::config::load(&path).ok().map(|c| c.tracing).filter(|t| t.enabled).map(|t| {
                tailship::logging::Traces {
                    url: t.traces_url(),
                    service_name: t.service_name,
                    sampling_ratio: t.sampling_ratio,
                }
            })
        }
        _ => None,
    };
    tailship::logging::init(cli.log_format, cli.log_level, default_level, traces);
    let code = tailship::commands::dispatch(cli);
    tailship::logging::shutdown();
    std::process::exit(code);
}

/// Keeps the agent's memory close to what it really holds: one malloc arena
/// instead of one per thread (each arena keeps its own free memory: a second
/// one cost 3.5 MiB of the 34 MiB peak at 10,000 files, and saved no CPU in
/// the daemon and push benchmarks), and large buffers (batch bodies, read blocks)
/// from mmap with a fixed threshold, so freeing them returns them to the OS
/// instead of leaving them in a fragmented heap. Freed heap memory is kept up
/// to 4 MiB (glibc gave back anything over 128 KiB at each free, and the
/// batches of the next second faulted those pages in again: a tenth of the
/// agent's CPU at 20,000 lines/s); `pool::trim_idle` returns it when idle.
/// glibc's own `MALLOC_ARENA_MAX`, `MALLOC_MMAP_THRESHOLD_` and
/// `MALLOC_TRIM_THRESHOLD_` environment variables still win.
fn tune_allocator() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only changes allocator tuning and is called before any other thread exists.
    unsafe {
        if std::env::var_os("MALLOC_ARENA_MAX").is_none() {
            libc::mallopt(libc::M_ARENA_MAX, 1);
        }
        if std::env::var_os("MALLOC_MMAP_THRESHOLD_").is_none() {
            libc::mallopt(libc::M_MMAP_THRESHOLD, 256 * 1024);
        }
        if std::env::var_os("MALLOC_TRIM_THRESHOLD_").is_none() {
            libc::mallopt(libc::M_TRIM_THRESHOLD, 4 << 20);
        }
    }
}
