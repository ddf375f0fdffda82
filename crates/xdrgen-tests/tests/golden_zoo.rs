//! Golden byte vectors for `xdr/zoo.x`, a second file using every construct
//! (other names and shapes than `all.x`: enum items without values, names
//! that differ only in case, unions on every discriminant type, typedefs of
//! unions and of optional data, arrays of unions, optional data and
//! strings). The bytes are rpcgen's C with libtirpc
//! (`scripts/xdrgen-diff/vectors_zoo.c`, `tests/golden/zoo.txt`); each
//! value must encode to them and decode from them back to itself.
//!
//! With `XDRGEN_C_ZOO_VECTORS=FILE` the vectors come from FILE instead (the
//! differential script passes a fresh rpcgen build's output).

mod common;

use std::sync::{Arc, Mutex};

use bytes::Bytes;
use rpcrdma_oncrpc::mem::{self, MemConfig};
use rpcrdma_oncrpc::{CallHints, CallInfo, Client, ClientConfig, Marshal, ProcError};
use rpcrdma_oncrpc::{Server, ServerConfig, Services};
use rpcrdma_xdr::Encoder;
use rpcrdma_xdrgen_tests::zoo::*;

use common::{golden, vector};

fn g() -> std::collections::BTreeMap<String, Vec<u8>> {
    golden("XDRGEN_C_ZOO_VECTORS", include_str!("golden/zoo.txt"))
}

/// The same for a typedef (codec functions instead of methods).
macro_rules! alias {
    ($seen:ident, $g:ident, $name:literal, $to:ident, $from:ident, $check:ident, $value:expr) => {{
        let value = $value;
        let want = $g
            .get($name)
            .unwrap_or_else(|| panic!("no golden vector {}", $name));
        assert_eq!(hex::encode($to(&value)), hex::encode(want), "{}", $name);
        let back = $from(&Bytes::from(want.clone())).unwrap_or_else(|e| panic!("{}: {e}", $name));
        assert_eq!(back, value, "{} decodes from rpcgen's bytes", $name);
        assert_eq!($check(&value), Ok(()));
        $seen.push($name);
    }};
}

fn pen_a() -> Pen {
    Pen {
        kind: Animal::Bird,
        name: "polly".into(),
        legs: 2,
        weight: -1_234_567_890_123,
        id: 0xfedc_ba98_7654_3210,
        r: 0.25,
        p: -1e-300,
        fed: true,
        t: *b"tagtag01",
        sr: Bytes::from_static(b"abc"),
        blob: Bytes::new(),
        notes: String::new(),
        scores: [-1, 0, 1],
        counts: vec![7, u32::MAX],
        fixed3: *b"xyz",
        fixed0: [],
        anyb: Bytes::from_static(&[0, 1, 2, 3, 4]),
        s: "any".into(),
        s5: "five5".into(),
        nick: Some(Box::new("nick".into())),
        fav: Some(Box::new(Animal::Lizard)),
        maybe_id: None,
        fa: [Animal::Cat, Animal::Dog, Animal::Snake, Animal::Fish],
        many: vec![Animal::Dog, Animal::Bird],
    }
}

fn pen_b() -> Pen {
    Pen {
        kind: Animal::Cat,
        name: String::new(),
        legs: 0,
        weight: 0,
        id: 0,
        r: 0.0,
        p: 0.0,
        fed: false,
        t: [0; 8],
        sr: Bytes::new(),
        blob: Bytes::new(),
        notes: "n".into(),
        scores: [0; 3],
        counts: vec![],
        fixed3: [0; 3],
        fixed0: [],
        anyb: Bytes::new(),
        s: String::new(),
        s5: String::new(),
        nick: None,
        fav: None,
        maybe_id: Some(Box::new(0)),
        fa: [Animal::Lizard; 4],
        many: vec![
            Animal::Cat,
            Animal::Cat,
            Animal::Cat,
            Animal::Cat,
            Animal::Lizard,
        ],
    }
}

fn visitors(v: &[(&str, i32)]) -> VisitorList {
    Visitor::link_list(v.iter().map(|&(who, age)| Visitor {
        who: who.into(),
        age,
        next: None,
    }))
}

#[test]
fn zoo_matches_rpcgen_byte_for_byte() {
    let g = g();
    let mut seen: Vec<&str> = Vec::new();
    vector!(seen, g, "pen_a", Pen, pen_a());
    vector!(seen, g, "pen_b", Pen, pen_b());
    vector!(
        seen,
        g,
        "visitor_3",
        Visitor,
        *visitors(&[("ann", 30), ("bob", -1), ("", 0)]).unwrap()
    );
    alias!(
        seen,
        g,
        "visitor_list_null",
        visitor_list_to_xdr,
        visitor_list_from_xdr,
        check_visitor_list,
        None
    );
    alias!(
        seen,
        g,
        "visitor_list_2",
        visitor_list_to_xdr,
        visitor_list_from_xdr,
        check_visitor_list,
        visitors(&[("bob", -1), ("", 0)])
    );
    vector!(seen, g, "feeding_cat", Feeding, Feeding::Cat(100));
    vector!(seen, g, "feeding_dog", Feeding, Feeding::Dog(-5));
    vector!(seen, g, "feeding_bird", Feeding, Feeding::Bird);
    vector!(
        seen,
        g,
        "feeding_fish",
        Feeding,
        Feeding::Fish(Bytes::from_static(b"fl"))
    );
    vector!(
        seen,
        g,
        "feeding_snake",
        Feeding,
        Feeding::Default(Animal::Snake, "cold".into())
    );
    vector!(
        seen,
        g,
        "feeding_lizard",
        Feeding,
        Feeding::Default(Animal::Lizard, String::new())
    );
    alias!(
        seen,
        g,
        "feeding_t_dog",
        feeding_t_to_xdr,
        feeding_t_from_xdr,
        check_feeding_t,
        Feeding::Dog(7)
    );
    vector!(seen, g, "byint_neg", Byint, Byint::ZooNeg);
    vector!(seen, g, "byint_0", Byint, Byint::Case0(pen_b()));
    vector!(seen, g, "byint_12", Byint, Byint::ZooDec(None));
    vector!(
        seen,
        g,
        "byint_13",
        Byint,
        Byint::Case13(visitors(&[("bob", -1), ("", 0)]))
    );
    vector!(seen, g, "byuint_max", Byuint, Byuint::ZooMaxu(-1));
    vector!(seen, g, "byuint_hex", Byuint, Byuint::ZooHex);
    vector!(seen, g, "byuint_default_0", Byuint, Byuint::Default(0));
    vector!(
        seen,
        g,
        "byuint_default_big",
        Byuint,
        Byuint::Default(0x8000_0000)
    );
    vector!(
        seen,
        g,
        "bybool_true",
        Bybool,
        Bybool::True(Feeding::Fish(Bytes::from_static(b"twelve bytes")))
    );
    vector!(
        seen,
        g,
        "bybool_false",
        Bybool,
        Bybool::Default(false, u64::MAX)
    );
    alias!(
        seen,
        g,
        "maybe_byint_null",
        maybe_byint_to_xdr,
        maybe_byint_from_xdr,
        check_maybe_byint,
        None
    );
    alias!(
        seen,
        g,
        "maybe_byint_neg",
        maybe_byint_to_xdr,
        maybe_byint_from_xdr,
        check_maybe_byint,
        Some(Box::new(Byint::ZooNeg))
    );
    vector!(
        seen,
        g,
        "arrays_of_a",
        ArraysOf,
        ArraysOf {
            pens: vec![pen_a(), pen_b()],
            feeds: [Feeding::Cat(1), Feeding::Default(Animal::Snake, "x".into())],
            kinds: vec![],
            labels: vec!["a".into(), "bb".into(), "ccc".into()],
            optlabels: vec![
                None,
                Some(Box::new("q".into())),
                None,
                Some(Box::new(String::new()))
            ],
            ft: vec![Feeding::Bird],
            mb: Some(Box::new(Byint::Case13(visitors(&[("solo", 99)])))),
            bu: [Byuint::ZooHex],
            bb: vec![Bybool::True(Feeding::Bird), Bybool::Default(false, 5)],
        }
    );
    vector!(
        seen,
        g,
        "keywords",
        Keywords,
        Keywords {
            r#type: 1,
            r#match: 2,
            r#fn: 3,
            r#ref: 4,
            self_: 5,
            r#in: 6,
            r#loop: 7,
            r#mod: 8,
            r#use: 9,
            r#where: 10,
            r#async: 11,
            r#await: 12,
            r#dyn: 13,
            r#move: 14,
            self_2: 15,
            super_: 16,
            crate_: 17,
            r#box: 18,
            r#try: 19,
            r#yield: 20,
            r#as: 21,
        }
    );
    // `struct size` and `enum Size`: the later one is numbered.
    vector!(seen, g, "size", Size2, Size2 { w: 1, w_2: 2 });
    vector!(seen, g, "Size_large", Size, Size::Large);
    vector!(seen, g, "animal_snake", Animal, Animal::Snake);
    vector!(seen, g, "animal_lizard", Animal, Animal::Lizard);
    alias!(
        seen,
        g,
        "tag",
        tag_to_xdr,
        tag_from_xdr,
        check_tag,
        [0xff, 0, 1, 2, 3, 4, 5, 6]
    );
    alias!(
        seen,
        g,
        "raw",
        raw_to_xdr,
        raw_from_xdr,
        check_raw,
        Bytes::from_static(b"raw")
    );
    alias!(
        seen,
        g,
        "smallraw_max",
        smallraw_to_xdr,
        smallraw_from_xdr,
        check_smallraw,
        Bytes::from_static(b"0123456789ab")
    );
    alias!(
        seen,
        g,
        "label",
        label_to_xdr,
        label_from_xdr,
        check_label,
        String::from("label")
    );
    alias!(
        seen,
        g,
        "maybe_label",
        maybe_label_to_xdr,
        maybe_label_from_xdr,
        check_maybe_label,
        Some(Box::new(String::from("label")))
    );
    alias!(
        seen,
        g,
        "maybe_label_null",
        maybe_label_to_xdr,
        maybe_label_from_xdr,
        check_maybe_label,
        None
    );
    alias!(
        seen,
        g,
        "animals_5",
        animals_to_xdr,
        animals_from_xdr,
        check_animals,
        vec![
            Animal::Dog,
            Animal::Bird,
            Animal::Fish,
            Animal::Snake,
            Animal::Lizard
        ]
    );
    alias!(
        seen,
        g,
        "four_animals",
        four_animals_to_xdr,
        four_animals_from_xdr,
        check_four_animals,
        [Animal::Lizard, Animal::Snake, Animal::Fish, Animal::Cat]
    );
    alias!(
        seen,
        g,
        "big_t",
        big_t_to_xdr,
        big_t_from_xdr,
        check_big_t,
        0x8000_0000_0000_0001u64
    );
    alias!(
        seen,
        g,
        "ratio",
        ratio_to_xdr,
        ratio_from_xdr,
        check_ratio,
        -3.75f32
    );
    alias!(
        seen,
        g,
        "precise",
        precise_to_xdr,
        precise_from_xdr,
        check_precise,
        6.022_140_76e23f64
    );
    alias!(
        seen,
        g,
        "flag",
        flag_to_xdr,
        flag_from_xdr,
        check_flag,
        true
    );
    alias!(
        seen,
        g,
        "animal_t",
        animal_t_to_xdr,
        animal_t_from_xdr,
        check_animal_t,
        Animal::Fish
    );
    alias!(
        seen,
        g,
        "INT",
        int_to_xdr,
        int_from_xdr,
        check_int,
        i32::MIN
    );
    // Every vector but the procedure arguments (below) is checked here.
    let mut all: Vec<&String> = g.keys().filter(|k| !k.starts_with("args_")).collect();
    all.sort();
    seen.sort();
    assert_eq!(all, seen, "every zoo vector is checked");
}

#[test]
fn implicit_enum_values_follow_rpcgen() {
    // `CAT, DOG = 5, BIRD, FISH = ZOO_OCT, SNAKE = -2, LIZARD`: C's values.
    let v: Vec<i32> = [
        Animal::Cat,
        Animal::Dog,
        Animal::Bird,
        Animal::Fish,
        Animal::Snake,
        Animal::Lizard,
    ]
    .iter()
    .map(|a| a.value())
    .collect();
    assert_eq!(v, [0, 5, 6, 8, -2, -1]);
}

/// Raw arguments: the bytes rpcgen's C encoded for a call.
struct Raw(Bytes);

impl Marshal for Raw {
    fn marshal(&self, enc: &mut Encoder<'_>) {
        enc.buffer().extend_from_slice(&self.0);
    }
}

#[derive(Default)]
struct Keeper {
    fed: Mutex<Vec<(Feeding, i32, Flag)>>,
}

impl zoo_v1::Server for Keeper {
    async fn feed(&self, _info: CallInfo, f: Feeding, n: i32, ok: Flag) -> Result<(), ProcError> {
        self.fed.lock().unwrap().push((f, n, ok));
        Ok(())
    }
}

#[tokio::test]
async fn several_arguments_travel_as_rpcgen_encodes_them() {
    let keeper = Arc::new(Keeper::default());
    let mut services = Services::new();
    zoo_v1::register(&mut services, keeper.clone());
    let server = Server::new(services, ServerConfig::default());
    let (connector, mut listener) = mem::listener(MemConfig::default());
    let s = server.clone();
    tokio::spawn(async move {
        while let Some(t) = listener.accept().await {
            s.serve(t);
        }
    });
    let rpc = Client::new(connector, ClientConfig::default());
    // rpcgen -N's `zooproc_feed_1_argument`, sent as it is.
    let raw = Raw(Bytes::from(g()["args_feed"].clone()));
    let () = rpc
        .call(
            ZOO_PROG,
            ZOO_V1,
            zoo_v1::ZOOPROC_FEED,
            &raw,
            &CallHints::new(),
        )
        .await
        .unwrap();
    // And through the generated stub.
    zoo_v1::Client::new(rpc)
        .feed(Feeding::Dog(3), -4, true)
        .await
        .unwrap();
    let fed = keeper.fed.lock().unwrap().clone();
    assert_eq!(fed, vec![(Feeding::Dog(3), -4, true); 2]);
}

#[test]
fn bounds_given_by_constants_and_enum_items_are_checked_on_decode() {
    use rpcrdma_xdr::XdrError;
    let words =
        |w: &[u32]| Bytes::from(w.iter().flat_map(|x| x.to_be_bytes()).collect::<Vec<u8>>());
    // smallraw<ZOO_DEC = 12>: 13 bytes claimed.
    assert!(matches!(
        smallraw_from_xdr(&words(&[13, 0, 0, 0, 0])),
        Err(XdrError::TooLong {
            len: 13,
            max: 12,
            ..
        })
    ));
    // label = string<ZOO_DEC>.
    assert!(matches!(
        label_from_xdr(&words(&[13, 0, 0, 0, 0])),
        Err(XdrError::TooLong { max: 12, .. })
    ));
    // animals = animal<DOG = 5>: six items.
    assert!(matches!(
        animals_from_xdr(&words(&[6, 0, 0, 0, 0, 0, 0])),
        Err(XdrError::TooLong { len: 6, max: 5, .. })
    ));
    // An enum value that is no item (G1), also as a union discriminant.
    assert!(matches!(
        animal_t_from_xdr(&words(&[7])),
        Err(XdrError::BadDiscriminant { .. })
    ));
    assert!(matches!(
        Feeding::from_xdr(&words(&[7, 0])),
        Err(XdrError::BadDiscriminant { .. })
    ));
    // A union without a default arm refuses unlisted discriminants.
    assert!(matches!(
        Byint::from_xdr(&words(&[1])),
        Err(XdrError::BadDiscriminant { .. })
    ));
    // The encode side: xdr_check refuses what the bounds forbid.
    let mut p = pen_a();
    p.s5 = "six!!!".into();
    assert!(p.xdr_check().is_err());
    assert!(check_animals(&vec![Animal::Cat; 6]).is_err());
    assert!(Feeding::Default(Animal::Cat, String::new())
        .xdr_check()
        .is_err());
}
