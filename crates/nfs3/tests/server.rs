//! The NFSv3 and MOUNT v3 services end to end, through our NFS client, over
//! the RDMA-like in-memory transport (which fails a call whose Upper-Layer
//! Binding is wrong: a result larger than its Write chunk, a reply larger
//! than its Reply chunk) and over TCP: mount, every procedure, large
//! directories through Reply chunks, 1 MiB READ/WRITE through Write and
//! Read chunks, bad handles and malformed arguments, root squashing, and
//! the duplicate request cache for a retransmitted REMOVE.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use rpcrdma_nfs3::client::{NfsClient, NfsClientError};
use rpcrdma_nfs3::fs::{Export, ExportConfig, FileType, IdentityMode, NfsError};
use rpcrdma_nfs3::proto::{mount3 as m, nfs3 as p};
use rpcrdma_nfs3::server;
use rpcrdma_oncrpc::mem::{self, MemConfig, MemConnector};
use rpcrdma_oncrpc::tcp::TcpConnector;
use rpcrdma_oncrpc::{
    AuthSysParams, CallHints, Client, ClientConfig, Credential, RpcError, Server, ServerConfig,
    Services,
};

struct Tmp(PathBuf);
impl Drop for Tmp {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

struct Rig {
    _tmp: Tmp,
    root: PathBuf,
    server: Server,
    mem: MemConnector,
    tcp: SocketAddr,
}

async fn rig(read_only: bool) -> Rig {
    rig_in(&std::env::temp_dir(), read_only).await
}

/// A rig whose export lies in `dir`.
async fn rig_in(dir: &std::path::Path, read_only: bool) -> Rig {
    static N: AtomicU32 = AtomicU32::new(0);
    let base = dir.join(format!(
        "rpcrdma-nfs3-server-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&base);
    let root = base.join("export");
    std::fs::create_dir_all(&root).unwrap();
    let mut cfg = ExportConfig::new(&root, base.join("state"));
    cfg.identity = IdentityMode::ServerUser;
    cfg.read_only = read_only;
    let export = Arc::new(Export::open(cfg).unwrap());
    // Memory-backed exactly when the directory is on tmpfs or ramfs.
    let f_type = rustix::fs::statfs(&root).unwrap().f_type;
    assert_eq!(
        export.memory_backed(),
        matches!(f_type, 0x0102_1994 | 0x8584_58f6),
        "{root:?}"
    );
    let mut services = Services::new();
    server::register(&mut services, export);
    let server = Server::new(services, ServerConfig::default());
    let tcp = server.serve_tcp("127.0.0.1:0").await.unwrap();
    let mut mc = MemConfig::default();
    mc.client_addr = Some(SocketAddr::from(([192, 0, 2, 9], 0)));
    let (mem, mut listener) = mem::listener(mc);
    let s = server.clone();
    tokio::spawn(async move {
        while let Some(t) = listener.accept().await {
            s.serve(t);
        }
    });
    Rig {
        _tmp: Tmp(base),
        root,
        server,
        mem,
        tcp,
    }
}

fn cfg(uid: u32) -> ClientConfig {
    let mut c = ClientConfig::default();
    c.credential = Credential::Sys(AuthSysParams::new(1, "test", uid, uid, vec![]).unwrap());
    c
}

impl Rig {
    fn mem_client(&self, uid: u32) -> Client {
        Client::new(self.mem.clone(), cfg(uid))
    }
    fn tcp_client(&self, uid: u32) -> Client {
        Client::new(TcpConnector::new(self.tcp), cfg(uid))
    }
    async fn mount(&self, over_mem: bool, path: &[u8]) -> (NfsClient, Vec<u8>) {
        let me = rustix::process::geteuid().as_raw();
        let nfs = if over_mem {
            self.mem_client(me)
        } else {
            self.tcp_client(me)
        };
        NfsClient::mount(nfs, self.tcp_client(me), path)
            .await
            .unwrap()
    }
}

async fn everything(over_mem: bool) {
    everything_on(rig(false).await, over_mem).await;
}

async fn everything_on(rig: Rig, over_mem: bool) {
    std::fs::create_dir(rig.root.join("sub")).unwrap();
    std::fs::write(rig.root.join("sub/hello"), b"hello").unwrap();
    let (c, rest) = rig.mount(over_mem, b"/sub/hello").await;
    // "/sub/hello" is not a directory: MOUNT of it fails, "/sub" works.
    assert_eq!(rest, b"/hello");
    let (fh, attr) = c.lookup_path(&rest).await.unwrap();
    assert_eq!(attr.size, 5);
    let mut got = Vec::new();
    c.read_file(&fh, 100, |b| {
        got.extend_from_slice(b);
        Ok(())
    })
    .await
    .unwrap();
    assert_eq!(got, b"hello");

    // 3 MiB + 5 bytes through 1 MiB WRITEs (Read chunks) and READs (Write
    // chunks).
    let data = Bytes::from(
        (0..(3 << 20) + 5)
            .map(|i| (i % 251) as u8)
            .collect::<Vec<u8>>(),
    );
    let f = c.create(c.root(), b"big", 0o644).await.unwrap();
    c.write_file(&f, &data).await.unwrap();
    let mut back = Vec::new();
    let n = c
        .read_file(&f, data.len() as u64, |b| {
            back.extend_from_slice(b);
            Ok(())
        })
        .await
        .unwrap();
    assert_eq!(n as usize, data.len());
    assert!(back == data[..]);
    assert_eq!(std::fs::read(rig.root.join("sub/big")).unwrap(), data);

    // A large directory: READDIR and READDIRPLUS replies of 64 KiB (Reply
    // chunks over the RDMA-like transport).
    let d = rig.root.join("sub/many");
    std::fs::create_dir(&d).unwrap();
    for i in 0..2500 {
        std::fs::write(d.join(format!("a-longer-file-name-{i:05}")), b"").unwrap();
    }
    let (dh, _) = c.lookup_path(b"/many").await.unwrap();
    for plus in [false, true] {
        let list = c.list(&dh, plus).await.unwrap();
        assert_eq!(list.len(), 2502, "plus {plus}");
        if plus {
            assert!(list
                .iter()
                .filter(|e| &e.name[..] != b"..")
                .all(|e| e.attr.is_some()));
        }
    }

    // The other procedures through the stubs.
    let s = c.stubs();
    let root = p::NfsFh3 {
        data: Bytes::copy_from_slice(c.root().as_bytes()),
    };
    let fsinfo = s
        .fsinfo(p::Fsinfo3args {
            fsroot: root.clone(),
        })
        .await
        .unwrap();
    match fsinfo {
        p::Fsinfo3res::Nfs3Ok(ok) => {
            assert_eq!((ok.rtmax, ok.wtmax), (1 << 20, 1 << 20));
            assert_ne!(ok.properties & p::FSF3_SYMLINK, 0);
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        s.fsstat(p::Fsstat3args {
            fsroot: root.clone()
        })
        .await
        .unwrap(),
        p::Fsstat3res::Nfs3Ok(_)
    ));
    assert!(matches!(
        s.pathconf(p::Pathconf3args { object: root.clone() }).await.unwrap(),
        p::Pathconf3res::Nfs3Ok(ok) if ok.name_max == 255 && ok.no_trunc
    ));
    assert!(matches!(
        s.access(p::Access3args { object: root.clone(), access: 0x3f }).await.unwrap(),
        p::Access3res::Nfs3Ok(ok) if ok.access & p::ACCESS3_READ != 0
    ));
    let dirop = |name: &'static [u8]| p::Diropargs3 {
        dir: root.clone(),
        name: Bytes::from_static(name),
    };
    let none = rpcrdma_nfs3::convert::sattr3(&Default::default());
    assert!(matches!(
        s.mkdir(p::Mkdir3args {
            r#where: dirop(b"newdir"),
            attributes: none.clone()
        })
        .await
        .unwrap(),
        p::Mkdir3res::Nfs3Ok(_)
    ));
    let long_target = Bytes::from(vec![b'x'; 3000]);
    let sl = s
        .symlink(p::Symlink3args {
            r#where: dirop(b"link"),
            symlink: p::Symlinkdata3 {
                symlink_attributes: none.clone(),
                symlink_data: long_target.clone(),
            },
        })
        .await
        .unwrap();
    let link = match sl {
        p::Symlink3res::Nfs3Ok(p::Symlink3resok {
            obj: p::PostOpFh3::True(h),
            ..
        }) => h,
        other => panic!("{other:?}"),
    };
    match s
        .readlink(p::Readlink3args { symlink: link })
        .await
        .unwrap()
    {
        p::Readlink3res::Nfs3Ok(ok) => assert_eq!(ok.data, long_target),
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        s.mknod(p::Mknod3args {
            r#where: dirop(b"fifo"),
            what: p::Mknoddata3::Nf3fifo(none.clone())
        })
        .await
        .unwrap(),
        p::Mknod3res::Nfs3Ok(_)
    ));
    assert!(matches!(
        s.mknod(p::Mknod3args {
            r#where: dirop(b"what"),
            what: p::Mknoddata3::Default(p::Ftype3::Nf3reg)
        })
        .await
        .unwrap(),
        p::Mknod3res::Default(p::Nfsstat3::Nfs3errBadtype, _)
    ));
    let big = p::NfsFh3 {
        data: Bytes::copy_from_slice(f.as_bytes()),
    };
    assert!(matches!(
        s.link(p::Link3args { file: big.clone(), link: dirop(b"big2") }).await.unwrap(),
        p::Link3res::Nfs3Ok(ok) if matches!(&ok.file_attributes, p::PostOpAttr::True(a) if a.nlink == 2)
    ));
    assert!(matches!(
        s.rename(p::Rename3args {
            from: dirop(b"big2"),
            to: dirop(b"big3")
        })
        .await
        .unwrap(),
        p::Rename3res::Nfs3Ok(_)
    ));
    assert!(matches!(
        s.remove(p::Remove3args {
            object: dirop(b"big3")
        })
        .await
        .unwrap(),
        p::Remove3res::Nfs3Ok(_)
    ));
    assert!(matches!(
        s.rmdir(p::Rmdir3args {
            object: dirop(b"newdir")
        })
        .await
        .unwrap(),
        p::Rmdir3res::Nfs3Ok(_)
    ));
    let set = rpcrdma_nfs3::fs::SetAttr {
        size: Some(10),
        ..Default::default()
    };
    assert!(matches!(
        s.setattr(p::Setattr3args { object: big.clone(), new_attributes: rpcrdma_nfs3::convert::sattr3(&set), guard: p::Sattrguard3::False }).await.unwrap(),
        p::Setattr3res::Nfs3Ok(ok) if matches!(&ok.obj_wcc.after, p::PostOpAttr::True(a) if a.size == 10)
    ));
    assert!(matches!(
        s.commit(p::Commit3args {
            file: big.clone(),
            offset: 0,
            count: 0
        })
        .await
        .unwrap(),
        p::Commit3res::Nfs3Ok(_)
    ));
    // Errors carry their attributes.
    assert!(matches!(
        s.lookup(p::Lookup3args {
            what: dirop(b"nope")
        })
        .await
        .unwrap(),
        p::Lookup3res::Default(
            p::Nfsstat3::Nfs3errNoent,
            p::Lookup3resfail {
                dir_attributes: p::PostOpAttr::True(_)
            }
        )
    ));
    // A handle that is not ours, and one that is too long to decode.
    let forged = p::NfsFh3 {
        data: Bytes::from(vec![1u8; 36]),
    };
    assert!(matches!(
        s.getattr(p::Getattr3args { object: forged }).await.unwrap(),
        p::Getattr3res::Default(p::Nfsstat3::Nfs3errBadhandle)
    ));
    // WRITE whose count claims more than its data.
    let w = s
        .write(p::Write3args {
            file: big.clone(),
            offset: 0,
            count: 10,
            stable: p::StableHow::FileSync,
            data: Bytes::from_static(b"abc"),
        })
        .await
        .unwrap();
    assert!(matches!(
        w,
        p::Write3res::Default(p::Nfsstat3::Nfs3errInval, _)
    ));
    // A READ of more than 1 MiB is cut to 1 MiB (the Write chunk the
    // client offered is as large as its count).
    let r = s
        .read(p::Read3args {
            file: big,
            offset: 0,
            count: 4 << 20,
        })
        .await
        .unwrap();
    assert!(matches!(r, p::Read3res::Nfs3Ok(ok) if ok.count == 10 && ok.eof));
    // MOUNT: EXPORT and DUMP.
    let mc = m::mount_v3::Client::new(rig.tcp_client(0));
    let ex = mc.export().await.unwrap().unwrap();
    assert_eq!(&ex.ex_dir[..], b"/");
    let dump = mc.dump().await.unwrap();
    assert!(dump.is_some());
    assert!(matches!(
        mc.mnt(Bytes::from_static(b"/no/such/dir")).await.unwrap(),
        m::Mountres3::Default(m::Mountstat3::Mnt3errNoent)
    ));
    mc.umntall().await.unwrap();
    rig.server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_procedure_over_the_rdma_like_transport() {
    everything(true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_procedure_over_tcp() {
    everything(false).await;
}

/// On tmpfs brief procedures run on the task that decoded them
/// (`Export::memory_backed`), not on the blocking pool: every procedure
/// again, over both transports.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_procedure_on_a_memory_backed_export() {
    let shm = std::path::Path::new("/dev/shm");
    let on_tmpfs = rustix::fs::statfs(shm).is_ok_and(|s| s.f_type == 0x0102_1994);
    if !on_tmpfs {
        eprintln!("skipped: /dev/shm is not a tmpfs here");
        return;
    }
    for over_mem in [true, false] {
        let rig = rig_in(shm, false).await;
        everything_on(rig, over_mem).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_only_exports_answer_rofs() {
    let rig = rig(true).await;
    std::fs::write(rig.root.join("f"), b"x").unwrap();
    let (c, _) = rig.mount(true, b"/").await;
    let e = c.create(c.root(), b"new", 0o644).await.unwrap_err();
    assert!(
        matches!(
            e,
            NfsClientError::Nfs {
                status: NfsError::Rofs,
                ..
            }
        ),
        "{e}"
    );
    let (fh, _) = c.lookup_path(b"f").await.unwrap();
    let e = c
        .write_file(&fh, &Bytes::from_static(b"y"))
        .await
        .unwrap_err();
    assert!(
        matches!(
            e,
            NfsClientError::Nfs {
                status: NfsError::Rofs,
                ..
            }
        ),
        "{e}"
    );
    rig.server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_arguments_are_garbage_args() {
    let rig = rig(false).await;
    let c = rig.tcp_client(1000);
    // GETATTR with a handle length of 65 (over NFS3_FHSIZE), a truncated
    // LOOKUP, a name length beyond the message, and trailing bytes.
    let cases: Vec<(u32, Vec<u8>)> = vec![
        (1, [&65u32.to_be_bytes()[..], &[0u8; 68]].concat()),
        (3, 36u32.to_be_bytes().to_vec()),
        (
            3,
            [
                &4u32.to_be_bytes()[..],
                &[1, 2, 3, 4],
                &0x7fff_ffffu32.to_be_bytes(),
            ]
            .concat(),
        ),
        (
            21,
            [&0u32.to_be_bytes()[..], &[0u8; 8], &[0u8; 4], &[9u8; 4]].concat(),
        ),
        (
            7,
            [
                &0u32.to_be_bytes()[..],
                &[0u8; 8],
                &[0u8; 4],
                &3u32.to_be_bytes(),
                &[0u8; 4],
            ]
            .concat(),
        ),
    ];
    for (proc_, body) in cases {
        let e = c
            .call::<_, ()>(
                p::nfs_v3::PROGRAM,
                3,
                proc_,
                &Raw(Bytes::from(body)),
                &CallHints::new(),
            )
            .await
            .unwrap_err();
        assert!(matches!(e, RpcError::GarbageArgs), "proc {proc_}: {e}");
    }
    // Unknown procedure, wrong version.
    let e = c
        .call::<_, ()>(p::nfs_v3::PROGRAM, 3, 22, &(), &CallHints::new())
        .await
        .unwrap_err();
    assert!(matches!(e, RpcError::ProcUnavail { .. }), "{e}");
    let e = c.null(p::nfs_v3::PROGRAM, 4).await.unwrap_err();
    assert!(
        matches!(
            e,
            RpcError::ProgMismatch {
                low: 3,
                high: 3,
                ..
            }
        ),
        "{e}"
    );
    // The server still serves.
    c.null(p::nfs_v3::PROGRAM, 3).await.unwrap();
    rig.server.shutdown().await;
}

/// Raw XDR arguments.
struct Raw(Bytes);
impl rpcrdma_oncrpc::Marshal for Raw {
    fn marshal(&self, enc: &mut rpcrdma_xdr::Encoder<'_>) {
        enc.put_fixed_opaque(&self.0);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retransmitted_remove_is_answered_from_the_cache() {
    let rig = rig(false).await;
    std::fs::write(rig.root.join("victim"), b"x").unwrap();
    let root = {
        let (c, _) = rig.mount(false, b"/").await;
        c.root().clone()
    };
    let args = p::Remove3args {
        object: p::Diropargs3 {
            dir: p::NfsFh3 {
                data: Bytes::copy_from_slice(root.as_bytes()),
            },
            name: Bytes::from_static(b"victim"),
        },
    };
    // Two clients on two connections from the same address, with the same
    // first XID: the second call is a retransmission of the first.
    let mut results = Vec::new();
    for _ in 0..2 {
        let mut cc = cfg(rustix::process::geteuid().as_raw());
        cc.first_xid = Some(0x5151_0000);
        let c = p::nfs_v3::Client::new(Client::new(TcpConnector::new(rig.tcp), cc));
        results.push(c.remove(args.clone()).await.unwrap());
    }
    assert!(matches!(results[0], p::Remove3res::Nfs3Ok(_)));
    assert_eq!(results[0], results[1], "the same reply, not NFS3ERR_NOENT");
    assert!(!rig.root.join("victim").exists());
    // A new XID runs again (and finds nothing).
    let mut cc = cfg(rustix::process::geteuid().as_raw());
    cc.first_xid = Some(0x5151_0001);
    let c = p::nfs_v3::Client::new(Client::new(TcpConnector::new(rig.tcp), cc));
    assert!(matches!(
        c.remove(args).await.unwrap(),
        p::Remove3res::Default(p::Nfsstat3::Nfs3errNoent, _)
    ));
    let stats = rig.server.services().reply_cache().unwrap().stats();
    assert_eq!(stats.hits, 1, "{stats:?}");
    rig.server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn root_is_squashed() {
    if !rustix::process::geteuid().is_root() {
        eprintln!("root_is_squashed: skipped (needs root)");
        return;
    }
    // On the temporary directory's file system (the blocking pool), and on
    // tmpfs, where the calls run on the task that decoded them: the
    // identity switch is the same on either thread.
    let mut dirs = vec![std::env::temp_dir()];
    let shm = PathBuf::from("/dev/shm");
    if rustix::fs::statfs(&shm).is_ok_and(|s| s.f_type == 0x0102_1994) {
        dirs.push(shm);
    }
    for dir in dirs {
        squashed_in(&dir).await;
    }
}

async fn squashed_in(dir: &std::path::Path) {
    static N: AtomicU32 = AtomicU32::new(0);
    let base = dir.join(format!(
        "rpcrdma-nfs3-squash-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    let _tmp = Tmp(base.clone());
    let root = base.join("export");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::set_permissions(&root, std::os::unix::fs::PermissionsExt::from_mode(0o777)).unwrap();
    let mut cfg_e = ExportConfig::new(&root, base.join("state"));
    cfg_e.identity = IdentityMode::Switch;
    let export = Arc::new(Export::open(cfg_e).unwrap());
    let mut services = Services::new();
    server::register(&mut services, export);
    let srv = Server::new(services, ServerConfig::default());
    let addr = srv.serve_tcp("127.0.0.1:0").await.unwrap();
    let (c, _) = NfsClient::mount(
        Client::new(TcpConnector::new(addr), cfg(0)),
        Client::new(TcpConnector::new(addr), cfg(0)),
        b"/",
    )
    .await
    .unwrap();
    let fh = c.create(c.root(), b"by-root", 0o644).await.unwrap();
    let a = c.getattr(&fh).await.unwrap();
    assert_eq!((a.uid, a.gid), (65534, 65534));
    assert_eq!(a.ftype, FileType::Regular);
    // An ordinary caller owns what it makes; (uid_t)-1 is nobody, never
    // the server's root.
    for (uid, owner) in [(1000, 1000), (u32::MAX, 65534)] {
        let (c, _) = NfsClient::mount(
            Client::new(TcpConnector::new(addr), cfg(uid)),
            Client::new(TcpConnector::new(addr), cfg(0)),
            b"/",
        )
        .await
        .unwrap();
        let name = format!("by-{uid}");
        let fh = c.create(c.root(), name.as_bytes(), 0o644).await.unwrap();
        let a = c.getattr(&fh).await.unwrap();
        assert_eq!((a.uid, a.gid), (owner, owner), "{dir:?} {uid}");
        let on_disk = std::fs::metadata(root.join(&name)).unwrap();
        assert_eq!(std::os::unix::fs::MetadataExt::uid(&on_disk), owner);
    }
    // The server's own threads are still root afterwards.
    assert!(rustix::process::geteuid().is_root());
    srv.shutdown().await;
}

/// Spec notes N3 and N4: READDIRPLUS is bounded by `maxcount` alone
/// (`dircount` is a hint), and a READLINK whose client offers no Write
/// chunk (as the Linux client) gets the path inline or in the Reply chunk.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readdirplus_dircount_is_a_hint_and_readlink_without_a_write_chunk() {
    let rig = rig(false).await;
    for i in 0..300 {
        std::fs::write(rig.root.join(format!("n{i:03}")), b"").unwrap();
    }
    let target = "t".repeat(2000);
    std::os::unix::fs::symlink(&target, rig.root.join("link")).unwrap();
    let (c, _) = rig.mount(true, b"/").await;
    let root = p::NfsFh3 {
        data: Bytes::copy_from_slice(c.root().as_bytes()),
    };
    let r = c
        .stubs()
        .readdirplus(p::Readdirplus3args {
            dir: root.clone(),
            cookie: 0,
            cookieverf: [0; 8],
            dircount: 64,
            maxcount: 32 * 1024,
        })
        .await
        .unwrap();
    let ok = match r {
        p::Readdirplus3res::Nfs3Ok(ok) => ok,
        other => panic!("{other:?}"),
    };
    let mut n = 0;
    let mut e = ok.reply.entries.as_deref();
    while let Some(x) = e {
        n += 1;
        e = x.nextentry.as_deref();
    }
    assert!(
        n > 100,
        "maxcount bounds the reply, not dircount: {n} entries"
    );
    let encoded = p::Readdirplus3res::Nfs3Ok(ok).to_xdr();
    assert!(encoded.len() <= 32 * 1024, "{} bytes", encoded.len());
    // Too small for one entry.
    let r = c
        .stubs()
        .readdirplus(p::Readdirplus3args {
            dir: root.clone(),
            cookie: 0,
            cookieverf: [0; 8],
            dircount: 10,
            maxcount: 120,
        })
        .await
        .unwrap();
    assert!(matches!(
        r,
        p::Readdirplus3res::Default(p::Nfsstat3::Nfs3errToosmall, _)
    ));
    // READLINK with only a Reply chunk offered.
    let (link, _) = c.lookup_path(b"link").await.unwrap();
    let r = c
        .stubs()
        .readlink_with_hints(
            p::Readlink3args {
                symlink: p::NfsFh3 {
                    data: Bytes::copy_from_slice(link.as_bytes()),
                },
            },
            &CallHints::new().max_results(8192),
        )
        .await
        .unwrap();
    assert!(matches!(r, p::Readlink3res::Nfs3Ok(ok) if ok.data == target.as_bytes()));
    rig.server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn write_stream_keeps_its_window_and_says_why_it_stops() {
    let rig = rig(false).await;
    let (mut c, _) = rig.mount(true, b"/").await;
    for window in [1, 2, 8] {
        c.set_in_flight(window);
        assert_eq!(c.in_flight(), window);
        let f = c.create(c.root(), b"streamed", 0o644).await.unwrap();
        // Full-size chunks, a short one, then the end; the source sees
        // the WRITE size every time.
        let sizes = [1 << 20, 1 << 20, 7, 1 << 20];
        let mut k = 0usize;
        let mut expected = Vec::new();
        let (n, verfs) = c
            .write_stream(&f, 5, |max| {
                assert_eq!(max, 1 << 20);
                let Some(&len) = sizes.get(k) else {
                    return Ok(None);
                };
                let chunk: Vec<u8> = (0..len).map(|i| (i + k * 31) as u8).collect();
                expected.extend_from_slice(&chunk);
                k += 1;
                Ok(Some(Bytes::from(chunk)))
            })
            .await
            .unwrap();
        assert_eq!(n as usize, expected.len());
        assert_eq!(verfs.len(), 1);
        let on_disk = std::fs::read(rig.root.join("streamed")).unwrap();
        assert_eq!(&on_disk[..5], &[0; 5]);
        assert!(on_disk[5..] == expected[..], "window {window}");
        c.remove(c.root(), b"streamed").await.unwrap();
    }
    // Clamped to 1..=MAX_IN_FLIGHT.
    c.set_in_flight(0);
    assert_eq!(c.in_flight(), 1);
    c.set_in_flight(1 << 20);
    assert_eq!(c.in_flight(), rpcrdma_nfs3::client::MAX_IN_FLIGHT);
    // The source's failure, and a chunk larger than a WRITE, stop it with
    // a local error.
    let f = c.create(c.root(), b"failing", 0o644).await.unwrap();
    let e = c
        .write_stream(&f, 0, |_| Err(std::io::Error::other("disk on fire")))
        .await
        .unwrap_err();
    assert!(matches!(e, NfsClientError::Local(ref io) if io.to_string() == "disk on fire"));
    let e = c
        .write_stream(&f, 0, |max| Ok(Some(Bytes::from(vec![0u8; max + 1]))))
        .await
        .unwrap_err();
    assert!(
        matches!(e, NfsClientError::Local(ref io) if io.to_string().contains("larger than the WRITE size")),
        "{e}"
    );
    rig.server.shutdown().await;
}
