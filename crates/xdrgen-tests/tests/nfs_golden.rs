//! Golden byte vectors for NFSv3 and MOUNT v3: the bytes rpcgen's C (with
//! libtirpc) produced from `crates/xdrgen/xdr/nfs3.x` and `mount3.x` for
//! fixed values (`tests/golden/nfs.txt`, made by
//! `scripts/xdrgen-rpcgen-diff.sh` from `scripts/xdrgen-diff/vectors_nfs.c`).
//! The same values built with the generated Rust encode to exactly those
//! bytes and decode from them to the same values. `XDRGEN_C_NFS_VECTORS`
//! points the test at a fresh run of the C side.

mod common;

use bytes::Bytes;
use rpcrdma_xdrgen_tests::mount3::{self, Groupnode, Mountres3, Mountres3Ok};
use rpcrdma_xdrgen_tests::nfs3::*;

use common::{golden, vector};

fn fh() -> NfsFh3 {
    NfsFh3 {
        data: Bytes::from_static(&[1, 2, 3, 4, 5, 6, 7, 8]),
    }
}

fn attrs() -> Fattr3 {
    Fattr3 {
        r#type: Ftype3::Nf3dir,
        mode: 0o755,
        nlink: 2,
        uid: 1000,
        gid: 100,
        size: 4096,
        used: 8192,
        rdev: Specdata3 {
            specdata1: 0,
            specdata2: 0,
        },
        fsid: 0x1122_3344_5566_7788,
        fileid: 42,
        atime: Nfstime3 {
            seconds: 1,
            nseconds: 2,
        },
        mtime: Nfstime3 {
            seconds: 3,
            nseconds: 4,
        },
        ctime: Nfstime3 {
            seconds: 5,
            nseconds: 6,
        },
    }
}

fn unset() -> Sattr3 {
    Sattr3 {
        mode: SetMode3::Default(false),
        uid: SetUid3::Default(false),
        gid: SetGid3::Default(false),
        size: SetSize3::Default(false),
        atime: SetAtime::Default(TimeHow::DontChange),
        mtime: SetMtime::Default(TimeHow::DontChange),
    }
}

#[test]
fn nfs3_and_mount3_match_rpcgen_byte_for_byte() {
    let g = golden("XDRGEN_C_NFS_VECTORS", include_str!("golden/nfs.txt"));
    let mut seen: Vec<&str> = Vec::new();
    vector!(
        seen,
        g,
        "read3args",
        Read3args,
        Read3args {
            file: fh(),
            offset: 4096,
            count: 65536
        }
    );
    vector!(
        seen,
        g,
        "read3res_ok",
        Read3res,
        Read3res::Nfs3Ok(Read3resok {
            file_attributes: PostOpAttr::True(attrs()),
            count: 5,
            eof: true,
            data: Bytes::from_static(b"hello"),
        })
    );
    vector!(
        seen,
        g,
        "read3res_stale",
        Read3res,
        Read3res::Default(
            Nfsstat3::Nfs3errStale,
            Read3resfail {
                file_attributes: PostOpAttr::False
            }
        )
    );
    vector!(
        seen,
        g,
        "write3args",
        Write3args,
        Write3args {
            file: fh(),
            offset: 0,
            count: 3,
            stable: StableHow::FileSync,
            data: Bytes::from_static(b"abc"),
        }
    );
    vector!(
        seen,
        g,
        "setattr3args",
        Setattr3args,
        Setattr3args {
            object: fh(),
            new_attributes: Sattr3 {
                mode: SetMode3::True(0o644),
                gid: SetGid3::True(7),
                atime: SetAtime::Default(TimeHow::SetToServerTime),
                mtime: SetMtime::SetToClientTime(Nfstime3 {
                    seconds: 99,
                    nseconds: 1
                }),
                ..unset()
            },
            guard: Sattrguard3::True(Nfstime3 {
                seconds: 5,
                nseconds: 6
            }),
        }
    );
    let where_ = Diropargs3 {
        dir: fh(),
        name: "file.txt".into(),
    };
    vector!(
        seen,
        g,
        "create3args_exclusive",
        Create3args,
        Create3args {
            r#where: where_.clone(),
            how: Createhow3::Exclusive(*b"verifier")
        }
    );
    vector!(
        seen,
        g,
        "create3args_guarded",
        Create3args,
        Create3args {
            r#where: where_,
            how: Createhow3::Guarded(unset())
        }
    );
    let dev = Diropargs3 {
        dir: fh(),
        name: "dev".into(),
    };
    vector!(
        seen,
        g,
        "mknod3args_chr",
        Mknod3args,
        Mknod3args {
            r#where: dev.clone(),
            what: Mknoddata3::Nf3chr(Devicedata3 {
                dev_attributes: unset(),
                spec: Specdata3 {
                    specdata1: 4,
                    specdata2: 64
                },
            }),
        }
    );
    vector!(
        seen,
        g,
        "mknod3args_reg",
        Mknod3args,
        Mknod3args {
            r#where: dev,
            what: Mknoddata3::Default(Ftype3::Nf3reg)
        }
    );
    let entries =
        Entry3::link_list(
            [(42, "a", 1), (43, "b", 2)].map(|(fileid, name, cookie)| Entry3 {
                fileid,
                name: name.into(),
                cookie,
                nextentry: None,
            }),
        );
    vector!(
        seen,
        g,
        "readdir3res_ok",
        Readdir3res,
        Readdir3res::Nfs3Ok(Readdir3resok {
            dir_attributes: PostOpAttr::False,
            cookieverf: *b"cookieve",
            reply: Dirlist3 { entries, eof: true },
        })
    );
    vector!(
        seen,
        g,
        "fsinfo3res_ok",
        Fsinfo3res,
        Fsinfo3res::Nfs3Ok(Fsinfo3resok {
            obj_attributes: PostOpAttr::True(attrs()),
            rtmax: 1 << 20,
            rtpref: 1 << 20,
            rtmult: 4096,
            wtmax: 1 << 20,
            wtpref: 1 << 20,
            wtmult: 4096,
            dtpref: 4096,
            maxfilesize: i64::MAX as u64,
            time_delta: Nfstime3 {
                seconds: 0,
                nseconds: 1
            },
            properties: FSF3_LINK | FSF3_SYMLINK | FSF3_HOMOGENEOUS | FSF3_CANSETTIME,
        })
    );
    vector!(
        seen,
        g,
        "mountres3_ok",
        Mountres3,
        Mountres3::Mnt3Ok(Mountres3Ok {
            fhandle: fh().data,
            auth_flavors: vec![1, 390_003],
        })
    );
    let groups = Groupnode::link_list(["a.example", "b.example"].map(|n| Groupnode {
        gr_name: n.into(),
        gr_next: None,
    }));
    let exports = mount3::Exportnode::link_list([
        mount3::Exportnode {
            ex_dir: "/export".into(),
            ex_groups: groups,
            ex_next: None,
        },
        mount3::Exportnode {
            ex_dir: "/srv".into(),
            ex_groups: None,
            ex_next: None,
        },
    ]);
    let want = &g["exports"];
    assert_eq!(
        hex::encode(mount3::exports_to_xdr(&exports)),
        hex::encode(want)
    );
    assert_eq!(
        mount3::exports_from_xdr(&Bytes::from(want.clone())).unwrap(),
        exports
    );
    seen.push("exports");
    let unchecked: Vec<&String> = g.keys().filter(|k| !seen.contains(&k.as_str())).collect();
    assert!(
        unchecked.is_empty(),
        "golden vectors without a Rust value: {unchecked:?}"
    );
}
