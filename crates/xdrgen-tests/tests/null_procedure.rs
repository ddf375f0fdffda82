//! Procedure 0 (NULL) of a generated server answers with no results
//! whether the `.x` file declares it or not, as rpcgen's servers do
//! (rpcgen's dispatcher has a `case NULLPROC` for every version that does
//! not declare procedure 0): an `rpcinfo -t`-style ping of any version
//! works. Procedures that are declared but not implemented still answer
//! `PROC_UNAVAIL`.

use std::sync::Arc;

use rpcrdma_oncrpc::mem::{self, MemConfig};
use rpcrdma_oncrpc::{CallInfo, Client, ClientConfig, ProcError, RpcError};
use rpcrdma_oncrpc::{Server, ServerConfig, Services};
use rpcrdma_xdrgen_tests::all::{self, all_v1, all_v2, ByInt, Names};
use rpcrdma_xdrgen_tests::stress::{self, stress_v};

/// Implements nothing of `ALL_V1` (which declares `ALL_NULL = 0`).
struct NothingV1;
impl all_v1::Server for NothingV1 {}

/// Implements `ALL_V2`, which declares no procedure 0.
struct PairsV2;
impl all_v2::Server for PairsV2 {
    async fn pair(&self, _info: CallInfo, a: i32, _n: all::Name) -> Result<ByInt, ProcError> {
        Ok(ByInt::Default(a, 0))
    }
    async fn names(&self, _info: CallInfo, n: Names) -> Result<Names, ProcError> {
        Ok(n)
    }
}

/// `STRESS_V` declares no procedure 0 and is not implemented at all.
struct NothingStress;
impl stress_v::Server for NothingStress {}

fn client(services: Services) -> (Server, Client) {
    let server = Server::new(services, ServerConfig::default());
    let (connector, mut listener) = mem::listener(MemConfig::default());
    let s = server.clone();
    tokio::spawn(async move {
        while let Some(t) = listener.accept().await {
            s.serve(t);
        }
    });
    (server, Client::new(connector, ClientConfig::default()))
}

#[tokio::test]
async fn procedure_zero_answers_declared_or_not() {
    let mut services = Services::new();
    all_v1::register(&mut services, Arc::new(NothingV1));
    all_v2::register(&mut services, Arc::new(PairsV2));
    stress_v::register(&mut services, Arc::new(NothingStress));
    let (server, rpc) = client(services);

    // Declared (`ALL_NULL = 0`) and left to the trait's default.
    rpc.null(all::ALL_PROG, all::ALL_V1).await.unwrap();
    all_v1::Client::new(rpc.clone()).null().await.unwrap();
    // Not declared: answered all the same.
    rpc.null(all::ALL_PROG, all::ALL_V2).await.unwrap();
    rpc.null(stress::STRESS, stress::STRESS_V).await.unwrap();

    // The declared procedures a server leaves out still answer PROC_UNAVAIL.
    let v1 = all_v1::Client::new(rpc.clone());
    assert!(matches!(
        v1.union(all::Color::Red).await,
        Err(RpcError::ProcUnavail { .. })
    ));
    // And the version's own procedures run.
    let v2 = all_v2::Client::new(rpc.clone());
    assert_eq!(v2.pair(5, "x".into()).await.unwrap(), ByInt::Default(5, 0));
    server.shutdown().await;
}
