//! Client and server end to end, over the in-memory RDMA-like transport and
//! over TCP: every reply status, DDP placement, concurrency, reconnect and
//! retransmission, timeouts, cancellation, graceful shutdown, and calls in
//! the reverse direction.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use rpcrdma_oncrpc::mem::{self, MemConfig, MemConnector};
use rpcrdma_oncrpc::msg::{AuthFlavor, AuthStat};
use rpcrdma_oncrpc::tcp::TcpConnector;
use rpcrdma_oncrpc::{
    AuthPolicy, AuthSysParams, CallHints, CallInfo, Client, ClientConfig, Credential, Marshal,
    ProcError, RpcError, Server, ServerConfig, Services, Unmarshal,
};
use rpcrdma_xdr::{Decoder, Encoder, XdrError};
use tokio::sync::Notify;

const PROG: u32 = 0x2000_1234;

/// An opaque<> that the binding makes DDP-eligible.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Bulk(Bytes);
impl Marshal for Bulk {
    fn marshal(&self, enc: &mut Encoder<'_>) {
        enc.put_opaque_ddp(self.0.clone());
    }
}
impl Unmarshal for Bulk {
    fn unmarshal(dec: &mut Decoder<'_>) -> Result<Self, XdrError> {
        dec.get_opaque_ddp(1 << 24).map(Bulk)
    }
}

/// The same opaque<>, but never DDP-eligible.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Inline(Bytes);
impl Marshal for Inline {
    fn marshal(&self, enc: &mut Encoder<'_>) {
        enc.put_opaque(&self.0);
    }
}
impl Unmarshal for Inline {
    fn unmarshal(dec: &mut Decoder<'_>) -> Result<Self, XdrError> {
        dec.get_opaque_bytes(1 << 24).map(Inline)
    }
}

/// Procedures of the test program (version 2; version 4 also exists).
mod p {
    pub(crate) const ADD1: u32 = 1;
    pub(crate) const BULK_LEN: u32 = 2; // Bulk -> u32
    pub(crate) const INLINE_LEN: u32 = 3; // Inline -> u32
    pub(crate) const MAKE_BULK: u32 = 4; // u32 -> Bulk
    pub(crate) const SYSERR: u32 = 5;
    pub(crate) const PANIC: u32 = 6;
    pub(crate) const DENY: u32 = 7;
    pub(crate) const WHO: u32 = 8; // -> uid (AUTH_SYS) or u32::MAX
    pub(crate) const SLOW: u32 = 9; // waits for the test's signal
    pub(crate) const FLAKY: u32 = 10; // drops the connection the first time it sees an xid
    pub(crate) const CALLBACK: u32 = 11; // calls the client back over the same connection
    pub(crate) const HANG: u32 = 12; // never answers
}

const CB_PROG: u32 = 0x2000_5678;

#[derive(Default)]
struct Probe {
    seen: Mutex<HashMap<u32, u32>>, // xid -> times FLAKY ran
    started: AtomicUsize,
    gate: Notify,
    calls: AtomicUsize,
    /// ADD1 calls running now, and the most that ever ran at once.
    running: AtomicUsize,
    most_running: AtomicUsize,
}

fn services(probe: Arc<Probe>) -> Services {
    let mut s = Services::new();
    let (p1, p2, p3, p4) = (probe.clone(), probe.clone(), probe.clone(), probe);
    s.program(PROG, 4).null();
    s.program(PROG, 2)
        .null()
        .proc(p::ADD1, move |_, x: u32| {
            let probe = p4.clone();
            probe.calls.fetch_add(1, Ordering::SeqCst);
            async move {
                let now = probe.running.fetch_add(1, Ordering::SeqCst) + 1;
                probe.most_running.fetch_max(now, Ordering::SeqCst);
                // Give other calls the chance to run alongside.
                for _ in 0..3 {
                    tokio::task::yield_now().await;
                }
                probe.running.fetch_sub(1, Ordering::SeqCst);
                Ok::<_, ProcError>(x.wrapping_add(1))
            }
        })
        .proc(p::BULK_LEN, |_, b: Bulk| async move {
            Ok::<_, ProcError>(b.0.len() as u32)
        })
        .proc(p::INLINE_LEN, |_, b: Inline| async move {
            Ok::<_, ProcError>(b.0.len() as u32)
        })
        .proc(p::MAKE_BULK, |_, n: u32| async move {
            Ok::<_, ProcError>(Bulk(Bytes::from(vec![0xab; n as usize])))
        })
        .proc(p::SYSERR, |_, ()| async {
            Err::<(), _>(ProcError::SystemErr)
        })
        .proc(p::PANIC, |_, ()| async {
            if true {
                panic!("handler bug");
            }
            Ok::<(), ProcError>(())
        })
        .proc(p::DENY, |_, ()| async {
            Err::<(), _>(ProcError::Auth(AuthStat::AUTH_REJECTEDCRED))
        })
        .proc(p::WHO, |info: CallInfo, ()| async move {
            Ok::<_, ProcError>(match info.cred {
                Credential::Sys(p) => p.uid(),
                _ => u32::MAX,
            })
        })
        .proc(p::SLOW, move |_, x: u32| {
            let probe = p1.clone();
            async move {
                let gate = probe.gate.notified();
                probe.started.fetch_add(1, Ordering::SeqCst);
                gate.await;
                Ok::<_, ProcError>(x)
            }
        })
        .proc(p::FLAKY, move |info: CallInfo, x: u32| {
            let probe = p2.clone();
            async move {
                let n = {
                    let mut seen = probe.seen.lock().unwrap();
                    let n = seen.entry(info.xid).or_default();
                    *n += 1;
                    *n
                };
                if n == 1 {
                    info.connection.abort();
                }
                Ok::<_, ProcError>(x * 10)
            }
        })
        .proc(p::CALLBACK, |info: CallInfo, x: u32| async move {
            // The Upper Layer learned from this call that the client takes
            // reverse-direction calls (RFC 8167 §6).
            info.connection
                .peer_ready_for_callbacks(u64::from(info.xid))
                .map_err(|_| ProcError::SystemErr)?;
            let back = info.connection.client(ClientConfig::default());
            let r: u32 = back
                .call(CB_PROG, 1, 1, &x, &CallHints::new())
                .await
                .map_err(|_| ProcError::SystemErr)?;
            Ok(r)
        })
        .proc(p::HANG, move |_, ()| {
            let _p = p3.clone();
            std::future::pending::<Result<(), ProcError>>()
        });
    s
}

struct Rig {
    server: Server,
    probe: Arc<Probe>,
    connector: Option<MemConnector>,
    addr: Option<SocketAddr>,
}

impl Rig {
    fn mem() -> Self {
        Self::mem_with(MemConfig::default(), ServerConfig::default())
    }

    fn mem_with(config: MemConfig, sc: ServerConfig) -> Self {
        let probe = Arc::new(Probe::default());
        let server = Server::new(services(probe.clone()), sc);
        let (connector, mut listener) = mem::listener(config);
        let s = server.clone();
        tokio::spawn(async move {
            while let Some(t) = listener.accept().await {
                s.serve(t);
            }
        });
        Self {
            server,
            probe,
            connector: Some(connector),
            addr: None,
        }
    }

    async fn tcp() -> Self {
        Self::tcp_with(ServerConfig::default()).await
    }

    async fn tcp_with(sc: ServerConfig) -> Self {
        let probe = Arc::new(Probe::default());
        let server = Server::new(services(probe.clone()), sc);
        let addr = server.serve_tcp("127.0.0.1:0").await.unwrap();
        Self {
            server,
            probe,
            connector: None,
            addr: Some(addr),
        }
    }

    fn client(&self, config: ClientConfig) -> Client {
        match (&self.connector, self.addr) {
            (Some(c), _) => Client::new(c.clone(), config),
            (None, Some(a)) => Client::new(TcpConnector::new(a), config),
            _ => unreachable!(),
        }
    }
}

fn quick() -> ClientConfig {
    let mut c = ClientConfig::default();
    c.timeout = Duration::from_secs(20);
    c.reconnect_delay = Duration::from_millis(1);
    c
}

async fn every_reply_status(rig: Rig) {
    let c = rig.client(quick());
    let h = CallHints::new();
    c.null(PROG, 2).await.unwrap();
    assert_eq!(
        c.call::<_, u32>(PROG, 2, p::ADD1, &41u32, &h)
            .await
            .unwrap(),
        42
    );

    let e = c.null(PROG + 1, 2).await.unwrap_err();
    assert!(
        matches!(e, RpcError::ProgUnavail { prog } if prog == PROG + 1),
        "{e}"
    );

    let e = c.null(PROG, 3).await.unwrap_err();
    assert!(
        matches!(
            e,
            RpcError::ProgMismatch {
                low: 2,
                high: 4,
                vers: 3,
                ..
            }
        ),
        "{e}"
    );

    let e = c.null(PROG, 4).await;
    assert!(e.is_ok());
    let e = c.call::<_, ()>(PROG, 2, 99, &(), &h).await.unwrap_err();
    assert!(matches!(e, RpcError::ProcUnavail { proc_: 99, .. }), "{e}");

    // Missing arguments, and arguments with trailing bytes.
    let e = c
        .call::<_, u32>(PROG, 2, p::ADD1, &(), &h)
        .await
        .unwrap_err();
    assert!(matches!(e, RpcError::GarbageArgs), "{e}");
    let e = c
        .call::<_, u32>(PROG, 2, p::ADD1, &Two(1, 2), &h)
        .await
        .unwrap_err();
    assert!(matches!(e, RpcError::GarbageArgs), "{e}");

    let e = c
        .call::<_, ()>(PROG, 2, p::SYSERR, &(), &h)
        .await
        .unwrap_err();
    assert!(matches!(e, RpcError::SystemErr), "{e}");
    let e = c
        .call::<_, ()>(PROG, 2, p::PANIC, &(), &h)
        .await
        .unwrap_err();
    assert!(matches!(e, RpcError::SystemErr), "{e}");
    // The connection survived the panic.
    assert_eq!(
        c.call::<_, u32>(PROG, 2, p::ADD1, &1u32, &h).await.unwrap(),
        2
    );

    let e = c
        .call::<_, ()>(PROG, 2, p::DENY, &(), &h)
        .await
        .unwrap_err();
    assert!(
        matches!(e, RpcError::Auth(AuthStat::AUTH_REJECTEDCRED)),
        "{e}"
    );

    // AUTH_SYS reaches the handler.
    let sys = Credential::Sys(AuthSysParams::new(1, "box", 1234, 99, vec![1, 2]).unwrap());
    let who: u32 = c
        .with_credential(&sys)
        .call(PROG, 2, p::WHO, &(), &h)
        .await
        .unwrap();
    assert_eq!(who, 1234);
    let who: u32 = c.call(PROG, 2, p::WHO, &(), &h).await.unwrap();
    assert_eq!(who, u32::MAX);

    // Results that do not decode as expected.
    let e = c
        .call::<_, Two>(PROG, 2, p::ADD1, &1u32, &h)
        .await
        .unwrap_err();
    assert!(matches!(e, RpcError::Results(_)), "{e}");
    let e = c
        .call::<_, ()>(PROG, 2, p::ADD1, &1u32, &h)
        .await
        .unwrap_err();
    assert!(
        matches!(e, RpcError::Results(XdrError::TrailingBytes { .. })),
        "{e}"
    );
    rig.server.shutdown().await;
}

#[derive(Debug)]
struct Two(u32, u32);
impl Marshal for Two {
    fn marshal(&self, enc: &mut Encoder<'_>) {
        enc.put_u32(self.0);
        enc.put_u32(self.1);
    }
}
impl Unmarshal for Two {
    fn unmarshal(dec: &mut Decoder<'_>) -> Result<Self, XdrError> {
        Ok(Two(dec.get_u32()?, dec.get_u32()?))
    }
}

#[tokio::test]
async fn every_reply_status_over_mem() {
    every_reply_status(Rig::mem()).await;
}

#[tokio::test]
async fn every_reply_status_over_tcp() {
    every_reply_status(Rig::tcp().await).await;
}

#[tokio::test]
async fn auth_policy_too_weak_and_unknown_flavor() {
    let probe = Arc::new(Probe::default());
    let mut s = services(probe);
    s.set_auth_policy(AuthPolicy::accept([AuthFlavor::AUTH_SYS]));
    let server = Server::new(s, ServerConfig::default());
    let addr = server.serve_tcp("127.0.0.1:0").await.unwrap();
    let c = Client::new(TcpConnector::new(addr), quick());
    let e = c.null(PROG, 2).await.unwrap_err();
    assert!(matches!(e, RpcError::Auth(AuthStat::AUTH_TOOWEAK)), "{e}");
    let sys = Credential::Sys(AuthSysParams::new(0, "h", 0, 0, vec![]).unwrap());
    c.with_credential(&sys).null(PROG, 2).await.unwrap();
    let gss = Credential::Other(rpcrdma_oncrpc::msg::OpaqueAuth {
        flavor: AuthFlavor::RPCSEC_GSS,
        body: Bytes::from_static(&[0; 8]),
    });
    let e = c.with_credential(&gss).null(PROG, 2).await.unwrap_err();
    assert!(matches!(e, RpcError::Auth(AuthStat::AUTH_BADCRED)), "{e}");
    server.shutdown().await;
}

/// DDP items really travel out of band on the RDMA-like transport, and the
/// server's decoder puts them back.
#[tokio::test]
async fn ddp_items_move_out_of_band() {
    let rig = Rig::mem();
    let c = rig.client(quick());
    let data = Bytes::from(vec![7u8; 5000]);
    let n: u32 = c
        .call(PROG, 2, p::BULK_LEN, &Bulk(data.clone()), &CallHints::new())
        .await
        .unwrap();
    assert_eq!(n, 5000);
    let probe = rig.connector.as_ref().unwrap().probes()[0].clone();
    assert_eq!(probe.stats().read_chunks, 1);

    // A result DDP item lands in the Write chunk the hints provisioned.
    let hints = CallHints::new().ddp_result(3000).max_results(3008);
    let b: Bulk = c
        .call(PROG, 2, p::MAKE_BULK, &3000u32, &hints)
        .await
        .unwrap();
    assert_eq!(b.0.len(), 3000);
    // An unused Write chunk (zero-length result) is tolerated.
    let b: Bulk = c.call(PROG, 2, p::MAKE_BULK, &0u32, &hints).await.unwrap();
    assert!(b.0.is_empty());

    // Without a Write chunk or Reply chunk the large reply cannot be sent:
    // the binding is wrong and the call fails as it would over RDMA.
    let e = c
        .call::<_, Bulk>(PROG, 2, p::MAKE_BULK, &3000u32, &CallHints::new())
        .await
        .unwrap_err();
    assert!(matches!(e, RpcError::Transport { .. }), "{e}");
    // A Reply chunk (maximum reply size) is enough.
    let hints = CallHints::new().max_results(3008);
    let b: Bulk = c
        .call(PROG, 2, p::MAKE_BULK, &3000u32, &hints)
        .await
        .unwrap();
    assert_eq!(b.0.len(), 3000);
    // A Write chunk that is too small fails the call.
    let hints = CallHints::new().ddp_result(100).max_results(108);
    let e = c
        .call::<_, Bulk>(PROG, 2, p::MAKE_BULK, &3000u32, &hints)
        .await
        .unwrap_err();
    assert!(matches!(e, RpcError::Transport { .. }), "{e}");
    // no_reduce: everything inline (Long call and Reply chunk).
    let hints = CallHints::new().max_results(8 + 5000).no_reduce();
    let n: u32 = c
        .call(PROG, 2, p::BULK_LEN, &Bulk(data.clone()), &hints)
        .await
        .unwrap();
    assert_eq!(n, 5000);
    assert_eq!(probe.stats().long_calls, 1);
    rig.server.shutdown().await;
}

/// RFC 8166 §8.1.1: a chunk where the binding allows none is GARBAGE_ARGS.
#[tokio::test]
async fn misplaced_chunk_is_garbage_args() {
    let rig = Rig::mem();
    let c = rig.client(quick());
    // The client marks the opaque DDP-eligible; INLINE_LEN's binding does not.
    let e = c
        .call::<_, u32>(
            PROG,
            2,
            p::INLINE_LEN,
            &Bulk(Bytes::from(vec![1u8; 64])),
            &CallHints::new(),
        )
        .await
        .unwrap_err();
    assert!(matches!(e, RpcError::GarbageArgs), "{e}");
    // The same bytes inline are fine.
    let n: u32 = c
        .call(
            PROG,
            2,
            p::INLINE_LEN,
            &Inline(Bytes::from(vec![1u8; 64])),
            &CallHints::new(),
        )
        .await
        .unwrap();
    assert_eq!(n, 64);
    rig.server.shutdown().await;
}

async fn storm(rig: Rig, tasks: usize, per_task: usize) {
    let mut cfg = quick();
    cfg.max_in_flight = 64;
    let c = rig.client(cfg);
    let mut handles = Vec::new();
    for t in 0..tasks {
        let c = c.clone();
        handles.push(tokio::spawn(async move {
            let mut got = Vec::new();
            for i in 0..per_task {
                let x = (t * 100_000 + i) as u32;
                let r: u32 = c
                    .call(PROG, 2, p::ADD1, &x, &CallHints::new())
                    .await
                    .expect("call");
                got.push((x, r));
                if i % 10 == 0 {
                    let len = (x % 3000) as usize;
                    let n: u32 = c
                        .call(
                            PROG,
                            2,
                            p::BULK_LEN,
                            &Bulk(Bytes::from(vec![3u8; len])),
                            &CallHints::new(),
                        )
                        .await
                        .expect("bulk");
                    assert_eq!(n as usize, len);
                }
            }
            got
        }));
    }
    let mut total = 0;
    for h in handles {
        for (x, r) in h.await.unwrap() {
            assert_eq!(r, x + 1, "wrong answer for {x}");
            total += 1;
        }
    }
    assert_eq!(total, tasks * per_task);
    // Exactly one execution per call: nothing was retransmitted.
    assert_eq!(rig.probe.calls.load(Ordering::SeqCst), tasks * per_task);
    rig.server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_call_storm_over_tcp() {
    storm(Rig::tcp().await, 32, 100).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_call_storm_over_mem() {
    storm(Rig::mem(), 16, 100).await;
}

async fn reconnect_retransmits_same_xid(rig: Rig) {
    let c = rig.client(quick());
    let r: u32 = c
        .call(PROG, 2, p::FLAKY, &7u32, &CallHints::new())
        .await
        .unwrap();
    assert_eq!(r, 70);
    let seen = rig.probe.seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 1, "one xid: {seen:?}");
    assert_eq!(
        seen.values().copied().collect::<Vec<_>>(),
        vec![2],
        "sent twice with the same xid"
    );
    // The client works on the new connection.
    assert_eq!(
        c.call::<_, u32>(PROG, 2, p::ADD1, &1u32, &CallHints::new())
            .await
            .unwrap(),
        2
    );
    rig.server.shutdown().await;
}

#[tokio::test]
async fn reconnect_retransmits_with_the_same_xid_over_mem() {
    let rig = Rig::mem();
    let connector = rig.connector.clone().unwrap();
    reconnect_retransmits_same_xid(rig).await;
    let probes = connector.probes();
    assert_eq!(probes.len(), 2, "a second connection was made");
    // The call was released on the lost connection before being sent again.
    assert_eq!(probes[0].released().len(), 1);
}

#[tokio::test]
async fn reconnect_retransmits_with_the_same_xid_over_tcp() {
    reconnect_retransmits_same_xid(Rig::tcp().await).await;
}

#[tokio::test]
async fn retransmission_is_bounded() {
    let rig = Rig::mem();
    let mut cfg = quick();
    cfg.max_retransmits = 0;
    let c = rig.client(cfg);
    let e = c
        .call::<_, u32>(PROG, 2, p::FLAKY, &7u32, &CallHints::new())
        .await
        .unwrap_err();
    assert!(
        matches!(e, RpcError::ConnectionLost { attempts: 1, .. }),
        "{e}"
    );
    rig.server.shutdown().await;
}

#[tokio::test]
async fn connect_failure_is_reported() {
    // Bind then drop a listener so the port is closed.
    let addr = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap()
    };
    let mut cfg = quick();
    cfg.max_retransmits = 1;
    let e = Client::connect(TcpConnector::new(addr), cfg.clone())
        .await
        .unwrap_err();
    assert!(matches!(e, RpcError::Connect(_)), "{e}");
    let c = Client::new(TcpConnector::new(addr), cfg);
    let e = c.null(PROG, 2).await.unwrap_err();
    assert!(matches!(e, RpcError::Connect(_)), "{e}");
}

/// A timed-out call is released before the caller sees the timeout.
#[tokio::test]
async fn timeout_releases_before_returning() {
    let rig = Rig::mem();
    let c = rig.client(quick()).with_timeout(Duration::from_millis(50));
    let e = c
        .call::<_, ()>(PROG, 2, p::HANG, &(), &CallHints::new())
        .await
        .unwrap_err();
    let RpcError::Timeout { xid, .. } = e else {
        panic!("expected a timeout, got {e}");
    };
    let probe = rig.connector.as_ref().unwrap().probes()[0].clone();
    assert_eq!(probe.released(), vec![xid]);
    // Later calls are unaffected.
    c.with_timeout(Duration::from_secs(20))
        .null(PROG, 2)
        .await
        .unwrap();
    drop(c);
}

/// Each call keeps its own deadline although waiting calls share the
/// connection's one sweep timer: a short-timeout call made while a
/// long-timeout call waits times out at its own deadline, and the long one
/// at its own (virtual time: the runtime's clock is paused and advances
/// only when every task waits).
#[tokio::test(start_paused = true)]
async fn waiting_calls_time_out_at_their_own_deadlines() {
    let rig = Rig::mem();
    let c = rig.client(quick());
    // Connect first.
    c.null(PROG, 2).await.unwrap();
    let t0 = tokio::time::Instant::now();
    let long = {
        let c = c.with_timeout(Duration::from_secs(60));
        tokio::spawn(async move {
            let e = c
                .call::<_, ()>(PROG, 2, p::HANG, &(), &CallHints::new())
                .await
                .unwrap_err();
            (e, tokio::time::Instant::now())
        })
    };
    tokio::task::yield_now().await;
    let e = c
        .with_timeout(Duration::from_secs(2))
        .call::<_, ()>(PROG, 2, p::HANG, &(), &CallHints::new())
        .await
        .unwrap_err();
    assert!(matches!(e, RpcError::Timeout { .. }), "{e}");
    let short_at = tokio::time::Instant::now() - t0;
    assert!(
        short_at >= Duration::from_secs(2) && short_at < Duration::from_secs(3),
        "{short_at:?}"
    );
    assert!(!long.is_finished());
    let (e, at) = long.await.unwrap();
    assert!(matches!(e, RpcError::Timeout { .. }), "{e}");
    let long_at = at - t0;
    assert!(
        long_at >= Duration::from_secs(60) && long_at < Duration::from_secs(61),
        "{long_at:?}"
    );
}

/// Every successful call is released before its result is returned.
#[tokio::test]
async fn replies_are_released_before_returning() {
    let rig = Rig::mem();
    let c = rig.client(quick());
    for i in 0..5u32 {
        let _: u32 = c
            .call(PROG, 2, p::ADD1, &i, &CallHints::new())
            .await
            .unwrap();
        let probe = rig.connector.as_ref().unwrap().probes()[0].clone();
        assert_eq!(probe.released().len(), i as usize + 1);
    }
    rig.server.shutdown().await;
}

/// Dropping a call's future cancels it: it is released, and a late reply
/// is discarded without disturbing other calls.
#[tokio::test]
async fn cancellation_releases_and_discards_the_late_reply() {
    let rig = Rig::mem();
    let c = rig.client(quick());
    c.null(PROG, 2).await.unwrap();
    let probe = rig.connector.as_ref().unwrap().probes()[0].clone();
    let c2 = c.clone();
    let task = tokio::spawn(async move {
        c2.call::<_, u32>(PROG, 2, p::SLOW, &5u32, &CallHints::new())
            .await
    });
    while rig.probe.started.load(Ordering::SeqCst) == 0 {
        tokio::task::yield_now().await;
    }
    task.abort();
    assert!(task.await.unwrap_err().is_cancelled());
    let mut released = false;
    for _ in 0..10_000 {
        if probe.released().len() == 2 {
            released = true;
            break;
        }
        tokio::task::yield_now().await;
    }
    assert!(released, "the cancelled call was released");
    rig.probe.gate.notify_waiters(); // the late reply comes now
    let r: u32 = c
        .call(PROG, 2, p::ADD1, &1u32, &CallHints::new())
        .await
        .unwrap();
    assert_eq!(r, 2);
    rig.server.shutdown().await;
}

/// Shutdown stops taking calls but lets calls in progress reply.
async fn graceful_shutdown(rig: Rig) {
    let c = rig.client(quick());
    c.null(PROG, 2).await.unwrap();
    let mut tasks = Vec::new();
    for i in 0..4u32 {
        let c = c.clone();
        tasks.push(tokio::spawn(async move {
            c.call::<_, u32>(PROG, 2, p::SLOW, &i, &CallHints::new())
                .await
        }));
    }
    while rig.probe.started.load(Ordering::SeqCst) < 4 {
        tokio::task::yield_now().await;
    }
    let server = rig.server.clone();
    let shutdown = tokio::spawn(async move { server.shutdown().await });
    // Let shutdown start, then release the handlers.
    for _ in 0..100 {
        tokio::task::yield_now().await;
    }
    assert!(
        !shutdown.is_finished(),
        "shutdown waits for calls in progress"
    );
    rig.probe.gate.notify_waiters();
    for (i, t) in tasks.into_iter().enumerate() {
        assert_eq!(t.await.unwrap().unwrap(), i as u32);
    }
    shutdown.await.unwrap();
}

#[tokio::test]
async fn graceful_shutdown_finishes_calls_over_mem() {
    graceful_shutdown(Rig::mem()).await;
}

#[tokio::test]
async fn graceful_shutdown_finishes_calls_over_tcp() {
    let rig = Rig::tcp().await;
    let addr = rig.addr.unwrap();
    graceful_shutdown(rig).await;
    // The listener is gone.
    assert!(tokio::net::TcpStream::connect(addr).await.is_err());
}

/// The server calls the client back on the connection the call came in on
/// (RFC 8167 reverse direction / NFSv4.1 backchannel).
async fn reverse_direction(rig: Rig) {
    let mut cb = Services::new();
    cb.program(CB_PROG, 1)
        .proc(1, |_, x: u32| async move { Ok::<_, ProcError>(x * 3) });
    let mut cfg = quick();
    cfg.services = Arc::new(cb);
    let c = rig.client(cfg);
    let r: u32 = c
        .call(PROG, 2, p::CALLBACK, &5u32, &CallHints::new())
        .await
        .unwrap();
    assert_eq!(r, 15);
    // A client that serves nothing does not take reverse calls: over mem
    // (as over RDMA) they are refused, over TCP answered PROG_UNAVAIL.
    let plain = rig.client(quick());
    let e = plain
        .call::<_, u32>(PROG, 2, p::CALLBACK, &5u32, &CallHints::new())
        .await
        .unwrap_err();
    assert!(matches!(e, RpcError::SystemErr), "{e}");
    rig.server.shutdown().await;
}

#[tokio::test]
async fn reverse_direction_calls_over_mem() {
    reverse_direction(Rig::mem()).await;
}

#[tokio::test]
async fn reverse_direction_calls_over_tcp() {
    reverse_direction(Rig::tcp().await).await;
}

/// Limits: one call in flight per connection still serves everything.
#[tokio::test]
async fn per_connection_limit_of_one() {
    let mut sc = ServerConfig::default();
    sc.max_in_flight_per_connection = 1;
    sc.max_in_flight = 1;
    let rig = Rig::tcp_with(sc).await;
    let probe = rig.probe.clone();
    storm(rig, 4, 25).await;
    // Four tasks called at once, yet the server ran one call at a time.
    assert_eq!(probe.most_running.load(Ordering::SeqCst), 1);
}

/// Large DDP payloads over TCP go out as vectored pieces and come back intact.
#[tokio::test]
async fn large_payloads_over_tcp() {
    let rig = Rig::tcp().await;
    let c = rig.client(quick());
    let data = Bytes::from(
        (0..3_000_001u32)
            .map(|i| (i % 251) as u8)
            .collect::<Vec<_>>(),
    );
    let n: u32 = c
        .call(PROG, 2, p::BULK_LEN, &Bulk(data), &CallHints::new())
        .await
        .unwrap();
    assert_eq!(n, 3_000_001);
    let b: Bulk = c
        .call(PROG, 2, p::MAKE_BULK, &2_000_003u32, &CallHints::new())
        .await
        .unwrap();
    assert_eq!(b.0.len(), 2_000_003);
    assert!(b.0.iter().all(|&x| x == 0xab));
    rig.server.shutdown().await;
}

/// Multi-fragment records both ways.
#[tokio::test]
async fn multi_fragment_records_over_tcp() {
    let mut sc = ServerConfig::default();
    sc.tcp.max_fragment = 7;
    let rig = Rig::tcp_with(sc).await;
    let mut tc = rpcrdma_oncrpc::tcp::TcpConfig::default();
    tc.max_fragment = 5;
    let c = Client::new(TcpConnector::with_config(rig.addr.unwrap(), tc), quick());
    let n: u32 = c
        .call(
            PROG,
            2,
            p::BULK_LEN,
            &Bulk(Bytes::from(vec![9u8; 1001])),
            &CallHints::new(),
        )
        .await
        .unwrap();
    assert_eq!(n, 1001);
    let b: Bulk = c
        .call(PROG, 2, p::MAKE_BULK, &333u32, &CallHints::new())
        .await
        .unwrap();
    assert_eq!(b.0.len(), 333);
    rig.server.shutdown().await;
}

/// A call larger than the server's maximum record closes that connection;
/// the client reconnects and the server keeps serving.
#[tokio::test]
async fn oversized_record_closes_the_connection() {
    let mut sc = ServerConfig::default();
    sc.tcp.max_record = 4096;
    let rig = Rig::tcp_with(sc).await;
    let mut cfg = quick();
    cfg.max_retransmits = 1;
    let c = rig.client(cfg);
    let e = c
        .call::<_, u32>(
            PROG,
            2,
            p::BULK_LEN,
            &Bulk(Bytes::from(vec![0u8; 8192])),
            &CallHints::new(),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(e, RpcError::ConnectionLost { attempts: 2, .. }),
        "{e}"
    );
    c.null(PROG, 2).await.unwrap();
    rig.server.shutdown().await;
}

/// The connection breaks with many calls outstanding: every call is sent
/// again on one new connection with its own XID and ends exactly once.
#[tokio::test]
async fn many_outstanding_calls_survive_a_broken_connection() {
    let rig = Rig::mem();
    let c = rig.client(quick());
    c.null(PROG, 2).await.unwrap();
    let mut tasks = Vec::new();
    for i in 0..8u32 {
        let c = c.clone();
        tasks.push(tokio::spawn(async move {
            c.call::<_, u32>(PROG, 2, p::SLOW, &i, &CallHints::new())
                .await
        }));
    }
    while rig.probe.started.load(Ordering::SeqCst) < 8 {
        tokio::task::yield_now().await;
    }
    let connector = rig.connector.clone().unwrap();
    connector.probes()[0].break_connection();
    // All eight arrive again on the second connection.
    while rig.probe.started.load(Ordering::SeqCst) < 16 {
        tokio::task::yield_now().await;
    }
    rig.probe.gate.notify_waiters();
    for (i, t) in tasks.into_iter().enumerate() {
        assert_eq!(t.await.unwrap().unwrap(), i as u32);
    }
    let probes = connector.probes();
    assert_eq!(probes.len(), 2, "exactly one reconnect");
    // Each call was released once on the dead connection (plus the NULL).
    let released = probes[0].released();
    let mut distinct = released.clone();
    distinct.sort_unstable();
    distinct.dedup();
    assert_eq!((released.len(), distinct.len()), (9, 9));
    assert_eq!(probes[1].released().len(), 8);
    rig.server.shutdown().await;
}
