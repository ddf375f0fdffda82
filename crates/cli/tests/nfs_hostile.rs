//! A hostile NFSv3 client against `rpcrdma nfs serve` (the binary, with
//! its default root squashing), over TCP and over RPC-over-RDMA (software
//! iWARP): credentials that must never act as root ((uid_t)-1 as uid, gid
//! and supplementary gid, uid and gid 0, AUTH_NONE), what they try (a
//! set-user-ID CREATE, READ and WRITE of a root-only file, MKNOD of
//! /dev/mem's and /dev/null's numbers, SETATTR to (uid_t)-1 and to root,
//! REMOVE from a sticky directory), names and symbolic links that reach
//! out of the export, offsets at and past 2^63, exclusive-create
//! verifiers, truncated arguments; then, over TCP, record marks by hand,
//! slow clients that never finish a record, and clients that pipeline
//! 1 MiB READs and never read the replies, while an honest client on
//! another connection (TCP and RDMA) is still served and the server's
//! resident memory stays within its budget.
//!
//! Every answer is the one RFC 1813 requires; afterwards the host file
//! system is inspected for what must not be there: set-user-ID files,
//! device nodes, files owned by root that the test did not make, data
//! read from outside the export. What needs root (the server switching
//! to its callers' identities) is skipped with a message when the test
//! does not run as root.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::path::Path;
use std::time::{Duration, Instant};

use rpcrdma_engine::EngineConfig;
use rpcrdma_nfs3::client::{local_credential, NfsClient};
use rpcrdma_nfs3::proto::nfs3 as p;
use rpcrdma_oncrpc::msg::{AuthFlavor, AuthStat};
use rpcrdma_oncrpc::tcp::TcpConnector;
use rpcrdma_oncrpc::{AuthSysParams, CallHints, Client, ClientConfig, Credential, RpcError};
use rpcrdma_softiwarp::SoftIwarp;
use rpcrdma_transport::RdmaConnector;

mod common;
use common::{local, NfsServed as Served, Raw, Status, X};

const NFS: u32 = 100_003;
const MIB: u64 = 1 << 20;

// nfsstat3 (RFC 1813 §2.6).
const OK: u32 = 0;
const PERM: u32 = 1;
const ACCES: u32 = 13;
const EXIST: u32 = 17;
const INVAL: u32 = 22;
const FBIG: u32 = 27;

// Procedures.
const GETATTR: u32 = 1;
const SETATTR: u32 = 2;
const LOOKUP: u32 = 3;
const READLINK: u32 = 5;
const READ: u32 = 6;
const WRITE: u32 = 7;
const CREATE: u32 = 8;
const SYMLINK: u32 = 10;
const MKNOD: u32 = 11;
const REMOVE: u32 = 12;

/// The anonymous user and group (`--anon-uid`, `--anon-gid` defaults).
const ANON: u32 = 65534;

/// The budget the server runs with here: small, so that the clients that
/// never read fill it in a few seconds.
const MAX_MEMORY: u64 = 96 * MIB;
const MAX_CONNECTION_MEMORY: u64 = 24 * MIB;

fn am_root() -> bool {
    rustix::process::geteuid().is_root()
}

fn sys(uid: u32, gid: u32, gids: &[u32]) -> Credential {
    Credential::Sys(AuthSysParams::new(7, "hostile", uid, gid, gids.to_vec()).unwrap())
}

fn config(cred: Credential) -> ClientConfig {
    let mut c = ClientConfig::default();
    c.credential = cred;
    c.timeout = Duration::from_secs(20);
    c.max_retransmits = 0;
    c
}

async fn connect(s: &Served, rdma: bool, cred: Credential) -> Client {
    if rdma {
        let connector = RdmaConnector::new(SoftIwarp::new(), local(s.rdma), EngineConfig::client());
        Client::connect(connector, config(cred)).await.unwrap()
    } else {
        Client::connect(TcpConnector::new(local(s.tcp)), config(cred))
            .await
            .unwrap()
    }
}

async fn root_handle(s: &Served) -> Vec<u8> {
    let nfs = Client::connect(TcpConnector::new(local(s.tcp)), config(local_credential()))
        .await
        .unwrap();
    let mount = Client::connect(
        TcpConnector::new(local(s.mount)),
        config(local_credential()),
    )
    .await
    .unwrap();
    let (c, _) = NfsClient::mount(nfs, mount, b"/").await.unwrap();
    c.root().as_bytes().to_vec()
}

async fn status(c: &Client, proc_: u32, args: &X) -> u32 {
    let r: Result<Status, RpcError> = c
        .call(NFS, 3, proc_, &Raw(args.0.clone()), &CallHints::new())
        .await;
    r.unwrap_or_else(|e| panic!("procedure {proc_}: {e}")).0
}

async fn expect(c: &Client, what: &str, proc_: u32, args: &X, want: &[u32]) -> u32 {
    let got = status(c, proc_, args).await;
    assert!(
        want.contains(&got),
        "{what}: nfsstat3 {got}, want one of {want:?}"
    );
    got
}

/// `sattr3`: mode, uid, gid, size as given; times unchanged.
fn sattr(x: X, mode: Option<u32>, uid: Option<u32>, gid: Option<u32>, size: Option<u64>) -> X {
    let opt32 = |x: X, v: Option<u32>| match v {
        Some(v) => x.u32(1).u32(v),
        None => x.u32(0),
    };
    let x = opt32(opt32(opt32(x, mode), uid), gid);
    let x = match size {
        Some(s) => x.u32(1).u64(s),
        None => x.u32(0),
    };
    x.u32(0).u32(0)
}

fn create_args(dir: &[u8], name: &str, mode: u32) -> X {
    // UNCHECKED with the mode.
    sattr(
        X::default().dirop(dir, name.as_bytes()).u32(0),
        Some(mode),
        None,
        None,
        None,
    )
}

async fn lookup(c: &Client, dir: &[u8], name: &str) -> Option<Vec<u8>> {
    let r: p::Lookup3res = c
        .call(
            NFS,
            3,
            LOOKUP,
            &Raw(X::default().dirop(dir, name.as_bytes()).0),
            &CallHints::new(),
        )
        .await
        .unwrap();
    match r {
        p::Lookup3res::Nfs3Ok(ok) => Some(ok.object.data.to_vec()),
        _ => None,
    }
}

/// The identity a credential acts as, by root squashing with its invalid
/// ids mapped: (uid, gid). Without root the server acts as its own user.
fn acts_as(uid: u32, gid: u32) -> (u32, u32) {
    if !am_root() {
        return (
            rustix::process::geteuid().as_raw(),
            rustix::process::getegid().as_raw(),
        );
    }
    let map = |id: u32| if id == 0 || id == u32::MAX { ANON } else { id };
    (map(uid), map(gid))
}

/// Credentials that must never act as root, and what they try.
async fn credentials(s: &Served, rdma: bool, root: &[u8]) {
    let label = if rdma { "rdma" } else { "tcp" };
    let export = s.export();
    let secret = lookup(&connect(s, rdma, local_credential()).await, root, "secret")
        .await
        .expect("the secret file");
    let creds: [(&str, Credential, (u32, u32)); 6] = [
        (
            "uid-gid-max",
            sys(u32::MAX, u32::MAX, &[]),
            (u32::MAX, u32::MAX),
        ),
        ("uid-max", sys(u32::MAX, 1000, &[]), (u32::MAX, 1000)),
        (
            "gid-max",
            sys(1000, u32::MAX, &[u32::MAX]),
            (1000, u32::MAX),
        ),
        ("root", sys(0, 0, &[0]), (0, 0)),
        ("gid-0", sys(1000, 0, &[0, u32::MAX]), (1000, 0)),
        ("auth-none", Credential::None, (ANON, ANON)),
    ];
    for (tag, cred, (uid, gid)) in creds {
        let what = format!("{label} {tag}");
        let (want_uid, want_gid) = acts_as(uid, gid);
        let c = connect(s, rdma, cred).await;
        // CREATE UNCHECKED mode 04755: the file is the caller's as mapped,
        // never root's, and nobody's files are never set-user-ID.
        let name = format!("made-{label}-{tag}");
        expect(&c, &what, CREATE, &create_args(root, &name, 0o4755), &[OK]).await;
        let md = std::fs::symlink_metadata(export.join(&name)).unwrap();
        assert_eq!((md.uid(), md.gid()), (want_uid, want_gid), "{what}: owner");
        assert_ne!(md.uid(), 0, "{what}: a root-owned file");
        if want_uid == ANON || !am_root() {
            assert_eq!(md.mode() & 0o6000, 0, "{what}: set-id bits from nobody");
        }
        let made = lookup(&c, root, &name).await.unwrap();
        // SETATTR mode 06755 on its own file: still no set-id bits for
        // nobody; owner (uid_t)-1: INVAL; owner root: PERM (as root).
        expect(
            &c,
            &what,
            SETATTR,
            &sattr(X::default().opaque(&made), Some(0o6755), None, None, None).u32(0),
            &[OK],
        )
        .await;
        let md = std::fs::symlink_metadata(export.join(&name)).unwrap();
        if want_uid == ANON || !am_root() {
            assert_eq!(
                md.mode() & 0o6000,
                0,
                "{what}: SETATTR gave nobody set-id bits"
            );
        }
        for bad in [u32::MAX] {
            let args = sattr(X::default().opaque(&made), None, Some(bad), None, None).u32(0);
            expect(
                &c,
                &format!("{what}: SETATTR uid {bad:#x}"),
                SETATTR,
                &args,
                &[INVAL],
            )
            .await;
            let args = sattr(X::default().opaque(&made), None, None, Some(bad), None).u32(0);
            expect(
                &c,
                &format!("{what}: SETATTR gid {bad:#x}"),
                SETATTR,
                &args,
                &[INVAL],
            )
            .await;
        }
        if am_root() {
            let args = sattr(X::default().opaque(&made), None, Some(0), None, None).u32(0);
            expect(
                &c,
                &format!("{what}: SETATTR uid 0"),
                SETATTR,
                &args,
                &[PERM],
            )
            .await;
            // READ and WRITE of a root-only file: refused.
            let read = X::default().opaque(&secret).u64(0).u32(4096);
            expect(&c, &format!("{what}: READ secret"), READ, &read, &[ACCES]).await;
            let write = X::default()
                .opaque(&secret)
                .u64(0)
                .u32(1)
                .u32(2)
                .opaque(b"x");
            expect(
                &c,
                &format!("{what}: WRITE secret"),
                WRITE,
                &write,
                &[ACCES],
            )
            .await;
            // REMOVE of root's file from the sticky export root.
            let remove = X::default().dirop(root, b"secret");
            expect(
                &c,
                &format!("{what}: REMOVE secret"),
                REMOVE,
                &remove,
                &[ACCES, PERM],
            )
            .await;
        }
        // MKNOD of /dev/null's numbers: only root may, and nobody here is.
        let dev = format!("dev-{label}-{tag}");
        let mknod = |name: &str, major: u32, minor: u32| {
            sattr(
                X::default().dirop(root, name.as_bytes()).u32(4),
                Some(0o666),
                None,
                None,
                None,
            )
            .u32(major)
            .u32(minor)
        };
        expect(
            &c,
            &format!("{what}: MKNOD 1,3"),
            MKNOD,
            &mknod(&dev, 1, 3),
            &[PERM, ACCES],
        )
        .await;
        // 0x1001:1 would be cut to 1:1 (/dev/mem) by the kernel's word.
        expect(
            &c,
            &format!("{what}: MKNOD 0x1001,1"),
            MKNOD,
            &mknod(&dev, 0x1001, 1),
            &[INVAL],
        )
        .await;
        assert!(
            std::fs::symlink_metadata(export.join(&dev)).is_err(),
            "{what}: a device node"
        );
    }
    assert_eq!(
        std::fs::read(export.join("secret")).unwrap(),
        b"root only",
        "the secret is untouched"
    );
}

/// Names and symbolic links that reach out of the export, offsets,
/// verifiers and truncated arguments, with the local user.
async fn namespace_and_numbers(s: &Served, rdma: bool, root: &[u8]) {
    let label = if rdma { "rdma" } else { "tcp" };
    let c = connect(s, rdma, local_credential()).await;
    // Names: `..` of the root is the root; `/`, NUL and `.`/`..` as new
    // names are refused.
    let up = lookup(&c, root, "..").await.expect("`..` of the root");
    assert_eq!(up, root, "{label}: `..` of the root is the root");
    for name in ["../escape", "a/b", "nul\0", ".", ".."] {
        let got = status(&c, CREATE, &create_args(root, name, 0o644)).await;
        assert!(
            got == ACCES || got == INVAL || got == EXIST,
            "{label}: CREATE {name:?}: {got}"
        );
    }
    // A symbolic link to a host file: stored, never followed by the
    // server; READ and LOOKUP through it fail.
    let link = format!("passwd-{label}");
    let args = sattr(
        X::default().dirop(root, link.as_bytes()),
        None,
        None,
        None,
        None,
    )
    .opaque(b"/etc/passwd");
    expect(&c, &format!("{label}: SYMLINK"), SYMLINK, &args, &[OK]).await;
    let lh = lookup(&c, root, &link).await.unwrap();
    let r: p::Readlink3res = c
        .call(
            NFS,
            3,
            READLINK,
            &Raw(X::default().opaque(&lh).0),
            &CallHints::new(),
        )
        .await
        .unwrap();
    assert!(
        matches!(&r, p::Readlink3res::Nfs3Ok(ok) if &ok.data[..] == b"/etc/passwd"),
        "{r:?}"
    );
    let read = X::default().opaque(&lh).u64(0).u32(4096);
    expect(
        &c,
        &format!("{label}: READ of a symlink"),
        READ,
        &read,
        &[INVAL],
    )
    .await;
    let through = X::default().dirop(&lh, b"x");
    let got = status(&c, LOOKUP, &through).await;
    assert_ne!(got, OK, "{label}: LOOKUP through a symlink");
    // Offsets (RFC 1813 §3.3.6, §3.3.7, §3.3.2).
    let f = format!("offsets-{label}");
    expect(&c, &f, CREATE, &create_args(root, &f, 0o644), &[OK]).await;
    let fh = lookup(&c, root, &f).await.unwrap();
    let data = vec![b'd'; 3000];
    let w = X::default()
        .opaque(&fh)
        .u64(0)
        .u32(3000)
        .u32(2)
        .opaque(&data);
    expect(&c, &f, WRITE, &w, &[OK]).await;
    let top = (1u64 << 63) - 1;
    for (off, count) in [
        (top, 10),
        (top - 9, 100),
        (top + 1, u32::MAX),
        (u64::MAX - 9, u32::MAX),
        (u64::MAX, u32::MAX),
    ] {
        let r: p::Read3res = c
            .call(
                NFS,
                3,
                READ,
                &Raw(X::default().opaque(&fh).u64(off).u32(count).0),
                &CallHints::new(),
            )
            .await
            .unwrap();
        assert!(
            matches!(&r, p::Read3res::Nfs3Ok(ok) if ok.count == 0 && ok.eof && ok.data.is_empty()),
            "{label}: READ at {off} count {count}: {r:?}"
        );
    }
    for (off, len) in [(top, 1u32), (1 << 63, 1), (u64::MAX, 1), (u64::MAX - 1, 4)] {
        let w = X::default()
            .opaque(&fh)
            .u64(off)
            .u32(len)
            .u32(0)
            .opaque(&vec![1; len as usize]);
        expect(&c, &format!("{label}: WRITE at {off}"), WRITE, &w, &[FBIG]).await;
    }
    for size in [1u64 << 63, u64::MAX] {
        let args = sattr(X::default().opaque(&fh), None, None, None, Some(size)).u32(0);
        expect(
            &c,
            &format!("{label}: SETATTR size {size}"),
            SETATTR,
            &args,
            &[FBIG],
        )
        .await;
    }
    assert_eq!(std::fs::metadata(s.export().join(&f)).unwrap().len(), 3000);
    // Exclusive CREATE: the same verifier again is the same file, another
    // is EXIST.
    let ex = format!("exclusive-{label}");
    let excl = |v: u64| X::default().dirop(root, ex.as_bytes()).u32(2).u64(v);
    expect(&c, &ex, CREATE, &excl(0x0102_0304_0506_0708), &[OK]).await;
    expect(&c, &ex, CREATE, &excl(0x0102_0304_0506_0708), &[OK]).await;
    expect(&c, &ex, CREATE, &excl(0x0807_0605_0403_0201), &[EXIST]).await;
    // Truncated arguments: GARBAGE_ARGS, never a panic.
    let full = X::default().opaque(&fh).u64(0).u32(10);
    for cut in [0, 3, 4, 8, full.0.len() - 4] {
        let r: Result<Status, RpcError> = c
            .call(
                NFS,
                3,
                READ,
                &Raw(full.0[..cut].to_vec()),
                &CallHints::new(),
            )
            .await;
        assert!(
            matches!(r, Err(RpcError::GarbageArgs)),
            "{label}: cut {cut}: {r:?}"
        );
    }
    // A credential the server cannot decode: AUTH_BADCRED.
    let bad = rpcrdma_oncrpc::msg::OpaqueAuth {
        flavor: AuthFlavor::AUTH_SYS,
        body: bytes::Bytes::from_static(&[0, 0, 0, 1, 0, 0, 0, 200]),
    };
    let c = connect(s, rdma, Credential::Other(bad)).await;
    let r: Result<Status, RpcError> = c
        .call(
            NFS,
            3,
            GETATTR,
            &Raw(X::default().opaque(root).0),
            &CallHints::new(),
        )
        .await;
    assert!(
        matches!(r, Err(RpcError::Auth(AuthStat::AUTH_BADCRED))),
        "{label}: {r:?}"
    );
}

/// A READ of 1 MiB of `fh` as a whole record (AUTH_NONE).
fn read_call(xid: u32, fh: &[u8]) -> Vec<u8> {
    let body = X::default()
        .u32(xid)
        .u32(0)
        .u32(2)
        .u32(NFS)
        .u32(3)
        .u32(READ)
        .u32(0)
        .u32(0)
        .u32(0)
        .u32(0)
        .opaque(fh)
        .u64(0)
        .u32(MIB as u32);
    let mut m = (0x8000_0000u32 | body.0.len() as u32)
        .to_be_bytes()
        .to_vec();
    m.extend_from_slice(&body.0);
    m
}

/// Record marking, slow clients and clients that never read, over TCP.
async fn transport_abuse(s: &Served, root: &[u8]) {
    let c = connect(s, false, local_credential()).await;
    let big = "big";
    expect(&c, big, CREATE, &create_args(root, big, 0o644), &[OK]).await;
    let fh = lookup(&c, root, big).await.unwrap();
    std::fs::write(s.export().join(big), vec![0x5a; MIB as usize]).unwrap();
    // Record marks: a 2 GiB fragment, a zero-length last fragment, garbage.
    for (what, bytes) in [
        ("2 GiB fragment", 0xFFFF_FFFFu32.to_be_bytes().to_vec()),
        ("empty record", 0x8000_0000u32.to_be_bytes().to_vec()),
        ("garbage", b"GET / HTTP/1.1\r\n\r\n".to_vec()),
    ] {
        let mut t = TcpStream::connect(local(s.tcp)).unwrap();
        t.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        t.write_all(&bytes).unwrap();
        let _ = t.shutdown(std::net::Shutdown::Write);
        let mut sink = Vec::new();
        // The server closes (or answers nothing); it never hangs the test.
        let _ = t.read_to_end(&mut sink);
        assert!(sink.len() < 1024, "{what}: {} octets back", sink.len());
    }
    // Slow clients: 50 connections that each send half a record header
    // and then nothing.
    let slow: Vec<TcpStream> = (0..50)
        .map(|_| {
            let mut t = TcpStream::connect(local(s.tcp)).unwrap();
            t.write_all(&[0x80, 0]).unwrap();
            t
        })
        .collect();
    expect(
        &c,
        "served beside slow clients",
        GETATTR,
        &X::default().opaque(root),
        &[OK],
    )
    .await;
    drop(slow);

    // Clients that pipeline 300 READs of 1 MiB and never read a reply.
    let (_, rss_before) = s.memory();
    let flood: Vec<TcpStream> = (0..3)
        .map(|i| {
            let t = TcpStream::connect(local(s.tcp)).unwrap();
            t.set_nonblocking(true).unwrap();
            let calls: Vec<u8> = (0..300)
                .flat_map(|x| read_call(i * 1000 + x, &fh))
                .collect();
            let mut sent = 0;
            let until = Instant::now() + Duration::from_secs(3);
            let mut tt = &t;
            while sent < calls.len() && Instant::now() < until {
                match tt.write(&calls[sent..]) {
                    Ok(n) => sent += n,
                    Err(_) => std::thread::sleep(Duration::from_millis(5)),
                }
            }
            t
        })
        .collect();
    // Give the server time to fill what it will hold for them.
    tokio::time::sleep(Duration::from_secs(2)).await;
    // An honest client on another connection, over TCP and over RDMA,
    // is served meanwhile (1 MiB READs, verified).
    for rdma in [false, true] {
        let h = connect(s, rdma, local_credential()).await;
        let r: p::Read3res = h
            .call(
                NFS,
                3,
                READ,
                &Raw(X::default().opaque(&fh).u64(0).u32(MIB as u32).0),
                &CallHints::new(),
            )
            .await
            .unwrap_or_else(|e| panic!("honest READ (rdma {rdma}) during the flood: {e}"));
        assert!(
            matches!(&r, p::Read3res::Nfs3Ok(ok) if ok.data.len() == MIB as usize && ok.data.iter().all(|&b| b == 0x5a)),
            "honest READ (rdma {rdma})"
        );
    }
    let (_, peak) = s.memory();
    eprintln!(
        "resident memory: {} MiB before the flood, peak {} MiB (budget {} MiB)",
        rss_before >> 20,
        peak >> 20,
        MAX_MEMORY >> 20
    );
    // Within the budget (plus the process's own few tens of MiB), where
    // before the budget covered TCP three such clients took 900 MB.
    let allowed = rss_before + MAX_MEMORY + 48 * MIB;
    assert!(
        peak <= allowed,
        "the server's peak resident memory is {} MiB with clients that never read (before: {} MiB, budget {} MiB)",
        peak >> 20,
        rss_before >> 20,
        MAX_MEMORY >> 20
    );
    // They are dropped once their replies make no progress for the stall
    // timeout (2 s here), with a log line.
    let until = Instant::now() + Duration::from_secs(30);
    loop {
        let log = std::fs::read_to_string(&s.log).unwrap();
        if log
            .matches("dropping a client that has read none of its replies")
            .count()
            >= 3
        {
            break;
        }
        assert!(
            Instant::now() < until,
            "the clients that never read were not dropped:\n{log}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    drop(flood);
    expect(
        &c,
        "served after the flood",
        GETATTR,
        &X::default().opaque(root),
        &[OK],
    )
    .await;
}

/// What must not be on the host: set-user-ID or set-group-ID files of
/// anyone the server squashed, device nodes, root's files the test did
/// not make.
fn audit(export: &Path) {
    let mut stack = vec![export.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap() {
            let e = e.unwrap();
            let md = std::fs::symlink_metadata(e.path()).unwrap();
            let ft = md.file_type();
            let name = e.file_name().to_string_lossy().into_owned();
            assert!(
                !ft.is_char_device() && !ft.is_block_device(),
                "a device node: {name}"
            );
            if md.uid() == 0 {
                assert_eq!(name, "secret", "a file owned by root: {name}");
            }
            if md.mode() & 0o6000 != 0 {
                assert!(
                    am_root() && md.uid() != ANON && md.uid() != 0,
                    "a set-id file of uid {}: {name}",
                    md.uid()
                );
            }
            if ft.is_dir() {
                stack.push(e.path());
            }
        }
    }
}

#[test]
fn a_hostile_client_over_tcp_and_rdma() {
    let max_memory = format!("{}M", MAX_MEMORY >> 20);
    let per_conn = format!("{}M", MAX_CONNECTION_MEMORY >> 20);
    let s = Served::start(
        "hostile",
        true,
        &[
            "--max-memory",
            &max_memory,
            "--max-connection-memory",
            &per_conn,
            "--stall-timeout",
            "2",
        ],
    );
    let export = s.export();
    // The export root is sticky (as /tmp): nobody removes others' files.
    std::fs::set_permissions(&export, std::fs::Permissions::from_mode(0o1777)).unwrap();
    std::fs::write(export.join("secret"), b"root only").unwrap();
    std::fs::set_permissions(
        export.join("secret"),
        std::fs::Permissions::from_mode(0o600),
    )
    .unwrap();
    if !am_root() {
        eprintln!(
            "a_hostile_client_over_tcp_and_rdma: not root, so the server acts as this user for every caller: the identity switch and root-only checks are skipped"
        );
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let root = root_handle(&s).await;
        for rdma in [false, true] {
            credentials(&s, rdma, &root).await;
            namespace_and_numbers(&s, rdma, &root).await;
        }
        transport_abuse(&s, &root).await;
    });
    audit(&export);
    let log = std::fs::read_to_string(&s.log).unwrap();
    assert!(!log.contains("panicked"), "the server panicked:\n{log}");
}
