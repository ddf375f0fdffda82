//! `rpcrdma rping`: rdma-core's `rping` (librdmacm/examples/rping.c),
//! client and server, over the verbs interface (the software iWARP
//! provider by default). It speaks rping's wire protocol, so either side can face the
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
//! CRC and the peer-to-peer ready-to-receive mode are options of the
//! software iWARP provider. With `--provider rdma-core` the same code runs
//! over an RDMA device (siw, rxe, an adapter).
//!
//! Modules: `wire` (the message and the pattern), `conn` (a connection and
//! its completion helper), `ping` (the ping loop the two roles share,
//! with a run's settings and summary), `client` and `server` (the two
//! roles).

mod client;
mod conn;
mod ping;
mod server;
mod wire;

use std::io::Write;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{anyhow, bail, Context};
use clap::{Args, ValueEnum};
use rpcrdma_softiwarp::{Options, P2pMode, DEFAULT_FIRST_FPDU_DELAY};
use rpcrdma_verbs::Device;

use self::client::run_client;
use self::ping::{Settings, Summary};
use self::server::run_server;
use self::wire::{MAX_SIZE, MIN_SIZE};
use super::provider::{AnyDevice, ProviderOpts, ProviderParams, Setup};
use crate::cmd::{runtime, Scheduler};

/// rping's default port.
const DEFAULT_PORT: u16 = 7174;

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
    /// MPA revision to request (1 or 2; software iWARP).
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
    #[command(flatten)]
    provider: ProviderOpts,
}

/// Runs `rpcrdma rping`.
pub(crate) fn run(args: RpingArgs) -> anyhow::Result<ExitCode> {
    let settings = Settings {
        count: args.count,
        size: args.size,
        verify: !args.no_verify,
        verbose: args.verbose,
        timeout: Duration::from_secs(args.timeout.max(1)),
    };
    if !args.provider.is_softiwarp()
        && (args.crc || args.mpa_revision != 2 || args.p2p != P2pArg::Write)
    {
        bail!("--crc, --mpa-revision and --p2p are software iWARP options; an rdma-core device negotiates MPA itself (iWARP) or has none (InfiniBand/RoCE)");
    }
    let params = ProviderParams {
        softiwarp: Options {
            revision: args.mpa_revision,
            crc: args.crc,
            p2p: args.p2p.into(),
            first_fpdu_delay: Duration::from_millis(args.first_fpdu_delay_ms),
            ..Options::default()
        },
        recv_size: 1024,
    };
    let rt = runtime(Scheduler::CurrentThread)?;
    let role = if args.server { "server" } else { "client" };
    let provider = args.provider.clone();
    let run_settings = settings.clone();
    let summary = rt.block_on(async move {
        let (dev, setup) = provider.open(params)?;
        rping(args, run_settings, dev, setup).await
    })?;
    let mut out = std::io::stdout();
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

/// Runs the client or the server on `dev`.
async fn rping(
    args: RpingArgs,
    settings: Settings,
    dev: AnyDevice,
    setup: Setup,
) -> anyhow::Result<Summary> {
    let mut out = std::io::stdout();
    if args.server {
        let ip = match &args.addr {
            Some(a) => resolve(a, args.port).await?.ip(),
            None => IpAddr::V4(Ipv4Addr::UNSPECIFIED),
        };
        let accept_timeout =
            (args.accept_timeout > 0).then(|| Duration::from_secs(args.accept_timeout));
        let listener = dev
            .listen(SocketAddr::new(ip, args.port), setup.options.clone())
            .await
            .with_context(|| format!("cannot listen on {ip} port {}", args.port))?;
        run_server(&dev, &setup, &listener, accept_timeout, &settings, &mut out).await
    } else {
        let Some(a) = &args.addr else {
            bail!("the client needs the server's address: -a ADDR");
        };
        let addr = resolve(a, args.port).await?;
        let wait = Duration::from_secs(args.connect_wait);
        run_client(&dev, &setup, addr, wait, &settings, &mut out).await
    }
}

async fn resolve(host: &str, port: u16) -> anyhow::Result<SocketAddr> {
    let mut addrs = tokio::net::lookup_host((host, port))
        .await
        .with_context(|| format!("cannot resolve {host:?}"))?;
    addrs
        .next()
        .ok_or_else(|| anyhow!("{host:?} has no address"))
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;
    use rpcrdma_softiwarp::SoftIwarp;
    use rpcrdma_verbs::{ConnectRequest, Listener, QpParams, QueuePair, SendWr, Sge, WcOpcode};

    use super::client::{client_ping, connect};
    use super::conn::{caps, Conn, CQ_DEPTH};
    use super::wire::{pattern, INFO_LEN};
    use super::*;
    use crate::cmd::provider::{AnyListener, AnyOptions};

    /// The setup of a software iWARP device with `options`.
    fn softiwarp_setup(options: Options) -> Setup {
        let mut any = AnyOptions::default();
        any.softiwarp = options;
        Setup {
            options: any,
            label: "software iWARP".into(),
        }
    }

    fn settings(count: u32, size: u32) -> Settings {
        Settings {
            count,
            size,
            verify: true,
            verbose: true,
            timeout: Duration::from_secs(10),
        }
    }

    async fn listener(options: &Options) -> (AnyDevice, AnyListener) {
        let dev = AnyDevice::from(SoftIwarp::new());
        let l = dev
            .listen(
                "127.0.0.1:0".parse().unwrap(),
                softiwarp_setup(options.clone()).options,
            )
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
            let s = settings(4, 100);
            let (dev, l) = listener(&options).await;
            let setup = softiwarp_setup(options.clone());
            let addr = l.local_addr();
            let (mut so, mut co) = (Vec::new(), Vec::new());
            let (srv, cli) = tokio::join!(
                run_server(&dev, &setup, &l, Some(Duration::from_secs(10)), &s, &mut so),
                run_client(&dev, &setup, addr, Duration::ZERO, &s, &mut co)
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
        let setup = softiwarp_setup(options.clone());
        let addr = l.local_addr();
        let (ss, cs) = (settings(0, 64), settings(2, 100));
        let (mut so, mut co) = (Vec::new(), Vec::new());
        let (srv, cli) = tokio::join!(
            async {
                let r = run_server(&dev, &setup, &l, None, &ss, &mut so).await;
                r
            },
            run_client(&dev, &setup, addr, Duration::ZERO, &cs, &mut co)
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
        let setup = softiwarp_setup(options.clone());
        let addr = l.local_addr();
        let (ss, cs) = (settings(2, 64), settings(3, 64));
        let (mut so, mut co) = (Vec::new(), Vec::new());
        let (srv, cli) = tokio::join!(
            run_server(&dev, &setup, &l, None, &ss, &mut so),
            run_client(&dev, &setup, addr, Duration::ZERO, &cs, &mut co)
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
        let setup = softiwarp_setup(options.clone());
        let addr = l.local_addr();
        let s = settings(0, 64);
        let mut so = Vec::new();
        let (srv, cli) = tokio::join!(run_server(&dev, &setup, &l, None, &s, &mut so), async {
            let mut conn = connect(&dev, &setup, addr, Duration::ZERO, &s)
                .await
                .unwrap();
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
        let setup = softiwarp_setup(options.clone());
        let addr = l.local_addr();
        let s = settings(1, 64);
        let lying_server = async {
            let req = l.accept().await.unwrap();
            let (pd, cq) = (
                dev.alloc_pd().expect("protection domain"),
                dev.create_cq(CQ_DEPTH).expect("completion queue"),
            );
            let params = QpParams::new(&pd, &cq, AnyOptions::default()).with_caps(caps());
            let qp = req.accept(params, Bytes::new()).await.unwrap();
            let mut conn: Conn<AnyDevice> = Conn::new(qp, pd, cq, s.timeout);
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
            run_client(&dev, &setup, addr, Duration::ZERO, &s, &mut co)
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
        let dev = AnyDevice::from(SoftIwarp::new());
        let setup = softiwarp_setup(Options::default());
        let s = settings(1, 64);
        let mut co = Vec::new();
        let e = run_client(&dev, &setup, addr, Duration::from_millis(600), &s, &mut co)
            .await
            .unwrap_err();
        let msg = format!("{e:#}");
        assert!(msg.contains("cannot connect to the rping server"), "{msg}");
        // Retried while the wait lasted.
        assert!(!msg.contains("(1 attempt(s))"), "{msg}");
    }
}
