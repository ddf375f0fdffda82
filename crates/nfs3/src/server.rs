//! The NFSv3 and MOUNT v3 services: the generated server traits
//! implemented on an [`Export`], and their registration.
//!
//! Each procedure decodes (generated code), resolves its handles and runs
//! its file-system work on tokio's blocking pool, as the caller
//! ([`Export::caller`] from the AUTH_SYS credential), and answers with the
//! NFS status and the attributes RFC 1813 asks for on success and on
//! failure.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use rpcrdma_oncrpc::{CallInfo, Credential, ProcError, ReplyCache, ReplyCacheConfig, Services};

use crate::convert::{self as c, entry3_len, post_op_attr_len, post_op_fh_len, status};
use crate::fs::{Caller, DirEntry, Export, NfsError, NfsResult};
use crate::proto::mount3 as m;
use crate::proto::nfs3 as p;

/// NFS procedures whose replies the duplicate request cache keeps (a
/// retransmission must not run them again): SETATTR, WRITE, CREATE, MKDIR,
/// SYMLINK, MKNOD, REMOVE, RMDIR, RENAME, LINK.
pub const NON_IDEMPOTENT: [u32; 10] = [
    p::nfs_v3::NFSPROC3_SETATTR,
    p::nfs_v3::NFSPROC3_WRITE,
    p::nfs_v3::NFSPROC3_CREATE,
    p::nfs_v3::NFSPROC3_MKDIR,
    p::nfs_v3::NFSPROC3_SYMLINK,
    p::nfs_v3::NFSPROC3_MKNOD,
    p::nfs_v3::NFSPROC3_REMOVE,
    p::nfs_v3::NFSPROC3_RMDIR,
    p::nfs_v3::NFSPROC3_RENAME,
    p::nfs_v3::NFSPROC3_LINK,
];

/// Bytes of a READDIR(PLUS) reply besides its entries: status, directory
/// attributes, cookie verifier, the list's end marker and `eof`.
const READDIR_OVERHEAD: usize = 4 + 88 + 8 + 4 + 4;
/// The largest READDIR(PLUS) reply we build, whatever the client offers.
const MAX_READDIR_REPLY: usize = 1 << 20;

/// Registers NFSv3 and MOUNT v3 for `export` in `services`, with a
/// duplicate request cache for the non-idempotent NFS procedures.
///
/// ```no_run
/// use std::sync::Arc;
/// use rpcrdma_nfs3::fs::{Export, ExportConfig};
/// use rpcrdma_oncrpc::{Server, ServerConfig, Services};
/// # async fn f() -> Result<(), Box<dyn std::error::Error>> {
/// let export = Arc::new(Export::open(ExportConfig::new("/srv/data", "/var/lib/rpcrdma-nfs"))?);
/// let mut services = Services::new();
/// rpcrdma_nfs3::server::register(&mut services, export);
/// let server = Server::new(services, ServerConfig::default());
/// server.serve_tcp("0.0.0.0:2049").await?;
/// # Ok(()) }
/// ```
pub fn register(services: &mut Services, export: Arc<Export>) {
    register_with(services, export, ReplyCacheConfig::default());
}

/// [`register`] with the cache's limits.
pub fn register_with(services: &mut Services, export: Arc<Export>, cache: ReplyCacheConfig) {
    services.set_reply_cache(Arc::new(ReplyCache::new(cache)));
    let nfs = Arc::new(NfsService {
        export: export.clone(),
    });
    p::nfs_v3::register(services, nfs);
    services
        .program(p::nfs_v3::PROGRAM, p::nfs_v3::VERSION)
        .non_idempotent(NON_IDEMPOTENT);
    m::mount_v3::register(services, Arc::new(MountService::new(export)));
}

/// NFSv3 on an export.
#[derive(Debug)]
pub struct NfsService {
    export: Arc<Export>,
}

/// The identity a call acts as.
fn caller_of(export: &Export, info: &CallInfo) -> Caller {
    match &info.cred {
        Credential::Sys(s) => export.caller(Some((s.uid(), s.gid(), s.gids()))),
        _ => export.caller(None),
    }
}

impl NfsService {
    /// The service for `export`.
    pub fn new(export: Arc<Export>) -> Self {
        Self { export }
    }

    /// Runs file-system work on the blocking pool.
    async fn run<T: Send + 'static>(
        &self,
        info: &CallInfo,
        f: impl FnOnce(&Export, &Caller) -> T + Send + 'static,
    ) -> Result<T, ProcError> {
        let export = self.export.clone();
        let caller = caller_of(&export, info);
        tokio::task::spawn_blocking(move || f(&export, &caller))
            .await
            .map_err(|_| ProcError::SystemErr)
    }
}

/// `Err(status)` for a handle that is too long to be ours.
macro_rules! handle {
    ($fh:expr, $fail:expr) => {
        match c::handle_of(&$fh) {
            Ok(h) => h,
            Err(e) => return Ok($fail(e)),
        }
    };
}

impl p::nfs_v3::Server for NfsService {
    async fn getattr(
        &self,
        info: CallInfo,
        a: p::GETATTR3args,
    ) -> Result<p::GETATTR3res, ProcError> {
        let fh = handle!(a.object, |e| p::GETATTR3res::Default(status(e)));
        self.run(&info, move |x, _| match x.getattr(&fh) {
            Ok(attr) => p::GETATTR3res::Nfs3Ok(p::GETATTR3resok {
                obj_attributes: c::fattr(&attr),
            }),
            Err(e) => p::GETATTR3res::Default(status(e)),
        })
        .await
    }

    async fn setattr(
        &self,
        info: CallInfo,
        a: p::SETATTR3args,
    ) -> Result<p::SETATTR3res, ProcError> {
        let fail = |e| {
            p::SETATTR3res::Default(
                status(e),
                p::SETATTR3resfail {
                    obj_wcc: c::wcc(Default::default()),
                },
            )
        };
        let fh = handle!(a.object, fail);
        self.run(&info, move |x, who| {
            let guard = match &a.guard {
                p::Sattrguard3::True(t) => Some(c::time_of(t)),
                p::Sattrguard3::False => None,
            };
            let out = x.setattr(who, &fh, &c::sattr(&a.new_attributes), guard);
            let obj_wcc = c::wcc(out.wcc);
            match out.result {
                Ok(()) => p::SETATTR3res::Nfs3Ok(p::SETATTR3resok { obj_wcc }),
                Err(e) => p::SETATTR3res::Default(status(e), p::SETATTR3resfail { obj_wcc }),
            }
        })
        .await
    }

    async fn lookup(&self, info: CallInfo, a: p::LOOKUP3args) -> Result<p::LOOKUP3res, ProcError> {
        let fail = |e| {
            p::LOOKUP3res::Default(
                status(e),
                p::LOOKUP3resfail {
                    dir_attributes: p::PostOpAttr::False,
                },
            )
        };
        let dir = handle!(a.what.dir, fail);
        self.run(&info, move |x, who| {
            let (r, dir_attr) = x.lookup(who, &dir, &a.what.name);
            match r {
                Ok((h, attr)) => p::LOOKUP3res::Nfs3Ok(p::LOOKUP3resok {
                    object: c::fh(&h),
                    obj_attributes: c::post_op(Some(attr)),
                    dir_attributes: c::post_op(dir_attr),
                }),
                Err(e) => p::LOOKUP3res::Default(
                    status(e),
                    p::LOOKUP3resfail {
                        dir_attributes: c::post_op(dir_attr),
                    },
                ),
            }
        })
        .await
    }

    async fn access(&self, info: CallInfo, a: p::ACCESS3args) -> Result<p::ACCESS3res, ProcError> {
        let fail = |e| {
            p::ACCESS3res::Default(
                status(e),
                p::ACCESS3resfail {
                    obj_attributes: p::PostOpAttr::False,
                },
            )
        };
        let fh = handle!(a.object, fail);
        self.run(&info, move |x, who| match x.access(who, &fh, a.access) {
            Ok((granted, attr)) => p::ACCESS3res::Nfs3Ok(p::ACCESS3resok {
                obj_attributes: c::post_op(Some(attr)),
                access: granted,
            }),
            Err(e) => p::ACCESS3res::Default(
                status(e),
                p::ACCESS3resfail {
                    obj_attributes: c::post_op(x.post_op_attr(&fh)),
                },
            ),
        })
        .await
    }

    async fn readlink(
        &self,
        info: CallInfo,
        a: p::READLINK3args,
    ) -> Result<p::READLINK3res, ProcError> {
        let fail = |e| {
            p::READLINK3res::Default(
                status(e),
                p::READLINK3resfail {
                    symlink_attributes: p::PostOpAttr::False,
                },
            )
        };
        let fh = handle!(a.symlink, fail);
        self.run(&info, move |x, who| match x.readlink(who, &fh) {
            Ok((target, attr)) => p::READLINK3res::Nfs3Ok(p::READLINK3resok {
                symlink_attributes: c::post_op(Some(attr)),
                data: Bytes::from(target),
            }),
            Err(e) => p::READLINK3res::Default(
                status(e),
                p::READLINK3resfail {
                    symlink_attributes: c::post_op(x.post_op_attr(&fh)),
                },
            ),
        })
        .await
    }

    async fn read(&self, info: CallInfo, a: p::READ3args) -> Result<p::READ3res, ProcError> {
        let fail = |e| {
            p::READ3res::Default(
                status(e),
                p::READ3resfail {
                    file_attributes: p::PostOpAttr::False,
                },
            )
        };
        let fh = handle!(a.file, fail);
        self.run(&info, move |x, who| {
            let (r, post) = x.read(who, &fh, a.offset, a.count);
            match r {
                Ok(d) => p::READ3res::Nfs3Ok(p::READ3resok {
                    file_attributes: c::post_op(Some(d.attr)),
                    count: d.data.len() as u32,
                    eof: d.eof,
                    data: d.data,
                }),
                Err(e) => p::READ3res::Default(
                    status(e),
                    p::READ3resfail {
                        file_attributes: c::post_op(post),
                    },
                ),
            }
        })
        .await
    }

    async fn write(&self, info: CallInfo, a: p::WRITE3args) -> Result<p::WRITE3res, ProcError> {
        let fail = |e| {
            p::WRITE3res::Default(
                status(e),
                p::WRITE3resfail {
                    file_wcc: c::wcc(Default::default()),
                },
            )
        };
        let fh = handle!(a.file, fail);
        // `count` must not claim more than the data holds (RFC 1813
        // §3.3.7); a shorter count writes only that much.
        if a.count as usize > a.data.len() {
            return Ok(fail(NfsError::Inval));
        }
        self.run(&info, move |x, who| {
            let data = &a.data[..a.count as usize];
            let out = x.write(who, &fh, a.offset, data, c::stable_of(a.stable));
            let file_wcc = c::wcc(out.wcc);
            match out.result {
                Ok(w) => p::WRITE3res::Nfs3Ok(p::WRITE3resok {
                    file_wcc,
                    count: w.count,
                    committed: c::stable(w.committed),
                    verf: w.verf,
                }),
                Err(e) => p::WRITE3res::Default(status(e), p::WRITE3resfail { file_wcc }),
            }
        })
        .await
    }

    async fn create(&self, info: CallInfo, a: p::CREATE3args) -> Result<p::CREATE3res, ProcError> {
        let fail = |e| {
            p::CREATE3res::Default(
                status(e),
                p::CREATE3resfail {
                    dir_wcc: c::wcc(Default::default()),
                },
            )
        };
        let dir = handle!(a.r#where.dir, fail);
        self.run(&info, move |x, who| {
            let out = x.create(who, &dir, &a.r#where.name, c::create_how(&a.how));
            let dir_wcc = c::wcc(out.wcc);
            match out.result {
                Ok(made) => p::CREATE3res::Nfs3Ok(p::CREATE3resok {
                    obj: c::post_fh(Some(&made.handle)),
                    obj_attributes: c::post_op(Some(made.attr)),
                    dir_wcc,
                }),
                Err(e) => p::CREATE3res::Default(status(e), p::CREATE3resfail { dir_wcc }),
            }
        })
        .await
    }

    async fn mkdir(&self, info: CallInfo, a: p::MKDIR3args) -> Result<p::MKDIR3res, ProcError> {
        let fail = |e| {
            p::MKDIR3res::Default(
                status(e),
                p::MKDIR3resfail {
                    dir_wcc: c::wcc(Default::default()),
                },
            )
        };
        let dir = handle!(a.r#where.dir, fail);
        self.run(&info, move |x, who| {
            let out = x.mkdir(who, &dir, &a.r#where.name, &c::sattr(&a.attributes));
            let dir_wcc = c::wcc(out.wcc);
            match out.result {
                Ok(made) => p::MKDIR3res::Nfs3Ok(p::MKDIR3resok {
                    obj: c::post_fh(Some(&made.handle)),
                    obj_attributes: c::post_op(Some(made.attr)),
                    dir_wcc,
                }),
                Err(e) => p::MKDIR3res::Default(status(e), p::MKDIR3resfail { dir_wcc }),
            }
        })
        .await
    }

    async fn symlink(
        &self,
        info: CallInfo,
        a: p::SYMLINK3args,
    ) -> Result<p::SYMLINK3res, ProcError> {
        let fail = |e| {
            p::SYMLINK3res::Default(
                status(e),
                p::SYMLINK3resfail {
                    dir_wcc: c::wcc(Default::default()),
                },
            )
        };
        let dir = handle!(a.r#where.dir, fail);
        self.run(&info, move |x, who| {
            let out = x.symlink(
                who,
                &dir,
                &a.r#where.name,
                &a.symlink.symlink_data,
                &c::sattr(&a.symlink.symlink_attributes),
            );
            let dir_wcc = c::wcc(out.wcc);
            match out.result {
                Ok(made) => p::SYMLINK3res::Nfs3Ok(p::SYMLINK3resok {
                    obj: c::post_fh(Some(&made.handle)),
                    obj_attributes: c::post_op(Some(made.attr)),
                    dir_wcc,
                }),
                Err(e) => p::SYMLINK3res::Default(status(e), p::SYMLINK3resfail { dir_wcc }),
            }
        })
        .await
    }

    async fn mknod(&self, info: CallInfo, a: p::MKNOD3args) -> Result<p::MKNOD3res, ProcError> {
        let fail = |e| {
            p::MKNOD3res::Default(
                status(e),
                p::MKNOD3resfail {
                    dir_wcc: c::wcc(Default::default()),
                },
            )
        };
        let dir = handle!(a.r#where.dir, fail);
        let (what, set) = match c::special(&a.what) {
            Ok(w) => w,
            Err(e) => return Ok(fail(e)),
        };
        self.run(&info, move |x, who| {
            let out = x.mknod(who, &dir, &a.r#where.name, what, &set);
            let dir_wcc = c::wcc(out.wcc);
            match out.result {
                Ok(made) => p::MKNOD3res::Nfs3Ok(p::MKNOD3resok {
                    obj: c::post_fh(Some(&made.handle)),
                    obj_attributes: c::post_op(Some(made.attr)),
                    dir_wcc,
                }),
                Err(e) => p::MKNOD3res::Default(status(e), p::MKNOD3resfail { dir_wcc }),
            }
        })
        .await
    }

    async fn remove(&self, info: CallInfo, a: p::REMOVE3args) -> Result<p::REMOVE3res, ProcError> {
        let fail = |e| {
            p::REMOVE3res::Default(
                status(e),
                p::REMOVE3resfail {
                    dir_wcc: c::wcc(Default::default()),
                },
            )
        };
        let dir = handle!(a.object.dir, fail);
        self.run(&info, move |x, who| {
            let out = x.remove(who, &dir, &a.object.name);
            let dir_wcc = c::wcc(out.wcc);
            match out.result {
                Ok(()) => p::REMOVE3res::Nfs3Ok(p::REMOVE3resok { dir_wcc }),
                Err(e) => p::REMOVE3res::Default(status(e), p::REMOVE3resfail { dir_wcc }),
            }
        })
        .await
    }

    async fn rmdir(&self, info: CallInfo, a: p::RMDIR3args) -> Result<p::RMDIR3res, ProcError> {
        let fail = |e| {
            p::RMDIR3res::Default(
                status(e),
                p::RMDIR3resfail {
                    dir_wcc: c::wcc(Default::default()),
                },
            )
        };
        let dir = handle!(a.object.dir, fail);
        self.run(&info, move |x, who| {
            let out = x.rmdir(who, &dir, &a.object.name);
            let dir_wcc = c::wcc(out.wcc);
            match out.result {
                Ok(()) => p::RMDIR3res::Nfs3Ok(p::RMDIR3resok { dir_wcc }),
                Err(e) => p::RMDIR3res::Default(status(e), p::RMDIR3resfail { dir_wcc }),
            }
        })
        .await
    }

    async fn rename(&self, info: CallInfo, a: p::RENAME3args) -> Result<p::RENAME3res, ProcError> {
        let fail = |e| {
            p::RENAME3res::Default(
                status(e),
                p::RENAME3resfail {
                    fromdir_wcc: c::wcc(Default::default()),
                    todir_wcc: c::wcc(Default::default()),
                },
            )
        };
        let from = handle!(a.from.dir, fail);
        let to = handle!(a.to.dir, fail);
        self.run(&info, move |x, who| {
            let (r, fw, tw) = x.rename(who, &from, &a.from.name, &to, &a.to.name);
            let (fromdir_wcc, todir_wcc) = (c::wcc(fw), c::wcc(tw));
            match r {
                Ok(()) => p::RENAME3res::Nfs3Ok(p::RENAME3resok {
                    fromdir_wcc,
                    todir_wcc,
                }),
                Err(e) => p::RENAME3res::Default(
                    status(e),
                    p::RENAME3resfail {
                        fromdir_wcc,
                        todir_wcc,
                    },
                ),
            }
        })
        .await
    }

    async fn link(&self, info: CallInfo, a: p::LINK3args) -> Result<p::LINK3res, ProcError> {
        let fail = |e| {
            p::LINK3res::Default(
                status(e),
                p::LINK3resfail {
                    file_attributes: p::PostOpAttr::False,
                    linkdir_wcc: c::wcc(Default::default()),
                },
            )
        };
        let file = handle!(a.file, fail);
        let dir = handle!(a.link.dir, fail);
        self.run(&info, move |x, who| {
            let (r, attr, w) = x.link(who, &file, &dir, &a.link.name);
            let (file_attributes, linkdir_wcc) = (c::post_op(attr), c::wcc(w));
            match r {
                Ok(()) => p::LINK3res::Nfs3Ok(p::LINK3resok {
                    file_attributes,
                    linkdir_wcc,
                }),
                Err(e) => p::LINK3res::Default(
                    status(e),
                    p::LINK3resfail {
                        file_attributes,
                        linkdir_wcc,
                    },
                ),
            }
        })
        .await
    }

    async fn readdir(
        &self,
        info: CallInfo,
        a: p::READDIR3args,
    ) -> Result<p::READDIR3res, ProcError> {
        let fail = |e| {
            p::READDIR3res::Default(
                status(e),
                p::READDIR3resfail {
                    dir_attributes: p::PostOpAttr::False,
                },
            )
        };
        let dir = handle!(a.dir, fail);
        self.run(&info, move |x, who| {
            let budget = (a.count as usize).min(MAX_READDIR_REPLY);
            let mut used = READDIR_OVERHEAD;
            let (r, dir_attr) = x.readdir(who, &dir, a.cookie, a.cookieverf, false, |e| {
                used += entry3_len(e.name.len());
                used <= budget
            });
            match r {
                Ok(rd) => {
                    let mut list: Option<Box<p::Entry3>> = None;
                    for e in rd.entries.into_iter().rev() {
                        list = Some(Box::new(p::Entry3 {
                            fileid: e.fileid,
                            name: e.name,
                            cookie: e.cookie,
                            nextentry: list,
                        }));
                    }
                    p::READDIR3res::Nfs3Ok(p::READDIR3resok {
                        dir_attributes: c::post_op(rd.dir_attr),
                        cookieverf: rd.verf,
                        reply: p::Dirlist3 {
                            entries: list,
                            eof: rd.eof,
                        },
                    })
                }
                Err(e) => p::READDIR3res::Default(
                    status(e),
                    p::READDIR3resfail {
                        dir_attributes: c::post_op(dir_attr),
                    },
                ),
            }
        })
        .await
    }

    async fn readdirplus(
        &self,
        info: CallInfo,
        a: p::READDIRPLUS3args,
    ) -> Result<p::READDIRPLUS3res, ProcError> {
        let fail = |e| {
            p::READDIRPLUS3res::Default(
                status(e),
                p::READDIRPLUS3resfail {
                    dir_attributes: p::PostOpAttr::False,
                },
            )
        };
        let dir = handle!(a.dir, fail);
        self.run(&info, move |x, who| {
            // `maxcount` bounds the whole reply; `dircount` is a hint the
            // Linux server ignores too (spec-notes N3).
            let budget = (a.maxcount as usize).min(MAX_READDIR_REPLY);
            let mut used = READDIR_OVERHEAD;
            let (r, dir_attr) =
                x.readdir(who, &dir, a.cookie, a.cookieverf, true, |e: &DirEntry| {
                    used += entry3_len(e.name.len())
                        + post_op_attr_len(e.attr.is_some())
                        + post_op_fh_len(e.handle.as_ref().map(|h| h.as_bytes().len()));
                    used <= budget
                });
            match r {
                Ok(rd) => {
                    let mut list: Option<Box<p::Entryplus3>> = None;
                    for e in rd.entries.into_iter().rev() {
                        list = Some(Box::new(p::Entryplus3 {
                            fileid: e.fileid,
                            name: e.name,
                            cookie: e.cookie,
                            name_attributes: c::post_op(e.attr),
                            name_handle: c::post_fh(e.handle.as_ref()),
                            nextentry: list,
                        }));
                    }
                    p::READDIRPLUS3res::Nfs3Ok(p::READDIRPLUS3resok {
                        dir_attributes: c::post_op(rd.dir_attr),
                        cookieverf: rd.verf,
                        reply: p::Dirlistplus3 {
                            entries: list,
                            eof: rd.eof,
                        },
                    })
                }
                Err(e) => p::READDIRPLUS3res::Default(
                    status(e),
                    p::READDIRPLUS3resfail {
                        dir_attributes: c::post_op(dir_attr),
                    },
                ),
            }
        })
        .await
    }

    async fn fsstat(&self, info: CallInfo, a: p::FSSTAT3args) -> Result<p::FSSTAT3res, ProcError> {
        let fail = |e| {
            p::FSSTAT3res::Default(
                status(e),
                p::FSSTAT3resfail {
                    obj_attributes: p::PostOpAttr::False,
                },
            )
        };
        let fh = handle!(a.fsroot, fail);
        self.run(&info, move |x, _| {
            let (r, attr) = x.fsstat(&fh);
            match r {
                Ok(s) => p::FSSTAT3res::Nfs3Ok(p::FSSTAT3resok {
                    obj_attributes: c::post_op(attr),
                    tbytes: s.tbytes,
                    fbytes: s.fbytes,
                    abytes: s.abytes,
                    tfiles: s.tfiles,
                    ffiles: s.ffiles,
                    afiles: s.afiles,
                    invarsec: s.invarsec,
                }),
                Err(e) => p::FSSTAT3res::Default(
                    status(e),
                    p::FSSTAT3resfail {
                        obj_attributes: c::post_op(attr),
                    },
                ),
            }
        })
        .await
    }

    async fn fsinfo(&self, info: CallInfo, a: p::FSINFO3args) -> Result<p::FSINFO3res, ProcError> {
        let fail = |e| {
            p::FSINFO3res::Default(
                status(e),
                p::FSINFO3resfail {
                    obj_attributes: p::PostOpAttr::False,
                },
            )
        };
        let fh = handle!(a.fsroot, fail);
        self.run(&info, move |x, _| {
            let (r, attr) = x.fsinfo(&fh);
            match r {
                Ok(i) => p::FSINFO3res::Nfs3Ok(p::FSINFO3resok {
                    obj_attributes: c::post_op(attr),
                    rtmax: i.rtmax,
                    rtpref: i.rtpref,
                    rtmult: i.rtmult,
                    wtmax: i.wtmax,
                    wtpref: i.wtpref,
                    wtmult: i.wtmult,
                    dtpref: i.dtpref,
                    maxfilesize: i.maxfilesize,
                    time_delta: c::time(i.time_delta),
                    properties: i.properties,
                }),
                Err(e) => p::FSINFO3res::Default(
                    status(e),
                    p::FSINFO3resfail {
                        obj_attributes: c::post_op(attr),
                    },
                ),
            }
        })
        .await
    }

    async fn pathconf(
        &self,
        info: CallInfo,
        a: p::PATHCONF3args,
    ) -> Result<p::PATHCONF3res, ProcError> {
        let fail = |e| {
            p::PATHCONF3res::Default(
                status(e),
                p::PATHCONF3resfail {
                    obj_attributes: p::PostOpAttr::False,
                },
            )
        };
        let fh = handle!(a.object, fail);
        self.run(&info, move |x, _| {
            let (r, attr) = x.pathconf(&fh);
            match r {
                Ok(pc) => p::PATHCONF3res::Nfs3Ok(p::PATHCONF3resok {
                    obj_attributes: c::post_op(attr),
                    linkmax: pc.linkmax,
                    name_max: pc.name_max,
                    no_trunc: pc.no_trunc,
                    chown_restricted: pc.chown_restricted,
                    case_insensitive: pc.case_insensitive,
                    case_preserving: pc.case_preserving,
                }),
                Err(e) => p::PATHCONF3res::Default(
                    status(e),
                    p::PATHCONF3resfail {
                        obj_attributes: c::post_op(attr),
                    },
                ),
            }
        })
        .await
    }

    async fn commit(&self, info: CallInfo, a: p::COMMIT3args) -> Result<p::COMMIT3res, ProcError> {
        let fail = |e| {
            p::COMMIT3res::Default(
                status(e),
                p::COMMIT3resfail {
                    file_wcc: c::wcc(Default::default()),
                },
            )
        };
        let fh = handle!(a.file, fail);
        self.run(&info, move |x, who| {
            let out = x.commit(who, &fh);
            let file_wcc = c::wcc(out.wcc);
            match out.result {
                Ok(verf) => p::COMMIT3res::Nfs3Ok(p::COMMIT3resok { file_wcc, verf }),
                Err(e) => p::COMMIT3res::Default(status(e), p::COMMIT3resfail { file_wcc }),
            }
        })
        .await
    }
}

/// Most mounts remembered for DUMP (older ones are forgotten).
const MAX_MOUNT_RECORDS: usize = 1024;

/// MOUNT v3 on an export.
#[derive(Debug)]
pub struct MountService {
    export: Arc<Export>,
    /// (client host, path) of current mounts, for DUMP.
    mounts: Mutex<BTreeSet<(Bytes, Bytes)>>,
}

impl MountService {
    /// The service for `export`.
    pub fn new(export: Arc<Export>) -> Self {
        Self {
            export,
            mounts: Mutex::new(BTreeSet::new()),
        }
    }

    /// The path inside the export that a MNT path names: `/` and the
    /// export's own path are its root.
    fn inside<'a>(&self, path: &'a [u8]) -> Option<&'a [u8]> {
        let root = self.export.root_path().as_os_str().as_encoded_bytes();
        if let Some(rest) = path.strip_prefix(root) {
            if rest.is_empty() || rest.starts_with(b"/") {
                return Some(rest);
            }
        }
        path.starts_with(b"/").then_some(path)
    }

    fn host(info: &CallInfo) -> Bytes {
        match &info.cred {
            Credential::Sys(s) if !s.machine_name().is_empty() => {
                Bytes::copy_from_slice(s.machine_name().as_bytes())
            }
            _ => Bytes::from(
                info.connection
                    .peer_addr()
                    .map_or_else(|| info.connection.peer().to_owned(), |a| a.ip().to_string()),
            ),
        }
    }
}

fn mount_status(e: NfsError) -> m::Mountstat3 {
    match e {
        NfsError::Perm => m::Mountstat3::Mnt3errPerm,
        NfsError::NoEnt | NfsError::Stale => m::Mountstat3::Mnt3errNoent,
        NfsError::Acces => m::Mountstat3::Mnt3errAcces,
        NfsError::NotDir => m::Mountstat3::Mnt3errNotdir,
        NfsError::Inval => m::Mountstat3::Mnt3errInval,
        NfsError::NameTooLong => m::Mountstat3::Mnt3errNametoolong,
        NfsError::Io => m::Mountstat3::Mnt3errIo,
        _ => m::Mountstat3::Mnt3errServerfault,
    }
}

impl m::mount_v3::Server for MountService {
    async fn mnt(&self, info: CallInfo, path: m::Dirpath) -> Result<m::Mountres3, ProcError> {
        let Some(inside) = self.inside(&path).map(<[u8]>::to_vec) else {
            return Ok(m::Mountres3::Default(m::Mountstat3::Mnt3errNoent));
        };
        let export = self.export.clone();
        let r: NfsResult<_> = tokio::task::spawn_blocking(move || export.mount_path(&inside))
            .await
            .map_err(|_| ProcError::SystemErr)?;
        Ok(match r {
            Ok(fh) => {
                let mut mounts = self.mounts.lock().unwrap_or_else(|e| e.into_inner());
                if mounts.len() < MAX_MOUNT_RECORDS {
                    mounts.insert((Self::host(&info), path));
                }
                m::Mountres3::Mnt3Ok(m::Mountres3Ok {
                    fhandle: Bytes::copy_from_slice(fh.as_bytes()),
                    // AUTH_SYS, then AUTH_NONE (RFC 2623 §2.7).
                    auth_flavors: vec![1, 0],
                })
            }
            Err(e) => m::Mountres3::Default(mount_status(e)),
        })
    }

    async fn dump(&self, _info: CallInfo) -> Result<m::Mountlist, ProcError> {
        let mounts = self.mounts.lock().unwrap_or_else(|e| e.into_inner());
        let mut list: m::Mountlist = None;
        for (host, dir) in mounts.iter().rev() {
            list = Some(Box::new(m::Mountbody {
                ml_hostname: host.slice(..host.len().min(255)),
                ml_directory: dir.clone(),
                ml_next: list,
            }));
        }
        Ok(list)
    }

    async fn umnt(&self, info: CallInfo, path: m::Dirpath) -> Result<(), ProcError> {
        let host = Self::host(&info);
        self.mounts
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&(host, path));
        Ok(())
    }

    async fn umntall(&self, info: CallInfo) -> Result<(), ProcError> {
        let host = Self::host(&info);
        self.mounts
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|(h, _)| *h != host);
        Ok(())
    }

    async fn export(&self, _info: CallInfo) -> Result<m::Exports, ProcError> {
        Ok(Some(Box::new(m::Exportnode {
            ex_dir: Bytes::from_static(b"/"),
            ex_groups: None,
            ex_next: None,
        })))
    }
}
