//! The async runtime the subcommands run on, and the signal that stops
//! the servers.

use anyhow::Context;

/// Which tokio scheduler a subcommand runs on.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Scheduler {
    /// One thread: a client, a probe, one connection.
    CurrentThread,
    /// Worker threads: the servers and the NFS client tools.
    MultiThread,
}

/// The async runtime a subcommand runs on (I/O and timers enabled).
pub(crate) fn runtime(scheduler: Scheduler) -> anyhow::Result<tokio::runtime::Runtime> {
    let mut builder = match scheduler {
        Scheduler::CurrentThread => tokio::runtime::Builder::new_current_thread(),
        Scheduler::MultiThread => tokio::runtime::Builder::new_multi_thread(),
    };
    builder
        .enable_all()
        .build()
        .context("cannot start the async runtime")
}

/// Resolves after `duration` seconds if given, or at Ctrl-C or SIGTERM.
pub(crate) async fn stop_signal(duration: Option<u64>) {
    let deadline = async {
        match duration {
            Some(s) => tokio::time::sleep(std::time::Duration::from_secs(s)).await,
            None => std::future::pending().await,
        }
    };
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        let mut term = signal(SignalKind::terminate()).ok();
        let term = async {
            match term.as_mut() {
                Some(t) => {
                    t.recv().await;
                }
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            () = deadline => {}
            _ = tokio::signal::ctrl_c() => {}
            () = term => {}
        }
    }
    #[cfg(not(unix))]
    {
        tokio::select! {
            () = deadline => {}
            _ = tokio::signal::ctrl_c() => {}
        }
    }
}
