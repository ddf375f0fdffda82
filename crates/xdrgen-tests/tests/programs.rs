//! The generated client stubs, server traits, registration and call hints,
//! end to end over the in-memory transport that enforces the Upper-Layer
//! Binding as RPC-over-RDMA does (a DDP-eligible result without a Write
//! chunk, or a reply larger than its hinted maximum, fails the call).

use std::sync::Arc;

use bytes::Bytes;
use rpcrdma_oncrpc::mem::{self, MemConfig, MemConnector};
use rpcrdma_oncrpc::{
    CallHints, CallInfo, Client, ClientConfig, Marshal, ProcError, RpcError, Server, ServerConfig,
    Services,
};
use rpcrdma_xdr::{EncodeError, Encoder};
use rpcrdma_xdrgen_tests::all::{
    self, all_v1, all_v2, Bulk, ByEnum, ByInt, Color, Lists, Node, Prims,
};
use rpcrdma_xdrgen_tests::nfs3::{self, nfs_v3};

fn rig(services: Services, threshold: usize) -> (Server, MemConnector) {
    let server = Server::new(services, ServerConfig::default());
    let (connector, mut listener) = mem::listener(MemConfig {
        inline_threshold: threshold,
        ..MemConfig::default()
    });
    let s = server.clone();
    tokio::spawn(async move {
        while let Some(t) = listener.accept().await {
            s.serve(t);
        }
    });
    (server, connector)
}

struct AllServer;

impl all_v1::Server for AllServer {
    async fn echo_prims(&self, _info: CallInfo, p: Prims) -> Result<Prims, ProcError> {
        Ok(p)
    }

    async fn lists(&self, _info: CallInfo, n: all::CountT) -> Result<Lists, ProcError> {
        Ok(Lists {
            head: Node::link_list((0..n as i32).map(|value| Node { value, next: None })),
            labels: None,
            root: None,
            u: ByInt::Case2,
        })
    }

    async fn bulk(&self, _info: CallInfo, b: Bulk) -> Result<Bulk, ProcError> {
        // Sends back `len` bytes: a DDP-eligible result sized by the call.
        Ok(Bulk {
            data: Bytes::from(vec![0xab; b.len as usize]),
            ..b
        })
    }
    // ALL_UNION is left unimplemented: PROC_UNAVAIL.
}

struct AllServerV2;

impl all_v2::Server for AllServerV2 {
    async fn pair(&self, _info: CallInfo, a: i32, n: all::Name) -> Result<ByInt, ProcError> {
        Ok(if a < 0 {
            ByInt::Case1(n)
        } else {
            ByInt::Default(a + 3, i64::from(a))
        })
    }

    async fn names(&self, _info: CallInfo, mut n: all::Names) -> Result<all::Names, ProcError> {
        // Breaks the `name<10>` limit when asked to: SYSTEM_ERR.
        if n.first().is_some_and(|s| s == "grow") {
            n[0] = "grown far too long".into();
        }
        Ok(n)
    }
}

fn all_services() -> Services {
    let mut s = Services::new();
    all_v1::register(&mut s, Arc::new(AllServer));
    all_v2::register(&mut s, Arc::new(AllServerV2));
    s
}

#[tokio::test]
async fn generated_client_and_server_over_the_rdma_like_transport() {
    let (server, connector) = rig(all_services(), 1024);
    let rpc = Client::new(connector, ClientConfig::default());
    let v1 = all_v1::Client::new(rpc.clone());
    v1.null().await.unwrap();
    let p = Prims {
        i: -1,
        u: 2,
        bare: 3,
        l: -4,
        ul: 5,
        h: -6,
        uh: 7,
        f: 1.25,
        d: -8.5,
        b: true,
        c: Color::Other,
        m: 9,
    };
    assert_eq!(v1.echo_prims(p).await.unwrap(), p);
    // 300 nodes: 2.4 KB of results, over the 1 KB inline threshold, with
    // no static bound (a list): the stub has no maximum, so the call needs
    // explicit hints for a Reply chunk.
    let hints = CallHints::new().max_results(8 * 300 + 64);
    let l = v1.lists_with_hints(300, &hints).await.unwrap();
    assert_eq!(l.head.as_ref().unwrap().iter().count(), 300);
    // DDP both ways: the argument data in a Read chunk, the result data in
    // a Write chunk sized by `args.len` (the @ddp(args.len) pragma).
    let b = Bulk {
        len: 100_000,
        data: Bytes::from(vec![1; 50_000]),
        path: "/p".into(),
    };
    let h = all_v1::hints_bulk(&b);
    assert_eq!(h.ddp_results(), &[100_000, 1024]);
    // Reduced, the results are `len` and the two items' length words.
    assert_eq!(reduced(&h), Some(12));
    let r = v1.bulk(b).await.unwrap();
    assert_eq!(r.data.len(), 100_000);
    // Unimplemented: PROC_UNAVAIL.
    assert!(matches!(
        v1.union(Color::Red).await,
        Err(RpcError::ProcUnavail { .. })
    ));

    let v2 = all_v2::Client::new(rpc.clone());
    assert_eq!(
        v2.pair(-3, "pair".into()).await.unwrap(),
        ByInt::Case1("pair".into())
    );
    assert_eq!(v2.pair(4, "x".into()).await.unwrap(), ByInt::Default(7, 4));
    assert_eq!(
        v2.names(vec!["a".into()]).await.unwrap(),
        vec!["a".to_string()]
    );
    // Results that break their limits: SYSTEM_ERR from the server.
    assert!(matches!(
        v2.names(vec!["grow".into()]).await,
        Err(RpcError::SystemErr)
    ));
    // Arguments that break their limits are not sent.
    match v2.pair(1, "eleven char".into()).await {
        Err(RpcError::BadArgs(EncodeError::TooLong { max: 10, .. })) => {}
        other => panic!("{other:?}"),
    }
    server.shutdown().await;
}

/// Raw arguments, for calls that bypass the stubs.
struct Raw(Vec<u32>);

impl Marshal for Raw {
    fn marshal(&self, enc: &mut Encoder<'_>) {
        for w in &self.0 {
            enc.put_u32(*w);
        }
    }
}

#[tokio::test]
async fn undecodable_arguments_are_answered_garbage_args() {
    let (server, connector) = rig(all_services(), 1024);
    let rpc = Client::new(connector, ClientConfig::default());
    // ALL_UNION(color) with 3, which is no color.
    let e = rpc
        .call::<_, ()>(
            all_v1::PROGRAM,
            all_v1::VERSION,
            all_v1::ALL_UNION,
            &Raw(vec![3]),
            &CallHints::new(),
        )
        .await
        .unwrap_err();
    assert!(matches!(e, RpcError::GarbageArgs), "{e}");
    server.shutdown().await;
}

/// The multi-argument call carries rpcgen -N's argument struct exactly.
#[test]
fn pair_arguments_travel_like_rpcgens_argument_struct() {
    let golden = include_str!("golden/all.txt");
    let want = golden
        .lines()
        .find_map(|l| l.strip_prefix("pair_args "))
        .unwrap();
    let mut got = (-3i32).to_be_bytes().to_vec();
    got.extend_from_slice(&all::name_to_xdr(&"pair".to_string()));
    assert_eq!(hex::encode(got), want);
}

struct Nfs;

impl nfs_v3::Server for Nfs {
    async fn read(&self, _info: CallInfo, a: nfs3::Read3args) -> Result<nfs3::Read3res, ProcError> {
        Ok(nfs3::Read3res::Nfs3Ok(nfs3::Read3resok {
            file_attributes: nfs3::PostOpAttr::False,
            count: a.count,
            eof: true,
            data: Bytes::from(vec![7; a.count as usize]),
        }))
    }

    async fn readlink(
        &self,
        _info: CallInfo,
        _a: nfs3::Readlink3args,
    ) -> Result<nfs3::Readlink3res, ProcError> {
        Ok(nfs3::Readlink3res::Nfs3Ok(nfs3::Readlink3resok {
            symlink_attributes: nfs3::PostOpAttr::False,
            data: "x/".repeat(1500),
        }))
    }

    async fn write(
        &self,
        _info: CallInfo,
        a: nfs3::Write3args,
    ) -> Result<nfs3::Write3res, ProcError> {
        Ok(nfs3::Write3res::Nfs3Ok(nfs3::Write3resok {
            file_wcc: nfs3::WccData {
                before: nfs3::PreOpAttr::False,
                after: nfs3::PostOpAttr::False,
            },
            count: a.data.len() as u32,
            committed: nfs3::StableHow::FileSync,
            verf: [1; 8],
        }))
    }
}

#[tokio::test]
async fn nfs_read_write_and_readlink_use_the_rfc8267_binding() {
    let mut s = Services::new();
    nfs_v3::register(&mut s, Arc::new(Nfs));
    let (server, connector) = rig(s, 1024);
    let nfs = nfs_v3::Client::new(Client::new(connector.clone(), ClientConfig::default()));
    let fh = nfs3::NfsFh3 {
        data: Bytes::from_static(&[1; 32]),
    };
    let args = nfs3::Read3args {
        file: fh.clone(),
        offset: 0,
        count: 65_536,
    };
    // The Write chunk is the call's count; the results at most the fixed
    // fields plus the data.
    let h = nfs_v3::hints_read(&args);
    assert_eq!(h.ddp_results(), &[65_536]);
    assert_eq!(h.results_limit(), Some(4 + 88 + 4 + 4 + 4 + 65_536));
    // With the data in its Write chunk: what the Linux client assumes
    // (spec note N13), so no Reply chunk is needed.
    assert_eq!(reduced(&h), Some(4 + 88 + 4 + 4 + 4));
    match nfs.read(args).await.unwrap() {
        nfs3::Read3res::Nfs3Ok(ok) => assert_eq!(ok.data.len(), 65_536),
        other => panic!("{other:?}"),
    }
    let w = nfs
        .write(nfs3::Write3args {
            file: fh.clone(),
            offset: 0,
            count: 200_000,
            stable: nfs3::StableHow::FileSync,
            data: Bytes::from(vec![3; 200_000]),
        })
        .await
        .unwrap();
    assert!(matches!(w, nfs3::Write3res::Nfs3Ok(ref ok) if ok.count == 200_000));
    // READLINK's 3000-byte path comes back in its Write chunk (4096).
    assert_eq!(
        nfs_v3::hints_readlink(&nfs3::Readlink3args {
            symlink: fh.clone()
        })
        .ddp_results(),
        &[4096]
    );
    match nfs
        .readlink(nfs3::Readlink3args {
            symlink: fh.clone(),
        })
        .await
        .unwrap()
    {
        nfs3::Readlink3res::Nfs3Ok(ok) => assert_eq!(ok.data.len(), 3000),
        other => panic!("{other:?}"),
    }
    // READDIR's Reply chunk is bounded by the call's count.
    let rd = nfs3::Readdir3args {
        dir: fh,
        cookie: 0,
        cookieverf: [0; 8],
        count: 8192,
    };
    assert_eq!(nfs_v3::hints_readdir(&rd).results_limit(), Some(8192 + 92));
    assert!(nfs_v3::hints_readdir(&rd).ddp_results().is_empty());
    server.shutdown().await;
}

/// A binding that provisions no Write chunk makes READ fail on the
/// RDMA-like transport, as it would over RDMA: the hints matter.
#[tokio::test]
async fn a_wrong_binding_fails_like_rdma_would() {
    struct NoChunks;
    impl nfs_v3::Ulb for NoChunks {
        fn read(&self, _args: &nfs3::Read3args) -> CallHints {
            CallHints::new().max_results(200)
        }
    }
    let mut s = Services::new();
    nfs_v3::register(&mut s, Arc::new(Nfs));
    let (server, connector) = rig(s, 1024);
    let nfs = nfs_v3::Client::with_ulb(
        Client::new(connector, ClientConfig::default()),
        Arc::new(NoChunks),
    );
    let r = nfs
        .read(nfs3::Read3args {
            file: nfs3::NfsFh3 { data: Bytes::new() },
            offset: 0,
            count: 10_000,
        })
        .await;
    assert!(r.is_err(), "{r:?}");
    let _ = ByEnum::Red;
    server.shutdown().await;
}

/// The reduced results a binding states (`CallHints::reduced_results`),
/// from the reply sizes it gives.
fn reduced(h: &CallHints) -> Option<u32> {
    let header = h.max_reply_size()? - h.results_limit()?;
    Some(h.max_reduced_reply_size()? - header)
}
