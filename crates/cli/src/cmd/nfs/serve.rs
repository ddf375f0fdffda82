//! `rpcrdma nfs serve DIR`: export a directory over NFSv3 (and MOUNT v3)
//! on RPC-over-RDMA and TCP.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;
use clap::Args;
use rpcrdma_nfs3::fs::{Export, ExportConfig, IdentityMode, Squash};
use rpcrdma_nfs3::proto::{mount3, nfs3};
use rpcrdma_oncrpc::rpcbind::Rpcbind;
use rpcrdma_oncrpc::{Server, Services};
use rpcrdma_transport::serve_rdma;
use rpcrdma_verbs::Device;

use crate::cmd::connect::resolve;
use crate::cmd::provider::{Setup, WithDevice};
use crate::cmd::rdma_opts::RdmaOpts;
use crate::cmd::serve::{run_until_stopped, MemoryOpts, Registered};
use crate::cmd::{runtime, Scheduler};

/// Arguments of `rpcrdma nfs serve`.
#[derive(Debug, Args)]
pub(crate) struct ServeArgs {
    /// The directory to export.
    dir: PathBuf,
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
    #[arg(long)]
    read_only: bool,
    /// Where the file handle key is kept (made on first start; keep it to
    /// keep file handles valid across restarts). Default:
    /// /var/lib/rpcrdma-nfs as root, else ~/.local/state/rpcrdma-nfs.
    #[arg(long)]
    state_dir: Option<PathBuf>,
    /// Let uid 0 act as root (default: root is squashed to --anon-uid).
    #[arg(long, conflicts_with = "all_squash")]
    no_root_squash: bool,
    /// Every caller acts as the anonymous user.
    #[arg(long)]
    all_squash: bool,
    /// The anonymous user.
    #[arg(long, default_value_t = 65534)]
    anon_uid: u32,
    /// The anonymous group.
    #[arg(long, default_value_t = 65534)]
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
    #[command(flatten)]
    memory: MemoryOpts,
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
    let listen = resolve(&a.listen)?;
    let tcp = a.tcp.as_deref().map(resolve).transpose()?;
    let rt = runtime(Scheduler::MultiThread)?;
    a.rdma.check()?;
    a.memory.check(&a.rdma)?;
    let params = a.rdma.params();
    let provider = a.rdma.provider.clone();
    rt.block_on(provider.run(params, NfsServe { a, listen, tcp }))
}

struct NfsServe {
    a: ServeArgs,
    listen: SocketAddr,
    tcp: Option<SocketAddr>,
}

impl WithDevice for NfsServe {
    type Output = ExitCode;

    async fn run<D: Device + Clone + std::fmt::Debug>(
        self,
        dev: D,
        setup: Setup<D>,
    ) -> anyhow::Result<ExitCode> {
        serve(self.a, self.listen, self.tcp, dev, setup).await
    }
}

async fn serve<D: Device + Clone>(
    a: ServeArgs,
    listen: SocketAddr,
    tcp: Option<SocketAddr>,
    dev: D,
    setup: Setup<D>,
) -> anyhow::Result<ExitCode> {
    let state = a.state_dir.clone().unwrap_or_else(default_state_dir);
    let mut cfg = ExportConfig::new(&a.dir, &state);
    cfg.read_only = a.read_only;
    cfg.squash = if a.all_squash {
        Squash::All
    } else if a.no_root_squash {
        Squash::None
    } else {
        Squash::Root
    };
    cfg.anon = (a.anon_uid, a.anon_gid);
    let export =
        Arc::new(Export::open(cfg).with_context(|| format!("cannot export {}", a.dir.display()))?);
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
        let nfs4 =
            rpcrdma_nfs4::register(&mut services, export.clone(), cfg).with_context(|| {
                format!(
                    "cannot read the NFSv4 client records in {}",
                    state.display()
                )
            })?;
        guard = Some(Arc::new(nfs4.change_guard()));
    }
    if a.versions.v3 {
        rpcrdma_nfs3::server::register_guarded(
            &mut services,
            export.clone(),
            rpcrdma_oncrpc::ReplyCacheConfig::default(),
            guard,
        );
    }
    let budget = a.memory.budget();
    let server = Server::new(services, a.memory.server_config(&budget));

    let lcfg = a
        .memory
        .listen_config(&a.rdma, setup.options.clone(), &budget)?;
    let svc = serve_rdma(&server, dev, listen, lcfg)
        .await
        .with_context(|| format!("cannot listen for RPC-over-RDMA on {listen}"))?;
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
    println!(
        "serving {} over {}: RPC-over-RDMA ({}) on {rdma_addr}, MOUNT v3 on tcp {mount_addr}{}{}",
        export.root_path().display(),
        a.versions.names(),
        setup.label,
        tcp_addr.map_or_else(String::new, |t| format!(", NFS over TCP on {t}")),
        if a.read_only { " (read-only)" } else { "" },
    );
    if a.versions.v3 {
        println!(
            "mount with: mount -t nfs -o vers=3,proto=rdma,port={},nolock,noacl,mountport={},mountproto=tcp HOST:/ MOUNTPOINT",
            rdma_addr.port(),
            mount_addr.port()
        );
    }
    if a.versions.v41 || a.versions.v42 {
        println!(
            "mount with: mount -t nfs -o vers={},proto=rdma,port={} HOST:/ MOUNTPOINT",
            if a.versions.v42 { "4.2" } else { "4.1" },
            rdma_addr.port(),
        );
    }
    println!("{}", a.memory.memory_line());
    println!("{}", a.memory.connections_line(&a.rdma));

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
