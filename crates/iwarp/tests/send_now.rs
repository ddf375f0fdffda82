//! `Connection::post_send_now`: a small Send with nothing queued before it
//! is encoded and handed to the driver's write in one call. It must put
//! the same octets on the wire as `post_send` followed by a transmit, and
//! whatever the write does not take must stay queued exactly as after
//! `post_send` and `handle_written`.

mod pair;

use bytes::{Bytes, BytesMut};
use pair::{decode_stream, Pair};
use rpcrdma_iwarp::conn::{Config, P2pMode};
use rpcrdma_iwarp::rdmap::Opcode;
use rpcrdma_verbs::{
    Access, LocalSge, RecvWr, RemoteAddr, SendOp, SendWr, Sge, WcOpcode, WcStatus,
};

fn connected() -> Pair {
    let mut p = Pair::new(Config::default(), Config::default(), b"client");
    p.connect(b"server");
    p.drive();
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

fn send(id: u64, payload: &[u8], signaled: bool) -> SendWr {
    let mut wr = SendWr::send(id, vec![Sge::Bytes(Bytes::copy_from_slice(payload))]);
    wr.signaled = signaled;
    wr
}

/// `post_send_now` on side A with a write that takes at most `take`
/// octets; what it took goes on A's wire. Returns whether the write was
/// called and with how many octets.
fn send_now(p: &mut Pair, wr: SendWr, take: usize) -> Option<usize> {
    let mut offered = None;
    let mut taken = Vec::new();
    let a = &mut p.a;
    a.conn
        .post_send_now(wr, &mut a.mrs, |b| {
            offered = Some(b.len());
            let n = b.len().min(take);
            taken.extend_from_slice(&b[..n]);
            n
        })
        .unwrap();
    a.sent.extend_from_slice(&taken);
    p.b.inbound.extend_from_slice(&taken);
    offered
}

#[test]
fn a_small_send_is_written_at_once_and_completes_before_the_call_returns() {
    let mut p = connected();
    recv(&mut p.b, 7, 64);
    let before = p.a.sent.len();
    let offered = send_now(&mut p, send(1, b"ping", true), usize::MAX);
    // One FPDU: length, 18-octet header, 4 octets, pad 0, CRC field.
    assert_eq!(offered, Some(2 + 18 + 4 + 4));
    assert!(!p.a.conn.wants_write(), "nothing left to write");
    assert_eq!(p.a.conn.send_queue_len(), 0, "no send-queue entry");
    let wc = p.a.conn.poll_completion().expect("completed at once");
    assert_eq!(
        (wc.wr_id, wc.opcode, wc.status),
        (1, WcOpcode::Send, WcStatus::Success)
    );
    p.drive();
    let got = p.b.take_wcs();
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].data(), Some(&b"ping"[..]));
    let (_, fpdus) = decode_stream(&p.a.sent[before..], false);
    assert_eq!(fpdus.len(), 1);
    assert_eq!(fpdus[0].0.control.opcode, Opcode::SEND);
}

#[test]
fn the_octets_are_those_of_post_send() {
    // The same requests through post_send_now and through post_send give
    // the same stream (MSNs, opcodes, flags, payloads).
    let reqs = || {
        let mut v = Vec::new();
        for i in 0..6u64 {
            let mut wr = send(i, &vec![i as u8; 1 + 37 * i as usize], i % 2 == 0);
            if let SendOp::Send { solicited, .. } = &mut wr.op {
                *solicited = i == 3;
            }
            v.push(wr);
        }
        v
    };
    let mut now = connected();
    let mut plain = connected();
    for i in 0..6 {
        recv(&mut now.b, i, 512);
        recv(&mut plain.b, i, 512);
    }
    let start_now = now.a.sent.len();
    let start_plain = plain.a.sent.len();
    for wr in reqs() {
        send_now(&mut now, wr, usize::MAX);
    }
    for wr in reqs() {
        plain.a.conn.post_send(wr, &mut plain.a.mrs).unwrap();
        plain.step();
    }
    now.drive();
    assert_eq!(now.a.sent[start_now..], plain.a.sent[start_plain..]);
    assert_eq!(now.b.take_wcs(), plain.b.take_wcs());
    assert!(now.a.closed_error().is_none() && plain.a.closed_error().is_none());
}

#[test]
fn what_the_write_does_not_take_stays_queued() {
    let full = 2 + 18 + 5 + 3 + 4;
    for take in 0..full {
        let mut p = connected();
        recv(&mut p.b, 7, 64);
        assert_eq!(send_now(&mut p, send(1, b"hello", true), take), Some(full));
        assert!(p.a.conn.wants_write(), "take {take}");
        assert_eq!(p.a.conn.send_queue_len(), 1, "take {take}");
        assert!(
            p.a.conn.poll_completion().is_none(),
            "not complete before its last octet is written (take {take})"
        );
        // The rest goes as usual; then it completes.
        p.drive();
        let wcs = p.a.take_wcs();
        assert_eq!(
            wcs.iter().map(|w| (w.wr_id, w.status)).collect::<Vec<_>>(),
            vec![(1, WcStatus::Success)],
            "take {take}"
        );
        assert_eq!(p.b.take_wcs()[0].data(), Some(&b"hello"[..]), "take {take}");
        assert_eq!(p.a.conn.send_queue_len(), 0);
    }
}

#[test]
fn requests_that_cannot_go_at_once_are_posted_as_usual() {
    let mut p = connected();
    for i in 0..6 {
        recv(&mut p.b, i, 1024);
    }
    // Something queued for the wire before it: not written by this call.
    assert!(send_now(&mut p, send(1, b"first", false), 3).is_some());
    assert_eq!(
        send_now(&mut p, send(2, b"second", false), usize::MAX),
        None
    );
    // Larger than one small FPDU.
    p.drive();
    assert_eq!(
        send_now(&mut p, send(3, &[9; 600], false), usize::MAX),
        None
    );
    p.drive();
    // Not a Send.
    let target = p.b.reg_mut(16, Access::REMOTE_WRITE);
    let write = SendWr::write(
        4,
        vec![Sge::Bytes(Bytes::from_static(b"data"))],
        RemoteAddr {
            rkey: target.key,
            addr: target.addr,
        },
    );
    assert_eq!(send_now(&mut p, write, usize::MAX), None);
    p.drive();
    // A signaled Send behind an outstanding Read waits for it (its
    // completion comes after the Read's); an unsignaled one goes.
    let src = p.b.reg_bytes(b"source", Access::REMOTE_READ);
    let sink = p.a.reg_mut(6, Access::LOCAL_WRITE);
    let read = SendWr::read(
        5,
        LocalSge {
            lkey: sink.key,
            addr: sink.addr,
            len: 6,
        },
        RemoteAddr {
            rkey: src.key,
            addr: src.addr,
        },
    );
    p.a.conn.post_send(read, &mut p.a.mrs).unwrap();
    p.step();
    assert_eq!(p.a.conn.send_queue_len(), 1, "the Read is outstanding");
    assert_eq!(send_now(&mut p, send(6, b"after", true), usize::MAX), None);
    p.step();
    assert!(send_now(&mut p, send(7, b"quiet", false), usize::MAX).is_some());
    p.drive();
    let wcs = p.a.take_wcs();
    assert_eq!(
        wcs.iter().map(|w| w.wr_id).collect::<Vec<_>>(),
        vec![4, 5, 6],
        "completions in posting order"
    );
    let got: Vec<_> =
        p.b.take_wcs()
            .iter()
            .filter_map(|w| w.data().map(<[u8]>::to_vec))
            .collect();
    assert_eq!(
        got,
        vec![
            b"first".to_vec(),
            b"second".to_vec(),
            vec![9; 600],
            b"after".to_vec(),
            b"quiet".to_vec()
        ]
    );
}

#[test]
fn a_responder_holds_its_sends_until_the_first_fpdu() {
    // Peer-to-peer mode: the responder may send nothing before the
    // initiator's RTR has arrived, not even through post_send_now.
    let cfg = Config {
        p2p: P2pMode::Write,
        ..Config::default()
    };
    let mut p = Pair::new(cfg.clone(), cfg, b"client");
    p.drive();
    p.b.conn.accept(Bytes::new()).unwrap();
    // The Reply is out, the RTR not yet in.
    let mut reply = BytesMut::new();
    p.b.conn.poll_transmit(&mut reply);
    recv(&mut p.a, 1, 16);
    let b = &mut p.b;
    let mut called = false;
    b.conn
        .post_send_now(send(1, b"early", false), &mut b.mrs, |_| {
            called = true;
            0
        })
        .unwrap();
    assert!(!called, "gated: nothing written");
    assert!(!b.conn.wants_write(), "held back until the RTR");
    // The initiator's RTR opens the gate; the Send follows it.
    p.a.inbound.extend_from_slice(&reply);
    p.drive();
    assert_eq!(p.a.take_wcs()[0].data(), Some(&b"early"[..]));
}
