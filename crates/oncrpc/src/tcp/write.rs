//! The send side of a TCP connection: the queue of records the senders
//! could not write at once, the writer task that finishes them, and the
//! vectored writes.

use parking_lot::Mutex;
use std::collections::VecDeque;
use std::io::IoSlice;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use rpcrdma_xdr::Payload;
use tokio::net::TcpStream;
use tokio::sync::Notify;

use crate::budget::Held;
use crate::record::frame;
use crate::util::lock;

/// Records coalesced into one vectored write.
const WRITE_BATCH: usize = 32;

/// Most I/O vectors handed to one `writev` (Linux `IOV_MAX` is 1024).
const MAX_IOVECS: usize = 1024;

/// What the transport and its writer task share: whether the
/// connection is closed, and who to wake when it is.
pub(super) struct Shared {
    pub(super) closed: AtomicBool,
    pub(super) notify: Notify,
}

impl Shared {
    pub(super) fn close(&self) {
        self.closed.store(true, Ordering::Release);
        self.notify.notify_waiters();
    }
}

/// Records waiting for the writer task, oldest first, each with the bytes
/// of it already written.
#[derive(Default)]
pub(super) struct WriteState {
    /// The writer task owns the socket's send side (it has queued records
    /// or is writing one); senders must queue behind it.
    pub(super) busy: bool,
    /// Records, the octets of each already written, and each one's charge
    /// to the memory budget (a server's replies).
    pub(super) queue: VecDeque<(Payload, usize, Option<Held>)>,
    pub(super) closing: bool,
    pub(super) failed: bool,
}

pub(super) struct WriteSide {
    pub(super) state: Mutex<WriteState>,
    /// Wakes the writer task.
    pub(super) work: Notify,
    /// Wakes senders waiting for queue space.
    pub(super) space: Notify,
    pub(super) max_fragment: usize,
    /// A server's connection: drop it when its queued replies make no
    /// progress for this long.
    pub(super) stall: Option<Duration>,
    /// For the log line of a drop.
    pub(super) peer: String,
}

/// Writes as much of `slices` (after skipping `skip` bytes) as the socket
/// takes without blocking; returns the bytes written including `skip`.
pub(super) fn try_write_slices(
    stream: &TcpStream,
    slices: &[&[u8]],
    skip: usize,
) -> std::io::Result<usize> {
    let total: usize = slices.iter().map(|s| s.len()).sum();
    let mut done = skip;
    while done < total {
        let iov = iovecs(slices, done);
        match stream.try_write_vectored(&iov) {
            Ok(0) => return Err(std::io::ErrorKind::WriteZero.into()),
            Ok(n) => done += n,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(done)
}

/// I/O vectors for `slices` starting `skip` bytes in (at most `MAX_IOVECS`).
fn iovecs<'a>(slices: &[&'a [u8]], mut skip: usize) -> Vec<IoSlice<'a>> {
    let mut iov = Vec::with_capacity(slices.len().min(MAX_IOVECS));
    for s in slices {
        if iov.len() == MAX_IOVECS {
            break;
        }
        if skip >= s.len() {
            skip -= s.len();
            continue;
        }
        iov.push(IoSlice::new(&s[skip..]));
        skip = 0;
    }
    iov
}

/// Finishes records the senders could not write at once, in order,
/// coalescing queued records into one vectored write.
pub(super) async fn writer(stream: Arc<TcpStream>, write: Arc<WriteSide>, shared: Arc<Shared>) {
    loop {
        let work = write.work.notified();
        tokio::pin!(work);
        work.as_mut().enable();
        let batch: Vec<(Payload, usize)> = {
            let mut st = lock(&write.state);
            if st.failed {
                break;
            }
            if st.queue.is_empty() {
                st.busy = false;
                if st.closing {
                    break;
                }
                Vec::new()
            } else {
                st.busy = true;
                st.queue
                    .iter()
                    .take(WRITE_BATCH)
                    .map(|(p, skip, _)| (p.clone(), *skip))
                    .collect()
            }
        };
        if batch.is_empty() {
            work.await;
            continue;
        }
        let result = write_batch(&stream, &batch, write.max_fragment, write.stall).await;
        let mut st = lock(&write.state);
        match result {
            Ok(()) => {
                for _ in 0..batch.len() {
                    st.queue.pop_front();
                }
                drop(st);
                write.space.notify_waiters();
            }
            Err(e) if e.kind() == std::io::ErrorKind::TimedOut => {
                let held: u64 = st
                    .queue
                    .iter()
                    .filter_map(|(_, _, h)| h.as_ref())
                    .map(Held::octets)
                    .sum();
                tracing::warn!(
                    peer = %write.peer,
                    replies = st.queue.len(),
                    held,
                    "dropping a client that has read none of its replies for {:?} (they count against the server's memory budget: --max-memory, --max-connection-memory)",
                    write.stall.unwrap_or_default(),
                );
                st.failed = true;
                st.queue.clear();
                break;
            }
            Err(e) => {
                tracing::debug!(error = %e, "write failed; closing");
                st.failed = true;
                st.queue.clear();
                break;
            }
        }
    }
    {
        let mut st = lock(&write.state);
        st.failed = true;
        st.queue.clear();
    }
    write.space.notify_waiters();
    shared.close();
    shutdown_write(&stream);
}

/// Writes a batch; with `stall`, fails with `TimedOut` when the socket
/// takes nothing for that long.
async fn write_batch(
    stream: &TcpStream,
    batch: &[(Payload, usize)],
    max_fragment: usize,
    stall: Option<Duration>,
) -> std::io::Result<()> {
    let pieces: Vec<Vec<&[u8]>> = batch.iter().map(|(p, _)| p.pieces()).collect();
    let segments: Vec<Vec<_>> = pieces.iter().map(|p| frame(p, max_fragment)).collect();
    let mut slices: Vec<&[u8]> = Vec::new();
    for (segs, (_, skip)) in segments.iter().zip(batch) {
        // Skip what the sender already wrote of this record.
        let mut skip = *skip;
        for s in segs {
            let b = s.as_bytes();
            if skip >= b.len() {
                skip -= b.len();
            } else {
                slices.push(&b[skip..]);
                skip = 0;
            }
        }
    }
    let total: usize = slices.iter().map(|s| s.len()).sum();
    let mut done = 0;
    while done < total {
        match stall {
            Some(stall) => match tokio::time::timeout(stall, stream.writable()).await {
                Ok(r) => r?,
                Err(_) => return Err(std::io::ErrorKind::TimedOut.into()),
            },
            None => stream.writable().await?,
        }
        done = try_write_slices(stream, &slices, done)?;
    }
    Ok(())
}

/// Shuts down the sending direction so the peer reads end-of-stream.
fn shutdown_write(stream: &TcpStream) {
    use std::os::fd::AsFd;
    match stream.as_fd().try_clone_to_owned() {
        Ok(fd) => {
            let _ = std::net::TcpStream::from(fd).shutdown(std::net::Shutdown::Write);
        }
        Err(e) => tracing::debug!(error = %e, "cannot shut the socket down"),
    }
}
