//! `--metrics ADDR`: the Prometheus endpoint of `rpcrdma nfs serve` and
//! `rpcrdma serve`, scraped before, during and after a workload whose
//! every call the test makes itself, and its counters compared with that
//! workload: calls per procedure and status, latency counts, octets moved
//! by RDMA Read and RDMA Write and inline, credits, connections (open,
//! then closed), the memory budget, the calls the exports refused.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use bytes::Bytes;
use rpcrdma_engine::EngineConfig;
use rpcrdma_nfs3::client::NfsClient;
use rpcrdma_nfs3::fs::{FileHandle, StableHow};
use rpcrdma_nfs3::proto::nfs3 as p3;
use rpcrdma_oncrpc::tcp::TcpConnector;
use rpcrdma_oncrpc::{CallHints, Client, ClientConfig, RpcError};
use rpcrdma_softiwarp::SoftIwarp;
use rpcrdma_transport::RdmaConnector;

mod common;
use common::{Raw, BIN, X};

/// A server started with `--metrics 127.0.0.1:0`: its stdout lines until
/// the metrics address.
struct Served {
    child: Child,
    dir: std::path::PathBuf,
    lines: Vec<String>,
    metrics: SocketAddr,
}

impl Served {
    fn start(tag: &str, args: &[&str], exports: Option<&str>) -> Self {
        let dir =
            std::env::temp_dir().join(format!("rpcrdma-metrics-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("export")).unwrap();
        if let Some(e) = exports {
            std::fs::write(dir.join("exports"), e.replace("DIR", dir.to_str().unwrap())).unwrap();
        }
        let args: Vec<String> = args
            .iter()
            .map(|a| a.replace("DIR", dir.to_str().unwrap()))
            .collect();
        let mut child = Command::new(BIN)
            .args(&args)
            .args(["--metrics", "127.0.0.1:0"])
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(dir.join("server.log")).unwrap())
            .spawn()
            .unwrap();
        let mut out = BufReader::new(child.stdout.take().unwrap());
        let mut lines = Vec::new();
        let metrics = loop {
            let mut line = String::new();
            assert!(out.read_line(&mut line).unwrap() > 0, "{lines:?}");
            if let Some(rest) = line.trim().strip_prefix("metrics on http://") {
                break rest.trim_end_matches("/metrics").parse().unwrap();
            }
            lines.push(line);
        };
        // The server's later lines (and a closed pipe would end it at the
        // next one).
        std::thread::spawn(move || std::io::copy(&mut out, &mut std::io::sink()));
        Self {
            child,
            dir,
            lines,
            metrics,
        }
    }

    /// The port written after `after` in the start-up lines.
    fn port(&self, after: &str) -> u16 {
        let line = self.lines.iter().find(|l| l.contains(after)).unwrap();
        let i = line.find(after).unwrap() + after.len();
        let addr: String = line[i..]
            .chars()
            .take_while(|c| !c.is_whitespace() && *c != ',')
            .collect();
        addr.rsplit(':').next().unwrap().parse().unwrap()
    }

    /// One scrape: every sample as `name{labels}` → value.
    fn scrape(&self) -> Samples {
        let mut s = TcpStream::connect(self.metrics).unwrap();
        s.write_all(b"GET /metrics HTTP/1.1\r\nHost: test\r\n\r\n")
            .unwrap();
        let mut text = String::new();
        s.read_to_string(&mut text).unwrap();
        let (head, body) = text.split_once("\r\n\r\n").unwrap();
        assert!(head.starts_with("HTTP/1.1 200 OK"), "{head}");
        assert!(
            head.contains("Content-Type: text/plain; version=0.0.4"),
            "{head}"
        );
        let mut out = BTreeMap::new();
        for l in body
            .lines()
            .filter(|l| !l.starts_with('#') && !l.is_empty())
        {
            let (k, v) = l.rsplit_once(' ').unwrap();
            out.insert(k.to_owned(), v.parse::<f64>().unwrap());
        }
        Samples(out, body.to_owned())
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if std::thread::panicking() {
            let log = std::fs::read_to_string(self.dir.join("server.log")).unwrap_or_default();
            eprintln!("the server's log:\n{log}");
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

struct Samples(BTreeMap<String, f64>, String);

impl Samples {
    /// A sample's value (0 if absent: counters of calls never made are not
    /// listed).
    fn get(&self, key: &str) -> f64 {
        self.0.get(key).copied().unwrap_or(0.0)
    }
}

fn calls(prog: &str, vers: &str, proc_: &str, status: &str) -> String {
    format!(
        r#"rpcrdma_rpc_calls_total{{program="{prog}",version="{vers}",procedure="{proc_}",status="{status}"}}"#
    )
}

fn nfs_calls(proc_: &str) -> String {
    calls("nfs", "3", proc_, "success")
}

async fn rpc_tcp(addr: SocketAddr) -> Client {
    let mut cfg = ClientConfig::default();
    cfg.credential = rpcrdma_nfs3::client::local_credential();
    Client::connect(TcpConnector::new(addr), cfg).await.unwrap()
}

async fn rpc_rdma(addr: SocketAddr) -> Client {
    let mut cfg = ClientConfig::default();
    cfg.credential = rpcrdma_nfs3::client::local_credential();
    Client::connect(
        RdmaConnector::new(SoftIwarp::new(), addr, EngineConfig::client()),
        cfg,
    )
    .await
    .unwrap()
}

fn local(port: u16) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], port))
}

const MIB: u64 = 1 << 20;

async fn getattrs(c: &NfsClient, fh: &FileHandle, n: usize) {
    for _ in 0..n {
        let r = c
            .stubs()
            .getattr(p3::Getattr3args {
                object: p3::NfsFh3 {
                    data: Bytes::copy_from_slice(fh.as_bytes()),
                },
            })
            .await
            .unwrap();
        assert!(matches!(r, p3::Getattr3res::Nfs3Ok(_)));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nfs_serve_metrics_follow_a_workload() {
    let s = Served::start(
        "nfs",
        &[
            "nfs",
            "serve",
            "--exports",
            "DIR/exports",
            "--listen",
            "127.0.0.1:0",
            "--mount-port",
            "0",
            "--tcp",
            "127.0.0.1:0",
            "--versions",
            "3",
            "--max-memory",
            "256M",
            "--state-dir",
            "DIR/state",
        ],
        Some("DIR/export 127.0.0.1(rw,no_root_squash)\n"),
    );
    let (rdma, mount, tcp) = (
        s.port("(software iWARP) on "),
        s.port("MOUNT v3 on tcp "),
        s.port("NFS over TCP on "),
    );
    let export = s.dir.join("export");
    let path = export.to_str().unwrap().to_owned();
    let before = s.scrape();
    assert_eq!(before.get("rpcrdma_memory_limit_bytes"), (256 * MIB) as f64);
    assert_eq!(before.get(r#"rpcrdma_connections{transport="rdma"}"#), 0.0);
    assert_eq!(before.get("rpcrdma_rdma_read_bytes_total"), 0.0);

    // Over RPC-over-RDMA: mount (MOUNT over TCP), create, 4 WRITEs of
    // 1 MiB (each a Read chunk the server pulls), 4 READs of 1 MiB (each
    // a Write chunk it fills), 50 GETATTRs.
    let (c, _) = NfsClient::mount(
        rpc_rdma(local(rdma)).await,
        rpc_tcp(local(mount)).await,
        path.as_bytes(),
    )
    .await
    .unwrap();
    let root = c.root().clone();
    let fh = c.create(&root, b"data", 0o644).await.unwrap();
    let data = Bytes::from(
        (0..MIB as usize)
            .map(|i| (i % 251) as u8)
            .collect::<Vec<u8>>(),
    );
    for i in 0..4 {
        c.write(&fh, i * MIB, data.clone(), StableHow::Unstable)
            .await
            .unwrap();
    }
    c.commit(&fh).await.unwrap();
    // A TCP connection the server has answered on (MOUNT's closed once
    // mounted).
    let raw = rpc_tcp(local(tcp)).await;
    let r: Result<(), RpcError> = raw.call(100_003, 3, 0, &(), &CallHints::new()).await;
    r.unwrap();
    // A scrape during the workload: the RDMA connection is open.
    let during = s.scrape();
    assert_eq!(during.get(r#"rpcrdma_connections{transport="rdma"}"#), 1.0);
    assert!(during.get(r#"rpcrdma_connections{transport="tcp"}"#) >= 1.0);
    let credits = during.get("rpcrdma_rdma_credits_granted");
    assert!((1.0..=1024.0).contains(&credits), "credits {credits}");
    assert!(
        during.get("rpcrdma_memory_in_use_bytes") > 0.0,
        "{}",
        during.1
    );
    assert_eq!(
        during.get("rpcrdma_rdma_read_bytes_total"),
        (4 * MIB) as f64,
        "{}",
        during.1
    );
    assert_eq!(during.get(&nfs_calls("write")), 4.0);
    for i in 0..4 {
        let (got, _) = c.read(&fh, i * MIB, MIB as u32).await.unwrap();
        assert_eq!(got, data);
    }
    getattrs(&c, &fh, 50).await;
    drop(c);
    // Over TCP: 30 GETATTRs and 2 READs, which move nothing by RDMA.
    let (t, _) = NfsClient::mount(
        rpc_tcp(local(tcp)).await,
        rpc_tcp(local(mount)).await,
        path.as_bytes(),
    )
    .await
    .unwrap();
    getattrs(&t, &fh, 30).await;
    for _ in 0..2 {
        t.read(&fh, 0, MIB as u32).await.unwrap();
    }
    // Errors: arguments that do not decode, a procedure that is none.
    let r: Result<(), RpcError> = raw
        .call(
            100_003,
            3,
            1,
            &Raw(X::default().u32(4000).0),
            &CallHints::new(),
        )
        .await;
    assert!(matches!(r, Err(RpcError::GarbageArgs)), "{r:?}");
    let r: Result<(), RpcError> = raw.call(100_003, 3, 40, &(), &CallHints::new()).await;
    assert!(matches!(r, Err(RpcError::ProcUnavail { .. })), "{r:?}");
    // A client the exports do not list: its GETATTRs are refused.
    let refused = {
        let mut cfg = ClientConfig::default();
        cfg.credential = rpcrdma_nfs3::client::local_credential();
        let to = local(tcp);
        Client::connect(
            BoundTcp {
                local: "127.0.0.9".parse().unwrap(),
                remote: to,
            },
            cfg,
        )
        .await
        .unwrap()
    };
    for _ in 0..3 {
        let r: p3::Getattr3res = refused
            .call(
                100_003,
                3,
                1,
                &p3::Getattr3args {
                    object: p3::NfsFh3 {
                        data: Bytes::copy_from_slice(fh.as_bytes()),
                    },
                },
                &CallHints::new(),
            )
            .await
            .unwrap();
        assert!(matches!(
            r,
            p3::Getattr3res::Default(p3::Nfsstat3::Nfs3errAcces)
        ));
    }

    let after = s.scrape();
    let d = |k: &str| after.get(k) - before.get(k);
    // Calls, each counted once, by procedure and status.
    assert_eq!(d(&calls("mount", "3", "mnt", "success")), 2.0);
    assert_eq!(d(&nfs_calls("fsinfo")), 2.0);
    assert_eq!(d(&nfs_calls("create")), 1.0);
    assert_eq!(d(&nfs_calls("write")), 4.0);
    assert_eq!(d(&nfs_calls("commit")), 1.0);
    assert_eq!(d(&nfs_calls("read")), 6.0);
    // 80 answered GETATTRs, and the 3 refused ones (ACCES is NFS's
    // status: the RPC succeeded).
    assert_eq!(d(&nfs_calls("getattr")), 83.0, "{}", after.1);
    assert_eq!(d(&calls("nfs", "3", "getattr", "garbage_args")), 1.0);
    assert_eq!(d(&calls("nfs", "3", "other", "proc_unavail")), 1.0);
    assert_eq!(d("rpcrdma_nfs_access_refused_total"), 3.0);
    // Every call has its latency observed.
    assert_eq!(
        d(r#"rpcrdma_rpc_call_duration_seconds_count{program="nfs",version="3",procedure="read"}"#),
        6.0
    );
    let inf = r#"rpcrdma_rpc_call_duration_seconds_bucket{program="nfs",version="3",procedure="getattr",le="+Inf"}"#;
    assert_eq!(d(inf), 84.0);
    // Octets: the WRITEs' data came by RDMA Read, the RDMA READs' went by
    // RDMA Write; the TCP READs moved nothing by RDMA.
    assert_eq!(d("rpcrdma_rdma_read_bytes_total"), (4 * MIB) as f64);
    assert_eq!(d("rpcrdma_rdma_write_bytes_total"), (4 * MIB) as f64);
    assert!(d(r#"rpcrdma_rdma_operations_total{op="read"}"#) >= 4.0);
    assert!(d(r#"rpcrdma_rdma_operations_total{op="write"}"#) >= 4.0);
    // Inline: at least 50 GETATTR calls' worth in, and far less than the
    // data (which went by RDMA).
    let inline_in = d(r#"rpcrdma_rdma_inline_bytes_total{direction="received"}"#);
    let inline_out = d(r#"rpcrdma_rdma_inline_bytes_total{direction="sent"}"#);
    assert!(
        (50.0 * 100.0..MIB as f64).contains(&inline_in),
        "{inline_in}"
    );
    assert!(
        (50.0 * 100.0..MIB as f64).contains(&inline_out),
        "{inline_out}"
    );
    // The RDMA connection was accepted once and has closed: the counters
    // of a closed connection stay.
    assert_eq!(d("rpcrdma_rdma_connections_accepted_total"), 1.0);
    let until = Instant::now() + Duration::from_secs(10);
    let closed = loop {
        let now = s.scrape();
        if now.get(r#"rpcrdma_connections{transport="rdma"}"#) == 0.0 || Instant::now() > until {
            break now;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(closed.get(r#"rpcrdma_connections{transport="rdma"}"#), 0.0);
    assert_eq!(closed.get("rpcrdma_rdma_credits_granted"), 0.0);
    assert_eq!(
        closed.get("rpcrdma_rdma_read_bytes_total"),
        (4 * MIB) as f64
    );
    assert_eq!(
        closed.get("rpcrdma_rdma_write_bytes_total"),
        (4 * MIB) as f64
    );
}

/// A TCP connection from a chosen local address.
struct BoundTcp {
    local: std::net::IpAddr,
    remote: SocketAddr,
}

impl rpcrdma_oncrpc::Connector for BoundTcp {
    type Transport = rpcrdma_oncrpc::tcp::TcpTransport;
    fn connect(
        &self,
    ) -> impl std::future::Future<Output = Result<Self::Transport, rpcrdma_oncrpc::TransportError>> + Send
    {
        let (local, remote) = (self.local, self.remote);
        async move {
            let s = tokio::net::TcpSocket::new_v4()?;
            s.bind(SocketAddr::new(local, 0))?;
            let stream = s.connect(remote).await?;
            Ok(rpcrdma_oncrpc::tcp::TcpTransport::new(
                stream,
                &Default::default(),
            )?)
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_demo_server_has_metrics_too() {
    let s = Served::start("demo", &["serve", "--listen", "127.0.0.1:0"], None);
    let rdma = s.port("(software iWARP) on ");
    // READ of 1 MiB (a Write chunk) and WRITE of 2 MiB (a Read chunk),
    // verified by `rpcrdma call`.
    for (op, size) in [("read", "1048576"), ("write", "2097152"), ("null", "0")] {
        let out = Command::new(BIN)
            .args([
                "call",
                &format!("127.0.0.1:{rdma}"),
                "demo",
                op,
                "--size",
                size,
            ])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{op}: {:?} {}{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let m = s.scrape();
    assert_eq!(
        m.get(&calls("demo", "1", "read", "success")),
        1.0,
        "{}",
        m.1
    );
    assert_eq!(m.get(&calls("demo", "1", "write", "success")), 1.0);
    assert_eq!(m.get(&calls("demo", "1", "null", "success")), 1.0);
    assert_eq!(m.get("rpcrdma_rdma_write_bytes_total"), MIB as f64);
    assert_eq!(m.get("rpcrdma_rdma_read_bytes_total"), (2 * MIB) as f64);
    assert_eq!(m.get("rpcrdma_rdma_connections_accepted_total"), 3.0);
    assert!(!m.1.contains("nfs_access_refused"), "no exports here");
}
