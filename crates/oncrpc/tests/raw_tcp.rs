//! Malformed records sent by hand over a raw TCP socket: the server never
//! panics, answers what can be answered, drops what cannot, closes the
//! connection on record-marking violations, and keeps serving others.

use std::time::Duration;

use bytes::{BufMut, Bytes, BytesMut};
use rpcrdma_oncrpc::msg::{decode_header, AcceptedStatus, Header, RejectedReply, ReplyBody};
use rpcrdma_oncrpc::record::fragment_header;
use rpcrdma_oncrpc::{ProcError, Server, ServerConfig, Services};
use rpcrdma_xdr::Decoder;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const PROG: u32 = 0x2000_0777;

async fn server(max_record: usize) -> (Server, std::net::SocketAddr) {
    let mut s = Services::new();
    s.program(PROG, 1)
        .null()
        .proc(1, |_, x: u32| async move { Ok::<_, ProcError>(!x) });
    let mut cfg = ServerConfig::default();
    cfg.tcp.max_record = max_record;
    let server = Server::new(s, cfg);
    let addr = server.serve_tcp("127.0.0.1:0").await.unwrap();
    (server, addr)
}

fn call(xid: u32, rpcvers: u32, proc_: u32, args: &[u32]) -> Vec<u8> {
    let mut b = BytesMut::new();
    for w in [xid, 0, rpcvers, PROG, 1, proc_, 0, 0, 0, 0] {
        b.put_u32(w);
    }
    for a in args {
        b.put_u32(*a);
    }
    b.to_vec()
}

fn record(body: &[u8]) -> Vec<u8> {
    let mut v = fragment_header(body.len(), true).to_vec();
    v.extend_from_slice(body);
    v
}

/// Reads one single-fragment record, or `None` at EOF.
async fn read_record(s: &mut TcpStream) -> Option<Bytes> {
    let mut h = [0u8; 4];
    let read = tokio::time::timeout(Duration::from_secs(20), s.read_exact(&mut h))
        .await
        .expect("the server neither answered nor closed");
    read.ok()?;
    let w = u32::from_be_bytes(h);
    assert!(
        w & 0x8000_0000 != 0,
        "our server sends one fragment per record"
    );
    let mut body = vec![0u8; (w & 0x7fff_ffff) as usize];
    s.read_exact(&mut body).await.ok()?;
    Some(Bytes::from(body))
}

fn reply_body(b: &Bytes, xid: u32) -> (ReplyBody, Vec<u8>) {
    let mut d = Decoder::from_bytes(b);
    match decode_header(&mut d).unwrap() {
        Header::Reply(r) => {
            assert_eq!(r.xid, xid);
            (r.body, d.rest().to_vec())
        }
        Header::Call(_) => panic!("reply expected"),
    }
}

async fn assert_still_serves(s: &mut TcpStream, xid: u32) {
    s.write_all(&record(&call(xid, 2, 1, &[5]))).await.unwrap();
    let r = read_record(s).await.expect("reply");
    let (body, rest) = reply_body(&r, xid);
    assert!(matches!(
        body,
        ReplyBody::Accepted {
            status: AcceptedStatus::Success,
            ..
        }
    ));
    assert_eq!(rest, (!5u32).to_be_bytes());
}

#[tokio::test]
async fn malformed_records_are_dropped_or_answered() {
    let (server, addr) = server(4096).await;
    let mut s = TcpStream::connect(addr).await.unwrap();

    // Too short to be a message; not a call or reply; a reply sent to a
    // server; a call whose header is cut short; a credential length beyond
    // the record: all dropped without an answer.
    let junk: Vec<Vec<u8>> = vec![
        vec![],
        vec![1, 2, 3],
        vec![0, 0, 0, 1, 0, 0, 0, 9],
        vec![0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0],
        call(7, 2, 0, &[])[..20].to_vec(),
        {
            let mut c = call(8, 2, 0, &[]);
            c[28..32].copy_from_slice(&300u32.to_be_bytes());
            c
        },
    ];
    for j in &junk {
        s.write_all(&record(j)).await.unwrap();
    }
    // The next valid call is answered, and it is the first answer.
    assert_still_serves(&mut s, 100).await;

    // Wrong RPC version: RPC_MISMATCH.
    s.write_all(&record(&call(101, 3, 0, &[]))).await.unwrap();
    let (body, _) = reply_body(&read_record(&mut s).await.unwrap(), 101);
    assert_eq!(
        body,
        ReplyBody::Denied(RejectedReply::RpcMismatch { low: 2, high: 2 })
    );

    // Garbage arguments.
    s.write_all(&record(&call(102, 2, 1, &[1, 2])))
        .await
        .unwrap();
    let (body, _) = reply_body(&read_record(&mut s).await.unwrap(), 102);
    assert!(matches!(
        body,
        ReplyBody::Accepted {
            status: AcceptedStatus::GarbageArgs,
            ..
        }
    ));

    // A call split into fragments by hand, with zero-length fragments.
    let c = call(103, 2, 1, &[9]);
    let mut wire = Vec::new();
    wire.extend_from_slice(&fragment_header(0, false));
    wire.extend_from_slice(&fragment_header(5, false));
    wire.extend_from_slice(&c[..5]);
    wire.extend_from_slice(&fragment_header(0, false));
    wire.extend_from_slice(&fragment_header(c.len() - 5, true));
    wire.extend_from_slice(&c[5..]);
    // Sent one byte per write.
    for b in wire {
        s.write_all(&[b]).await.unwrap();
    }
    let (body, rest) = reply_body(&read_record(&mut s).await.unwrap(), 103);
    assert!(matches!(
        body,
        ReplyBody::Accepted {
            status: AcceptedStatus::Success,
            ..
        }
    ));
    assert_eq!(rest, (!9u32).to_be_bytes());
    server.shutdown().await;
}

#[tokio::test]
async fn oversized_record_closes_only_that_connection() {
    let (server, addr) = server(4096).await;
    let mut bad = TcpStream::connect(addr).await.unwrap();
    let mut good = TcpStream::connect(addr).await.unwrap();
    assert_still_serves(&mut good, 1).await;
    // Announce 4097 bytes: rejected from the header alone.
    bad.write_all(&fragment_header(4097, true)).await.unwrap();
    assert!(read_record(&mut bad).await.is_none(), "connection closed");
    // Two fragments adding up past the limit.
    let mut bad2 = TcpStream::connect(addr).await.unwrap();
    bad2.write_all(&fragment_header(4000, false)).await.unwrap();
    bad2.write_all(&[0u8; 4000]).await.unwrap();
    bad2.write_all(&fragment_header(100, true)).await.unwrap();
    assert!(read_record(&mut bad2).await.is_none(), "connection closed");
    assert_still_serves(&mut good, 2).await;
    server.shutdown().await;
}

#[tokio::test]
async fn random_garbage_and_eof_mid_record() {
    let (server, addr) = server(1 << 16).await;
    // Deterministic pseudo-random bytes.
    let mut x = 0x1234_5678u32;
    let mut garbage = Vec::new();
    for _ in 0..4096 {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        garbage.push(x as u8);
    }
    let mut s = TcpStream::connect(addr).await.unwrap();
    let _ = s.write_all(&garbage).await;
    drop(s);
    // EOF in the middle of a record.
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.write_all(&fragment_header(100, true)).await.unwrap();
    s.write_all(&[0u8; 10]).await.unwrap();
    s.shutdown().await.unwrap();
    assert!(read_record(&mut s).await.is_none());
    // The server still serves new connections.
    let mut s = TcpStream::connect(addr).await.unwrap();
    assert_still_serves(&mut s, 3).await;
    server.shutdown().await;
}
