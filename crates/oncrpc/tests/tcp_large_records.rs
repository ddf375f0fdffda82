//! Large records over TCP: read into a buffer of their own, straight from
//! the socket and never past their end, handed up intact however the bytes
//! arrive, with their buffers reused once dropped, and cancel-safe.

use std::time::Duration;

use bytes::Bytes;
use rpcrdma_oncrpc::record::fragment_header;
use rpcrdma_oncrpc::tcp::{TcpConfig, TcpTransport};
use rpcrdma_oncrpc::{Received, RecordError, Transport, TransportError};
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};

/// A transport and the raw peer socket at the other end.
async fn pair() -> (TcpTransport, TcpStream) {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let peer = TcpStream::connect(l.local_addr().unwrap()).await.unwrap();
    let (s, _) = l.accept().await.unwrap();
    (TcpTransport::new(s, &TcpConfig::default()).unwrap(), peer)
}

/// A call message of `len` octets: xid, CALL, then a pattern.
fn call(xid: u32, len: usize) -> Vec<u8> {
    let mut m = Vec::with_capacity(len);
    m.extend_from_slice(&xid.to_be_bytes());
    m.extend_from_slice(&0u32.to_be_bytes());
    m.extend((8..len).map(|i| (i * 7 + xid as usize) as u8));
    m
}

/// `msg` as one record of one fragment, or of fragments of `frag` octets.
fn record(msg: &[u8], frag: usize) -> Vec<u8> {
    let mut out = Vec::new();
    let chunks: Vec<&[u8]> = msg.chunks(frag.max(1)).collect();
    for (i, c) in chunks.iter().enumerate() {
        out.extend_from_slice(&fragment_header(c.len(), i + 1 == chunks.len()));
        out.extend_from_slice(c);
    }
    out
}

async fn recv_call(t: &TcpTransport) -> Bytes {
    match t.recv().await.unwrap() {
        Received::Call { message, .. } => message.inline().clone(),
        _ => panic!("expected a call"),
    }
}

/// Writes `wire` in pieces of `piece` octets, letting the reader run
/// between them.
async fn trickle(peer: &mut TcpStream, wire: &[u8], piece: usize) {
    for c in wire.chunks(piece) {
        peer.write_all(c).await.unwrap();
        peer.flush().await.unwrap();
        tokio::task::yield_now().await;
    }
}

#[tokio::test]
async fn a_large_record_in_pieces_and_the_small_one_behind_it_arrive_intact() {
    let (t, mut peer) = pair().await;
    let big = call(1, 300_000);
    let small = call(2, 40);
    let mut wire = record(&big, usize::MAX);
    wire.extend_from_slice(&record(&small, usize::MAX));
    for piece in [1_000, 65_536, 299_999] {
        let w = wire.clone();
        let (got_big, got_small) = tokio::join!(
            async {
                let a = recv_call(&t).await;
                let b = recv_call(&t).await;
                (a, b)
            },
            trickle(&mut peer, &w, piece)
        )
        .0;
        assert_eq!(&got_big[..], &big[..], "pieces of {piece}");
        assert_eq!(&got_small[..], &small[..], "pieces of {piece}");
    }
}

#[tokio::test]
async fn a_dropped_large_record_lends_its_buffer_to_the_next() {
    let (t, mut peer) = pair().await;
    let first = call(1, 200_000);
    peer.write_all(&record(&first, usize::MAX)).await.unwrap();
    let a = recv_call(&t).await;
    assert_eq!(&a[..], &first[..]);
    let at = a.as_ptr();
    drop(a);
    let second = call(2, 150_000);
    peer.write_all(&record(&second, usize::MAX)).await.unwrap();
    let b = recv_call(&t).await;
    assert_eq!(&b[..], &second[..]);
    assert_eq!(
        b.as_ptr(),
        at,
        "the second record reuses the first one's buffer"
    );
    // While a record is held, the next one gets other memory.
    let third = call(3, 150_000);
    peer.write_all(&record(&third, usize::MAX)).await.unwrap();
    let c = recv_call(&t).await;
    assert_eq!(&c[..], &third[..]);
    assert_ne!(c.as_ptr(), b.as_ptr());
    assert_eq!(&b[..], &second[..], "the held record is untouched");
}

#[tokio::test]
async fn large_multi_fragment_records_and_small_ones_interleave() {
    let (t, mut peer) = pair().await;
    let msgs = [
        call(1, 100_000),
        call(2, 12),
        call(3, 70_000),
        call(4, 65_536),
    ];
    let mut wire = Vec::new();
    wire.extend_from_slice(&record(&msgs[0], 30_000));
    wire.extend_from_slice(&record(&msgs[1], usize::MAX));
    wire.extend_from_slice(&record(&msgs[2], usize::MAX));
    wire.extend_from_slice(&record(&msgs[3], usize::MAX));
    let got = tokio::join!(
        async {
            let mut v = Vec::new();
            for _ in 0..msgs.len() {
                v.push(recv_call(&t).await);
            }
            v
        },
        trickle(&mut peer, &wire, 4_093)
    )
    .0;
    for (g, m) in got.iter().zip(msgs.iter()) {
        assert_eq!(&g[..], &m[..]);
    }
}

#[tokio::test]
async fn eof_inside_a_large_record_is_truncation() {
    let (t, mut peer) = pair().await;
    let big = call(1, 200_000);
    let wire = record(&big, usize::MAX);
    peer.write_all(&wire[..150_000]).await.unwrap();
    peer.shutdown().await.unwrap();
    match t.recv().await {
        Err(TransportError::Record(RecordError::Truncated { buffered })) => {
            assert_eq!(buffered, 150_000 - 4)
        }
        other => panic!("expected truncation, got {other:?}"),
    }
}

#[tokio::test]
async fn a_receive_given_up_mid_record_loses_nothing() {
    let (t, mut peer) = pair().await;
    let big = call(1, 500_000);
    let wire = record(&big, usize::MAX);
    peer.write_all(&wire[..200_000]).await.unwrap();
    // The reader takes what is there, then the caller gives up.
    assert!(tokio::time::timeout(Duration::from_millis(50), t.recv())
        .await
        .is_err());
    peer.write_all(&wire[200_000..]).await.unwrap();
    let got = recv_call(&t).await;
    assert_eq!(&got[..], &big[..]);
}
