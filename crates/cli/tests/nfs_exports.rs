//! `rpcrdma nfs serve --exports FILE` against clients on several loopback
//! addresses (127.0.0.2, .3, ... : each client's socket is bound to its
//! own), over TCP and RPC-over-RDMA (software iWARP, whose TCP connection
//! is bound the same way): MOUNT, NFSv3 and NFSv4.1 allowed and refused as
//! the file says, per-client `ro`, squashing and anonymous ids, a refusal
//! that carries no attributes and leaves a log line, the NFSv4 pseudo file
//! system, and SIGHUP reading the file again without dropping a
//! connection (a bad file keeping the old exports).

use std::future::Future;
use std::io::{BufRead, BufReader};
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use bytes::Bytes;
use rpcrdma_engine::EngineConfig;
use rpcrdma_nfs3::proto::{mount3 as m, nfs3 as p3};
use rpcrdma_nfs4::compound::{CompoundArgs, Op};
use rpcrdma_nfs4::proto::nfs4 as p;
use rpcrdma_oncrpc::tcp::{TcpConfig, TcpTransport};
use rpcrdma_oncrpc::{
    AuthSysParams, CallHints, Client, ClientConfig, Connector, Credential, TransportError,
};
use rpcrdma_softiwarp::SoftIwarp;
use rpcrdma_transport::RdmaConnector;

mod common;
use common::{Raw, Status, BIN, X};

use p::NfsArgop4 as A;
use p::NfsResop4 as R;
use p::Nfsstat4 as S;

const NFS3ERR_ACCES: u32 = 13;
const NFS3ERR_ROFS: u32 = 30;
const NFS3ERR_XDEV: u32 = 18;
const NFS3ERR_STALE: u32 = 70;
const MNT3ERR_ACCES: u32 = 13;

/// A TCP connection from a chosen local address.
struct BoundTcp {
    local: IpAddr,
    remote: SocketAddr,
}

impl Connector for BoundTcp {
    type Transport = TcpTransport;
    fn connect(&self) -> impl Future<Output = Result<TcpTransport, TransportError>> + Send {
        let (local, remote) = (self.local, self.remote);
        async move {
            let s = tokio::net::TcpSocket::new_v4()?;
            s.bind(SocketAddr::new(local, 0))?;
            let stream = s.connect(remote).await?;
            Ok(TcpTransport::new(stream, &TcpConfig::default())?)
        }
    }
}

/// A client at `from` (127.0.0.x) to `to`, over TCP or software iWARP,
/// acting as `uid`/`gid` with AUTH_SYS.
async fn client(from: &str, to: SocketAddr, rdma: bool, uid: u32) -> Client {
    let local: IpAddr = from.parse().unwrap();
    let mut cfg = ClientConfig::default();
    cfg.timeout = Duration::from_secs(20);
    cfg.max_retransmits = 0;
    cfg.credential = Credential::Sys(
        AuthSysParams::new(0, format!("client-{from}"), uid, uid, Vec::new()).unwrap(),
    );
    if rdma {
        let options = rpcrdma_softiwarp::Options {
            local_addr: Some(local),
            ..Default::default()
        };
        let connector =
            RdmaConnector::new(SoftIwarp::new(), to, EngineConfig::client()).options(options);
        Client::connect(connector, cfg).await.unwrap()
    } else {
        Client::connect(BoundTcp { local, remote: to }, cfg)
            .await
            .unwrap()
    }
}

/// `rpcrdma nfs serve --exports FILE` on free ports of 127.0.0.1, its
/// state and log in `dir`.
struct Served {
    child: Child,
    dir: PathBuf,
    rdma: u16,
    mount: u16,
    tcp: u16,
    log: PathBuf,
    exports: PathBuf,
}

fn port_after(line: &str, after: &str) -> u16 {
    let i = line
        .find(after)
        .unwrap_or_else(|| panic!("{after:?} in {line:?}"))
        + after.len();
    let addr: String = line[i..]
        .chars()
        .take_while(|c| !c.is_whitespace() && *c != ',')
        .collect();
    addr.rsplit(':').next().unwrap().parse().unwrap()
}

impl Served {
    fn start(tag: &str, exports: &str, dirs: &[&str]) -> Self {
        let dir = std::env::temp_dir().join(format!("rpcrdma-exp-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        for d in dirs {
            let p = dir.join(d);
            std::fs::create_dir_all(&p).unwrap();
            std::fs::set_permissions(&p, std::os::unix::fs::PermissionsExt::from_mode(0o777))
                .unwrap();
        }
        let file = dir.join("exports");
        std::fs::write(&file, exports.replace("DIR", dir.to_str().unwrap())).unwrap();
        let log = dir.join("server.log");
        let mut child = Command::new(BIN)
            .args(["nfs", "serve", "--exports"])
            .arg(&file)
            .args([
                "--listen",
                "127.0.0.1:0",
                "--mount-port",
                "0",
                "--tcp",
                "127.0.0.1:0",
                "--log",
                "info",
                "--state-dir",
            ])
            .arg(dir.join("state"))
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.as_mut().unwrap())
            .read_line(&mut line)
            .unwrap();
        assert!(
            line.starts_with("serving "),
            "{line}\n{}",
            std::fs::read_to_string(&log).unwrap_or_default()
        );
        Self {
            rdma: port_after(&line, "(software iWARP) on "),
            mount: port_after(&line, "MOUNT v3 on tcp "),
            tcp: port_after(&line, "NFS over TCP on "),
            child,
            dir,
            log,
            exports: file,
        }
    }

    fn path(&self, d: &str) -> String {
        format!("{}/{d}", self.dir.display())
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    fn nfs(&self, rdma: bool) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], if rdma { self.rdma } else { self.tcp }))
    }

    /// Waits (at most 20 s) for the log to say `what` `n` times.
    fn wait_log(&self, what: &str, n: usize) {
        let until = Instant::now() + Duration::from_secs(20);
        while self.log().matches(what).count() < n {
            assert!(
                Instant::now() < until,
                "the log never said {what:?} {n} times:\n{}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn hangup(&self) {
        let ok = Command::new("kill")
            .args(["-HUP", &self.child.id().to_string()])
            .status()
            .unwrap()
            .success();
        assert!(ok);
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if std::thread::panicking() {
            eprintln!("the server's log:\n{}", self.log());
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// MNT: the handle or the status.
async fn mnt(c: &Client, path: &str) -> Result<Bytes, u32> {
    let r: m::Mountres3 = c
        .call(
            100_005,
            3,
            1,
            &Raw(X::default().opaque(path.as_bytes()).0),
            &CallHints::new(),
        )
        .await
        .unwrap();
    match r {
        m::Mountres3::Mnt3Ok(ok) => Ok(ok.fhandle),
        m::Mountres3::Default(s) => Err(s as u32),
    }
}

/// An NFSv3 call's status (the rest of the reply is skipped).
async fn nfs3(c: &Client, proc_: u32, args: X) -> u32 {
    let r: Status = c
        .call(100_003, 3, proc_, &Raw(args.0), &CallHints::new())
        .await
        .unwrap();
    r.0
}

/// GETATTR's whole reply, to check what a refusal carries.
async fn getattr(c: &Client, fh: &[u8]) -> p3::Getattr3res {
    c.call(
        100_003,
        3,
        1,
        &p3::Getattr3args {
            object: p3::NfsFh3 {
                data: Bytes::copy_from_slice(fh),
            },
        },
        &CallHints::new(),
    )
    .await
    .unwrap()
}

/// CREATE UNCHECKED with mode 0644: the status and the new handle.
async fn create(c: &Client, dir: &[u8], name: &str) -> (u32, Option<Bytes>) {
    let r: p3::Create3res = c
        .call(
            100_003,
            3,
            8,
            &Raw(X::default()
                .dirop(dir, name.as_bytes())
                .u32(0) // UNCHECKED
                .u32(1)
                .u32(0o644)
                .u32(0)
                .u32(0)
                .u32(0)
                .u32(0)
                .u32(0)
                .0),
            &CallHints::new(),
        )
        .await
        .unwrap();
    match r {
        p3::Create3res::Nfs3Ok(ok) => (
            0,
            match ok.obj {
                p3::PostOpFh3::True(h) => Some(h.data),
                _ => None,
            },
        ),
        p3::Create3res::Default(s, _) => (s as u32, None),
    }
}

fn read_args(fh: &[u8]) -> X {
    X::default().opaque(fh).u64(0).u32(100)
}

fn write_args(fh: &[u8]) -> X {
    X::default()
        .opaque(fh)
        .u64(0)
        .u32(5)
        .u32(2)
        .opaque(b"hello")
}

/// A COMPOUND without a session (PUTROOTFH and the like need one: this
/// makes one, as a client's first steps do).
async fn compound(c: &Client, ops: Vec<A>) -> p::Compound4res {
    let args = CompoundArgs {
        tag: Bytes::from_static(b"exports"),
        minorversion: 1,
        count: ops.len() as u32,
        ops: ops.into_iter().map(Op::Arg).collect(),
    };
    c.call(100_003, 4, 1, &args, &CallHints::new())
        .await
        .unwrap()
}

fn chan() -> p::ChannelAttrs4 {
    p::ChannelAttrs4 {
        ca_headerpadsize: 0,
        ca_maxrequestsize: 1 << 20,
        ca_maxresponsesize: 1 << 20,
        ca_maxresponsesize_cached: 8192,
        ca_maxoperations: 32,
        ca_maxrequests: 1,
        ca_rdma_ird: Vec::new(),
    }
}

/// An NFSv4.1 session on slot 0.
struct V4 {
    rpc: Client,
    session: [u8; 16],
    seq: u32,
}

impl V4 {
    async fn new(rpc: Client, owner: &str) -> Self {
        let r = compound(
            &rpc,
            vec![A::OpExchangeId(p::ExchangeId4args {
                eia_clientowner: p::ClientOwner4 {
                    co_verifier: [1; 8],
                    co_ownerid: Bytes::copy_from_slice(owner.as_bytes()),
                },
                eia_flags: 0,
                eia_state_protect: p::StateProtect4A::Sp4None,
                eia_client_impl_id: Vec::new(),
            })],
        )
        .await;
        let R::OpExchangeId(p::ExchangeId4res::Nfs4Ok(x)) = &r.resarray[0] else {
            panic!("EXCHANGE_ID: {r:?}")
        };
        let r = compound(
            &rpc,
            vec![A::OpCreateSession(p::CreateSession4args {
                csa_clientid: x.eir_clientid,
                csa_sequence: x.eir_sequenceid,
                csa_flags: 0,
                csa_fore_chan_attrs: chan(),
                csa_back_chan_attrs: chan(),
                csa_cb_program: 0x4000_0000,
                csa_sec_parms: vec![p::CallbackSecParms4::AuthNone],
            })],
        )
        .await;
        let R::OpCreateSession(p::CreateSession4res::Nfs4Ok(s)) = &r.resarray[0] else {
            panic!("CREATE_SESSION: {r:?}")
        };
        Self {
            rpc,
            session: s.csr_sessionid,
            seq: 0,
        }
    }

    /// SEQUENCE and `ops`: the status and the results after SEQUENCE.
    async fn run(&mut self, ops: Vec<A>) -> (S, Vec<R>) {
        self.seq += 1;
        let mut all = vec![A::OpSequence(p::Sequence4args {
            sa_sessionid: self.session,
            sa_sequenceid: self.seq,
            sa_slotid: 0,
            sa_highest_slotid: 0,
            sa_cachethis: false,
        })];
        all.extend(ops);
        let r = compound(&self.rpc, all).await;
        (r.status, r.resarray.into_iter().skip(1).collect())
    }
}

fn lookups(path: &str) -> Vec<A> {
    path.split('/')
        .filter(|c| !c.is_empty())
        .map(|c| {
            A::OpLookup(p::Lookup4args {
                objname: Bytes::copy_from_slice(c.as_bytes()),
            })
        })
        .collect()
}

fn getfh_of(r: &[R]) -> Bytes {
    r.iter()
        .find_map(|r| match r {
            R::OpGetfh(p::Getfh4res::Nfs4Ok(f)) => Some(f.object.clone()),
            _ => None,
        })
        .expect("GETFH")
}

/// The names READDIR lists in the current directory.
fn names(r: &[R]) -> Vec<String> {
    let Some(R::OpReaddir(p::Readdir4res::Nfs4Ok(ok))) = r.last() else {
        panic!("READDIR: {r:?}")
    };
    let mut out = Vec::new();
    let mut e = ok.reply.entries.as_deref();
    while let Some(x) = e {
        out.push(String::from_utf8_lossy(&x.name).into_owned());
        e = x.nextentry.as_deref();
    }
    out
}

fn readdir() -> A {
    A::OpReaddir(p::Readdir4args {
        cookie: 0,
        cookieverf: [0; 8],
        dircount: 4096,
        maxcount: 16384,
        attr_request: vec![1 << p::FATTR4_TYPE],
    })
}

fn owner_of(path: &Path) -> u32 {
    std::os::unix::fs::MetadataExt::uid(&std::fs::metadata(path).unwrap())
}

const EXPORTS: &str = "\
# a: read-write for .2 (root squashed), read-only for .4, squashed to 1234 for .7
DIR/a 127.0.0.2(rw) 127.0.0.4(ro) 127.0.0.6(rw,no_root_squash) 127.0.0.7(rw,all_squash,anonuid=1234,anongid=1234)
DIR/deep/b -rw 127.0.0.3 127.0.0.6(no_root_squash)
";

/// MOUNT and NFSv3 over one transport.
async fn v3(s: &Served, rdma: bool) {
    let t = if rdma { "rdma" } else { "tcp" };
    let to = s.nfs(rdma);
    let (a, b) = (s.path("a"), s.path("deep/b"));
    let c2 = client("127.0.0.2", to, rdma, 0).await;
    let c3 = client("127.0.0.3", to, rdma, 0).await;
    let c4 = client("127.0.0.4", to, rdma, 0).await;
    let c5 = client("127.0.0.5", to, rdma, 0).await;
    let c6 = client("127.0.0.6", to, rdma, 0).await;
    let c7 = client("127.0.0.7", to, rdma, 0).await;
    // MOUNT (on the NFS listener: every listener serves both programs).
    let ha = mnt(&c2, &a).await.expect("a for .2");
    let hb = mnt(&c3, &b).await.expect("b for .3");
    assert_eq!(mnt(&c3, &a).await, Err(MNT3ERR_ACCES), "{t}: a for .3");
    assert_eq!(mnt(&c2, &b).await, Err(MNT3ERR_ACCES), "{t}: b for .2");
    assert_eq!(mnt(&c5, &a).await, Err(MNT3ERR_ACCES), "{t}: a for .5");
    assert_eq!(
        mnt(&c5, "/").await,
        Err(MNT3ERR_ACCES),
        "{t}: / is no export"
    );
    assert_eq!(
        mnt(&c2, &s.path("deep")).await,
        Err(MNT3ERR_ACCES),
        "{t}: a path that holds an export is none"
    );
    assert_eq!(mnt(&c4, &a).await.unwrap(), ha, "{t}: one handle for all");
    // And on the MOUNT port.
    let mount = SocketAddr::from(([127, 0, 0, 1], s.mount));
    let m3 = client("127.0.0.3", mount, false, 0).await;
    assert_eq!(
        mnt(&m3, &a).await,
        Err(MNT3ERR_ACCES),
        "a for .3 on the MOUNT port"
    );
    assert_eq!(mnt(&m3, &b).await.unwrap(), hb);
    // NFSv3 with the handle of an export the client may not use: ACCES,
    // with no attributes, whatever the procedure.
    match getattr(&c3, &ha).await {
        p3::Getattr3res::Default(st) => assert_eq!(st as u32, NFS3ERR_ACCES, "{t}"),
        ok => panic!("{t}: .3 got the attributes of a: {ok:?}"),
    }
    for (c, h, who) in [
        (&c3, &ha, ".3 on a"),
        (&c2, &hb, ".2 on b"),
        (&c5, &ha, ".5 on a"),
    ] {
        assert_eq!(
            nfs3(c, 6, read_args(h)).await,
            NFS3ERR_ACCES,
            "{t}: READ {who}"
        );
        assert_eq!(
            nfs3(c, 7, write_args(h)).await,
            NFS3ERR_ACCES,
            "{t}: WRITE {who}"
        );
        assert_eq!(
            nfs3(c, 3, X::default().dirop(h, b"x")).await,
            NFS3ERR_ACCES,
            "{t}: LOOKUP {who}"
        );
        assert_eq!(
            nfs3(
                c,
                17,
                X::default()
                    .opaque(h)
                    .u64(0)
                    .fixed(&[0; 8])
                    .u32(1024)
                    .u32(4096)
            )
            .await,
            NFS3ERR_ACCES,
            "{t}: READDIRPLUS {who}"
        );
        assert_eq!(
            create(c, h, "nope").await.0,
            NFS3ERR_ACCES,
            "{t}: CREATE {who}"
        );
    }
    // Allowed: .2 writes a (as root, squashed), .4 reads it but may not
    // write (ro), .7 writes as 1234, .6 as root.
    let (st, f2) = create(&c2, &ha, &format!("by2-{t}")).await;
    assert_eq!(st, 0, "{t}");
    let f2 = f2.unwrap();
    assert_eq!(nfs3(&c2, 7, write_args(&f2)).await, 0, "{t}");
    assert_eq!(nfs3(&c4, 6, read_args(&f2)).await, 0, "{t}: .4 reads");
    assert_eq!(
        nfs3(&c4, 7, write_args(&f2)).await,
        NFS3ERR_ROFS,
        "{t}: .4 is ro"
    );
    assert_eq!(create(&c4, &ha, "ro").await.0, NFS3ERR_ROFS, "{t}");
    let (st, _) = create(&c7, &ha, &format!("by7-{t}")).await;
    assert_eq!(st, 0, "{t}");
    let (st, _) = create(&c6, &ha, &format!("by6-{t}")).await;
    assert_eq!(st, 0, "{t}");
    if rustix::process::geteuid().is_root() {
        assert_eq!(
            owner_of(&Path::new(&a).join(format!("by2-{t}"))),
            65534,
            "{t}: root squashed"
        );
        assert_eq!(
            owner_of(&Path::new(&a).join(format!("by7-{t}"))),
            1234,
            "{t}: anonuid"
        );
        assert_eq!(
            owner_of(&Path::new(&a).join(format!("by6-{t}"))),
            0,
            "{t}: no_root_squash"
        );
    } else {
        eprintln!("not root: the server cannot switch identities, ownership not checked");
    }
    // .6 may use both exports, but LINK does not cross them.
    let hb6 = mnt(&c6, &b).await.unwrap();
    assert_eq!(
        nfs3(&c6, 15, X::default().opaque(&f2).dirop(&hb6, b"link")).await,
        NFS3ERR_XDEV,
        "{t}"
    );
    // A handle that is not one of ours at all stays BADHANDLE (10001).
    let mut forged = ha.to_vec();
    forged[30] ^= 1;
    assert_eq!(
        nfs3(&c2, 1, X::default().opaque(&forged)).await,
        10001,
        "{t}"
    );
}

/// NFSv4.1: the pseudo file system and the access checks.
async fn v4(s: &Served, rdma: bool) {
    let t = if rdma { "rdma" } else { "tcp" };
    let to = s.nfs(rdma);
    let a = s.path("a");
    let b = s.path("deep/b");
    let mut c2 = V4::new(client("127.0.0.2", to, rdma, 0).await, &format!("c2-{t}")).await;
    let mut c3 = V4::new(client("127.0.0.3", to, rdma, 0).await, &format!("c3-{t}")).await;
    let mut c5 = V4::new(client("127.0.0.5", to, rdma, 0).await, &format!("c5-{t}")).await;
    // Walk from the root to a: pseudo directories, then the export.
    let mut ops = vec![A::OpPutrootfh];
    ops.extend(lookups(&a));
    ops.push(A::OpGetfh);
    let (st, r) = c2.run(ops.clone()).await;
    assert_eq!(st, S::Nfs4Ok, "{t}: {r:?}");
    let ha4 = getfh_of(&r);
    let c3rpc = client("127.0.0.3", to, rdma, 0).await;
    assert_eq!(mnt(&c3rpc, &a).await, Err(MNT3ERR_ACCES));
    // The same handle MOUNT gives.
    let c2rpc = client("127.0.0.2", to, rdma, 0).await;
    assert_eq!(mnt(&c2rpc, &a).await.unwrap(), ha4, "{t}");
    // .3 may not cross into a: LOOKUP of its last component is ACCESS.
    let (st, r) = c3.run(ops.clone()).await;
    assert_eq!(st, S::Nfs4errAccess, "{t}: {r:?}");
    assert!(matches!(r.last(), Some(R::OpLookup(_))), "{t}: {r:?}");
    // Nor use its handle.
    let (st, _) = c3
        .run(vec![
            A::OpPutfh(p::Putfh4args {
                object: ha4.clone(),
            }),
            A::OpGetattr(p::Getattr4args {
                attr_request: vec![1 << p::FATTR4_SIZE],
            }),
        ])
        .await;
    assert_eq!(st, S::Nfs4errAccess, "{t}");
    // .5 is nobody's client: the pseudo root lists nothing for it.
    let (st, r) = c5.run(vec![A::OpPutrootfh, readdir()]).await;
    assert_eq!(st, S::Nfs4Ok, "{t}");
    assert!(names(&r).is_empty(), "{t}: {:?}", names(&r));
    // .2 sees the way to a, not to b; .3 the way to b.
    let parent = Path::new(&a).parent().unwrap().to_str().unwrap().to_owned();
    let mut ops = vec![A::OpPutrootfh];
    ops.extend(lookups(&parent));
    ops.push(readdir());
    let (st, r) = c2.run(ops.clone()).await;
    assert_eq!(st, S::Nfs4Ok, "{t}: {r:?}");
    assert_eq!(names(&r), vec!["a"], "{t}");
    let (st, r) = c3.run(ops.clone()).await;
    assert_eq!(st, S::Nfs4Ok, "{t}: {r:?}");
    assert_eq!(names(&r), vec!["deep"], "{t}");
    // The pseudo file system is read-only, and LOOKUPP leads back to it.
    let mut ops = vec![A::OpPutrootfh];
    ops.extend(lookups(&parent));
    ops.push(A::OpCreate(p::Create4args {
        objtype: p::Createtype4::Nf4dir,
        objname: Bytes::from_static(b"new"),
        createattrs: p::Fattr4 {
            attrmask: vec![],
            attr_vals: Bytes::new(),
        },
    }));
    let (st, _) = c2.run(ops).await;
    assert_eq!(st, S::Nfs4errRofs, "{t}");
    let (st, r) = c3
        .run({
            let mut v = vec![A::OpPutrootfh];
            v.extend(lookups(&b));
            v.extend([
                A::OpLookupp,
                A::OpGetfh,
                A::OpLookup(p::Lookup4args {
                    objname: Bytes::from_static(b"b"),
                }),
                A::OpGetfh,
            ]);
            v
        })
        .await;
    assert_eq!(st, S::Nfs4Ok, "{t}: {r:?}");
    // .2 writes in a: OPEN creates as the squashed root.
    let (st, r) = c2
        .run(vec![
            A::OpPutfh(p::Putfh4args {
                object: ha4.clone(),
            }),
            A::OpOpen(p::Open4args {
                seqid: 0,
                share_access: p::OPEN4_SHARE_ACCESS_BOTH,
                share_deny: 0,
                owner: p::StateOwner4 {
                    clientid: 0,
                    owner: Bytes::from_static(b"o"),
                },
                openhow: p::Openflag4::Open4Create(p::Createhow4::Unchecked4(p::Fattr4 {
                    attrmask: vec![],
                    attr_vals: Bytes::new(),
                })),
                claim: p::OpenClaim4::ClaimNull(Bytes::from(format!("v4-{t}"))),
            }),
        ])
        .await;
    assert_eq!(st, S::Nfs4Ok, "{t}: {r:?}");
    if rustix::process::geteuid().is_root() {
        assert_eq!(
            owner_of(&Path::new(&a).join(format!("v4-{t}"))),
            65534,
            "{t}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exports_allow_and_refuse_clients_by_address_over_tcp_and_rdma() {
    let s = Served::start("access", EXPORTS, &["a", "deep/b"]);
    for rdma in [false, true] {
        v3(&s, rdma).await;
        v4(&s, rdma).await;
    }
    // Each refusal left a warning naming the client and the export.
    let log = s.log();
    for who in ["127.0.0.3", "127.0.0.5"] {
        assert!(
            log.lines().any(|l| l.contains("access refused")
                && l.contains(who)
                && l.contains(&s.path("a"))),
            "no refusal of {who} logged:\n{log}"
        );
    }
    assert!(!log.contains("panicked"), "{log}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sighup_reads_the_exports_again_without_dropping_connections() {
    let s = Served::start(
        "reload",
        "DIR/a 127.0.0.2(rw)\nDIR/b 127.0.0.2(rw)\n",
        &["a", "b"],
    );
    let (a, b) = (s.path("a"), s.path("b"));
    // Connections of .2 and .3, over both transports, kept open throughout.
    let mut cs = Vec::new();
    for rdma in [false, true] {
        let c2 = client("127.0.0.2", s.nfs(rdma), rdma, 1000).await;
        let c3 = client("127.0.0.3", s.nfs(rdma), rdma, 1000).await;
        cs.push((rdma, c2, c3));
    }
    let ha = mnt(&cs[0].1, &a).await.unwrap();
    let hb = mnt(&cs[0].1, &b).await.unwrap();
    for (rdma, c2, c3) in &cs {
        assert_eq!(
            nfs3(c2, 1, X::default().opaque(&ha)).await,
            0,
            "rdma {rdma}"
        );
        assert_eq!(
            nfs3(c3, 1, X::default().opaque(&ha)).await,
            NFS3ERR_ACCES,
            "rdma {rdma}"
        );
    }
    // a now for .3 read-only, and no longer for .2; b no longer exported.
    std::fs::write(&s.exports, format!("{a} 127.0.0.3(ro)\n")).unwrap();
    s.hangup();
    s.wait_log("exports read again", 1);
    for (rdma, c2, c3) in &cs {
        assert_eq!(
            nfs3(c3, 1, X::default().opaque(&ha)).await,
            0,
            "rdma {rdma}"
        );
        assert_eq!(
            nfs3(c3, 7, write_args(&ha)).await,
            NFS3ERR_ROFS,
            "rdma {rdma}"
        );
        assert_eq!(
            nfs3(c2, 1, X::default().opaque(&ha)).await,
            NFS3ERR_ACCES,
            "rdma {rdma}"
        );
        assert_eq!(
            nfs3(c2, 1, X::default().opaque(&hb)).await,
            NFS3ERR_STALE,
            "rdma {rdma}"
        );
    }
    assert_eq!(
        mnt(&cs[0].2, &a).await.unwrap(),
        ha,
        "the same handle after a reload"
    );
    // A bad file: an error with its line, and the exports stay as they were.
    std::fs::write(
        &s.exports,
        format!("# ok\n{a} 127.0.0.2(rw)\n{b} 127.0.0.2(rw,bogus)\n"),
    )
    .unwrap();
    s.hangup();
    s.wait_log(":3: unknown option `bogus`", 1);
    assert!(s.log().contains("stay as they were"), "{}", s.log());
    for (rdma, c2, c3) in &cs {
        assert_eq!(
            nfs3(c3, 1, X::default().opaque(&ha)).await,
            0,
            "rdma {rdma}"
        );
        assert_eq!(
            nfs3(c2, 1, X::default().opaque(&ha)).await,
            NFS3ERR_ACCES,
            "rdma {rdma}"
        );
    }
    // The connections lived through both: the same clients still call.
    for (_, _, c3) in &cs {
        c3.null(100_003, 3).await.unwrap();
    }
    assert_eq!(s.log().matches("exports read again").count(), 1);
}

#[test]
fn a_bad_exports_file_stops_the_server_at_start_with_its_line() {
    let dir = std::env::temp_dir().join(format!("rpcrdma-exp-bad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("exports");
    std::fs::write(&file, "# x\n/srv *.example.org(rw)\n").unwrap();
    let out = Command::new(BIN)
        .args(["nfs", "serve", "--exports"])
        .arg(&file)
        .args([
            "--listen",
            "127.0.0.1:0",
            "--mount-port",
            "0",
            "--state-dir",
        ])
        .arg(dir.join("state"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains(&format!("{}:2: wildcard host name", file.display())),
        "{err}"
    );
    // A directory and --exports together: refused by the option parser.
    let out = Command::new(BIN)
        .args(["nfs", "serve", "/tmp", "--exports"])
        .arg(&file)
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot be used with"));
    let _ = std::fs::remove_dir_all(&dir);
}
