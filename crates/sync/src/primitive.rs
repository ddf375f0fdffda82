//! The atomics and the lock the primitives are built on: the standard
//! library's atomics and `parking_lot`'s mutex, or `loom`'s models of them
//! when the crate is built with `--cfg loom` (the model checker then runs
//! the interleavings of `tests/loom.rs`).

#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{AtomicBool, AtomicU64};

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicBool, AtomicU64};

/// A lock without poisoning: `parking_lot`'s, or `loom`'s model.
#[derive(Debug, Default)]
pub(crate) struct Mutex<T>(
    #[cfg(not(loom))] parking_lot::Mutex<T>,
    #[cfg(loom)] loom::sync::Mutex<T>,
);

#[cfg(not(loom))]
pub(crate) type MutexGuard<'a, T> = parking_lot::MutexGuard<'a, T>;

#[cfg(loom)]
pub(crate) type MutexGuard<'a, T> = loom::sync::MutexGuard<'a, T>;

impl<T> Mutex<T> {
    /// A lock holding `value`.
    #[cfg(not(loom))]
    pub(crate) const fn new(value: T) -> Self {
        Mutex(parking_lot::Mutex::new(value))
    }

    /// A lock holding `value`.
    #[cfg(loom)]
    pub(crate) fn new(value: T) -> Self {
        Mutex(loom::sync::Mutex::new(value))
    }

    /// Takes the lock.
    #[inline]
    pub(crate) fn lock(&self) -> MutexGuard<'_, T> {
        #[cfg(not(loom))]
        {
            self.0.lock()
        }
        #[cfg(loom)]
        {
            // A panic under the model's lock fails the model anyway.
            self.0.lock().unwrap_or_else(|p| p.into_inner())
        }
    }
}
