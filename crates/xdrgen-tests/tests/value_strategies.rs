//! Round-trip properties of every type generated from `xdr/all.x` and
//! `xdr/nested.x`, from proptest strategies that build Rust values (every
//! variant, lengths up to and at their bounds, optional data present and
//! absent, lists, recursion): each value passes `xdr_check`, encodes, and
//! decodes back to the same value and the same bytes (value -> bytes ->
//! value). The other files' types, NFSv3 and MOUNT v3 among them, are
//! driven by the schema-driven generator in `schema_values.rs`.

use bytes::Bytes;
use proptest::collection::vec;
use proptest::option;
use proptest::prelude::*;
use rpcrdma_xdr::{EncodeError, XdrError};
use rpcrdma_xdrgen_tests::all::*;
use rpcrdma_xdrgen_tests::nested::*;

/// False only for a value holding a NaN (compared through its bytes).
fn comparable<T: PartialEq>(a: &T, b: &T) -> bool {
    a == b
}

/// value -> bytes -> value, and the bytes again.
fn round_trip<T: PartialEq + std::fmt::Debug>(
    v: &T,
    check: fn(&T) -> Result<(), EncodeError>,
    encode: fn(&T) -> Bytes,
    decode: fn(&Bytes) -> Result<T, XdrError>,
) -> Result<(), TestCaseError> {
    prop_assert_eq!(check(v), Ok(()), "{:?}", v);
    let b = encode(v);
    prop_assert_eq!(b.len() % 4, 0);
    let back = decode(&b).map_err(|e| TestCaseError::fail(format!("{e}: {v:?}")))?;
    prop_assert_eq!(encode(&back), b);
    if comparable(v, v) {
        prop_assert_eq!(&back, v);
    }
    Ok(())
}

/// A UTF-8 string of at most `max` bytes (any characters), or exactly
/// `max` bytes.
fn text(max: usize) -> impl Strategy<Value = String> {
    let some = vec(any::<char>(), 0..=max.min(48)).prop_map(move |cs| {
        let mut s = String::new();
        for c in cs {
            if s.len() + c.len_utf8() > max {
                break;
            }
            s.push(c);
        }
        s
    });
    prop_oneof![3 => some, 1 => Just("x".repeat(max))]
}

/// Opaque data of at most `max` bytes, or exactly `max`.
fn blob(max: usize) -> impl Strategy<Value = Bytes> {
    prop_oneof![
        3 => vec(any::<u8>(), 0..=max.min(64)),
        1 => vec(any::<u8>(), max..=max),
    ]
    .prop_map(Bytes::from)
}

fn color() -> impl Strategy<Value = Color> {
    prop_oneof![
        Just(Color::Red),
        Just(Color::Green),
        Just(Color::Blue),
        Just(Color::Other)
    ]
}

fn prims() -> impl Strategy<Value = Prims> {
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
            color(),
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
            c,
            m,
        })
}

fn arrays() -> impl Strategy<Value = Arrays> {
    (
        (
            any::<[u8; 5]>(),
            blob(10),
            blob(200),
            text(10),
            text(200),
            any::<[i32; 3]>(),
        ),
        (
            vec(any::<i32>(), 0..=4),
            (prims(), prims()),
            vec(text(10), 0..4),
            any::<[u8; 4]>(),
            any::<[i32; 3]>(),
            blob(10),
            text(100),
        ),
    )
        .prop_map(
            |(
                (fixed, small, any, s, any_s, fixed_ints),
                (var_ints, (p0, p1), nms, f4, t, bl, r#as),
            )| Arrays {
                fixed,
                small,
                any,
                s,
                any_s,
                fixed_ints,
                var_ints,
                p2: [p0, p1],
                nms,
                f4,
                t,
                bl,
                r#as,
            },
        )
}

fn optional() -> impl Strategy<Value = Optional> {
    (
        option::of(any::<i32>()),
        option::of(prims()),
        option::of(any::<i32>()),
    )
        .prop_map(|(oi, op, mi)| Optional {
            oi: oi.map(Box::new),
            op: op.map(Box::new),
            mi: mi.map(Box::new),
        })
}

fn node() -> impl Strategy<Value = Node> {
    vec(any::<i32>(), 1..30).prop_map(|vs| {
        *Node::link_list(vs.into_iter().map(|value| Node { value, next: None })).unwrap()
    })
}

fn llist() -> impl Strategy<Value = Llist> {
    vec(text(20), 0..10)
        .prop_map(|ls| Lnode::link_list(ls.into_iter().map(|label| Lnode { label, next: None })))
}

fn lnode() -> impl Strategy<Value = Lnode> {
    (text(20), llist()).prop_map(|(label, next)| Lnode { label, next })
}

fn tree() -> impl Strategy<Value = Tree> {
    any::<i32>()
        .prop_map(|v| Tree {
            v,
            left: None,
            right: None,
        })
        .prop_recursive(8, 64, 2, |inner| {
            (any::<i32>(), option::of(inner.clone()), option::of(inner)).prop_map(|(v, l, r)| {
                Tree {
                    v,
                    left: l.map(Box::new),
                    right: r.map(Box::new),
                }
            })
        })
}

fn by_int() -> impl Strategy<Value = ByInt> {
    prop_oneof![
        any::<i32>().prop_map(ByInt::CaseMinus1),
        text(10).prop_map(ByInt::Case0),
        text(10).prop_map(ByInt::Case1),
        Just(ByInt::Case2),
        (
            any::<i32>().prop_filter("a listed case", |d| !(-1..=2).contains(d)),
            any::<i64>()
        )
            .prop_map(|(d, v)| ByInt::Default(d, v)),
    ]
}

fn by_uint() -> impl Strategy<Value = ByUint> {
    prop_oneof![
        any::<u64>().prop_map(|b| ByUint::Case7(f64::from_bits(b))),
        Just(ByUint::Big)
    ]
}

fn by_enum() -> impl Strategy<Value = ByEnum> {
    prop_oneof![
        Just(ByEnum::Red),
        prims().prop_map(ByEnum::Green),
        prims().prop_map(ByEnum::Blue),
        // The only item no case lists.
        Just(ByEnum::Default(Color::Other)),
    ]
}

fn by_bool() -> impl Strategy<Value = ByBool> {
    prop_oneof![text(10).prop_map(ByBool::True), Just(ByBool::False)]
}

fn keywords() -> impl Strategy<Value = Keywords> {
    any::<[i32; 6]>().prop_map(|[t, m, f, s, i, l]| Keywords {
        r#type: t,
        r#match: m,
        r#fn: f,
        self_: s,
        r#impl: i,
        r#loop: l,
    })
}

fn lists() -> impl Strategy<Value = Lists> {
    (option::of(node()), llist(), option::of(tree()), by_int()).prop_map(
        |(head, labels, root, u)| Lists {
            head: head.map(Box::new),
            labels,
            root: root.map(Box::new),
            u,
        },
    )
}

fn bulk() -> impl Strategy<Value = Bulk> {
    (any::<u32>(), blob(300), text(1024)).prop_map(|(len, data, path)| Bulk { len, data, path })
}

// nested.x

fn outer_inner() -> impl Strategy<Value = OuterInner> {
    (any::<i32>(), text(4)).prop_map(|(x, s)| OuterInner { x, s })
}

fn outer_kind() -> impl Strategy<Value = OuterKind> {
    prop_oneof![Just(OuterKind::NOne), Just(OuterKind::NTwo)]
}

fn outer_choice_deep() -> impl Strategy<Value = OuterChoiceDeep> {
    any::<i64>().prop_map(|h| OuterChoiceDeep { h })
}

fn outer_choice() -> impl Strategy<Value = OuterChoice> {
    prop_oneof![
        outer_choice_deep().prop_map(OuterChoice::Case1),
        any::<i32>()
            .prop_filter("case 1", |d| *d != 1)
            .prop_map(OuterChoice::Default),
    ]
}

fn outer() -> impl Strategy<Value = Outer> {
    (outer_inner(), outer_kind(), outer_choice()).prop_map(|(inner, kind, choice)| Outer {
        inner,
        kind,
        choice,
    })
}

fn top_e() -> impl Strategy<Value = TopE> {
    prop_oneof![Just(TopE::TA), Just(TopE::TB)]
}

fn top() -> impl Strategy<Value = Top> {
    prop_oneof![top_e().prop_map(Top::True), Just(Top::False)]
}

fn shadow() -> impl Strategy<Value = Shadow> {
    vec(any::<[i32; 10]>(), 1..20).prop_map(|ns| {
        *Shadow::link_list(ns.into_iter().map(
            |[dec, enc, offset, more, nodes, node, depth, discr, value, buf]| Shadow {
                dec,
                enc,
                offset,
                more,
                nodes,
                node,
                depth,
                discr,
                value,
                buf,
                next: None,
            },
        ))
        .unwrap()
    })
}

fn shadow_u() -> impl Strategy<Value = ShadowU> {
    prop_oneof![
        shadow().prop_map(ShadowU::Case1),
        (
            any::<i32>().prop_filter("case 1", |d| *d != 1),
            any::<i32>()
        )
            .prop_map(|(d, o)| ShadowU::Default(d, o)),
    ]
}

fn shadow_tree() -> impl Strategy<Value = ShadowTree> {
    any::<i32>()
        .prop_map(|dec| ShadowTree {
            dec,
            depth: None,
            offset: None,
        })
        .prop_recursive(8, 64, 2, |inner| {
            (any::<i32>(), option::of(inner.clone()), option::of(inner)).prop_map(|(dec, d, o)| {
                ShadowTree {
                    dec,
                    depth: d.map(Box::new),
                    offset: o.map(Box::new),
                }
            })
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn all_x_typedefs_round_trip(
        m in any::<i32>(), c in any::<u32>(), f4 in any::<[u8; 4]>(), bl in blob(10),
        ab in blob(300), n in text(10), s in text(300), is in vec(any::<i32>(), 0..=5),
        t in any::<[i32; 3]>(), mi in option::of(any::<i32>()), ns in vec(text(10), 0..6),
        l in llist(),
    ) {
        round_trip(&m, check_myint, myint_to_xdr, myint_from_xdr)?;
        round_trip(&c, check_count_t, count_t_to_xdr, count_t_from_xdr)?;
        round_trip(&f4, check_fixed4, fixed4_to_xdr, fixed4_from_xdr)?;
        round_trip(&bl, check_blob, blob_to_xdr, blob_from_xdr)?;
        round_trip(&ab, check_anyblob, anyblob_to_xdr, anyblob_from_xdr)?;
        round_trip(&n, check_name, name_to_xdr, name_from_xdr)?;
        round_trip(&s, check_anystr, anystr_to_xdr, anystr_from_xdr)?;
        round_trip(&is, check_ints, ints_to_xdr, ints_from_xdr)?;
        round_trip(&t, check_triple, triple_to_xdr, triple_from_xdr)?;
        round_trip(&mi.map(Box::new), check_maybe_int, maybe_int_to_xdr, maybe_int_from_xdr)?;
        round_trip(&ns, check_names, names_to_xdr, names_from_xdr)?;
        round_trip(&l, check_llist, llist_to_xdr, llist_from_xdr)?;
    }

    #[test]
    fn all_x_enums_and_structs_round_trip(
        c in color(), p in prims(), a in arrays(), o in optional(), k in keywords(), b in bulk(),
    ) {
        round_trip(&c, Color::xdr_check, Color::to_xdr, Color::from_xdr)?;
        round_trip(&p, Prims::xdr_check, Prims::to_xdr, Prims::from_xdr)?;
        prop_assert_eq!(p.to_xdr().len(), 60);
        round_trip(&a, Arrays::xdr_check, Arrays::to_xdr, Arrays::from_xdr)?;
        round_trip(&o, Optional::xdr_check, Optional::to_xdr, Optional::from_xdr)?;
        round_trip(&k, Keywords::xdr_check, Keywords::to_xdr, Keywords::from_xdr)?;
        round_trip(&b, Bulk::xdr_check, Bulk::to_xdr, Bulk::from_xdr)?;
    }

    #[test]
    fn all_x_lists_recursion_and_unions_round_trip(
        n in node(), ln in lnode(), t in tree(), l in lists(),
        bi in by_int(), bu in by_uint(), be in by_enum(), bb in by_bool(),
    ) {
        round_trip(&n, Node::xdr_check, Node::to_xdr, Node::from_xdr)?;
        round_trip(&ln, Lnode::xdr_check, Lnode::to_xdr, Lnode::from_xdr)?;
        round_trip(&t, Tree::xdr_check, Tree::to_xdr, Tree::from_xdr)?;
        round_trip(&l, Lists::xdr_check, Lists::to_xdr, Lists::from_xdr)?;
        round_trip(&bi, ByInt::xdr_check, ByInt::to_xdr, ByInt::from_xdr)?;
        round_trip(&bu, ByUint::xdr_check, ByUint::to_xdr, ByUint::from_xdr)?;
        round_trip(&be, ByEnum::xdr_check, ByEnum::to_xdr, ByEnum::from_xdr)?;
        round_trip(&bb, ByBool::xdr_check, ByBool::to_xdr, ByBool::from_xdr)?;
    }

    #[test]
    fn nested_x_types_round_trip(
        oi in outer_inner(), ok in outer_kind(), ocd in outer_choice_deep(), oc in outer_choice(),
        o in outer(), a in any::<u32>(), te in top_e(), t in top(),
        s in shadow(), su in shadow_u(), st in shadow_tree(),
    ) {
        round_trip(&oi, OuterInner::xdr_check, OuterInner::to_xdr, OuterInner::from_xdr)?;
        round_trip(&ok, OuterKind::xdr_check, OuterKind::to_xdr, OuterKind::from_xdr)?;
        round_trip(&ocd, OuterChoiceDeep::xdr_check, OuterChoiceDeep::to_xdr, OuterChoiceDeep::from_xdr)?;
        round_trip(&oc, OuterChoice::xdr_check, OuterChoice::to_xdr, OuterChoice::from_xdr)?;
        round_trip(&o, Outer::xdr_check, Outer::to_xdr, Outer::from_xdr)?;
        let at = AnonTypedef { a };
        round_trip(&at, AnonTypedef::xdr_check, AnonTypedef::to_xdr, AnonTypedef::from_xdr)?;
        round_trip(&te, TopE::xdr_check, TopE::to_xdr, TopE::from_xdr)?;
        round_trip(&t, Top::xdr_check, Top::to_xdr, Top::from_xdr)?;
        round_trip(&s, Shadow::xdr_check, Shadow::to_xdr, Shadow::from_xdr)?;
        round_trip(&su, ShadowU::xdr_check, ShadowU::to_xdr, ShadowU::from_xdr)?;
        round_trip(&st, ShadowTree::xdr_check, ShadowTree::to_xdr, ShadowTree::from_xdr)?;
    }
}

/// Every type of the two files has a strategy above: a type added to
/// them without one fails here.
#[test]
fn every_type_of_all_x_and_nested_x_has_a_strategy() {
    let covered = [
        "color",
        "myint",
        "count_t",
        "fixed4",
        "blob",
        "anyblob",
        "name",
        "anystr",
        "ints",
        "triple",
        "maybe_int",
        "names",
        "prims",
        "arrays",
        "optional",
        "node",
        "llist",
        "lnode",
        "tree",
        "by_int",
        "by_uint",
        "by_enum",
        "by_bool",
        "keywords",
        "lists",
        "bulk",
        "outer",
        "anon_typedef",
        "top",
        "shadow",
        "shadow_u",
        "shadow_tree",
    ];
    for file in ["xdr/all.x", "xdr/nested.x"] {
        let s = rpcrdma_xdrgen::difftest::Schema::load(format!(
            "{}/{file}",
            env!("CARGO_MANIFEST_DIR")
        ))
        .unwrap();
        for ty in s.types() {
            assert!(
                covered.contains(&ty.as_str()),
                "{file}: `{ty}` has no strategy"
            );
        }
        // Nested types: outer.inner, outer.kind, outer.choice, outer.choice.deep, top.e.
        assert!(
            s.nested_types().len() <= 5,
            "{file}: {:?}",
            s.nested_types()
        );
    }
}
