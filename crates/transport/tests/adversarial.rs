//! Adversarial peers over the real transport (issue 5, item 9), for the
//! cases the engine's in-memory tests (`crates/engine/tests`) cannot reach
//! because the RDMA layer itself takes part:
//!
//! * a peer that Sends a message larger than our receive buffers (a
//!   too-large inline send): refused by DDP with a Terminate, the call never
//!   reaches the server, nothing leaks, the server keeps serving;
//! * a peer whose Read chunk lies about its length (its RDMA Read Response
//!   carries fewer bytes than its chunk promised): the server never runs
//!   the procedure on bytes that were not sent;
//! * a call cancelled while the server is filling its Write chunk: the
//!   chunk is invalidated before the caller's future is gone, the server's
//!   late RDMA Writes are refused by the client's RDMA layer instead of
//!   landing in released memory, and the client recovers on a new
//!   connection;
//! * more calls than the grant whose RPC header is unusable, then good
//!   calls (issue 9, item 2): each answered as RFC 5531 and RFC 8166
//!   allow, none holding a credit.
//!
//! Raw peers speak MPA/DDP/RDMAP with `rpcrdma-testkit`'s framing over a
//! plain socket. Nothing depends on timing: states are reached by bytes
//! (the relay holds a direction at an exact offset) and waits are bounded
//! only to turn a hang into a failure with a message.

mod common;

use std::net::SocketAddr;

use common::*;
use rpcrdma_demoprog::{checksum, pattern, procs, PROGRAM, VERSION};
use rpcrdma_testkit::mpa::{
    fpdu, send_ulpdu, tagged_ulpdu, DdpSegment, StartFrame, OP_READ_REQUEST, OP_READ_RESPONSE,
};
use rpcrdma_testkit::relay::{Direction, Fault, Position};
use rpcrdma_wire::PrivateData;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// RDMAP opcode of Terminate.
const OP_TERMINATE: u8 = 7;

/// A hand-driven iWARP peer (MPA revision 1, no CRC, no markers).
struct RawPeer {
    s: TcpStream,
    msn: u32,
}

impl RawPeer {
    /// Connects and completes MPA with RFC 8797 private data offering
    /// 1 KiB inline sizes.
    async fn connect(addr: SocketAddr) -> Self {
        let mut s = bounded("raw connect", TcpStream::connect(addr))
            .await
            .expect("connect");
        s.set_nodelay(true).unwrap();
        let pd = PrivateData::new(1024, 1024, false).to_bytes();
        let req = StartFrame::new(true, 1, false, None, &pd);
        s.write_all(&req.to_bytes()).await.unwrap();
        let mut head = [0u8; 20];
        bounded("MPA Reply", s.read_exact(&mut head))
            .await
            .expect("MPA Reply");
        let pd_len = usize::from(u16::from_be_bytes([head[18], head[19]]));
        let mut rest = vec![0u8; pd_len];
        s.read_exact(&mut rest).await.expect("private data");
        let mut all = head.to_vec();
        all.extend_from_slice(&rest);
        let (rep, _) = StartFrame::parse(&all).expect("an MPA Reply");
        assert!(!rep.request && rep.flags & 0x20 == 0, "accepted: {rep:?}");
        Self { s, msn: 1 }
    }

    fn local_addr(&self) -> SocketAddr {
        self.s.local_addr().unwrap()
    }

    /// Sends one ULPDU in one FPDU.
    async fn write_ulpdu(&mut self, ulpdu: &[u8]) {
        self.s.write_all(&fpdu(ulpdu, false)).await.unwrap();
    }

    /// Sends `payload` as one RDMA Send (one DDP segment).
    async fn send(&mut self, payload: &[u8]) {
        let u = send_ulpdu(self.msn, payload);
        self.msn += 1;
        self.write_ulpdu(&u).await;
    }

    /// The next ULPDU from the peer; `None` once the stream ends.
    async fn read_ulpdu(&mut self) -> Option<Vec<u8>> {
        let mut len = [0u8; 2];
        bounded("an FPDU", self.s.read_exact(&mut len)).await.ok()?;
        let n = usize::from(u16::from_be_bytes(len));
        let mut rest = vec![0u8; (2 + n).div_ceil(4) * 4 - 2 + 4];
        self.s.read_exact(&mut rest).await.ok()?;
        rest.truncate(n);
        Some(rest)
    }

    /// Every ULPDU until the peer closes.
    async fn read_to_end(&mut self) -> Vec<DdpSegment> {
        let mut v = Vec::new();
        while let Some(u) = self.read_ulpdu().await {
            v.push(DdpSegment::parse(&u).expect("a DDP segment"));
        }
        v
    }
}

fn words(ws: &[u32]) -> Vec<u8> {
    ws.iter().flat_map(|w| w.to_be_bytes()).collect()
}

/// An RPC call header (AUTH_NONE) of the demo program.
fn rpc_call(xid: u32, proc_: u32) -> Vec<u32> {
    vec![xid, 0, 2, PROGRAM, VERSION, proc_, 0, 0, 0, 0]
}

/// The Terminate's layer, error type and code (RFC 5040 §7.3).
fn terminate_code(t: &DdpSegment) -> (u8, u8, u8) {
    let b = &t.payload;
    (b[0] >> 4, b[0] & 0x0f, b[1])
}

#[tokio::test(flavor = "current_thread")]
async fn inline_send_larger_than_our_receive_buffers_is_refused_by_ddp() {
    let h = Harness::start().await;
    let mut peer = RawPeer::connect(h.svc.local_addr()).await;
    let server = h.server_transport(peer.local_addr()).await;
    let recv = rpcrdma_engine::EngineConfig::server().recv_buffer_size();
    // A valid RDMA_MSG (NULL call) padded past our receive buffer size.
    let mut msg = words(&[7, 1, 1, 0, 0, 0, 0]);
    msg.extend_from_slice(&words(&rpc_call(7, procs::NULL)));
    msg.resize(recv + 4096, 0);
    peer.send(&msg).await;
    let segs = peer.read_to_end().await;
    let term = segs
        .iter()
        .find(|s| s.opcode == OP_TERMINATE)
        .expect("a Terminate before the close");
    // DDP layer (1), untagged buffer error (2), message too long (5).
    assert_eq!(terminate_code(term), (1, 2, 5), "{term:?}");
    assert!(
        segs.iter().all(|s| !(3..=6).contains(&s.opcode)),
        "no Send answered it"
    );
    eventually("the server to close the connection", || !server.is_open()).await;
    let s = server.stats();
    assert_eq!((s.calls_received, s.replies_sent), (0, 0), "{s:?}");
    drop(server);
    h.no_live_regions("too-large send").await;
    // The server keeps serving.
    let (client, _) = h.client(client_config(1), client_settings());
    bounded("NULL", client.null(PROGRAM, VERSION))
        .await
        .expect("NULL after the bad peer");
}

/// A WRITE of `n` bytes whose data sits in a Read chunk of the peer's:
/// returns the RDMA Read Request the server sent for it.
async fn write_via_read_chunk(peer: &mut RawPeer, xid: u32, n: u32) -> (u32, u64, u32) {
    const STAG: u32 = 0x1234_5678;
    const TO: u64 = 0x1_0000;
    // RDMA_MSG, read list: one segment at XDR position 44 (after the call
    // header and the opaque's length word), no write list, no reply chunk.
    let mut msg = words(&[xid, 1, 8, 0, 1, 44, STAG, n, 0, TO as u32, 0, 0, 0]);
    let mut call = rpc_call(xid, procs::WRITE);
    call.push(n);
    msg.extend_from_slice(&words(&call));
    peer.send(&msg).await;
    let u = peer.read_ulpdu().await.expect("an RDMA Read Request");
    let seg = DdpSegment::parse(&u).expect("DDP");
    assert_eq!((seg.opcode, seg.qn), (OP_READ_REQUEST, 1), "{seg:?}");
    let w = |i: usize| u32::from_be_bytes(seg.payload[i..i + 4].try_into().unwrap());
    let (sink_stag, sink_to, size) = (w(0), (u64::from(w(4)) << 32) | u64::from(w(8)), w(12));
    let (src_stag, src_to) = (w(16), (u64::from(w(20)) << 32) | u64::from(w(24)));
    assert_eq!(
        (src_stag, src_to, size),
        (STAG, TO, n),
        "reads what the chunk says"
    );
    (sink_stag, sink_to, size)
}

//= rfc5666bis-04#section-4.4.4.1
//# Any byte count left in the Payload stream MUST match the sum of the
//# lengths of the segments making up the chunk.
#[tokio::test(flavor = "current_thread")]
async fn read_chunk_shorter_than_it_claims_never_reaches_the_procedure() {
    let h = Harness::start().await;
    let n = 4096u32;
    let data = pattern(9, n as usize);

    // Control: the full Read Response gets the WRITE executed and answered,
    // so the peer's messages are right and the next case is not vacuous.
    let mut peer = RawPeer::connect(h.svc.local_addr()).await;
    let (stag, to, size) = write_via_read_chunk(&mut peer, 40, n).await;
    peer.write_ulpdu(&tagged_ulpdu(
        OP_READ_RESPONSE,
        stag,
        to,
        &data[..size as usize],
    ))
    .await;
    let u = peer.read_ulpdu().await.expect("the reply");
    let reply = DdpSegment::parse(&u).expect("DDP");
    assert!(matches!(reply.opcode, 3 | 4), "{reply:?}");
    let w = |i: usize| u32::from_be_bytes(reply.payload[i * 4..i * 4 + 4].try_into().unwrap());
    // RDMA_MSG header (7 words), RPC reply (6 words: xid, REPLY, accepted,
    // AUTH_NONE verifier, SUCCESS), then WRITE's count and crc32c.
    assert_eq!((w(0), w(3), w(7), w(8), w(12)), (40, 0, 40, 1, 0));
    assert_eq!((w(13), w(14)), (n, checksum(&data)));
    drop(peer);

    // The lie: the Read Response ends after half the bytes.
    let mut peer = RawPeer::connect(h.svc.local_addr()).await;
    let server = h.server_transport(peer.local_addr()).await;
    let (stag, to, _) = write_via_read_chunk(&mut peer, 41, n).await;
    peer.write_ulpdu(&tagged_ulpdu(OP_READ_RESPONSE, stag, to, &data[..2048]))
        .await;
    let segs = peer.read_to_end().await;
    assert!(
        segs.iter().all(|s| !(3..=6).contains(&s.opcode)),
        "the server answered a call whose data never fully arrived: {segs:?}"
    );
    let term = segs
        .iter()
        .find(|s| s.opcode == OP_TERMINATE)
        .expect("a Terminate");
    // DDP layer (1), tagged buffer error (1), base or bounds violation (1).
    assert_eq!(terminate_code(term), (1, 1, 1), "{term:?}");
    eventually("the server to close the connection", || !server.is_open()).await;
    assert_eq!(server.stats().replies_sent, 0);
    drop(server);
    h.no_live_regions("short Read Response").await;
}

//= rfc5666bis-04#section-10.1
//# The use of RPC-over-RDMA MUST NOT introduce any vulnerabilities to system
//# memory contents, nor to memory owned by user processes.
#[tokio::test(flavor = "current_thread")]
async fn cancelled_call_chunk_is_invalidated_before_the_server_writes_into_it() {
    let h = Harness::start().await;
    // Where the server's first FPDU would start: right after its MPA Reply
    // (as an uncut connection shows).
    let (c, _) = h.client(client_config(1), client_settings());
    bounded("NULL", c.null(PROGRAM, VERSION)).await.unwrap();
    drop(c);
    h.relayed_closed("probe").await;
    let rec = h.relay.connections().remove(0);
    let (_, reply_len) = StartFrame::parse(&rec.stream(Direction::ToClient)).expect("an MPA Reply");

    // Hold everything the server sends after its MPA Reply.
    h.relay.plan([Some(Fault::Hold(Position {
        direction: Direction::ToClient,
        offset: reply_len as u64,
    }))]);
    let (client, opened) = h.client(client_config(1), client_settings());
    let demo = rpcrdma_demoprog::DemoClient::new(client.clone());
    let call = tokio::spawn(async move { demo.read_verified(3, 1 << 20).await });
    eventually("the relay to hold the server's bytes", || {
        h.relay.connections().get(1).is_some_and(|c| c.held)
    })
    .await;
    let addr = h.relay.connections()[1].upstream_local.unwrap();
    let server = h.server_transport(addr).await;
    // The server has written the 1 MiB and sent its reply, all held.
    eventually("the server to answer", || server.stats().replies_sent == 1).await;
    let t = opened.lock().unwrap()[0].clone();
    assert!(
        t.stats().live_registrations() > 0,
        "the Write chunk is registered"
    );

    // Cancel: the caller's future is gone; the chunk must be invalidated.
    call.abort();
    assert!(call.await.expect_err("cancelled").is_cancelled());
    eventually("the client to release the chunk", || {
        t.stats().live_registrations() == 0 && t.stats().released_early == 1
    })
    .await;
    assert_eq!(
        h.client_dev.regions_per_pd()[1],
        0,
        "the provider holds no region"
    );

    // Now the server's RDMA Writes arrive for a dead STag: refused by the
    // client's RDMA layer, which ends the connection.
    h.relay.release(1);
    eventually("both ends to close", || !t.is_open() && !server.is_open()).await;
    assert_eq!(replies(&t.stats()), 0, "the late reply was never delivered");
    let segs = client_opcodes(&h, 1);
    assert!(
        segs.contains(&OP_TERMINATE),
        "the client sent a Terminate: {segs:?}"
    );

    // The client recovers on a new connection.
    bounded("NULL after recovery", client.null(PROGRAM, VERSION))
        .await
        .expect("a new connection");
    assert_eq!(opened.lock().unwrap().len(), 2);
    drop(client);
    drop(t);
    drop(server);
    h.relayed_closed("cancel").await;
    h.no_live_regions("cancel").await;
}

/// The RDMAP opcodes of every FPDU the client sent on relayed connection
/// `index` (after its MPA Request).
fn client_opcodes(h: &Harness, index: usize) -> Vec<u8> {
    let rec = h.relay.connections().remove(index);
    let stream = rec.stream(Direction::ToServer);
    let Some((_, start)) = StartFrame::parse(&stream) else {
        return Vec::new();
    };
    let body = &stream[start..];
    let (spans, _) = rpcrdma_testkit::mpa::fpdu_spans(body);
    spans
        .into_iter()
        .filter_map(|s| rpcrdma_testkit::mpa::fpdu_ulpdu(&body[s]).and_then(DdpSegment::parse))
        .map(|s| s.opcode)
        .collect()
}

/// The next Send the server makes to a raw peer, as words.
async fn next_send(peer: &mut RawPeer) -> Vec<u32> {
    loop {
        let u = peer.read_ulpdu().await.expect("a Send from the server");
        let seg = DdpSegment::parse(&u).expect("DDP");
        if (3..=6).contains(&seg.opcode) {
            return seg
                .payload
                .chunks(4)
                .map(|c| u32::from_be_bytes(c.try_into().unwrap()))
                .collect();
        }
    }
}

/// Issue 9, item 2, end to end: more calls than the server grants whose
/// RPC header the ONC RPC layer could not use (cut short after the XID
/// and CALL, or before the verifier; a `msg_type` that is no CALL; a
/// REPLY sent to the server), then as many good NULL calls, one at a
/// time. Each unusable call is answered as RFC 5531 and RFC 8166 allow
/// (`GARBAGE_ARGS`, `RDMA_ERROR` `ERR_BADHEADER` where there is no call,
/// nothing for a REPLY) and holds no credit: every NULL afterwards
/// succeeds, none is answered `SYSTEM_ERR`.
#[tokio::test(flavor = "current_thread")]
async fn unusable_calls_never_eat_the_grant_over_the_real_transport() {
    let h = Harness::start().await;
    let mut peer = RawPeer::connect(h.svc.local_addr()).await;
    let grant = rpcrdma_engine::EngineConfig::server().credits_grant;
    let n = grant + 6;
    for i in 0..n {
        let xid = 0x1000 + i;
        let mut msg = words(&[xid, 1, 8, 0, 0, 0, 0]);
        let (rpc, want): (Vec<u32>, Option<(u32, u32)>) = match i % 4 {
            // RDMA_MSG reply, GARBAGE_ARGS.
            0 => (vec![xid, 0], Some((0, 4))),
            1 => (vec![xid, 0, 2, PROGRAM, VERSION, 0, 0, 0, 0], Some((0, 4))),
            // RDMA_ERROR, ERR_BADHEADER.
            2 => (
                vec![xid, 5, 2, PROGRAM, VERSION, 0, 0, 0, 0, 0],
                Some((4, 2)),
            ),
            // A REPLY to the server: nothing.
            _ => (vec![xid, 1, 0, 0, 0, 0], None),
        };
        msg.extend_from_slice(&words(&rpc));
        peer.send(&msg).await;
        if let Some((proc_, code)) = want {
            let w = next_send(&mut peer).await;
            assert_eq!((w[0], w[3]), (xid, proc_), "call {i}: {w:x?}");
            let got = if proc_ == 4 { w[4] } else { w[12] };
            assert_eq!(got, code, "call {i}: {w:x?}");
        }
    }
    for i in 0..n {
        let xid = 0x2000 + i;
        let mut msg = words(&[xid, 1, 8, 0, 0, 0, 0]);
        msg.extend_from_slice(&words(&rpc_call(xid, procs::NULL)));
        peer.send(&msg).await;
        let w = next_send(&mut peer).await;
        // RDMA_MSG; RPC xid, REPLY, MSG_ACCEPTED, AUTH_NONE, SUCCESS.
        assert_eq!(
            (w[0], w[3], w[7], w[8], w[9], w[12]),
            (xid, 0, xid, 1, 0, 0),
            "NULL {i}: {w:x?}"
        );
    }
    let server = h.server_transport(peer.local_addr()).await;
    let s = server.stats();
    assert_eq!(s.credit_overruns, 0, "{s:?}");
}
