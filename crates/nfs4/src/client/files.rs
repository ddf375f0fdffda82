//! Files and directories: LOOKUP, GETATTR, READDIR, OPEN, CREATE,
//! REMOVE and RENAME, each a COMPOUND on the session (`driver.rs` runs
//! them); what an open file does (READ, WRITE, COMMIT, LOCK, LOCKU,
//! CLOSE, its write-behind cache) is in `file.rs`.

use bytes::Bytes;
use rpcrdma_sync::lock;

use super::attrs::{self, Attrs, FileKind, SetAttrs};
use super::driver::NORMAL;
use super::error::{Nfs4Error, Result, Status, Violation};
use super::file::File;
use super::ops::{decode_attrs, getattr, missing, putfh};
use super::state::OpenRecord;
use super::Nfs4Client;
use crate::proto::nfs4 as p;
use p::NfsArgop4 as A;
use p::NfsResop4 as R;

/// Most entries [`Nfs4Client::readdir`] collects.
pub const MAX_LIST: usize = 10_000_000;

/// One directory entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirEntry {
    /// Its name.
    pub name: Bytes,
    /// Its READDIR cookie.
    pub cookie: u64,
    /// Its attributes, unless the server could not read them.
    pub attrs: Option<Attrs>,
}

/// How to open a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct OpenOptions {
    /// For reading.
    pub read: bool,
    /// For writing.
    pub write: bool,
    /// Create it (UNCHECKED4) with this mode if it does not exist.
    pub create: Option<u32>,
    /// Truncate it to zero (with `create`).
    pub truncate: bool,
}

impl OpenOptions {
    /// For reading.
    pub fn read() -> Self {
        Self {
            read: true,
            ..Self::default()
        }
    }

    /// For writing.
    pub fn write() -> Self {
        Self {
            write: true,
            ..Self::default()
        }
    }

    /// For reading and writing.
    pub fn read_write() -> Self {
        Self {
            read: true,
            write: true,
            ..Self::default()
        }
    }

    /// Creates the file with `mode` if it does not exist.
    #[must_use]
    pub fn create(mut self, mode: u32) -> Self {
        self.create = Some(mode);
        self
    }

    /// Truncates it (with [`OpenOptions::create`]).
    #[must_use]
    pub fn truncate(mut self) -> Self {
        self.truncate = true;
        self
    }

    fn access(&self) -> u32 {
        match (self.read, self.write) {
            (_, false) => p::OPEN4_SHARE_ACCESS_READ,
            (false, true) => p::OPEN4_SHARE_ACCESS_WRITE,
            (true, true) => p::OPEN4_SHARE_ACCESS_BOTH,
        }
    }
}

/// The components of a `/`-separated path.
fn components(path: &[u8]) -> Vec<&[u8]> {
    path.split(|&b| b == b'/')
        .filter(|c| !c.is_empty())
        .collect()
}

impl Nfs4Client {
    /// The root's file handle (PUTROOTFH).
    pub fn root(&self) -> Bytes {
        lock(&self.inner.sess).root.clone()
    }

    /// The largest READ and WRITE.
    pub fn io_sizes(&self) -> (u32, u32) {
        let s = lock(&self.inner.sess);
        (s.rsize, s.wsize)
    }

    /// GETATTR of the standard attributes.
    pub async fn getattr(&self, fh: &Bytes) -> Result<Attrs> {
        let res = self
            .inner
            .run("GETATTR", NORMAL, || {
                Ok(vec![putfh(fh), getattr(attrs::standard())])
            })
            .await?;
        match res.get(1) {
            Some(R::OpGetattr(p::Getattr4res::Nfs4Ok(g))) => decode_attrs(&g.obj_attributes),
            _ => Err(missing("GETATTR")),
        }
    }

    /// LOOKUP of one name: its handle and attributes.
    pub async fn lookup(&self, dir: &Bytes, name: &[u8]) -> Result<(Bytes, Attrs)> {
        self.walk(Some(dir), &[name]).await
    }

    /// Looks a `/`-separated path up from the root (empty: the root), in
    /// one COMPOUND when the session allows that many operations.
    pub async fn lookup_path(&self, path: &[u8]) -> Result<(Bytes, Attrs)> {
        let comps = components(path);
        self.walk(None, &comps).await
    }

    async fn walk(&self, from: Option<&Bytes>, comps: &[&[u8]]) -> Result<(Bytes, Attrs)> {
        let per = (self.max_operations().saturating_sub(4)).max(1) as usize;
        let mut at = from.cloned();
        let mut rest = comps;
        loop {
            let n = rest.len().min(per);
            let (now, later) = rest.split_at(n);
            let what = String::from_utf8_lossy(&now.join(&b'/')).into_owned();
            let res = self
                .inner
                .run(&what, NORMAL, || {
                    let mut ops = vec![match &at {
                        Some(fh) => putfh(fh),
                        None => A::OpPutrootfh,
                    }];
                    ops.extend(now.iter().map(|c| {
                        A::OpLookup(p::Lookup4args {
                            objname: Bytes::copy_from_slice(c),
                        })
                    }));
                    ops.push(A::OpGetfh);
                    if later.is_empty() {
                        ops.push(getattr(attrs::standard()));
                    }
                    Ok(ops)
                })
                .await?;
            let fh = match res.get(n + 1) {
                Some(R::OpGetfh(p::Getfh4res::Nfs4Ok(g))) => g.object.clone(),
                _ => return Err(missing("GETFH")),
            };
            if later.is_empty() {
                let a = match res.get(n + 2) {
                    Some(R::OpGetattr(p::Getattr4res::Nfs4Ok(g))) => {
                        decode_attrs(&g.obj_attributes)?
                    }
                    _ => return Err(missing("GETATTR")),
                };
                return Ok((fh, a));
            }
            at = Some(fh);
            rest = later;
        }
    }

    /// Resolves a path given as the NFSv3 commands take it: an NFSv4
    /// server's root may be an export's own directory (Linux nfsd with
    /// `fsid=0`), so leading components that the root does not have are
    /// taken for the export's path and skipped, as NFSv3's MOUNT of the
    /// longest exported prefix does. `whole`: the path may resolve to
    /// the root itself that way (a directory to put into). Returns the
    /// handle, attributes and the number of components skipped.
    pub async fn resolve(&self, path: &[u8], whole: bool) -> Result<(Bytes, Attrs, usize)> {
        let comps = components(path);
        let root = self.root();
        let mut skip = 0;
        while skip < comps.len() {
            if skip + 1 == comps.len() && !whole {
                break;
            }
            match self.lookup(&root, comps[skip]).await {
                Ok(_) => break,
                Err(e) if e.status() == Some(Status::Nfs4errNoent) => skip += 1,
                Err(e) => return Err(e),
            }
        }
        let (fh, a) = self.walk(None, &comps[skip..]).await?;
        Ok((fh, a, skip))
    }

    /// Lists a directory completely (READDIR with the standard
    /// attributes), following cookies; at most [`MAX_LIST`] entries.
    pub async fn readdir(&self, dir: &Bytes) -> Result<Vec<DirEntry>> {
        let mut out = Vec::new();
        let (mut cookie, mut verf) = (0u64, [0u8; 8]);
        loop {
            let res = self
                .inner
                .run("READDIR", NORMAL, || {
                    Ok(vec![
                        putfh(dir),
                        A::OpReaddir(p::Readdir4args {
                            cookie,
                            cookieverf: verf,
                            dircount: 32 * 1024,
                            maxcount: 64 * 1024,
                            attr_request: attrs::for_entries().words(),
                        }),
                    ])
                })
                .await?;
            let Some(R::OpReaddir(p::Readdir4res::Nfs4Ok(ok))) = res.get(1) else {
                return Err(missing("READDIR"));
            };
            verf = ok.cookieverf;
            let mut n = 0;
            let mut e = ok.reply.entries.as_deref();
            while let Some(x) = e {
                let a = attrs::decode(&x.attrs)
                    .ok()
                    .filter(|a| a.rdattr_error.is_none_or(|s| s == Status::Nfs4Ok));
                out.push(DirEntry {
                    name: x.name.clone(),
                    cookie: x.cookie,
                    attrs: a,
                });
                cookie = x.cookie;
                n += 1;
                e = x.nextentry.as_deref();
            }
            if ok.reply.eof {
                return Ok(out);
            }
            if n == 0 {
                return Err(Nfs4Error::Protocol(Violation::EmptyReaddir));
            }
            if out.len() > MAX_LIST {
                return Err(Nfs4Error::Protocol(Violation::TooManyEntries {
                    max: MAX_LIST,
                }));
            }
        }
    }

    /// OPEN of `name` in `dir` (CLAIM_NULL): a [`File`] with its own open
    /// owner. A delegation the server grants is kept until recalled.
    pub async fn open(&self, dir: &Bytes, name: &[u8], how: OpenOptions) -> Result<File> {
        let id = self.inner.next_id();
        let owner = Bytes::from(format!("open-{id}"));
        let what = String::from_utf8_lossy(name).into_owned();
        let res = self
            .inner
            .run(&what, NORMAL, || {
                let openhow = match how.create {
                    Some(mode) => p::Openflag4::Open4Create(p::Createhow4::Unchecked4(
                        SetAttrs {
                            size: how.truncate.then_some(0),
                            mode: Some(mode),
                        }
                        .encode(),
                    )),
                    None => p::Openflag4::Default(p::Opentype4::Open4Nocreate),
                };
                Ok(vec![
                    putfh(dir),
                    A::OpOpen(p::Open4args {
                        seqid: 0,
                        share_access: how.access(),
                        share_deny: p::OPEN4_SHARE_DENY_NONE,
                        owner: p::StateOwner4 {
                            clientid: self.inner.clientid(),
                            owner: owner.clone(),
                        },
                        openhow,
                        claim: p::OpenClaim4::ClaimNull(Bytes::copy_from_slice(name)),
                    }),
                    A::OpGetfh,
                    getattr(attrs::standard()),
                ])
            })
            .await?;
        self.opened(id, owner, how.access(), res.get(1..).unwrap_or(&[]))
    }

    /// OPEN of a file by its handle (CLAIM_FH).
    pub async fn open_fh(&self, fh: &Bytes, how: OpenOptions) -> Result<File> {
        let id = self.inner.next_id();
        let owner = Bytes::from(format!("open-{id}"));
        let res = self
            .inner
            .run("OPEN", NORMAL, || {
                Ok(vec![
                    putfh(fh),
                    A::OpOpen(p::Open4args {
                        seqid: 0,
                        share_access: how.access(),
                        share_deny: p::OPEN4_SHARE_DENY_NONE,
                        owner: p::StateOwner4 {
                            clientid: self.inner.clientid(),
                            owner: owner.clone(),
                        },
                        openhow: p::Openflag4::Default(p::Opentype4::Open4Nocreate),
                        claim: p::OpenClaim4::ClaimFh,
                    }),
                    A::OpGetfh,
                    getattr(attrs::standard()),
                ])
            })
            .await?;
        self.opened(id, owner, how.access(), res.get(1..).unwrap_or(&[]))
    }

    /// Records an OPEN's results (OPEN, GETFH, GETATTR).
    fn opened(&self, id: u64, owner: Bytes, access: u32, res: &[R]) -> Result<File> {
        let (
            Some(R::OpOpen(p::Open4res::Nfs4Ok(o))),
            Some(R::OpGetfh(p::Getfh4res::Nfs4Ok(g))),
            Some(R::OpGetattr(p::Getattr4res::Nfs4Ok(a))),
        ) = (res.first(), res.get(1), res.get(2))
        else {
            return Err(missing("OPEN, GETFH, GETATTR"));
        };
        if o.rflags & p::OPEN4_RESULT_CONFIRM != 0 {
            return Err(Nfs4Error::Protocol(Violation::OpenConfirm));
        }
        let fh = g.object.clone();
        let attrs = decode_attrs(&a.obj_attributes)?;
        lock(&self.inner.state).opened(
            id,
            OpenRecord {
                fh: fh.clone(),
                owner: owner.clone(),
                access,
                stateid: o.stateid,
                locks: Vec::new(),
            },
        );
        self.inner.delegated(&fh, &o.delegation);
        Ok(File::opened(self, id, fh, attrs))
    }

    /// CREATE of a directory.
    pub async fn mkdir(&self, dir: &Bytes, name: &[u8], mode: u32) -> Result<Bytes> {
        let what = String::from_utf8_lossy(name).into_owned();
        let res = self
            .inner
            .run(&what, NORMAL, || {
                Ok(vec![
                    putfh(dir),
                    A::OpCreate(p::Create4args {
                        objtype: p::Createtype4::Nf4dir,
                        objname: Bytes::copy_from_slice(name),
                        createattrs: SetAttrs {
                            size: None,
                            mode: Some(mode),
                        }
                        .encode(),
                    }),
                    A::OpGetfh,
                ])
            })
            .await?;
        match res.get(2) {
            Some(R::OpGetfh(p::Getfh4res::Nfs4Ok(g))) => Ok(g.object.clone()),
            _ => Err(missing("CREATE, GETFH")),
        }
    }

    /// REMOVE of a name (a file or an empty directory).
    pub async fn remove(&self, dir: &Bytes, name: &[u8]) -> Result<()> {
        let what = String::from_utf8_lossy(name).into_owned();
        self.inner
            .run(&what, NORMAL, || {
                Ok(vec![
                    putfh(dir),
                    A::OpRemove(p::Remove4args {
                        target: Bytes::copy_from_slice(name),
                    }),
                ])
            })
            .await
            .map(drop)
    }

    /// RENAME of `from` in `from_dir` to `to` in `to_dir`.
    pub async fn rename(
        &self,
        from_dir: &Bytes,
        from: &[u8],
        to_dir: &Bytes,
        to: &[u8],
    ) -> Result<()> {
        let what = String::from_utf8_lossy(from).into_owned();
        self.inner
            .run(&what, NORMAL, || {
                Ok(vec![
                    putfh(from_dir),
                    A::OpSavefh,
                    putfh(to_dir),
                    A::OpRename(p::Rename4args {
                        oldname: Bytes::copy_from_slice(from),
                        newname: Bytes::copy_from_slice(to),
                    }),
                ])
            })
            .await
            .map(drop)
    }

    fn max_operations(&self) -> u32 {
        self.report()
            .fore
            .ca_maxoperations
            .min(self.inner.cfg.max_operations)
    }
}

impl FileKind {
    /// `ls -l`'s type character.
    pub fn type_char(self) -> char {
        match self {
            Self::Regular => '-',
            Self::Directory => 'd',
            Self::Block => 'b',
            Self::Char => 'c',
            Self::Symlink => 'l',
            Self::Socket => 's',
            Self::Fifo => 'p',
            Self::Other(_) => '?',
        }
    }
}
