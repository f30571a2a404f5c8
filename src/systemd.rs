//! systemd integration for `Type=notify` services (sd_notify(3)): `READY=1`
//! once sources and the endpoint are up, `STATUS=` when what is wrong changes,
//! `STOPPING=1` when shutdown begins,
//! and `WATCHDOG=1` at half the interval systemd asks for (`WatchdogSec=`).
//!
//! Everything here is a no-op when `NOTIFY_SOCKET` is unset, that is, when the
//! agent does not run under a service manager that asked for notifications.
//! A failed notification is logged and never stops the agent.

use std::time::Duration;

use sd_notify::NotifyState;
use tokio::task::JoinHandle;

/// Tells the service manager that startup is finished, with a status line
/// (shown by `systemctl status`).
pub fn ready(status: &str) {
    send(&[NotifyState::Ready, NotifyState::Status(status)]);
}

/// A new status line (`systemctl status` shows it): what is wrong, or that all is well again.
pub fn status(status: &str) {
    send(&[NotifyState::Status(status)]);
}

/// Tells the service manager that shutdown has begun (flushing may take up to
/// `shutdown_timeout`).
pub fn stopping() {
    send(&[NotifyState::Stopping, NotifyState::Status("stopping: flushing and waiting for acknowledgements")]);
}

fn send(states: &[NotifyState<'_>]) {
    if let Err(e) = sd_notify::notify(states) {
        tracing::warn!(error = %e, "cannot notify the service manager (NOTIFY_SOCKET)");
    }
}

/// The keep-alive task: sends `WATCHDOG=1` every half `WATCHDOG_USEC` while
/// it lives. Dropping the guard stops it.
#[derive(Debug)]
pub struct Watchdog {
    task: Option<JoinHandle<()>>,
}

impl Watchdog {
    /// Starts the task on the current tokio runtime if systemd enabled the
    /// watchdog for this process (`WATCHDOG_USEC`, and `WATCHDOG_PID` equal to
    /// our pid when set); otherwise returns an idle guard.
    pub fn start() -> Watchdog {
        let task = sd_notify::watchdog_enabled().filter(|t| !t.is_zero()).map(|timeout| {
            let period = (timeout / 2).max(Duration::from_millis(1));
            tracing::debug!(?period, "systemd watchdog enabled");
            tokio::spawn(async move {
                let mut tick = tokio::time::interval(period);
                tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
                loop {
                    tick.tick().await;
                    send(&[NotifyState::Watchdog]);
                }
            })
        });
        Watchdog { task }
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        if let Some(t) = self.task.take() {
            t.abort();
        }
    }
}
