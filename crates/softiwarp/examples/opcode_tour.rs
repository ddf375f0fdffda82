//! Every iWARP message our provider sends, in every MPA mode, between a
//! server and a client in one process on 127.0.0.1:PORT: traffic for the
//! Wireshark oracle (`scripts/wire-check-verbs.sh` runs it under a capture).
//!
//! ```text
//! cargo run -p rpcrdma-softiwarp --example opcode_tour -- PORT
//! ```
//!
//! For each mode (MPA revision 1 and 2, CRC off and on, peer-to-peer RTR as
//! zero-length Write, zero-length Read, or none) one connection carries:
//! Send, Send with Solicited Event, Send with Invalidate, Send with
//! Solicited Event and Invalidate, a multi-FPDU RDMA Write, a multi-FPDU RDMA
//! Read (Request and Responses) in both directions,
//! and finally a Terminate (the client reads through a key the server never
//! registered). One more connection is rejected (MPA Reject). Every transfer
//! is verified; the exit status is 0 when all were right.
//!
//! Send payloads are at least 32 octets: tshark 4.0 offers every Send to its
//! RPC-over-RDMA heuristic, which throws ("Malformed Packet") on payloads
//! shorter than an RPC-over-RDMA header, zero-length ones included. So the
//! zero-length Send is left to the unit tests.

use std::net::SocketAddr;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use rpcrdma_softiwarp::{Cq, Options, P2pMode, Pd, Qp, SoftIwarp};
use rpcrdma_verbs::{
    Access, CompletionQueue, ConnectError, ConnectRequest, Device, DisconnectReason, Listener,
    MemoryRegion, ProtectionDomain, QpCaps, QpParams, QueuePair, RecvWr, RemoteAddr, SendOp,
    SendWr, Sge, WcStatus, WorkCompletion,
};

type Res<T> = Result<T, Box<dyn std::error::Error>>;

struct End {
    pd: Pd,
    cq: Cq,
    qp: Qp,
}

async fn wait_n(cq: &Cq, n: usize) -> Res<Vec<WorkCompletion>> {
    let mut out = Vec::new();
    tokio::time::timeout(Duration::from_secs(20), async {
        while out.len() < n {
            cq.wait().await;
            cq.poll(&mut out, 64);
        }
    })
    .await?;
    Ok(out)
}

/// A Send payload of 40 octets that is plainly not RPC-over-RDMA.
fn payload(what: &str) -> Vec<u8> {
    format!("opcode tour: {what:<27}").into_bytes()
}

fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
        .collect()
}

/// Write then Read from `a` to `b`, verified.
async fn write_and_read(a: &End, b: &End, seed: u8) -> Res<()> {
    let data = pattern(200_000, seed);
    let src =
        a.pd.register_bytes(Bytes::from(data.clone()), Access::LOCAL_READ)?;
    let sink =
        b.pd.register_mut(BytesMut::zeroed(data.len()), Access::REMOTE_WRITE)?;
    b.qp.post_recv(RecvWr {
        wr_id: 1,
        buf: BytesMut::zeroed(64),
    })?;
    a.qp.post_send(SendWr::write(
        1,
        vec![Sge::Region(src.sge(0, data.len()))],
        sink.remote(0),
    ))?;
    a.qp.post_send(SendWr::send(
        2,
        vec![Sge::Bytes(Bytes::from(payload("written")))],
    ))?;
    wait_n(&b.cq, 1).await?;
    wait_n(&a.cq, 2).await?;
    if sink.deregister()?.freeze() != data {
        return Err("RDMA Write data differs".into());
    }
    let rsrc =
        b.pd.register_bytes(Bytes::from(data[..150_000].to_vec()), Access::REMOTE_READ)?;
    let rsink =
        a.pd.register_mut(BytesMut::zeroed(150_000), Access::LOCAL_WRITE)?;
    a.qp.post_send(SendWr::read(3, rsink.sge(0, 150_000), rsrc.remote(0)))?;
    let wc = wait_n(&a.cq, 1).await?;
    if wc[0].status != WcStatus::Success || rsink.deregister()?.freeze() != data[..150_000] {
        return Err("RDMA Read failed or data differs".into());
    }
    Ok(())
}

async fn tour(
    dev: &SoftIwarp,
    addr: SocketAddr,
    l: &rpcrdma_softiwarp::SoftListener,
    o: Options,
) -> Res<()> {
    let caps = QpCaps::default();
    let (spd, scq) = (
        dev.alloc_pd().expect("protection domain"),
        dev.create_cq(256).expect("completion queue"),
    );
    let (cpd, ccq) = (
        dev.alloc_pd().expect("protection domain"),
        dev.create_cq(256).expect("completion queue"),
    );
    let server = async {
        let req = l.accept().await?;
        let qp = req
            .accept(
                QpParams::new(&spd, &scq, Options::default()).with_caps(caps),
                Bytes::from_static(b"tour-server"),
            )
            .await?;
        Ok::<_, ConnectError>(qp)
    };
    let client = dev.connect(
        addr,
        QpParams::new(&cpd, &ccq, o.clone()).with_caps(caps),
        Bytes::from_static(b"tour-client"),
    );
    let (s, c) = tokio::join!(server, client);
    let s = End {
        pd: spd,
        cq: scq,
        qp: s?,
    };
    let c = End {
        pd: cpd,
        cq: ccq,
        qp: c?.0,
    };

    // The four Send variants and a zero-length Send, client to server.
    let inv1 =
        s.pd.register_mut(BytesMut::zeroed(8), Access::REMOTE_WRITE)?;
    let inv2 =
        s.pd.register_mut(BytesMut::zeroed(8), Access::REMOTE_WRITE)?;
    for i in 0..4 {
        s.qp.post_recv(RecvWr {
            wr_id: i,
            buf: BytesMut::zeroed(64),
        })?;
    }
    let sends = [
        (false, None),
        (true, None),
        (false, Some(inv1.rkey())),
        (true, Some(inv2.rkey())),
    ];
    for (i, (solicited, invalidate)) in sends.into_iter().enumerate() {
        let sges = vec![Sge::Bytes(Bytes::from(payload(&format!(
            "send variant {i}"
        ))))];
        c.qp.post_send(SendWr {
            wr_id: i as u64,
            op: SendOp::Send {
                sges,
                solicited,
                invalidate,
            },
            signaled: true,
        })?;
    }
    let got = wait_n(&s.cq, 4).await?;
    if got.iter().any(|w| w.status != WcStatus::Success) || inv1.is_valid() || inv2.is_valid() {
        return Err("Send variants failed".into());
    }
    wait_n(&c.cq, 4).await?;

    write_and_read(&c, &s, 1).await?;
    write_and_read(&s, &c, 2).await?;

    // A Read through a key the server never registered: the server answers
    // with a Terminate (RDMAP remote protection, invalid STag).
    let sink =
        c.pd.register_mut(BytesMut::zeroed(8), Access::LOCAL_WRITE)?;
    c.qp.post_send(SendWr::read(
        20,
        sink.sge(0, 8),
        RemoteAddr {
            rkey: 0x0bad_0bad,
            addr: 0,
        },
    ))?;
    let wc = wait_n(&c.cq, 1).await?;
    if wc[0].status != WcStatus::RemoteAccess {
        return Err(format!("expected a remote access error, got {:?}", wc[0].status).into());
    }
    match c.qp.closed().await {
        DisconnectReason::RemoteTerminate {
            layer: 0,
            etype: 1,
            code: 0,
        } => Ok(()),
        other => Err(format!("expected a Terminate, got {other:?}").into()),
    }
}

async fn rejected(
    dev: &SoftIwarp,
    addr: SocketAddr,
    l: &rpcrdma_softiwarp::SoftListener,
) -> Res<()> {
    let (pd, cq) = (
        dev.alloc_pd().expect("protection domain"),
        dev.create_cq(16).expect("completion queue"),
    );
    let server = async {
        let req = l.accept().await?;
        req.reject(Bytes::from_static(b"tour-reject")).await
    };
    let client = dev.connect(
        addr,
        QpParams::new(&pd, &cq, Options::default()),
        Bytes::new(),
    );
    let (r, c) = tokio::join!(server, client);
    r?;
    match c {
        Err(ConnectError::Rejected { private_data }) if &private_data[..] == b"tour-reject" => {
            Ok(())
        }
        other => Err(format!("expected a reject, got {other:?}").into()),
    }
}

fn main() -> Res<()> {
    let port: u16 = std::env::args()
        .nth(1)
        .ok_or("usage: opcode_tour PORT")?
        .parse()
        .map_err(|_| "PORT must be a number")?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    rt.block_on(async {
        let dev = SoftIwarp::new();
        let addr: SocketAddr = ([127, 0, 0, 1], port).into();
        let l = dev.listen(addr, Options::default()).await?;
        let modes = [
            (1, false, P2pMode::Off),
            (1, true, P2pMode::Off),
            (2, false, P2pMode::Write),
            (2, true, P2pMode::Write),
            (2, false, P2pMode::Read),
            (2, true, P2pMode::Off),
        ];
        for (revision, crc, p2p) in modes {
            let o = Options {
                revision,
                crc,
                p2p,
                ..Options::default()
            };
            tour(&dev, addr, &l, o)
                .await
                .map_err(|e| format!("MPA revision {revision}, CRC {crc}, {p2p:?}: {e}"))?;
            eprintln!("opcode_tour: MPA revision {revision}, CRC {crc}, peer-to-peer {p2p:?}: ok");
        }
        rejected(&dev, addr, &l).await?;
        eprintln!("opcode_tour: reject: ok");
        Ok(())
    })
}
