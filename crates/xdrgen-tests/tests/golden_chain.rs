//! Golden byte vectors for `xdr/chain.x`: linked lists (direct and through
//! a typedef), a first-child / next-sibling tree, mutual recursion, a list
//! of unions whose arms nest lists, a pointer that is not the last member.
//! The bytes are rpcgen's C with libtirpc (`scripts/xdrgen-diff/vectors_chain.c`,
//! `tests/golden/chain.txt`; `XDRGEN_C_CHAIN_VECTORS=FILE` for a fresh
//! run). Chains longer than the decoders' nesting limit (64) must decode
//! too: rpcgen's C takes them.

mod common;

use bytes::Bytes;
use rpcrdma_xdrgen_tests::chain::*;

use common::{golden, vector};

/// The chain length of `fnode_siblings` and `vlist_long` (`LONG` in the C).
const LONG: usize = 200;

fn leaf(name: &str) -> Fnode {
    Fnode {
        name: name.into(),
        kids: None,
        sibling: None,
    }
}

fn siblings(n: usize) -> Fnode {
    let mut next: Option<Box<Fnode>> = None;
    for _ in 0..n {
        next = Some(Box::new(Fnode {
            name: "s".into(),
            kids: Some(Box::new(leaf("k"))),
            sibling: next,
        }));
    }
    *next.unwrap()
}

fn vlist(items: Vec<Val>) -> Vlist {
    let mut next: Option<Box<Vlist>> = None;
    for v in items.into_iter().rev() {
        next = Some(Box::new(Vlist { v, rest: next }));
    }
    *next.unwrap()
}

#[test]
fn chains_match_rpcgen_byte_for_byte() {
    let g = golden("XDRGEN_C_CHAIN_VECTORS", include_str!("golden/chain.txt"));
    let mut seen: Vec<&str> = Vec::new();
    let items = |v: &[(u64, &'static [u8])]| {
        Item::link_list(v.iter().map(|&(id, p)| Item {
            id,
            payload: Bytes::from_static(p),
            next: None,
        }))
    };
    vector!(
        seen,
        g,
        "item_3",
        Item,
        *items(&[(u64::MAX, b"x"), (2, b"sixteen bytes!!!"), (3, b"")]).unwrap()
    );
    vector!(
        seen,
        g,
        "holder_2",
        Holder,
        Holder {
            items: items(&[(2, b"sixteen bytes!!!"), (3, b"")]),
            count: 2
        }
    );
    vector!(
        seen,
        g,
        "holder_empty",
        Holder,
        Holder {
            items: None,
            count: 0
        }
    );
    let tree = Fnode {
        name: "root".into(),
        kids: Some(Box::new(Fnode {
            name: "a".into(),
            kids: Some(Box::new(leaf("c"))),
            sibling: Some(Box::new(leaf("b"))),
        })),
        sibling: None,
    };
    vector!(seen, g, "fnode_tree", Fnode, tree);
    vector!(seen, g, "fnode_siblings", Fnode, siblings(LONG));
    vector!(
        seen,
        g,
        "ping_pong",
        Ping,
        Ping {
            n: 1,
            p: Some(Box::new(Pong { m: 2, q: None }))
        }
    );
    vector!(
        seen,
        g,
        "ping_pong_ping",
        Ping,
        Ping {
            n: 1,
            p: Some(Box::new(Pong {
                m: 2,
                q: Some(Box::new(Ping { n: 3, p: None }))
            }))
        }
    );
    let inner = vlist(vec![Val::Case1(-1), Val::Case2("two".into())]);
    vector!(
        seen,
        g,
        "vlist_nested",
        Vlist,
        vlist(vec![
            Val::Case3(None),
            Val::Case3(Some(Box::new(inner))),
            Val::Default(9)
        ])
    );
    vector!(
        seen,
        g,
        "vlist_long",
        Vlist,
        vlist((0..LONG as i32).map(Val::Case1).collect())
    );
    vector!(
        seen,
        g,
        "backwards_2",
        Backwards,
        Backwards {
            prev: Some(Box::new(Backwards { prev: None, v: 1 })),
            v: 2
        }
    );
    let mut all: Vec<&String> = g.keys().collect();
    all.sort();
    seen.sort();
    assert_eq!(all, seen, "every chain vector is checked");
}

/// Big-endian words.
fn words(w: &[u32]) -> Bytes {
    Bytes::from(w.iter().flat_map(|x| x.to_be_bytes()).collect::<Vec<u8>>())
}

#[test]
fn sibling_chains_are_lists_and_nesting_is_limited() {
    use rpcrdma_xdr::XdrError;
    // 100 000 siblings (name "", no kids, sibling present but the last):
    // decoded, compared, cloned and dropped without recursion.
    let n = 100_000;
    let mut w = Vec::new();
    for i in 0..n {
        w.extend([0, 0, u32::from(i + 1 < n)]);
    }
    let long = Fnode::from_xdr(&words(&w)).unwrap();
    assert_eq!(long.iter().count(), n as usize);
    assert_eq!(long.clone(), long);
    assert_eq!(long.to_xdr(), words(&w));
    drop(long);
    // Kids nested 100 deep: past the nesting limit of 64.
    let mut w = Vec::new();
    for _ in 0..100 {
        w.extend([0, 1]); // name "", kids present
    }
    w.extend([0, 0, 0]); // innermost: no kids, no sibling
    w.extend(std::iter::repeat_n(0, 100)); // no siblings on the way out
    assert!(matches!(
        Fnode::from_xdr(&words(&w)),
        Err(XdrError::TooDeep { max: 64, .. })
    ));
    // A list of unions whose arm nests a list, 100 deep.
    let mut w = Vec::new();
    for _ in 0..100 {
        w.extend([3, 1]); // case 3, nested present
    }
    w.extend([9, 0]); // default arm, no rest
    w.extend(std::iter::repeat_n(0, 100)); // no rest on the way out
    assert!(matches!(
        Vlist::from_xdr(&words(&w)),
        Err(XdrError::TooDeep { .. })
    ));
}
