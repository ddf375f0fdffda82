//! The NFS client commands: `rpcrdma nfs ls|get|put|stat HOST:/PATH`,
//! NFSv4.1 by default (`--vers 4.1`, falling back to NFSv3 when the server
//! does not serve it) or NFSv3 (`--vers 3`), over RPC-over-RDMA or TCP.
//! Over NFSv4.1 the client answers the server's callbacks on its own
//! connection (RFC 8167 reverse-direction calls over RDMA).

use std::io::{IsTerminal, Read, Write};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use bytes::Bytes;
use clap::{Args, ValueEnum};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use rpcrdma_nfs3::client::{local_credential, NfsClient, NfsClientError};
use rpcrdma_nfs3::fs::FileType;
use rpcrdma_nfs4::client::{
    self as v4, Callbacks, ClientEvent, FileKind, Nfs4Client, Nfs4ClientConfig, Nfs4Error,
    OpenOptions,
};
use rpcrdma_oncrpc::tcp::TcpConnector;
use rpcrdma_oncrpc::{Client, ClientConfig};

use super::show::{mode_string, mode_string4, v4_report};
use crate::cmd::connect::{connect, resolve, TransportKind};
use crate::cmd::error_text::Fix;
use crate::cmd::rdma_opts::RdmaOpts;
use crate::cmd::{runtime, Scheduler};

/// The NFS version of the client commands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Vers {
    /// NFSv3 (with MOUNT v3 over TCP).
    #[value(name = "3")]
    V3,
    /// NFSv4.1 (sessions; the server's callbacks answered on the client's
    /// connection).
    #[value(name = "4.1")]
    V41,
}

/// Where the server is and how to reach it.
#[derive(Debug, Clone, Args)]
pub(crate) struct Remote {
    /// NFS version (default 4.1, falling back to 3 when the server does
    /// not serve NFSv4.1).
    #[arg(long, value_enum)]
    pub(crate) vers: Option<Vers>,
    /// Transport for NFS (MOUNT always goes over TCP).
    #[arg(long, value_enum, default_value = "rdma")]
    pub(crate) transport: TransportKind,
    /// NFS port (default: 20049 over RDMA, 2049 over TCP).
    #[arg(long)]
    pub(crate) port: Option<u16>,
    /// MOUNT v3 port (TCP; NFSv3 only).
    #[arg(long, default_value_t = 20048)]
    pub(crate) mount_port: u16,
    /// Seconds a call may take.
    #[arg(long, default_value_t = 60)]
    pub(crate) timeout: u64,
    #[command(flatten)]
    pub(crate) rdma: RdmaOpts,
}

/// `HOST:/PATH`, split.
pub(crate) fn parse_target(t: &str) -> anyhow::Result<(String, Vec<u8>)> {
    let Some(i) = t.find(":/") else {
        bail!("{t:?} is not HOST:/PATH (e.g. 127.0.0.1:/export/file)");
    };
    let host = t[..i].trim_start_matches('[').trim_end_matches(']');
    if host.is_empty() {
        bail!("{t:?} names no host; write HOST:/PATH");
    }
    Ok((host.to_owned(), t.as_bytes()[i + 1..].to_vec()))
}

fn addr(host: &str, port: u16) -> anyhow::Result<SocketAddr> {
    if host.contains(':') {
        resolve(&format!("[{host}]:{port}"))
    } else {
        resolve(&format!("{host}:{port}"))
    }
}

/// Connects NFS and MOUNT and mounts the longest exported prefix of
/// `path`; returns the client and the rest of the path.
pub(crate) async fn open(
    r: &Remote,
    kind: TransportKind,
    port: Option<u16>,
    host: &str,
    path: &[u8],
) -> anyhow::Result<(NfsClient, Vec<u8>)> {
    let mut cfg = ClientConfig::default();
    cfg.credential = local_credential();
    cfg.timeout = Duration::from_secs(r.timeout.max(1));
    let port = port.unwrap_or(match kind {
        TransportKind::Rdma => 20049,
        TransportKind::Tcp => 2049,
    });
    let nfs_addr = addr(host, port)?;
    let mount_addr = addr(host, r.mount_port)?;
    let nfs = connect(nfs_addr, kind, &r.rdma, cfg.clone()).await?.client;
    let mount = Client::connect(TcpConnector::new(mount_addr), cfg)
        .await
        .with_context(|| {
            format!("cannot reach MOUNT v3 on tcp {mount_addr} (give its port with --mount-port)")
        })?;
    NfsClient::mount(nfs, mount, path)
        .await
        // (MOUNT's error names the path.)
        .with_context(|| format!("cannot mount from {host}"))
}

/// An NFS client of either version, on the path given.
pub(crate) enum Opened {
    /// NFSv3: the client and the path left after the mounted prefix.
    V3(NfsClient, Vec<u8>),
    /// NFSv4.1: the client (paths resolve from its root).
    V4(Nfs4Client),
}

/// Starts an NFSv4.1 client: the callback service in the connection's
/// services, then EXCHANGE_ID and CREATE_SESSION with a backchannel. The
/// outer error is the connection's; the inner one NFSv4's.
pub(crate) async fn open_v4(
    r: &Remote,
    kind: TransportKind,
    port: Option<u16>,
    host: &str,
) -> anyhow::Result<Result<Nfs4Client, Nfs4Error>> {
    let callbacks = Callbacks::default();
    let mut cfg = ClientConfig::default();
    cfg.credential = local_credential();
    cfg.timeout = Duration::from_secs(r.timeout.max(1));
    cfg.services = callbacks.services();
    let port = port.unwrap_or(match kind {
        TransportKind::Rdma => 20049,
        TransportKind::Tcp => 2049,
    });
    let nfs_addr = addr(host, port)?;
    let rpc = connect(nfs_addr, kind, &r.rdma, cfg).await?.client;
    let mut ncfg = Nfs4ClientConfig::default();
    ncfg.patience = Duration::from_secs(r.timeout.max(1)).max(Duration::from_secs(120));
    Ok(Nfs4Client::start(rpc, callbacks, ncfg).await)
}

/// Opens a client of the version asked for (`None`: NFSv4.1, else NFSv3
/// when the server does not serve NFSv4.1).
pub(crate) async fn open_any(
    r: &Remote,
    kind: TransportKind,
    port: Option<u16>,
    host: &str,
    path: &[u8],
) -> anyhow::Result<Opened> {
    if r.vers != Some(Vers::V3) {
        match open_v4(r, kind, port, host).await? {
            Ok(c) => return Ok(Opened::V4(c)),
            Err(e @ Nfs4Error::Unsupported { .. }) if r.vers.is_none() => {
                eprintln!("{e}: falling back to NFSv3");
            }
            Err(e) => {
                return Err(anyhow::Error::new(e)
                    .context(format!("cannot start an NFSv4.1 client with {host}")))
            }
        }
    }
    let (c, rest) = open(r, kind, port, host, path).await?;
    Ok(Opened::V3(c, rest))
}

/// An NFSv4 error on the way to `target`; one saying it does not exist
/// names how to see what the server has.
fn not_there(target: &str, e: Nfs4Error) -> anyhow::Error {
    let missing = e.status() == Some(v4::Status::Nfs4errNoent);
    let e = anyhow::Error::new(e);
    if missing {
        e.context(Fix::new(
            format!("{target}: no such file or directory on the server"),
            "`rpcrdma nfs ls HOST:/` lists what it exports",
        ))
    } else {
        e
    }
}

async fn open_target(r: &Remote, target: &str) -> anyhow::Result<(Opened, Vec<u8>)> {
    let (host, path) = parse_target(target)?;
    let o = open_any(r, r.transport, r.port, &host, &path).await?;
    Ok((o, path))
}

/// Ends an NFSv4.1 client: its report on standard error, DESTROY_SESSION
/// and DESTROY_CLIENTID.
async fn finish_v4(c: &Nfs4Client) {
    eprintln!("{}", v4_report(c));
    if let Err(e) = c.close().await {
        eprintln!("closing the NFSv4.1 session: {e}");
    }
}

/// A path's parent and last component.
fn split_last(path: &[u8]) -> (Vec<u8>, Vec<u8>) {
    let split = path.iter().rposition(|&b| b == b'/').unwrap_or(0);
    (
        path[..split.max(1)].to_vec(),
        path[(split + 1).min(path.len())..].to_vec(),
    )
}

/// Arguments of `rpcrdma nfs ls`.
#[derive(Debug, Args)]
pub(crate) struct LsArgs {
    /// HOST:/PATH of a directory.
    target: String,
    /// Long listing: type and mode, links, owner, group, size, name.
    #[arg(short, long)]
    long: bool,
    /// Plain READDIR (names only) instead of READDIRPLUS.
    #[arg(long, conflicts_with = "long")]
    names_only: bool,
    #[command(flatten)]
    remote: Remote,
}

pub(crate) fn ls(a: LsArgs) -> anyhow::Result<ExitCode> {
    runtime(Scheduler::MultiThread)?.block_on(async {
        let (opened, path) = open_target(&a.remote, &a.target).await?;
        let c = match opened {
            Opened::V3(c, rest) => return ls_v3(&a, &c, &rest).await,
            Opened::V4(c) => c,
        };
        let (dir, attr, _) = c
            .resolve(&path, true)
            .await
            .map_err(|e| not_there(&a.target, e))?;
        if attr.kind != FileKind::Directory {
            bail!("{} is not a directory (use `nfs stat`)", a.target);
        }
        let t = Instant::now();
        let mut list = c.readdir(&dir).await?;
        let took = t.elapsed();
        list.sort_by(|x, y| x.name.cmp(&y.name));
        let mut out = String::new();
        for e in &list {
            let name = String::from_utf8_lossy(&e.name);
            match (&e.attrs, a.long) {
                (Some(at), true) => out.push_str(&format!(
                    "{} {:>3} {:>6} {:>6} {:>12} {}\n",
                    mode_string4(at.kind, at.mode),
                    at.nlink,
                    String::from_utf8_lossy(&at.owner),
                    String::from_utf8_lossy(&at.group),
                    at.size,
                    name
                )),
                _ => {
                    out.push_str(&name);
                    out.push('\n');
                }
            }
        }
        print!("{out}");
        eprintln!(
            "{} entries listed in {:.1} ms (NFSv4.1 READDIR)",
            list.len(),
            took.as_secs_f64() * 1e3
        );
        finish_v4(&c).await;
        Ok(ExitCode::SUCCESS)
    })
}

async fn ls_v3(a: &LsArgs, c: &NfsClient, rest: &[u8]) -> anyhow::Result<ExitCode> {
    let (dir, attr) = c.lookup_path(rest).await?;
    if attr.ftype != FileType::Directory {
        bail!("{} is not a directory (use `nfs stat`)", a.target);
    }
    let t = Instant::now();
    let mut list = c.list(&dir, !a.names_only).await?;
    let took = t.elapsed();
    list.sort_by(|x, y| x.name.cmp(&y.name));
    let mut out = String::new();
    for e in list
        .iter()
        .filter(|e| &e.name[..] != b"." && &e.name[..] != b"..")
    {
        let name = String::from_utf8_lossy(&e.name);
        match (&e.attr, a.long) {
            (Some(at), true) => out.push_str(&format!(
                "{} {:>3} {:>6} {:>6} {:>12} {}\n",
                mode_string(at),
                at.nlink,
                at.uid,
                at.gid,
                at.size,
                name
            )),
            _ => {
                out.push_str(&name);
                out.push('\n');
            }
        }
    }
    print!("{out}");
    eprintln!(
        "{} entries listed in {:.1} ms",
        list.len().saturating_sub(2),
        took.as_secs_f64() * 1e3
    );
    Ok(ExitCode::SUCCESS)
}

/// Arguments of `rpcrdma nfs stat`.
#[derive(Debug, Args)]
pub(crate) struct StatArgs {
    /// HOST:/PATH.
    target: String,
    #[command(flatten)]
    remote: Remote,
}

pub(crate) fn stat(a: StatArgs) -> anyhow::Result<ExitCode> {
    runtime(Scheduler::MultiThread)?.block_on(async {
        let (opened, path) = open_target(&a.remote, &a.target).await?;
        let c = match opened {
            Opened::V3(c, rest) => return stat_v3(&a, &c, &rest).await,
            Opened::V4(c) => c,
        };
        let (fh, at, _) = c
            .resolve(&path, false)
            .await
            .map_err(|e| not_there(&a.target, e))?;
        println!("  path: {}", a.target);
        println!("  type: {:?}", at.kind);
        println!(
            "  mode: {:04o} ({})",
            at.mode,
            mode_string4(at.kind, at.mode)
        );
        println!(" links: {}", at.nlink);
        println!(
            " owner: {}  group: {}",
            String::from_utf8_lossy(&at.owner),
            String::from_utf8_lossy(&at.group)
        );
        println!("  size: {}  used: {}", at.size, at.used);
        println!("  rdev: {},{}", at.rawdev.0, at.rawdev.1);
        println!(
            "  fsid: {:#x}.{:#x}  fileid: {}",
            at.fsid.0, at.fsid.1, at.fileid
        );
        println!("change: {}", at.change);
        for (n, t) in [
            ("atime", at.atime),
            ("mtime", at.mtime),
            ("ctime", at.ctime),
        ] {
            println!(" {n}: {}.{:09}", t.seconds, t.nseconds);
        }
        println!("handle: {}", hex::encode(&fh));
        finish_v4(&c).await;
        Ok(ExitCode::SUCCESS)
    })
}

async fn stat_v3(a: &StatArgs, c: &NfsClient, rest: &[u8]) -> anyhow::Result<ExitCode> {
    let (fh, at) = c.lookup_path(rest).await?;
    println!("  path: {}", a.target);
    println!("  type: {:?}", at.ftype);
    println!("  mode: {:04o} ({})", at.mode, mode_string(&at));
    println!(" links: {}", at.nlink);
    println!("   uid: {}  gid: {}", at.uid, at.gid);
    println!("  size: {}  used: {}", at.size, at.used);
    println!("  rdev: {},{}", at.rdev.0, at.rdev.1);
    println!("  fsid: {:#x}  fileid: {}", at.fsid, at.fileid);
    for (n, t) in [
        ("atime", at.atime),
        ("mtime", at.mtime),
        ("ctime", at.ctime),
    ] {
        println!(" {n}: {}.{:09}", t.seconds, t.nseconds);
    }
    println!("handle: {}", hex::encode(fh.as_bytes()));
    Ok(ExitCode::SUCCESS)
}

/// Arguments of `rpcrdma nfs get`.
#[derive(Debug, Args)]
pub(crate) struct GetArgs {
    /// HOST:/PATH of a file.
    target: String,
    /// Local file to write (default: the remote name, in the current
    /// directory; `-` for standard output).
    local: Option<PathBuf>,
    /// NFSv4.1: after reading, keep the file open and the delegation the
    /// server granted for up to SECS seconds, until the server recalls it
    /// (CB_RECALL on this client's connection); it is then returned
    /// (DELEGRETURN) and the times reported.
    #[arg(long, value_name = "SECS")]
    hold_delegation: Option<u64>,
    #[command(flatten)]
    remote: Remote,
}

/// The local file `get` writes, or standard output.
fn sink_for(
    local: Option<&PathBuf>,
    remote_name: &[u8],
) -> anyhow::Result<(PathBuf, Box<dyn std::io::Write>)> {
    let local = match local {
        Some(p) => p.clone(),
        None => {
            if remote_name.is_empty() {
                bail!("name the local file: rpcrdma nfs get HOST:/PATH LOCAL");
            }
            PathBuf::from(String::from_utf8_lossy(remote_name).into_owned())
        }
    };
    let out: Box<dyn std::io::Write> = if local.as_os_str() == "-" {
        Box::new(std::io::stdout().lock())
    } else {
        Box::new(std::io::BufWriter::with_capacity(
            1 << 20,
            std::fs::File::create(&local)
                .with_context(|| format!("cannot create {}", local.display()))?,
        ))
    };
    Ok((local, out))
}

/// The summary `get` and `put` print on standard error when a transfer
/// ends, on a terminal or not: bytes, seconds and MiB/s.
fn report_rate(n: u64, t: Instant, to: &str) {
    let s = t.elapsed().as_secs_f64();
    eprintln!(
        "{n} bytes in {:.3} s ({:.1} MiB/s) -> {to}",
        s,
        n as f64 / s.max(1e-9) / 1048576.0,
    );
}

/// A transfer's progress and throughput on standard error, drawn only
/// when standard error is a terminal (as `rpcrdma bench` draws its bars);
/// otherwise nothing, not even an escape code.
struct Progress(Option<ProgressBar>);

impl Progress {
    /// A bar for `total` bytes, labelled `what` (`get`, `put`).
    fn new(total: u64, what: &str) -> Self {
        if !std::io::stderr().is_terminal() {
            return Self(None);
        }
        let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
        bar.set_style(
            ProgressStyle::with_template(
                "{msg} {bar:30} {binary_bytes}/{binary_total_bytes} {binary_bytes_per_sec} ETA {eta}",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        bar.set_message(what.to_owned());
        Self(Some(bar))
    }

    /// `n` more bytes moved.
    fn inc(&self, n: u64) {
        if let Some(bar) = &self.0 {
            bar.inc(n);
        }
    }

    /// Takes the bar off the terminal (the summary line follows).
    fn clear(&self) {
        if let Some(bar) = &self.0 {
            bar.finish_and_clear();
        }
    }
}

pub(crate) fn get(a: GetArgs) -> anyhow::Result<ExitCode> {
    runtime(Scheduler::MultiThread)?.block_on(async {
        let (opened, path) = open_target(&a.remote, &a.target).await?;
        let c = match opened {
            Opened::V3(c, rest) => {
                if a.hold_delegation.is_some() {
                    bail!("--hold-delegation needs NFSv4.1 (the server speaks NFSv3 only)");
                }
                return get_v3(&a, &c, &rest).await;
            }
            Opened::V4(c) => c,
        };
        let (parent, name) = split_last(&path);
        if name.is_empty() {
            bail!("{} names no file", a.target);
        }
        let (dir, _, _) = c
            .resolve(&parent, true)
            .await
            .map_err(|e| not_there(&a.target, e))?;
        let mut events = c.events();
        let f = c
            .open(&dir, &name, OpenOptions::read())
            .await
            .map_err(|e| not_there(&a.target, e))?;
        let attr = f.attrs();
        if attr.kind != FileKind::Regular {
            bail!("{} is a {:?}, not a regular file", a.target, attr.kind);
        }
        let (local, mut out) = sink_for(a.local.as_ref(), &name)?;
        let progress = Progress::new(attr.size, "get");
        let t = Instant::now();
        let cannot_write = || format!("cannot write {}", local.display());
        let n = f
            .read_to(attr.size, |chunk| {
                progress.inc(chunk.len() as u64);
                out.write_all(chunk).map_err(Nfs4Error::Local)
            })
            .await
            .map_err(|e| match e {
                Nfs4Error::Local(e) => anyhow::Error::new(e).context(cannot_write()),
                e => e.into(),
            });
        progress.clear();
        let n = n?;
        out.flush().with_context(cannot_write)?;
        drop(out);
        report_rate(n, t, &local.display().to_string());
        if n != attr.size {
            bail!(
                "the file changed size while reading: {n} bytes read, {} expected",
                attr.size
            );
        }
        let mut code = ExitCode::SUCCESS;
        if let Some(secs) = a.hold_delegation {
            code = hold_delegation(&f, &mut events, secs, &a.target).await;
        }
        f.close().await?;
        finish_v4(&c).await;
        Ok(code)
    })
}

/// `get --hold-delegation`: waits for the recall of the file's delegation
/// and its return; exit status 0 only if both happened.
async fn hold_delegation(
    f: &v4::File,
    events: &mut tokio::sync::broadcast::Receiver<ClientEvent>,
    secs: u64,
    target: &str,
) -> ExitCode {
    let Some(write) = f.delegation() else {
        eprintln!("delegation: the server granted none for {target}");
        return ExitCode::from(3);
    };
    eprintln!(
        "delegation: a {} delegation of {target} is held; waiting up to {secs} s for the server to recall it",
        if write { "write" } else { "read" }
    );
    let until = tokio::time::Instant::now() + Duration::from_secs(secs);
    let mut recalled = None;
    loop {
        match tokio::time::timeout_at(until, events.recv()).await {
            Ok(Ok(ClientEvent::Recalled { fh })) if fh == f.fh() => {
                recalled = Some(Instant::now());
                eprintln!("delegation: recalled by the server (CB_RECALL)");
            }
            Ok(Ok(ClientEvent::Returned { fh, took, status })) if fh == f.fh() => {
                eprintln!(
                    "delegation: returned (DELEGRETURN {}) {:.1} ms after the recall arrived",
                    v4::status_name(status),
                    took.as_secs_f64() * 1e3
                );
                return if status == v4::Status::Nfs4Ok && recalled.is_some() {
                    ExitCode::SUCCESS
                } else {
                    ExitCode::from(3)
                };
            }
            Ok(Ok(_)) => {}
            Ok(Err(tokio::sync::broadcast::error::RecvError::Lagged(_))) => {}
            Ok(Err(_)) | Err(_) => {
                eprintln!("delegation: not recalled within {secs} s");
                return ExitCode::from(3);
            }
        }
    }
}

async fn get_v3(a: &GetArgs, c: &NfsClient, rest: &[u8]) -> anyhow::Result<ExitCode> {
    let (fh, attr) = c.lookup_path(rest).await?;
    if attr.ftype != FileType::Regular {
        bail!("{} is a {:?}, not a regular file", a.target, attr.ftype);
    }
    let name = rest.rsplit(|&b| b == b'/').next().unwrap_or(b"");
    let (local, mut out) = sink_for(a.local.as_ref(), name)?;
    let progress = Progress::new(attr.size, "get");
    let t = Instant::now();
    let cannot_write = || format!("cannot write {}", local.display());
    let n = c
        .read_file(&fh, attr.size, |chunk| {
            progress.inc(chunk.len() as u64);
            out.write_all(chunk).map_err(NfsClientError::Local)
        })
        .await
        .map_err(|e| match e {
            // The sink's own failure: say which local file.
            NfsClientError::Local(e) => anyhow::Error::new(e).context(cannot_write()),
            e => e.into(),
        });
    progress.clear();
    let n = n?;
    out.flush().with_context(cannot_write)?;
    drop(out);
    report_rate(n, t, &local.display().to_string());
    if n != attr.size {
        bail!(
            "the file changed size while reading: {n} bytes read, {} expected",
            attr.size
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// Arguments of `rpcrdma nfs put`.
#[derive(Debug, Args)]
pub(crate) struct PutArgs {
    /// Local file to send.
    local: PathBuf,
    /// HOST:/PATH to write (a path ending in `/` takes the local name).
    target: String,
    /// Mode of the remote file (octal).
    #[arg(long, default_value = "644", value_parser = parse_mode)]
    mode: u32,
    #[command(flatten)]
    remote: Remote,
}

fn parse_mode(s: &str) -> Result<u32, String> {
    u32::from_str_radix(s, 8)
        .ok()
        .filter(|m| *m <= 0o7777)
        .ok_or_else(|| format!("{s:?} is not an octal mode like 644"))
}

/// Bytes written per window of `put` over NFSv4.1 (the memory it uses).
const PUT_WINDOW: usize = 16 << 20;

/// Reads the next window of `file` into `buf`; the bytes read.
fn fill(file: &mut std::fs::File, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        let k = file.read(&mut buf[n..])?;
        if k == 0 {
            break;
        }
        n += k;
    }
    Ok(n)
}

pub(crate) fn put(a: PutArgs) -> anyhow::Result<ExitCode> {
    runtime(Scheduler::MultiThread)?.block_on(async {
        let (host, mut path) = parse_target(&a.target)?;
        if path.ends_with(b"/") {
            let name = a
                .local
                .file_name()
                .context("the local path has no file name")?;
            path.extend_from_slice(name.as_encoded_bytes());
        }
        let (dir_path, name) = split_last(&path);
        if name.is_empty() {
            bail!("{} names no file", a.target);
        }
        let mut file = std::fs::File::open(&a.local)
            .with_context(|| format!("cannot open {}", a.local.display()))?;
        let size = file
            .metadata()
            .with_context(|| format!("cannot read {}", a.local.display()))?
            .len();
        let opened = open_any(&a.remote, a.remote.transport, a.remote.port, &host, &dir_path).await?;
        let mut verfs = std::collections::HashSet::new();
        let mut off = 0u64;
        let t;
        match opened {
            Opened::V3(c, rest) => {
                let (dir, _) = c.lookup_path(&rest).await?;
                let fh = c.create(&dir, &name, a.mode).await?;
                let progress = Progress::new(size, "put");
                t = Instant::now();
                // Each WRITE's data read straight into its own buffer as
                // the window frees (no copy, reads overlapping the WRITEs
                // on the wire); the progress counts what was handed out.
                let sent = c
                    .write_stream(&fh, 0, |max| {
                        let mut chunk = vec![0u8; max];
                        let n = fill(&mut file, &mut chunk)?;
                        chunk.truncate(n);
                        progress.inc(n as u64);
                        Ok((n > 0).then(|| Bytes::from(chunk)))
                    })
                    .await;
                progress.clear();
                let sent = sent.map_err(|e| match e {
                    NfsClientError::Local(e) => anyhow::Error::new(e)
                        .context(format!("cannot read {}", a.local.display())),
                    e => e.into(),
                })?;
                off = sent.0;
                verfs.extend(sent.1);
                verfs.insert(c.commit(&fh).await?);
            }
            Opened::V4(c) => {
                let (dir, _, _) = c.resolve(&dir_path, true).await?;
                let f = c
                    .open(&dir, &name, OpenOptions::write().create(a.mode).truncate())
                    .await?;
                let progress = Progress::new(size, "put");
                let mut buf = vec![0u8; PUT_WINDOW];
                t = Instant::now();
                let written: anyhow::Result<()> = async {
                    loop {
                        let n = fill(&mut file, &mut buf)
                            .with_context(|| format!("cannot read {}", a.local.display()))?;
                        if n == 0 {
                            return Ok(());
                        }
                        verfs.extend(f.write_all(off, Bytes::copy_from_slice(&buf[..n])).await?);
                        off += n as u64;
                        progress.inc(n as u64);
                    }
                }
                .await;
                progress.clear();
                written?;
                verfs.insert(f.commit().await?);
                f.close().await?;
                finish_v4(&c).await;
            }
        }
        if verfs.len() > 1 {
            bail!("the server restarted during the transfer (its write verifier changed); run put again");
        }
        report_rate(off, t, &format!("{host}:{}", String::from_utf8_lossy(&path)));
        Ok(ExitCode::SUCCESS)
    })
}
