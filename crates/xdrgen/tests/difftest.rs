//! The schema-driven differential's parts that need neither rpcgen nor a
//! compiler: values, mutations, the drivers' text and the judge (the
//! whole run is `scripts/xdrgen-rpcgen-diff.sh FILE.x`; the generated
//! Rust decodes these values in `crates/xdrgen-tests/tests/schema_values.rs`).

use rpcrdma_xdrgen::difftest::{judge, MutationKind, Rng, Schema};

const SRC: &str = "
const MAX = 3;
enum e { A = 1, B = 2, C = 2 };
typedef string name<MAX>;
struct node { int v; node *next; };
struct tree { tree *left; tree *right; };
union u switch (e d) { case A: name n; };
union w switch (int d) { case 1: void; default: hyper h; };
struct all { e x; bool b; name n; int ns<2>; u un; w wn; node *list; tree *t; opaque o[5]; };
";

fn word(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

#[test]
fn samples_are_reproducible_aligned_and_mutated_one_word_at_a_time() {
    let s = Schema::parse(SRC, "t.x").unwrap();
    assert_eq!(
        s.types(),
        ["e", "name", "node", "tree", "u", "w", "all"],
        "top-level types in file order"
    );
    assert_eq!(s.kind_of("name"), Some("typedef"));
    assert!(s.sample("nope", &mut Rng::new(1)).is_none());
    let mut kinds = std::collections::BTreeSet::new();
    for ty in s.types() {
        let (mut a, mut b) = (Rng::new(7), Rng::new(7));
        for _ in 0..200 {
            let x = s.sample(&ty, &mut a).unwrap();
            assert_eq!(x, s.sample(&ty, &mut b).unwrap(), "same seed, same sample");
            assert_eq!(x.bytes.len() % 4, 0);
            for m in &x.mutations {
                kinds.insert(m.kind);
                assert_eq!(m.bytes.len(), x.bytes.len());
                assert_eq!(word(&x.bytes, m.offset), m.was);
                let diff: Vec<usize> = (0..x.bytes.len())
                    .filter(|&i| x.bytes[i] != m.bytes[i])
                    .collect();
                assert!(!diff.is_empty());
                assert!(diff.iter().all(|&i| i / 4 == m.offset / 4), "{m:?}");
                let new = word(&m.bytes, m.offset);
                match m.kind {
                    MutationKind::Bool2 => assert_eq!((m.was, new), (1, 2)),
                    MutationKind::OverBound => assert!(new == 3 + 1 || new == 2 + 1),
                    MutationKind::UndeclaredEnum => assert!(![1, 2].contains(&new)),
                    MutationKind::UnlistedDiscriminant => assert_ne!(new, 1),
                }
            }
        }
    }
    assert_eq!(kinds.len(), 4, "every kind of mutation: {kinds:?}");
}

#[test]
fn values_stay_in_their_bounds_and_cover_the_choices() {
    let s = Schema::parse(SRC, "t.x").unwrap();
    let mut rng = Rng::new(3);
    let mut lens = std::collections::BTreeSet::new();
    let mut enum_values = std::collections::BTreeSet::new();
    let mut w_arms = std::collections::BTreeSet::new();
    let mut longest_list = 0;
    for _ in 0..500 {
        let n = s.sample("name", &mut rng).unwrap().bytes;
        let len = word(&n, 0);
        assert!(len <= 3);
        assert!(std::str::from_utf8(&n[4..4 + len as usize]).is_ok());
        assert!(!n[4..4 + len as usize].contains(&0), "no NUL in a string");
        lens.insert(len);
        enum_values.insert(word(&s.sample("e", &mut rng).unwrap().bytes, 0));
        let w = s.sample("w", &mut rng).unwrap().bytes;
        w_arms.insert(if word(&w, 0) == 1 { "case" } else { "default" });
        if word(&w, 0) != 1 {
            assert_eq!(w.len(), 12);
        }
        let list = s.sample("node", &mut rng).unwrap().bytes;
        longest_list = longest_list.max(list.len() / 8);
    }
    assert_eq!(lens.len(), 4, "lengths 0 to 3: {lens:?}");
    assert_eq!(enum_values, [1, 2].into(), "declared values only");
    assert_eq!(w_arms.len(), 2);
    assert!(longest_list >= 4, "{longest_list}");
    assert!(longest_list <= 12, "recursion is limited: {longest_list}");
}

#[test]
fn the_drivers_name_every_type() {
    let s = Schema::parse(SRC, "t.x").unwrap();
    let c = s.c_driver("t.h");
    assert!(c.contains("#include \"t.h\""));
    for ty in s.types() {
        assert!(
            c.contains(&format!(
                "{{ \"{ty}\", (xd_proc) xdr_{ty}, sizeof ({ty}) }},"
            )),
            "{ty}"
        );
    }
    let r = s.rust_dispatch("crate::t");
    assert!(r.contains("use crate::t as x;"));
    assert!(r.contains("\"name\" => done(bytes, x::name_from_xdr, x::check_name, x::name_to_xdr),"));
    assert!(
        r.contains("\"all\" => done(bytes, x::All::from_xdr, x::All::xdr_check, x::All::to_xdr),")
    );
}

#[test]
fn the_judge_reports_disagreements_with_the_type_and_the_hex() {
    let cases = "valid t 00000001\n\
                 over-bound@0 t 00000009\n\
                 undeclared-enum@0 e 00000007\n\
                 bool-2@4 b 0000000000000002\n\
                 bool-2@0 b 00000002\n";
    let rust = "ok 00000001\nerr too long\nerr bad\nerr bad bool\nerr bad bool\n";
    let c = "ok 00000001\nerr x\nok 00000007\nok 0000000000000001\nok 00000002\n";
    let v = judge(cases, rust, c);
    assert!(v.agrees(), "{v}");
    assert_eq!((v.valid, v.valid_same), (1, 1));
    let b = &v.mutations[&MutationKind::Bool2];
    assert_eq!(
        (b.cases, b.rust_refused, b.c_normalised, b.c_same),
        (2, 2, 1, 1)
    );

    // A valid value one side re-encodes differently; an over-bound
    // length libtirpc takes; a panic; a missing line.
    let v = judge(
        "valid t 00000001\nover-bound@0 t 00000009\nvalid t 00000002\nvalid t 00000003\n",
        "ok 00000001\nerr x\npanic boom\n",
        "ok 00000000\nok 00000009\nok 00000002\nok 00000003\n",
    );
    assert_eq!(v.disagreements.len(), 4, "{v}");
    assert!(v.disagreements[0].contains("case 1 (valid) of type `t`"));
    assert!(v.disagreements[0].contains("rpcgen's C accepted it but encoded 00000000"));
    assert!(v.disagreements[0].contains("input 00000001"));
    assert!(v.disagreements[1].contains("must be refused by both"));
    assert!(v.disagreements[2].contains("PANICKED"));
    assert!(v.disagreements[3].contains("the driver stopped"));
    assert!(v
        .to_string()
        .contains("DISAGREEMENT case 2 (over-bound@0) of type `t`"));
}

/// For rpcgen, which refuses nested definitions, the types are printed
/// back with them made top-level: the same types, the same encodings.
#[test]
fn flattening_keeps_every_type_and_encoding() {
    let src = "
        enum big { LOW = 1, HIGH = 0x80000000, ALSO_LOW = 1 };
        typedef struct lnode *llist;
        struct lnode { string s<>; llist next; };
        struct outer {
            struct { int x; string s<4>; } inner;
            enum { N_ONE = 1, N_TWO = 2 } kind;
            union switch (bool d) { case TRUE: struct { hyper h; } deep; case FALSE: void; } choice;
            big b;
        };
        union u switch (int d) { case -2147483648: void; case 7: outer o; default: llist l; };
    ";
    let s = Schema::parse(src, "n.x").unwrap();
    assert_eq!(
        s.nested_types(),
        [
            "outer.inner",
            "outer.kind",
            "outer.choice",
            "outer.choice.deep"
        ]
    );
    let flat = s.flattened();
    for want in [
        "struct outer_choice_deep {\n    hyper h;\n};\n\nunion outer_choice switch (bool d) {\ncase TRUE:\n    outer_choice_deep deep;\ncase FALSE:\n    void;\n};\n\nstruct outer {",
        "    HIGH = 0x80000000,\n    ALSO_LOW = 1\n",
        "typedef struct lnode *llist;",
        "case -2147483648:\n    void;",
    ] {
        assert!(flat.contains(want), "missing {want:?} in\n{flat}");
    }
    let f = Schema::parse(&flat, "flat.x").unwrap();
    assert!(f.nested_types().is_empty());
    let mut types = s.types();
    types.extend(
        [
            "outer_inner",
            "outer_kind",
            "outer_choice",
            "outer_choice_deep",
        ]
        .map(String::from),
    );
    let mut ft = f.types();
    ft.sort();
    types.sort();
    assert_eq!(ft, types);
    for ty in s.types() {
        let (mut a, mut b) = (Rng::new(5), Rng::new(5));
        for _ in 0..50 {
            assert_eq!(s.sample(&ty, &mut a), f.sample(&ty, &mut b), "{ty}");
        }
    }
}

/// A type whose smallest encoding is gigabytes has no sample; choices
/// that would lead to such an item are not taken.
#[test]
fn huge_items_are_never_built() {
    let s = Schema::parse(
        "struct huge { hyper h[1000000000]; };\n\
         union u switch (int d) { case 1: huge x; case 2: void; default: opaque o[4000000000]; };\n\
         struct s { huge *p; huge v<>; u un; };\n\
         program P { version V { struct { int x; } F(void) = 1; } = 1; } = 1;",
        "h.x",
    )
    .unwrap();
    let mut rng = Rng::new(1);
    assert!(s.sample("huge", &mut rng).is_none());
    for _ in 0..100 {
        let x = s.sample("s", &mut rng).unwrap();
        // p absent, v empty, un the void arm.
        assert_eq!(x.bytes, [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2]);
        assert!(s.sample("u", &mut rng).unwrap().bytes.len() == 4);
    }
    // A type defined in a procedure's signature is printed too.
    let flat = s.flattened();
    assert!(
        flat.contains("struct V_F_result {\n    int x;\n};"),
        "{flat}"
    );
    Schema::parse(&flat, "flat.x").unwrap();
}
