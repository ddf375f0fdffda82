//! The memory budget (issue 9, item 8; spec notes E21, E22): what a peer's
//! calls can make an engine hold, per connection and shared, over the
//! in-memory fabric. The same bound over the real software iWARP provider
//! and `rpcrdma serve` is `crates/cli/tests/memory_budget.rs`.
//!
//! These tests hold several MiB on purpose, so they turn the read window
//! (`EngineConfig::read_window`, which admits fewer calls at once than
//! the budget allows) off; the window's own tests are at the end.

mod common;

use bytes::Bytes;
use rpcrdma_engine::testing::{Pair, PairOptions};
use rpcrdma_engine::{CallError, EngineError, Event, MemoryBudget, ReplyHints};
use rpcrdma_verbs::{Access, MemoryRegion, ProtectionDomain};
use rpcrdma_xdr::{Decoder, Payload, PayloadEncoder};

use common::words;

const MIB: u64 = 1 << 20;

/// Version One with the server's per-connection memory limit at `bytes`
/// and no read window (the budget alone decides).
fn v1_budget(bytes: u64) -> PairOptions {
    PairOptions::v1().server_memory(bytes).read_window(u64::MAX)
}

/// A WRITE-like call of program 0x20000099 whose data is one DDP-eligible
/// opaque.
fn write_call(xid: u32, data: Bytes) -> Payload {
    let mut pe = PayloadEncoder::new();
    let mut e = pe.encoder();
    for w in [xid, 0, 2, 0x2000_0099, 1, 3, 0, 0, 0, 0] {
        e.put_u32(w);
    }
    e.put_opaque_ddp(data);
    pe.finish()
}

fn reply(xid: u32, ddp: Option<Bytes>) -> Payload {
    let mut pe = PayloadEncoder::new();
    let mut e = pe.encoder();
    for w in [xid, 1, 0, 0, 0, 0] {
        e.put_u32(w);
    }
    if let Some(d) = ddp {
        e.put_opaque_ddp(d);
    }
    pe.finish()
}

/// Small replies stated by the Upper Layer (no Reply chunk).
fn small() -> ReplyHints {
    ReplyHints::at_most(64)
}

/// A hand-made call (as a hostile client sends it): RDMA_MSG, WRITE of
/// `len` bytes in one Read chunk at position 44 naming a region the client
/// registered (the server may read it, if the client lets it).
fn inject_write(pair: &mut Pair, xid: u32, len: u32) {
    let mr = pair
        .fabric
        .pd(1)
        .register_bytes(Bytes::from(vec![0x5a; len as usize]), Access::REMOTE_READ)
        .unwrap();
    let (key, addr) = (mr.rkey(), mr.addr());
    std::mem::forget(mr); // the "client" keeps it registered
    let mut m = vec![
        xid,
        1,
        64,
        0,
        1,
        44,
        key,
        len,
        (addr >> 32) as u32,
        addr as u32,
    ];
    m.extend([0, 0, 0]);
    m.extend([xid, 0, 2, 0x2000_0099, 1, 3, 0, 0, 0, 0, len]);
    pair.inject(false, &words(&m));
}

/// Answers every call the server has delivered; returns how many.
fn answer_all(pair: &mut Pair) -> usize {
    let mut n = 0;
    while let Some(Event::Call { token, xid, .. }) =
        pair.server.take_event(|e| matches!(e, Event::Call { .. }))
    {
        pair.server
            .engine
            .send_reply(token, reply(xid, None))
            .unwrap();
        n += 1;
    }
    n
}

/// A peer that sends calls with large Read chunks and never answers the
/// RDMA Reads: the server allocates sinks for at most its per-connection
/// budget (the other calls wait, holding their credits), and when the
/// peer does answer, every call completes in turn.
#[test]
fn read_sinks_stay_within_the_connection_budget() {
    let mut pair = Pair::with(v1_budget(4 * MIB));
    pair.hold_sends(false, true); // the server's Reads go unanswered
    for x in 0..20u32 {
        inject_write(&mut pair, 100 + x, MIB as u32);
        pair.drive();
        let e = &pair.server.engine;
        assert!(e.memory_in_use() <= 4 * MIB, "{}", e.memory_in_use());
    }
    let s = *pair.server.engine.stats();
    assert_eq!(s.sink_bytes_allocated, 4 * MIB, "{s:?}");
    assert_eq!(pair.server.engine.calls_waiting(), 16);
    assert!(s.calls_waited_for_memory >= 1);
    assert_eq!(s.credit_overruns, 0);
    // The peer answers the Reads now: every call gets through, never more
    // than four sinks at once.
    pair.hold_sends(false, false);
    let mut answered = 0;
    for _ in 0..1000 {
        pair.drive();
        answered += answer_all(&mut pair);
        assert!(pair.server.engine.memory_in_use() <= 4 * MIB + 4096);
        if answered == 20 {
            break;
        }
    }
    assert_eq!(answered, 20);
    pair.drive();
    assert_eq!(pair.server.engine.memory_in_use(), 0);
    assert_eq!(pair.server.engine.calls_waiting(), 0);
    // Sinks were reused once returned: at most the budget was allocated
    // fresh for the first four, the pool served much of the rest.
    let s = *pair.server.engine.stats();
    assert!(s.sink_buffers_reused > 0, "{s:?}");
}

/// Our own client's calls flow through the same admission: a server with
/// a 2 MiB budget takes 1 MiB WRITEs two at a time, and all complete.
#[test]
fn honest_calls_beyond_the_budget_wait_and_complete() {
    let mut pair = Pair::with(v1_budget(2 * MIB));
    for x in 1..=6u32 {
        let data = Bytes::from(vec![x as u8; MIB as usize]);
        pair.send_call(x, write_call(x, data), small());
    }
    let mut seen_max = 0;
    for _ in 0..100 {
        pair.drive();
        seen_max = seen_max.max(pair.server.engine.memory_in_use());
        let mut delivered = Vec::new();
        while let Some(Event::Call {
            token,
            xid,
            message,
            ..
        }) = pair.server.take_event(|e| matches!(e, Event::Call { .. }))
        {
            let mut d = Decoder::with_ddp(&message);
            d.skip(40).unwrap();
            assert_eq!(d.get_opaque_ddp(2 << 20).unwrap(), vec![xid as u8; 1 << 20]);
            delivered.push((token, xid));
        }
        if delivered.is_empty() && pair.client.events.len() >= 6 {
            break;
        }
        for (token, xid) in delivered {
            pair.server
                .engine
                .send_reply(token, reply(xid, None))
                .unwrap();
        }
    }
    assert!(seen_max <= 2 * MIB + 4096, "{seen_max}");
    for x in 1..=6u32 {
        assert!(
            pair.client
                .take_event(|e| matches!(e, Event::Reply { xid, .. } if *xid == x))
                .is_some(),
            "call {x}"
        );
    }
    assert!(pair.server.engine.stats().calls_waited_for_memory >= 1);
    pair.assert_no_leaks();
}

/// A call whose Read chunks can never fit the budget gets an RPC-level
/// error at once (`SYSTEM_ERR`), not a wait for ever, whether its RPC
/// header is inline (`RDMA_MSG`) or in the Read chunk (`RDMA_NOMSG`).
#[test]
fn a_call_that_can_never_fit_is_refused() {
    for opts in [PairOptions::v1(), PairOptions::default()] {
        let mut pair = Pair::with(opts.server_memory(MIB).read_window(u64::MAX));
        let data = Bytes::from(vec![1; 2 * MIB as usize]);
        pair.send_call(1, write_call(1, data), small());
        pair.drive();
        match pair.client.take_event(|e| {
            matches!(
                e,
                Event::Reply { xid: 1, .. } | Event::CallFailed { xid: 1, .. }
            )
        }) {
            // MSG_ACCEPTED, SYSTEM_ERR.
            Some(Event::Reply { message, .. }) => {
                assert_eq!(&message.inline()[20..24], &[0, 0, 0, 5])
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(pair.server.engine.stats().calls_refused_for_memory, 1);
        assert_eq!(pair.server.engine.stats().sink_bytes_allocated, 0);
        // A Long call (everything in a Position-Zero Read chunk) that big.
        let mut pe = PayloadEncoder::new();
        let mut e = pe.encoder();
        for w in [2u32, 0, 2, 0x2000_0099, 1, 1, 0, 0, 0, 0] {
            e.put_u32(w);
        }
        e.put_fixed_opaque(&vec![7; 2 * MIB as usize]);
        pair.send_call(2, pe.finish(), small());
        pair.drive();
        match pair.client.take_event(|e| {
            matches!(
                e,
                Event::Reply { xid: 2, .. } | Event::CallFailed { xid: 2, .. }
            )
        }) {
            // The RPC XID is the transport header's (RFC 8166 §4.2.1), so an
            // RPC-level reply needs nothing from the unread call: SYSTEM_ERR.
            Some(Event::Reply { message, .. }) => {
                assert_eq!(&message.inline()[..], &words(&[2, 1, 0, 0, 0, 5])[..])
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(pair.server.engine.stats().calls_refused_for_memory, 2);
        assert_eq!(pair.server.engine.stats().sink_bytes_allocated, 0);
        pair.assert_no_leaks();
    }
}

/// Two connections sharing one server budget: the first (its peer never
/// answers the Reads) fills it but for the headroom kept for connections
/// that hold nothing, which the second's first call gets at once; its
/// next call waits and says so (`memory_wait`); when the first
/// connection goes, its memory comes back and the second proceeds.
#[test]
fn a_shared_budget_is_shared_and_returned_when_a_connection_goes() {
    let shared = MemoryBudget::new(4 * MIB);
    assert_eq!(shared.headroom(), MIB / 2);
    let opts = || PairOptions {
        server_budget: Some(shared.clone()),
        ..v1_budget(64 * MIB)
    };
    let mut hostile = Pair::with(opts());
    hostile.hold_sends(false, true);
    for x in 0..5u32 {
        inject_write(&mut hostile, 10 + x, MIB as u32);
    }
    hostile.drive();
    // 3 MiB: a fourth would eat into the headroom.
    assert_eq!(hostile.server.engine.memory_in_use(), 3 * MIB);
    assert_eq!(shared.in_use(), 3 * MIB);

    let mut honest = Pair::with(opts());
    // A first exchange gives the client its credits.
    honest.send_call(9, write_call(9, Bytes::new()), small());
    honest.serve(|xid, _| reply(xid, None));
    honest.hold_sends(true, true); // keep both calls' Reads pending
    for x in 1..=2u32 {
        let data = Bytes::from(vec![x as u8; MIB as usize]);
        honest.send_call(x, write_call(x, data), small());
    }
    honest.hold_sends(true, false);
    honest.hold_sends(false, true);
    honest.drive();
    // The first got the headroom; the second waits.
    assert_eq!(honest.server.engine.memory_in_use(), MIB);
    let epoch = honest
        .server
        .engine
        .memory_wait()
        .expect("waits for memory");
    assert_eq!(honest.server.engine.calls_waiting(), 1);

    // The hostile connection goes: everything it held comes back.
    hostile.disconnect();
    assert_eq!(shared.in_use(), MIB);
    assert_ne!(shared.epoch(), epoch);
    honest.server.engine.retry_admission();
    honest.hold_sends(false, false);
    let mut answered = 0;
    for _ in 0..10 {
        honest.drive();
        answered += answer_all(&mut honest);
    }
    assert_eq!(answered, 2);
    for x in 1..=2u32 {
        assert!(honest
            .client
            .take_event(|e| matches!(e, Event::Reply { xid, .. } if *xid == x))
            .is_some());
    }
    assert!(honest.server.engine.memory_wait().is_none());
    assert_eq!(honest.server.engine.memory_in_use(), 0);
}

/// A READ-like call of program 0x20000099 (procedure 2, no DDP item).
fn read_call(xid: u32) -> Payload {
    let mut pe = PayloadEncoder::new();
    let mut e = pe.encoder();
    for w in [xid, 0, 2, 0x2000_0099, 1, 2, 0, 0, 0, 0, 0, xid, 0x100_0000] {
        e.put_u32(w);
    }
    pe.finish()
}

/// The octets of Write and Reply chunks in the client's last message: the
/// room the server reserves for its reply.
fn offered_room(pair: &Pair) -> u64 {
    let (sent, _) = pair.client.sent.last().unwrap().clone();
    let msg = rpcrdma_wire::decode(&sent, &Default::default()).unwrap();
    let c = msg.header.chunks().unwrap();
    c.writes
        .iter()
        .chain(c.reply.as_ref())
        .flat_map(|c| c.segments.iter())
        .map(|s| u64::from(s.length))
        .sum()
}

/// Reply data is counted from the call's admission: the room its Write
/// and Reply chunks offer is reserved then, and at `send_reply` the
/// reservation becomes the data the reply's RDMA Writes carry (the rest
/// goes back at once), held until its Send completes. Meanwhile a call
/// whose room does not fit what is left waits, holding its credit.
#[test]
fn reply_data_in_flight_counts() {
    let mut pair = Pair::with(v1_budget(6 * MIB));
    // A first exchange gives the client its credits.
    pair.send_call(9, write_call(9, Bytes::new()), small());
    pair.serve(|xid, _| reply(xid, None));
    let hints = || ReplyHints::with_ddp(&[2 << 20], (2 << 20) + 64);
    pair.send_call(1, read_call(1), hints());
    pair.drive();
    let room = offered_room(&pair);
    assert!(room > 2 * MIB, "{room}");
    let Some(Event::Call { token, .. }) =
        pair.server.take_event(|e| matches!(e, Event::Call { .. }))
    else {
        panic!("no call")
    };
    // Reserved before the reply exists.
    assert_eq!(pair.server.engine.memory_in_use(), room);
    pair.hold_sends(false, true);
    pair.server
        .engine
        .send_reply(token, reply(1, Some(Bytes::from(vec![9; 2 << 20]))))
        .unwrap();
    pair.drive();
    // The reservation became the 2 MiB the Write carries.
    assert_eq!(pair.server.engine.memory_in_use(), 2 * MIB);
    // Another such call does not fit beside it (2 MiB + room > 6 MiB):
    // it waits, and so does a call without chunks behind it.
    pair.send_call(2, read_call(2), hints());
    pair.send_call(3, write_call(3, Bytes::new()), small());
    pair.drive();
    assert_eq!(pair.server.engine.calls_waiting(), 2);
    assert_eq!(pair.server.engine.stats().credit_overruns, 0);
    pair.hold_sends(false, false);
    pair.drive();
    assert_eq!(pair.server.engine.calls_waiting(), 0);
    assert_eq!(pair.server.engine.memory_in_use(), room);
    assert_eq!(answer_all(&mut pair), 2);
    pair.drive();
    assert_eq!(pair.server.engine.memory_in_use(), 0);
    for x in 1..=3u32 {
        assert!(pair
            .client
            .take_event(|e| matches!(e, Event::Reply { xid, .. } if *xid == x))
            .is_some());
    }
    pair.assert_no_leaks();
}

/// A client region of `len` octets the server may write (the Write and
/// Reply chunks a hostile client offers): (STag, address).
fn client_sink(pair: &mut Pair, len: u64) -> (u32, u64) {
    let mr = pair
        .fabric
        .pd(1)
        .register_mut(
            bytes::BytesMut::zeroed(len as usize),
            Access::LOCAL_WRITE | Access::REMOTE_WRITE,
        )
        .unwrap();
    let key = (mr.rkey(), mr.addr());
    std::mem::forget(mr); // the "client" keeps it registered
    key
}

/// A hand-made READ call (as a hostile client sends it): RDMA_MSG, no
/// Read list, one Write chunk of `len` octets at `sink`, and a Reply
/// chunk of `reply_len` octets there too if not zero.
fn inject_read(pair: &mut Pair, xid: u32, sink: (u32, u64), len: u32, reply_len: u32) {
    let (key, addr) = sink;
    let seg = |l: u32| [key, l, (addr >> 32) as u32, addr as u32];
    let mut m = vec![xid, 1, 64, 0, 0, 1, 1];
    m.extend(seg(len));
    m.push(0);
    if reply_len > 0 {
        m.push(1);
        m.push(1);
        m.extend(seg(reply_len));
    } else {
        m.push(0);
    }
    m.extend([xid, 0, 2, 0x2000_0099, 1, 2, 0, 0, 0, 0, 0, xid, len]);
    pair.inject(false, &words(&m));
}

/// Reply amplification (the gap an audit of issue 9 found): a peer sends
/// READ calls each offering a large Write chunk and never drains its end.
/// Before, every call was handed up at once and each reply's data was
/// charged whatever the limits (12 × 2 MiB against a 8 MiB limit); now
/// a call is handed up only once the room its Write and Reply chunks
/// offer fits, and the others wait holding their credits. When the peer
/// drains, every call completes in turn, never above the limit.
#[test]
fn reply_room_is_reserved_at_admission() {
    let mut pair = Pair::with(v1_budget(8 * MIB));
    pair.hold_sends(false, true);
    for x in 0..12u32 {
        // A sink each: a reply's Send With Invalidate fences its call's.
        let sink = client_sink(&mut pair, 2 * MIB);
        inject_read(&mut pair, 200 + x, sink, 2 * MIB as u32, 0);
    }
    let data = Bytes::from(vec![7; 2 << 20]);
    let answer = |pair: &mut Pair| {
        let mut n = 0;
        pair.drive();
        while let Some(Event::Call { token, xid, .. }) =
            pair.server.take_event(|e| matches!(e, Event::Call { .. }))
        {
            pair.server
                .engine
                .send_reply(token, reply(xid, Some(data.clone())))
                .unwrap();
            n += 1;
            pair.drive();
            assert!(pair.server.engine.memory_in_use() <= 8 * MIB);
        }
        n
    };
    assert_eq!(answer(&mut pair), 4);
    assert_eq!(pair.server.engine.memory_in_use(), 8 * MIB);
    assert_eq!(pair.server.engine.calls_waiting(), 8);
    let s = *pair.server.engine.stats();
    assert_eq!((s.credit_overruns, s.calls_refused_for_memory), (0, 0));
    assert!(s.calls_waited_for_memory >= 1, "{s:?}");
    // The peer drains: the rest go through, four at a time at most.
    pair.hold_sends(false, false);
    let mut answered = 4;
    for _ in 0..100 {
        answered += answer(&mut pair);
        if answered == 12 {
            break;
        }
    }
    assert_eq!(answered, 12);
    pair.drive();
    assert_eq!(pair.server.engine.stats().replies_sent, 12);
    assert_eq!(pair.server.engine.memory_in_use(), 0);
    assert_eq!(pair.server.engine.memory_budget().in_use(), 0);
}

/// A call whose Write and Reply chunks offer more room than the
/// connection's limit can never be admitted: it gets `SYSTEM_ERR` at once
/// (as one whose Read chunks never fit), whether the room is a Write
/// chunk or a Reply chunk; the upper layer never sees it.
#[test]
fn a_call_whose_reply_can_never_fit_is_refused() {
    let mut pair = Pair::with(v1_budget(MIB));
    pair.send_call(
        1,
        read_call(1),
        ReplyHints::with_ddp(&[2 << 20], (2 << 20) + 64),
    );
    pair.send_call(2, read_call(2), ReplyHints::at_most(2 << 20));
    pair.drive();
    assert!(pair
        .server
        .take_event(|e| matches!(e, Event::Call { .. }))
        .is_none());
    for x in 1..=2u32 {
        match pair.client.take_event(
            |e| matches!(e, Event::Reply { xid, .. } | Event::CallFailed { xid, .. } if *xid == x),
        ) {
            Some(Event::Reply { message, .. }) => {
                assert_eq!(&message.inline()[..], &words(&[x, 1, 0, 0, 0, 5])[..])
            }
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(pair.server.engine.stats().calls_refused_for_memory, 2);
    assert_eq!(pair.server.engine.memory_in_use(), 0);
    pair.assert_no_leaks();
}

/// Reply room counts against the budget a listener's connections share:
/// a peer offering 2 MiB Write chunks and draining nothing fills an
/// 8 MiB shared budget but for its headroom (3 calls). Another
/// connection's first READ (about 1 MiB of Write and Reply chunks) fits
/// what is left, its second waits for memory. A third connection's call
/// without chunks (its reply goes inline: the connection's fixed cost,
/// which never takes the shared budget) completes at once although its
/// READ could not be admitted. Once the hostile connection is gone the
/// waiting READ goes through.
#[test]
fn reply_room_counts_against_the_shared_budget() {
    let shared = MemoryBudget::new(8 * MIB);
    let opts = || PairOptions {
        server_budget: Some(shared.clone()),
        ..v1_budget(64 * MIB)
    };
    let mut hostile = Pair::with(opts());
    hostile.hold_sends(false, true);
    for x in 0..8u32 {
        let sink = client_sink(&mut hostile, 2 * MIB);
        inject_read(&mut hostile, 300 + x, sink, 2 * MIB as u32, 0);
    }
    hostile.drive();
    let data = Bytes::from(vec![5; 2 << 20]);
    while let Some(Event::Call { token, xid, .. }) = hostile
        .server
        .take_event(|e| matches!(e, Event::Call { .. }))
    {
        hostile
            .server
            .engine
            .send_reply(token, reply(xid, Some(data.clone())))
            .unwrap();
        hostile.drive();
    }
    assert_eq!(hostile.server.engine.memory_in_use(), 6 * MIB);
    assert_eq!(hostile.server.engine.calls_waiting(), 5);
    assert_eq!(shared.in_use(), 6 * MIB);

    let mut honest = Pair::with(opts());
    honest.send_call(9, write_call(9, Bytes::new()), small());
    honest.serve(|xid, _| reply(xid, None));
    assert!(honest
        .client
        .take_event(|e| matches!(e, Event::Reply { xid: 9, .. }))
        .is_some());
    let hints = || ReplyHints::with_ddp(&[MIB as u32 / 2], MIB as u32 / 2 + 64);
    honest.send_call(1, read_call(1), hints());
    honest.send_call(2, read_call(2), hints());
    honest.drive();
    let first = honest
        .server
        .take_event(|e| matches!(e, Event::Call { xid: 1, .. }));
    assert!(first.is_some());
    assert_eq!(honest.server.engine.calls_waiting(), 1);
    let epoch = honest
        .server
        .engine
        .memory_wait()
        .expect("waits for memory");
    assert!(shared.in_use() <= 8 * MIB);
    let mut third = Pair::with(opts());
    third.send_call(7, write_call(7, Bytes::new()), small());
    third.serve(|xid, _| reply(xid, None));
    assert!(third
        .client
        .take_event(|e| matches!(e, Event::Reply { xid: 7, .. }))
        .is_some());
    third.send_call(8, read_call(8), hints());
    third.drive();
    assert!(third.server.engine.memory_wait().is_some());
    third.disconnect();
    hostile.disconnect();
    assert_ne!(shared.epoch(), epoch);
    honest.server.engine.retry_admission();
    if let Some(Event::Call { token, xid, .. }) = first {
        honest
            .server
            .engine
            .send_reply(token, reply(xid, Some(Bytes::from(vec![1; 1000]))))
            .unwrap();
    }
    honest.drive();
    assert_eq!(answer_all(&mut honest), 1);
    honest.drive();
    for x in 1..=2u32 {
        assert!(honest
            .client
            .take_event(|e| matches!(e, Event::Reply { xid, .. } if *xid == x))
            .is_some());
    }
    assert_eq!(honest.server.engine.memory_in_use(), 0);
    assert_eq!(shared.in_use(), shared.pooled());
    honest.assert_no_leaks();
}

/// A peer that never answers the RDMA Reads holds the memory only until
/// the stall timeout: then the connection is closed and the memory is
/// back (spec note E22).
#[test]
fn a_stalled_peer_is_cut_off_after_the_stall_timeout() {
    let shared = MemoryBudget::new(64 * MIB);
    let mut pair = Pair::with(PairOptions {
        server_budget: Some(shared.clone()),
        ..v1_budget(8 * MIB)
    });
    pair.hold_sends(false, true);
    inject_write(&mut pair, 5, MIB as u32);
    pair.drive();
    assert_eq!(shared.in_use(), MIB);
    let timeout = pair.server.engine.config().stall_timeout;
    pair.advance(timeout / 2);
    assert!(pair.server.engine.error().is_none());
    pair.advance(timeout);
    assert!(
        matches!(
            pair.server.engine.error(),
            Some(EngineError::Stalled { .. })
        ),
        "{:?}",
        pair.server.engine.error()
    );
    assert_eq!(shared.in_use(), 0);
}

/// The client side: a server cannot make a client allocate more than the
/// Write and Reply chunks the client offered. Replies claiming more than
/// was provided are refused without any allocation, and writing past a
/// chunk is refused by the client's RDMA layer.
#[test]
fn a_server_cannot_make_the_client_allocate_beyond_its_chunks() {
    let mut pair = Pair::with(v1_budget(64 * MIB));
    let hints = ReplyHints::with_ddp(&[4096], 4096 + 64);
    let mut pe = PayloadEncoder::new();
    let mut e = pe.encoder();
    for w in [1u32, 0, 2, 0x2000_0099, 1, 2, 0, 0, 0, 0] {
        e.put_u32(w);
    }
    pair.send_call(1, pe.finish(), hints);
    pair.drive();
    let offered = pair.client.engine.stats().sink_bytes_allocated;
    // The Write chunk (4096) and the Reply chunk (4160).
    assert_eq!(offered, 4096 + 4160);
    let (sent, _) = pair.client.sent.last().unwrap().clone();
    let msg = rpcrdma_wire::decode(&sent, &Default::default()).unwrap();
    let w = msg.header.chunks().unwrap().writes[0].segments[0];
    // A reply claiming 16 MiB in the Write chunk.
    let mut m = words(&[1, 1, 64, 0, 0, 1, 1, w.handle, 16 << 20]);
    m.extend_from_slice(&w.offset.to_be_bytes());
    m.extend(words(&[0, 0]));
    m.extend_from_slice(&reply(1, None).flatten());
    pair.inject(true, &m);
    assert!(matches!(
        pair.client
            .take_event(|e| matches!(e, Event::CallFailed { xid: 1, .. })),
        Some(Event::CallFailed {
            error: CallError::BadReply(_),
            ..
        })
    ));
    assert_eq!(pair.client.engine.stats().sink_bytes_allocated, offered);
    assert_eq!(pair.client.engine.memory_in_use(), 0);
    pair.drive();
    pair.assert_no_leaks();

    // A real reply larger than the chunk: the server's engine refuses to
    // send it (E4) and the client allocated nothing more.
    let mut pair = Pair::with(v1_budget(64 * MIB));
    let hints = ReplyHints::with_ddp(&[4096], 4096 + 64);
    let mut pe = PayloadEncoder::new();
    let mut e = pe.encoder();
    for w in [2u32, 0, 2, 0x2000_0099, 1, 2, 0, 0, 0, 0] {
        e.put_u32(w);
    }
    pair.send_call(2, pe.finish(), hints);
    pair.serve(|xid, _| reply(xid, Some(Bytes::from(vec![1; 1 << 20]))));
    assert!(pair
        .client
        .take_event(|e| matches!(e, Event::CallFailed { xid: 2, .. }))
        .is_some());
    assert_eq!(pair.client.engine.stats().sink_bytes_allocated, 4096 + 4160);
    pair.assert_no_leaks();
}

/// A WRITE-like call whose data are several DDP-eligible opaques (one Read
/// chunk each).
fn multi_write_call(xid: u32, parts: &[Bytes]) -> Payload {
    let mut pe = PayloadEncoder::new();
    let mut e = pe.encoder();
    for w in [xid, 0, 2, 0x2000_0099, 1, 3, 0, 0, 0, 0] {
        e.put_u32(w);
    }
    for p in parts {
        e.put_opaque_ddp(p.clone());
    }
    pe.finish()
}

/// An idle pooled sink larger than a chunk needs never keeps a call that
/// fits the connection's limit waiting: with a 4 MiB limit and a 4 MiB
/// sink left in the pool by an earlier call, a call with two 2 MiB Read
/// chunks (4 MiB in all, on an otherwise idle connection) is admitted
/// with fresh sinks rather than waiting for ever for memory that nothing
/// will release.
#[test]
fn a_larger_pooled_sink_never_keeps_a_fitting_call_waiting() {
    let mut pair = Pair::with(v1_budget(4 * MIB));
    pair.send_call(
        1,
        multi_write_call(1, &[Bytes::from(vec![1; 4 * MIB as usize])]),
        small(),
    );
    pair.serve(|xid, _| reply(xid, None));
    assert!(pair
        .client
        .take_event(|e| matches!(e, Event::Reply { xid: 1, .. }))
        .is_some());
    assert_eq!(pair.server.engine.memory_in_use(), 0);
    assert_eq!(pair.server.engine.memory_budget().pooled(), 4 * MIB);
    let half = Bytes::from(vec![2; 2 * MIB as usize]);
    pair.send_call(2, multi_write_call(2, &[half.clone(), half]), small());
    pair.serve(|xid, message| {
        let mut d = Decoder::with_ddp(message);
        d.skip(40).unwrap();
        for _ in 0..2 {
            assert_eq!(d.get_opaque_ddp(4 << 20).unwrap(), vec![2; 2 << 20]);
        }
        reply(xid, None)
    });
    assert_eq!(pair.server.engine.calls_waiting(), 0);
    assert!(
        pair.client
            .take_event(|e| matches!(e, Event::Reply { xid: 2, .. }))
            .is_some(),
        "call 2 still waits: {:?}",
        pair.server.engine.stats()
    );
    assert!(pair.server.engine.memory_in_use() <= 4 * MIB);
    pair.assert_no_leaks();
}

/// The other way round: a client that enabled its backchannel is the
/// responder of the server's reverse-direction calls (RFC 8167), and
/// their Read chunk sinks are admitted against the client's own budget
/// like any responder's: one larger than the client's per-connection
/// limit is refused with `SYSTEM_ERR` and nothing is allocated for it;
/// ones that fit wait their turn and complete. (Without the backchannel
/// enabled a reverse call is refused before anything is allocated: E5.)
#[test]
fn reverse_calls_are_bounded_by_the_clients_budget() {
    let mut o = PairOptions::default();
    o.client.max_memory = MIB;
    let mut pair = Pair::with(o);
    // A first forward exchange settles the version.
    pair.send_call(1, write_call(1, Bytes::new()), small());
    pair.serve(|xid, _| reply(xid, None));
    pair.client.engine.enable_backchannel().unwrap();
    pair.server.engine.peer_backchannel_ready(pair.now).unwrap();
    let big = Bytes::from(vec![3; 2 * MIB as usize]);
    pair.server
        .engine
        .send_call(pair.now, 700, write_call(700, big), small())
        .unwrap();
    for x in 0..3u32 {
        let data = Bytes::from(vec![x as u8; (MIB / 2) as usize]);
        pair.server
            .engine
            .send_call(pair.now, 701 + x, write_call(701 + x, data), small())
            .unwrap();
    }
    let mut answered = 0;
    for _ in 0..50 {
        pair.drive();
        assert!(pair.client.engine.memory_in_use() <= MIB);
        while let Some(Event::Call { token, xid, .. }) =
            pair.client.take_event(|e| matches!(e, Event::Call { .. }))
        {
            assert_ne!(xid, 700);
            pair.client
                .engine
                .send_reply(token, reply(xid, None))
                .unwrap();
            answered += 1;
        }
    }
    assert_eq!(answered, 3);
    match pair
        .server
        .take_event(|e| matches!(e, Event::Reply { xid: 700, .. }))
    {
        Some(Event::Reply { message, .. }) => assert_eq!(&message.inline()[20..24], &[0, 0, 0, 5]),
        other => panic!("{other:?}"),
    }
    let s = pair.client.engine.stats();
    assert_eq!(s.calls_refused_for_memory, 1);
    assert!(s.sink_bytes_allocated <= 3 * MIB / 2, "{s:?}");
    assert_eq!(pair.client.engine.memory_in_use(), 0);
    pair.assert_no_leaks();
}

/// The room reserved for a reply is at most the server's `max_message`:
/// a reply whose RDMA-written data exceeds its reservation (only one
/// larger than `max_message` can) is never sent beyond the budget, but
/// answered `SYSTEM_ERR`, and its memory goes back.
#[test]
fn a_reply_beyond_its_reservation_is_answered_system_err() {
    let mut o = PairOptions::v1();
    o.server.max_message = 64 << 10;
    let mut pair = Pair::with(o);
    pair.send_call(
        1,
        read_call(1),
        ReplyHints::with_ddp(&[100 << 10], (100 << 10) + 64),
    );
    pair.drive();
    assert!(offered_room(&pair) > 128 << 10);
    let Some(Event::Call { token, .. }) =
        pair.server.take_event(|e| matches!(e, Event::Call { .. }))
    else {
        panic!("no call")
    };
    assert_eq!(pair.server.engine.memory_in_use(), 64 << 10);
    pair.server
        .engine
        .send_reply(token, reply(1, Some(Bytes::from(vec![3; 100 << 10]))))
        .unwrap();
    pair.drive();
    match pair.client.take_event(|e| {
        matches!(
            e,
            Event::Reply { xid: 1, .. } | Event::CallFailed { xid: 1, .. }
        )
    }) {
        Some(Event::Reply { message, .. }) => {
            assert_eq!(&message.inline()[..], &words(&[1, 1, 0, 0, 0, 5])[..])
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(pair.server.engine.stats().replies_refused_for_memory, 1);
    assert_eq!(pair.server.engine.memory_in_use(), 0);
    pair.assert_no_leaks();
}

/// A connection's fixed cost (receive buffers, one inline reply per
/// credit, queue pair; `EngineConfig::connection_cost`), charged to the
/// shared budget by a listener at accept, is held by the engine until the
/// connection ends, and a charge that would take the part kept for calls
/// (half the headroom, a sixteenth of the limit) is refused (the listener
/// then refuses the connection).
#[test]
fn a_connections_fixed_cost_is_held_until_it_ends() {
    let o = PairOptions::v1();
    let cost = o.server.connection_cost(o.caps);
    // 64 credits and 8 reverse-direction calls of 4 KiB receive buffers,
    // 64 inline replies of up to 4 KiB, and the queue pair's allowance.
    assert_eq!(
        cost,
        72 * 4096 + 64 * 4096 + rpcrdma_engine::CONNECTION_OVERHEAD
    );
    let shared = MemoryBudget::new(4 * cost);
    let mut pairs = Vec::new();
    for _ in 0..3 {
        let mut pair = Pair::with(PairOptions {
            server_budget: Some(shared.clone()),
            ..o.clone()
        });
        let charge = shared.try_charge(cost).expect("fits");
        pair.server.engine.hold_charge(charge);
        pairs.push(pair);
    }
    assert_eq!(shared.in_use(), 3 * cost);
    // A fourth would take the part kept for calls.
    assert_eq!(shared.connection_reserve(), shared.limit() / 16);
    assert!(shared.try_charge(cost).is_none());
    // Calls still work, within what is left.
    pairs[0].send_call(1, write_call(1, Bytes::new()), small());
    pairs[0].serve(|xid, _| reply(xid, None));
    assert!(pairs[0]
        .client
        .take_event(|e| matches!(e, Event::Reply { xid: 1, .. }))
        .is_some());
    pairs[1].disconnect();
    assert_eq!(shared.in_use(), 2 * cost);
    drop(pairs);
    assert_eq!(shared.in_use(), 0);
}

// ----- the read window (`EngineConfig::read_window`) -----------------------

/// Takes the calls the server has handed up, unanswered; returns how
/// many.
fn take_calls(pair: &mut Pair) -> u64 {
    let mut n = 0;
    while pair
        .server
        .take_event(|e| matches!(e, Event::Call { .. }))
        .is_some()
    {
        n += 1;
    }
    n
}

/// Version One with the default budget and a server read window of
/// `bytes`.
fn v1_window(bytes: u64) -> PairOptions {
    PairOptions::v1().read_window(bytes)
}

/// Calls whose Read data would go beyond the window wait (holding their
/// credits) until earlier calls' data is in, although the memory limit
/// would take them all; the calls within it are pulled together (their
/// Reads overlap), and the window never holds more than it should.
#[test]
fn reads_beyond_the_read_window_wait_for_earlier_pulls() {
    let mut pair = Pair::with(v1_window(2 * MIB));
    pair.hold_sends(false, true); // the server's Reads go unanswered
    for x in 0..6u32 {
        inject_write(&mut pair, 200 + x, MIB as u32);
        pair.drive();
    }
    let s = *pair.server.engine.stats();
    // Two calls' sinks (the window), both calls' Reads posted at once.
    assert_eq!(s.sink_bytes_allocated, 2 * MIB, "{s:?}");
    assert_eq!(s.rdma_reads, 2, "{s:?}");
    assert_eq!(pair.server.engine.calls_waiting(), 4);
    assert!(s.calls_waited_for_window >= 1, "{s:?}");
    assert_eq!(s.calls_waited_for_memory, 0, "{s:?}");
    // The peer answers the Reads: each call handed up lets the next in,
    // with no answer needed; never more than two pulled at a time.
    pair.hold_sends(false, false);
    let mut delivered = 0;
    for _ in 0..100 {
        pair.step();
        delivered += take_calls(&mut pair);
        let e = &pair.server.engine;
        let pulled = e.stats().sink_bytes_allocated + e.stats().sink_buffers_reused * MIB;
        assert!(
            pulled <= (delivered + 2) * MIB,
            "{pulled} ahead of {delivered}"
        );
        if delivered == 6 {
            break;
        }
    }
    assert_eq!(delivered, 6);
    assert_eq!(pair.server.engine.calls_waiting(), 0);
    assert_eq!(pair.server.engine.stats().rdma_reads, 6);
}

/// A connection pulling nothing admits its oldest call whatever its size
/// (the window is not a limit on a call); the next call waits until that
/// one's data is in, not until it is answered.
#[test]
fn a_call_larger_than_the_read_window_is_pulled_alone() {
    let mut pair = Pair::with(v1_window(MIB));
    pair.hold_sends(false, true);
    inject_write(&mut pair, 300, 3 * MIB as u32);
    pair.drive();
    inject_write(&mut pair, 301, 4096);
    pair.drive();
    let s = *pair.server.engine.stats();
    assert_eq!(s.sink_bytes_allocated, 3 * MIB, "{s:?}");
    assert_eq!(pair.server.engine.calls_waiting(), 1);
    pair.hold_sends(false, false);
    pair.drive();
    // Both handed up; neither answered yet.
    assert_eq!(pair.server.engine.calls_waiting(), 0);
    assert_eq!(answer_all(&mut pair), 2);
    pair.drive();
    assert_eq!(pair.server.engine.memory_in_use(), 0);
}

/// A call handed up and never answered does not hold the window: calls
/// after it are still pulled and handed up (a handler that waits for a
/// later call of the same connection cannot stall it).
#[test]
fn an_unanswered_call_does_not_hold_the_read_window() {
    let mut pair = Pair::with(v1_window(MIB));
    for x in 0..4u32 {
        inject_write(&mut pair, 350 + x, MIB as u32);
    }
    pair.drive();
    let delivered = take_calls(&mut pair);
    assert_eq!(delivered, 4);
    assert_eq!(pair.server.engine.calls_waiting(), 0);
}

/// Small calls fill the window together: with a 2 MiB window, eight
/// calls of 256 KiB are all pulled at once, as without a window.
#[test]
fn the_read_window_holds_several_small_calls() {
    let mut pair = Pair::with(v1_window(2 * MIB));
    pair.hold_sends(false, true);
    for x in 0..10u32 {
        inject_write(&mut pair, 400 + x, 256 << 10);
        pair.drive();
    }
    let s = *pair.server.engine.stats();
    assert_eq!(s.rdma_reads, 8, "{s:?}");
    assert_eq!(pair.server.engine.calls_waiting(), 2);
    pair.hold_sends(false, false);
    let mut answered = 0;
    for _ in 0..100 {
        pair.drive();
        answered += answer_all(&mut pair);
        if answered == 10 {
            break;
        }
    }
    assert_eq!(answered, 10);
}

/// A zero window is a configuration error, named.
#[test]
fn a_zero_read_window_is_refused() {
    let mut c = rpcrdma_engine::EngineConfig::server();
    c.read_window = 0;
    let e = c.validate().unwrap_err().to_string();
    assert!(e.contains("read_window"), "{e}");
}
