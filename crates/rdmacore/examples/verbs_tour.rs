//! Every operation of the verbs interface over an rdma-core device, both
//! ends in one process over the device's loopback, each result checked:
//! Send (inline and from bounce buffers), RDMA Write (registered memory,
//! inline `Bytes`, a 1 MiB `Bytes` registered for the request, a gather
//! list longer than the device's `max_sge`), a chain of RDMA Writes and a
//! Send posted together (`post_send_chain`), RDMA Read, and Send with
//! Invalidate (whether the device honours it for a plain `ibv_reg_mr`
//! region is reported: that is the device's business, docs/rdma-core.md).
//!
//! ```sh
//! cargo run -p rpcrdma-rdmacore --features rdma-core --example verbs_tour -- rxe0 10.0.2.15
//! ```
//! Exit status 0 if every operation moved the right bytes.

use std::error::Error;
use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use rpcrdma_rdmacore::{DeviceConfig, Options, RdmaCore};
use rpcrdma_verbs::{
    Access, CompletionQueue, ConnectRequest, Device, Listener, MemoryRegion, ProtectionDomain,
    QpCaps, QpParams, QueuePair, RecvWr, SendOp, SendWr, Sge, WcOpcode, WcStatus, WorkCompletion,
};

type Res<T> = Result<T, Box<dyn Error>>;

async fn next<C: CompletionQueue>(cq: &C, want: WcOpcode) -> Res<WorkCompletion> {
    loop {
        let mut out = Vec::new();
        if cq.poll(&mut out, 1) == 0 {
            tokio::time::timeout(Duration::from_secs(30), cq.wait())
                .await
                .map_err(|_| format!("no {want:?} completion within 30 s"))?;
            continue;
        }
        let wc = out.remove(0);
        if wc.opcode == want || wc.status != WcStatus::Success {
            return Ok(wc);
        }
    }
}

fn pattern(seed: u8, n: usize) -> Vec<u8> {
    (0..n).map(|i| seed.wrapping_add((i * 7) as u8)).collect()
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Res<()> {
    let mut args = std::env::args().skip(1);
    let name = args.next().ok_or("usage: verbs_tour DEVICE IP")?;
    let ip: IpAddr = args.next().ok_or("usage: verbs_tour DEVICE IP")?.parse()?;
    let dev = RdmaCore::open(&DeviceConfig {
        name: Some(name),
        polling: false,
    })?;
    println!("device: {}", dev.info());
    let caps = QpCaps {
        send_depth: 64,
        recv_depth: 16,
        ird: 8,
        ord: 8,
    };
    let listener = dev
        .listen(SocketAddr::new(ip, 0), Options::default())
        .await?;
    let addr = listener.local_addr();
    let (spd, scq) = (dev.alloc_pd()?, dev.create_cq(128)?);
    let (cpd, ccq) = (dev.alloc_pd()?, dev.create_cq(128)?);
    let server = async {
        let req = listener.accept().await?;
        let p = QpParams::new(&spd, &scq, Options::default()).with_caps(caps);
        let qp = req.accept(p, Bytes::from_static(b"tour-server")).await?;
        for i in 0..8 {
            qp.post_recv(RecvWr {
                wr_id: 100 + i,
                buf: BytesMut::zeroed(256),
            })?;
        }
        Ok::<_, Box<dyn Error>>(qp)
    };
    let client = async {
        let p = QpParams::new(&cpd, &ccq, Options::default()).with_caps(caps);
        dev.connect(addr, p, Bytes::from_static(b"tour-client"))
            .await
    };
    let (sqp, cres) = tokio::join!(server, client);
    let (sqp, (cqp, pd_back)) = (sqp?, cres?);
    let pd_back = &pd_back[..pd_back.len().min(11)];
    let mut fails = 0;
    let mut report = |what: &str, ok: bool, detail: String| {
        println!(
            "{} {what}{}",
            if ok { "PASS" } else { "FAIL" },
            if detail.is_empty() {
                String::new()
            } else {
                format!(" ({detail})")
            }
        );
        fails += usize::from(!ok);
    };
    report(
        "private data both ways",
        pd_back == b"tour-server",
        format!("{pd_back:?}"),
    );

    // 1. Sends: small (inline) and 200 octets in three pieces (bounce).
    cqp.post_send(SendWr::send(
        1,
        vec![Sge::Bytes(Bytes::from_static(b"ping"))],
    ))?;
    let wc = next(&scq, WcOpcode::Recv).await?;
    report(
        "Send, inline",
        wc.status.is_ok() && wc.data() == Some(&b"ping"[..]),
        format!("{:?}", wc.status),
    );
    let body = pattern(1, 200);
    cqp.post_send(SendWr::send(
        2,
        vec![
            Sge::Bytes(Bytes::copy_from_slice(&body[..10])),
            Sge::Bytes(Bytes::copy_from_slice(&body[10..150])),
            Sge::Bytes(Bytes::copy_from_slice(&body[150..])),
        ],
    ))?;
    let wc = next(&scq, WcOpcode::Recv).await?;
    report(
        "Send, 3 pieces through bounce buffers",
        wc.status.is_ok() && wc.data() == Some(&body[..]),
        format!("{:?}", wc.status),
    );
    for _ in 0..2 {
        let wc = next(&ccq, WcOpcode::Send).await?;
        if !wc.status.is_ok() {
            report("Send completions", false, format!("{:?}", wc.status));
        }
    }

    // 2. RDMA Writes into a server region: registered source, inline
    // Bytes, 1 MiB of Bytes, and 12 elements (more than most devices'
    // max_sge: coalesced).
    let n = 1 << 20;
    let sink = spd.register_mut(
        BytesMut::zeroed(n),
        Access::LOCAL_WRITE | Access::REMOTE_WRITE,
    )?;
    let src = cpd.register_bytes(Bytes::from(pattern(2, 4096)), Access::LOCAL_READ)?;
    let big = Bytes::from(pattern(3, n));
    let pieces: Vec<Sge> = (0..12)
        .map(|i| {
            if i % 2 == 0 {
                Sge::Region(src.sge(i * 100, 100))
            } else {
                Sge::Bytes(Bytes::from(pattern(4 + i as u8, 100)))
            }
        })
        .collect();
    let mut want = vec![0u8; n];
    want.copy_from_slice(&big);
    want[..4096].copy_from_slice(&pattern(2, 4096));
    want[4096..4120].copy_from_slice(&pattern(9, 24));
    let mut gathered = Vec::new();
    for s in &pieces {
        match s {
            Sge::Region(r) => {
                let off = (r.addr - src.addr()) as usize;
                gathered.extend_from_slice(&pattern(2, 4096)[off..off + r.len as usize]);
            }
            Sge::Bytes(b) => gathered.extend_from_slice(b),
        }
    }
    want[8192..8192 + 1200].copy_from_slice(&gathered);
    cqp.post_send(SendWr::write(
        10,
        vec![Sge::Bytes(big.clone())],
        sink.remote(0),
    ))?;
    cqp.post_send(SendWr::write(
        11,
        vec![Sge::Region(src.sge(0, 4096))],
        sink.remote(0),
    ))?;
    cqp.post_send(SendWr::write(
        12,
        vec![Sge::Bytes(Bytes::from(pattern(9, 24)))],
        sink.remote(4096),
    ))?;
    cqp.post_send(SendWr::write(13, pieces, sink.remote(8192)))?;
    cqp.post_send(SendWr::send(
        14,
        vec![Sge::Bytes(Bytes::from_static(b"written"))],
    ))?;
    let mut ok = true;
    for op in [WcOpcode::RdmaWrite; 4].into_iter().chain([WcOpcode::Send]) {
        let wc = next(&ccq, op).await;
        ok &= wc
            .as_ref()
            .is_ok_and(|w| w.status.is_ok() && w.opcode == op);
    }
    let wc = next(&scq, WcOpcode::Recv).await?;
    ok &= wc.data() == Some(&b"written"[..]);
    let got = sink.deregister()?.freeze();
    report(
        "RDMA Write: 1 MiB Bytes, registered region, inline Bytes, 12-element gather",
        ok && got[..] == want[..],
        String::new(),
    );

    // 2b. A chain: 30 RDMA Writes of 1 KiB and a Send behind them, posted
    // with one call (post_send_chain: linked lists of at most 16 requests
    // and 64 gather elements per ibv_post_send). The first 17 Writes are
    // one piece each and the rest six pieces each (within siw's six
    // gather elements), so the chain is cut by both limits: after 16
    // requests, then after 1 + 10 x 6 elements, then the rest.
    const WRITES: u64 = 30;
    let chained = spd.register_mut(
        BytesMut::zeroed(WRITES as usize * 1024),
        Access::LOCAL_WRITE | Access::REMOTE_WRITE,
    )?;
    let mut chain = Vec::new();
    let mut want = Vec::with_capacity(WRITES as usize * 1024);
    for i in 0..WRITES {
        let data = pattern(40 + i as u8, 1024);
        want.extend_from_slice(&data);
        let sges = if i >= 17 {
            data.chunks(171)
                .map(|c| Sge::Bytes(Bytes::copy_from_slice(c)))
                .collect()
        } else {
            vec![Sge::Bytes(Bytes::from(data))]
        };
        chain.push(SendWr::write(
            100 + i,
            sges,
            chained.remote(i as usize * 1024),
        ));
    }
    chain.push(SendWr::send(
        100 + WRITES,
        vec![Sge::Bytes(Bytes::from_static(b"chained"))],
    ));
    cqp.post_send_chain(chain)?;
    let mut ok = true;
    let mut ids = Vec::new();
    for op in [WcOpcode::RdmaWrite; WRITES as usize]
        .into_iter()
        .chain([WcOpcode::Send])
    {
        let wc = next(&ccq, op).await?;
        ok &= wc.status.is_ok() && wc.opcode == op;
        ids.push(wc.wr_id);
    }
    let wc = next(&scq, WcOpcode::Recv).await?;
    ok &= wc.data() == Some(&b"chained"[..]);
    let got = chained.deregister()?.freeze();
    report(
        "a chain of 30 RDMA Writes and a Send (post_send_chain, three linked lists)",
        ok && got[..] == want[..] && ids == (100..=100 + WRITES).collect::<Vec<_>>(),
        format!("completions {ids:?}"),
    );

    // 3. RDMA Read of a server region into a client sink.
    let rsrc = spd.register_bytes(Bytes::from(pattern(5, 65536)), Access::REMOTE_READ)?;
    let rsink = cpd.register_mut(BytesMut::zeroed(65536), Access::LOCAL_WRITE)?;
    cqp.post_send(SendWr::read(20, rsink.sge(0, 65536), rsrc.remote(0)))?;
    let wc = next(&ccq, WcOpcode::RdmaRead).await?;
    let got = rsink.deregister()?.freeze();
    report(
        "RDMA Read 64 KiB",
        wc.status.is_ok() && wc.byte_len == 65536 && got[..] == pattern(5, 65536)[..],
        format!("{:?}", wc.status),
    );
    drop(rsrc);

    // 4. Send with Invalidate of a server region's key: the device
    // decides whether a plain region can be invalidated remotely.
    let target = spd.register_mut(
        BytesMut::zeroed(64),
        Access::LOCAL_WRITE | Access::REMOTE_WRITE,
    )?;
    let posted = cqp.post_send(SendWr {
        wr_id: 30,
        op: SendOp::Send {
            sges: vec![Sge::Bytes(Bytes::from_static(b"inv"))],
            solicited: false,
            invalidate: Some(target.rkey()),
        },
        signaled: true,
    });
    if let Err(e) = posted {
        println!("INFO Send with Invalidate: the device refuses to post it: {e}");
        cqp.disconnect().await;
        drop(sqp);
        println!("verbs tour: {}", if fails == 0 { "PASS" } else { "FAIL" });
        std::process::exit(i32::from(fails > 0));
    }
    let s = next(&ccq, WcOpcode::Send).await?;
    let r = next(&scq, WcOpcode::Recv).await?;
    let honoured = r.status.is_ok() && r.invalidated_rkey == Some(target.rkey());
    println!(
        "INFO Send with Invalidate of an ibv_reg_mr region: sender {:?}, receiver {:?}, invalidated key {:?}: {}",
        s.status,
        r.status,
        r.invalidated_rkey,
        if honoured { "honoured by the device" } else { "not honoured (the provider advertises R = 0 anyway)" }
    );
    report(
        "Send with Invalidate posted and completed",
        s.opcode == WcOpcode::Send,
        format!("{:?}", s.status),
    );

    cqp.disconnect().await;
    drop(sqp);
    println!("verbs tour: {}", if fails == 0 { "PASS" } else { "FAIL" });
    if fails > 0 {
        std::process::exit(1);
    }
    Ok(())
}
