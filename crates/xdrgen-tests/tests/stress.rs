//! `xdr/stress.x` end to end: a procedure of nine arguments, a union arm
//! with ten case labels, typedefs of optional arrays of optional data.

use std::sync::Arc;

use bytes::Bytes;
use rpcrdma_oncrpc::mem::{self, MemConfig};
use rpcrdma_oncrpc::{CallHints, CallInfo, Client, ClientConfig, ProcError};
use rpcrdma_oncrpc::{Server, ServerConfig, Services};
use rpcrdma_xdrgen_tests::stress::*;

struct S;

impl stress_v::Server for S {
    #[allow(clippy::too_many_arguments)]
    async fn nine(
        &self,
        _info: CallInfo,
        a: i32,
        b: i32,
        c: i32,
        d: i32,
        e: i32,
        f: i32,
        g: i32,
        h: i32,
        mut deep: Deep,
    ) -> Result<Deep, ProcError> {
        let sum = [a, b, c, d, e, f, g, h].iter().sum::<i32>();
        deep.b[1] = Some(Box::new(vec![Some(Box::new(Bytes::from(sum.to_string())))]));
        Ok(deep)
    }
}

#[tokio::test]
async fn nine_arguments_and_nested_optional_arrays() {
    let mut services = Services::new();
    stress_v::register(&mut services, Arc::new(S));
    let server = Server::new(services, ServerConfig::default());
    let (connector, mut listener) = mem::listener(MemConfig::default());
    let s = server.clone();
    tokio::spawn(async move {
        while let Some(t) = listener.accept().await {
            s.serve(t);
        }
    });
    let c = stress_v::Client::new(Client::new(connector, ClientConfig::default()));
    let deep = Deep {
        a: Some(Box::new(vec![
            None,
            Some(Box::new(Bytes::from_static(b"a"))),
        ])),
        b: [None, None],
        c: Some(Box::new([Some(Box::new(vec![])), None])),
    };
    let hints = CallHints::new().max_results(4096);
    let r = c
        .nine_with_hints(1, 2, 3, 4, 5, 6, 7, 8, deep.clone(), &hints)
        .await
        .unwrap();
    assert_eq!(
        r,
        Deep {
            b: [
                None,
                Some(Box::new(vec![Some(Box::new(Bytes::from_static(b"36")))]))
            ],
            ..deep
        }
    );
    for d in 1..=10 {
        let m = Many::from_xdr(&Bytes::from(
            [d, 0, 0, 0, 0]
                .iter()
                .flat_map(|w: &u32| w.to_be_bytes())
                .collect::<Vec<u8>>(),
        ))
        .unwrap();
        assert_eq!(m.discriminant(), d as i32);
    }
    assert!(
        c.v().await.is_err(),
        "ST_V is not implemented: PROC_UNAVAIL"
    );
}

#[test]
fn keywords_name_programs_versions_and_procedures() {
    use rpcrdma_xdrgen_tests::names;
    // `program type { version mod { ...; int new(int) = 3; } ... }`
    assert_eq!((names::TYPE, names::MOD, names::MATCH), (77, 1, 2));
    assert_eq!(names::r#mod::NEW, 3);
    assert_eq!(names::r#where::PROGRAM, names::SELF);
    // `union u switch (int d) { case 1: u_ptr next; ... }; typedef u *u_ptr;`
    let u = names::U::Case1(Some(Box::new(names::U::Case2)));
    assert_eq!(names::U::from_xdr(&u.to_xdr()).unwrap(), u);
}

#[test]
fn types_may_be_named_like_the_prelude() {
    use rpcrdma_xdrgen_tests::prelude_names::{Clone, Drop, From, Iterator, User};
    let u = User {
        f: From { a: 1 },
        c: vec![Clone { s: "c".into() }],
        d: Some(Box::new(Drop { a: 2 })),
        i: [Iterator { a: 3 }, Iterator { a: 4 }],
    };
    assert_eq!(User::from_xdr(&u.to_xdr()).unwrap(), u);
}
