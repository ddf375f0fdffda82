//! Nested definitions, hostile input against the generated decoders
//! (lists, recursion, counts, discriminants), the encode-side checks, and
//! round-trip properties of the generated types.

use bytes::{BufMut, Bytes, BytesMut};
use proptest::prelude::*;
use rpcrdma_xdr::{EncodeError, XdrError};
use rpcrdma_xdrgen_tests::{all::*, mount3, nested::*, nfs3};

#[test]
fn nested_definitions_get_types_of_their_own() {
    let v = Outer {
        inner: OuterInner {
            x: -2,
            s: "abc".into(),
        },
        kind: OuterKind::NTwo,
        choice: OuterChoice::Case1(OuterChoiceDeep { h: 7 }),
    };
    let want = "fffffffe" /* x */.to_string()
        + "00000003" + "61626300" /* s */
        + "00000002" /* kind */
        + "00000001" + "0000000000000007" /* choice */;
    assert_eq!(hex::encode(v.to_xdr()), want);
    assert_eq!(Outer::from_xdr(&v.to_xdr()).unwrap(), v);
    let d = Outer {
        choice: OuterChoice::Default(9),
        ..v.clone()
    };
    // kind, then the default arm's discriminant and no body.
    assert!(hex::encode(d.to_xdr()).ends_with("0000000200000009"));
    assert_eq!(AnonTypedef { a: 5 }.to_xdr().as_ref(), &[0, 0, 0, 5]);
    assert_eq!(
        hex::encode(Top::True(TopE::TB).to_xdr()),
        "0000000100000005"
    );
    assert_eq!(hex::encode(Top::False.to_xdr()), "00000000");
    assert_eq!(OuterKind::NOne.value(), 1);
    assert_eq!(OuterKind::from_value(3), None);
}

fn words(ws: &[u32]) -> Bytes {
    let mut b = BytesMut::new();
    for w in ws {
        b.put_u32(*w);
    }
    b.freeze()
}

/// A node list of `n` nodes on the wire.
fn node_list_bytes(n: usize) -> Bytes {
    let mut b = BytesMut::with_capacity(n * 8);
    for i in 0..n {
        b.put_u32(i as u32);
        b.put_u32(u32::from(i + 1 < n));
    }
    b.freeze()
}

#[test]
fn long_lists_decode_drop_clone_and_compare_without_recursion() {
    // 200 000 nodes: a recursive decoder, destructor, clone or == would
    // overflow a test thread's stack long before that.
    let bytes = node_list_bytes(200_000);
    let list = Node::from_xdr(&bytes).unwrap();
    assert_eq!(list.iter().count(), 200_000);
    assert_eq!(list.iter().last().unwrap().value, 199_999);
    let copy = list.clone();
    assert_eq!(copy, list);
    assert_eq!(copy.to_xdr(), bytes);
    let mut other = list.clone();
    other.iter().count();
    other.value = 1;
    assert_ne!(other, list);
    assert_eq!(
        format!(
            "{:?}",
            Node::link_list([Node {
                value: 1,
                next: None
            }])
            .unwrap()
        ),
        "[Node { value: 1, .. }]"
    );
    drop(list);
    drop(copy);
}

#[test]
fn lists_longer_than_the_limit_are_refused() {
    let bytes = node_list_bytes((1 << 20) + 1);
    match Node::from_xdr(&bytes) {
        Err(XdrError::TooLong { max, .. }) => assert_eq!(max, 1 << 20),
        other => panic!("{other:?}"),
    }
}

#[test]
fn recursion_deeper_than_the_limit_is_refused() {
    // tree { v; left = TRUE, tree {...}; right = FALSE } nested `n` deep.
    let tree = |n: usize| {
        let mut w = Vec::new();
        for _ in 0..n {
            w.extend([1, 1]); // v, left present
        }
        w.extend([1, 0, 0]); // innermost: v, no left, no right
        w.extend(std::iter::repeat_n(0, n)); // right absent
        words(&w)
    };
    assert!(Tree::from_xdr(&tree(60)).is_ok());
    match Tree::from_xdr(&tree(100)) {
        Err(XdrError::TooDeep { max: 64, .. }) => {}
        other => panic!("{other:?}"),
    }
    // The same through a struct that holds the recursive type.
    let mut l = words(&[0, 0, 1]).to_vec();
    l.extend_from_slice(&tree(100));
    l.extend_from_slice(&words(&[2]));
    assert!(matches!(
        Lists::from_xdr(&Bytes::from(l)),
        Err(XdrError::TooDeep { .. })
    ));
}

#[test]
fn counts_and_lengths_are_checked_before_anything_is_allocated() {
    // var_ints<4> claiming five; ints<> claiming four billion with 8 bytes left.
    assert!(matches!(
        ints_from_xdr(&words(&[6, 1, 2, 3, 4, 5, 6])),
        Err(XdrError::TooLong { max: 5, .. })
    ));
    assert!(matches!(
        names_from_xdr(&words(&[u32::MAX, 1, 0])),
        Err(XdrError::UnexpectedEnd { .. })
    ));
    assert!(matches!(
        anyblob_from_xdr(&words(&[u32::MAX])),
        Err(XdrError::UnexpectedEnd { .. })
    ));
    // blob<ALIAS = 10> with 11 bytes.
    assert!(matches!(
        blob_from_xdr(&words(&[11, 0, 0, 0])),
        Err(XdrError::TooLong { max: 10, .. })
    ));
    // An NFS file handle over 64 bytes.
    let mut fh = vec![0u8; 4 + 68];
    fh[3] = 65;
    assert!(matches!(
        nfs3::NfsFh3::from_xdr(&Bytes::from(fh)),
        Err(XdrError::TooLong { max: 64, .. })
    ));
}

#[test]
fn discriminants_bools_and_strings_are_strict() {
    assert!(matches!(
        Color::from_xdr(&words(&[3])),
        Err(XdrError::BadDiscriminant { .. })
    ));
    assert!(matches!(
        ByEnum::from_xdr(&words(&[3])),
        Err(XdrError::BadDiscriminant { .. })
    ));
    assert!(matches!(
        ByUint::from_xdr(&words(&[8])),
        Err(XdrError::BadDiscriminant {
            what: "union by_uint",
            ..
        })
    ));
    assert!(matches!(
        ByBool::from_xdr(&words(&[2])),
        Err(XdrError::BadBool { .. })
    ));
    assert!(matches!(
        maybe_int_from_xdr(&words(&[2, 0])),
        Err(XdrError::BadBool { .. })
    ));
    let mut bad = words(&[2]).to_vec();
    bad.extend_from_slice(&[0xff, 0xfe, 0, 0]);
    assert!(matches!(
        name_from_xdr(&Bytes::from(bad.clone())),
        Err(XdrError::BadUtf8 { .. })
    ));
    // ... but a file name with strings as bytes is any bytes.
    let name = rpcrdma_xdrgen_tests::nfs3_bytes::filename3_from_xdr(&Bytes::from(bad)).unwrap();
    assert_eq!(&name[..], &[0xff, 0xfe]);
    // Trailing bytes are refused by from_xdr.
    assert!(matches!(
        Color::from_xdr(&words(&[0, 0])),
        Err(XdrError::TrailingBytes { .. })
    ));
}

#[test]
fn encode_side_checks() {
    let golden = include_str!("golden/all.txt");
    let line = golden
        .lines()
        .find_map(|l| l.strip_prefix("arrays_a "))
        .unwrap();
    let mut a = Arrays::from_xdr(&Bytes::from(hex::decode(line).unwrap())).unwrap();
    assert_eq!(a.xdr_check(), Ok(()));
    a.small = Bytes::from_static(b"eleven byte");
    assert_eq!(
        a.xdr_check(),
        Err(EncodeError::TooLong {
            item: "arrays.small",
            len: 11,
            max: 10
        })
    );
    assert_eq!(
        ByInt::Default(1, 5).xdr_check(),
        Err(EncodeError::DefaultArmTaken {
            item: "by_int",
            value: 1
        })
    );
    assert_eq!(ByInt::Default(3, 5).xdr_check(), Ok(()));
    assert_eq!(
        ByEnum::Default(Color::Green).xdr_check(),
        Err(EncodeError::DefaultArmTaken {
            item: "by_enum",
            value: 32
        })
    );
    assert_eq!(
        check_ints(&vec![0; 6]),
        Err(EncodeError::TooLong {
            item: "ints",
            len: 6,
            max: 5
        })
    );
    assert_eq!(
        check_names(&vec!["12345678901".into()]),
        Err(EncodeError::TooLong {
            item: "names",
            len: 11,
            max: 10
        })
    );
    let l = Lnode::link_list(["ok".into(), "x".repeat(3)].map(|label| Lnode { label, next: None }))
        .unwrap();
    assert_eq!(l.xdr_check(), Ok(()));
    let m = mount3::Mountres3::Default(mount3::Mountstat3::Mnt3errAcces);
    assert_eq!(m.to_xdr().as_ref(), &[0, 0, 0, 13]);
}

fn arb_prims() -> impl Strategy<Value = Prims> {
    (
        (
            any::<i32>(),
            any::<u32>(),
            any::<u32>(),
            any::<i32>(),
            any::<u32>(),
            any::<i64>(),
        ),
        (
            any::<u64>(),
            any::<u32>(),
            any::<u64>(),
            any::<bool>(),
            0usize..4,
            any::<i32>(),
        ),
    )
        .prop_map(|((i, u, bare, l, ul, h), (uh, f, d, b, c, m))| Prims {
            i,
            u,
            bare,
            l,
            ul,
            h,
            uh,
            f: f32::from_bits(f),
            d: f64::from_bits(d),
            b,
            c: [Color::Red, Color::Green, Color::Blue, Color::Other][c],
            m,
        })
}

fn arb_by_int() -> impl Strategy<Value = ByInt> {
    prop_oneof![
        any::<i32>().prop_map(ByInt::CaseMinus1),
        "[a-z]{0,10}".prop_map(ByInt::Case0),
        "[a-z]{0,10}".prop_map(ByInt::Case1),
        Just(ByInt::Case2),
        (3i32.., any::<i64>()).prop_map(|(d, v)| ByInt::Default(d, v)),
    ]
}

proptest! {
    #[test]
    fn prims_round_trip(p in arb_prims()) {
        let b = p.to_xdr();
        prop_assert_eq!(b.len(), 60);
        let back = Prims::from_xdr(&b).unwrap();
        // Compare bits: NaN != NaN.
        prop_assert_eq!(back.to_xdr(), b);
    }

    #[test]
    fn lists_and_unions_round_trip(values in proptest::collection::vec(any::<i32>(), 1..50), labels in proptest::collection::vec("[ -~]{0,20}", 0..10), u in arb_by_int(), nms in proptest::collection::vec("[a-z]{0,10}", 0..5)) {
        let head = Node::link_list(values.iter().map(|&value| Node { value, next: None }));
        let labels = Lnode::link_list(labels.into_iter().map(|label| Lnode { label, next: None }));
        let l = Lists { head, labels, root: None, u };
        prop_assert_eq!(l.xdr_check(), Ok(()));
        let b = l.to_xdr();
        prop_assert_eq!(Lists::from_xdr(&b).unwrap(), l);
        let n = names_to_xdr(&nms);
        prop_assert_eq!(names_from_xdr(&n).unwrap(), nms);
    }

    /// Arbitrary bytes never panic a generated decoder; what decodes
    /// re-encodes to the same length and decodes to the same value.
    #[test]
    fn decoders_are_total_and_consistent(data in proptest::collection::vec(any::<u8>(), 0..300)) {
        let b = Bytes::from(data);
        macro_rules! each {
            ($($t:ty),*) => {$(
                if let Ok(v) = <$t>::from_xdr(&b) {
                    let again = v.to_xdr();
                    prop_assert_eq!(again.len(), b.len());
                    prop_assert_eq!(<$t>::from_xdr(&again).unwrap().to_xdr(), again);
                }
            )*};
        }
        each!(Prims, Arrays, Optional, Node, Lnode, Tree, ByInt, ByUint, ByEnum, ByBool, Keywords, Lists, Bulk, Color, Outer, Top);
        each!(nfs3::Fattr3, nfs3::Read3res, nfs3::Write3args, nfs3::Readdir3res, nfs3::Readdirplus3res, nfs3::Sattr3, nfs3::Createhow3, nfs3::Mknoddata3, nfs3::Setattr3args);
        each!(mount3::Mountres3, mount3::Exportnode, mount3::Mountbody);
    }
}

/// spec-notes G4.
#[test]
fn padding_is_sent_zero_and_not_checked() {
    let zero = anyblob_to_xdr(&Bytes::from_static(b"a"));
    assert_eq!(zero.as_ref(), &[0, 0, 0, 1, b'a', 0, 0, 0]);
    let dirty = Bytes::from_static(&[0, 0, 0, 1, b'a', 9, 9, 9]);
    assert_eq!(&anyblob_from_xdr(&dirty).unwrap()[..], b"a");
}

/// Member names that are also local names of the generated code.
#[test]
fn member_names_do_not_shadow_the_generated_code() {
    let node = |v: i32| Shadow {
        dec: v,
        enc: v + 1,
        offset: 2,
        more: 3,
        nodes: 4,
        node: 5,
        depth: 6,
        discr: 7,
        value: 8,
        buf: 9,
        next: None,
    };
    let list = Shadow::link_list([node(1), node(10)]).unwrap();
    let u = ShadowU::Case1(*list);
    assert_eq!(ShadowU::from_xdr(&u.to_xdr()).unwrap(), u);
    let d = ShadowU::Default(4, -1);
    assert_eq!(ShadowU::from_xdr(&d.to_xdr()).unwrap(), d);
    let t = ShadowTree {
        dec: 1,
        depth: Some(Box::new(ShadowTree {
            dec: 2,
            depth: None,
            offset: None,
        })),
        offset: None,
    };
    assert_eq!(ShadowTree::from_xdr(&t.to_xdr()).unwrap(), t);
}
