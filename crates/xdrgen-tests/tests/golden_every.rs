//! `xdr/every-construct.x`, every construct in one file: fixed values of
//! what rpcgen takes and we newly accept (enum aliases, enum words from
//! `0x80000000`, case labels that are constants, named procedure
//! arguments), nested definitions and the rest, with their bytes written
//! out by hand; and `golden/every.txt`, three random values of every type
//! as rpcgen's C and libtirpc decode and re-encode them
//! (`scripts/xdrgen-rpcgen-diff.sh` writes it and checks it against fresh
//! C output; it also runs the generic differential on the file).

use bytes::Bytes;
use rpcrdma_xdrgen_tests::every::*;

mod every_dispatch {
    include!(concat!(env!("OUT_DIR"), "/every_dispatch.rs"));
}

fn bytes(h: &str) -> Bytes {
    Bytes::from(hex::decode(h.replace(' ', "")).unwrap())
}

#[track_caller]
fn golden<T: std::fmt::Debug + PartialEq>(
    v: &T,
    enc: fn(&T) -> Bytes,
    dec: fn(&Bytes) -> Result<T, rpcrdma_xdr::XdrError>,
    want: &str,
) {
    let b = enc(v);
    assert_eq!(hex::encode(&b), want.replace(' ', ""), "{v:?}");
    assert_eq!(&dec(&b).unwrap(), v);
}

#[test]
fn enum_aliases_are_the_first_item_of_their_value() {
    assert_eq!(EcLevel::EcMedium, EcLevel::EcMid);
    assert_eq!(EcLevel::EcDefaultLevel, EcLevel::EcLow);
    assert_eq!(EcLevel::EcMedium.value(), 5);
    assert_eq!(format!("{:?}", EcLevel::EcMedium), "EcMid");
    golden(
        &EcLevel::EcMedium,
        EcLevel::to_xdr,
        EcLevel::from_xdr,
        "00000005",
    );
    assert_eq!(
        EcLevel::from_xdr(&bytes("00000005")).unwrap(),
        EcLevel::EcMedium
    );
    // Implied values follow C: EC_LOW = 0, EC_NEXT = 6.
    assert_eq!(EcLevel::EcLow.value(), 0);
    assert_eq!(EcLevel::EcNext.value(), 6);
    assert_eq!(EcLevel::EcNegative.value(), -3);
    // Usable in patterns.
    assert!(matches!(EcLevel::EcMid, EcLevel::EcMedium));
    // An alias names its union arm; the arm's discriminant is the value.
    let s = EcScalars {
        i: -1,
        u: 2,
        un: 3,
        l: 4,
        ul: 5,
        h: -6,
        uh: 7,
        f: 1.5,
        d: -0.25,
        b: true,
        lv: EcLevel::EcMedium,
        w: EcWord::EcHigh,
        r: 0.0,
        fl: false,
    };
    let scalars = "ffffffff 00000002 00000003 00000004 00000005 fffffffffffffffa \
                   0000000000000007 3fc00000 bfd0000000000000 00000001 00000005 \
                   80000000 00000000 00000000";
    golden(&s, EcScalars::to_xdr, EcScalars::from_xdr, scalars);
    golden(
        &EcByEnum::EcMedium(s),
        EcByEnum::to_xdr,
        EcByEnum::from_xdr,
        &format!("00000005 {scalars}"),
    );
    golden(
        &EcByEnum::EcLow,
        EcByEnum::to_xdr,
        EcByEnum::from_xdr,
        "00000000",
    );
}

#[test]
fn enum_words_from_0x80000000_are_the_ints_rpcgen_sends() {
    assert_eq!(EcWord::EcHigh.value(), i32::MIN);
    assert_eq!(EcWord::EcTop.value(), -1);
    golden(
        &EcWord::EcHigh,
        EcWord::to_xdr,
        EcWord::from_xdr,
        "80000000",
    );
    golden(&EcWord::EcTop, EcWord::to_xdr, EcWord::from_xdr, "ffffffff");
    golden(
        &EcByWord::EcHigh(9),
        EcByWord::to_xdr,
        EcByWord::from_xdr,
        "80000000 00000009",
    );
    golden(
        &EcByWord::EcTop,
        EcByWord::to_xdr,
        EcByWord::from_xdr,
        "ffffffff",
    );
    // EC_W0 has no case and there is no default.
    assert!(EcByWord::from_xdr(&bytes("00000000")).is_err());
    // `case 0x80000000:` on an int discriminant.
    golden(
        &EcByInt::CaseMinus2147483648,
        EcByInt::to_xdr,
        EcByInt::from_xdr,
        "80000000",
    );
    // A word from 0x80000000 in a nested enum of a union arm.
    golden(
        &EcTop::True(EcTopE::EcTB),
        EcTop::to_xdr,
        EcTop::from_xdr,
        "00000001 7fffffff",
    );
}

#[test]
fn case_labels_that_are_constants_name_their_arm() {
    // `case EC_NEG:` (a constant, -3) on an int discriminant.
    golden(
        &EcByInt::EcNeg(-5),
        EcByInt::to_xdr,
        EcByInt::from_xdr,
        "fffffffd fffffffb",
    );
    golden(
        &EcByInt::Case1("ab".into()),
        EcByInt::to_xdr,
        EcByInt::from_xdr,
        "00000001 00000002 61620000",
    );
    golden(
        &EcByInt::Default(2, -1),
        EcByInt::to_xdr,
        EcByInt::from_xdr,
        "00000002 ffffffffffffffff",
    );
    // `case EC_SIX:` on an enum discriminant names the item of that value.
    golden(
        &EcByConst::EcNext(7),
        EcByConst::to_xdr,
        EcByConst::from_xdr,
        "00000006 00000007",
    );
    golden(
        &EcByConst::Default(EcLevel::EcMid, vec![EcLevel::EcLow, EcLevel::EcNegative]),
        EcByConst::to_xdr,
        EcByConst::from_xdr,
        "00000005 00000002 00000000 fffffffd",
    );
    // `case EC_WORD:` (0xFFFFFFFF) on an unsigned discriminant.
    golden(
        &EcByUint::EcWord,
        EcByUint::to_xdr,
        EcByUint::from_xdr,
        "ffffffff",
    );
    assert!(EcByUint::from_xdr(&bytes("00000008")).is_err());
}

#[test]
fn nested_definitions_lists_and_optional_data() {
    let o = EcOuter {
        inner: EcOuterInner {
            x: 3,
            s: "nested".into(),
        },
        kind: EcOuterKind::EcInB,
        choice: EcOuterChoice::Case1(EcOuterChoiceDeep { h: -2, ok: true }),
    };
    golden(
        &o,
        EcOuter::to_xdr,
        EcOuter::from_xdr,
        "00000003 00000006 6e657374 65640000 00000002 00000001 fffffffffffffffe 00000001",
    );
    let list = EcEntry::link_list([(1, "a"), (2, "bc")].map(|(cookie, n)| EcEntry {
        cookie,
        name: n.into(),
        next: None,
    }))
    .unwrap();
    golden(
        &EcByBool::True(Some(list)),
        EcByBool::to_xdr,
        EcByBool::from_xdr,
        "00000001 00000001 0000000000000001 00000001 61000000 00000001 0000000000000002 00000002 62630000 00000000",
    );
    golden(
        &EcTrueOnly::True(u64::MAX),
        EcTrueOnly::to_xdr,
        EcTrueOnly::from_xdr,
        "00000001 ffffffffffffffff",
    );
    assert!(EcTrueOnly::from_xdr(&bytes("00000000")).is_err());
    let chain =
        EcLink::link_list([EcLevel::EcNext, EcLevel::EcLow].map(|lv| EcLink { lv, next: None }));
    golden(
        &chain,
        ec_chain_to_xdr,
        ec_chain_from_xdr,
        "00000001 00000006 00000001 00000000 00000000",
    );
    let ping = EcPing {
        n: 1,
        pong: Some(Box::new(EcPong {
            m: 2,
            ping: Some(Box::new(EcPing { n: 3, pong: None })),
        })),
    };
    golden(
        &ping,
        EcPing::to_xdr,
        EcPing::from_xdr,
        "00000001 00000001 0000000000000002 00000001 00000003 00000000",
    );
    golden(
        &Some(Box::new("opt".to_string())),
        ec_maybe_str_to_xdr,
        ec_maybe_str_from_xdr,
        "00000001 00000003 6f707400",
    );
    golden(
        &[true, false, true],
        ec_flags_to_xdr,
        ec_flags_from_xdr,
        "00000001 00000000 00000001",
    );
    let mut fixed = [0u8; 31];
    fixed[30] = 0xee;
    golden(
        &fixed,
        ec_fixed_to_xdr,
        ec_fixed_from_xdr,
        &format!("{}ee00", "00".repeat(30)),
    );
    // Bounds: ec_str<EC_NAMED = 8>, ec_levels<4>.
    assert!(ec_str_from_xdr(&bytes("00000009 00000000 00000000 00000000")).is_err());
    assert!(ec_levels_from_xdr(&bytes(
        "00000005 00000000 00000000 00000000 00000000 00000000"
    ))
    .is_err());
}

#[test]
fn programs_with_named_string_and_several_arguments() {
    assert_eq!(EC_PROG, 0x2000_0ecc);
    assert_eq!((ec_v1::EC_TWO, ec_v1::EC_STRING, ec_v1::EC_LIST), (2, 3, 5));
    assert_eq!(ec_v2::EC_WORDS, 2);
    // EC_BULK's results: a Write chunk of the call's count, then the path.
    let h = ec_v1::hints_bulk(&EcBulk {
        count: 100,
        data: Bytes::new(),
        path: String::new(),
    });
    assert_eq!(h.ddp_results(), &[100, 1024]);
}

/// Three random values of every type, as rpcgen's C and libtirpc encode
/// them, decode and re-encode to the same bytes and value.
#[test]
fn rpcgens_bytes_of_every_type_round_trip() {
    let golden = include_str!("golden/every.txt");
    let mut types = std::collections::BTreeSet::new();
    for line in golden.lines() {
        let (ty, h) = line.split_once(' ').unwrap();
        let b = bytes(h);
        match every_dispatch::roundtrip(ty, &b) {
            Some(Ok(out)) => assert_eq!(out, b, "{ty}"),
            other => panic!("{ty} {h}: {other:?}"),
        }
        types.insert(ty);
    }
    let schema = rpcrdma_xdrgen::difftest::Schema::load(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/xdr/every-construct.x"
    ))
    .unwrap();
    assert_eq!(types.len(), schema.types().len(), "every type has vectors");
}
