//! Golden byte vectors for `xdr/odd.x`: Rust keywords as the names of
//! types, members, enum items and unions, names that differ only in case,
//! comments in odd places, several programs, procedures of several
//! arguments. The bytes are rpcgen's C with libtirpc
//! (`scripts/xdrgen-diff/vectors_odd.c`, `tests/golden/odd.txt`;
//! `XDRGEN_C_ODD_VECTORS=FILE` for a fresh run).

mod common;

use std::sync::{Arc, Mutex};

use bytes::Bytes;
use rpcrdma_oncrpc::mem::{self, MemConfig};
use rpcrdma_oncrpc::{CallHints, CallInfo, Client, ClientConfig, Marshal, ProcError};
use rpcrdma_oncrpc::{Server, ServerConfig, Services};
use rpcrdma_xdr::Encoder;
use rpcrdma_xdrgen_tests::odd::*;

use common::{golden, vector};

fn g() -> std::collections::BTreeMap<String, Vec<u8>> {
    golden("XDRGEN_C_ODD_VECTORS", include_str!("golden/odd.txt"))
}

fn ty() -> Type {
    Type {
        r#fn: -7,
        r#mod: 0x0123_4567_89ab_cdef,
        r#ref: "ref".into(),
        r#use: Bytes::from_static(b"use it!"),
        r#in: *b"inside!",
    }
}

fn mv() -> Move {
    Move {
        i: Self_::Default(Match::Self_, Match::Async),
        d: Some(Box::new(Self_::Default(Match::Self_, Match::Where))),
        arr: [Self_::Where(ty()), Self_::Async],
        var: vec![Self_::Loop, Self_::Default(Match::Self_, Match::Loop)],
        ms: vec![Match::Self_, Match::Where, Match::Async],
        bs: [true, false, true],
        fs: vec![1.0 / 3.0, -0.0],
        ds: [2.5],
        hs: vec![-9],
    }
}

#[test]
fn odd_names_match_rpcgen_byte_for_byte() {
    let g = g();
    let mut seen: Vec<&str> = Vec::new();
    vector!(seen, g, "type", Type, ty());
    vector!(seen, g, "self_where", Self_, Self_::Where(ty()));
    vector!(seen, g, "self_loop", Self_, Self_::Loop);
    vector!(seen, g, "self_async", Self_, Self_::Async);
    vector!(
        seen,
        g,
        "self_default",
        Self_,
        Self_::Default(Match::Self_, Match::Where)
    );
    vector!(seen, g, "match_Self", Match, Match::Self_);
    for (name, value) in [
        ("dyn_null", None),
        ("dyn_loop", Some(Box::new(Self_::Loop))),
    ] {
        let want = &g[name];
        assert_eq!(dyn_to_xdr(&value).as_ref(), &want[..], "{name}");
        assert_eq!(dyn_from_xdr(&Bytes::from(want.clone())).unwrap(), value);
        seen.push(name);
    }
    vector!(seen, g, "move", Move, mv());
    // `Point`, `point` and `POINT` (a typedef of `point`); `int x; int X;`.
    vector!(seen, g, "Point", Point, Point { x: 1, x_2: -1 });
    vector!(seen, g, "point", Point2, Point2 { x: -4_294_967_296 });
    let want = &g["POINT"];
    assert_eq!(point_to_xdr(&Point2 { x: 42 }).as_ref(), &want[..]);
    assert_eq!(
        point_from_xdr(&Bytes::from(want.clone())).unwrap(),
        Point2 { x: 42 }
    );
    seen.push("POINT");
    // `#ifndef ODD_NOT_DEFINED ... const ODD_GUARD = 1; #else ... = 2;`
    vector!(seen, g, "guarded", Guarded, Guarded { g: [-1] });
    vector!(seen, g, "flagged_false", Flagged, Flagged::False);
    vector!(
        seen,
        g,
        "flagged_true",
        Flagged,
        Flagged::True(Point { x: 1, x_2: -1 })
    );
    vector!(
        seen,
        g,
        "mixedCase",
        MixedCase,
        MixedCase {
            foo_bar: 3,
            foo_baz: 4
        }
    );
    let mut all: Vec<&String> = g.keys().filter(|k| !k.starts_with("args_")).collect();
    all.sort();
    seen.sort();
    assert_eq!(all, seen, "every odd vector is checked");
}

/// A string result, decoded by hand.
struct Str(String);

impl rpcrdma_oncrpc::Unmarshal for Str {
    fn unmarshal(dec: &mut rpcrdma_xdr::Decoder<'_>) -> Result<Self, rpcrdma_xdr::XdrError> {
        Ok(Str(dec.get_string(u32::MAX)?.to_string()))
    }
}

/// Raw arguments: the bytes rpcgen's C encoded for a call.
struct Raw(Bytes);

impl Marshal for Raw {
    fn marshal(&self, enc: &mut Encoder<'_>) {
        enc.buffer().extend_from_slice(&self.0);
    }
}

#[derive(Default)]
struct One {
    got: Mutex<Vec<(Self_, Match, Move)>>,
}

impl one_a::Server for One {
    async fn r#type(&self, _info: CallInfo, t: Type) -> Result<Type, ProcError> {
        Ok(t)
    }

    async fn self_(
        &self,
        _info: CallInfo,
        s: Self_,
        m: Match,
        v: Move,
    ) -> Result<Self_, ProcError> {
        self.got.lock().unwrap().push((s.clone(), m, v));
        Ok(s)
    }
}

struct Two;

impl two_v::Server for Two {
    async fn mix(&self, _info: CallInfo, a: Point, b: Point2) -> Result<MixedCase, ProcError> {
        Ok(MixedCase {
            foo_bar: a.x + a.x_2,
            foo_baz: b.x as i32,
        })
    }

    async fn echo(&self, _info: CallInfo, s: String) -> Result<String, ProcError> {
        Ok(s + "!")
    }
}

#[tokio::test]
async fn several_programs_and_arguments_as_rpcgen_encodes_them() {
    let one = Arc::new(One::default());
    let mut services = Services::new();
    one_a::register(&mut services, one.clone());
    two_v::register(&mut services, Arc::new(Two));
    let server = Server::new(services, ServerConfig::default());
    let (connector, mut listener) = mem::listener(MemConfig::default());
    let s = server.clone();
    tokio::spawn(async move {
        while let Some(t) = listener.accept().await {
            s.serve(t);
        }
    });
    let rpc = Client::new(connector, ClientConfig::default());
    let g = g();
    let hints = CallHints::new().max_results(4096);
    // rpcgen -N's argument structs, sent as they are.
    let r: Self_ = rpc
        .call(
            PROG_ONE,
            ONE_A,
            one_a::DO_SELF,
            &Raw(Bytes::from(g["args_do_self"].clone())),
            &hints,
        )
        .await
        .unwrap();
    assert_eq!(r, Self_::Default(Match::Self_, Match::Where));
    let c = one_a::Client::new(rpc.clone());
    let r2 = c
        .self_(
            Self_::Default(Match::Self_, Match::Where),
            Match::Async,
            mv(),
        )
        .await
        .unwrap();
    assert_eq!(r2, r);
    let got = one.got.lock().unwrap().clone();
    assert_eq!(got.len(), 2);
    assert_eq!(got[0], got[1], "rpcgen's arguments and the stub's agree");
    // `opaque use<7>; /* @ddp(3) */`: at most 3 bytes in a reply.
    let short = Type {
        r#use: Bytes::from_static(b"use"),
        ..ty()
    };
    assert_eq!(one_a::hints_type(&short).ddp_results(), &[4, 3]);
    assert_eq!(c.r#type(short.clone()).await.unwrap(), short);

    let m: MixedCase = rpc
        .call(
            PROG_TWO,
            TWO_V,
            two_v::TWO_MIX,
            &Raw(Bytes::from(g["args_two_mix"].clone())),
            &hints,
        )
        .await
        .unwrap();
    let want = MixedCase {
        foo_bar: 0,
        foo_baz: 0,
    };
    assert_eq!(m, want);
    let two = two_v::Client::new(rpc.clone());
    let m2 = two
        .mix(Point { x: 1, x_2: -1 }, Point2 { x: -4_294_967_296 })
        .await
        .unwrap();
    assert_eq!(m2, want);
    // `string TWO_ECHO(string)`: rpcgen's xdr_wrapstring, an unbounded string.
    let Str(e) = rpc
        .call(
            PROG_TWO,
            TWO_V,
            two_v::TWO_ECHO,
            &Raw(Bytes::from(g["args_two_echo"].clone())),
            &hints,
        )
        .await
        .unwrap();
    assert_eq!(e, "a string argument!");
    assert_eq!(two.echo("x".into()).await.unwrap(), "x!");
}
