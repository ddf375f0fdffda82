//! The NFSv4.1 client of `rpcrdma-nfs4` (`client/`) against `rpcrdma nfs
//! serve` (the binary), over TCP and over RPC-over-RDMA (software iWARP):
//!
//! * a client's life: the session with its back channel on the client's
//!   own connection, the server's CB_NULL probe answered (over RDMA as a
//!   reverse-direction call on that connection) and SEQUENCE then
//!   reporting the backchannel up; a directory made, files of several MiB
//!   written and read back byte-identical, a large directory listed,
//!   RENAME, REMOVE, locks between two clients, the typed errors;
//! * a delegation recalled through the backchannel when another client
//!   opens the file for writing: the holder flushes its cached writes,
//!   returns the delegation (DELEGRETURN), and the other client's OPEN,
//!   held with NFS4ERR_DELAY meanwhile, gets in and sees those writes;
//! * a server restart under an open file and a lock: the client makes a
//!   new client record and session and reclaims both in the grace
//!   period, and goes on with the same file; the lock still keeps
//!   another client out;
//! * a lost connection: the request goes again on the same slot and
//!   sequence id, and the new connection is bound to the session's back
//!   channel (BIND_CONN_TO_SESSION), which the server probes again.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use bytes::Bytes;
use rpcrdma_engine::EngineConfig;
use rpcrdma_nfs4::client::{
    Callbacks, ClientEvent, FileKind, Nfs4Client, Nfs4ClientConfig, Nfs4Error, OpenOptions, Status,
};
use rpcrdma_oncrpc::tcp::TcpConnector;
use rpcrdma_oncrpc::{Client, ClientConfig};
use rpcrdma_softiwarp::SoftIwarp;
use rpcrdma_transport::RdmaConnector;

mod common;
use common::{local, NfsServed as Served, BIN};

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// A client of `s` over RDMA or TCP, its callbacks served on its
/// connection.
async fn client(s: &Served, rdma: bool) -> Nfs4Client {
    let addr = local(if rdma { s.rdma } else { s.tcp });
    client_at(addr, rdma).await
}

async fn client_at(addr: SocketAddr, rdma: bool) -> Nfs4Client {
    let callbacks = Callbacks::default();
    let mut cfg = ClientConfig::default();
    cfg.timeout = Duration::from_secs(20);
    cfg.credential = rpcrdma_nfs3::client::local_credential();
    cfg.services = callbacks.services();
    let rpc = if rdma {
        let connector = RdmaConnector::new(SoftIwarp::new(), addr, EngineConfig::client());
        Client::connect(connector, cfg).await.unwrap()
    } else {
        Client::connect(TcpConnector::new(addr), cfg).await.unwrap()
    };
    let mut ncfg = Nfs4ClientConfig::default();
    ncfg.patience = Duration::from_secs(60);
    Nfs4Client::start(rpc, callbacks, ncfg).await.unwrap()
}

/// Waits until `f` holds (within 10 s).
async fn until(what: &str, mut f: impl FnMut() -> bool) {
    for _ in 0..500 {
        if f() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("{what}: not within 10 s");
}

fn pattern(n: usize, seed: u32) -> Bytes {
    Bytes::from(
        (0..n as u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) ^ seed).to_be_bytes()[1])
            .collect::<Vec<u8>>(),
    )
}

async fn read_all(f: &rpcrdma_nfs4::client::File) -> Vec<u8> {
    let mut got = Vec::new();
    let size = f.client().getattr(f.fh()).await.unwrap().size;
    f.read_to(size, |c| {
        got.extend_from_slice(c);
        Ok(())
    })
    .await
    .unwrap();
    got
}

/// A client's life.
async fn life(s: &Served, rdma: bool) {
    let label = if rdma { "rdma" } else { "tcp" };
    let c = client(s, rdma).await;
    let r = c.report();
    assert!(
        r.back_on_connection,
        "{label}: the back channel is this connection"
    );
    assert!(
        r.back.ca_maxrequests >= 1 && r.back.ca_maxrequests <= 4,
        "{label}: {:?}",
        r.back
    );
    // The server's CB_NULL probe, then SEQUENCE says the backchannel is up.
    until("the CB_NULL probe", || c.report().callbacks.nulls >= 1).await;
    let root = c.root();
    let a = c.getattr(&root).await.unwrap();
    assert_eq!(a.kind, FileKind::Directory);
    let r = c.report();
    assert!(r.sequences_after_probe >= 1);
    assert_eq!(
        r.flags_after_probe, 0,
        "{label}: no SEQ4_STATUS_CB_PATH_DOWN after the probe"
    );

    // A directory, files of several MiB written and read back.
    let dir_name = format!("c4-{label}");
    let dir = c.mkdir(&root, dir_name.as_bytes(), 0o755).await.unwrap();
    let e = c
        .mkdir(&root, dir_name.as_bytes(), 0o755)
        .await
        .unwrap_err();
    assert_eq!(e.status(), Some(Status::Nfs4errExist), "{e}");
    for (name, size) in [("big", 6 << 20), ("odd", 3 * 1048576 + 12345), ("empty", 0)] {
        let data = pattern(size, size as u32);
        let f = c
            .open(
                &dir,
                name.as_bytes(),
                OpenOptions::read_write().create(0o644).truncate(),
            )
            .await
            .unwrap();
        f.write_file(&data).await.unwrap();
        assert_eq!(read_all(&f).await, data, "{label}: {name} read back");
        f.close().await.unwrap();
        let on_disk = std::fs::read(s.export().join(&dir_name).join(name)).unwrap();
        assert!(on_disk == data, "{label}: {name} as the server stored it");
    }
    // A large directory, listed whole with attributes.
    let many = s.export().join(&dir_name).join("many");
    std::fs::create_dir(&many).unwrap();
    for i in 0..1500 {
        std::fs::write(many.join(format!("entry-{i:05}")), i.to_string()).unwrap();
    }
    let (mfh, _) = c.lookup(&dir, b"many").await.unwrap();
    let list = c.readdir(&mfh).await.unwrap();
    assert_eq!(list.len(), 1500, "{label}: every entry");
    let mut names: Vec<String> = list
        .iter()
        .map(|e| String::from_utf8_lossy(&e.name).into_owned())
        .collect();
    names.sort();
    assert_eq!(names[0], "entry-00000");
    assert_eq!(names[1499], "entry-01499");
    assert!(list.iter().all(|e| e
        .attrs
        .as_ref()
        .is_some_and(|a| a.kind == FileKind::Regular)));
    // Paths, RENAME, REMOVE and the errors they give.
    let path = format!("/{dir_name}/big");
    let (fh, a) = c.lookup_path(path.as_bytes()).await.unwrap();
    assert_eq!(a.size, 6 << 20);
    let (fh2, _, skipped) = c
        .resolve(format!("/export/{dir_name}/big").as_bytes(), false)
        .await
        .unwrap();
    assert_eq!(
        (fh2, skipped),
        (fh.clone(), 1),
        "a leading component the root lacks is skipped"
    );
    c.rename(&dir, b"odd", &mfh, b"moved").await.unwrap();
    assert!(many.join("moved").is_file());
    let e = c.lookup(&dir, b"odd").await.unwrap_err();
    assert_eq!(e.status(), Some(Status::Nfs4errNoent), "{e}");
    let e = c.remove(&root, dir_name.as_bytes()).await.unwrap_err();
    assert_eq!(e.status(), Some(Status::Nfs4errNotempty), "{e}");
    c.remove(&mfh, b"moved").await.unwrap();
    assert!(!many.join("moved").exists());
    let e = c
        .open(&dir, b"absent", OpenOptions::read())
        .await
        .unwrap_err();
    assert!(
        matches!(
            e,
            Nfs4Error::Status {
                op: "OPEN",
                status: Status::Nfs4errNoent,
                ..
            }
        ),
        "{e}"
    );

    // Locks between two clients.
    let other = client(s, rdma).await;
    let f = c
        .open(&dir, b"big", OpenOptions::read_write())
        .await
        .unwrap();
    let g = other
        .open(&dir, b"big", OpenOptions::read_write())
        .await
        .unwrap();
    f.lock(true, 0, 100).await.unwrap();
    let e = g.lock(false, 50, 10).await.unwrap_err();
    match e {
        Nfs4Error::Denied {
            offset,
            length,
            write,
            ..
        } => assert_eq!((offset, length, write), (0, 100, true)),
        e => panic!("{label}: {e}"),
    }
    g.lock(true, 100, u64::MAX).await.unwrap();
    f.unlock(0, 100).await.unwrap();
    g.lock(false, 50, 10).await.unwrap();
    // A blocking lock waits until the holder lets go.
    let f2 = f.clone();
    let waiter = tokio::spawn(async move {
        f2.lock_wait(true, 0, u64::MAX, Duration::from_secs(20))
            .await
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        !waiter.is_finished(),
        "{label}: the lock is held by the other client"
    );
    g.close().await.unwrap(); // releases its locks first
    waiter.await.unwrap().unwrap();
    f.close().await.unwrap();
    other.close().await.unwrap();

    assert_eq!(c.report().callbacks.refused, 0);
    c.close().await.unwrap();
}

/// A delegation recalled through the holder's backchannel.
async fn recall(s: &Served, rdma: bool) {
    let label = if rdma { "rdma" } else { "tcp" };
    let name = format!("deleg-{label}");
    std::fs::write(s.export().join(&name), b"0123456789").unwrap();
    std::fs::set_permissions(
        s.export().join(&name),
        std::os::unix::fs::PermissionsExt::from_mode(0o666),
    )
    .unwrap();
    let holder = client(s, rdma).await;
    let mut events = holder.events();
    until("the CB_NULL probe", || holder.report().callbacks.nulls >= 1).await;
    let root = holder.root();
    // OPEN for reading: a read delegation (the backchannel answered).
    let r = holder
        .open(&root, name.as_bytes(), OpenOptions::read())
        .await
        .unwrap();
    assert_eq!(r.delegation(), Some(false), "{label}: a read delegation");
    // The holder writes through a second open, into its cache only.
    let w = holder
        .open(&root, name.as_bytes(), OpenOptions::write())
        .await
        .unwrap();
    w.write_cached(10, b"-cached-by-the-holder").await.unwrap();
    assert_eq!(w.cached_bytes().await, 21);
    assert_eq!(
        std::fs::read(s.export().join(&name)).unwrap(),
        b"0123456789"
    );
    // Another client opens for writing: its OPEN is held (NFS4ERR_DELAY,
    // retried by the client) while the delegation is recalled, flushed
    // and returned.
    let writer = client(s, rdma).await;
    let t = Instant::now();
    let o = writer
        .open(&root, name.as_bytes(), OpenOptions::read_write())
        .await
        .unwrap();
    let waited = t.elapsed();
    let mut seen = Vec::new();
    while let Ok(Ok(e)) = tokio::time::timeout(Duration::from_secs(5), events.recv()).await {
        let done = matches!(e, ClientEvent::Returned { .. });
        seen.push(e);
        if done {
            break;
        }
    }
    assert!(
        seen.contains(&ClientEvent::Recalled { fh: r.fh().clone() }),
        "{label}: {seen:?}"
    );
    let Some(ClientEvent::Returned { status, took, .. }) = seen.last() else {
        panic!("{label}: {seen:?}")
    };
    assert_eq!(*status, Status::Nfs4Ok, "{label}: DELEGRETURN");
    assert!(
        took < &Duration::from_secs(5) && waited < Duration::from_secs(10),
        "{label}: {took:?} {waited:?}"
    );
    assert_eq!(holder.report().callbacks.recalls, 1);
    assert_eq!(
        w.cached_bytes().await,
        0,
        "{label}: flushed before the return"
    );
    assert_eq!(r.delegation(), None);
    // The writer sees what the holder had cached.
    assert_eq!(&read_all(&o).await[..], b"0123456789-cached-by-the-holder");
    for f in [o] {
        f.close().await.unwrap();
    }
    r.close().await.unwrap();
    w.close().await.unwrap();
    writer.close().await.unwrap();
    assert_eq!(
        holder.report().callbacks.refused,
        0,
        "{label}: every callback accepted"
    );
    holder.close().await.unwrap();
}

/// A lost connection: the new one is bound to the session and probed.
async fn reconnect(s: &Served, rdma: bool) {
    let label = if rdma { "rdma" } else { "tcp" };
    let c = client(s, rdma).await;
    let mut events = c.events();
    until("the CB_NULL probe", || c.report().callbacks.nulls >= 1).await;
    let root = c.root();
    let conn = c.rpc().connection().unwrap();
    conn.abort();
    // The next request reconnects; the watcher binds the new connection.
    c.getattr(&root).await.unwrap();
    let e = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            if let Ok(ClientEvent::BackchannelBound) = events.recv().await {
                return;
            }
        }
    })
    .await;
    assert!(
        e.is_ok(),
        "{label}: BIND_CONN_TO_SESSION on the new connection"
    );
    until("the second probe", || c.report().callbacks.nulls >= 2).await;
    c.getattr(&root).await.unwrap();
    assert_ne!(c.rpc().connection().unwrap().id(), conn.id());
    assert_eq!(c.report().recoveries, 0, "{label}: the same session");
    c.close().await.unwrap();
}

#[test]
fn nfs41_client_over_tcp_and_rdma() {
    let s = Served::start("nfs41-client", true, &["--no-root-squash"]);
    rt().block_on(async {
        for rdma in [false, true] {
            life(&s, rdma).await;
            recall(&s, rdma).await;
            reconnect(&s, rdma).await;
        }
    });
    let log = std::fs::read_to_string(&s.log).unwrap();
    assert!(!log.contains("panicked"), "{log}");
    assert!(!log.contains("revoked"), "{log}");
}

/// Starts the server again on the same ports and state directory.
fn restart(s: &mut Served) {
    let _ = s.child.kill();
    let _ = s.child.wait();
    for attempt in 0..50 {
        let mut child = Command::new(BIN)
            .args(["nfs", "serve"])
            .arg(s.export())
            .args(["--listen", &format!("127.0.0.1:{}", s.rdma)])
            .args(["--mount-port", &s.mount.to_string()])
            .args(["--tcp", &format!("127.0.0.1:{}", s.tcp)])
            .arg("--state-dir")
            .arg(s.dir.join("state"))
            .args(["--no-root-squash", "--lease", "10", "--log", "info"])
            .stdout(Stdio::piped())
            .stderr(
                std::fs::OpenOptions::new()
                    .append(true)
                    .open(&s.log)
                    .unwrap(),
            )
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.as_mut().unwrap())
            .read_line(&mut line)
            .unwrap();
        if line.starts_with("serving ") {
            s.child = child;
            return;
        }
        let _ = child.wait();
        assert!(attempt < 49, "the server did not start again");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A restart of the server under an open file with a lock: reclaimed.
async fn survive_restart(s: &mut Served, rdma: bool) {
    let label = if rdma { "rdma" } else { "tcp" };
    let c = client(s, rdma).await;
    let mut events = c.events();
    let root = c.root();
    let name = format!("held-{label}");
    let f = c
        .open(
            &root,
            name.as_bytes(),
            OpenOptions::read_write().create(0o666).truncate(),
        )
        .await
        .unwrap();
    let first = pattern(2 << 20, 1);
    f.write_file(&first).await.unwrap();
    f.lock(true, 0, 4096).await.unwrap();

    restart(s);

    // The same file, on: the client recovers on the way.
    let second = pattern(1 << 20, 2);
    f.write_all(2 << 20, second.clone()).await.unwrap();
    f.commit().await.unwrap();
    let mut got = None;
    while let Ok(Ok(e)) = tokio::time::timeout(Duration::from_secs(5), events.recv()).await {
        if let ClientEvent::Recovered { .. } = e {
            got = Some(e);
            break;
        }
    }
    assert_eq!(
        got,
        Some(ClientEvent::Recovered {
            reclaimed: 2,
            reopened: 0,
            lost: 0
        }),
        "{label}: the open and the lock reclaimed in the grace period"
    );
    let mut all = first.to_vec();
    all.extend_from_slice(&second);
    assert_eq!(
        read_all(&f).await,
        all,
        "{label}: written before and after the restart"
    );
    // The reclaimed lock keeps another client out.
    let other = client(s, rdma).await;
    let g = other
        .open(&root, name.as_bytes(), OpenOptions::read_write())
        .await
        .unwrap();
    let e = g.lock(true, 100, 1).await.unwrap_err();
    assert!(
        matches!(
            e,
            Nfs4Error::Denied {
                offset: 0,
                length: 4096,
                ..
            }
        ),
        "{label}: {e}"
    );
    g.close().await.unwrap();
    other.close().await.unwrap();
    f.close().await.unwrap();
    assert!(c.report().recoveries >= 1);
    c.close().await.unwrap();
    // The server ends its grace period: every client came back.
    let round = if rdma { 2 } else { 1 };
    for _ in 0..150 {
        let log = std::fs::read_to_string(&s.log).unwrap();
        if log.matches("reclaimed 2 opens and locks").count() >= round {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("{label}: the grace period did not end with 2 reclaims");
}

#[test]
fn nfs41_client_reclaims_after_a_server_restart() {
    let mut s = Served::start(
        "nfs41-restart",
        true,
        &["--no-root-squash", "--lease", "10", "--log", "info"],
    );
    rt().block_on(async {
        for rdma in [false, true] {
            survive_restart(&mut s, rdma).await;
        }
    });
    let log = std::fs::read_to_string(&s.log).unwrap();
    assert!(!log.contains("panicked"), "{log}");
}
