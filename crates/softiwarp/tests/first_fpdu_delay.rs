//! `Options::first_fpdu_delay`: the initiator's first FPDU (the
//! peer-to-peer RTR, or the application's first message) leaves no sooner
//! than the delay after the MPA Reply (Linux siw as responder loses FPDUs
//! that arrive right behind its Reply; see docs/iwarp.md, "Linux siw
//! interop").
//!
//! The responder here is a raw TCP socket, so the test sees the bytes and
//! when they come. The assertions are lower bounds that a slow machine
//! cannot break: the initiator sleeps for the delay after it received the
//! Reply, which is after the Reply was written.

use std::time::{Duration, Instant};

use bytes::Bytes;
use rpcrdma_softiwarp::{Options, P2pMode, Rtr, SoftIwarp, DEFAULT_FIRST_FPDU_DELAY};
use rpcrdma_verbs::{Device, QpParams, QueuePair, SendWr, Sge};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// Reads one MPA Request; returns its revision and private data length.
async fn read_request(s: &mut TcpStream) -> (u8, usize) {
    let mut hdr = [0u8; 20];
    s.read_exact(&mut hdr).await.unwrap();
    assert_eq!(&hdr[..16], b"MPA ID Req Frame");
    let pd_len = usize::from(u16::from_be_bytes([hdr[18], hdr[19]]));
    let mut pd = vec![0u8; pd_len];
    s.read_exact(&mut pd).await.unwrap();
    (hdr[17], pd_len)
}

/// An MPA Reply accepting the Request: revision 1, or revision 2 with the
/// enhanced IRD/ORD word, agreeing to the RTR given (C: Write, D: Read) or
/// declining peer-to-peer mode.
fn reply(revision: u8, rtr: Option<Rtr>) -> Vec<u8> {
    let mut r = b"MPA ID Rep Frame".to_vec();
    if revision == 2 {
        r.extend_from_slice(&[0x10, 2, 0, 4]);
        let (ird, ord) = match rtr {
            None => (16u16, 16u16),
            Some(Rtr::Write) => (0x8000 | 16, 0x8000 | 16),
            Some(Rtr::Read) => (0x8000 | 16, 0x4000 | 16),
        };
        r.extend_from_slice(&ird.to_be_bytes());
        r.extend_from_slice(&ord.to_be_bytes());
    } else {
        r.extend_from_slice(&[0, 1, 0, 0]);
    }
    r
}

/// Connects with `options` to a raw responder that answers without RTR;
/// returns the time between writing the Reply and the first FPDU octet.
async fn gap_after_reply(options: Options, rtr: Option<Rtr>) -> Duration {
    let tcp = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = tcp.local_addr().unwrap();
    let revision = options.revision;
    let responder = async move {
        let (mut s, _) = tcp.accept().await.unwrap();
        let (rev, _) = read_request(&mut s).await;
        assert_eq!(rev, revision);
        s.write_all(&reply(revision, rtr)).await.unwrap();
        let sent = Instant::now();
        let mut first = [0u8; 1];
        s.read_exact(&mut first).await.unwrap();
        let gap = sent.elapsed();
        (gap, s)
    };
    let dev = SoftIwarp::new();
    let (pd, cq) = (
        dev.alloc_pd().expect("protection domain"),
        dev.create_cq(16).expect("completion queue"),
    );
    let initiator = async {
        let (qp, _) = dev
            .connect(addr, QpParams::new(&pd, &cq, options), Bytes::new())
            .await
            .unwrap();
        // The first FPDU: posted as soon as connect returns.
        qp.post_send(SendWr::send(1, vec![Sge::Bytes(Bytes::from_static(b"x"))]))
            .unwrap();
        qp
    };
    let ((gap, _s), qp) = tokio::join!(responder, initiator);
    qp.abort();
    gap
}

#[tokio::test(flavor = "current_thread")]
async fn the_first_fpdu_waits_for_the_delay() {
    let delay = Duration::from_millis(150);
    let cases = [
        // No peer-to-peer mode: the first FPDU is our Send.
        (2u8, P2pMode::Off, None),
        (1, P2pMode::Off, None),
        // Offered, declined by the responder.
        (2, P2pMode::Write, None),
        // Agreed: the first FPDU is the RTR.
        (2, P2pMode::Write, Some(Rtr::Write)),
        (2, P2pMode::Read, Some(Rtr::Read)),
    ];
    for (revision, p2p, rtr) in cases {
        let gap = gap_after_reply(
            Options {
                revision,
                p2p,
                first_fpdu_delay: delay,
                ..Options::default()
            },
            rtr,
        )
        .await;
        assert!(
            gap >= delay,
            "rev {revision} {p2p:?} {rtr:?}: first FPDU {gap:?} after the Reply"
        );
    }
}

#[test]
fn the_default_delay_is_on() {
    assert_eq!(
        Options::default().first_fpdu_delay,
        DEFAULT_FIRST_FPDU_DELAY
    );
    assert!(DEFAULT_FIRST_FPDU_DELAY >= Duration::from_millis(20));
}

#[tokio::test(flavor = "current_thread")]
async fn without_a_delay_everything_still_works() {
    // Zero disables the wait; our own responder is ready at once.
    let dev = SoftIwarp::new();
    let listener = dev
        .listen("127.0.0.1:0".parse().unwrap(), Options::default())
        .await
        .unwrap();
    let addr = rpcrdma_verbs::Listener::local_addr(&listener);
    let (pd, cq) = (
        dev.alloc_pd().expect("protection domain"),
        dev.create_cq(16).expect("completion queue"),
    );
    let server = async {
        let req = rpcrdma_verbs::Listener::accept(&listener).await.unwrap();
        rpcrdma_verbs::ConnectRequest::accept(
            req,
            QpParams::new(&pd, &cq, Options::default()),
            Bytes::new(),
        )
        .await
        .unwrap()
    };
    let (cpd, ccq) = (
        dev.alloc_pd().expect("protection domain"),
        dev.create_cq(16).expect("completion queue"),
    );
    let client = dev.connect(
        addr,
        QpParams::new(
            &cpd,
            &ccq,
            Options {
                first_fpdu_delay: Duration::ZERO,
                ..Options::default()
            },
        ),
        Bytes::new(),
    );
    let (sqp, c) = tokio::join!(server, client);
    let (cqp, _) = c.unwrap();
    assert_eq!(cqp.negotiated().unwrap().rtr, Some(Rtr::Write));
    sqp.post_recv(rpcrdma_verbs::RecvWr {
        wr_id: 1,
        buf: bytes::BytesMut::zeroed(8),
    })
    .unwrap();
    cqp.post_send(SendWr::send(2, vec![Sge::Bytes(Bytes::from_static(b"hi"))]))
        .unwrap();
    let mut wcs = Vec::new();
    while !wcs
        .iter()
        .any(|w: &rpcrdma_verbs::WorkCompletion| w.wr_id == 1)
    {
        rpcrdma_verbs::CompletionQueue::wait(&cq).await;
        rpcrdma_verbs::CompletionQueue::poll(&cq, &mut wcs, 8);
    }
    let wc = wcs.iter().find(|w| w.wr_id == 1).unwrap();
    assert_eq!(wc.data().unwrap(), b"hi");
}
