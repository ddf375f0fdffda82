//! An NFSv3 client over any ONC RPC transport: mount, look paths up,
//! list directories, read and write whole files with several 1 MiB
//! requests in flight.
//!
//! ```no_run
//! # async fn f(nfs_rpc: rpcrdma_oncrpc::Client, mount_rpc: rpcrdma_oncrpc::Client) -> Result<(), rpcrdma_nfs3::client::NfsClientError> {
//! use rpcrdma_nfs3::client::NfsClient;
//! let (nfs, path) = NfsClient::mount(nfs_rpc, mount_rpc, b"/export/dir/file.bin").await?;
//! let (fh, attr) = nfs.lookup_path(&path).await?;
//! let mut data = Vec::new();
//! nfs.read_file(&fh, attr.size, |chunk| { data.extend_from_slice(chunk); Ok(()) }).await?;
//! # Ok(()) }
//! ```

use std::collections::VecDeque;

use bytes::Bytes;
use rpcrdma_oncrpc::{AuthSysParams, Credential, RpcError};

use crate::convert::{self as c, attr_of, error_of};
use crate::fs::{Attr, FileHandle, NfsError, SetAttr, StableHow, NFS3_FHSIZE};
use crate::proto::mount3 as m;
use crate::proto::nfs3 as p;

/// Requests [`NfsClient::read_file`] and [`NfsClient::write_file`] keep
/// in flight unless told otherwise ([`NfsClient::set_in_flight`]).
pub const IN_FLIGHT: usize = 4;
/// Most requests [`NfsClient::set_in_flight`] accepts.
pub const MAX_IN_FLIGHT: usize = 128;
/// Most entries [`NfsClient::list`] collects.
pub const MAX_LIST: usize = 10_000_000;

/// What went wrong on the client side.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum NfsClientError {
    /// The RPC failed.
    #[error("{op}: {source}")]
    Rpc {
        /// The procedure.
        op: &'static str,
        /// Why.
        source: RpcError,
    },
    /// The server answered with an NFS error.
    #[error("{op} {path}: {status}")]
    Nfs {
        /// The procedure.
        op: &'static str,
        /// What it was about.
        path: String,
        /// The status.
        status: NfsError,
    },
    /// MOUNT refused the path.
    #[error("MOUNT {path}: the server answered {status:?} (is the path exported? `showmount -e` lists exports)")]
    Mount {
        /// The path.
        path: String,
        /// The status.
        status: m::Mountstat3,
    },
    /// The server returned a file handle longer than NFSv3 allows.
    #[error("{op} returned a file handle of {len} bytes, over NFSv3's {NFS3_FHSIZE}")]
    BadHandle {
        /// The procedure.
        op: &'static str,
        /// The handle's length.
        len: usize,
    },
    /// The task running one of the requests kept in flight failed
    /// (it panicked or was cancelled).
    #[error("{op} task failed: {source}")]
    Task {
        /// The procedure.
        op: &'static str,
        /// Why.
        source: tokio::task::JoinError,
    },
    /// A directory has more entries than [`NfsClient::list`] collects.
    #[error("directory has more than {max} entries")]
    TooManyEntries {
        /// The limit ([`MAX_LIST`]).
        max: usize,
    },
    /// A local error while handling data.
    #[error("{0}")]
    Local(#[from] std::io::Error),
    /// The server broke the protocol.
    #[error("protocol: {0}")]
    Protocol(#[from] ProtocolViolation),
    /// The server restarted during a write and lost unstable data more
    /// often than we retry.
    #[error(
        "the server's write verifier kept changing: it restarted during the transfer; try again"
    )]
    VerifierChanged,
}

/// How a server broke the protocol.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ProtocolViolation {
    /// READDIR(PLUS) returned no entries without reaching the end of the
    /// directory, so following its cookie would loop.
    #[error("READDIR returned no entries and no end of directory")]
    EmptyReaddir,
    /// A READ reply's `count` or data disagree with each other or with the
    /// count asked for.
    #[error("READ of {asked} bytes returned count {count} with {data} bytes")]
    ReadCount {
        /// The count asked for.
        asked: u32,
        /// The reply's `count`.
        count: u32,
        /// The bytes of data in the reply.
        data: usize,
    },
    /// A READ returned no data and no end of file.
    #[error("READ at {offset} returned nothing before the end of the file")]
    ReadNoProgress {
        /// The READ's offset.
        offset: u64,
    },
    /// A WRITE reply's `count` is more than the data sent.
    #[error("WRITE count {count} beyond the {sent} bytes sent")]
    WriteCount {
        /// The reply's `count`.
        count: u32,
        /// The bytes sent.
        sent: usize,
    },
    /// A WRITE wrote less than it was sent (this client does not resend
    /// the rest).
    #[error("short WRITE: {written} of {sent} bytes")]
    ShortWrite {
        /// The reply's `count`.
        written: u32,
        /// The bytes sent.
        sent: usize,
    },
}

fn rpc(op: &'static str) -> impl FnOnce(RpcError) -> NfsClientError {
    move |source| NfsClientError::Rpc { op, source }
}

fn bad_handle(op: &'static str, len: usize) -> impl FnOnce(NfsError) -> NfsClientError {
    move |_| NfsClientError::BadHandle { op, len }
}

/// How long a request the server answers `NFS3ERR_JUKEBOX` is retried
/// (RFC 1813 §2.6: the server started it and could not finish in time;
/// the client retries later): 2 minutes, the delay doubling from 50 ms to
/// 2 s. An NFSv4 delegation held by another client is one reason: the
/// change waits until it is returned.
pub const JUKEBOX_PATIENCE: std::time::Duration = std::time::Duration::from_secs(120);

/// Runs `f` again while the server answers `NFS3ERR_JUKEBOX`, within
/// [`JUKEBOX_PATIENCE`].
async fn patiently<T, Fut>(mut f: impl FnMut() -> Fut) -> Result<T, NfsClientError>
where
    Fut: std::future::Future<Output = Result<T, NfsClientError>>,
{
    let start = std::time::Instant::now();
    let mut delay = std::time::Duration::from_millis(50);
    loop {
        match f().await {
            Err(NfsClientError::Nfs {
                status: NfsError::Jukebox,
                ..
            }) if start.elapsed() < JUKEBOX_PATIENCE => {
                tokio::time::sleep(delay).await;
                delay = (delay * 2).min(std::time::Duration::from_secs(2));
            }
            other => return other,
        }
    }
}

fn nfs(op: &'static str, path: &[u8], s: p::Nfsstat3) -> NfsClientError {
    NfsClientError::Nfs {
        op,
        path: String::from_utf8_lossy(path).into_owned(),
        status: error_of(s).unwrap_or(NfsError::ServerFault),
    }
}

/// An AUTH_SYS credential for the current process (uid, gid, groups,
/// host name), as the kernel client sends.
pub fn local_credential() -> Credential {
    let uid = rustix::process::geteuid().as_raw();
    let gid = rustix::process::getegid().as_raw();
    let mut groups: Vec<u32> = rustix::process::getgroups()
        .unwrap_or_default()
        .into_iter()
        .map(|g| g.as_raw())
        .collect();
    groups.truncate(16);
    let host = rustix::system::uname()
        .nodename()
        .to_string_lossy()
        .into_owned();
    let host: String = host.chars().take(255).collect();
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as u32)
        .unwrap_or(0);
    AuthSysParams::new(stamp, host, uid, gid, groups)
        .map(Credential::Sys)
        .unwrap_or(Credential::None)
}

/// Bytes of a READ reply's results besides the data: status, attributes,
/// `count`, `eof` and the data's length word.
pub const READ_RESULTS_WITHOUT_DATA: u32 = 4 + 88 + 4 + 4 + 4;

/// The NFS Upper-Layer Binding as this client applies it: the `.x` file's
/// hints, except READ, which states its results with the data reduced
/// ([`rpcrdma_oncrpc::CallHints::reduced_results`]), so an RDMA requester
/// offers only the Write chunk for the data and no Reply chunk (the Linux
/// client does the same). Offering a Reply chunk as well (the general rule of
/// `docs/spec-notes.md` E1) draws a Linux nfsd 6.1 quirk: given both, it
/// writes the data into the Write chunk *and* into the Reply chunk, and
/// the reply no longer decodes (spec-notes N13).
#[derive(Debug, Clone, Copy, Default)]
pub struct NfsUlb;

impl p::nfs_v3::Ulb for NfsUlb {
    fn read(&self, args: &p::Read3args) -> rpcrdma_oncrpc::CallHints {
        p::nfs_v3::hints_read(args).reduced_results(READ_RESULTS_WITHOUT_DATA)
    }
}

/// One directory entry as listed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listed {
    /// Name.
    pub name: Bytes,
    /// Inode number.
    pub fileid: u64,
    /// Attributes, when the server sent them (READDIRPLUS).
    pub attr: Option<Attr>,
}

/// An NFSv3 client on one mounted export.
#[derive(Debug, Clone)]
pub struct NfsClient {
    nfs: p::nfs_v3::Client,
    root: FileHandle,
    rtmax: u32,
    wtmax: u32,
    in_flight: usize,
}

impl NfsClient {
    /// Mounts through `mount_rpc` (MOUNT v3) and asks FSINFO over
    /// `nfs_rpc`. The longest prefix of `path` that MOUNT accepts is
    /// mounted (`path` itself, else its parents, up to `/`); returns the
    /// client and the rest of the path, to look up from the root.
    pub async fn mount(
        nfs_rpc: rpcrdma_oncrpc::Client,
        mount_rpc: rpcrdma_oncrpc::Client,
        path: &[u8],
    ) -> Result<(Self, Vec<u8>), NfsClientError> {
        let mount = m::mount_v3::Client::new(mount_rpc);
        let mut prefix: Vec<u8> = path.to_vec();
        let mut last;
        let root = loop {
            let r = mount
                .mnt(Bytes::copy_from_slice(&prefix))
                .await
                .map_err(rpc("MOUNT"))?;
            match r {
                m::Mountres3::Mnt3Ok(ok) => {
                    break FileHandle::from_bytes(&ok.fhandle)
                        .map_err(bad_handle("MOUNT", ok.fhandle.len()))?
                }
                m::Mountres3::Default(s) => last = s,
            }
            // Try the parent directory.
            while prefix.len() > 1 && prefix.ends_with(b"/") {
                prefix.pop();
            }
            match prefix.iter().rposition(|&b| b == b'/') {
                Some(0) if prefix.len() > 1 => prefix.truncate(1),
                Some(i) if i > 0 => prefix.truncate(i),
                _ => {
                    return Err(NfsClientError::Mount {
                        path: String::from_utf8_lossy(path).into_owned(),
                        status: last,
                    })
                }
            }
        };
        let rest = path[prefix.len().min(path.len())..].to_vec();
        let stubs = p::nfs_v3::Client::with_ulb(nfs_rpc, std::sync::Arc::new(NfsUlb));
        let info = stubs
            .fsinfo(p::Fsinfo3args {
                fsroot: c::fh(&root),
            })
            .await
            .map_err(rpc("FSINFO"))?;
        let (rtmax, wtmax) = match info {
            p::Fsinfo3res::Nfs3Ok(ok) => (ok.rtmax, ok.wtmax),
            p::Fsinfo3res::Default(s, _) => return Err(nfs("FSINFO", b"/", s)),
        };
        Ok((
            Self {
                nfs: stubs,
                root,
                // At least 4 KiB, at most 1 MiB per request.
                rtmax: rtmax.clamp(4096, 1 << 20),
                wtmax: wtmax.clamp(4096, 1 << 20),
                in_flight: IN_FLIGHT,
            },
            rest,
        ))
    }

    /// How many READs or WRITEs [`NfsClient::read_file`] and
    /// [`NfsClient::write_range`] keep in flight: `n` clamped to
    /// 1..=[`MAX_IN_FLIGHT`] (default [`IN_FLIGHT`]).
    pub fn set_in_flight(&mut self, n: usize) {
        self.in_flight = n.clamp(1, MAX_IN_FLIGHT);
    }

    /// Requests kept in flight by the whole-file transfers.
    pub fn in_flight(&self) -> usize {
        self.in_flight
    }

    /// The mounted root's handle.
    pub fn root(&self) -> &FileHandle {
        &self.root
    }

    /// The generated NFSv3 stubs underneath.
    pub fn stubs(&self) -> &p::nfs_v3::Client {
        &self.nfs
    }

    /// Largest READ and WRITE used.
    pub fn io_sizes(&self) -> (u32, u32) {
        (self.rtmax, self.wtmax)
    }

    /// GETATTR.
    pub async fn getattr(&self, fh: &FileHandle) -> Result<Attr, NfsClientError> {
        match self
            .nfs
            .getattr(p::Getattr3args { object: c::fh(fh) })
            .await
            .map_err(rpc("GETATTR"))?
        {
            p::Getattr3res::Nfs3Ok(ok) => Ok(attr_of(&ok.obj_attributes)),
            p::Getattr3res::Default(s) => Err(nfs("GETATTR", b"", s)),
        }
    }

    /// LOOKUP of one name.
    pub async fn lookup(
        &self,
        dir: &FileHandle,
        name: &[u8],
    ) -> Result<(FileHandle, Attr), NfsClientError> {
        let r = self
            .nfs
            .lookup(p::Lookup3args {
                what: p::Diropargs3 {
                    dir: c::fh(dir),
                    name: Bytes::copy_from_slice(name),
                },
            })
            .await
            .map_err(rpc("LOOKUP"))?;
        match r {
            p::Lookup3res::Nfs3Ok(ok) => {
                let fh =
                    c::handle_of(&ok.object).map_err(bad_handle("LOOKUP", ok.object.data.len()))?;
                let attr = match ok.obj_attributes {
                    p::PostOpAttr::True(a) => attr_of(&a),
                    p::PostOpAttr::False => self.getattr(&fh).await?,
                };
                Ok((fh, attr))
            }
            p::Lookup3res::Default(s, _) => Err(nfs("LOOKUP", name, s)),
        }
    }

    /// Looks a `/`-separated path up from the root (empty: the root).
    pub async fn lookup_path(&self, path: &[u8]) -> Result<(FileHandle, Attr), NfsClientError> {
        let mut fh = self.root.clone();
        let mut attr = None;
        for comp in path.split(|&b| b == b'/').filter(|c| !c.is_empty()) {
            let (h, a) = self.lookup(&fh, comp).await?;
            fh = h;
            attr = Some(a);
        }
        let attr = match attr {
            Some(a) => a,
            None => self.getattr(&fh).await?,
        };
        Ok((fh, attr))
    }

    /// Lists a directory completely (READDIRPLUS with `plus`, else
    /// READDIR), following cookies; at most [`MAX_LIST`] entries.
    pub async fn list(&self, dir: &FileHandle, plus: bool) -> Result<Vec<Listed>, NfsClientError> {
        let mut out = Vec::new();
        let (mut cookie, mut verf) = (0u64, [0u8; 8]);
        loop {
            let (batch, eof) = if plus {
                let r = self
                    .nfs
                    .readdirplus(p::Readdirplus3args {
                        dir: c::fh(dir),
                        cookie,
                        cookieverf: verf,
                        dircount: 16 * 1024,
                        maxcount: 64 * 1024,
                    })
                    .await
                    .map_err(rpc("READDIRPLUS"))?;
                let ok = match r {
                    p::Readdirplus3res::Nfs3Ok(ok) => ok,
                    p::Readdirplus3res::Default(s, _) => return Err(nfs("READDIRPLUS", b"", s)),
                };
                verf = ok.cookieverf;
                let mut v = Vec::new();
                let mut e = ok.reply.entries.as_deref();
                while let Some(b) = e {
                    v.push((
                        Listed {
                            name: b.name.clone(),
                            fileid: b.fileid,
                            attr: match &b.name_attributes {
                                p::PostOpAttr::True(a) => Some(attr_of(a)),
                                p::PostOpAttr::False => None,
                            },
                        },
                        b.cookie,
                    ));
                    e = b.nextentry.as_deref();
                }
                (v, ok.reply.eof)
            } else {
                let r = self
                    .nfs
                    .readdir(p::Readdir3args {
                        dir: c::fh(dir),
                        cookie,
                        cookieverf: verf,
                        count: 64 * 1024,
                    })
                    .await
                    .map_err(rpc("READDIR"))?;
                let ok = match r {
                    p::Readdir3res::Nfs3Ok(ok) => ok,
                    p::Readdir3res::Default(s, _) => return Err(nfs("READDIR", b"", s)),
                };
                verf = ok.cookieverf;
                let mut v = Vec::new();
                let mut e = ok.reply.entries.as_deref();
                while let Some(b) = e {
                    v.push((
                        Listed {
                            name: b.name.clone(),
                            fileid: b.fileid,
                            attr: None,
                        },
                        b.cookie,
                    ));
                    e = b.nextentry.as_deref();
                }
                (v, ok.reply.eof)
            };
            if batch.is_empty() && !eof {
                return Err(ProtocolViolation::EmptyReaddir.into());
            }
            for (l, ck) in batch {
                cookie = ck;
                out.push(l);
            }
            if out.len() > MAX_LIST {
                return Err(NfsClientError::TooManyEntries { max: MAX_LIST });
            }
            if eof {
                return Ok(out);
            }
        }
    }

    /// One READ.
    pub async fn read(
        &self,
        fh: &FileHandle,
        offset: u64,
        count: u32,
    ) -> Result<(Bytes, bool), NfsClientError> {
        let r = self
            .nfs
            .read(p::Read3args {
                file: c::fh(fh),
                offset,
                count,
            })
            .await
            .map_err(rpc("READ"))?;
        match r {
            p::Read3res::Nfs3Ok(ok) => {
                if ok.data.len() > count as usize || ok.count as usize != ok.data.len() {
                    return Err(ProtocolViolation::ReadCount {
                        asked: count,
                        count: ok.count,
                        data: ok.data.len(),
                    }
                    .into());
                }
                Ok((ok.data, ok.eof))
            }
            p::Read3res::Default(s, _) => Err(nfs("READ", b"", s)),
        }
    }

    /// Reads `size` bytes of a file from offset 0, [`NfsClient::in_flight`]
    /// READs of up to `rtmax` at a time, handing each chunk to `sink` in order.
    /// Stops early at the end of the file.
    pub async fn read_file(
        &self,
        fh: &FileHandle,
        size: u64,
        mut sink: impl FnMut(&[u8]) -> Result<(), NfsClientError>,
    ) -> Result<u64, NfsClientError> {
        type Read = tokio::task::JoinHandle<Result<(Bytes, bool), NfsClientError>>;
        let step = u64::from(self.rtmax);
        let mut next = 0u64;
        let mut done = 0u64;
        let mut queue: VecDeque<(u64, u32, Read)> = VecDeque::new();
        let result = loop {
            while queue.len() < self.in_flight && next < size {
                let n = step.min(size - next) as u32;
                let (me, fh) = (self.clone(), fh.clone());
                let off = next;
                queue.push_back((
                    next,
                    n,
                    tokio::spawn(async move { me.read(&fh, off, n).await }),
                ));
                next += u64::from(n);
            }
            let Some((off, n, task)) = queue.pop_front() else {
                break Ok(done);
            };
            let (data, eof) = match task.await {
                Ok(Ok(r)) => r,
                Ok(Err(e)) => break Err(e),
                Err(source) => break Err(NfsClientError::Task { op: "READ", source }),
            };
            debug_assert_eq!(off, done);
            if let Err(e) = sink(&data) {
                break Err(e);
            }
            done += data.len() as u64;
            if (data.len() as u32) < n {
                if eof {
                    break Ok(done);
                }
                if data.is_empty() {
                    break Err(ProtocolViolation::ReadNoProgress { offset: off }.into());
                }
                // A short read before the end: read the rest again.
                for (_, _, t) in queue.drain(..) {
                    t.abort();
                }
                next = done;
            }
        };
        for (_, _, t) in queue {
            t.abort();
        }
        result
    }

    /// Creates (or truncates) `name` in `dir` with `mode` (retried while
    /// the server answers `NFS3ERR_JUKEBOX`).
    pub async fn create(
        &self,
        dir: &FileHandle,
        name: &[u8],
        mode: u32,
    ) -> Result<FileHandle, NfsClientError> {
        patiently(|| self.create_once(dir, name, mode)).await
    }

    async fn create_once(
        &self,
        dir: &FileHandle,
        name: &[u8],
        mode: u32,
    ) -> Result<FileHandle, NfsClientError> {
        let set = SetAttr {
            mode: Some(mode),
            size: Some(0),
            ..SetAttr::default()
        };
        let r = self
            .nfs
            .create(p::Create3args {
                r#where: p::Diropargs3 {
                    dir: c::fh(dir),
                    name: Bytes::copy_from_slice(name),
                },
                how: p::Createhow3::Unchecked(c::sattr3(&set)),
            })
            .await
            .map_err(rpc("CREATE"))?;
        match r {
            p::Create3res::Nfs3Ok(ok) => match ok.obj {
                p::PostOpFh3::True(h) => {
                    c::handle_of(&h).map_err(bad_handle("CREATE", h.data.len()))
                }
                p::PostOpFh3::False => Ok(self.lookup(dir, name).await?.0),
            },
            p::Create3res::Default(s, _) => Err(nfs("CREATE", name, s)),
        }
    }

    /// One WRITE (retried while the server answers `NFS3ERR_JUKEBOX`);
    /// returns the count, how it was committed and the verifier.
    pub async fn write(
        &self,
        fh: &FileHandle,
        offset: u64,
        data: Bytes,
        stable: StableHow,
    ) -> Result<(u32, StableHow, [u8; 8]), NfsClientError> {
        patiently(|| self.write_once(fh, offset, data.clone(), stable)).await
    }

    async fn write_once(
        &self,
        fh: &FileHandle,
        offset: u64,
        data: Bytes,
        stable: StableHow,
    ) -> Result<(u32, StableHow, [u8; 8]), NfsClientError> {
        let len = data.len();
        let r = self
            .nfs
            .write(p::Write3args {
                file: c::fh(fh),
                offset,
                count: len as u32,
                stable: c::stable(stable),
                data,
            })
            .await
            .map_err(rpc("WRITE"))?;
        match r {
            p::Write3res::Nfs3Ok(ok) => {
                if ok.count as usize > len {
                    return Err(ProtocolViolation::WriteCount {
                        count: ok.count,
                        sent: len,
                    }
                    .into());
                }
                let how = match ok.committed {
                    p::StableHow::Unstable => StableHow::Unstable,
                    p::StableHow::DataSync => StableHow::DataSync,
                    p::StableHow::FileSync => StableHow::FileSync,
                };
                Ok((ok.count, how, ok.verf))
            }
            p::Write3res::Default(s, _) => Err(nfs("WRITE", b"", s)),
        }
    }

    /// COMMIT of the whole file (retried while the server answers
    /// `NFS3ERR_JUKEBOX`); returns the verifier.
    pub async fn commit(&self, fh: &FileHandle) -> Result<[u8; 8], NfsClientError> {
        patiently(|| self.commit_once(fh)).await
    }

    async fn commit_once(&self, fh: &FileHandle) -> Result<[u8; 8], NfsClientError> {
        match self
            .nfs
            .commit(p::Commit3args {
                file: c::fh(fh),
                offset: 0,
                count: 0,
            })
            .await
            .map_err(rpc("COMMIT"))?
        {
            p::Commit3res::Nfs3Ok(ok) => Ok(ok.verf),
            p::Commit3res::Default(s, _) => Err(nfs("COMMIT", b"", s)),
        }
    }

    /// Writes `data` at `offset` with UNSTABLE WRITEs of up to `wtmax`,
    /// [`NfsClient::in_flight`] at a time (no COMMIT); returns the write
    /// verifiers seen (more than one: the server restarted meanwhile).
    pub async fn write_range(
        &self,
        fh: &FileHandle,
        offset: u64,
        data: Bytes,
    ) -> Result<std::collections::HashSet<[u8; 8]>, NfsClientError> {
        let mut at = 0usize;
        let (_, verfs) = self
            .write_stream(fh, offset, |max| {
                let end = (at + max).min(data.len());
                let chunk = (end > at).then(|| data.slice(at..end));
                at = end;
                Ok(chunk)
            })
            .await?;
        Ok(verfs)
    }

    /// Writes what `next` hands out, in order from `offset`, with UNSTABLE
    /// WRITEs kept [`NfsClient::in_flight`] at a time (no COMMIT). `next`
    /// is called with the largest WRITE (`wtmax`) whenever the window has
    /// room, and returns the next chunk of at most that many octets
    /// (`None` at the end); it runs while earlier WRITEs are on the wire,
    /// so a caller reading a local file overlaps its reads with the
    /// transfer. Returns the octets written and the write verifiers seen.
    pub async fn write_stream(
        &self,
        fh: &FileHandle,
        offset: u64,
        mut next: impl FnMut(usize) -> std::io::Result<Option<Bytes>>,
    ) -> Result<(u64, std::collections::HashSet<[u8; 8]>), NfsClientError> {
        type Write = tokio::task::JoinHandle<Result<(u32, [u8; 8]), NfsClientError>>;
        let step = self.wtmax as usize;
        let mut verfs = std::collections::HashSet::new();
        let mut queue: VecDeque<(usize, Write)> = VecDeque::new();
        let mut at = 0u64;
        let mut more = true;
        let result = loop {
            while more && queue.len() < self.in_flight {
                let chunk = match next(step) {
                    Ok(Some(c)) if !c.is_empty() => c,
                    Ok(_) => {
                        more = false;
                        break;
                    }
                    Err(e) => {
                        for (_, t) in queue.drain(..) {
                            t.abort();
                        }
                        return Err(NfsClientError::Local(e));
                    }
                };
                if chunk.len() > step {
                    for (_, t) in queue.drain(..) {
                        t.abort();
                    }
                    return Err(NfsClientError::Local(std::io::Error::new(
                        std::io::ErrorKind::InvalidInput,
                        format!(
                            "a chunk of {} octets is larger than the WRITE size {step}",
                            chunk.len()
                        ),
                    )));
                }
                let (me, fh) = (self.clone(), fh.clone());
                let off = offset + at;
                let len = chunk.len();
                queue.push_back((
                    len,
                    tokio::spawn(async move {
                        let (n, _, v) = me.write(&fh, off, chunk, StableHow::Unstable).await?;
                        Ok((n, v))
                    }),
                ));
                at += len as u64;
            }
            let Some((want, task)) = queue.pop_front() else {
                break Ok((at, verfs));
            };
            match task.await {
                Ok(Ok((n, v))) if n as usize == want => {
                    verfs.insert(v);
                }
                Ok(Ok((n, _))) => {
                    break Err(ProtocolViolation::ShortWrite {
                        written: n,
                        sent: want,
                    }
                    .into())
                }
                Ok(Err(e)) => break Err(e),
                Err(source) => {
                    break Err(NfsClientError::Task {
                        op: "WRITE",
                        source,
                    })
                }
            }
        };
        for (_, t) in queue {
            t.abort();
        }
        result
    }

    /// Writes `data` from offset 0 ([`NfsClient::write_range`]), then
    /// COMMITs. If the write verifier changed (the server restarted and
    /// may have lost unstable data), the whole file is written again, up
    /// to 3 times.
    pub async fn write_file(&self, fh: &FileHandle, data: &Bytes) -> Result<(), NfsClientError> {
        for _ in 0..3 {
            let mut verfs = self.write_range(fh, 0, data.clone()).await?;
            verfs.insert(self.commit(fh).await?);
            if verfs.len() <= 1 {
                return Ok(());
            }
            tracing::warn!(
                "the server's write verifier changed during the transfer: writing again"
            );
        }
        Err(NfsClientError::VerifierChanged)
    }

    /// SETATTR without a guard (retried while the server answers
    /// `NFS3ERR_JUKEBOX`).
    pub async fn setattr(&self, fh: &FileHandle, set: &SetAttr) -> Result<(), NfsClientError> {
        patiently(|| async {
            match self
                .nfs
                .setattr(p::Setattr3args {
                    object: c::fh(fh),
                    new_attributes: c::sattr3(set),
                    guard: p::Sattrguard3::False,
                })
                .await
                .map_err(rpc("SETATTR"))?
            {
                p::Setattr3res::Nfs3Ok(_) => Ok(()),
                p::Setattr3res::Default(s, _) => Err(nfs("SETATTR", b"", s)),
            }
        })
        .await
    }

    /// MKDIR of `name` in `dir` with `mode`.
    pub async fn mkdir(
        &self,
        dir: &FileHandle,
        name: &[u8],
        mode: u32,
    ) -> Result<FileHandle, NfsClientError> {
        let set = SetAttr {
            mode: Some(mode),
            ..SetAttr::default()
        };
        let r = self
            .nfs
            .mkdir(p::Mkdir3args {
                r#where: p::Diropargs3 {
                    dir: c::fh(dir),
                    name: Bytes::copy_from_slice(name),
                },
                attributes: c::sattr3(&set),
            })
            .await
            .map_err(rpc("MKDIR"))?;
        match r {
            p::Mkdir3res::Nfs3Ok(ok) => match ok.obj {
                p::PostOpFh3::True(h) => {
                    c::handle_of(&h).map_err(bad_handle("MKDIR", h.data.len()))
                }
                p::PostOpFh3::False => Ok(self.lookup(dir, name).await?.0),
            },
            p::Mkdir3res::Default(s, _) => Err(nfs("MKDIR", name, s)),
        }
    }

    /// RMDIR.
    pub async fn rmdir(&self, dir: &FileHandle, name: &[u8]) -> Result<(), NfsClientError> {
        match self
            .nfs
            .rmdir(p::Rmdir3args {
                object: p::Diropargs3 {
                    dir: c::fh(dir),
                    name: Bytes::copy_from_slice(name),
                },
            })
            .await
            .map_err(rpc("RMDIR"))?
        {
            p::Rmdir3res::Nfs3Ok(_) => Ok(()),
            p::Rmdir3res::Default(s, _) => Err(nfs("RMDIR", name, s)),
        }
    }

    /// REMOVE.
    pub async fn remove(&self, dir: &FileHandle, name: &[u8]) -> Result<(), NfsClientError> {
        match self
            .nfs
            .remove(p::Remove3args {
                object: p::Diropargs3 {
                    dir: c::fh(dir),
                    name: Bytes::copy_from_slice(name),
                },
            })
            .await
            .map_err(rpc("REMOVE"))?
        {
            p::Remove3res::Nfs3Ok(_) => Ok(()),
            p::Remove3res::Default(s, _) => Err(nfs("REMOVE", name, s)),
        }
    }
}
