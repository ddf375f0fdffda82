//! Hostile calls against a server with a tiny memory budget (1 octet to
//! 24 KiB or to 96 KiB per connection), grant (1–6), send queue (1–6) and ORD (1–4),
//! in both versions: `RDMA_MSG` and `RDMA_NOMSG` calls naming real and
//! made-up client regions with Read chunks of the right, a shorter or a
//! longer length at plausible and odd Positions, Write lists and Reply
//! chunks and Reply chunks (made up, or real client regions the server
//! may write, of the right, a shorter or a longer length), RPC headers
//! whole, cut short or noise, some bytes mutated; the server's RDMA Reads
//! and its Writes and Sends held back and released at random, calls
//! answered (inline, with DDP data for the Write chunks, or with a long
//! reply for the Reply chunk, of up to 24 000 octets: reply
//! amplification) or retired, the clock advanced past the stall timeout.
//! After every message and every answer the connection holds no more than
//! its limit and the budget no more than its own (before reply room was
//! reserved at admission, replies were charged whatever the limits and
//! the first seeds broke this); at the end a good call still completes
//! (no call waits for ever: a pooled sink larger than its chunk once
//! kept a call that fitted waiting for good), and once the connection
//! goes every registration and octet is back.
//!
//! A seeded, bounded run (`BUDGET_FUZZ_RUNS`, default 2000;
//! `BUDGET_FUZZ_SEED` picks another sequence). 60 000 runs in release
//! (`cargo test --release -p rpcrdma-engine --test budget_hostile` with
//! `BUDGET_FUZZ_RUNS=20000` and seeds 1–3) found nothing else.

mod common;

use bytes::{Bytes, BytesMut};
use rpcrdma_engine::testing::{Pair, PairOptions};
use rpcrdma_engine::{Event, ReplyHints};
use rpcrdma_verbs::{Access, MemoryRegion, ProtectionDomain};
use rpcrdma_xdr::{Payload, PayloadEncoder};

use common::{call, words};

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

fn reply_bytes(xid: u32) -> Payload {
    let mut r = BytesMut::new();
    for w in [xid, 1, 0, 0, 0, 0] {
        r.extend_from_slice(&w.to_be_bytes());
    }
    Payload::inline_only(r.freeze())
}

/// A reply the upper layer may build, of up to 24 000 octets: inline
/// only, with a DDP-eligible result (for a Write chunk), or a long inline
/// part (for a Reply chunk).
fn any_reply(xid: u32, rng: &mut Rng) -> Payload {
    let len = rng.below(24_001) as usize;
    let mut pe = PayloadEncoder::new();
    let mut e = pe.encoder();
    for w in [xid, 1, 0, 0, 0, 0] {
        e.put_u32(w);
    }
    match rng.below(3) {
        0 => return reply_bytes(xid),
        1 => e.put_opaque_ddp(Bytes::from(vec![0xd5; len])),
        _ => e.put_opaque(&vec![0x1e; len]),
    }
    pe.finish()
}

/// A client region of `len` octets the server may write (a Write or
/// Reply chunk a hostile client offers): (STag, address).
fn client_sink(pair: &Pair, len: usize) -> (u32, u64) {
    let mr = pair
        .fabric
        .pd(1)
        .register_mut(
            BytesMut::zeroed(len),
            Access::LOCAL_WRITE | Access::REMOTE_WRITE,
        )
        .unwrap();
    let key = (mr.rkey(), mr.addr());
    std::mem::forget(mr);
    key
}

/// A Write chunk or Reply chunk segment: made up, or a real client
/// region with its own, a shorter or a longer length.
fn any_sink(pair: &Pair, rng: &mut Rng) -> [u32; 4] {
    if rng.below(4) == 0 {
        return [0x9999, 4096, 0, 0];
    }
    let len = [64usize, 4096, 9000, 20000][rng.below(4) as usize];
    let (k, a) = client_sink(pair, len);
    let l = match rng.below(3) {
        0 => len as u32,
        1 => rng.below(len as u64 + 1) as u32,
        _ => len as u32 + rng.below(100) as u32,
    };
    [k, l, (a >> 32) as u32, a as u32]
}

/// The server engine's memory stays within `max_mem`, and its shared
/// budget's use within the budget's limit.
fn assert_within_budget(
    pair: &Pair,
    max_mem: u64,
    seed: u64,
    step: impl std::fmt::Display,
    when: &str,
) {
    let e = &pair.server.engine;
    assert!(
        e.memory_in_use() <= max_mem,
        "seed {seed} step {step}{when}: {} > {max_mem}",
        e.memory_in_use()
    );
    let b = e.memory_budget();
    assert!(
        b.in_use() <= b.limit(),
        "seed {seed} step {step}{when}: budget {} > {}",
        b.in_use(),
        b.limit()
    );
}

fn one_run(seed: u64, agg: &mut [u64; 9]) {
    let mut rng = Rng(seed | 1);
    let v2 = rng.below(2) == 0;
    let mut o = if v2 {
        PairOptions::default()
    } else {
        PairOptions::v1()
    };
    let top = if rng.below(2) == 0 {
        3 * 8192
    } else {
        96 << 10
    };
    o = o
        .grant(1 + rng.below(6) as u32)
        .server_memory(1 + rng.below(top));
    o.caps.send_depth = 1 + rng.below(6) as u32;
    o.caps.ord = (1 + rng.below(4)) as _;
    o.seed = seed;
    let max_mem = o.server.max_memory;
    let mut pair = Pair::with(o);
    // Client regions the hostile calls name.
    let mut regions = Vec::new();
    for len in [1usize, 4, 5, 8, 40, 100, 4096, 9000, 20000] {
        let mut data = vec![0u8; len];
        for (i, b) in data.iter_mut().enumerate() {
            *b = i as u8;
        }
        // A real RPC call header at the start of the bigger ones.
        if len >= 40 {
            let h = words(&[77, 0, 2, 0x2000_0099, 1, 3, 0, 0, 0, 0]);
            data[..40].copy_from_slice(&h);
        }
        let mr = pair
            .fabric
            .pd(1)
            .register_bytes(Bytes::from(data), Access::REMOTE_READ)
            .unwrap();
        regions.push((mr.rkey(), mr.addr(), len as u32));
        std::mem::forget(mr);
    }
    let vers = if v2 { 2 } else { 1 };
    let n_msgs = 1 + rng.below(30);
    let mut held = false;
    for step in 0..n_msgs {
        // A hostile message to the server.
        let xid = rng.below(8) as u32 + 100;
        let nomsg = rng.below(3) == 0;
        let mut m = vec![xid, vers, rng.below(100) as u32, u32::from(nomsg)];
        if v2 {
            m.push(0);
        }
        let nreads = rng.below(4);
        for _ in 0..nreads {
            let (k, a, len) = regions[rng.below(regions.len() as u64) as usize];
            let pos = match rng.below(4) {
                0 => 0,
                1 => 44,
                2 => 4 * rng.below(20) as u32,
                _ => 56,
            };
            let l = match rng.below(3) {
                0 => len,
                1 => len.min(rng.below(u64::from(len) + 1) as u32),
                _ => len + rng.below(8) as u32,
            };
            m.extend([1, pos, k, l, (a >> 32) as u32, a as u32]);
        }
        m.push(0);
        // Write list / reply chunk sometimes.
        if rng.below(3) == 0 {
            for _ in 0..1 + rng.below(2) {
                m.extend([1, 1]);
                m.extend(any_sink(&pair, &mut rng));
            }
            m.push(0);
        } else {
            m.push(0);
        }
        if rng.below(3) == 0 {
            m.extend([1, 1]);
            m.extend(any_sink(&pair, &mut rng));
        } else {
            m.push(0);
        }
        if !nomsg {
            let body: Vec<u32> = match rng.below(4) {
                0 => vec![xid, 0, 2, 0x2000_0099, 1, 3, 0, 0, 0, 0, 5, 8],
                1 => vec![xid, 0, 2, 0x2000_0099],
                2 => vec![xid, 0, 2, 0x2000_0099, 1, 3, 0, 0, 0, 0, 9000],
                _ => (0..rng.below(16)).map(|_| rng.below(10) as u32).collect(),
            };
            m.extend(body);
        }
        let mut b = words(&m);
        // Mutate.
        for _ in 0..(if rng.below(3) == 0 { rng.below(3) } else { 0 }) {
            if b.is_empty() {
                break;
            }
            let at = rng.below(b.len() as u64) as usize;
            b[at] = rng.next() as u8;
        }
        if rng.below(30) == 0 {
            b.truncate(rng.below(b.len() as u64 + 1) as usize);
        }
        if pair.server.engine.error().is_some() {
            break;
        }
        let _ = pair.drive_until_idle(10_000);
        if pair.server.posted_receives() == 0 {
            break;
        }
        pair.inject(false, &b);
        if rng.below(5) == 0 {
            held = !held;
            pair.hold_sends(false, held);
        }
        let _ = pair.drive_until_idle(10_000);
        assert_within_budget(&pair, max_mem, seed, step, "");
        // Answer, retire or keep calls.
        while let Some(Event::Call { token, xid, .. }) =
            pair.server.take_event(|e| matches!(e, Event::Call { .. }))
        {
            if rng.below(4) == 0 {
                let _ = pair.server.engine.retire_call(token);
            } else {
                let r = any_reply(xid, &mut rng);
                let _ = pair.server.engine.send_reply(token, r);
            }
            assert_within_budget(&pair, max_mem, seed, step, ", answered");
        }
        if rng.below(8) == 0 {
            pair.advance(std::time::Duration::from_secs(rng.below(15)));
        }
        let _ = pair.drive_until_idle(10_000);
    }
    pair.hold_sends(false, false);
    let _ = pair.drive_until_idle(100_000);
    while let Some(Event::Call { token, xid, .. }) =
        pair.server.take_event(|e| matches!(e, Event::Call { .. }))
    {
        let r = any_reply(xid, &mut rng);
        let _ = pair.server.engine.send_reply(token, r);
        assert!(pair.server.engine.memory_in_use() <= max_mem, "seed {seed}");
    }
    let _ = pair.drive_until_idle(100_000);
    // Liveness: a good call still completes if both ends are up.
    if pair.server.engine.error().is_none() && pair.client.engine.error().is_none() {
        let waiting = pair.server.engine.calls_waiting();
        if pair
            .client
            .engine
            .send_call(
                pair.now,
                5000,
                call(5000, 0, &[], None),
                ReplyHints::at_most(64),
            )
            .is_ok()
        {
            for _ in 0..50 {
                let _ = pair.drive_until_idle(100_000);
                let mut any = false;
                while let Some(Event::Call { token, xid, .. }) =
                    pair.server.take_event(|e| matches!(e, Event::Call { .. }))
                {
                    any = true;
                    let _ = pair.server.engine.send_reply(token, reply_bytes(xid));
                }
                if !any {
                    break;
                }
            }
            let done = pair.client.events.iter().any(|e| {
                matches!(
                    e,
                    Event::Reply { xid: 5000, .. } | Event::CallFailed { xid: 5000, .. }
                )
            });
            if !done && pair.server.engine.error().is_none() && pair.client.engine.error().is_none()
            {
                panic!(
                    "seed {seed}: good call never completed; server waiting {} (before {waiting}), mem {}, stats {:?}",
                    pair.server.engine.calls_waiting(),
                    pair.server.engine.memory_in_use(),
                    pair.server.engine.stats()
                );
            }
        }
    }
    let st = *pair.server.engine.stats();
    agg[0] += st.calls_received;
    agg[1] += st.rdma_reads;
    agg[2] += st.calls_waited_for_memory;
    agg[3] += st.calls_refused_for_memory;
    agg[4] += st.replies_sent;
    agg[5] += st.bad_messages;
    agg[6] += u64::from(pair.server.engine.error().is_some());
    agg[7] += st.calls_retired;
    agg[8] += st.rdma_writes;
    pair.disconnect();
    assert_eq!(
        pair.server.engine.stats().live_registrations(),
        0,
        "seed {seed}"
    );
    assert_eq!(pair.fabric.live_regions(2), 0, "seed {seed}");
    assert_eq!(pair.server.engine.memory_in_use(), 0, "seed {seed}");
    let b = pair.server.engine.memory_budget();
    assert_eq!(b.in_use(), b.pooled(), "seed {seed}");
}

#[test]
fn hostile_calls_within_a_tiny_budget() {
    let n: u64 = std::env::var("BUDGET_FUZZ_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2000);
    let base: u64 = std::env::var("BUDGET_FUZZ_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1);
    let mut agg = [0u64; 9];
    for i in 0..n {
        one_run(
            base.wrapping_mul(0x9e37_79b9_7f4a_7c15)
                .wrapping_add(i * 7919 + 1),
            &mut agg,
        );
    }
    eprintln!(
        "calls {} reads {} waited for memory {} refused for memory {} replies {} bad {} connections failed {} retired {} writes {}",
        agg[0], agg[1], agg[2], agg[3], agg[4], agg[5], agg[6], agg[7], agg[8]
    );
    // The run reached the paths it is for.
    assert!(
        agg[2] > 0 && agg[3] > 0 && agg[1] > 0 && agg[7] > 0 && agg[8] > 0,
        "{agg:?}"
    );
}
