//! The provider end to end over loopback TCP: connection management, every
//! operation, large transfers, close and abort.

use std::time::Duration;

use bytes::{Bytes, BytesMut};
use rpcrdma_softiwarp::{Cq, Options, P2pMode, Pd, Qp, SoftIwarp};
use rpcrdma_verbs::{
    Access, CompletionQueue, ConnectError, ConnectRequest, Device, DisconnectReason, Listener,
    MemoryRegion, PostError, ProtectionDomain, ProtocolLayer, QpParams, QueuePair, RecvWr, SendOp,
    SendWr, Sge, TerminateCode, WcOpcode, WcStatus, WorkCompletion,
};

struct End {
    pd: Pd,
    cq: Cq,
    qp: Qp,
}

async fn pair(opts_client: Options, opts_server: Options) -> (End, End) {
    let dev = SoftIwarp::new();
    let listener = dev
        .listen("127.0.0.1:0".parse().unwrap(), opts_server)
        .await
        .unwrap();
    let addr = listener.local_addr();
    let (spd, scq) = (
        dev.alloc_pd().expect("protection domain"),
        dev.create_cq(1024).expect("completion queue"),
    );
    let (cpd, ccq) = (
        dev.alloc_pd().expect("protection domain"),
        dev.create_cq(1024).expect("completion queue"),
    );
    let server = async {
        let req = listener.accept().await.unwrap();
        assert_eq!(&req.private_data()[..], b"client");
        req.accept(
            QpParams::new(&spd, &scq, Options::default()),
            Bytes::from_static(b"server"),
        )
        .await
        .unwrap()
    };
    let client = dev.connect(
        addr,
        QpParams::new(&cpd, &ccq, opts_client),
        Bytes::from_static(b"client"),
    );
    let (sqp, c) = tokio::join!(server, client);
    let (cqp, pd) = c.unwrap();
    assert_eq!(&pd[..], b"server");
    (
        End {
            pd: cpd,
            cq: ccq,
            qp: cqp,
        },
        End {
            pd: spd,
            cq: scq,
            qp: sqp,
        },
    )
}

async fn wait_n(cq: &Cq, n: usize) -> Vec<WorkCompletion> {
    let mut out = Vec::new();
    tokio::time::timeout(Duration::from_secs(20), async {
        while out.len() < n {
            cq.wait().await;
            cq.poll(&mut out, 64);
        }
    })
    .await
    .expect("completions did not arrive");
    out
}

/// `n` octets of a pattern that differs with `seed` and from one 64 KiB
/// block to the next (so a misplaced FPDU shows).
fn patterned(n: usize, seed: u8) -> Bytes {
    (0..n)
        .map(|i| {
            (i as u8)
                .wrapping_mul(31)
                .wrapping_add(seed ^ (i >> 16) as u8)
        })
        .collect::<Vec<u8>>()
        .into()
}

/// Posts 16-octet receives with the given ids.
fn post_recvs(qp: &Qp, ids: std::ops::RangeInclusive<u64>) {
    for id in ids {
        qp.post_recv(RecvWr {
            wr_id: id,
            buf: BytesMut::zeroed(16),
        })
        .unwrap();
    }
}

/// A Send of `text`.
fn text_send(id: u64, text: &'static [u8]) -> SendWr {
    SendWr::send(id, vec![Sge::Bytes(Bytes::from_static(text))])
}

async fn exercise(c: &End, s: &End) {
    // Send / Recv both ways, with SE and with Invalidate.
    let victim =
        s.pd.register_mut(BytesMut::zeroed(16), Access::REMOTE_WRITE)
            .unwrap();
    s.qp.post_recv(RecvWr {
        wr_id: 1,
        buf: BytesMut::zeroed(64),
    })
    .unwrap();
    s.qp.post_recv(RecvWr {
        wr_id: 2,
        buf: BytesMut::zeroed(64),
    })
    .unwrap();
    c.qp.post_send(SendWr {
        wr_id: 10,
        op: SendOp::Send {
            sges: vec![Sge::Bytes(Bytes::from_static(b"se"))],
            solicited: true,
            invalidate: None,
        },
        signaled: true,
    })
    .unwrap();
    c.qp.post_send(SendWr {
        wr_id: 11,
        op: SendOp::Send {
            sges: vec![Sge::Bytes(Bytes::from_static(b"inv"))],
            solicited: false,
            invalidate: Some(victim.rkey()),
        },
        signaled: true,
    })
    .unwrap();
    let got = wait_n(&s.cq, 2).await;
    assert!(got[0].solicited);
    assert_eq!(got[0].data().unwrap(), b"se");
    assert_eq!(got[1].invalidated_rkey, Some(victim.rkey()));
    assert!(!victim.is_valid());
    assert_eq!(wait_n(&c.cq, 2).await.len(), 2);

    // RDMA Write of 3 MiB from shared memory, then a Send.
    let big: Vec<u8> = (0..3 << 20)
        .map(|i: u32| (i.wrapping_mul(2_654_435_761) >> 24) as u8)
        .collect();
    let src =
        c.pd.register_bytes(Bytes::from(big.clone()), Access::LOCAL_READ)
            .unwrap();
    let sink =
        s.pd.register_mut(BytesMut::zeroed(big.len()), Access::REMOTE_WRITE)
            .unwrap();
    s.qp.post_recv(RecvWr {
        wr_id: 3,
        buf: BytesMut::zeroed(8),
    })
    .unwrap();
    c.qp.post_send(SendWr::write(
        20,
        vec![Sge::Region(src.sge(0, big.len()))],
        sink.remote(0),
    ))
    .unwrap();
    c.qp.post_send(SendWr::send(
        21,
        vec![Sge::Bytes(Bytes::from_static(b"done"))],
    ))
    .unwrap();
    let r = wait_n(&s.cq, 1).await;
    assert_eq!(r[0].data().unwrap(), b"done");
    let placed = sink.deregister().unwrap().into_owned().unwrap();
    assert!(placed[..] == big[..], "RDMA Write data differs");
    let w = wait_n(&c.cq, 2).await;
    assert_eq!(
        w.iter().map(|w| (w.wr_id, w.status)).collect::<Vec<_>>(),
        vec![(20, WcStatus::Success), (21, WcStatus::Success)]
    );

    // RDMA Read of 2 MiB into a sink, twice (into two halves).
    let rsrc =
        s.pd.register_bytes(Bytes::from(big[..2 << 20].to_vec()), Access::REMOTE_READ)
            .unwrap();
    let rsink =
        c.pd.register_mut(BytesMut::zeroed(4 << 20), Access::LOCAL_WRITE)
            .unwrap();
    for (i, off) in [0usize, 2 << 20].into_iter().enumerate() {
        let wr = SendWr::read(30 + i as u64, rsink.sge(off, 2 << 20), rsrc.remote(0));
        c.qp.post_send(wr).unwrap();
    }
    let r = wait_n(&c.cq, 2).await;
    assert!(r.iter().all(|w| w.opcode == WcOpcode::RdmaRead
        && w.status == WcStatus::Success
        && w.byte_len == 2 << 20));
    let back = rsink.deregister().unwrap().into_owned().unwrap();
    assert!(back[..2 << 20] == big[..2 << 20] && back[2 << 20..] == big[..2 << 20]);
}

#[tokio::test(flavor = "current_thread")]
async fn every_operation_in_every_mpa_mode() {
    for revision in [1u8, 2] {
        for crc in [false, true] {
            for p2p in [P2pMode::Write, P2pMode::Read, P2pMode::Off] {
                if revision == 1 && p2p != P2pMode::Write {
                    continue;
                }
                let o = Options {
                    revision,
                    crc,
                    p2p,
                    ..Options::default()
                };
                let (c, s) = pair(o.clone(), Options::default()).await;
                let n = c.qp.negotiated().unwrap();
                assert_eq!((n.revision, n.crc), (revision, crc));
                exercise(&c, &s).await;
                // Server-initiated traffic too.
                c.qp.post_recv(RecvWr {
                    wr_id: 99,
                    buf: BytesMut::zeroed(8),
                })
                .unwrap();
                s.qp.post_send(SendWr::send(
                    98,
                    vec![Sge::Bytes(Bytes::from_static(b"back"))],
                ))
                .unwrap();
                let got = wait_n(&c.cq, 1).await;
                assert_eq!(got[0].data().unwrap(), b"back");
                c.qp.disconnect().await;
                assert_eq!(s.qp.closed().await, DisconnectReason::Peer);
            }
        }
    }
}

/// `post_send_chain`: a chain's requests arrive in order and complete in
/// order, whether they are written together (small ones) or cross the
/// provider's chain limit (a 100 KiB Write); a request refused at posting
/// ends the chain with its error, and the requests after it are not
/// posted, while the connection carries on.
#[tokio::test(flavor = "current_thread")]
async fn a_chain_goes_out_in_order_and_stops_at_a_refused_request() {
    let (c, s) = pair(Options::default(), Options::default()).await;
    let (a, b, d) = (
        patterned(4096, 1),
        patterned(100 << 10, 2),
        patterned(8192, 3),
    );
    let sink = |n| {
        s.pd.register_mut(BytesMut::zeroed(n), Access::REMOTE_WRITE)
            .unwrap()
    };
    let (sa, sb, sd) = (sink(a.len()), sink(b.len()), sink(d.len()));
    post_recvs(&s.qp, 1..=4);
    c.qp.post_send_chain([
        SendWr::write(10, vec![Sge::Bytes(a.clone())], sa.remote(0)),
        SendWr::write(11, vec![Sge::Bytes(b.clone())], sb.remote(0)),
        text_send(12, b"one"),
        SendWr::write(13, vec![Sge::Bytes(d.clone())], sd.remote(0)),
        text_send(14, b"two"),
    ])
    .unwrap();
    let got = wait_n(&s.cq, 2).await;
    assert_eq!(got[0].data().unwrap(), b"one");
    assert_eq!(got[1].data().unwrap(), b"two");
    for (mr, want) in [(sa, &a), (sb, &b), (sd, &d)] {
        assert!(mr.deregister().unwrap().into_owned().unwrap()[..] == want[..]);
    }
    let done = wait_n(&c.cq, 5).await;
    assert_eq!(
        done.iter().map(|w| (w.wr_id, w.status)).collect::<Vec<_>>(),
        (10..=14)
            .map(|id| (id, WcStatus::Success))
            .collect::<Vec<_>>()
    );

    // A gather element whose region is gone: refused at posting.
    let gone =
        c.pd.register_bytes(Bytes::from_static(b"stale"), Access::LOCAL_READ)
            .unwrap();
    let stale = gone.sge(0, 5);
    drop(gone.deregister().unwrap());
    let e =
        c.qp.post_send_chain([
            text_send(20, b"three"),
            SendWr::send(21, vec![Sge::Region(stale)]),
            text_send(22, b"never"),
        ])
        .unwrap_err();
    assert!(matches!(e, PostError::LocalProtection { .. }), "{e:?}");
    c.qp.post_send(text_send(23, b"four")).unwrap();
    let got = wait_n(&s.cq, 2).await;
    assert_eq!(got[0].data().unwrap(), b"three");
    assert_eq!(got[1].data().unwrap(), b"four");
    let done = wait_n(&c.cq, 2).await;
    assert_eq!(
        done.iter().map(|w| w.wr_id).collect::<Vec<_>>(),
        vec![20, 23]
    );
}

/// A 1 MiB READ reply's shape, held whole and written as one chain (the
/// Write's FPDUs and the Send behind them), and a Write past the chain's
/// limit, written as soon as it is posted with the Send after it: every
/// octet lands, the Sends arrive in order after their Writes' data, and
/// every request completes in order.
#[tokio::test(flavor = "current_thread")]
async fn large_writes_and_their_sends_go_out_whole_and_in_order() {
    let (c, s) = pair(Options::default(), Options::default()).await;
    post_recvs(&s.qp, 1..=2);
    for (id, len, text) in [
        (10u64, 1usize << 20, &b"reply one"[..]),
        (20, 3 << 20, b"reply two"),
    ] {
        let d = patterned(len, id as u8);
        let sink =
            s.pd.register_mut(BytesMut::zeroed(len), Access::REMOTE_WRITE)
                .unwrap();
        c.qp.post_send_chain([
            SendWr::write(id, vec![Sge::Bytes(d.clone())], sink.remote(0)),
            text_send(id + 1, text),
        ])
        .unwrap();
        let got = wait_n(&s.cq, 1).await;
        assert_eq!(got[0].data().unwrap(), text);
        assert!(
            sink.deregister().unwrap().into_owned().unwrap()[..] == d[..],
            "the {len}-octet Write's data"
        );
        let done = wait_n(&c.cq, 2).await;
        assert_eq!(
            done.iter().map(|w| (w.wr_id, w.status)).collect::<Vec<_>>(),
            [(id, WcStatus::Success), (id + 1, WcStatus::Success)]
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn works_on_a_multi_thread_runtime() {
    let (c, s) = pair(
        Options {
            crc: true,
            ..Options::default()
        },
        Options::default(),
    )
    .await;
    exercise(&c, &s).await;
}

#[tokio::test(flavor = "current_thread")]
async fn reject_and_refused_connections() {
    let dev = SoftIwarp::new();
    let listener = dev
        .listen("127.0.0.1:0".parse().unwrap(), Options::default())
        .await
        .unwrap();
    let addr = listener.local_addr();
    let (pd, cq) = (
        dev.alloc_pd().expect("protection domain"),
        dev.create_cq(16).expect("completion queue"),
    );
    let server = async {
        let req = listener.accept().await.unwrap();
        req.reject(Bytes::from_static(b"no thanks")).await.unwrap();
    };
    let client = dev.connect(
        addr,
        QpParams::new(&pd, &cq, Options::default()),
        Bytes::new(),
    );
    let ((), res) = tokio::join!(server, client);
    match res {
        Err(ConnectError::Rejected { private_data }) => assert_eq!(&private_data[..], b"no thanks"),
        other => panic!("expected a reject, got {other:?}"),
    }
    // Nothing listening: an I/O error.
    drop(listener);
    tokio::time::sleep(Duration::from_millis(20)).await;
    let res = dev
        .connect(
            addr,
            QpParams::new(&pd, &cq, Options::default()),
            Bytes::new(),
        )
        .await;
    assert!(matches!(res, Err(ConnectError::Io(_))), "{res:?}");
    // Private data over the limit is refused before connecting.
    let res = dev
        .connect(
            addr,
            QpParams::new(
                &pd,
                &cq,
                Options {
                    max_private_data: 256,
                    ..Options::default()
                },
            ),
            Bytes::from(vec![0u8; 253]),
        )
        .await;
    assert!(matches!(res, Err(ConnectError::Invalid { .. })), "{res:?}");
}

#[tokio::test(flavor = "current_thread")]
async fn mpa_timeout_when_the_peer_is_silent() {
    let tcp = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = tcp.local_addr().unwrap();
    let hold = tokio::spawn(async move {
        let (s, _) = tcp.accept().await.unwrap();
        tokio::time::sleep(Duration::from_secs(5)).await;
        drop(s);
    });
    let dev = SoftIwarp::new();
    let (pd, cq) = (
        dev.alloc_pd().expect("protection domain"),
        dev.create_cq(16).expect("completion queue"),
    );
    let res = dev
        .connect(
            addr,
            QpParams::new(
                &pd,
                &cq,
                Options {
                    mpa_timeout: Duration::from_millis(200),
                    ..Options::default()
                },
            ),
            Bytes::new(),
        )
        .await;
    assert!(matches!(res, Err(ConnectError::Timeout)), "{res:?}");
    hold.abort();
}

#[tokio::test(flavor = "current_thread")]
async fn disconnect_and_abort_flush_outstanding_requests() {
    let (c, s) = pair(Options::default(), Options::default()).await;
    for i in 0..3 {
        s.qp.post_recv(RecvWr {
            wr_id: i,
            buf: BytesMut::zeroed(8),
        })
        .unwrap();
    }
    c.qp.post_recv(RecvWr {
        wr_id: 7,
        buf: BytesMut::zeroed(8),
    })
    .unwrap();
    c.qp.disconnect().await;
    let flushed = wait_n(&c.cq, 1).await;
    assert_eq!(
        (flushed[0].wr_id, flushed[0].status),
        (7, WcStatus::WrFlush)
    );
    assert_eq!(s.qp.closed().await, DisconnectReason::Peer);
    let sf = wait_n(&s.cq, 3).await;
    assert!(sf
        .iter()
        .all(|w| w.status == WcStatus::WrFlush && w.buf.is_some()));
    assert!(c.qp.post_send(SendWr::send(1, vec![])).is_err());

    let (c, s) = pair(Options::default(), Options::default()).await;
    s.qp.post_recv(RecvWr {
        wr_id: 1,
        buf: BytesMut::zeroed(8),
    })
    .unwrap();
    c.qp.abort();
    assert_eq!(c.qp.closed().await, DisconnectReason::Local);
    let reason = tokio::time::timeout(Duration::from_secs(5), s.qp.closed())
        .await
        .unwrap();
    assert!(
        matches!(
            reason,
            DisconnectReason::Peer | DisconnectReason::Transport { .. }
        ),
        "{reason:?}"
    );
    assert_eq!(wait_n(&s.cq, 1).await[0].status, WcStatus::WrFlush);
}

#[tokio::test(flavor = "current_thread")]
async fn remote_access_error_terminates_and_reports() {
    let (c, s) = pair(Options::default(), Options::default()).await;
    let sink =
        c.pd.register_mut(BytesMut::zeroed(8), Access::LOCAL_WRITE)
            .unwrap();
    // Read from a key the server never registered.
    c.qp.post_send(SendWr::read(
        5,
        sink.sge(0, 8),
        rpcrdma_verbs::RemoteAddr {
            rkey: 0x1234_5678,
            addr: 0,
        },
    ))
    .unwrap();
    let wc = wait_n(&c.cq, 1).await;
    assert_eq!((wc[0].wr_id, wc[0].status), (5, WcStatus::RemoteAccess));
    assert_eq!(
        c.qp.closed().await,
        DisconnectReason::RemoteTerminate {
            layer: 0,
            etype: 1,
            code: 0
        }
    );
    // The target saw the bad key at the RDMA layer and said so.
    assert!(matches!(
        s.qp.closed().await,
        DisconnectReason::ProtocolError { reason }
            if reason.layer() == ProtocolLayer::Rdmap
                && reason.terminate() == Some(TerminateCode { layer: 0, etype: 1, code: 0 })
    ));
}
