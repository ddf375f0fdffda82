//! `Options::first_fpdu_delay`: without a peer-to-peer RTR, the initiator's
//! first FPDU leaves no sooner than the delay after the MPA Reply (Linux siw
//! as responder loses an FPDU that arrives right behind its Reply; see
//! docs/iwarp.md, "Linux siw interop").
//!
//! The responder here is a raw TCP socket, so the test sees the bytes and
//! when they come. The assertions are lower bounds that a slow machine
//! cannot break: the initiator sleeps for the delay after it received the
//! Reply, which is after the Reply was written.

use std::time::{Duration, Instant};

use bytes::Bytes;
use rpcrdma_softiwarp::{Options, P2pMode, SoftIwarp, DEFAULT_FIRST_FPDU_DELAY};
use rpcrdma_verbs::{Device, QpCaps, QpParams, QueuePair, SendWr, Sge};
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

/// An MPA Reply accepting without peer-to-peer mode (revision 2 with the
/// enhanced IRD/ORD word but no RTR, or revision 1).
fn reply(revision: u8) -> Vec<u8> {
    let mut r = b"MPA ID Rep Frame".to_vec();
    if revision == 2 {
        r.extend_from_slice(&[0x10, 2, 0, 4]);
        r.extend_from_slice(&[0, 16, 0, 16]); // IRD 16, ORD 16, no P2P bits
    } else {
        r.extend_from_slice(&[0, 1, 0, 0]);
    }
    r
}

/// Connects with `options` to a raw responder that answers without RTR;
/// returns the time between writing the Reply and the first FPDU octet.
async fn gap_after_reply(options: Options) -> Duration {
    let tcp = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = tcp.local_addr().unwrap();
    let revision = options.revision;
    let responder = async move {
        let (mut s, _) = tcp.accept().await.unwrap();
        let (rev, _) = read_request(&mut s).await;
        assert_eq!(rev, revision);
        s.write_all(&reply(revision)).await.unwrap();
        let sent = Instant::now();
        let mut first = [0u8; 1];
        s.read_exact(&mut first).await.unwrap();
        let gap = sent.elapsed();
        (gap, s)
    };
    let dev = SoftIwarp::new();
    let (pd, cq) = (dev.alloc_pd(), dev.create_cq(16));
    let initiator = async {
        let (qp, _) = dev
            .connect(
                addr,
                QpParams {
                    pd: &pd,
                    send_cq: &cq,
                    recv_cq: &cq,
                    caps: QpCaps::default(),
                    options,
                },
                Bytes::new(),
            )
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
async fn without_rtr_the_first_fpdu_waits_for_the_delay() {
    let delay = Duration::from_millis(150);
    for (revision, p2p) in [(2u8, P2pMode::Off), (1, P2pMode::Off), (2, P2pMode::Write)] {
        // With P2pMode::Write offered, the raw responder still declines
        // peer-to-peer mode: the delay applies too.
        let gap = gap_after_reply(Options {
            revision,
            p2p,
            first_fpdu_delay: delay,
            ..Options::default()
        })
        .await;
        assert!(
            gap >= delay,
            "rev {revision} {p2p:?}: first FPDU {gap:?} after the Reply"
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
async fn with_an_rtr_connect_does_not_wait() {
    // Our own responder agrees to peer-to-peer mode: the RTR goes first, so
    // a (huge) delay must not apply; connect would otherwise hang for a
    // minute and the timeout below would fail the test.
    let dev = SoftIwarp::new();
    let listener = dev
        .listen("127.0.0.1:0".parse().unwrap(), Options::default())
        .await
        .unwrap();
    let addr = rpcrdma_verbs::Listener::local_addr(&listener);
    let (pd, cq) = (dev.alloc_pd(), dev.create_cq(16));
    let server = async {
        let req = rpcrdma_verbs::Listener::accept(&listener).await.unwrap();
        rpcrdma_verbs::ConnectRequest::accept(
            req,
            QpParams {
                pd: &pd,
                send_cq: &cq,
                recv_cq: &cq,
                caps: QpCaps::default(),
                options: Options::default(),
            },
            Bytes::new(),
        )
        .await
        .unwrap()
    };
    let (cpd, ccq) = (dev.alloc_pd(), dev.create_cq(16));
    let client = dev.connect(
        addr,
        QpParams {
            pd: &cpd,
            send_cq: &ccq,
            recv_cq: &ccq,
            caps: QpCaps::default(),
            options: Options {
                first_fpdu_delay: Duration::from_secs(60),
                ..Options::default()
            },
        },
        Bytes::new(),
    );
    let joined = tokio::time::timeout(Duration::from_secs(30), async {
        tokio::join!(server, client)
    })
    .await
    .expect("connect waited although an RTR was agreed");
    let (_sqp, c) = joined;
    let (cqp, _) = c.unwrap();
    assert!(cqp.negotiated().unwrap().rtr.is_some());
}
