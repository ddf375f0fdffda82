//! `rpcrdma serve`: run the demo program over RPC-over-RDMA (and
//! optionally TCP) until interrupted.

use std::net::SocketAddr;
use std::process::ExitCode;

use anyhow::Context;
use clap::Args;
use rpcrdma_demoprog::{serve_demo, PROGRAM, VERSION};
use rpcrdma_oncrpc::rpcbind::Rpcbind;
use std::sync::Arc;

use rpcrdma_engine::MemoryBudget;
use rpcrdma_oncrpc::{Server, ServerConfig, Services};
use rpcrdma_transport::{serve_rdma, ListenConfig, RdmaService};
use rpcrdma_verbs::Device;

use super::connect::resolve;
use super::metrics::{self, MetricsOpts};
use super::provider::{AnyDevice, Setup};
use super::rdma_opts::RdmaOpts;
use crate::cmd::read_window::{describe, ReadWindow};
use crate::cmd::{runtime, Scheduler};

/// Arguments of `rpcrdma serve`.
#[derive(Debug, Args)]
pub(crate) struct ServeArgs {
    /// RPC-over-RDMA listening address (with `--provider rdma-core`, an
    /// address of the device's interface, or 0.0.0.0).
    #[arg(long, default_value = "127.0.0.1:20049")]
    listen: String,
    /// Also serve ONC RPC over TCP on this address.
    #[arg(long)]
    tcp: Option<String>,
    /// Register with the system's rpcbind (netid `rdma`/`rdma6`, and
    /// `tcp`/`tcp6` for --tcp); unregistered on exit.
    #[arg(long)]
    rpcbind: bool,
    /// Exit after this many seconds (default: run until Ctrl-C / SIGTERM).
    #[arg(long)]
    duration: Option<u64>,
    #[command(flatten)]
    memory: MemoryOpts,
    #[command(flatten)]
    metrics: MetricsOpts,
    #[command(flatten)]
    rdma: RdmaOpts,
}

/// The memory budget of a server's connections, RPC-over-RDMA and TCP
/// alike (`rpcrdma serve` and `rpcrdma nfs serve`).
#[derive(Debug, Args)]
pub(crate) struct MemoryOpts {
    /// Most memory all connections together, RPC-over-RDMA and TCP, may
    /// hold: a number of bytes with an optional K, M, G or T suffix
    /// (binary: 512M is 512 MiB). It holds clients' calls (Read chunk
    /// sinks, room reserved for replies that go through Write and Reply
    /// chunks, reply data in flight, idle sink buffers; over TCP: records
    /// being read, calls in progress with room for their replies, replies
    /// the client has not read yet) and each connection's fixed cost,
    /// charged when it is accepted (a TCP connection: 16 KiB and its
    /// receive buffer), for RDMA: its receive buffers ((credits
    /// granted + reverse-direction calls) x receive size: 72 x 4 KiB by
    /// default), one inline reply per credit (64 x up to 4 KiB) and 64 KiB
    /// for its queue pair and tasks, 608 KiB with the defaults. Calls
    /// beyond it wait; calls that could never fit get SYSTEM_ERR; a
    /// connection whose fixed cost does not fit (a sixteenth is kept for
    /// calls) is rejected with a warning naming --max-memory. At least
    /// the largest message received inline (4K, or a larger --inline),
    /// and room for one connection. See docs/engine.md.
    #[arg(long, value_name = "SIZE", default_value = "512M", value_parser = parse_size)]
    pub(crate) max_memory: u64,
    /// Most memory one connection may hold (same syntax; at least 4K, at
    /// most --max-memory; a 1 MiB WRITE in flight needs 1 MiB of it, a
    /// 1 MiB READ the room its Write and Reply chunks offer, about 2 MiB
    /// from `rpcrdma call`). A TCP client over it is not read from until
    /// its replies drain, and is dropped with a warning when it reads
    /// none of them for --stall-timeout.
    #[arg(long, value_name = "SIZE", default_value = "64M", value_parser = parse_size)]
    pub(crate) max_connection_memory: u64,
    /// Seconds a connection may hold memory without progress before it
    /// is closed with a warning: an RDMA peer that answers none of our
    /// RDMA Reads or Sends, a TCP client that reads none of its replies.
    #[arg(long, value_name = "SECS", default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub(crate) stall_timeout: u64,
    /// How far one connection reads ahead (same syntax): the Read chunk
    /// data of calls being pulled and not yet handed to the program stays
    /// within this window; a further call with Read chunks waits until
    /// earlier calls' data is in. A connection pulling nothing takes its
    /// oldest call whatever its size. Data pulled far ahead of the work
    /// that uses it leaves the CPU's caches first; the next call's data
    /// is still pulled while the calls before it are processed. `auto`:
    /// 2M (the next call's data follows without waiting for its Read
    /// Request) when this process may run on several CPUs, 1M when it is
    /// confined to one. See docs/engine.md.
    #[arg(long, value_name = "auto|SIZE", default_value = "auto", value_parser = ReadWindow::parse)]
    pub(crate) read_window: ReadWindow,
    /// Most RPC-over-RDMA connections open at once; further connection
    /// requests are rejected with a warning naming --max-connections.
    /// Each also needs its fixed cost to fit --max-memory.
    #[arg(long, value_name = "N", default_value_t = rpcrdma_transport::DEFAULT_MAX_CONNECTIONS, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    pub(crate) max_connections: usize,
}

impl MemoryOpts {
    /// What one connection may hold: --max-connection-memory, at most
    /// --max-memory.
    pub(crate) fn per_connection(&self) -> u64 {
        self.max_connection_memory.min(self.max_memory)
    }

    /// Refuses a budget too small to take calls ([`check_memory_limits`])
    /// or a single connection, before anything is set up.
    pub(crate) fn check(&self, rdma: &RdmaOpts) -> anyhow::Result<()> {
        let engine = rdma.server();
        check_memory_limits(&engine, self.max_memory, self.max_connection_memory)?;
        let cost = engine.connection_cost(rdma.caps());
        // Connections' fixed costs may not take the last sixteenth.
        let least = (cost * 16).div_ceil(15).div_ceil(1 << 10) << 10;
        if self.max_memory < least {
            anyhow::bail!(
                "--max-memory {} is too small: each RPC-over-RDMA connection holds {} whatever its client does (receive buffers, inline replies, queue pair), charged to --max-memory when it is accepted, and a sixteenth is kept for calls; give at least {}",
                arg_size(self.max_memory),
                show_size(cost),
                arg_size(least)
            );
        }
        Ok(())
    }

    /// One line for the operator: the memory clients' calls may make the
    /// server hold, and the read window (with what `auto` chose).
    pub(crate) fn memory_line(&self) -> String {
        format!(
            "memory for clients' calls: at most {} in all, {} per connection, read window {}",
            show_size(self.max_memory),
            show_size(self.per_connection()),
            describe(self.read_window)
        )
    }

    /// One line for the operator: a connection's fixed cost and how many
    /// connections the budget and --max-connections allow at once.
    pub(crate) fn connections_line(&self, rdma: &RdmaOpts) -> String {
        let cost = rdma.server().connection_cost(rdma.caps());
        let fit = (self.max_memory - self.max_memory / 16) / cost.max(1);
        let most = usize::try_from(fit)
            .unwrap_or(usize::MAX)
            .min(self.max_connections);
        format!(
            "each connection holds {} besides its calls (receive buffers, inline replies, queue pair), charged to --max-memory when accepted: at most {most} connections at once (--max-connections {})",
            show_size(cost),
            self.max_connections
        )
    }

    /// The server's one memory budget, of --max-memory: its RPC-over-RDMA
    /// listener ([`Self::listen_config`]) and its TCP connections
    /// ([`Self::server_config`]) all charge it.
    pub(crate) fn budget(&self) -> MemoryBudget {
        MemoryBudget::new(self.max_memory)
    }

    /// The ONC RPC server's configuration: its TCP connections charge
    /// `budget`, each within --max-connection-memory.
    pub(crate) fn server_config(&self, budget: &MemoryBudget) -> ServerConfig {
        let mut cfg = ServerConfig::default();
        cfg.memory = Some(Arc::new(budget.clone()));
        cfg.max_connection_memory = self.per_connection();
        cfg.stall_timeout = std::time::Duration::from_secs(self.stall_timeout);
        cfg
    }

    /// The listener's configuration: the server engine of `rdma` with this
    /// budget ([`set_memory_limits`]), the provider's `options` and the
    /// queue pair sizes; its connections charge `budget`.
    pub(crate) fn listen_config<O>(
        &self,
        rdma: &RdmaOpts,
        options: O,
        budget: &MemoryBudget,
    ) -> anyhow::Result<ListenConfig<O>> {
        let mut engine = rdma.server();
        set_memory_limits(&mut engine, self.max_memory, self.max_connection_memory)?;
        // (The parser refuses 0.)
        engine.read_window = self.read_window.resolve();
        engine.stall_timeout = std::time::Duration::from_secs(self.stall_timeout);
        Ok(ListenConfig {
            engine,
            options,
            caps: rdma.caps(),
            max_connections: self.max_connections,
            budget: Some(budget.clone()),
        })
    }
}

/// Programs registered with rpcbind under a netid, to unregister at exit.
pub(crate) type Registered<'a> = Vec<(&'a [(u32, u32)], String)>;

/// Runs until `duration` seconds have passed or a signal came, then
/// unregisters from rpcbind what was registered (best effort), stops the
/// RPC-over-RDMA listener and lets the calls in progress finish.
pub(crate) async fn run_until_stopped<D: Device>(
    duration: Option<u64>,
    registered: Registered<'_>,
    svc: Arc<RdmaService<D>>,
    server: &Server,
) {
    super::stop_signal(duration).await;
    eprintln!("shutting down: finishing calls in progress");
    if !registered.is_empty() {
        if let Ok(rpcb) = Rpcbind::connect_local().await {
            for (programs, netid) in &registered {
                let _ = rpcb.unregister_all(programs, netid).await;
            }
        }
    }
    svc.stop().await;
    server.shutdown().await;
}

/// What both servers (`rpcrdma serve`, `rpcrdma nfs serve`) do before
/// they start: resolve the RPC-over-RDMA address `listen` and the TCP
/// address `tcp`, check the options, and make the multi-threaded runtime
/// they run on.
pub(crate) fn prepare(
    listen: &str,
    tcp: Option<&str>,
    rdma: &RdmaOpts,
    memory: &MemoryOpts,
) -> anyhow::Result<(SocketAddr, Option<SocketAddr>, tokio::runtime::Runtime)> {
    let listen = resolve(listen)?;
    let tcp = tcp.map(resolve).transpose()?;
    let rt = runtime(Scheduler::MultiThread)?;
    rdma.check()?;
    memory.check(rdma)?;
    Ok((listen, tcp, rt))
}

/// Listens for RPC-over-RDMA on `listen` with `dev` for `server`: the
/// listener of [`MemoryOpts::listen_config`], its connections charging
/// `budget`.
pub(crate) async fn listen_rdma(
    server: &Server,
    (dev, setup): (AnyDevice, &Setup),
    rdma: &RdmaOpts,
    memory: &MemoryOpts,
    budget: &MemoryBudget,
    listen: SocketAddr,
) -> anyhow::Result<Arc<RdmaService<AnyDevice>>> {
    let cfg = memory.listen_config(rdma, setup.options.clone(), budget)?;
    let svc = serve_rdma(server, dev, listen, cfg)
        .await
        .with_context(|| format!("cannot listen for RPC-over-RDMA on {listen}"))?;
    Ok(Arc::new(svc))
}

/// Runs `rpcrdma serve`.
pub(crate) fn run(a: ServeArgs) -> anyhow::Result<ExitCode> {
    let (listen, tcp, rt) = prepare(&a.listen, a.tcp.as_deref(), &a.rdma, &a.memory)?;
    rt.block_on(async {
        let (dev, setup) = a.rdma.provider.open(a.rdma.params())?;
        serve(a, listen, tcp, dev, setup).await
    })
}

async fn serve(
    a: ServeArgs,
    listen: SocketAddr,
    tcp: Option<SocketAddr>,
    dev: AnyDevice,
    setup: Setup,
) -> anyhow::Result<ExitCode> {
    let mut services = Services::new();
    serve_demo(&mut services);
    let calls = a
        .metrics
        .metrics
        .as_ref()
        .map(|_| metrics::CallStats::new(&services.registrations()));
    if let Some(c) = &calls {
        services.set_observer(c.clone());
    }
    let budget = a.memory.budget();
    let server = Server::new(services, a.memory.server_config(&budget));
    let svc = listen_rdma(&server, (dev, &setup), &a.rdma, &a.memory, &budget, listen).await?;
    let rdma_addr = svc.local_addr();
    println!(
        "serving the demo program {PROGRAM:#x} v{VERSION} over RPC-over-RDMA ({}) on {rdma_addr}",
        setup.label
    );
    if let (Some(addr), Some(calls)) = (&a.metrics.metrics, calls) {
        let at = start_metrics(addr, calls, &server, &svc, &budget, None).await?;
        println!("metrics on http://{at}/metrics");
    }
    println!("{}", a.memory.memory_line());
    println!("{}", a.memory.connections_line(&a.rdma));
    let tcp_addr = match tcp {
        Some(t) => {
            let bound = server
                .serve_tcp(t)
                .await
                .with_context(|| format!("cannot listen for TCP on {t}"))?;
            println!("serving it over TCP on {bound}");
            Some(bound)
        }
        None => None,
    };

    let programs = [(PROGRAM, VERSION)];
    let mut registered: Registered = Vec::new();
    if a.rpcbind {
        let rpcb = Rpcbind::connect_local()
            .await
            .context("cannot reach rpcbind on 127.0.0.1:111 (install and start `rpcbind`, or drop --rpcbind)")?;
        let netid = rpcb
            .register_all(&programs, "rdma", &rdma_addr)
            .await
            .context("rpcbind registration (rdma) failed")?;
        println!("registered with rpcbind as netid {netid}");
        registered.push((&programs, netid));
        if let Some(t) = tcp_addr {
            let netid = rpcb
                .register_all(&programs, "tcp", &t)
                .await
                .context("rpcbind registration (tcp) failed")?;
            println!("registered with rpcbind as netid {netid}");
            registered.push((&programs, netid));
        }
    }

    run_until_stopped(a.duration, registered, svc, &server).await;
    Ok(ExitCode::SUCCESS)
}

/// Serves the metrics of `server`, its RPC-over-RDMA listener `svc` and
/// `budget` at `addr` (`--metrics`); `refused`: the exports' refusals.
pub(crate) async fn start_metrics<D: Device>(
    addr: &str,
    calls: Arc<metrics::CallStats>,
    server: &Server,
    svc: &Arc<RdmaService<D>>,
    budget: &MemoryBudget,
    refused: Option<Box<dyn Fn() -> u64 + Send + Sync>>,
) -> anyhow::Result<SocketAddr> {
    let svc = svc.clone();
    metrics::serve(
        addr,
        metrics::Sources {
            calls,
            server: server.clone(),
            rdma: Box::new(move || svc.stats()),
            budget: budget.clone(),
            refused,
        },
    )
    .await
}

/// Parses a size: bytes, or a number with a K, M, G or T suffix (binary
/// multiples; an optional `i` and `B` may follow: `64M`, `64MiB`, `2g`).
pub(crate) fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let lower = t.to_ascii_lowercase();
    let body = lower.strip_suffix('b').unwrap_or(&lower);
    let body = body.strip_suffix('i').unwrap_or(body);
    let (digits, shift) = match body.char_indices().last() {
        Some((i, 'k')) => (&body[..i], 10),
        Some((i, 'm')) => (&body[..i], 20),
        Some((i, 'g')) => (&body[..i], 30),
        Some((i, 't')) => (&body[..i], 40),
        _ => (body, 0),
    };
    let bad =
        || format!("{t:?} is not a size: give bytes or a number with K, M, G or T (e.g. 512M, 2G)");
    let n: u64 = digits.trim().parse().map_err(|_| bad())?;
    let v = n.checked_mul(1u64 << shift).ok_or_else(bad)?;
    if v == 0 {
        return Err(format!("{t:?}: the size must be more than zero"));
    }
    Ok(v)
}

/// Puts `--max-memory` and `--max-connection-memory` into a server's
/// engine configuration (the per-connection limit is at most the whole),
/// after [`check_memory_limits`]. Notes on standard error say what a
/// budget smaller than the largest message means, and when the
/// per-connection limit was lowered to the whole.
pub(crate) fn set_memory_limits(
    engine: &mut rpcrdma_engine::EngineConfig,
    max_memory: u64,
    max_connection_memory: u64,
) -> anyhow::Result<()> {
    check_memory_limits(engine, max_memory, max_connection_memory)?;
    if max_connection_memory > max_memory {
        eprintln!(
            "note: --max-connection-memory {} is more than --max-memory {}; one connection may hold at most {}",
            arg_size(max_connection_memory),
            arg_size(max_memory),
            show_size(max_memory)
        );
    }
    engine.max_shared_memory = max_memory;
    engine.max_memory = max_connection_memory.min(max_memory);
    let largest = u64::from(engine.max_message);
    if engine.max_memory < largest {
        eprintln!(
            "note: calls whose Read chunks and reply room (their Write and Reply chunks) exceed {} (the per-connection memory) are refused with SYSTEM_ERR; the largest message is {}",
            show_size(engine.max_memory),
            show_size(largest)
        );
    }
    Ok(())
}

/// Checks that the budget can take a call: one smaller than the largest
/// message the server receives inline (its receive buffer) could not hold
/// the Read chunks of nearly any call too large to come inline, so it is
/// refused with the flag to raise. Run before anything is set up, so that
/// a refused budget leaves nothing behind.
pub(crate) fn check_memory_limits(
    engine: &rpcrdma_engine::EngineConfig,
    max_memory: u64,
    max_connection_memory: u64,
) -> anyhow::Result<()> {
    let floor = engine.recv_buffer_size() as u64;
    for (flag, v) in [
        ("--max-memory", max_memory),
        ("--max-connection-memory", max_connection_memory),
    ] {
        if v < floor {
            anyhow::bail!(
                "{flag} {} is too small: calls larger than the {} this server receives inline bring their data in Read chunks, and a budget below that could hold almost none of them; give at least {} (the defaults are --max-memory 512M, --max-connection-memory 64M)",
                arg_size(v),
                show_size(floor),
                arg_size(floor)
            );
        }
    }
    Ok(())
}

/// A size as the flags take it: `512M`, `4K`, or bytes.
fn arg_size(v: u64) -> String {
    match v {
        v if v >= 1 << 40 && v % (1 << 40) == 0 => format!("{}T", v >> 40),
        v if v >= 1 << 30 && v % (1 << 30) == 0 => format!("{}G", v >> 30),
        v if v >= 1 << 20 && v % (1 << 20) == 0 => format!("{}M", v >> 20),
        v if v >= 1 << 10 && v % (1 << 10) == 0 => format!("{}K", v >> 10),
        v => v.to_string(),
    }
}

/// A size for people: whole GiB, MiB or KiB when exact, else bytes.
pub(crate) fn show_size(v: u64) -> String {
    match v {
        v if v >= 1 << 30 && v % (1 << 30) == 0 => format!("{} GiB", v >> 30),
        v if v >= 1 << 20 && v % (1 << 20) == 0 => format!("{} MiB", v >> 20),
        v if v >= 1 << 10 && v % (1 << 10) == 0 => format!("{} KiB", v >> 10),
        v => format!("{v} bytes"),
    }
}

#[cfg(test)]
mod tests {
    use super::parse_size;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("512M"), Ok(512 << 20));
        assert_eq!(parse_size("2G"), Ok(2 << 30));
        assert_eq!(parse_size("2g"), Ok(2 << 30));
        assert_eq!(parse_size("64MiB"), Ok(64 << 20));
        assert_eq!(parse_size("100k"), Ok(100 << 10));
        assert_eq!(parse_size("1T"), Ok(1 << 40));
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size(" 8M "), Ok(8 << 20));
        for bad in ["", "M", "1.5G", "-1M", "12X", "0", "99999999999T"] {
            assert!(parse_size(bad).is_err(), "{bad}");
        }
    }
}
