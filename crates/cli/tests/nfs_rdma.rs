//! NFSv3 over real RPC-over-RDMA (software iWARP) against `rpcrdma nfs
//! serve`, for what the Linux kernel client does not send in the guest
//! workloads: a WRITE sent as a Long call (its whole Payload stream in a
//! Position-Zero Read chunk, RFC 8166 §3.5.3, which RFC 8267 §4.1 lets any
//! NFS call use), and a non-idempotent call retransmitted with its XID on
//! a new connection, answered from the duplicate request cache and not
//! done twice.

use bytes::Bytes;
use rpcrdma_engine::{EngineConfig, MessageForm};
use rpcrdma_nfs3::client::NfsClient;
use rpcrdma_nfs3::proto::nfs3 as p;
use rpcrdma_oncrpc::tcp::TcpConnector;
use rpcrdma_oncrpc::{
    AuthSysParams, CallHints, Client, ClientConfig, Connector, Credential, Transport,
    TransportError,
};
use rpcrdma_softiwarp::SoftIwarp;
use rpcrdma_transport::{RdmaConnector, RdmaTransport};

mod common;
use common::{local, NfsServed as Served};

fn serve(name: &str) -> Served {
    Served::start(&format!("nfs-rdma-{name}"), false, &[])
}

fn config(first_xid: Option<u32>) -> ClientConfig {
    // This process's user: the owner of a file it creates.
    let me = std::os::unix::fs::MetadataExt::uid(&std::fs::metadata(std::env::temp_dir()).unwrap());
    let mut c = ClientConfig::default();
    c.credential = Credential::Sys(AuthSysParams::new(1, "test", me, me, vec![]).unwrap());
    c.first_xid = first_xid;
    c
}

/// A connector handing out one connection made beforehand, so the test
/// keeps the transport and can read how its messages travelled.
#[derive(Clone)]
struct Made(RdmaTransport<SoftIwarp>);

impl Connector for Made {
    type Transport = RdmaTransport<SoftIwarp>;
    async fn connect(&self) -> Result<Self::Transport, TransportError> {
        Ok(self.0.clone())
    }
}

async fn rdma_transport(s: &Served) -> RdmaTransport<SoftIwarp> {
    RdmaConnector::new(SoftIwarp::new(), local(s.rdma), EngineConfig::client())
        .connect()
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_sent_as_a_long_call_is_served() {
    let s = serve("long");
    let t = rdma_transport(&s).await;
    let nfs = Client::new(Made(t.clone()), config(None));
    let mnt = Client::new(TcpConnector::new(local(s.mount)), config(None));
    let (c, _) = NfsClient::mount(nfs.clone(), mnt, b"/").await.unwrap();
    let fh = c.create(c.root(), b"long-write", 0o644).await.unwrap();

    // 64 KiB of data with the Upper-Layer Binding's reduction turned off:
    // the call is larger than any inline threshold and has nothing to move
    // by DDP, so the requester sends it Long (RDMA_NOMSG, Position-Zero
    // Read chunk) and the server pulls the whole call by RDMA Read.
    let data: Vec<u8> = (0..65536u32).map(|i| (i * 7 + 3) as u8).collect();
    let args = p::Write3args {
        file: p::NfsFh3 {
            data: Bytes::copy_from_slice(fh.as_bytes()),
        },
        offset: 0,
        count: data.len() as u32,
        stable: p::StableHow::FileSync,
        data: Bytes::from(data.clone()),
    };
    let hints = CallHints::new().no_reduce();
    let res: p::Write3res = nfs
        .call(p::nfs_v3::PROGRAM, p::nfs_v3::VERSION, 7, &args, &hints)
        .await
        .unwrap();
    let forms = t.last_forms().expect("a call went out");
    assert_eq!(
        forms.call,
        MessageForm::Long,
        "the WRITE went {:?}",
        forms.call
    );
    match res {
        p::Write3res::Nfs3Ok(ok) => assert_eq!(ok.count, 65536),
        other => panic!("WRITE answered {other:?}"),
    }
    assert_eq!(
        std::fs::read(s.export().join("long-write")).unwrap(),
        data,
        "the export holds what the Long call carried"
    );
    // And read back through the Write list as the kernel does.
    let mut back = Vec::new();
    c.read_file(&fh, data.len() as u64, |b| {
        back.extend_from_slice(b);
        Ok(())
    })
    .await
    .unwrap();
    assert_eq!(back, data);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remove_retransmitted_on_a_new_connection_comes_from_the_cache() {
    let s = serve("drc");
    std::fs::write(s.export().join("victim"), b"x").unwrap();
    let root = {
        let nfs = Client::new(Made(rdma_transport(&s).await), config(None));
        let mnt = Client::new(TcpConnector::new(local(s.mount)), config(None));
        NfsClient::mount(nfs, mnt, b"/")
            .await
            .unwrap()
            .0
            .root()
            .clone()
    };
    let args = p::Remove3args {
        object: p::Diropargs3 {
            dir: p::NfsFh3 {
                data: Bytes::copy_from_slice(root.as_bytes()),
            },
            name: Bytes::from_static(b"victim"),
        },
    };
    // The same XID from the same address on two RPC-over-RDMA connections,
    // one after the other: what a client retransmitting after a reconnect
    // sends.
    let mut results = Vec::new();
    for _ in 0..2 {
        let t = rdma_transport(&s).await;
        let c = p::nfs_v3::Client::new(Client::new(Made(t.clone()), config(Some(0x7e57_0000))));
        results.push(c.remove(args.clone()).await.unwrap());
        t.close().await;
    }
    assert!(
        matches!(results[0], p::Remove3res::Nfs3Ok(_)),
        "{:?}",
        results[0]
    );
    assert_eq!(
        results[0], results[1],
        "the cached reply, not NFS3ERR_NOENT"
    );
    assert!(!s.export().join("victim").exists());
    // A new XID is a new call: it runs, and finds nothing.
    let c = p::nfs_v3::Client::new(Client::new(
        Made(rdma_transport(&s).await),
        config(Some(0x7e57_0001)),
    ));
    assert!(matches!(
        c.remove(args).await.unwrap(),
        p::Remove3res::Default(p::Nfsstat3::Nfs3errNoent, _)
    ));
}
