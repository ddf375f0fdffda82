//! The threads a bench runs its sides on: each side of a measure on an OS
//! thread of its own with a current-thread tokio runtime ([`on_thread`]),
//! or a server on a runtime with a worker per CPU ([`on_all_cpus`]).

use anyhow::{anyhow, Context};

/// Runs `f` on a fresh current-thread runtime in a new OS thread (every
/// bench puts each side of a measure on its own thread).
pub fn on_thread<T, F>(name: &str, f: F) -> std::thread::JoinHandle<anyhow::Result<T>>
where
    T: Send + 'static,
    F: std::future::Future<Output = anyhow::Result<T>> + Send + 'static,
{
    std::thread::Builder::new()
        .name(name.into())
        .spawn(move || {
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .context("tokio runtime")?
                .block_on(f)
        })
        .expect("spawn thread")
}

/// Runs `f` on a fresh multi-threaded runtime (one worker per CPU) in a
/// new OS thread.
pub fn on_all_cpus<T, F>(name: &str, f: F) -> std::thread::JoinHandle<anyhow::Result<T>>
where
    T: Send + 'static,
    F: std::future::Future<Output = anyhow::Result<T>> + Send + 'static,
{
    std::thread::Builder::new()
        .name(name.into())
        .spawn(move || {
            tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .thread_name("bench-server-worker")
                .build()
                .context("tokio runtime")?
                .block_on(f)
        })
        .expect("spawn thread")
}

/// How a bench server's thread is started: [`on_thread`] (one
/// current-thread runtime) or [`on_all_cpus`].
pub type Spawn = fn(
    &str,
    std::pin::Pin<Box<dyn std::future::Future<Output = anyhow::Result<()>> + Send>>,
) -> std::thread::JoinHandle<anyhow::Result<()>>;

/// The result of a bench thread (an error if it panicked).
pub(crate) fn join<T>(h: std::thread::JoinHandle<anyhow::Result<T>>) -> anyhow::Result<T> {
    h.join().map_err(|_| anyhow!("benchmark thread panicked"))?
}
