//! Bounded client memory (issue 9, item 8; audit gap G2): a server cannot
//! make a client allocate more than the Write and Reply chunks the client
//! itself offered. Measured on the real thing: `rpcrdma call demo read`
//! (a 64 KiB READ: it offers a 64 KiB Write chunk and a Reply chunk of
//! about as much) as a subprocess over the software iWARP provider,
//! against a hostile server speaking iWARP by hand (MPA/DDP/RDMAP over a
//! plain socket, `rpcrdma-testkit` framing), its `/proc/PID/status`
//! VmSize and VmRSS sampled throughout. The server answers with:
//!
//! * a reply whose Write chunk claims 16 MiB, and an `RDMA_NOMSG` reply
//!   whose Reply chunk claims 16 MiB (more than offered);
//! * 16 MiB of RDMA Writes into the offered Write chunk (far past its
//!   end), and into a chunk the client never offered;
//! * a Send of 60 KiB, larger than the client's receive buffers;
//! * a reverse-direction call with a 16 MiB Read chunk, then a good reply.
//!
//! Each call ends with a clear error (or, for the last, success); the
//! client never holds more than an honest exchange's footprint plus a
//! fixed overhead far below the 16 MiB each attack asks for.

use std::io::Read as _;
use std::net::SocketAddr;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rpcrdma_testkit::mpa::{
    fpdu, send_ulpdu, tagged_ulpdu, DdpSegment, StartFrame, OP_READ_REQUEST, OP_WRITE,
};
use rpcrdma_wire::PrivateData;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};

const MIB: u64 = 1 << 20;
/// The READ the client makes.
const COUNT: u32 = 64 << 10;
/// What each attack tries to make the client hold.
const ATTACK: u32 = 16 << 20;
/// What the client may hold beyond an honest exchange's footprint:
/// allocator slack and the chunks it offered. Far below `ATTACK`.
const OVERHEAD_RSS: u64 = 6 * MIB;
/// The same for virtual memory (the client runs one thread: no
/// allocator arena of another thread's appears).
const OVERHEAD_VSZ: u64 = 12 * MIB;

mod common;
use common::words;

/// What the hostile server does once it has the client's call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Attack {
    /// Writes the data and replies correctly (the footprint to compare
    /// with).
    Honest,
    /// Replies with its Write chunk claiming `ATTACK` octets.
    ClaimWrite,
    /// Replies `RDMA_NOMSG` with its Reply chunk claiming `ATTACK` octets.
    ClaimReply,
    /// RDMA-Writes `ATTACK` octets into the offered Write chunk.
    WriteBeyond,
    /// RDMA-Writes `ATTACK` octets to an STag the client never offered.
    WriteElsewhere,
    /// Sends a 60 KiB message (the client's receive buffers are 4 KiB).
    OversizedSend,
    /// Calls the client (reverse direction) with a Read chunk of
    /// `ATTACK` octets, then replies correctly.
    ReverseCall,
}

/// What the client offered in its call.
#[derive(Debug, Clone, Copy)]
struct Offer {
    xid: u32,
    seed: u64,
    count: u32,
    /// The Write chunk's one segment (handle, length, offset).
    write: (u32, u32, u64),
    /// The Reply chunk's, if any.
    reply: Option<(u32, u32, u64)>,
}

/// Reads the client's call (RPC-over-RDMA Version One, `RDMA_MSG`).
fn parse_call(m: &[u8]) -> Offer {
    let w: Vec<u32> = m
        .chunks_exact(4)
        .map(|c| u32::from_be_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    assert_eq!((w[1], w[3]), (1, 0), "a Version One RDMA_MSG call: {w:x?}");
    let mut i = 4;
    assert_eq!(w[i], 0, "no Read list");
    i += 1;
    let seg = |i: usize| {
        (
            w[i],
            w[i + 1],
            (u64::from(w[i + 2]) << 32) | u64::from(w[i + 3]),
        )
    };
    assert_eq!((w[i], w[i + 1]), (1, 1), "one Write chunk of one segment");
    let write = seg(i + 2);
    i += 6;
    assert_eq!(w[i], 0, "one Write chunk");
    i += 1;
    let reply = if w[i] == 1 {
        assert_eq!(w[i + 1], 1);
        let r = seg(i + 2);
        i += 6;
        Some(r)
    } else {
        i += 1;
        None
    };
    // The RPC call: xid, CALL, 2, prog, vers, proc, AUTH_NONE x 2, then
    // READ's seed and count.
    let rpc = &w[i..];
    assert_eq!(rpc[5], 2, "demo READ");
    Offer {
        xid: w[0],
        seed: (u64::from(rpc[10]) << 32) | u64::from(rpc[11]),
        count: rpc[12],
        write,
        reply,
    }
}

/// One connection of the hostile server (MPA revision 1, no CRC).
struct Conn {
    rx: OwnedReadHalf,
    tx: OwnedWriteHalf,
    msn: u32,
}

impl Conn {
    /// Answers the client's MPA Request with RFC 8797 private data.
    async fn accept(mut s: TcpStream) -> std::io::Result<Self> {
        s.set_nodelay(true)?;
        let mut head = [0u8; 20];
        s.read_exact(&mut head).await?;
        let mut rest = vec![0u8; usize::from(u16::from_be_bytes([head[18], head[19]]))];
        s.read_exact(&mut rest).await?;
        let pd = PrivateData::new(1024, 1024, false).to_bytes();
        s.write_all(&StartFrame::new(false, 1, false, None, &pd).to_bytes())
            .await?;
        let (rx, tx) = s.into_split();
        Ok(Self { rx, tx, msn: 0 })
    }

    async fn read_ulpdu(&mut self) -> Option<Vec<u8>> {
        common::read_ulpdu(&mut self.rx).await
    }

    /// The next Send from the client (its payload), noting RDMA Read
    /// Requests on the way in `reads`.
    async fn next_send(&mut self, reads: &mut usize) -> Option<Vec<u8>> {
        loop {
            let seg = DdpSegment::parse(&self.read_ulpdu().await?)?;
            if seg.opcode == OP_READ_REQUEST {
                *reads += 1;
            } else if !seg.tagged && matches!(seg.opcode, 3..=6) {
                return Some(seg.payload);
            }
        }
    }

    async fn send(&mut self, payload: &[u8]) -> std::io::Result<()> {
        self.msn += 1;
        self.tx
            .write_all(&fpdu(&send_ulpdu(self.msn, payload), false))
            .await
    }

    /// RDMA-Writes `len` octets of `data` (repeated) at `stag`/`to`, in
    /// 16 KiB segments; stops at the first write error (the client cut
    /// the connection).
    async fn write(&mut self, stag: u32, to: u64, data: &[u8], len: u32) -> std::io::Result<()> {
        let mut off = 0u32;
        while off < len {
            let n = (len - off).min(16 << 10);
            let start = (off as usize) % data.len().max(1);
            let piece: Vec<u8> = data
                .iter()
                .cycle()
                .skip(start)
                .take(n as usize)
                .copied()
                .collect();
            let u = tagged_ulpdu(OP_WRITE, stag, to + u64::from(off), &piece);
            self.tx.write_all(&fpdu(&u, false)).await?;
            off += n;
        }
        Ok(())
    }

    /// The correct reply to `o`: the data into its Write chunk, then the
    /// reply naming it.
    async fn honest_reply(&mut self, o: &Offer) -> std::io::Result<()> {
        let data = rpcrdma_demoprog::pattern(o.seed, o.count as usize);
        let crc = rpcrdma_demoprog::checksum(&data);
        let (h, _, to) = o.write;
        self.write(h, to, &data, o.count).await?;
        let mut m = words(&[o.xid, 1, 8, 0, 0, 1, 1, h, o.count]);
        m.extend_from_slice(&to.to_be_bytes());
        m.extend(words(&[0, 0]));
        m.extend(words(&[o.xid, 1, 0, 0, 0, 0, 0, crc, o.count]));
        self.send(&m).await
    }
}

/// What the hostile server saw on one connection.
#[derive(Debug, Default, Clone)]
struct Saw {
    calls: usize,
    rdma_reads: usize,
    /// `rdma_proc` of the client's answer to a reverse-direction call.
    reverse_answer: Option<u32>,
}

/// Serves one connection with `attack`; keeps it open until the client
/// closes it.
async fn serve_one(s: TcpStream, attack: Attack) -> std::io::Result<Saw> {
    let mut c = Conn::accept(s).await?;
    let mut saw = Saw::default();
    let mut reads = 0;
    let Some(call) = c.next_send(&mut reads).await else {
        return Ok(saw);
    };
    saw.calls += 1;
    let o = parse_call(&call);
    let filler = vec![0xa5u8; 16 << 10];
    match attack {
        Attack::Honest => c.honest_reply(&o).await?,
        Attack::ClaimWrite => {
            let (h, _, to) = o.write;
            let mut m = words(&[o.xid, 1, 8, 0, 0, 1, 1, h, ATTACK]);
            m.extend_from_slice(&to.to_be_bytes());
            m.extend(words(&[0, 0]));
            m.extend(words(&[o.xid, 1, 0, 0, 0, 0, 0, 0, ATTACK]));
            c.send(&m).await?;
        }
        Attack::ClaimReply => {
            // The demo READ's reduced reply fits inline, so the client
            // offers no Reply chunk: claim one anyway, over its Write
            // chunk's handle (a Reply chunk offered is claimed the same way).
            let (h, _, to) = o.reply.unwrap_or(o.write);
            let mut m = words(&[o.xid, 1, 8, 1, 0, 0, 1, 1, h, ATTACK]);
            m.extend_from_slice(&to.to_be_bytes());
            c.send(&m).await?;
        }
        Attack::WriteBeyond => {
            let (h, _, to) = o.write;
            let _ = c.write(h, to, &filler, ATTACK).await;
        }
        Attack::WriteElsewhere => {
            let (h, _, to) = o.write;
            let _ = c.write(h ^ 0x5a5a_0000, to, &filler, ATTACK).await;
        }
        Attack::OversizedSend => {
            let mut m = words(&[o.xid, 1, 8, 0, 0, 0, 0]);
            m.extend(words(&[o.xid, 1, 0, 0, 0, 0, 0, 0, 60 << 10]));
            m.extend(vec![0x3c; 60 << 10]);
            c.send(&m).await?;
        }
        Attack::ReverseCall => {
            // RDMA_MSG, a CALL (its RPC msg_type), one Read chunk of
            // ATTACK octets at Position 44 (after the call header and an
            // opaque's length word) naming a made-up region.
            let rxid = 0x7e57_0001;
            let mut m = words(&[rxid, 1, 8, 0, 1, 44, 0x1234_5678, ATTACK, 0, 0x10_0000, 0]);
            m.extend(words(&[0, 0]));
            m.extend(words(&[rxid, 0, 2, 0x2052_4443, 1, 1, 0, 0, 0, 0, ATTACK]));
            c.send(&m).await?;
            if let Some(answer) = c.next_send(&mut reads).await {
                let w = |i: usize| u32::from_be_bytes(answer[i..i + 4].try_into().unwrap());
                if answer.len() >= 16 && w(0) == rxid {
                    saw.reverse_answer = Some(w(12));
                }
            }
            c.honest_reply(&o).await?;
        }
    }
    // Until the client goes (its reads are noted).
    while c.next_send(&mut reads).await.is_some() {
        saw.calls += 1;
    }
    saw.rdma_reads = reads;
    Ok(saw)
}

/// Peak (VmSize, VmRSS) of a process while it runs.
fn sample_until_exit(pid: u32, done: Arc<AtomicBool>) -> std::thread::JoinHandle<(u64, u64)> {
    std::thread::spawn(move || {
        let path = format!("/proc/{pid}/status");
        let mut peak = (0u64, 0u64);
        while !done.load(Ordering::Relaxed) {
            if let Ok(text) = std::fs::read_to_string(&path) {
                let field = |name: &str| {
                    text.lines()
                        .find_map(|l| l.strip_prefix(name))
                        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
                        .unwrap_or(0)
                        * 1024
                };
                // The peaks the kernel keeps, so that nothing between two
                // samples is missed.
                peak.0 = peak.0.max(field("VmPeak:")).max(field("VmSize:"));
                peak.1 = peak.1.max(field("VmHWM:")).max(field("VmRSS:"));
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        peak
    })
}

/// Runs `rpcrdma call ADDR demo read --size COUNT` against a hostile
/// server doing `attack` on every connection: (exit code, output, peak
/// VmSize, peak VmRSS, what the server saw).
fn run(attack: Attack) -> (i32, String, u64, u64, Vec<Saw>) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let listener = rt.block_on(TcpListener::bind("127.0.0.1:0")).unwrap();
    let addr: SocketAddr = listener.local_addr().unwrap();
    let saws = Arc::new(Mutex::new(Vec::new()));
    let s2 = saws.clone();
    let server = rt.spawn(async move {
        // The client may reconnect and retransmit: every connection gets
        // the same treatment.
        loop {
            let Ok((s, _)) = listener.accept().await else {
                return;
            };
            let s2 = s2.clone();
            tokio::spawn(async move {
                if let Ok(saw) = serve_one(s, attack).await {
                    s2.lock().unwrap().push(saw);
                }
            });
        }
    });
    let mut child = Command::new(env!("CARGO_BIN_EXE_rpcrdma"))
        .args(["call", &addr.to_string(), "demo", "read", "--size"])
        .arg(COUNT.to_string())
        .args([
            "--rdma-version",
            "1",
            "--mpa-revision",
            "1",
            "--timeout",
            "20",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run rpcrdma call");
    let done = Arc::new(AtomicBool::new(false));
    let sampler = sample_until_exit(child.id(), done.clone());
    let t = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(
            t.elapsed() < Duration::from_secs(60),
            "{attack:?}: rpcrdma call still running"
        );
        std::thread::sleep(Duration::from_millis(10));
    };
    done.store(true, Ordering::Relaxed);
    let (vsz, rss) = sampler.join().unwrap();
    let mut out = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    // Let the server see the connections end.
    std::thread::sleep(Duration::from_millis(100));
    server.abort();
    drop(rt);
    let saws = saws.lock().unwrap().clone();
    (status.code().unwrap_or(-1), out, vsz, rss, saws)
}

#[test]
fn a_hostile_server_cannot_make_the_client_allocate_beyond_its_chunks() {
    let (code, out, vsz0, rss0, saws) = run(Attack::Honest);
    assert_eq!(code, 0, "honest: {out}");
    assert!(out.contains("READ of 65536 bytes verified"), "{out}");
    assert_eq!(saws.len(), 1, "{saws:?}");
    eprintln!(
        "honest: peak VmSize {} MiB VmRSS {} MiB",
        vsz0 / MIB,
        rss0 / MIB
    );
    for attack in [
        Attack::ClaimWrite,
        Attack::ClaimReply,
        Attack::WriteBeyond,
        Attack::WriteElsewhere,
        Attack::OversizedSend,
        Attack::ReverseCall,
    ] {
        let (code, out, vsz, rss, saws) = run(attack);
        eprintln!(
            "{attack:?}: exit {code}, peak VmSize {} MiB VmRSS {} MiB, {} connection(s); {}",
            vsz / MIB,
            rss / MIB,
            saws.len(),
            out.lines().next().unwrap_or("")
        );
        match attack {
            Attack::ClaimWrite => {
                assert_eq!(code, 1, "{attack:?}: {out}");
                assert!(
                    out.contains("failed") && out.contains("claims more bytes than were provided"),
                    "{attack:?}: {out}"
                );
            }
            // The call offered no Reply chunk (its reduced reply fits
            // inline): a reply through one is refused as such. (A returned
            // Reply chunk longer than offered goes through the same check
            // as ClaimWrite's Write chunk, `written_len`.)
            Attack::ClaimReply => {
                assert_eq!(code, 1, "{attack:?}: {out}");
                assert!(
                    out.contains("failed") && out.contains("the call provided no Reply chunk"),
                    "{attack:?}: {out}"
                );
            }
            Attack::WriteBeyond | Attack::WriteElsewhere | Attack::OversizedSend => {
                assert_eq!(code, 1, "{attack:?}: {out}");
                assert!(out.contains("failed"), "{attack:?}: {out}");
            }
            Attack::ReverseCall => {
                assert_eq!(code, 0, "{attack:?}: {out}");
                assert!(out.contains("READ of 65536 bytes verified"), "{out}");
                // RDMA_ERROR (4): refused without pulling the chunk.
                assert_eq!(saws[0].reverse_answer, Some(4), "{saws:?}");
                assert_eq!(saws[0].rdma_reads, 0, "{saws:?}");
            }
            Attack::Honest => unreachable!(),
        }
        assert!(
            rss <= rss0 + OVERHEAD_RSS,
            "{attack:?}: VmRSS {} MiB > honest {} + {} MiB",
            rss / MIB,
            rss0 / MIB,
            OVERHEAD_RSS / MIB
        );
        assert!(
            vsz <= vsz0 + OVERHEAD_VSZ,
            "{attack:?}: VmSize {} MiB > honest {} + {} MiB",
            vsz / MIB,
            vsz0 / MIB,
            OVERHEAD_VSZ / MIB
        );
    }
}
