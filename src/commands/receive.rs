//! `tailship receive`: flags to [`crate::receive::ReceiveOptions`], bind, print the
//! listening line (tests read the port from it), serve until SIGTERM or SIGINT.

use std::io::Write;

use anyhow::Context;

use crate::cli::ReceiveArgs;
use crate::commands::CommandError;
use crate::receive::{BasicAuth, Faults, ReceiveOptions};
use crate::util::Secret;

/// Turns the flags into options; an unreadable password file is a usage error.
fn options(args: &ReceiveArgs) -> anyhow::Result<ReceiveOptions> {
    let basic_auth = match (&args.basic_auth_user, &args.basic_auth_password_file) {
        (Some(user), Some(file)) => {
            let password = crate::util::read_secret_file(file)
                .with_context(|| format!("--basic-auth-password-file {}", file.display()))
                .map_err(CommandError::usage)?;
            Some(BasicAuth { user: user.clone(), password })
        }
        _ => None,
    };
    let max_body =
        usize::try_from(args.max_body).map_err(|_| CommandError::usage(anyhow::anyhow!("--max-body is too large")))?;
    Ok(ReceiveOptions {
        api_prefix: args.api_prefix.clone(),
        multi_tenant: args.multi_tenant,
        basic_auth,
        store: args.store,
        max_entries: args.max_entries,
        max_bytes: args.max_bytes,
        max_query_bytes: usize::try_from(args.max_query_bytes).unwrap_or(usize::MAX),
        max_body,
        max_query_limit: args.max_query_limit,
        faults: Faults {
            fail_every: args.fail_every,
            fail_first: args.fail_first,
            fail_status: args.fail_status,
            retry_after: args.retry_after,
            latency: args.latency,
            answer_after_store: args.answer_after_store,
        },
        webhook_keys: args.webhook_keys.iter().map(Secret::new).collect(),
        print_alerts: true,
        max_connections: args.max_connections,
        header_timeout: args.header_read_timeout,
    })
}

/// The store takes request bodies of a few MiB at full speed. The agent's
/// allocator settings (see `main.rs`) map every large buffer fresh and give
/// it back at once, which costs a page fault per 4 KiB each time; a store
/// that serves a benchmark keeps them in its heap for reuse instead, so it
/// costs less CPU than the agent it measures.
fn keep_request_buffers() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    if std::env::var_os("MALLOC_MMAP_THRESHOLD_").is_none() {
        // SAFETY: mallopt only changes allocator tuning; no runtime thread exists yet.
        unsafe {
            libc::mallopt(libc::M_MMAP_THRESHOLD, 64 << 20);
            libc::mallopt(libc::M_TRIM_THRESHOLD, 256 << 20);
        }
    }
}

/// `tailship receive`: serve the embedded log store until SIGTERM or SIGINT.
pub fn receive(args: &ReceiveArgs) -> anyhow::Result<()> {
    let opts = options(args)?;
    keep_request_buffers();
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().context("starting the runtime")?;
    rt.block_on(async {
        let listener = tokio::net::TcpListener::bind(&args.listen)
            .await
            .with_context(|| format!("cannot listen on {}", args.listen))?;
        let addr = listener.local_addr()?;
        let shutdown = crate::shutdown::on_signals();
        {
            let mut out = std::io::stdout().lock();
            writeln!(out, "tailship receive listening on http://{addr}")?;
            out.flush()?;
        }
        crate::receive::serve(listener, opts, shutdown).await
    })
}
