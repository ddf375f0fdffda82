//! Deterministic two-peer tests of each protocol element: MPA set-up in
//! every mode, Send/Recv, Write, Read, invalidation, segmentation,
//! ordering, limits and close.

#![allow(clippy::field_reassign_with_default)]

mod pair;

use bytes::{Bytes, BytesMut};
use pair::{decode_stream, is_reply, Pair};
use proptest::prelude::*;
use rpcrdma_iwarp::conn::{
    ApiError, Config, ConfigError, ConnError, Connection, Event, P2pMode, Phase, Rtr,
    TransportError,
};
use rpcrdma_iwarp::mpa::MpaFlags;
use rpcrdma_iwarp::rdmap::Opcode;
use rpcrdma_verbs::{
    Access, DisconnectReason, LocalSge, PostError, QpCaps, RecvWr, RemoteAddr, SendOp, SendWr, Sge,
    TransportFailure, TransportFault, WcOpcode, WcStatus,
};

fn cfg(revision: u8, crc: bool, p2p: P2pMode) -> Config {
    Config {
        revision,
        crc,
        p2p,
        ..Config::default()
    }
}

fn connected(ca: Config, cb: Config) -> Pair {
    let mut p = Pair::new(ca, cb, b"client-pd");
    p.connect(b"server-pd");
    p
}

fn recv(side: &mut pair::Side, id: u64, len: usize) {
    side.conn
        .post_recv(RecvWr {
            wr_id: id,
            buf: BytesMut::zeroed(len),
        })
        .unwrap();
}

fn bytes_sge(b: &[u8]) -> Sge {
    Sge::Bytes(Bytes::copy_from_slice(b))
}

#[test]
fn mpa_setup_every_mode_both_directions() {
    for revision in [1u8, 2] {
        for crc in [false, true] {
            for p2p in [P2pMode::Off, P2pMode::Write, P2pMode::Read, P2pMode::Any] {
                let mut p = connected(cfg(revision, crc, p2p), Config::default());
                let na = p.a.conn.negotiated().unwrap().clone();
                let nb = p.b.conn.negotiated().unwrap().clone();
                assert_eq!(na.revision, revision);
                assert_eq!((na.crc, nb.crc), (crc, crc));
                assert_eq!(&na.peer_private_data[..], b"server-pd");
                assert_eq!(&nb.peer_private_data[..], b"client-pd");
                let want_rtr = match (revision, p2p) {
                    (1, _) | (_, P2pMode::Off) => None,
                    (_, P2pMode::Read) => Some(Rtr::Read),
                    _ => Some(Rtr::Write),
                };
                assert_eq!(
                    (na.rtr, nb.rtr),
                    (want_rtr, want_rtr),
                    "rev {revision} {p2p:?}"
                );
                // Data flows both ways afterwards, and the responder's first
                // FPDU follows the initiator's.
                recv(&mut p.b, 1, 16);
                recv(&mut p.a, 2, 16);
                p.b.conn
                    .post_send(SendWr::send(3, vec![bytes_sge(b"from b")]), &mut p.b.mrs)
                    .unwrap();
                p.drive();
                if want_rtr.is_none() {
                    // Without an RTR the responder waits for the initiator.
                    assert!(p.a.wcs.is_empty(), "responder sent an FPDU first");
                    p.a.conn
                        .post_send(SendWr::send(4, vec![bytes_sge(b"from a")]), &mut p.a.mrs)
                        .unwrap();
                    p.drive();
                }
                let got: Vec<_> =
                    p.a.wcs
                        .iter()
                        .filter(|w| w.opcode == WcOpcode::Recv)
                        .collect();
                assert_eq!(got[0].data().unwrap(), b"from b");
                // What the responder sent: the Reply, then FPDUs.
                let (mpa, _) = decode_stream(&p.b.sent, crc);
                assert!(is_reply(&mpa));
            }
        }
    }
}

#[test]
fn responder_replies_rev2_enhanced_to_rev2_enhanced_and_mirrors_ird_ord() {
    let mut a = cfg(2, false, P2pMode::Write);
    a.caps.ird = 7;
    a.caps.ord = 3;
    let mut b = Config::default();
    b.caps.ird = 2;
    b.caps.ord = 16;
    let p = connected(a, b);
    let (mpa, _) = decode_stream(&p.b.sent, false);
    let rep = mpa.unwrap();
    assert_eq!(rep.revision, 2);
    assert!(rep.flags.has(MpaFlags::ENHANCED));
    let w = rep.ird_ord.unwrap();
    // Our IRD covers the initiator's ORD; our ORD does not exceed its IRD.
    assert_eq!((w.ird, w.ord), (3, 7));
    assert!(w.peer_to_peer && w.write_rtr && !w.read_rtr);
    let na = p.a.conn.negotiated().unwrap();
    assert_eq!((na.ird, na.ord), (7, 3));
}

#[test]
fn crc_is_or_of_both_sides() {
    let p = connected(cfg(2, false, P2pMode::Write), cfg(2, true, P2pMode::Off));
    assert!(p.a.conn.negotiated().unwrap().crc);
    let (mpa, fpdus) = decode_stream(&p.b.sent, true);
    assert!(mpa.unwrap().flags.has(MpaFlags::CRC));
    assert!(fpdus.is_empty());
    // The RTR from a was sent with a correct CRC (decode_stream checks it).
    let (_, f) = decode_stream(&p.a.sent, true);
    assert_eq!(f.len(), 1);
    assert_eq!(f[0].0.control.opcode, Opcode::WRITE);
}

#[test]
fn send_variants_segmentation_and_flags() {
    for crc in [false, true] {
        let mut ca = cfg(2, crc, P2pMode::Write);
        ca.max_ulpdu = 64; // 46 octets of payload per untagged FPDU
        let mut p = connected(ca, Config::default());
        let target = p.b.reg_mut(8, Access::REMOTE_WRITE);
        for i in 0..4 {
            recv(&mut p.b, 10 + i, 300);
        }
        let msg: Vec<u8> = (0..250u8).collect();
        let ops = [
            (false, None),
            (true, None),
            (false, Some(target.key)),
            (true, Some(0xdead_beef)),
        ];
        for (i, (solicited, invalidate)) in ops.iter().enumerate().take(3) {
            let wr = SendWr {
                wr_id: i as u64,
                op: SendOp::Send {
                    sges: vec![bytes_sge(&msg[..100]), bytes_sge(&msg[100..])],
                    solicited: *solicited,
                    invalidate: *invalidate,
                },
                signaled: true,
            };
            p.a.conn.post_send(wr, &mut p.a.mrs).unwrap();
        }
        p.drive();
        let wcs = p.b.take_wcs();
        assert_eq!(wcs.len(), 3);
        for (i, wc) in wcs.iter().enumerate() {
            assert_eq!(wc.status, WcStatus::Success);
            assert_eq!(wc.wr_id, 10 + i as u64);
            assert_eq!(wc.byte_len, 250);
            assert_eq!(wc.data().unwrap(), &msg[..]);
            assert_eq!(wc.solicited, ops[i].0);
            assert_eq!(wc.invalidated_rkey, ops[i].1);
        }
        assert!(
            !p.b.mrs.is_valid(target.key),
            "remote invalidation kills the key"
        );
        // On the wire: 6 FPDUs per message with MSN 1..3, MO advancing.
        let (_, f) = decode_stream(&p.a.sent, crc);
        let sends: Vec<_> = f
            .iter()
            .filter(|(h, _)| h.control.opcode.is_send())
            .collect();
        assert_eq!(sends.len(), 18);
        assert_eq!(sends[5].0.control.opcode, Opcode::SEND);
        assert_eq!(sends[6].0.control.opcode, Opcode::SEND_SE);
        assert_eq!(sends[12].0.control.opcode, Opcode::SEND_INVALIDATE);
        assert!(sends[5].0.control.last && !sends[4].0.control.last);
        let a_wcs = p.a.take_wcs();
        assert_eq!(
            a_wcs.iter().map(|w| w.wr_id).collect::<Vec<_>>(),
            vec![0, 1, 2]
        );
    }
}

#[test]
fn zero_length_send_and_unsignaled() {
    let mut p = connected(Config::default(), Config::default());
    recv(&mut p.b, 1, 0);
    recv(&mut p.b, 2, 16);
    let mut wr = SendWr::send(5, vec![]);
    wr.signaled = false;
    p.a.conn.post_send(wr, &mut p.a.mrs).unwrap();
    p.a.conn
        .post_send(SendWr::send(6, vec![bytes_sge(b"abcd")]), &mut p.a.mrs)
        .unwrap();
    p.drive();
    let wcs = p.b.take_wcs();
    assert_eq!((wcs[0].wr_id, wcs[0].byte_len), (1, 0));
    assert_eq!(wcs[1].data().unwrap(), b"abcd");
    // Receive buffers come back with their posted length (verbs
    // semantics); byte_len says how much the message filled.
    assert_eq!(wcs[1].buf.as_ref().map(|b| b.len()), Some(16));
    assert_eq!(wcs[1].byte_len, 4);
    // The unsignaled Send produced no completion.
    assert_eq!(
        p.a.take_wcs().iter().map(|w| w.wr_id).collect::<Vec<_>>(),
        vec![6]
    );
}

#[test]
fn rdma_write_from_shared_and_owned_regions() {
    for crc in [false, true] {
        let mut ca = cfg(2, crc, P2pMode::Write);
        ca.max_ulpdu = 1000;
        let mut p = connected(ca, Config::default());
        let sink = p.b.reg_mut(10_000, Access::REMOTE_WRITE);
        let data: Vec<u8> = (0..5000u32).map(|i| (i * 7) as u8).collect();
        let src = p.a.reg_bytes(&data, Access::LOCAL_READ);
        let owned = p.a.reg_mut(100, Access::LOCAL_WRITE);
        let wr = SendWr::write(
            1,
            vec![Sge::Region(LocalSge {
                lkey: src.key,
                addr: src.addr + 10,
                len: 4990,
            })],
            RemoteAddr {
                rkey: sink.key,
                addr: sink.addr + 3,
            },
        );
        p.a.conn.post_send(wr, &mut p.a.mrs).unwrap();
        let wr = SendWr::write(
            2,
            vec![Sge::Region(LocalSge {
                lkey: owned.key,
                addr: owned.addr,
                len: 100,
            })],
            RemoteAddr {
                rkey: sink.key,
                addr: sink.addr + 9000,
            },
        );
        p.a.conn.post_send(wr, &mut p.a.mrs).unwrap();
        p.drive();
        let got = p.b.contents(sink.key);
        assert_eq!(&got[3..4993], &data[10..]);
        assert!(got[..3].iter().all(|&x| x == 0));
        assert!(got[4993..9000].iter().all(|&x| x == 0));
        assert!(got[9000..9100].iter().all(|&x| x == 0));
        assert_eq!(p.a.take_wcs().len(), 2);
        assert!(
            p.b.wcs.is_empty(),
            "an RDMA Write completes nothing at the target"
        );
        let (_, f) = decode_stream(&p.a.sent, crc);
        let writes: Vec<_> = f.iter().skip(1).collect();
        assert_eq!(writes.len(), 6 + 1);
    }
}

#[test]
fn rdma_read_segmented_in_order_completion_and_ord_queueing() {
    let mut ca = Config::default();
    ca.caps.ord = 2;
    let mut cb = Config::default();
    cb.max_ulpdu = 500;
    cb.caps.ird = 2;
    let mut p = connected(ca, cb);
    assert_eq!(p.a.conn.negotiated().unwrap().ord, 2);
    let data: Vec<u8> = (0..3000u32).map(|i| (i % 251) as u8).collect();
    let src = p.b.reg_bytes(&data, Access::REMOTE_READ);
    let sink = p.a.reg_mut(3000 * 4, Access::LOCAL_WRITE);
    recv(&mut p.b, 100, 8);
    // Four Reads (ORD 2: two wait for a slot), then a Send that must not
    // complete before them.
    for i in 0..4u64 {
        let wr = SendWr::read(
            i,
            LocalSge {
                lkey: sink.key,
                addr: sink.addr + i * 3000,
                len: 3000,
            },
            RemoteAddr {
                rkey: src.key,
                addr: src.addr,
            },
        );
        p.a.conn.post_send(wr, &mut p.a.mrs).unwrap();
    }
    p.a.conn
        .post_send(SendWr::send(9, vec![bytes_sge(b"done")]), &mut p.a.mrs)
        .unwrap();
    p.drive();
    let wcs = p.a.take_wcs();
    assert_eq!(
        wcs.iter().map(|w| w.wr_id).collect::<Vec<_>>(),
        vec![0, 1, 2, 3, 9]
    );
    assert!(wcs[..4].iter().all(|w| w.opcode == WcOpcode::RdmaRead
        && w.byte_len == 3000
        && w.status == WcStatus::Success));
    let got = p.a.contents(sink.key);
    for i in 0..4 {
        assert_eq!(&got[i * 3000..(i + 1) * 3000], &data[..]);
    }
    // The peer never had more than IRD=2 requests to answer: no Terminate.
    assert!(p.b.closed_error().is_none());
    // Read Responses were segmented by the responder's MULPDU (500).
    let (_, f) = decode_stream(&p.b.sent, false);
    let rresp = f
        .iter()
        .filter(|(h, _)| h.control.opcode == Opcode::READ_RESPONSE)
        .count();
    assert_eq!(rresp, 4 * 3000usize.div_ceil(500 - 14));
}

#[test]
fn writes_are_placed_before_a_later_send_completes() {
    let mut p = connected(Config::default(), Config::default());
    let sink = p.b.reg_mut(64, Access::REMOTE_WRITE);
    recv(&mut p.b, 1, 8);
    p.a.conn
        .post_send(
            SendWr::write(
                1,
                vec![bytes_sge(b"payload!")],
                RemoteAddr {
                    rkey: sink.key,
                    addr: sink.addr,
                },
            ),
            &mut p.a.mrs,
        )
        .unwrap();
    p.a.conn
        .post_send(SendWr::send(2, vec![bytes_sge(b"go")]), &mut p.a.mrs)
        .unwrap();
    // Deliver byte by byte and check at every step.
    p.splits = vec![1];
    for _ in 0..1000 {
        let placed = p.b.contents(sink.key)[..8] == *b"payload!";
        if !p.b.wcs.is_empty() {
            assert!(placed, "Send completed before the Write was placed");
        }
        if !p.step() {
            break;
        }
    }
    assert_eq!(p.b.wcs.len(), 1);
}

#[test]
fn local_invalidate_kills_key_in_send_queue_order() {
    let mut p = connected(Config::default(), Config::default());
    let src = p.a.reg_bytes(b"hello", Access::REMOTE_READ);
    let sge = Sge::Region(LocalSge {
        lkey: src.key,
        addr: src.addr,
        len: 5,
    });
    recv(&mut p.b, 1, 8);
    p.a.conn
        .post_send(SendWr::send(1, vec![sge.clone()]), &mut p.a.mrs)
        .unwrap();
    p.a.conn
        .post_send(SendWr::local_invalidate(2, src.key), &mut p.a.mrs)
        .unwrap();
    p.drive();
    let wcs = p.a.take_wcs();
    assert_eq!(
        wcs.iter()
            .map(|w| (w.wr_id, w.opcode, w.status))
            .collect::<Vec<_>>(),
        vec![
            (1, WcOpcode::Send, WcStatus::Success),
            (2, WcOpcode::LocalInvalidate, WcStatus::Success)
        ]
    );
    assert!(!p.a.mrs.is_valid(src.key));
    // The dead key is refused at post time.
    assert!(matches!(
        p.a.conn.post_send(SendWr::send(3, vec![sge]), &mut p.a.mrs),
        Err(PostError::LocalProtection { .. })
    ));
    // Invalidating an unknown key completes with a protection error.
    p.a.conn
        .post_send(SendWr::local_invalidate(4, 0x1234), &mut p.a.mrs)
        .unwrap();
    assert_eq!(
        p.a.conn.poll_completion().unwrap().status,
        WcStatus::LocalProtection
    );
    // The buffer comes back on deregistration.
    assert_eq!(
        p.a.mrs.deregister(src.key).unwrap().freeze(),
        Bytes::from_static(b"hello")
    );
}

#[test]
fn queue_limits_are_typed_errors() {
    let mut ca = Config::default();
    ca.caps = QpCaps {
        send_depth: 2,
        recv_depth: 1,
        ird: 1,
        ord: 1,
    };
    let mut p = connected(ca, Config::default());
    recv(&mut p.a, 1, 4);
    assert!(matches!(
        p.a.conn.post_recv(RecvWr {
            wr_id: 2,
            buf: BytesMut::new()
        }),
        Err(PostError::QueueFull {
            queue: "receive",
            depth: 1
        })
    ));
    // Reads to a peer that never answers stay outstanding and fill the SQ.
    let sink = p.a.reg_mut(4, Access::LOCAL_WRITE);
    for i in 0..2 {
        p.a.conn
            .post_send(
                SendWr::read(
                    i,
                    LocalSge {
                        lkey: sink.key,
                        addr: sink.addr,
                        len: 4,
                    },
                    RemoteAddr { rkey: 1, addr: 0 },
                ),
                &mut p.a.mrs,
            )
            .unwrap();
    }
    assert!(matches!(
        p.a.conn.post_send(SendWr::send(3, vec![]), &mut p.a.mrs),
        Err(PostError::QueueFull {
            queue: "send",
            depth: 2
        })
    ));
    // A Read sink without LOCAL_WRITE is refused at post time.
    let ro = p.a.reg_bytes(b"xx", Access::LOCAL_READ);
    let mut p2 = connected(Config::default(), Config::default());
    let ro2 = p2.a.reg_bytes(b"xx", Access::LOCAL_READ);
    assert!(matches!(
        p2.a.conn.post_send(
            SendWr::read(
                1,
                LocalSge {
                    lkey: ro2.key,
                    addr: ro2.addr,
                    len: 2
                },
                RemoteAddr { rkey: 1, addr: 0 }
            ),
            &mut p2.a.mrs
        ),
        Err(PostError::LocalProtection { .. })
    ));
    let _ = ro;
}

#[test]
fn graceful_close_sends_queued_then_flushes() {
    let mut p = connected(Config::default(), Config::default());
    recv(&mut p.b, 1, 8);
    recv(&mut p.a, 7, 8);
    p.a.conn
        .post_send(SendWr::send(1, vec![bytes_sge(b"last")]), &mut p.a.mrs)
        .unwrap();
    p.a.conn.close();
    assert_eq!(p.a.conn.phase(), Phase::Closing);
    assert!(matches!(
        p.a.conn.post_send(SendWr::send(2, vec![]), &mut p.a.mrs),
        Err(PostError::NotConnected { .. })
    ));
    p.drive();
    assert!(p.a.conn.wants_close());
    assert_eq!(p.a.closed_error(), Some(&ConnError::LocalClose));
    let wcs = p.a.take_wcs();
    assert_eq!(
        wcs.iter().map(|w| (w.wr_id, w.status)).collect::<Vec<_>>(),
        vec![(1, WcStatus::Success), (7, WcStatus::WrFlush)]
    );
    // The flushed receive gives its buffer back.
    assert_eq!(wcs[1].buf.as_ref().unwrap().len(), 8);
    assert_eq!(p.b.take_wcs()[0].data().unwrap(), b"last");
    // The peer sees the FIN at a message boundary.
    p.eof_to_b();
    assert_eq!(p.b.closed_error(), Some(&ConnError::PeerClosed));
}

#[test]
fn abort_flushes_everything_at_once() {
    let mut p = connected(Config::default(), Config::default());
    recv(&mut p.a, 1, 8);
    let sink = p.a.reg_mut(4, Access::LOCAL_WRITE);
    p.a.conn
        .post_send(
            SendWr::read(
                2,
                LocalSge {
                    lkey: sink.key,
                    addr: sink.addr,
                    len: 4,
                },
                RemoteAddr { rkey: 9, addr: 0 },
            ),
            &mut p.a.mrs,
        )
        .unwrap();
    p.a.conn.abort();
    let wcs: Vec<_> = std::iter::from_fn(|| p.a.conn.poll_completion()).collect();
    assert_eq!(wcs.len(), 2);
    assert!(wcs.iter().all(|w| w.status == WcStatus::WrFlush));
    assert!(p.a.conn.wants_close());
    assert!(matches!(
        p.a.conn.poll_event(),
        Some(Event::Closed(ConnError::LocalAbort))
    ));
}

#[test]
fn reject_carries_private_data() {
    let mut p = Pair::new(Config::default(), Config::default(), b"hello");
    p.drive();
    p.b.conn.reject(Bytes::from_static(b"go away")).unwrap();
    p.drive();
    assert_eq!(
        p.a.closed_error(),
        Some(&ConnError::Rejected {
            private_data: Bytes::from_static(b"go away")
        })
    );
    assert!(p.b.conn.wants_close());
    let (mpa, f) = decode_stream(&p.b.sent, false);
    let rep = mpa.unwrap();
    assert!(rep.is_reject());
    assert!(f.is_empty());
}

#[test]
fn mpa_timeout_and_spurious_timeouts() {
    let mut p = Pair::new(Config::default(), Config::default(), b"");
    let before = p.a.conn.poll_timeout().unwrap();
    p.a.conn.handle_timeout(p.now); // early: harmless
    assert_eq!(p.a.conn.phase(), Phase::AwaitReply);
    p.advance(std::time::Duration::from_secs(11));
    assert!(before <= p.now);
    assert_eq!(p.a.closed_error(), Some(&ConnError::MpaTimeout));
    assert_eq!(p.b.closed_error(), Some(&ConnError::MpaTimeout));
    assert_eq!(p.a.conn.poll_timeout(), None);
}

#[test]
fn private_data_limit_on_our_side() {
    let c = Config {
        max_private_data: 256,
        ..Config::default()
    };
    // 252 + 4 (IRD/ORD) = 256 is fine, 253 is not.
    assert!(rpcrdma_iwarp::conn::Connection::initiator(
        c.clone(),
        Bytes::from(vec![0; 252]),
        std::time::Instant::now()
    )
    .is_ok());
    assert!(rpcrdma_iwarp::conn::Connection::initiator(
        c,
        Bytes::from(vec![0; 253]),
        std::time::Instant::now()
    )
    .is_err());
}

#[test]
fn invalid_configurations_are_typed_errors() {
    let now = std::time::Instant::now();
    let refused = |cfg: Config| {
        let as_responder = Connection::responder(cfg.clone(), now).unwrap_err();
        let as_initiator = Connection::initiator(cfg, Bytes::new(), now).unwrap_err();
        assert_eq!(as_responder, as_initiator);
        match as_responder {
            ApiError::Config(e) => e,
            other => panic!("not a configuration error: {other:?}"),
        }
    };
    for revision in [0, 3] {
        assert_eq!(
            refused(Config {
                revision,
                ..Config::default()
            }),
            ConfigError::MpaRevision(revision)
        );
    }
    for max_ulpdu in [63, 65_536] {
        assert_eq!(
            refused(Config {
                max_ulpdu,
                ..Config::default()
            }),
            ConfigError::MaxUlpdu(max_ulpdu)
        );
    }
    assert_eq!(
        refused(Config {
            max_private_data: 513,
            ..Config::default()
        }),
        ConfigError::MaxPrivateData(513)
    );
    let no_sq = QpCaps {
        send_depth: 0,
        ..QpCaps::default()
    };
    assert_eq!(
        refused(Config {
            caps: no_sq,
            ..Config::default()
        }),
        ConfigError::ZeroQueueDepth {
            send: 0,
            recv: QpCaps::default().recv_depth
        }
    );
    // The limits themselves are allowed.
    for (revision, max_ulpdu, max_private_data) in [(1, 64, 512), (2, 65_535, 0)] {
        let cfg = Config {
            revision,
            max_ulpdu,
            max_private_data,
            ..Config::default()
        };
        assert!(Connection::responder(cfg, now).is_ok());
    }
    // A responder learning its caps late is held to the same rule.
    let mut r = Connection::responder(Config::default(), now).unwrap();
    let no_rq = QpCaps {
        recv_depth: 0,
        ..QpCaps::default()
    };
    let err = r.set_caps(no_rq).unwrap_err();
    assert_eq!(
        err,
        ApiError::Config(ConfigError::ZeroQueueDepth {
            send: QpCaps::default().send_depth,
            recv: 0
        })
    );
    assert_eq!(
        err.to_string(),
        "invalid configuration: queue depths must be at least 1 (send 128, receive 0)"
    );
}

#[test]
fn transport_failures_are_typed_and_flush_the_queues() {
    let mut p = connected(Config::default(), Config::default());
    recv(&mut p.a, 1, 8);
    let reset = std::io::Error::new(std::io::ErrorKind::ConnectionReset, "reset by peer");
    p.a.conn
        .handle_transport_failure(TransportError::from(&reset));
    p.drive();
    let want = ConnError::Transport(TransportError::Io {
        kind: std::io::ErrorKind::ConnectionReset,
        message: "reset by peer".into(),
    });
    assert_eq!(p.a.closed_error(), Some(&want));
    assert_eq!(p.a.conn.error(), Some(&want));
    assert_eq!(want.culprit_status(), WcStatus::Fatal);
    assert_eq!(
        want.disconnect_reason(),
        DisconnectReason::Transport {
            reason: TransportFailure::new(
                TransportFault::Io(std::io::ErrorKind::ConnectionReset),
                "transport failure: reset by peer"
            )
        }
    );
    let wcs = p.a.take_wcs();
    assert_eq!(
        wcs.iter().map(|w| (w.wr_id, w.status)).collect::<Vec<_>>(),
        vec![(1, WcStatus::WrFlush)]
    );
    assert!(p.a.conn.wants_close());
    // A write the socket took nothing of, and a completion queue
    // overrun, are kept apart.
    let mut p = connected(Config::default(), Config::default());
    p.a.conn
        .handle_transport_failure(TransportError::AcceptedNothing);
    assert_eq!(
        p.a.conn.error(),
        Some(&ConnError::Transport(TransportError::AcceptedNothing))
    );
    let mut p = connected(Config::default(), Config::default());
    p.b.conn
        .handle_transport_failure(TransportError::CompletionQueueOverrun);
    assert!(p
        .b
        .conn
        .error()
        .unwrap()
        .to_string()
        .contains("completion queue overrun"));
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// Any re-splitting of the streams gives the same result.
    #[test]
    fn resplit_streams_deliver_identically(
        splits in proptest::collection::vec(1usize..200, 1..8),
        crc in any::<bool>(),
        revision in 1u8..=2,
        sizes in proptest::collection::vec(0usize..3000, 1..6),
    ) {
        let mut ca = cfg(revision, crc, P2pMode::Any);
        ca.max_ulpdu = 256;
        let mut p = Pair::new(ca, Config::default(), b"x");
        p.splits = splits;
        p.connect(b"y");
        let sink = p.b.reg_mut(3000, Access::REMOTE_WRITE);
        let src = p.b.reg_bytes(&[0x5a; 3000], Access::REMOTE_READ);
        let rsink = p.a.reg_mut(3000, Access::LOCAL_WRITE);
        for (i, &n) in sizes.iter().enumerate() {
            recv(&mut p.b, i as u64, 3000);
            let data: Vec<u8> = (0..n).map(|j| (i + j) as u8).collect();
            p.a.conn.post_send(SendWr::write(100 + i as u64, vec![bytes_sge(&data)], RemoteAddr { rkey: sink.key, addr: sink.addr }), &mut p.a.mrs).unwrap();
            p.a.conn.post_send(SendWr::send(200 + i as u64, vec![bytes_sge(&data)]), &mut p.a.mrs).unwrap();
            p.a.conn.post_send(SendWr::read(300 + i as u64, LocalSge { lkey: rsink.key, addr: rsink.addr, len: n as u32 }, RemoteAddr { rkey: src.key, addr: src.addr }), &mut p.a.mrs).unwrap();
            p.drive();
            let wcs = p.b.take_wcs();
            prop_assert_eq!(wcs.len(), 1);
            prop_assert_eq!(wcs[0].data().unwrap(), &data[..]);
            prop_assert_eq!(&p.b.contents(sink.key)[..n], &data[..]);
            let awcs = p.a.take_wcs();
            prop_assert_eq!(awcs.iter().map(|w| (w.wr_id, w.status)).collect::<Vec<_>>(),
                vec![(100 + i as u64, WcStatus::Success), (200 + i as u64, WcStatus::Success), (300 + i as u64, WcStatus::Success)]);
            prop_assert!(p.a.contents(rsink.key)[..n].iter().all(|&x| x == 0x5a));
        }
        prop_assert!(p.a.closed_error().is_none() && p.b.closed_error().is_none());
    }
}
