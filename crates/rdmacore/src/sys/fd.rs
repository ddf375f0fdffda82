//! The descriptors of the completion and event channels: non-blocking
//! mode and registration with the runtime's reactor.

use std::os::fd::RawFd;

use tokio::io::unix::AsyncFd;

/// Puts the descriptor `fd` in non-blocking mode.
pub(crate) fn set_nonblocking(fd: i32) -> std::io::Result<()> {
    // SAFETY: fcntl on a descriptor we own, with integer arguments only.
    unsafe {
        let flags = libc::fcntl(fd, libc::F_GETFL);
        if flags < 0 || libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK) < 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// A file descriptor owned elsewhere (the channel), registered with tokio.
pub(crate) struct FdRef(pub(crate) RawFd);

impl std::os::fd::AsRawFd for FdRef {
    fn as_raw_fd(&self) -> RawFd {
        self.0
    }
}

/// Registers a channel's descriptor with the runtime's reactor (read
/// readiness). The caller keeps the descriptor open until the returned
/// `AsyncFd` is dropped: the owners declare it before the channel, so it is
/// dropped first.
pub(crate) fn register(fd: RawFd) -> std::io::Result<AsyncFd<FdRef>> {
    // SAFETY: `fd` is the open descriptor of a completion or event channel
    // that outlives the AsyncFd (see above); FdRef always returns it.
    unsafe { AsyncFd::register_with_interest(FdRef(fd), tokio::io::Interest::READABLE) }
        .map_err(std::io::Error::from)
}
