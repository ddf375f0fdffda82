//! The NFSv3 client commands: `rpcrdma nfs ls|get|put|stat HOST:/PATH`.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use bytes::Bytes;
use clap::Args;
use rpcrdma_nfs3::client::{local_credential, NfsClient, NfsClientError};
use rpcrdma_nfs3::fs::{Attr, FileType};
use rpcrdma_oncrpc::tcp::TcpConnector;
use rpcrdma_oncrpc::{Client, ClientConfig};

use crate::cmd::connect::{connect, resolve, TransportKind};
use crate::cmd::rdma_opts::RdmaOpts;
use crate::cmd::{runtime, Scheduler};

/// Where the server is and how to reach it.
#[derive(Debug, Clone, Args)]
pub(crate) struct Remote {
    /// Transport for NFS (MOUNT always goes over TCP).
    #[arg(long, value_enum, default_value = "rdma")]
    pub(crate) transport: TransportKind,
    /// NFS port (default: 20049 over RDMA, 2049 over TCP).
    #[arg(long)]
    pub(crate) port: Option<u16>,
    /// MOUNT v3 port (TCP).
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
        .with_context(|| format!("cannot mount {host}:{}", String::from_utf8_lossy(path)))
}

async fn open_default(r: &Remote, target: &str) -> anyhow::Result<(NfsClient, Vec<u8>, String)> {
    let (host, path) = parse_target(target)?;
    let (c, rest) = open(r, r.transport, r.port, &host, &path).await?;
    Ok((c, rest, host))
}

fn type_char(t: FileType) -> char {
    match t {
        FileType::Regular => '-',
        FileType::Directory => 'd',
        FileType::BlockDevice => 'b',
        FileType::CharDevice => 'c',
        FileType::Symlink => 'l',
        FileType::Socket => 's',
        FileType::Fifo => 'p',
    }
}

fn mode_string(a: &Attr) -> String {
    let mut s = String::new();
    s.push(type_char(a.ftype));
    for shift in [6, 3, 0] {
        let b = (a.mode >> shift) & 7;
        s.push(if b & 4 != 0 { 'r' } else { '-' });
        s.push(if b & 2 != 0 { 'w' } else { '-' });
        s.push(if b & 1 != 0 { 'x' } else { '-' });
    }
    s
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
        let (c, rest, _) = open_default(&a.remote, &a.target).await?;
        let (dir, attr) = c.lookup_path(&rest).await?;
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
    })
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
        let (c, rest, _) = open_default(&a.remote, &a.target).await?;
        let (fh, at) = c.lookup_path(&rest).await?;
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
    })
}

/// Arguments of `rpcrdma nfs get`.
#[derive(Debug, Args)]
pub(crate) struct GetArgs {
    /// HOST:/PATH of a file.
    target: String,
    /// Local file to write (default: the remote name, in the current
    /// directory; `-` for standard output).
    local: Option<PathBuf>,
    #[command(flatten)]
    remote: Remote,
}

pub(crate) fn get(a: GetArgs) -> anyhow::Result<ExitCode> {
    use std::io::Write;
    runtime(Scheduler::MultiThread)?.block_on(async {
        let (c, rest, _) = open_default(&a.remote, &a.target).await?;
        let (fh, attr) = c.lookup_path(&rest).await?;
        if attr.ftype != FileType::Regular {
            bail!("{} is a {:?}, not a regular file", a.target, attr.ftype);
        }
        let local = match &a.local {
            Some(p) => p.clone(),
            None => {
                let name = rest.rsplit(|&b| b == b'/').next().unwrap_or(b"");
                if name.is_empty() {
                    bail!("name the local file: rpcrdma nfs get HOST:/PATH LOCAL");
                }
                PathBuf::from(String::from_utf8_lossy(name).into_owned())
            }
        };
        let mut out: Box<dyn Write> = if local.as_os_str() == "-" {
            Box::new(std::io::stdout().lock())
        } else {
            Box::new(std::io::BufWriter::with_capacity(
                1 << 20,
                std::fs::File::create(&local)
                    .with_context(|| format!("cannot create {}", local.display()))?,
            ))
        };
        let t = Instant::now();
        let cannot_write = || format!("cannot write {}", local.display());
        let n = c
            .read_file(&fh, attr.size, |chunk| {
                out.write_all(chunk).map_err(NfsClientError::Local)
            })
            .await
            .map_err(|e| match e {
                // The sink's own failure: say which local file.
                NfsClientError::Local(e) => anyhow::Error::new(e).context(cannot_write()),
                e => e.into(),
            })?;
        out.flush().with_context(cannot_write)?;
        let s = t.elapsed().as_secs_f64();
        eprintln!(
            "{n} bytes in {:.3} s ({:.1} MiB/s) -> {}",
            s,
            n as f64 / s.max(1e-9) / 1048576.0,
            local.display()
        );
        if n != attr.size {
            bail!(
                "the file changed size while reading: {n} bytes read, {} expected",
                attr.size
            );
        }
        Ok(ExitCode::SUCCESS)
    })
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

/// Bytes written per window of `put` (the memory it uses).
const PUT_WINDOW: usize = 16 << 20;

pub(crate) fn put(a: PutArgs) -> anyhow::Result<ExitCode> {
    use std::io::Read;
    runtime(Scheduler::MultiThread)?.block_on(async {
        let (host, mut path) = parse_target(&a.target)?;
        if path.ends_with(b"/") {
            let name = a
                .local
                .file_name()
                .context("the local path has no file name")?;
            path.extend_from_slice(name.as_encoded_bytes());
        }
        let split = path.iter().rposition(|&b| b == b'/').unwrap_or(0);
        let (dir_path, name) = (path[..split.max(1)].to_vec(), path[split + 1..].to_vec());
        if name.is_empty() {
            bail!("{} names no file", a.target);
        }
        let mut file = std::fs::File::open(&a.local)
            .with_context(|| format!("cannot open {}", a.local.display()))?;
        let (c, rest) = open(&a.remote, a.remote.transport, a.remote.port, &host, &dir_path).await?;
        let (dir, _) = c.lookup_path(&rest).await?;
        let fh = c.create(&dir, &name, a.mode).await?;
        let t = Instant::now();
        let mut verfs = std::collections::HashSet::new();
        let mut off = 0u64;
        let mut buf = vec![0u8; PUT_WINDOW];
        loop {
            let mut n = 0;
            while n < buf.len() {
                let k = file.read(&mut buf[n..])?;
                if k == 0 {
                    break;
                }
                n += k;
            }
            if n == 0 {
                break;
            }
            verfs.extend(c.write_range(&fh, off, Bytes::copy_from_slice(&buf[..n])).await?);
            off += n as u64;
        }
        verfs.insert(c.commit(&fh).await?);
        if verfs.len() > 1 {
            bail!("the server restarted during the transfer (its write verifier changed); run put again");
        }
        let s = t.elapsed().as_secs_f64();
        eprintln!(
            "{off} bytes in {:.3} s ({:.1} MiB/s) -> {host}:{}",
            s,
            off as f64 / s.max(1e-9) / 1048576.0,
            String::from_utf8_lossy(&path)
        );
        Ok(ExitCode::SUCCESS)
    })
}
