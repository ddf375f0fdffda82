//! `rpcrdma nfs serve DIR` or `--exports FILE`: export a directory to
//! every client, or what an exports file says (which clients may mount
//! which directory, and how), over NFSv3 (and MOUNT v3), NFSv4.1 and
//! NFSv4.2 on RPC-over-RDMA and TCP. SIGHUP reads the exports file again
//! without dropping a connection (a file that does not read leaves the
//! exports in force as they were, with an error in the log).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;
use clap::Args;
use rpcrdma_nfs3::exports::{ExportTable, Exports, ExportsFile, Warning};
use rpcrdma_nfs3::fs::{Export, ExportConfig, IdentityMode, Squash};
use rpcrdma_nfs3::proto::{mount3, nfs3};
use rpcrdma_oncrpc::rpcbind::Rpcbind;
use rpcrdma_oncrpc::{Server, Services};

use crate::cmd::metrics::{self, MetricsOpts};
use crate::cmd::provider::{AnyDevice, Setup};
use crate::cmd::rdma_opts::RdmaOpts;
use crate::cmd::serve::{
    listen_rdma, prepare, run_until_stopped, start_metrics, MemoryOpts, Registered,
};

/// Arguments of `rpcrdma nfs serve`.
#[derive(Debug, Args)]
pub(crate) struct ServeArgs {
    /// The directory to export to every client (the options below say
    /// how); or give --exports.
    #[arg(required_unless_present = "exports", conflicts_with = "exports")]
    dir: Option<PathBuf>,
    /// Export what FILE says, in the syntax of /etc/exports: which clients
    /// (host, address, network, *) may mount which directory, each with
    /// rw/ro, root_squash/no_root_squash/all_squash, anonuid/anongid
    /// (docs/nfs.md, "Exports"). SIGHUP reads it again.
    #[arg(long, value_name = "FILE")]
    exports: Option<PathBuf>,
    /// RPC-over-RDMA listening address for NFS (with `--provider
    /// rdma-core`, an address of the device's interface, or 0.0.0.0).
    #[arg(long, default_value = "127.0.0.1:20049")]
    listen: String,
    /// TCP port of MOUNT v3, on the --listen address (0: any free port).
    #[arg(long, default_value_t = 20048)]
    mount_port: u16,
    /// Also serve NFS (and MOUNT) over TCP on this address (e.g.
    /// 0.0.0.0:2049).
    #[arg(long)]
    tcp: Option<String>,
    /// Register with the system's rpcbind: NFS under netid rdma/rdma6 (and
    /// tcp/tcp6 with --tcp), MOUNT under tcp/tcp6; unregistered on exit.
    #[arg(long)]
    rpcbind: bool,
    /// Refuse every change (NFS3ERR_ROFS).
    #[arg(long, conflicts_with = "exports")]
    read_only: bool,
    /// Where the file handle key is kept (made on first start; keep it to
    /// keep file handles valid across restarts). Default:
    /// /var/lib/rpcrdma-nfs as root, else ~/.local/state/rpcrdma-nfs.
    #[arg(long)]
    state_dir: Option<PathBuf>,
    /// Let uid 0 act as root (default: root is squashed to --anon-uid).
    #[arg(long, conflicts_with_all = ["all_squash", "exports"])]
    no_root_squash: bool,
    /// Every caller acts as the anonymous user.
    #[arg(long, conflicts_with = "exports")]
    all_squash: bool,
    /// The anonymous user (with --exports: anonuid= on a client).
    #[arg(long, default_value_t = 65534, conflicts_with = "exports")]
    anon_uid: u32,
    /// The anonymous group (with --exports: anongid= on a client).
    #[arg(long, default_value_t = 65534, conflicts_with = "exports")]
    anon_gid: u32,
    /// The NFS versions served, comma-separated: 3, 4.1, 4.2 (NFSv4.2's
    /// operations this server lacks answer NFS4ERR_NOTSUPP).
    #[arg(long, value_name = "LIST", default_value = "3,4.1,4.2", value_parser = parse_versions)]
    versions: Versions,
    /// The NFSv4 lease in seconds: a client that renews nothing for this
    /// long loses its opens, locks and delegations; also the grace period
    /// after a restart, when the previous clients reclaim theirs.
    #[arg(long, value_name = "SECS", default_value_t = 90, value_parser = clap::value_parser!(u64).range(5..=3600))]
    lease: u64,
    /// Exit after this many seconds (default: run until Ctrl-C / SIGTERM).
    #[arg(long)]
    duration: Option<u64>,
    /// Serve the demo program (`rpcrdma serve`'s) beside NFS on the same
    /// listeners, so `rpcrdma nfs bench --demo` can compare NFS's READ
    /// and WRITE with the transport's own on the same server.
    #[arg(long)]
    demo_program: bool,
    #[command(flatten)]
    memory: MemoryOpts,
    #[command(flatten)]
    metrics: MetricsOpts,
    #[command(flatten)]
    rdma: RdmaOpts,
}

/// The NFS versions `--versions` names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Versions {
    v3: bool,
    v41: bool,
    v42: bool,
}

impl Versions {
    fn names(&self) -> String {
        let mut v = Vec::new();
        if self.v3 {
            v.push("NFSv3");
        }
        if self.v41 {
            v.push("NFSv4.1");
        }
        if self.v42 {
            v.push("NFSv4.2");
        }
        v.join(", ")
    }
}

fn parse_versions(s: &str) -> Result<Versions, String> {
    let mut v = Versions {
        v3: false,
        v41: false,
        v42: false,
    };
    for part in s.split(',').map(str::trim) {
        match part {
            "3" => v.v3 = true,
            "4.1" => v.v41 = true,
            "4.2" => v.v42 = true,
            "4" | "4.0" => {
                return Err("NFSv4.0 is not served (NFSv4.1 sessions replace its client IDs and open confirmation); give 4.1 or 4.2".into())
            }
            other => return Err(format!("`{other}` is not an NFS version served here: give 3, 4.1 or 4.2, comma-separated")),
        }
    }
    if !(v.v3 || v.v41 || v.v42) {
        return Err("give at least one NFS version: 3, 4.1 or 4.2".into());
    }
    Ok(v)
}

fn default_state_dir() -> PathBuf {
    if IdentityMode::detect() == IdentityMode::Switch {
        PathBuf::from("/var/lib/rpcrdma-nfs")
    } else if let Some(home) = std::env::var_os("HOME") {
        PathBuf::from(home).join(".local/state/rpcrdma-nfs")
    } else {
        PathBuf::from(".rpcrdma-nfs-state")
    }
}

/// Runs `rpcrdma nfs serve`.
pub(crate) fn run(a: ServeArgs) -> anyhow::Result<ExitCode> {
    let (listen, tcp, rt) = prepare(&a.listen, a.tcp.as_deref(), &a.rdma, &a.memory)?;
    // rdma-core writes to uverbs and rdma_cm files on the runtime's
    // threads, which must then never switch identity (set_inline_work).
    if !a.rdma.provider.is_softiwarp() {
        rpcrdma_nfs3::fs::set_inline_work(false);
    }
    rt.block_on(async {
        let (dev, setup) = a.rdma.provider.open(a.rdma.params())?;
        serve(a, listen, tcp, dev, setup).await
    })
}

/// Reads, parses and opens an exports file (`previous`: the table in
/// force, whose exports that stay are kept). Errors say FILE:LINE.
fn load_exports(
    path: &std::path::Path,
    base: &ExportConfig,
    previous: Option<&ExportTable>,
) -> anyhow::Result<(ExportTable, Vec<Warning>)> {
    let text = std::fs::read(path)
        .with_context(|| format!("cannot read the exports file {}", path.display()))?;
    let at = |e: rpcrdma_nfs3::exports::ExportsError| {
        anyhow::anyhow!("{}:{}: {}", path.display(), e.line, e.message)
    };
    let file = ExportsFile::parse(&text).map_err(at)?;
    ExportTable::open(&file, base, previous).map_err(at)
}

/// Logs the warnings of an exports file.
fn warn_exports(path: &std::path::Path, warnings: &[Warning]) {
    for w in warnings {
        tracing::warn!("{}:{}: {}", path.display(), w.line, w.message);
    }
}

/// Reads the exports file again on every SIGHUP: a file that reads puts
/// its table in force (the exports that stay keep their state; calls in
/// progress finish under the old table; no connection is dropped); one
/// that does not leaves the table in force, with an error in the log.
fn reload_on_hangup(
    exports: Arc<Exports>,
    file: Option<(PathBuf, ExportConfig)>,
) -> anyhow::Result<()> {
    use tokio::signal::unix::{signal, SignalKind};
    let mut hup = signal(SignalKind::hangup()).context("cannot catch SIGHUP")?;
    tokio::spawn(async move {
        while hup.recv().await.is_some() {
            let Some((path, base)) = file.clone() else {
                tracing::info!("SIGHUP: no --exports file to read again; nothing changes");
                continue;
            };
            let old = exports.table();
            let p = path.clone();
            let loaded =
                tokio::task::spawn_blocking(move || load_exports(&p, &base, Some(&old))).await;
            match loaded {
                Ok(Ok((table, warnings))) => {
                    warn_exports(&path, &warnings);
                    let n = table.entries().len();
                    exports.replace(table);
                    tracing::info!(
                        file = %path.display(),
                        exports = n,
                        "SIGHUP: exports read again and in force"
                    );
                }
                Ok(Err(e)) => tracing::error!(
                    "SIGHUP: {e:#}; the exports in force stay as they were (fix the file and send SIGHUP again)"
                ),
                Err(e) => tracing::error!("SIGHUP: reading the exports failed: {e}"),
            }
        }
    });
    Ok(())
}

async fn serve(
    a: ServeArgs,
    listen: SocketAddr,
    tcp: Option<SocketAddr>,
    dev: AnyDevice,
    setup: Setup,
) -> anyhow::Result<ExitCode> {
    let state = a.state_dir.clone().unwrap_or_else(default_state_dir);
    let (exports, reload) = match (&a.dir, &a.exports) {
        (Some(dir), _) => {
            let mut cfg = ExportConfig::new(dir, &state);
            cfg.read_only = a.read_only;
            cfg.squash = if a.all_squash {
                Squash::All
            } else if a.no_root_squash {
                Squash::None
            } else {
                Squash::Root
            };
            cfg.anon = (a.anon_uid, a.anon_gid);
            let export = Arc::new(
                Export::open(cfg).with_context(|| format!("cannot export {}", dir.display()))?,
            );
            (Arc::new(Exports::single(export)), None)
        }
        (None, Some(path)) => {
            let base = ExportConfig::new("/", &state);
            let (table, warnings) = load_exports(path, &base, None)?;
            warn_exports(path, &warnings);
            (Arc::new(Exports::new(table)), Some((path.clone(), base)))
        }
        (None, None) => anyhow::bail!("give the directory to export, or --exports FILE"),
    };
    let from_file = reload.is_some();
    reload_on_hangup(exports.clone(), reload)?;
    let mut services = Services::new();
    let mut guard: Option<Arc<rpcrdma_nfs3::server::ChangeGuard>> = None;
    if a.versions.v41 || a.versions.v42 {
        let mut cfg = rpcrdma_nfs4::Nfs4Config::default();
        cfg.state.lease = std::time::Duration::from_secs(a.lease);
        cfg.state.grace = cfg.state.lease;
        cfg.minor_versions = [(a.versions.v41, 1), (a.versions.v42, 2)]
            .iter()
            .filter(|(on, _)| *on)
            .map(|(_, m)| *m)
            .collect();
        let nfs4 = rpcrdma_nfs4::register_exports(&mut services, exports.clone(), cfg)
            .with_context(|| {
                format!(
                    "cannot read the NFSv4 client records in {}",
                    state.display()
                )
            })?;
        guard = Some(Arc::new(nfs4.change_guard()));
    }
    if a.versions.v3 {
        rpcrdma_nfs3::server::register_exports(
            &mut services,
            exports.clone(),
            rpcrdma_oncrpc::ReplyCacheConfig::default(),
            guard,
        );
    }
    if a.demo_program {
        rpcrdma_demoprog::serve_demo(&mut services);
    }
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
    let mount_addr = server
        .serve_tcp(SocketAddr::new(listen.ip(), a.mount_port))
        .await
        .with_context(|| {
            format!(
                "cannot listen for MOUNT on {}:{} (choose another --mount-port)",
                listen.ip(),
                a.mount_port
            )
        })?;
    let tcp_addr = match tcp {
        Some(t) => Some(
            server
                .serve_tcp(t)
                .await
                .with_context(|| format!("cannot listen for NFS over TCP on {t}"))?,
        ),
        None => None,
    };
    let table = exports.table();
    let what = if from_file {
        format!(
            "{} export(s) of {}",
            table.entries().len(),
            a.exports
                .as_deref()
                .unwrap_or(std::path::Path::new(""))
                .display()
        )
    } else {
        table.entries()[0]
            .export()
            .root_path()
            .display()
            .to_string()
    };
    println!(
        "serving {what} over {}: RPC-over-RDMA ({}) on {rdma_addr}, MOUNT v3 on tcp {mount_addr}{}{}",
        a.versions.names(),
        setup.label,
        tcp_addr.map_or_else(String::new, |t| format!(", NFS over TCP on {t}")),
        if a.read_only { " (read-only)" } else { "" },
    );
    if a.demo_program {
        println!(
            "and the demo program {:#x} v{} on the same listeners (--demo-program)",
            rpcrdma_demoprog::PROGRAM,
            rpcrdma_demoprog::VERSION
        );
    }
    if from_file {
        for e in table.entries() {
            let clients: Vec<String> = e.clients().map(ToString::to_string).collect();
            println!("  {} to {}", e.path_display(), clients.join(" "));
        }
    }
    let path = if from_file {
        table.entries()[0].path_display()
    } else {
        "/".to_owned()
    };
    drop(table);
    if a.versions.v3 {
        println!(
            "mount with: mount -t nfs -o vers=3,proto=rdma,port={},nolock,noacl,mountport={},mountproto=tcp HOST:{path} MOUNTPOINT",
            rdma_addr.port(),
            mount_addr.port()
        );
    }
    if a.versions.v41 || a.versions.v42 {
        println!(
            "mount with: mount -t nfs -o vers={},proto=rdma,port={} HOST:{path} MOUNTPOINT",
            if a.versions.v42 { "4.2" } else { "4.1" },
            rdma_addr.port(),
        );
    }
    println!("{}", a.memory.memory_line());
    println!("{}", a.memory.connections_line(&a.rdma));
    if let (Some(addr), Some(calls)) = (&a.metrics.metrics, calls) {
        let x = exports.clone();
        let refused: Box<dyn Fn() -> u64 + Send + Sync> = Box::new(move || x.refusals());
        let at = start_metrics(addr, calls, &server, &svc, &budget, Some(refused)).await?;
        println!("metrics on http://{at}/metrics");
    }

    let nfs = [(nfs3::nfs_v3::PROGRAM, nfs3::nfs_v3::VERSION)];
    let mnt = [(mount3::mount_v3::PROGRAM, mount3::mount_v3::VERSION)];
    let mut registered: Registered = Vec::new();
    if a.rpcbind {
        let rpcb = Rpcbind::connect_local().await.context(
            "cannot reach rpcbind on 127.0.0.1:111 (install and start `rpcbind`, or drop --rpcbind)",
        )?;
        let netid = rpcb
            .register_all(&nfs, "rdma", &rdma_addr)
            .await
            .context("rpcbind registration of NFS (rdma) failed")?;
        registered.push((&nfs, netid));
        let netid = rpcb
            .register_all(&mnt, "tcp", &mount_addr)
            .await
            .context("rpcbind registration of MOUNT (tcp) failed")?;
        registered.push((&mnt, netid));
        if let Some(t) = tcp_addr {
            let netid = rpcb
                .register_all(&nfs, "tcp", &t)
                .await
                .context("rpcbind registration of NFS (tcp) failed")?;
            registered.push((&nfs, netid));
        }
        println!("registered with rpcbind");
    }

    run_until_stopped(a.duration, registered, svc, &server).await;
    Ok(ExitCode::SUCCESS)
}
