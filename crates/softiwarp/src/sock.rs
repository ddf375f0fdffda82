//! The socket's system calls, straight through `rustix` within tokio's
//! readiness bookkeeping: reads that clear readiness on a short read,
//! vectored writes without `SIGPIPE`, and the half-close.

use std::io::{self, IoSlice, IoSliceMut};

use tokio::net::TcpStream;

/// One `read` of the socket into `buf`. The system calls go straight
/// through `rustix` within tokio's readiness bookkeeping (`try_io`), which
/// spares the layers of `TcpStream::try_read` (a second readiness check,
/// mio, the standard library, libc's cancellation point) on every message.
///
/// A short read (fewer octets than asked, more than none) also clears the
/// socket's read readiness, as tokio's own `poll_read` does: a stream
/// socket that returned less than was asked had nothing more at that
/// instant, and data arriving later raises readiness again (the clear only
/// takes the readiness this read observed). Saves the read that would only
/// say EAGAIN, one system call per message.
pub(crate) fn sock_read(stream: &TcpStream, buf: &mut [u8]) -> io::Result<usize> {
    let asked = buf.len();
    read_clearing(stream, asked, || rustix::io::read(stream, buf))
}

/// [`sock_read`] into several buffers (`readv`).
pub(crate) fn sock_read_vectored(
    stream: &TcpStream,
    bufs: &mut [IoSliceMut<'_>],
) -> io::Result<usize> {
    let asked = bufs.iter().map(|b| b.len()).sum();
    read_clearing(stream, asked, || rustix::io::readv(stream, bufs))
}

/// One read through `read` (see [`sock_read`]).
fn read_clearing(
    stream: &TcpStream,
    asked: usize,
    read: impl FnOnce() -> rustix::io::Result<usize>,
) -> io::Result<usize> {
    let mut short = 0usize;
    let res = stream.try_io(tokio::io::Interest::READABLE, || {
        let n = read()?;
        if n > 0 && n < asked {
            // Reported as WouldBlock so that tokio clears the readiness;
            // the bytes are in the buffer and `short` says how many.
            short = n;
            Err(io::ErrorKind::WouldBlock.into())
        } else {
            Ok(n)
        }
    });
    if short > 0 {
        Ok(short)
    } else {
        res
    }
}

/// One write of `iov` to the socket (`send`, or `sendmsg` for several
/// slices, with `MSG_NOSIGNAL`: a peer that closed is an error, never a
/// `SIGPIPE`), straight through `rustix` as [`sock_read`] reads.
pub(crate) fn sock_write(stream: &TcpStream, iov: &[IoSlice<'_>]) -> io::Result<usize> {
    stream.try_io(tokio::io::Interest::WRITABLE, || {
        let flags = rustix::net::SendFlags::NOSIGNAL;
        Ok(match iov {
            [one] => rustix::net::send(stream, one, flags)?,
            _ => rustix::net::sendmsg(
                stream,
                iov,
                &mut rustix::net::SendAncillaryBuffer::default(),
                flags,
            )?,
        })
    })
}

/// Half-closes the stream both ways (its descriptor stays open).
pub(crate) fn shutdown(stream: &TcpStream) {
    // tokio's TcpStream has no shutdown(&self); a zero-length view of the
    // socket through std is enough to half-close it.
    use std::os::fd::{AsFd, BorrowedFd};
    let fd: BorrowedFd<'_> = stream.as_fd();
    if let Ok(owned) = fd.try_clone_to_owned() {
        let s = std::net::TcpStream::from(owned);
        let _ = s.shutdown(std::net::Shutdown::Both);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::future::poll_fn;
    use std::task::{Context, Waker};
    use tokio::io::AsyncWriteExt;

    /// Whether read readiness is set right now (without waiting).
    fn ready_now(s: &TcpStream) -> bool {
        s.poll_read_ready(&mut Context::from_waker(Waker::noop()))
            .is_ready()
    }

    #[tokio::test]
    async fn a_short_read_clears_readiness_and_new_data_raises_it() {
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let mut a = TcpStream::connect(l.local_addr().unwrap()).await.unwrap();
        let (b, _) = l.accept().await.unwrap();
        a.write_all(b"hello").await.unwrap();
        poll_fn(|cx| b.poll_read_ready(cx)).await.unwrap();

        let mut buf = [0u8; 64];
        let n = sock_read(&b, &mut buf).unwrap();
        assert_eq!(&buf[..n], b"hello");
        assert!(!ready_now(&b), "a short read leaves no readiness behind");

        a.write_all(b"again").await.unwrap();
        poll_fn(|cx| b.poll_read_ready(cx)).await.unwrap();
        let n = sock_read(&b, &mut buf).unwrap();
        assert_eq!(&buf[..n], b"again");
    }

    #[tokio::test]
    async fn a_full_read_keeps_readiness_for_the_rest() {
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let mut a = TcpStream::connect(l.local_addr().unwrap()).await.unwrap();
        let (b, _) = l.accept().await.unwrap();
        a.write_all(b"0123456789").await.unwrap();
        poll_fn(|cx| b.poll_read_ready(cx)).await.unwrap();
        // Wait until all ten bytes are in (one write on loopback arrives
        // whole, but the readiness may come first).
        let mut peek = [0u8; 16];
        while b.peek(&mut peek).await.unwrap() < 10 {
            tokio::task::yield_now().await;
        }

        let mut buf = [0u8; 4];
        let n = sock_read(&b, &mut buf).unwrap();
        assert_eq!(&buf[..n], b"0123");
        assert!(ready_now(&b), "a full read says nothing about what is left");
        let mut rest = [0u8; 16];
        let n = sock_read(&b, &mut rest).unwrap();
        assert_eq!(&rest[..n], b"456789");
        assert!(!ready_now(&b));
        let e = sock_read(&b, &mut rest).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::WouldBlock);
    }
}
