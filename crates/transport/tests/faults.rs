//! Fault injection over the real transport (issue 5, items 7 and 9): an
//! `RdmaConnector` client and a `serve_rdma` server running the demo
//! program, over software iWARP on loopback, with a TCP relay between them
//! that cuts the connection at exact byte offsets through a Chunked call
//! (WRITE 1 MiB, Read chunk), a Chunked reply (READ 1 MiB, Write chunk), a
//! Long call and a Long reply (reduction off).
//!
//! For every cut it proves: the call ends in exactly one result, and that
//! result is the right data (after a retransmission on a new connection
//! with the same XID when the cut came before the reply); the client's
//! engines received exactly one reply in total (no double completion); no
//! registration is left on any connection of either end (engine counters
//! and the provider's own region tables); the server saw the retransmitted
//! XID on the new connection and answered it there.
//!
//! Cut points are computed from an uncut run of the same operation: the
//! byte offsets in each direction of every FPDU boundary, of points inside
//! FPDU headers, payloads and CRCs, and of the MPA Request/Reply. Nothing
//! depends on timing: the relay cuts at a byte count, and every wait is
//! bounded only to turn a hang into a failure with a message.

mod common;

use std::collections::BTreeSet;

use bytes::Bytes;
use common::*;
use rpcrdma_demoprog::{
    checksum, pattern, pattern_mismatch, procs, ulb, DemoClient, ReadArgs, ReadRes, ReadResok,
    WriteArgs, WriteRes, PROGRAM, VERSION,
};
use rpcrdma_oncrpc::{Client, RpcError};
use rpcrdma_testkit::mpa::{fpdu_spans, StartFrame};
use rpcrdma_testkit::relay::{Direction, Fault, Position, Recorded};

const MIB: u32 = 1 << 20;
const LONG: u32 = 8192;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    /// WRITE 1 MiB: the data goes in a Read chunk.
    ChunkedCall,
    /// READ 1 MiB: the data comes back in a Write chunk.
    ChunkedReply,
    /// WRITE 8 KiB with reduction off: RDMA_NOMSG, Position-Zero Read chunk.
    LongCall,
    /// READ 8 KiB with reduction off: the reply comes through the Reply chunk.
    LongReply,
}

/// Runs the operation and checks every byte; `Err` describes what failed.
async fn run_op(op: Op, client: &Client, seed: u64) -> Result<(), String> {
    let demo = DemoClient::new(client.clone());
    match op {
        Op::ChunkedCall => demo
            .write_verified(pattern(seed, MIB as usize))
            .await
            .map_err(|e| e.to_string()),
        Op::ChunkedReply => demo
            .read_verified(seed, MIB)
            .await
            .map(|_| ())
            .map_err(|e| e.to_string()),
        Op::LongCall => {
            let data = pattern(seed, LONG as usize);
            let want = checksum(&data);
            let r: Result<WriteRes, RpcError> = client
                .call(
                    PROGRAM,
                    VERSION,
                    procs::WRITE,
                    &WriteArgs { data },
                    &ulb::write().no_reduce(),
                )
                .await;
            match r {
                Ok(r) if r.count == LONG && r.crc32c == want => Ok(()),
                Ok(r) => Err(format!("server saw other bytes: {r:?}")),
                Err(e) => Err(e.to_string()),
            }
        }
        Op::LongReply => {
            let r: Result<ReadRes, RpcError> = client
                .call(
                    PROGRAM,
                    VERSION,
                    procs::READ,
                    &ReadArgs { seed, count: LONG },
                    &ulb::read(LONG).no_reduce(),
                )
                .await;
            match r {
                Ok(ReadRes::DemoOk(ReadResok { data, crc32c }))
                    if data.len() == LONG as usize
                        && pattern_mismatch(seed, &data).is_none()
                        && checksum(&data) == crc32c =>
                {
                    Ok(())
                }
                Ok(other) => Err(format!("wrong READ results: {:?}", summary(&other))),
                Err(e) => Err(e.to_string()),
            }
        }
    }
}

fn summary(r: &ReadRes) -> String {
    match r {
        ReadRes::DemoOk(ReadResok { data, crc32c }) => {
            format!("{} bytes, crc {crc32c:#x}", data.len())
        }
        ReadRes::Default(s) => format!("status {}", s.value()),
    }
}

/// What one attempt produced.
struct Attempt {
    result: Result<(), String>,
    conns: Vec<Recorded>,
}

/// One call of `op` through the relay with `fault` on its first
/// connection, checked for exactly-once completion and leaks.
async fn attempt(h: &Harness, op: Op, version: u32, fault: Option<Fault>, seed: u64) -> Attempt {
    let what = format!("{op:?} v{version} with {fault:?}");
    let first = h.relay.connection_count();
    h.relay.plan([fault]);
    let (client, opened) = h.client(client_config(version), client_settings());
    let result = bounded(&what, run_op(op, &client, seed)).await;

    // The client's view: one reply in total over all its connections, none
    // unmatched, no registration left on any of them.
    let transports = opened.lock().unwrap().clone();
    let total: u64 = transports.iter().map(|t| replies(&t.stats())).sum();
    if result.is_ok() {
        assert_eq!(
            total, 1,
            "{what}: the client engines received {total} replies"
        );
    } else {
        assert_eq!(total, 0, "{what}: failed, yet {total} replies arrived");
    }
    for (i, t) in transports.iter().enumerate() {
        let s = t.stats();
        assert_eq!(s.unmatched_replies, 0, "{what}: connection {i}: {s:?}");
        assert_eq!(
            s.live_registrations(),
            0,
            "{what}: client connection {i} still holds registrations: {s:?}"
        );
    }

    // The connection that carried the result: the server answered the call
    // there, and holds nothing for it afterwards.
    let conns: Vec<Recorded> = h.relay.connections().split_off(first);
    if result.is_ok() {
        let last = conns.last().expect("a connection");
        let addr = last.upstream_local.expect("upstream connected");
        let server = h.server_transport(addr).await;
        eventually(&format!("{what}: the server to release the call"), || {
            server.stats().live_registrations() == 0 && server.stats().replies_sent == 1
        })
        .await;
        let s = server.stats();
        assert_eq!(s.calls_received, 1, "{what}: server {s:?}");
    }

    drop(client);
    drop(transports);
    h.relayed_closed(&what).await;
    h.no_live_regions(&what).await;
    let conns = h.relay.connections().split_off(first);
    Attempt { result, conns }
}

/// Byte offsets worth cutting at in one direction of an uncut connection:
/// inside and after the MPA frame; for every control-sized FPDU (headers,
/// Sends, Read Requests) its first byte, a point inside its length/DDP
/// header, its middle and its CRC; the same for the first and last FPDU of
/// each bulk transfer (RDMA Write / Read Response data), and the first byte
/// of every fourth one in between; and the end of the stream.
fn cut_points(stream: &[u8]) -> Vec<u64> {
    const BULK: usize = 4096;
    let mut pts = BTreeSet::new();
    let Some((_, start)) = StartFrame::parse(stream) else {
        return vec![0];
    };
    pts.extend([0, start as u64 / 2, start as u64]);
    let (spans, _) = fpdu_spans(&stream[start..]);
    let big = |i: usize| spans.get(i).is_some_and(|s| s.len() > BULK);
    let mut run = 0usize;
    for (i, s) in spans.iter().enumerate() {
        let (a, b) = ((start + s.start) as u64, (start + s.end) as u64);
        let edge = !big(i) || !big(i.wrapping_sub(1)) || !big(i + 1);
        run = if big(i) { run + 1 } else { 0 };
        if edge {
            pts.extend([a, a + 3, (a + b) / 2, b - 2]);
        } else if run % 4 == 0 {
            pts.insert(a);
        }
    }
    pts.insert(stream.len() as u64);
    pts.into_iter().collect()
}

/// Every cut of `op` on its first connection, in both directions.
async fn campaign(op: Op, version: u32) {
    let h = Harness::start().await;
    // An uncut run tells where the bytes are.
    let clean = attempt(&h, op, version, None, 1).await;
    clean.result.expect("uncut run");
    assert_eq!(clean.conns.len(), 1);
    let clean = &clean.conns[0];
    let mut cuts = 0;
    let mut retransmitted = 0;
    for direction in [Direction::ToServer, Direction::ToClient] {
        for offset in cut_points(&clean.stream(direction)) {
            let fault = Fault::Cut(Position { direction, offset });
            let seed = 100 + offset;
            let a = attempt(&h, op, version, Some(fault), seed).await;
            let what = format!("{op:?} v{version} cut {direction:?} at {offset}");
            if let Err(e) = &a.result {
                panic!("{what}: the call failed instead of being retransmitted: {e}");
            }
            let first = &a.conns[0];
            cuts += usize::from(first.cut_done);
            match a.conns.len() {
                1 => {
                    // No reconnection: the reply was complete before the cut
                    // (or the cut never came).
                    assert_eq!(call_xids(first).len(), 1, "{what}");
                }
                2 => {
                    assert!(first.cut_done, "{what}: reconnected without a cut");
                    let second = &a.conns[1];
                    let again = call_xids(second);
                    assert_eq!(again.len(), 1, "{what}: calls on the new connection");
                    let before = call_xids(first);
                    assert!(before.len() <= 1, "{what}: {before:?}");
                    if let Some(x) = before.first() {
                        // The server saw the call on the first connection and
                        // sees the same XID again on the second.
                        assert_eq!(*x, again[0], "{what}: retransmitted with another XID");
                        retransmitted += 1;
                    }
                }
                n => panic!("{what}: {n} connections for one cut"),
            }
        }
    }
    assert!(cuts >= 15, "{op:?}: only {cuts} cuts happened");
    assert!(
        retransmitted > 5,
        "{op:?}: only {retransmitted} retransmissions"
    );
    eprintln!("{op:?} v{version}: {cuts} cuts, {retransmitted} retransmissions of a call the server had seen");
    h.server.shutdown().await;
    h.svc.stop().await;
}

#[tokio::test(flavor = "current_thread")]
async fn cut_anywhere_in_a_chunked_call() {
    campaign(Op::ChunkedCall, 1).await;
}

#[tokio::test(flavor = "current_thread")]
async fn cut_anywhere_in_a_chunked_reply() {
    campaign(Op::ChunkedReply, 1).await;
}

#[tokio::test(flavor = "current_thread")]
async fn cut_anywhere_in_a_long_call() {
    campaign(Op::LongCall, 1).await;
}

#[tokio::test(flavor = "current_thread")]
async fn cut_anywhere_in_a_long_reply() {
    campaign(Op::LongReply, 1).await;
}

/// Every connection cut: the call ends once, with a clear error, after
/// the configured number of tries, and nothing is left registered.
#[tokio::test(flavor = "current_thread")]
async fn every_connection_cut_gives_one_clear_error() {
    let h = Harness::start().await;
    let fault = Some(Fault::Cut(Position {
        direction: Direction::ToClient,
        offset: 2000,
    }));
    h.relay.plan([fault, fault, fault, fault]);
    let (client, opened) = h.client(client_config(1), client_settings());
    let r = bounded("all cut", run_op(Op::ChunkedReply, &client, 5)).await;
    let err = r.expect_err("every connection was cut");
    assert!(err.contains("connection lost 3 time(s)"), "{err}");
    let transports = opened.lock().unwrap().clone();
    assert_eq!(transports.len(), 3);
    for t in &transports {
        assert_eq!(replies(&t.stats()), 0);
        assert_eq!(t.stats().live_registrations(), 0);
    }
    // The same XID went out on all three connections.
    let xids: Vec<Vec<u32>> = h.relay.connections().iter().map(call_xids).collect();
    assert_eq!(xids.len(), 3);
    assert!(
        xids.iter().all(|x| x.len() == 1 && x[0] == xids[0][0]),
        "{xids:?}"
    );
    drop(client);
    drop(transports);
    h.no_live_regions("all cut").await;
    h.relay.plan([]);
    // The server is fine.
    let (client, _) = h.client(client_config(1), client_settings());
    run_op(Op::ChunkedReply, &client, 6)
        .await
        .expect("after the faults");
    let _ = Bytes::new();
}

/// The same over Version Two: the first call doubles as the version probe
/// (one credit, draft-cel-01 §5), so cuts also land in the negotiation.
#[tokio::test(flavor = "current_thread")]
async fn cut_anywhere_in_a_chunked_call_v2() {
    campaign(Op::ChunkedCall, 2).await;
}
