//! The duplicate request cache: the sans-IO table (every state, bound and
//! replacement rule), and at-most-once execution through the server when a
//! client retransmits after a reconnect, over the RDMA-like transport and
//! TCP — with the first call finished, and with it still running.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use rpcrdma_oncrpc::drc::{
    ArgsSum, CallKey, ClientId, Lookup, ReplyCache, ReplyCacheConfig, ARGS_SUM_PREFIX,
    ENTRY_OVERHEAD,
};
use rpcrdma_oncrpc::mem::{self, MemConfig};
use rpcrdma_oncrpc::tcp::TcpConnector;
use rpcrdma_oncrpc::{
    CallHints, CallInfo, Client, ClientConfig, ProcError, Server, ServerConfig, Services,
};
use rpcrdma_xdr::{Payload, PayloadEncoder};
use tokio::sync::Notify;

fn key(xid: u32) -> CallKey {
    CallKey {
        client: ClientId::Addr([192, 0, 2, 1].into()),
        xid,
        prog: 100_003,
        vers: 3,
        proc_: 12,
    }
}

const SUM: ArgsSum = ArgsSum { crc: 1, len: 8 };

fn reply(n: usize) -> Payload {
    Payload::inline_only(Bytes::from(vec![7u8; n]))
}

fn run(c: &ReplyCache, k: CallKey, sum: ArgsSum, now: Instant) -> rpcrdma_oncrpc::drc::Ticket {
    match c.lookup(k, sum, now) {
        Lookup::Run(t) => t,
        other => panic!("expected Run, got {other:?}"),
    }
}

#[test]
fn miss_then_replay() {
    let c = ReplyCache::new(ReplyCacheConfig::default());
    let now = Instant::now();
    let t = run(&c, key(1), SUM, now);
    c.complete(t, reply(40), now);
    for _ in 0..3 {
        assert!(matches!(c.lookup(key(1), SUM, now), Lookup::Replay(r) if r == reply(40)));
    }
    let s = c.stats();
    assert_eq!((s.misses, s.hits, s.entries), (1, 3, 1));
    assert_eq!(s.bytes, 40 + ENTRY_OVERHEAD);
}

#[test]
fn the_key_separates_client_xid_and_procedure() {
    let c = ReplyCache::new(ReplyCacheConfig::default());
    let now = Instant::now();
    let t = run(&c, key(1), SUM, now);
    c.complete(t, reply(4), now);
    let mut other_client = key(1);
    other_client.client = ClientId::Addr([192, 0, 2, 2].into());
    let mut other_proc = key(1);
    other_proc.proc_ = 13;
    let mut other_vers = key(1);
    other_vers.vers = 4;
    let mut by_conn = key(1);
    by_conn.client = ClientId::Connection("mem 1b".into());
    for k in [key(2), other_client, other_proc, other_vers, by_conn] {
        let t = run(&c, k, SUM, now);
        c.abandon(t);
    }
}

#[test]
fn different_arguments_with_the_same_xid_are_a_new_call() {
    let c = ReplyCache::new(ReplyCacheConfig::default());
    let now = Instant::now();
    let t = run(&c, key(1), SUM, now);
    c.complete(t, reply(4), now);
    let other = ArgsSum { crc: 2, len: 8 };
    let t = run(&c, key(1), other, now);
    c.complete(t, reply(8), now);
    assert!(matches!(c.lookup(key(1), other, now), Lookup::Replay(r) if r == reply(8)));
    // The old entry is gone (replaced), and its bytes with it.
    assert_eq!(c.stats().entries, 1);
    assert_eq!(c.stats().bytes, 8 + ENTRY_OVERHEAD);
    let same_crc_other_len = ArgsSum { crc: 2, len: 12 };
    let t = run(&c, key(1), same_crc_other_len, now);
    c.abandon(t);
    assert_eq!(c.stats().bytes, 0);
}

#[test]
fn a_replaced_entry_in_progress_cannot_complete_the_new_one() {
    let c = ReplyCache::new(ReplyCacheConfig::default());
    let now = Instant::now();
    let old = run(&c, key(1), SUM, now);
    let new = run(&c, key(1), ArgsSum { crc: 9, len: 8 }, now);
    c.complete(old, reply(1), now);
    assert!(matches!(
        c.lookup(key(1), ArgsSum { crc: 9, len: 8 }, now),
        Lookup::Wait(_)
    ));
    c.complete(new, reply(2), now);
    assert!(matches!(
        c.lookup(key(1), ArgsSum { crc: 9, len: 8 }, now),
        Lookup::Replay(r) if r == reply(2)
    ));
}

#[tokio::test]
async fn retransmission_in_progress_waits_for_the_reply() {
    let c = ReplyCache::new(ReplyCacheConfig::default());
    let now = Instant::now();
    let t = run(&c, key(1), SUM, now);
    let Lookup::Wait(mut rx) = c.lookup(key(1), SUM, now) else {
        panic!("expected Wait")
    };
    let Lookup::Wait(mut rx2) = c.lookup(key(1), SUM, now) else {
        panic!("expected Wait")
    };
    c.complete(t, reply(3), now);
    let got = rx.wait_for(Option::is_some).await.unwrap().clone();
    assert_eq!(got, Some(reply(3)));
    let got = rx2.wait_for(Option::is_some).await.unwrap().clone();
    assert_eq!(got, Some(reply(3)));
    assert_eq!(c.stats().waits, 2);
}

#[tokio::test]
async fn an_abandoned_call_releases_its_waiters() {
    let c = ReplyCache::new(ReplyCacheConfig::default());
    let now = Instant::now();
    let t = run(&c, key(1), SUM, now);
    let Lookup::Wait(mut rx) = c.lookup(key(1), SUM, now) else {
        panic!("expected Wait")
    };
    c.abandon(t);
    assert!(rx.wait_for(Option::is_some).await.is_err());
    assert_eq!(c.stats().entries, 0);
    assert_eq!(c.stats().bytes, 0);
    // The next try runs it.
    let t = run(&c, key(1), SUM, now);
    c.abandon(t);
}

#[test]
fn bounded_in_entries_oldest_finished_first() {
    let mut cfg = ReplyCacheConfig::default();
    cfg.max_entries = 3;
    let c = ReplyCache::new(cfg);
    let now = Instant::now();
    for xid in 1..=5 {
        let t = run(&c, key(xid), SUM, now);
        c.complete(t, reply(4), now);
        assert!(c.stats().entries <= 3);
    }
    // 1 and 2 were evicted; 3, 4, 5 remain.
    for xid in 3..=5 {
        assert!(matches!(c.lookup(key(xid), SUM, now), Lookup::Replay(_)));
    }
    assert_eq!(c.stats().evictions, 2);
    let t = run(&c, key(1), SUM, now);
    c.abandon(t);
}

#[test]
fn entries_in_progress_are_never_evicted() {
    let mut cfg = ReplyCacheConfig::default();
    cfg.max_entries = 2;
    let c = ReplyCache::new(cfg);
    let now = Instant::now();
    let a = run(&c, key(1), SUM, now);
    let b = run(&c, key(2), SUM, now);
    // Full of calls in progress: the third runs uncached.
    assert!(matches!(c.lookup(key(3), SUM, now), Lookup::RunUncached));
    assert_eq!(c.stats().uncached, 1);
    assert!(matches!(c.lookup(key(1), SUM, now), Lookup::Wait(_)));
    c.complete(a, reply(1), now);
    c.complete(b, reply(1), now);
    // Now the oldest finished one makes room.
    let t = run(&c, key(3), SUM, now);
    c.abandon(t);
    assert!(matches!(c.lookup(key(2), SUM, now), Lookup::Replay(_)));
}

#[test]
fn bounded_in_bytes() {
    let mut cfg = ReplyCacheConfig::default();
    cfg.max_bytes = 3 * (1000 + ENTRY_OVERHEAD);
    let c = ReplyCache::new(cfg.clone());
    let now = Instant::now();
    for xid in 1..=10 {
        let t = run(&c, key(xid), SUM, now);
        c.complete(t, reply(1000), now);
        assert!(c.stats().bytes <= cfg.max_bytes, "{:?}", c.stats());
    }
    assert_eq!(c.stats().entries, 3);
    // A reply larger than the whole budget is handed over but not kept.
    let t = run(&c, key(99), SUM, now);
    c.complete(t, reply(cfg.max_bytes), now);
    assert!(matches!(c.lookup(key(99), SUM, now), Lookup::Run(_)));
    assert!(c.stats().bytes <= cfg.max_bytes);
}

#[test]
fn finished_entries_expire() {
    let mut cfg = ReplyCacheConfig::default();
    cfg.max_age = Duration::from_secs(10);
    let c = ReplyCache::new(cfg);
    let t0 = Instant::now();
    let t = run(&c, key(1), SUM, t0);
    c.complete(t, reply(4), t0);
    let t = run(&c, key(2), SUM, t0 + Duration::from_secs(8));
    c.complete(t, reply(4), t0 + Duration::from_secs(8));
    let later = t0 + Duration::from_secs(11);
    assert!(matches!(c.lookup(key(2), SUM, later), Lookup::Replay(_)));
    let t = match c.lookup(key(1), SUM, later) {
        Lookup::Run(t) => t,
        other => panic!("expired entry still answered: {other:?}"),
    };
    c.abandon(t);
    assert_eq!(c.stats().entries, 1);
}

#[test]
fn checksum_covers_ddp_items_and_skips_the_header() {
    let mk = |data: &'static [u8]| {
        let mut pe = PayloadEncoder::new();
        let mut enc = pe.encoder();
        enc.put_u32(0xdead); // "header"
        enc.put_u32(1);
        enc.put_opaque_ddp(Bytes::from_static(data));
        enc.put_u32(2);
        pe.finish()
    };
    let a = ArgsSum::of_message(&mk(b"hello"), 4);
    let b = ArgsSum::of_message(&mk(b"hellp"), 4);
    assert_ne!(a, b, "DDP data is part of the checksum");
    assert_eq!(a.len, 4 + 4 + 8 + 4);
    // The same stream sent flat has the same checksum.
    let flat = Payload::inline_only(mk(b"hello").flatten());
    assert_eq!(ArgsSum::of_message(&flat, 4), a);
    // The header is not part of it.
    let mut pe = PayloadEncoder::new();
    let mut enc = pe.encoder();
    enc.put_u32(0xbeef);
    enc.put_u32(1);
    enc.put_opaque(b"hello");
    enc.put_u32(2);
    assert_eq!(ArgsSum::of_message(&pe.finish(), 4), a);
}

#[test]
fn checksum_covers_a_prefix_and_the_whole_length() {
    // A WRITE-like call: a 252-octet prefix inline, then 64 KiB of data as
    // a DDP item. The sum covers the prefix and the item's first 4 octets.
    let mk = |flip: Option<usize>, extra: usize| {
        let mut data = vec![0x5au8; 65536 + extra];
        let mut head = [0x11u8; 248];
        match flip {
            Some(at) if at < 248 => head[at] ^= 1,
            Some(at) => data[at - 252] ^= 1,
            None => {}
        }
        let mut pe = PayloadEncoder::new();
        let mut enc = pe.encoder();
        enc.put_u32(0xdead); // "header"
        for w in head.chunks(4) {
            enc.put_u32(u32::from_be_bytes([w[0], w[1], w[2], w[3]]));
        }
        enc.put_opaque_ddp(Bytes::from(data));
        pe.finish()
    };
    let base = ArgsSum::of_message(&mk(None, 0), 4);
    assert_eq!(base.len, 248 + 4 + 65536);
    // Inside the prefix: a different call (inline octet, then the item's
    // length word and first octets).
    for at in [0, 100, 247, 252, ARGS_SUM_PREFIX - 1] {
        assert_ne!(ArgsSum::of_message(&mk(Some(at), 0), 4), base, "octet {at}");
    }
    // Past it: the same call, as for Linux's nfsd.
    for at in [
        ARGS_SUM_PREFIX,
        ARGS_SUM_PREFIX + 1,
        40_000,
        248 + 4 + 65535,
    ] {
        assert_eq!(ArgsSum::of_message(&mk(Some(at), 0), 4), base, "octet {at}");
    }
    // Any other length is another call, however far the difference.
    assert_ne!(ArgsSum::of_message(&mk(None, 4), 4), base);
}

// ---- Through the server ----------------------------------------------------

const PROG: u32 = 0x2000_4444;
const CREATE: u32 = 1; // non-idempotent; aborts the connection the first time
const SLOW_CREATE: u32 = 2; // non-idempotent; aborts, then waits for the gate
const READ: u32 = 3; // idempotent; aborts the connection the first time

#[derive(Default)]
struct Probe {
    runs: Mutex<HashMap<(u32, u32), u32>>, // (proc, xid) -> executions
    total: AtomicUsize,
    gate: Notify,
    started: Notify,
}

impl Probe {
    fn ran(&self, proc_: u32, xid: u32) -> u32 {
        let mut m = self.runs.lock().unwrap();
        let n = m.entry((proc_, xid)).or_default();
        *n += 1;
        self.total.fetch_add(1, Ordering::SeqCst);
        *n
    }
    fn executions(&self, proc_: u32) -> Vec<u32> {
        let m = self.runs.lock().unwrap();
        let mut v: Vec<u32> = m
            .iter()
            .filter(|((p, _), _)| *p == proc_)
            .map(|(_, n)| *n)
            .collect();
        v.sort_unstable();
        v
    }
}

fn services(probe: Arc<Probe>, cache: bool) -> Services {
    let mut s = Services::new();
    if cache {
        s.set_reply_cache(Arc::new(ReplyCache::new(ReplyCacheConfig::default())));
    }
    let (p1, p2, p3) = (probe.clone(), probe.clone(), probe);
    s.program(PROG, 1)
        .null()
        .non_idempotent([CREATE, SLOW_CREATE])
        .proc(CREATE, move |info: CallInfo, x: u32| {
            let n = p1.ran(CREATE, info.xid);
            async move {
                if n == 1 {
                    info.connection.abort();
                }
                // The reply depends on how often it ran: a second run
                // would be visible to the client.
                Ok::<_, ProcError>(x * 100 + n)
            }
        })
        .proc(SLOW_CREATE, move |info: CallInfo, x: u32| {
            let probe = p2.clone();
            async move {
                let n = probe.ran(SLOW_CREATE, info.xid);
                if n == 1 {
                    let gate = probe.gate.notified();
                    info.connection.abort();
                    probe.started.notify_one();
                    gate.await;
                }
                Ok::<_, ProcError>(x * 100 + n)
            }
        })
        .proc(READ, move |info: CallInfo, x: u32| {
            let n = p3.ran(READ, info.xid);
            async move {
                if n == 1 {
                    info.connection.abort();
                }
                Ok::<_, ProcError>(x * 100 + n)
            }
        });
    s
}

fn quick() -> ClientConfig {
    let mut c = ClientConfig::default();
    c.timeout = Duration::from_secs(30);
    c.reconnect_delay = Duration::from_millis(1);
    c
}

enum Via {
    Mem,
    Tcp,
}

async fn rig(via: Via, cache: bool) -> (Server, Client, Arc<Probe>) {
    let probe = Arc::new(Probe::default());
    let server = Server::new(services(probe.clone(), cache), ServerConfig::default());
    let client = match via {
        Via::Mem => {
            let mut cfg = MemConfig::default();
            // Every connection comes from the same host.
            cfg.client_addr = Some(SocketAddr::from(([192, 0, 2, 7], 0)));
            let (connector, mut listener) = mem::listener(cfg);
            let s = server.clone();
            tokio::spawn(async move {
                while let Some(t) = listener.accept().await {
                    s.serve(t);
                }
            });
            Client::new(connector, quick())
        }
        Via::Tcp => {
            let addr = server.serve_tcp("127.0.0.1:0").await.unwrap();
            Client::new(TcpConnector::new(addr), quick())
        }
    };
    (server, client, probe)
}

async fn finished_call_is_not_run_again(via: Via) {
    let (server, client, probe) = rig(via, true).await;
    let h = CallHints::new();
    for x in 1..=5u32 {
        let r: u32 = client.call(PROG, 1, CREATE, &x, &h).await.unwrap();
        assert_eq!(r, x * 100 + 1, "answered with the first execution's reply");
    }
    assert_eq!(probe.executions(CREATE), vec![1; 5], "each call ran once");
    let cache = server.services().reply_cache().unwrap().clone();
    let s = cache.stats();
    assert_eq!(s.hits, 5, "{s:?}");
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retransmitted_non_idempotent_call_is_answered_from_the_cache_over_mem() {
    finished_call_is_not_run_again(Via::Mem).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retransmitted_non_idempotent_call_is_answered_from_the_cache_over_tcp() {
    finished_call_is_not_run_again(Via::Tcp).await;
}

async fn running_call_is_waited_for(via: Via) {
    let (server, client, probe) = rig(via, true).await;
    let call = tokio::spawn(async move {
        client
            .call::<_, u32>(PROG, 1, SLOW_CREATE, &3u32, &CallHints::new())
            .await
    });
    probe.started.notified().await;
    // Let the retransmission arrive and start waiting.
    let cache_waits = loop {
        tokio::time::sleep(Duration::from_millis(5)).await;
        let _ = &server;
        if probe.total.load(Ordering::SeqCst) > 1 {
            break None;
        }
        let w = server.services().reply_cache().unwrap().stats().waits;
        if w > 0 {
            break Some(w);
        }
    };
    assert_eq!(
        cache_waits,
        Some(1),
        "the retransmission waits, it does not run"
    );
    probe.gate.notify_one();
    let r = call.await.unwrap().unwrap();
    assert_eq!(r, 301);
    assert_eq!(probe.executions(SLOW_CREATE), vec![1]);
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retransmission_of_a_running_call_waits_for_it_over_mem() {
    running_call_is_waited_for(Via::Mem).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retransmission_of_a_running_call_waits_for_it_over_tcp() {
    running_call_is_waited_for(Via::Tcp).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idempotent_procedures_and_servers_without_a_cache_run_again() {
    // An idempotent procedure is not cached.
    let (server, client, probe) = rig(Via::Mem, true).await;
    let r: u32 = client
        .call(PROG, 1, READ, &4u32, &CallHints::new())
        .await
        .unwrap();
    assert_eq!(r, 402);
    assert_eq!(probe.executions(READ), vec![2]);
    server.shutdown().await;
    // Without a cache, a non-idempotent one runs twice too.
    let (server, client, probe) = rig(Via::Mem, false).await;
    let r: u32 = client
        .call(PROG, 1, CREATE, &4u32, &CallHints::new())
        .await
        .unwrap();
    assert_eq!(r, 402);
    assert_eq!(probe.executions(CREATE), vec![2]);
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_client_address_only_the_same_connection_matches() {
    // mem without `client_addr`: a reconnection is another client.
    let probe = Arc::new(Probe::default());
    let server = Server::new(services(probe.clone(), true), ServerConfig::default());
    let (connector, mut listener) = mem::listener(MemConfig::default());
    let s = server.clone();
    tokio::spawn(async move {
        while let Some(t) = listener.accept().await {
            s.serve(t);
        }
    });
    let client = Client::new(connector, quick());
    let r: u32 = client
        .call(PROG, 1, CREATE, &5u32, &CallHints::new())
        .await
        .unwrap();
    assert_eq!(r, 502);
    server.shutdown().await;
}
