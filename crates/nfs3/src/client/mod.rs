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

use bytes::Bytes;
use rpcrdma_oncrpc::{AuthSysParams, Credential};

use crate::convert::{self as c, attr_of};
use crate::fs::{Attr, FileHandle, SetAttr};
use crate::proto::mount3 as m;
use crate::proto::nfs3 as p;

mod error;
mod io;

use error::{bad_handle, nfs, patiently, rpc};
pub use error::{NfsClientError, ProtocolViolation, JUKEBOX_PATIENCE};

/// Requests [`NfsClient::read_file`] and [`NfsClient::write_file`] keep
/// in flight unless told otherwise ([`NfsClient::set_in_flight`]).
pub const IN_FLIGHT: usize = 4;
/// Most requests [`NfsClient::set_in_flight`] accepts.
pub const MAX_IN_FLIGHT: usize = 128;
/// Most entries [`NfsClient::list`] collects.
pub const MAX_LIST: usize = 10_000_000;

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
