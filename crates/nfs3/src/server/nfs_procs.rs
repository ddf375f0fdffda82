//! The NFSv3 procedures of [`NfsService`] (RFC 1813 §3.3): each decodes
//! its handles, is admitted, runs its file-system work as the caller
//! (`nfs.rs` says where) and answers with the status and the attributes
//! RFC 1813 asks for on success and on failure.

use bytes::Bytes;
use rpcrdma_oncrpc::{CallInfo, ProcError};

use super::nfs::{held_name, NfsService, MAX_READDIR_REPLY};
use crate::convert::{self as c, entry3_len, post_op_attr_len, post_op_fh_len, status};
use crate::fs::{DirEntry, NfsError};
use crate::proto::nfs3 as p;

/// Bytes of a READDIR(PLUS) reply besides its entries: status, directory
/// attributes, cookie verifier, the list's end marker and `eof`.
const READDIR_OVERHEAD: usize = 4 + 88 + 8 + 4 + 4;

/// The handle, admitted for this client, or `return Ok(fail(status))`:
/// too long to be ours, not ours (`BADHANDLE`), of an export no longer
/// served (`STALE`), of an export this client may not use (`ACCES`).
macro_rules! admit {
    ($self:ident, $info:ident, $fh:expr, $fail:expr, $what:literal) => {{
        let fh = match c::handle_of(&$fh) {
            Ok(h) => h,
            Err(e) => return Ok($fail(e)),
        };
        match $self.admit(&$info, &fh, $what) {
            Ok(a) => (fh, a),
            Err(e) => return Ok($fail(e)),
        }
    }};
}

/// A handle's bytes, or `return Ok(fail(status))`.
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
        a: p::Getattr3args,
    ) -> Result<p::Getattr3res, ProcError> {
        let (fh, adm) = admit!(
            self,
            info,
            a.object,
            |e| p::Getattr3res::Default(status(e)),
            "GETATTR"
        );
        self.run_brief(&info, adm, move |x, _| match x.getattr(&fh) {
            Ok(attr) => p::Getattr3res::Nfs3Ok(p::Getattr3resok {
                obj_attributes: c::fattr(&attr),
            }),
            Err(e) => p::Getattr3res::Default(status(e)),
        })
        .await
    }

    async fn setattr(
        &self,
        info: CallInfo,
        a: p::Setattr3args,
    ) -> Result<p::Setattr3res, ProcError> {
        let fail = |e| {
            p::Setattr3res::Default(
                status(e),
                p::Setattr3resfail {
                    obj_wcc: c::wcc(Default::default()),
                },
            )
        };
        let (fh, adm) = admit!(self, info, a.object, fail, "SETATTR");
        if self.held(&fh) {
            return Ok(fail(NfsError::Jukebox));
        }
        self.run_brief(&info, adm, move |x, who| {
            let guard = match &a.guard {
                p::Sattrguard3::True(t) => Some(c::time_of(t)),
                p::Sattrguard3::False => None,
            };
            let out = x.setattr(who, &fh, &c::sattr(&a.new_attributes), guard);
            let obj_wcc = c::wcc(out.wcc);
            match out.result {
                Ok(()) => p::Setattr3res::Nfs3Ok(p::Setattr3resok { obj_wcc }),
                Err(e) => p::Setattr3res::Default(status(e), p::Setattr3resfail { obj_wcc }),
            }
        })
        .await
    }

    async fn lookup(&self, info: CallInfo, a: p::Lookup3args) -> Result<p::Lookup3res, ProcError> {
        let fail = |e| {
            p::Lookup3res::Default(
                status(e),
                p::Lookup3resfail {
                    dir_attributes: p::PostOpAttr::False,
                },
            )
        };
        let (dir, adm) = admit!(self, info, a.what.dir, fail, "LOOKUP");
        self.run_brief(&info, adm, move |x, who| {
            let (r, dir_attr) = x.lookup(who, &dir, &a.what.name);
            match r {
                Ok((h, attr)) => p::Lookup3res::Nfs3Ok(p::Lookup3resok {
                    object: c::fh(&h),
                    obj_attributes: c::post_op(Some(attr)),
                    dir_attributes: c::post_op(dir_attr),
                }),
                Err(e) => p::Lookup3res::Default(
                    status(e),
                    p::Lookup3resfail {
                        dir_attributes: c::post_op(dir_attr),
                    },
                ),
            }
        })
        .await
    }

    async fn access(&self, info: CallInfo, a: p::Access3args) -> Result<p::Access3res, ProcError> {
        let fail = |e| {
            p::Access3res::Default(
                status(e),
                p::Access3resfail {
                    obj_attributes: p::PostOpAttr::False,
                },
            )
        };
        let (fh, adm) = admit!(self, info, a.object, fail, "ACCESS");
        self.run_brief(&info, adm, move |x, who| {
            match x.access(who, &fh, a.access) {
                Ok((granted, attr)) => p::Access3res::Nfs3Ok(p::Access3resok {
                    obj_attributes: c::post_op(Some(attr)),
                    access: granted,
                }),
                Err(e) => p::Access3res::Default(
                    status(e),
                    p::Access3resfail {
                        obj_attributes: c::post_op(x.post_op_attr(&fh)),
                    },
                ),
            }
        })
        .await
    }

    async fn readlink(
        &self,
        info: CallInfo,
        a: p::Readlink3args,
    ) -> Result<p::Readlink3res, ProcError> {
        let fail = |e| {
            p::Readlink3res::Default(
                status(e),
                p::Readlink3resfail {
                    symlink_attributes: p::PostOpAttr::False,
                },
            )
        };
        let (fh, adm) = admit!(self, info, a.symlink, fail, "READLINK");
        self.run_brief(&info, adm, move |x, who| match x.readlink(who, &fh) {
            Ok((target, attr)) => p::Readlink3res::Nfs3Ok(p::Readlink3resok {
                symlink_attributes: c::post_op(Some(attr)),
                data: Bytes::from(target),
            }),
            Err(e) => p::Readlink3res::Default(
                status(e),
                p::Readlink3resfail {
                    symlink_attributes: c::post_op(x.post_op_attr(&fh)),
                },
            ),
        })
        .await
    }

    async fn read(&self, info: CallInfo, a: p::Read3args) -> Result<p::Read3res, ProcError> {
        let fail = |e| {
            p::Read3res::Default(
                status(e),
                p::Read3resfail {
                    file_attributes: p::PostOpAttr::False,
                },
            )
        };
        let (fh, adm) = admit!(self, info, a.file, fail, "READ");
        self.run_io(&info, adm, a.count, move |x, who| {
            let (r, post) = x.read(who, &fh, a.offset, a.count);
            match r {
                Ok(d) => p::Read3res::Nfs3Ok(p::Read3resok {
                    file_attributes: c::post_op(Some(d.attr)),
                    count: d.data.len() as u32,
                    eof: d.eof,
                    data: d.data,
                }),
                Err(e) => p::Read3res::Default(
                    status(e),
                    p::Read3resfail {
                        file_attributes: c::post_op(post),
                    },
                ),
            }
        })
        .await
    }

    async fn write(&self, info: CallInfo, a: p::Write3args) -> Result<p::Write3res, ProcError> {
        let fail = |e| {
            p::Write3res::Default(
                status(e),
                p::Write3resfail {
                    file_wcc: c::wcc(Default::default()),
                },
            )
        };
        let (fh, adm) = admit!(self, info, a.file, fail, "WRITE");
        // `count` must not claim more than the data holds (RFC 1813
        // §3.3.7); a shorter count writes only that much.
        if a.count as usize > a.data.len() {
            return Ok(fail(NfsError::Inval));
        }
        if self.held(&fh) {
            return Ok(fail(NfsError::Jukebox));
        }
        self.run_io(&info, adm, a.count, move |x, who| {
            let data = &a.data[..a.count as usize];
            let out = x.write(who, &fh, a.offset, data, c::stable_of(a.stable));
            let file_wcc = c::wcc(out.wcc);
            match out.result {
                Ok(w) => p::Write3res::Nfs3Ok(p::Write3resok {
                    file_wcc,
                    count: w.count,
                    committed: c::stable(w.committed),
                    verf: w.verf,
                }),
                Err(e) => p::Write3res::Default(status(e), p::Write3resfail { file_wcc }),
            }
        })
        .await
    }

    async fn create(&self, info: CallInfo, a: p::Create3args) -> Result<p::Create3res, ProcError> {
        let fail = |e| {
            p::Create3res::Default(
                status(e),
                p::Create3resfail {
                    dir_wcc: c::wcc(Default::default()),
                },
            )
        };
        let (dir, adm) = admit!(self, info, a.r#where.dir, fail, "CREATE");
        let g = self.guard.clone();
        self.run_brief(&info, adm, move |x, who| {
            // An existing file may be truncated by an UNCHECKED CREATE.
            if held_name(&g, x, who, &dir, &a.r#where.name) {
                return fail(NfsError::Jukebox);
            }
            let out = x.create(who, &dir, &a.r#where.name, c::create_how(&a.how));
            let dir_wcc = c::wcc(out.wcc);
            match out.result {
                Ok(made) => p::Create3res::Nfs3Ok(p::Create3resok {
                    obj: c::post_fh(Some(&made.handle)),
                    obj_attributes: c::post_op(Some(made.attr)),
                    dir_wcc,
                }),
                Err(e) => p::Create3res::Default(status(e), p::Create3resfail { dir_wcc }),
            }
        })
        .await
    }

    async fn mkdir(&self, info: CallInfo, a: p::Mkdir3args) -> Result<p::Mkdir3res, ProcError> {
        let fail = |e| {
            p::Mkdir3res::Default(
                status(e),
                p::Mkdir3resfail {
                    dir_wcc: c::wcc(Default::default()),
                },
            )
        };
        let (dir, adm) = admit!(self, info, a.r#where.dir, fail, "MKDIR");
        self.run_brief(&info, adm, move |x, who| {
            let out = x.mkdir(who, &dir, &a.r#where.name, &c::sattr(&a.attributes));
            let dir_wcc = c::wcc(out.wcc);
            match out.result {
                Ok(made) => p::Mkdir3res::Nfs3Ok(p::Mkdir3resok {
                    obj: c::post_fh(Some(&made.handle)),
                    obj_attributes: c::post_op(Some(made.attr)),
                    dir_wcc,
                }),
                Err(e) => p::Mkdir3res::Default(status(e), p::Mkdir3resfail { dir_wcc }),
            }
        })
        .await
    }

    async fn symlink(
        &self,
        info: CallInfo,
        a: p::Symlink3args,
    ) -> Result<p::Symlink3res, ProcError> {
        let fail = |e| {
            p::Symlink3res::Default(
                status(e),
                p::Symlink3resfail {
                    dir_wcc: c::wcc(Default::default()),
                },
            )
        };
        let (dir, adm) = admit!(self, info, a.r#where.dir, fail, "SYMLINK");
        self.run_brief(&info, adm, move |x, who| {
            let out = x.symlink(
                who,
                &dir,
                &a.r#where.name,
                &a.symlink.symlink_data,
                &c::sattr(&a.symlink.symlink_attributes),
            );
            let dir_wcc = c::wcc(out.wcc);
            match out.result {
                Ok(made) => p::Symlink3res::Nfs3Ok(p::Symlink3resok {
                    obj: c::post_fh(Some(&made.handle)),
                    obj_attributes: c::post_op(Some(made.attr)),
                    dir_wcc,
                }),
                Err(e) => p::Symlink3res::Default(status(e), p::Symlink3resfail { dir_wcc }),
            }
        })
        .await
    }

    async fn mknod(&self, info: CallInfo, a: p::Mknod3args) -> Result<p::Mknod3res, ProcError> {
        let fail = |e| {
            p::Mknod3res::Default(
                status(e),
                p::Mknod3resfail {
                    dir_wcc: c::wcc(Default::default()),
                },
            )
        };
        let (dir, adm) = admit!(self, info, a.r#where.dir, fail, "MKNOD");
        let (what, set) = match c::special(&a.what) {
            Ok(w) => w,
            Err(e) => return Ok(fail(e)),
        };
        self.run_brief(&info, adm, move |x, who| {
            let out = x.mknod(who, &dir, &a.r#where.name, what, &set);
            let dir_wcc = c::wcc(out.wcc);
            match out.result {
                Ok(made) => p::Mknod3res::Nfs3Ok(p::Mknod3resok {
                    obj: c::post_fh(Some(&made.handle)),
                    obj_attributes: c::post_op(Some(made.attr)),
                    dir_wcc,
                }),
                Err(e) => p::Mknod3res::Default(status(e), p::Mknod3resfail { dir_wcc }),
            }
        })
        .await
    }

    async fn remove(&self, info: CallInfo, a: p::Remove3args) -> Result<p::Remove3res, ProcError> {
        let fail = |e| {
            p::Remove3res::Default(
                status(e),
                p::Remove3resfail {
                    dir_wcc: c::wcc(Default::default()),
                },
            )
        };
        let (dir, adm) = admit!(self, info, a.object.dir, fail, "REMOVE");
        let g = self.guard.clone();
        self.run_brief(&info, adm, move |x, who| {
            if held_name(&g, x, who, &dir, &a.object.name) {
                return fail(NfsError::Jukebox);
            }
            let out = x.remove(who, &dir, &a.object.name);
            let dir_wcc = c::wcc(out.wcc);
            match out.result {
                Ok(()) => p::Remove3res::Nfs3Ok(p::Remove3resok { dir_wcc }),
                Err(e) => p::Remove3res::Default(status(e), p::Remove3resfail { dir_wcc }),
            }
        })
        .await
    }

    async fn rmdir(&self, info: CallInfo, a: p::Rmdir3args) -> Result<p::Rmdir3res, ProcError> {
        let fail = |e| {
            p::Rmdir3res::Default(
                status(e),
                p::Rmdir3resfail {
                    dir_wcc: c::wcc(Default::default()),
                },
            )
        };
        let (dir, adm) = admit!(self, info, a.object.dir, fail, "RMDIR");
        self.run_brief(&info, adm, move |x, who| {
            let out = x.rmdir(who, &dir, &a.object.name);
            let dir_wcc = c::wcc(out.wcc);
            match out.result {
                Ok(()) => p::Rmdir3res::Nfs3Ok(p::Rmdir3resok { dir_wcc }),
                Err(e) => p::Rmdir3res::Default(status(e), p::Rmdir3resfail { dir_wcc }),
            }
        })
        .await
    }

    async fn rename(&self, info: CallInfo, a: p::Rename3args) -> Result<p::Rename3res, ProcError> {
        let fail = |e| {
            p::Rename3res::Default(
                status(e),
                p::Rename3resfail {
                    fromdir_wcc: c::wcc(Default::default()),
                    todir_wcc: c::wcc(Default::default()),
                },
            )
        };
        let from = handle!(a.from.dir, fail);
        let to = handle!(a.to.dir, fail);
        let adm = match self.admit_two(&info, &from, &to, "RENAME") {
            Ok(a) => a,
            Err(e) => return Ok(fail(e)),
        };
        let g = self.guard.clone();
        self.run_brief(&info, adm, move |x, who| {
            if held_name(&g, x, who, &from, &a.from.name) || held_name(&g, x, who, &to, &a.to.name)
            {
                return fail(NfsError::Jukebox);
            }
            let (r, fw, tw) = x.rename(who, &from, &a.from.name, &to, &a.to.name);
            let (fromdir_wcc, todir_wcc) = (c::wcc(fw), c::wcc(tw));
            match r {
                Ok(()) => p::Rename3res::Nfs3Ok(p::Rename3resok {
                    fromdir_wcc,
                    todir_wcc,
                }),
                Err(e) => p::Rename3res::Default(
                    status(e),
                    p::Rename3resfail {
                        fromdir_wcc,
                        todir_wcc,
                    },
                ),
            }
        })
        .await
    }

    async fn link(&self, info: CallInfo, a: p::Link3args) -> Result<p::Link3res, ProcError> {
        let fail = |e| {
            p::Link3res::Default(
                status(e),
                p::Link3resfail {
                    file_attributes: p::PostOpAttr::False,
                    linkdir_wcc: c::wcc(Default::default()),
                },
            )
        };
        let file = handle!(a.file, fail);
        let dir = handle!(a.link.dir, fail);
        let adm = match self.admit_two(&info, &file, &dir, "LINK") {
            Ok(a) => a,
            Err(e) => return Ok(fail(e)),
        };
        if self.held(&file) {
            return Ok(fail(NfsError::Jukebox));
        }
        self.run_brief(&info, adm, move |x, who| {
            let (r, attr, w) = x.link(who, &file, &dir, &a.link.name);
            let (file_attributes, linkdir_wcc) = (c::post_op(attr), c::wcc(w));
            match r {
                Ok(()) => p::Link3res::Nfs3Ok(p::Link3resok {
                    file_attributes,
                    linkdir_wcc,
                }),
                Err(e) => p::Link3res::Default(
                    status(e),
                    p::Link3resfail {
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
        a: p::Readdir3args,
    ) -> Result<p::Readdir3res, ProcError> {
        let fail = |e| {
            p::Readdir3res::Default(
                status(e),
                p::Readdir3resfail {
                    dir_attributes: p::PostOpAttr::False,
                },
            )
        };
        let (dir, adm) = admit!(self, info, a.dir, fail, "READDIR");
        self.run(&info, adm, move |x, who| {
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
                    p::Readdir3res::Nfs3Ok(p::Readdir3resok {
                        dir_attributes: c::post_op(rd.dir_attr),
                        cookieverf: rd.verf,
                        reply: p::Dirlist3 {
                            entries: list,
                            eof: rd.eof,
                        },
                    })
                }
                Err(e) => p::Readdir3res::Default(
                    status(e),
                    p::Readdir3resfail {
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
        a: p::Readdirplus3args,
    ) -> Result<p::Readdirplus3res, ProcError> {
        let fail = |e| {
            p::Readdirplus3res::Default(
                status(e),
                p::Readdirplus3resfail {
                    dir_attributes: p::PostOpAttr::False,
                },
            )
        };
        let (dir, adm) = admit!(self, info, a.dir, fail, "READDIRPLUS");
        self.run(&info, adm, move |x, who| {
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
                    p::Readdirplus3res::Nfs3Ok(p::Readdirplus3resok {
                        dir_attributes: c::post_op(rd.dir_attr),
                        cookieverf: rd.verf,
                        reply: p::Dirlistplus3 {
                            entries: list,
                            eof: rd.eof,
                        },
                    })
                }
                Err(e) => p::Readdirplus3res::Default(
                    status(e),
                    p::Readdirplus3resfail {
                        dir_attributes: c::post_op(dir_attr),
                    },
                ),
            }
        })
        .await
    }

    async fn fsstat(&self, info: CallInfo, a: p::Fsstat3args) -> Result<p::Fsstat3res, ProcError> {
        let fail = |e| {
            p::Fsstat3res::Default(
                status(e),
                p::Fsstat3resfail {
                    obj_attributes: p::PostOpAttr::False,
                },
            )
        };
        let (fh, adm) = admit!(self, info, a.fsroot, fail, "FSSTAT");
        self.run_brief(&info, adm, move |x, _| {
            let (r, attr) = x.fsstat(&fh);
            match r {
                Ok(s) => p::Fsstat3res::Nfs3Ok(p::Fsstat3resok {
                    obj_attributes: c::post_op(attr),
                    tbytes: s.tbytes,
                    fbytes: s.fbytes,
                    abytes: s.abytes,
                    tfiles: s.tfiles,
                    ffiles: s.ffiles,
                    afiles: s.afiles,
                    invarsec: s.invarsec,
                }),
                Err(e) => p::Fsstat3res::Default(
                    status(e),
                    p::Fsstat3resfail {
                        obj_attributes: c::post_op(attr),
                    },
                ),
            }
        })
        .await
    }

    async fn fsinfo(&self, info: CallInfo, a: p::Fsinfo3args) -> Result<p::Fsinfo3res, ProcError> {
        let fail = |e| {
            p::Fsinfo3res::Default(
                status(e),
                p::Fsinfo3resfail {
                    obj_attributes: p::PostOpAttr::False,
                },
            )
        };
        let (fh, adm) = admit!(self, info, a.fsroot, fail, "FSINFO");
        self.run_brief(&info, adm, move |x, _| {
            let (r, attr) = x.fsinfo(&fh);
            match r {
                Ok(i) => p::Fsinfo3res::Nfs3Ok(p::Fsinfo3resok {
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
                Err(e) => p::Fsinfo3res::Default(
                    status(e),
                    p::Fsinfo3resfail {
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
        a: p::Pathconf3args,
    ) -> Result<p::Pathconf3res, ProcError> {
        let fail = |e| {
            p::Pathconf3res::Default(
                status(e),
                p::Pathconf3resfail {
                    obj_attributes: p::PostOpAttr::False,
                },
            )
        };
        let (fh, adm) = admit!(self, info, a.object, fail, "PATHCONF");
        self.run_brief(&info, adm, move |x, _| {
            let (r, attr) = x.pathconf(&fh);
            match r {
                Ok(pc) => p::Pathconf3res::Nfs3Ok(p::Pathconf3resok {
                    obj_attributes: c::post_op(attr),
                    linkmax: pc.linkmax,
                    name_max: pc.name_max,
                    no_trunc: pc.no_trunc,
                    chown_restricted: pc.chown_restricted,
                    case_insensitive: pc.case_insensitive,
                    case_preserving: pc.case_preserving,
                }),
                Err(e) => p::Pathconf3res::Default(
                    status(e),
                    p::Pathconf3resfail {
                        obj_attributes: c::post_op(attr),
                    },
                ),
            }
        })
        .await
    }

    async fn commit(&self, info: CallInfo, a: p::Commit3args) -> Result<p::Commit3res, ProcError> {
        let fail = |e| {
            p::Commit3res::Default(
                status(e),
                p::Commit3resfail {
                    file_wcc: c::wcc(Default::default()),
                },
            )
        };
        let (fh, adm) = admit!(self, info, a.file, fail, "COMMIT");
        self.run_brief(&info, adm, move |x, who| {
            let out = x.commit(who, &fh);
            let file_wcc = c::wcc(out.wcc);
            match out.result {
                Ok(verf) => p::Commit3res::Nfs3Ok(p::Commit3resok { file_wcc, verf }),
                Err(e) => p::Commit3res::Default(status(e), p::Commit3resfail { file_wcc }),
            }
        })
        .await
    }
}
