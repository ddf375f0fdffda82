//! The raw TCP protocols the RPC paths are measured against: the 64-octet
//! ping-pong, the stream into a sink, and the exchange kept many messages
//! deep. Each has its server side here (run by the bench server,
//! `rpc/server.rs`) and its client side.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

use anyhow::bail;
use bytes::Bytes;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::aligned::PageAligned;
use crate::cpu::{Moved, Stopwatch};
use crate::stats::MIB;

/// Most receive buffers a raw TCP stream may ask the sink to rotate
/// through (the top 16 bits of its 8-octet header).
pub(crate) const MAX_SINK_BUFFERS: usize = 256;

/// Most a raw exchange reads at once.
const RAW_READ: usize = 64 * 1024;

/// The echo endpoint's work on one connection: 64-octet messages, each
/// written back.
pub(crate) async fn echo(mut s: TcpStream) {
    let mut b = [0u8; 64];
    while s.read_exact(&mut b).await.is_ok() {
        if s.write_all(&b).await.is_err() {
            break;
        }
    }
}

/// The sink endpoint's work on one connection: reads the stream its
/// header announces into the buffers `kept` (left there for the next
/// stream) and answers one octet once it has it all.
pub(crate) async fn sink(mut s: TcpStream, kept: Arc<std::sync::Mutex<Vec<PageAligned>>>) {
    let mut len = [0u8; 8];
    if s.read_exact(&mut len).await.is_err() {
        return;
    }
    let (total, buffers) = sink_header(u64::from_be_bytes(len));
    let mut bufs = std::mem::take(&mut *kept.lock().unwrap_or_else(|e| e.into_inner()));
    let ok = sink_into(&mut s, total, buffers, &mut bufs).await.is_ok();
    *kept.lock().unwrap_or_else(|e| e.into_inner()) = bufs;
    if ok {
        let _ = s.write_all(&[1]).await;
    }
}

/// The sink's header: the stream's length in the low 48 bits, and in the
/// top 16 the number of 1 MiB buffers the sink fills in turn (0: one).
pub(crate) fn sink_header(word: u64) -> (usize, usize) {
    let total = (word & ((1 << 48) - 1)) as usize;
    let buffers = ((word >> 48) as usize).clamp(1, MAX_SINK_BUFFERS);
    (total, buffers)
}

/// The header of a raw TCP stream of `total` octets into `buffers`
/// buffers ([`sink_header`]).
pub(crate) fn sink_header_word(total: usize, buffers: usize) -> u64 {
    ((buffers.clamp(1, MAX_SINK_BUFFERS) as u64) << 48) | (total as u64 & ((1 << 48) - 1))
}

/// Reads `total` octets from `s`.
///
/// With one buffer (the raw TCP stream the goals compare against), every
/// read lands at the start of one 1 MiB buffer, so the data touches no
/// more memory than one read returns. With more, each 1 MiB buffer is
/// filled from start to end before the next, going round `buffers` of
/// them: the data lands in as much memory as `buffers` outstanding 1 MiB
/// READ replies need, as RDMA Writes into their Write chunks do.
///
/// The buffers are `bufs`, made up to `buffers` of them first; they are
/// left there for the next stream.
pub(crate) async fn sink_into(
    s: &mut TcpStream,
    total: usize,
    buffers: usize,
    bufs: &mut Vec<PageAligned>,
) -> std::io::Result<()> {
    while bufs.len() < buffers {
        bufs.push(PageAligned::zeroed(MIB));
    }
    let (mut got, mut i, mut at) = (0, 0, 0);
    while got < total {
        let n = s.read(&mut bufs[i].as_mut_slice()[at..]).await?;
        if n == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        got += n;
        if buffers > 1 {
            at += n;
            if at == MIB {
                at = 0;
                i = (i + 1) % buffers;
            }
        }
    }
    Ok(())
}

/// A raw TCP ping-pong connection to the echo endpoint (warmed up by 100
/// round trips).
pub(crate) async fn tcp_echo(addr: SocketAddr) -> anyhow::Result<TcpStream> {
    let mut s = TcpStream::connect(addr).await?;
    s.set_nodelay(true)?;
    tcp_batch(&mut s, 100).await?;
    Ok(s)
}

/// Seconds taken by `n` 64-byte ping-pongs on `s`.
pub(crate) async fn tcp_batch(s: &mut TcpStream, n: usize) -> anyhow::Result<f64> {
    let mut b = [7u8; 64];
    let t = Instant::now();
    for _ in 0..n {
        s.write_all(&b).await?;
        s.read_exact(&mut b).await?;
    }
    Ok(t.elapsed().as_secs_f64())
}

/// A raw TCP stream of `mib` 1 MiB writes (until the receiver confirms it
/// read everything), which the receiver reads into `buffers` 1 MiB
/// buffers in turn ([`sink_into`]).
pub(crate) async fn tcp_stream(
    addr: SocketAddr,
    mib: usize,
    data: &Bytes,
    buffers: usize,
) -> anyhow::Result<Moved> {
    let mut s = TcpStream::connect(addr).await?;
    s.set_nodelay(true)?;
    let total = mib * MIB;
    let t = Stopwatch::start();
    s.write_all(&sink_header_word(total, buffers).to_be_bytes())
        .await?;
    for _ in 0..mib {
        s.write_all(data).await?;
    }
    let mut ack = [0u8; 1];
    s.read_exact(&mut ack).await?;
    Ok(t.stop(total))
}

/// The raw TCP exchange on `s`: `n` messages of `size` octets answered,
/// `k` kept in flight (each side reads what has arrived and answers every
/// whole message in it with one write); the batch echo endpoint answers
/// them.
pub(crate) async fn raw_exchange(
    s: &mut TcpStream,
    size: usize,
    k: usize,
    n: usize,
) -> anyhow::Result<()> {
    raw_until(s, size, k, Some(n), None).await.map(|_| ())
}

/// [`raw_exchange`] until `n` messages were answered or `end` passed (the
/// messages in flight then are drained); the number answered.
pub(crate) async fn raw_until(
    s: &mut TcpStream,
    size: usize,
    k: usize,
    n: Option<usize>,
    end: Option<Instant>,
) -> anyhow::Result<usize> {
    let size = size.max(1);
    let out = vec![7u8; size * k.max(1)];
    let mut buf = vec![0u8; RAW_READ.max(size)];
    let (mut sent, mut got, mut partial) = (0usize, 0usize, 0usize);
    let more = |sent: usize| n.is_none_or(|n| sent < n) && end.is_none_or(|e| Instant::now() < e);
    let first = n.map_or(k, |n| k.min(n)).max(1);
    s.write_all(&out[..first * size]).await?;
    sent += first;
    while got < sent {
        let r = s.read(&mut buf).await?;
        if r == 0 {
            bail!("raw TCP exchange: the echo endpoint closed");
        }
        partial += r;
        let whole = partial / size;
        partial %= size;
        got += whole;
        if whole > 0 && more(sent) {
            let m = n.map_or(whole, |n| whole.min(n - sent));
            s.write_all(&out[..m * size]).await?;
            sent += m;
        }
    }
    Ok(got)
}

/// The batch echo endpoint's work on one connection: reads what has
/// arrived and writes it back with one write.
pub(crate) async fn batch_echo(mut s: TcpStream) {
    let mut buf = vec![0u8; RAW_READ];
    loop {
        match s.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => {
                if s.write_all(&buf[..n]).await.is_err() {
                    return;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;
    use tokio::net::TcpListener;

    #[test]
    fn the_sink_header_carries_length_and_buffers() {
        assert_eq!(sink_header(sink_header_word(96 * MIB, 8)), (96 * MIB, 8));
        // What the single-buffer streams (the RPC bench's reference,
        // `bench loop`) send: the bare length, read into one buffer.
        assert_eq!(sink_header((5 * MIB) as u64), (5 * MIB, 1));
        assert_eq!(sink_header_word(MIB, 0), sink_header_word(MIB, 1));
        assert_eq!(
            sink_header(sink_header_word(MIB, 100_000)),
            (MIB, MAX_SINK_BUFFERS)
        );
    }

    #[tokio::test]
    async fn the_sink_reads_every_octet_into_rotating_buffers() {
        for buffers in [1, 3] {
            let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = l.local_addr().unwrap();
            let total = 2 * MIB + 12345;
            let writer = tokio::spawn(async move {
                let mut s = TcpStream::connect(addr).await.unwrap();
                s.write_all(&vec![9u8; total]).await.unwrap();
            });
            let (mut s, _) = l.accept().await.unwrap();
            let mut bufs = Vec::new();
            sink_into(&mut s, total, buffers, &mut bufs).await.unwrap();
            writer.await.unwrap();
            // The buffers are kept for the next stream.
            assert_eq!(bufs.len(), buffers);
            // Nothing is left over, and a short stream is an error.
            let mut rest = Vec::new();
            assert_eq!(s.read_to_end(&mut rest).await.unwrap(), 0);
            let err = sink_into(&mut s, 1, buffers, &mut bufs).await.unwrap_err();
            assert_eq!(err.kind(), std::io::ErrorKind::UnexpectedEof);
        }
    }

    #[tokio::test]
    async fn the_raw_exchange_answers_every_message_it_sent() {
        let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = l.local_addr().unwrap();
        tokio::spawn(async move {
            while let Ok((s, _)) = l.accept().await {
                tokio::spawn(batch_echo(s));
            }
        });
        let mut s = TcpStream::connect(addr).await.unwrap();
        // Fewer messages than the depth, a count that is not a multiple
        // of it, and messages larger than one read.
        for (size, k, n) in [(64, 32, 5), (64, 8, 1001), (100_000, 3, 7)] {
            assert_eq!(raw_until(&mut s, size, k, Some(n), None).await.unwrap(), n);
        }
        // Until a time: whatever was sent is drained.
        let end = Instant::now() + Duration::from_millis(20);
        let got = raw_until(&mut s, 64, 16, None, Some(end)).await.unwrap();
        assert!(got >= 16);
        // Nothing is left over on the stream.
        assert_eq!(raw_until(&mut s, 64, 1, Some(1), None).await.unwrap(), 1);
    }
}
