//! A bounded, deterministic run of the `xdrgen` fuzz harness
//! (`fuzz/fuzz_targets/xdrgen.rs`): every prefix of the project's `.x`
//! files, and mutations of them (bytes flipped, inserted, deleted; tokens
//! spliced in), with a fixed seed.

use rpcrdma_testkit::rng::XorShift;
use rpcrdma_xdrgen::fuzzing::generate_any;

fn seeds() -> Vec<Vec<u8>> {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../fuzz/seeds/xdrgen");
    let mut v: Vec<Vec<u8>> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{dir}: {e}"))
        .map(|e| std::fs::read(e.unwrap().path()).unwrap())
        .collect();
    v.sort();
    assert!(v.len() >= 4, "seed corpus in {dir}");
    v
}

const TOKENS: &[&str] = &[
    "struct",
    "union",
    "switch",
    "case",
    "default",
    ":",
    ";",
    "{",
    "}",
    "<",
    ">",
    "[",
    "]",
    "*",
    "void",
    "opaque",
    "string",
    "typedef",
    "enum",
    "=",
    "-",
    "0x",
    "program",
    "version",
    "(",
    ")",
    "/* @ddp */",
    "/* @ddp(args.count) */",
    "/* @max_results(size(args)) */",
    "/*",
    "*/",
    "%",
    "\n#ifdef X\n",
    "quadruple",
    "bool",
    "TRUE",
    "4294967296",
    "-2147483649",
    "self",
];

#[test]
fn every_prefix_of_the_seed_files() {
    for s in seeds() {
        // Prefixes at every token-ish boundary (every 29th byte keeps it fast).
        for end in (0..s.len()).step_by(29) {
            generate_any(&s[..end]);
        }
    }
}

#[test]
fn bounded_fuzz_run() {
    let seeds = seeds();
    let mut rng = XorShift::new(0x5eed_1dea_2024_0011);
    for _ in 800..1600 {
        let mut d = seeds[rng.below(seeds.len())].clone();
        for _ in 0..1 + rng.below(6) {
            let at = rng.below(d.len() + 1);
            match rng.below(5) {
                0 if at < d.len() => d[at] = rng.next_u64() as u8,
                1 if at < d.len() => {
                    let n = rng.below(40).min(d.len() - at);
                    d.drain(at..at + n);
                }
                2 => {
                    let t = TOKENS[rng.below(TOKENS.len())];
                    d.splice(at..at, t.bytes().chain([b' ']));
                }
                3 if at < d.len() => {
                    // Duplicate a slice (repeats definitions and members).
                    let n = rng.below(200).min(d.len() - at);
                    let piece = d[at..at + n].to_vec();
                    let to = rng.below(d.len() + 1);
                    d.splice(to..to, piece);
                }
                _ => d.insert(at, b"{}<>;*:=,"[rng.below(9)]),
            }
        }
        generate_any(&d);
    }
}

#[test]
fn deep_nesting_does_not_overflow_the_parser() {
    // Nested definitions recurse in the parser: beyond 32 levels they are
    // refused with a diagnostic.
    let mut s = String::new();
    for _ in 0..200 {
        s.push_str("struct { ");
    }
    s.push_str("int x; ");
    for _ in 0..200 {
        s.push_str("} m; ");
    }
    let source = format!("struct top {{ {s} }};");
    generate_any(source.as_bytes());
    let err = rpcrdma_xdrgen::generate(&source, "deep.x", &Default::default())
        .expect_err("200 levels of nesting are refused");
    assert!(
        err.diagnostics()
            .iter()
            .any(|d| d.message.contains("nested more than 32 deep")),
        "{err}"
    );
    // 32 levels are fine.
    let mut s = String::new();
    for _ in 0..31 {
        s.push_str("struct { ");
    }
    s.push_str("int x; ");
    for _ in 0..31 {
        s.push_str("} m; ");
    }
    let source = format!("struct top {{ {s} }};");
    rpcrdma_xdrgen::generate(&source, "deep.x", &Default::default())
        .unwrap_or_else(|e| panic!("32 levels: {e}"));
}

#[test]
fn long_typedef_chains_do_not_overflow_the_generator() {
    let mut s = String::from("typedef opaque t0<8>;\n");
    for i in 1..1000 {
        s.push_str(&format!("typedef t{} t{i};\n", i - 1));
    }
    s.push_str("struct s { t999 x; };\nprogram P { version V { s F(t999) = 1; } = 1; } = 1;\n");
    generate_any(s.as_bytes());
    let e = rpcrdma_xdrgen::check(
        &format!(
            "struct top {{ {} int x; {} }};",
            "struct { ".repeat(40),
            "} m; ".repeat(40)
        ),
        "n.x",
    )
    .unwrap_err();
    assert!(e.to_string().contains("nested more than 32 deep"), "{e}");
}
