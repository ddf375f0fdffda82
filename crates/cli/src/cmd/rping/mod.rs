//! `rpcrdma rping`: rdma-core's `rping` (librdmacm/examples/rping.c),
//! client and server, over the verbs interface with the software iWARP
//! provider. It speaks rping's wire protocol, so either side can face the
//! real `rping` running on Linux siw (or any RNIC).
//!
//! One ping, as rping does it:
//!
//! 1. the client fills its source buffer with the rping pattern
//!    (`rdma-ping-N: ` then letters `A`..`z` cycling, a NUL last) and Sends
//!    a 16-octet `rping_rdma_info` {addr: u64, rkey: u32, size: u32, big
//!    endian} naming it;
//! 2. the server RDMA Reads the buffer, then Sends a "go ahead" (16 octets);
//! 3. the client Sends the `rping_rdma_info` of its (empty) sink buffer;
//! 4. the server RDMA Writes what it read (up to and including the first
//!    NUL) into the sink, then Sends another "go ahead";
//! 5. the client compares sink and source.
//!
//! The connection carries no private data (rping sends none); MPA revision,
//! CRC and the peer-to-peer ready-to-receive mode are options.

mod wire;

use std::collections::VecDeque;
use std::io::Write;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context};
use bytes::{Bytes, BytesMut};
use clap::{Args, ValueEnum};
use rpcrdma_softiwarp::{Cq, Options, P2pMode, Pd, Qp, SoftIwarp, DEFAULT_FIRST_FPDU_DELAY};

use rpcrdma_verbs::{
    Access, CompletionQueue, ConnectRequest, Device, DisconnectReason, Listener, MemoryRegion,
    ProtectionDomain, QpCaps, QpParams, QueuePair, RecvWr, SendWr, Sge, WcOpcode, WcStatus,
    WorkCompletion,
};

pub(crate) use wire::{
    c_string, c_string_len, mismatch, pattern, Info, INFO_LEN, MAX_SIZE, MIN_SIZE,
};

/// rping's default port.
const DEFAULT_PORT: u16 = 7174;
/// Receive buffers are larger than the 16 octets expected, so a wrong-sized
/// message is reported rather than failing the connection.
const RECV_BUF: usize = 64;

/// Peer-to-peer ready-to-receive mode (MPA revision 2, RFC 6581).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum P2pArg {
    /// No peer-to-peer mode.
    Off,
    /// Zero-length RDMA Write as RTR (what Linux siw wants).
    Write,
    /// Zero-length RDMA Read as RTR.
    Read,
    /// Offer both; the responder picks.
    Any,
}

impl From<P2pArg> for P2pMode {
    fn from(a: P2pArg) -> P2pMode {
        match a {
            P2pArg::Off => P2pMode::Off,
            P2pArg::Write => P2pMode::Write,
            P2pArg::Read => P2pMode::Read,
            P2pArg::Any => P2pMode::Any,
        }
    }
}

/// Arguments of `rpcrdma rping` (rping's own letters where it has them).
#[derive(Debug, Args)]
#[command(group = clap::ArgGroup::new("role").required(true).args(["server", "client"]))]
pub(crate) struct RpingArgs {
    /// Server: listen, serve one client until it disconnects.
    #[arg(short = 's', long)]
    server: bool,
    /// Client: connect to the server at --addr.
    #[arg(short = 'c', long)]
    client: bool,
    /// Client: the server's address (name or IP). Server: the address to
    /// listen on (default 0.0.0.0).
    #[arg(short = 'a', long)]
    addr: Option<String>,
    /// Port.
    #[arg(short = 'p', long, default_value_t = DEFAULT_PORT)]
    port: u16,
    /// Pings: client: how many to make (0: until interrupted); server: how
    /// many to expect (0: any number).
    #[arg(short = 'C', long, default_value_t = 0, value_parser = clap::value_parser!(u32).range(0..=i32::MAX as i64))]
    count: u32,
    /// Ping data size in octets (client: its buffers; server: the largest
    /// buffer it reads).
    #[arg(short = 'S', long, default_value_t = 64, value_parser = clap::value_parser!(u32).range(MIN_SIZE as i64..=MAX_SIZE as i64))]
    size: u32,
    /// Verify the data (the default; accepted for rping compatibility).
    #[arg(short = 'V', long, conflicts_with = "no_verify")]
    verify: bool,
    /// Do not verify the data (client: sink against source; server: the
    /// rping pattern of what it read).
    #[arg(long)]
    no_verify: bool,
    /// Print the ping data, as rping -v does.
    #[arg(short = 'v', long)]
    verbose: bool,
    /// MPA revision to request (1 or 2).
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u8).range(1..=2))]
    mpa_revision: u8,
    /// Ask for MPA CRC32c on every FPDU.
    #[arg(long)]
    crc: bool,
    /// Peer-to-peer mode to offer (client, MPA revision 2).
    #[arg(long, value_enum, default_value = "write")]
    p2p: P2pArg,
    /// Client: milliseconds to wait after the MPA Reply before sending
    /// anything (the RTR or the first message): Linux siw ignores data that
    /// arrives right behind its Reply.
    #[arg(long, default_value_t = DEFAULT_FIRST_FPDU_DELAY.as_millis() as u64)]
    first_fpdu_delay_ms: u64,
    /// Seconds allowed for each step (connection set-up, each completion).
    #[arg(long, default_value_t = 10)]
    timeout: u64,
    /// Server: seconds to wait for a client (0: forever).
    #[arg(long, default_value_t = 0)]
    accept_timeout: u64,
    /// Client: keep retrying for up to this many seconds while the server
    /// is not listening yet (connection refused or closed before the MPA
    /// Reply).
    #[arg(long, default_value_t = 0)]
    connect_wait: u64,
}

/// What one run needs, independent of the command line.
#[derive(Debug, Clone)]
pub(crate) struct Settings {
    pub(crate) count: u32,
    pub(crate) size: u32,
    pub(crate) verify: bool,
    pub(crate) verbose: bool,
    pub(crate) timeout: Duration,
    pub(crate) options: Options,
}

/// How a run ended.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Summary {
    /// Pings completed (all steps done).
    pub(crate) pings: u32,
    /// Of those, how many had their data verified.
    pub(crate) verified: u32,
    /// What went wrong (empty on success).
    pub(crate) failure: Option<String>,
}

impl Summary {
    fn ok(&self, s: &Settings) -> bool {
        self.failure.is_none()
            && self.pings > 0
            && (s.count == 0 || self.pings == s.count)
            && (!s.verify || self.verified == self.pings)
    }
}

/// Runs `rpcrdma rping`.
pub(crate) fn run(args: RpingArgs) -> anyhow::Result<ExitCode> {
    let settings = Settings {
        count: args.count,
        size: args.size,
        verify: !args.no_verify,
        verbose: args.verbose,
        timeout: Duration::from_secs(args.timeout.max(1)),
        options: Options {
            revision: args.mpa_revision,
            crc: args.crc,
            p2p: args.p2p.into(),
            first_fpdu_delay: Duration::from_millis(args.first_fpdu_delay_ms),
            ..Options::default()
        },
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let dev = SoftIwarp::new();
    let mut out = std::io::stdout();
    let role = if args.server { "server" } else { "client" };
    let summary = rt.block_on(async {
        if args.server {
            let ip = match &args.addr {
                Some(a) => resolve(a, args.port).await?.ip(),
                None => IpAddr::V4(Ipv4Addr::UNSPECIFIED),
            };
            let accept_timeout =
                (args.accept_timeout > 0).then(|| Duration::from_secs(args.accept_timeout));
            let listener = dev
                .listen(SocketAddr::new(ip, args.port), settings.options.clone())
                .await
                .with_context(|| format!("cannot listen on {ip} port {}", args.port))?;
            run_server(&dev, &listener, accept_timeout, &settings, &mut out).await
        } else {
            let Some(a) = &args.addr else {
                bail!("the client needs the server's address: -a ADDR");
            };
            let addr = resolve(a, args.port).await?;
            let wait = Duration::from_secs(args.connect_wait);
            run_client(&dev, addr, wait, &settings, &mut out).await
        }
    })?;
    let ok = summary.ok(&settings);
    let _ = writeln!(
        out,
        "rping {role}: {} | {} ping(s) done{}, {} verified{}",
        if ok { "PASS" } else { "FAIL" },
        summary.pings,
        if settings.count > 0 {
            format!(" of {}", settings.count)
        } else {
            String::new()
        },
        summary.verified,
        match &summary.failure {
            Some(f) => format!(" | {f}"),
            None if !settings.verify => " | verification off (--no-verify)".into(),
            None => String::new(),
        }
    );
    Ok(if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

async fn resolve(host: &str, port: u16) -> anyhow::Result<SocketAddr> {
    let mut addrs = tokio::net::lookup_host((host, port))
        .await
        .with_context(|| format!("cannot resolve {host:?}"))?;
    addrs
        .next()
        .ok_or_else(|| anyhow!("{host:?} has no address"))
}

// ------------------------------------------------------------------ verbs

/// Why waiting for a completion stopped.
#[derive(Debug)]
enum WaitError {
    /// The connection ended (a flushed work request, or closed).
    Closed(DisconnectReason),
    /// Nothing happened in time.
    Timeout(&'static str),
    /// A work request failed.
    Failed(String),
}

impl std::fmt::Display for WaitError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WaitError::Closed(r) => write!(f, "the connection ended: {}", reason(r)),
            WaitError::Timeout(what) => write!(
                f,
                "timed out waiting for {what} (is the peer an rping? raise --timeout if it is slow)"
            ),
            WaitError::Failed(s) => f.write_str(s),
        }
    }
}

fn reason(r: &DisconnectReason) -> String {
    match r {
        DisconnectReason::Local => "closed locally".into(),
        DisconnectReason::Peer => "the peer disconnected".into(),
        DisconnectReason::RemoteTerminate { layer, etype, code } => format!(
            "the peer sent an iWARP Terminate (layer {layer}, type {etype:#x}, code {code:#04x})"
        ),
        DisconnectReason::ProtocolError { reason } => format!("protocol error: {reason}"),
        DisconnectReason::Transport { reason } => format!("transport error: {reason}"),
        other => format!("{other:?}"),
    }
}

/// One connected queue pair with its domain and completion queue.
struct Conn {
    qp: Qp,
    pd: Pd,
    cq: Cq,
    timeout: Duration,
    wcs: VecDeque<WorkCompletion>,
    next_wr: u64,
}

/// Completion queue depth: a handful of outstanding requests at most.
const CQ_DEPTH: usize = 64;

fn caps() -> QpCaps {
    QpCaps {
        send_depth: 16,
        recv_depth: 4,
        ..QpCaps::default()
    }
}

impl Conn {
    fn new(qp: Qp, pd: Pd, cq: Cq, timeout: Duration) -> Self {
        Conn {
            qp,
            pd,
            cq,
            timeout,
            wcs: VecDeque::new(),
            next_wr: 1,
        }
    }

    fn wr_id(&mut self) -> u64 {
        self.next_wr += 1;
        self.next_wr
    }

    fn post_recv(&mut self) -> anyhow::Result<()> {
        let wr_id = self.wr_id();
        self.qp
            .post_recv(RecvWr {
                wr_id,
                buf: BytesMut::zeroed(RECV_BUF),
            })
            .context("cannot post a receive")
    }

    fn send(&mut self, msg: &[u8]) -> anyhow::Result<()> {
        let wr_id = self.wr_id();
        self.qp
            .post_send(SendWr::send(
                wr_id,
                vec![Sge::Bytes(Bytes::copy_from_slice(msg))],
            ))
            .context("cannot post a Send")
    }

    async fn next_wc(&mut self, what: &'static str) -> Result<WorkCompletion, WaitError> {
        loop {
            if let Some(wc) = self.wcs.pop_front() {
                return Ok(wc);
            }
            let mut got = Vec::new();
            if self.cq.poll(&mut got, CQ_DEPTH) == 0 {
                tokio::time::timeout(self.timeout, self.cq.wait())
                    .await
                    .map_err(|_| WaitError::Timeout(what))?;
                self.cq.poll(&mut got, CQ_DEPTH);
            }
            self.wcs.extend(got);
        }
    }

    /// Waits for the next completion of kind `op`; Send completions met on
    /// the way are consumed (Sends complete on their own schedule).
    async fn wait_for(
        &mut self,
        op: WcOpcode,
        what: &'static str,
    ) -> Result<WorkCompletion, WaitError> {
        loop {
            let wc = self.next_wc(what).await?;
            match wc.status {
                WcStatus::Success => {}
                WcStatus::WrFlush => {
                    let r = tokio::time::timeout(Duration::from_secs(1), self.qp.closed())
                        .await
                        .unwrap_or(DisconnectReason::Peer);
                    return Err(WaitError::Closed(r));
                }
                status => {
                    let r = tokio::time::timeout(Duration::from_millis(200), self.qp.closed())
                        .await
                        .map(|r| format!(" ({})", reason(&r)))
                        .unwrap_or_default();
                    return Err(WaitError::Failed(format!(
                        "{:?} work request failed with {status:?} while waiting for {what}{r}",
                        wc.opcode
                    )));
                }
            }
            if wc.opcode == op {
                return Ok(wc);
            }
            if wc.opcode != WcOpcode::Send {
                return Err(WaitError::Failed(format!(
                    "unexpected {:?} completion while waiting for {what}",
                    wc.opcode
                )));
            }
        }
    }

    /// Waits for a 16-octet message and posts the receive again.
    async fn recv_info(&mut self, what: &'static str) -> Result<Info, WaitError> {
        let wc = self.wait_for(WcOpcode::Recv, what).await?;
        self.post_recv()
            .map_err(|e| WaitError::Failed(format!("{e:#}")))?;
        Info::decode(wc.data().unwrap_or_default()).ok_or_else(|| {
            WaitError::Failed(format!(
                "received bogus data while waiting for {what}: {} octets, expected {INFO_LEN}",
                wc.byte_len
            ))
        })
    }

    async fn close(self) {
        let _ = tokio::time::timeout(self.timeout, self.qp.disconnect()).await;
    }
}

fn describe(qp: &Qp) -> String {
    match qp.negotiated() {
        Some(n) => format!(
            "MPA revision {}, CRC {}, IRD {} ORD {}, RTR {}",
            n.revision,
            if n.crc { "on" } else { "off" },
            n.ird,
            n.ord,
            match n.rtr {
                Some(r) => format!("{r:?}").to_lowercase(),
                None => "none".into(),
            }
        ),
        None => "not connected".into(),
    }
}

// ------------------------------------------------------------------ client

/// Connects to an rping server at `addr` and makes `s.count` pings
/// (forever if 0). Errors are set-up failures; failures during the pings
/// are in the summary.
pub(crate) async fn run_client(
    dev: &SoftIwarp,
    addr: SocketAddr,
    connect_wait: Duration,
    s: &Settings,
    out: &mut dyn Write,
) -> anyhow::Result<Summary> {
    let mut conn = connect(dev, addr, connect_wait, s).await?;
    let _ = writeln!(
        out,
        "rping client: connected to {addr} ({})",
        describe(&conn.qp)
    );
    let mut summary = Summary::default();
    let mut ping = 0u32;
    while s.count == 0 || ping < s.count {
        let t = Instant::now();
        match client_ping(&mut conn, ping, s).await {
            Ok(verified) => {
                summary.pings += 1;
                summary.verified += u32::from(verified.is_some());
                if let Some(data) = verified.as_deref().filter(|_| s.verbose) {
                    let _ = writeln!(out, "ping data: {}", c_string(data));
                }
                let _ = writeln!(
                    out,
                    "ping {ping}: {} octets: Send source, server RDMA Read, Send sink, server RDMA Write: {} ({:.3} ms)",
                    s.size,
                    if verified.is_some() { "verified" } else { "not verified" },
                    t.elapsed().as_secs_f64() * 1e3
                );
            }
            Err(e) => {
                summary.failure = Some(format!("ping {ping}: {e}"));
                break;
            }
        }
        ping = ping.wrapping_add(1);
    }
    conn.close().await;
    Ok(summary)
}

async fn connect(
    dev: &SoftIwarp,
    addr: SocketAddr,
    wait: Duration,
    s: &Settings,
) -> anyhow::Result<Conn> {
    let deadline = Instant::now() + wait;
    let mut attempts = 0u32;
    loop {
        attempts += 1;
        let pd = dev.alloc_pd().expect("protection domain");
        let cq = dev.create_cq(CQ_DEPTH).expect("completion queue");
        let params = QpParams {
            pd: &pd,
            send_cq: &cq,
            recv_cq: &cq,
            caps: caps(),
            options: s.options.clone(),
        };
        let res = tokio::time::timeout(s.timeout, dev.connect(addr, params, Bytes::new())).await;
        match res {
            Ok(Ok((qp, _private))) => {
                let mut conn = Conn::new(qp, pd, cq, s.timeout);
                // The server sends nothing before our first message.
                conn.post_recv()?;
                return Ok(conn);
            }
            Ok(Err(e)) if e.is_transient() && Instant::now() < deadline => {
                tracing::debug!(error = %e, attempts, "server not ready; retrying");
                tokio::time::sleep(Duration::from_millis(250)).await;
            }
            Ok(Err(e)) => {
                return Err(anyhow!(e)).with_context(|| {
                    format!("cannot connect to the rping server at {addr} ({attempts} attempt(s))")
                })
            }
            Err(_) => bail!(
                "connecting to {addr} timed out after {} s (is an rping server listening there?)",
                s.timeout.as_secs()
            ),
        }
    }
}

/// One ping. Returns the data written back if it was verified.
async fn client_ping(
    conn: &mut Conn,
    ping: u32,
    s: &Settings,
) -> Result<Option<Vec<u8>>, WaitError> {
    let failed = |what: &str, e: &dyn std::fmt::Display| WaitError::Failed(format!("{what}: {e}"));
    let size = s.size as usize;
    let data = Bytes::from(pattern(ping, size));
    // The source: the server RDMA Reads it.
    let src = conn
        .pd
        .register_bytes(data.clone(), Access::REMOTE_READ)
        .map_err(|e| failed("cannot register the source buffer", &e))?;
    let info = Info {
        addr: src.addr(),
        rkey: src.rkey(),
        size: s.size,
    };
    conn.send(&info.encode())
        .map_err(|e| failed("source advertisement", &format!("{e:#}")))?;
    let go = conn
        .recv_info("the server's go-ahead after its RDMA Read")
        .await;
    // The region is done with either way.
    let _ = src.deregister();
    go?;

    // The sink: the server RDMA Writes into it; zeroed, so stale data
    // cannot pass the check.
    let sink = conn
        .pd
        .register_mut(
            BytesMut::zeroed(size),
            Access::LOCAL_WRITE | Access::REMOTE_WRITE,
        )
        .map_err(|e| failed("cannot register the sink buffer", &e))?;
    let info = Info {
        addr: sink.addr(),
        rkey: sink.rkey(),
        size: s.size,
    };
    conn.send(&info.encode())
        .map_err(|e| failed("sink advertisement", &format!("{e:#}")))?;
    let go = conn
        .recv_info("the server's go-ahead after its RDMA Write")
        .await;
    let back = sink
        .deregister()
        .map_err(|e| failed("cannot deregister the sink buffer", &e))?
        .freeze();
    go?;
    if !s.verify {
        return Ok(None);
    }
    match mismatch(&back, &data) {
        None => Ok(Some(back.to_vec())),
        Some(m) => Err(WaitError::Failed(format!(
            "data mismatch: the sink does not hold what the source did ({m})"
        ))),
    }
}

// ------------------------------------------------------------------ server

/// Accepts one client on `listener` and serves its pings until it
/// disconnects.
pub(crate) async fn run_server(
    dev: &SoftIwarp,
    listener: &<SoftIwarp as Device>::Listener,
    accept_timeout: Option<Duration>,
    s: &Settings,
    out: &mut dyn Write,
) -> anyhow::Result<Summary> {
    let _ = writeln!(
        out,
        "rping server: listening on {} (software iWARP)",
        listener.local_addr()
    );
    let _ = out.flush();
    let req = match accept_timeout {
        Some(t) => tokio::time::timeout(t, listener.accept())
            .await
            .map_err(|_| anyhow!("no client connected within {} s", t.as_secs()))?,
        None => listener.accept().await,
    }
    .context("waiting for a connection request failed")?;
    let peer = req.peer_addr();
    let info = req.info().clone();
    let (pd, cq) = (
        dev.alloc_pd().expect("protection domain"),
        dev.create_cq(CQ_DEPTH).expect("completion queue"),
    );
    let params = QpParams {
        pd: &pd,
        send_cq: &cq,
        recv_cq: &cq,
        caps: caps(),
        options: s.options.clone(),
    };
    let qp = tokio::time::timeout(s.timeout, req.accept(params, Bytes::new()))
        .await
        .map_err(|_| anyhow!("accepting the connection from {peer} timed out"))?
        .with_context(|| format!("cannot accept the connection from {peer}"))?;
    let mut conn = Conn::new(qp, pd, cq, s.timeout);
    // Posted before anything else runs on this (single-threaded) runtime,
    // so before the client's first Send can be processed.
    conn.post_recv()?;
    let _ = writeln!(
        out,
        "rping server: connection from {peer}: MPA request revision {}{}{}, {} octets of private data; accepted ({})",
        info.revision,
        if info.crc { ", CRC" } else { "" },
        match info.ird_ord {
            Some(w) => format!(
                ", IRD {} ORD {}{}",
                w.ird,
                w.ord,
                if w.peer_to_peer { ", peer-to-peer" } else { "" }
            ),
            None => String::new(),
        },
        info.private_data.len(),
        describe(&conn.qp)
    );

    let mut summary = Summary::default();
    let mut ping = 0u32;
    loop {
        let t = Instant::now();
        let src = match conn.recv_info("the client's source advertisement").await {
            Ok(i) => i,
            // The client is done: rping clients disconnect after their count.
            Err(WaitError::Closed(DisconnectReason::Peer)) => break,
            Err(WaitError::Closed(DisconnectReason::Transport { reason })) => {
                let _ = writeln!(out, "rping server: the client left ({reason})");
                break;
            }
            Err(e) => {
                summary.failure = Some(format!("ping {ping}: {e}"));
                break;
            }
        };
        if s.count > 0 && ping >= s.count {
            summary.failure = Some(format!(
                "the client sent more than the {} pings expected (-C)",
                s.count
            ));
            break;
        }
        match server_ping(&mut conn, ping, src, s).await {
            Ok((data, verified)) => {
                summary.pings += 1;
                summary.verified += u32::from(verified);
                if s.verbose {
                    let _ = writeln!(out, "server ping data: {}", c_string(&data));
                }
                let _ = writeln!(
                    out,
                    "ping {ping}: RDMA Read {} octets, RDMA Write {} octets back: {} ({:.3} ms)",
                    data.len(),
                    c_string_len(&data),
                    if verified {
                        "rping pattern verified"
                    } else {
                        "not verified"
                    },
                    t.elapsed().as_secs_f64() * 1e3
                );
            }
            Err(e) => {
                summary.failure = Some(format!("ping {ping}: {e}"));
                break;
            }
        }
        ping = ping.wrapping_add(1);
    }
    conn.close().await;
    Ok(summary)
}

/// One ping, from the source advertisement on. Returns the data read and
/// whether it was verified.
async fn server_ping(
    conn: &mut Conn,
    ping: u32,
    src: Info,
    s: &Settings,
) -> Result<(Bytes, bool), WaitError> {
    let failed = |what: &str, e: &dyn std::fmt::Display| WaitError::Failed(format!("{what}: {e}"));
    if src.size > s.size {
        return Err(WaitError::Failed(format!(
            "the client's buffer ({} octets) is larger than ours ({}); run the server with -S {} or more",
            src.size, s.size, src.size
        )));
    }
    let len = src.size as usize;
    // RDMA Read the client's source into our sink.
    let sink = conn
        .pd
        .register_mut(BytesMut::zeroed(len), Access::LOCAL_WRITE)
        .map_err(|e| failed("cannot register the read sink", &e))?;
    let wr_id = conn.wr_id();
    let posted = conn.qp.post_send(SendWr::read(
        wr_id,
        sink.sge(0, len),
        rpcrdma_verbs::RemoteAddr {
            rkey: src.rkey,
            addr: src.addr,
        },
    ));
    let done = match posted {
        Ok(()) => conn
            .wait_for(WcOpcode::RdmaRead, "our RDMA Read of the client's source")
            .await
            .map(|_| ()),
        Err(e) => Err(failed("cannot post the RDMA Read", &e)),
    };
    let data = sink
        .deregister()
        .map_err(|e| failed("cannot deregister the read sink", &e))?
        .freeze();
    done?;
    let verified = if s.verify {
        if let Some(m) = mismatch(&data, &pattern(ping, len)) {
            return Err(WaitError::Failed(format!(
                "the data read is not rping's pattern for ping {ping}: {m}"
            )));
        }
        true
    } else {
        false
    };

    // Go ahead (rping sends its never-filled send buffer: 16 zero octets).
    conn.send(&[0u8; INFO_LEN])
        .map_err(|e| failed("go-ahead", &format!("{e:#}")))?;
    let dst = conn.recv_info("the client's sink advertisement").await?;

    // RDMA Write the data back, up to and including its NUL.
    let wlen = c_string_len(&data);
    if wlen > dst.size as usize {
        return Err(WaitError::Failed(format!(
            "the client's sink ({} octets) is smaller than the {wlen} octets to write back",
            dst.size
        )));
    }
    let source = conn
        .pd
        .register_bytes(data.slice(..wlen), Access::LOCAL_READ)
        .map_err(|e| failed("cannot register the write source", &e))?;
    let wr_id = conn.wr_id();
    let posted = conn.qp.post_send(SendWr::write(
        wr_id,
        vec![Sge::Region(source.sge(0, wlen))],
        rpcrdma_verbs::RemoteAddr {
            rkey: dst.rkey,
            addr: dst.addr,
        },
    ));
    let done = match posted {
        Ok(()) => conn
            .wait_for(WcOpcode::RdmaWrite, "our RDMA Write into the client's sink")
            .await
            .map(|_| ()),
        Err(e) => Err(failed("cannot post the RDMA Write", &e)),
    };
    let _ = source.deregister();
    done?;
    conn.send(&[0u8; INFO_LEN])
        .map_err(|e| failed("go-ahead", &format!("{e:#}")))?;
    Ok((data, verified))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(count: u32, size: u32, options: Options) -> Settings {
        Settings {
            count,
            size,
            verify: true,
            verbose: true,
            timeout: Duration::from_secs(10),
            options,
        }
    }

    async fn listener(options: &Options) -> (SoftIwarp, <SoftIwarp as Device>::Listener) {
        let dev = SoftIwarp::new();
        let l = dev
            .listen("127.0.0.1:0".parse().unwrap(), options.clone())
            .await
            .unwrap();
        (dev, l)
    }

    /// Client and server of ours on loopback, in every MPA mode.
    #[tokio::test(flavor = "current_thread")]
    async fn client_and_server_agree_in_every_mpa_mode() {
        let modes = [
            (2, false, P2pMode::Write),
            (2, true, P2pMode::Read),
            (2, false, P2pMode::Off),
            (1, true, P2pMode::Off),
        ];
        for (revision, crc, p2p) in modes {
            let options = Options {
                revision,
                crc,
                p2p,
                first_fpdu_delay: Duration::ZERO,
                ..Options::default()
            };
            let s = settings(4, 100, options.clone());
            let (dev, l) = listener(&options).await;
            let addr = l.local_addr();
            let (mut so, mut co) = (Vec::new(), Vec::new());
            let (srv, cli) = tokio::join!(
                run_server(&dev, &l, Some(Duration::from_secs(10)), &s, &mut so),
                run_client(&dev, addr, Duration::ZERO, &s, &mut co)
            );
            let (srv, cli) = (srv.unwrap(), cli.unwrap());
            let (so, co) = (
                String::from_utf8(so).unwrap(),
                String::from_utf8(co).unwrap(),
            );
            assert!(cli.ok(&s), "{cli:?}\n{co}");
            assert!(srv.ok(&s), "{srv:?}\n{so}");
            assert_eq!((cli.pings, cli.verified, srv.verified), (4, 4, 4));
            assert!(
                co.contains(&format!(
                    "MPA revision {revision}, CRC {}",
                    if crc { "on" } else { "off" }
                )),
                "{co}"
            );
            assert!(co.contains("ping data: rdma-ping-3: DEFG"), "{co}");
            assert!(so.contains("server ping data: rdma-ping-3: DEFG"), "{so}");
        }
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_server_with_a_smaller_buffer_refuses_and_both_fail() {
        let options = Options::default();
        let (dev, l) = listener(&options).await;
        let addr = l.local_addr();
        let (ss, cs) = (settings(0, 64, options.clone()), settings(2, 100, options));
        let (mut so, mut co) = (Vec::new(), Vec::new());
        let (srv, cli) = tokio::join!(
            async {
                let r = run_server(&dev, &l, None, &ss, &mut so).await;
                r
            },
            run_client(&dev, addr, Duration::ZERO, &cs, &mut co)
        );
        let (srv, cli) = (srv.unwrap(), cli.unwrap());
        assert!(!srv.ok(&ss) && !cli.ok(&cs));
        let f = srv.failure.unwrap();
        assert!(f.contains("run the server with -S 100 or more"), "{f}");
        assert_eq!(cli.pings, 0);
        assert!(cli.failure.unwrap().contains("ping 0"));
    }

    #[tokio::test(flavor = "current_thread")]
    async fn the_server_counts_pings() {
        let options = Options::default();
        let (dev, l) = listener(&options).await;
        let addr = l.local_addr();
        let (ss, cs) = (settings(2, 64, options.clone()), settings(3, 64, options));
        let (mut so, mut co) = (Vec::new(), Vec::new());
        let (srv, cli) = tokio::join!(
            run_server(&dev, &l, None, &ss, &mut so),
            run_client(&dev, addr, Duration::ZERO, &cs, &mut co)
        );
        let (srv, cli) = (srv.unwrap(), cli.unwrap());
        assert_eq!(srv.pings, 2);
        assert!(!srv.ok(&ss));
        assert!(srv.failure.unwrap().contains("more than the 2 pings"));
        assert_eq!(cli.pings, 2);
        assert!(!cli.ok(&cs));
    }

    /// A client that sends the wrong pattern is caught by the server.
    #[tokio::test(flavor = "current_thread")]
    async fn the_server_checks_the_pattern() {
        let options = Options::default();
        let (dev, l) = listener(&options).await;
        let addr = l.local_addr();
        let s = settings(0, 64, options);
        let mut so = Vec::new();
        let (srv, cli) = tokio::join!(run_server(&dev, &l, None, &s, &mut so), async {
            let mut conn = connect(&dev, addr, Duration::ZERO, &s).await.unwrap();
            // Ping number 7 where the server expects 0.
            let r = client_ping(&mut conn, 7, &s).await;
            conn.close().await;
            r
        });
        let srv = srv.unwrap();
        let f = srv.failure.clone().unwrap();
        assert!(f.contains("not rping's pattern for ping 0"), "{f}");
        assert_eq!(srv.pings, 0);
        assert!(cli.is_err());
    }

    /// A server that writes back the wrong data is caught by the client.
    #[tokio::test(flavor = "current_thread")]
    async fn the_client_checks_what_comes_back() {
        let options = Options::default();
        let (dev, l) = listener(&options).await;
        let addr = l.local_addr();
        let s = settings(1, 64, options);
        let lying_server = async {
            let req = l.accept().await.unwrap();
            let (pd, cq) = (
                dev.alloc_pd().expect("protection domain"),
                dev.create_cq(CQ_DEPTH).expect("completion queue"),
            );
            let params = QpParams {
                pd: &pd,
                send_cq: &cq,
                recv_cq: &cq,
                caps: caps(),
                options: Options::default(),
            };
            let qp = req.accept(params, Bytes::new()).await.unwrap();
            let mut conn = Conn::new(qp, pd, cq, s.timeout);
            conn.post_recv().unwrap();
            let _src = conn.recv_info("source").await.unwrap();
            conn.send(&[0; INFO_LEN]).unwrap();
            let dst = conn.recv_info("sink").await.unwrap();
            let mut bad = pattern(0, 64);
            bad[20] ^= 1;
            let wr_id = conn.wr_id();
            conn.qp
                .post_send(SendWr::write(
                    wr_id,
                    vec![Sge::Bytes(Bytes::from(bad))],
                    rpcrdma_verbs::RemoteAddr {
                        rkey: dst.rkey,
                        addr: dst.addr,
                    },
                ))
                .unwrap();
            conn.wait_for(WcOpcode::RdmaWrite, "write").await.unwrap();
            conn.send(&[0; INFO_LEN]).unwrap();
            let _ = conn.wait_for(WcOpcode::Recv, "disconnect").await;
        };
        let mut co = Vec::new();
        let ((), cli) = tokio::join!(
            lying_server,
            run_client(&dev, addr, Duration::ZERO, &s, &mut co)
        );
        let cli = cli.unwrap();
        assert!(!cli.ok(&s));
        let f = cli.failure.unwrap();
        assert!(f.contains("data mismatch") && f.contains("octet 20"), "{f}");
    }

    #[tokio::test(flavor = "current_thread")]
    async fn nobody_listening_is_a_clear_error() {
        let tcp = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = tcp.local_addr().unwrap();
        drop(tcp);
        let dev = SoftIwarp::new();
        let s = settings(1, 64, Options::default());
        let mut co = Vec::new();
        let e = run_client(&dev, addr, Duration::from_millis(600), &s, &mut co)
            .await
            .unwrap_err();
        let msg = format!("{e:#}");
        assert!(msg.contains("cannot connect to the rping server"), "{msg}");
        // Retried while the wait lasted.
        assert!(!msg.contains("(1 attempt(s))"), "{msg}");
    }
}
