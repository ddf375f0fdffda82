//! The schema-driven differential against rpcgen (feature `difftest`;
//! test support, not part of the generator's API): random *valid* XDR
//! encodings of every type of a `.x` file, made from the checked
//! definitions, the invalid mutations both implementations must refuse,
//! a C driver that decodes and re-encodes them with rpcgen's `xdr_<type>`
//! functions and libtirpc, the Rust dispatch that does the same with the
//! generated code, and the judge that compares the two
//! (`scripts/xdrgen-rpcgen-diff.sh FILE.x`, the `xdrgen-difftool` binary,
//! docs/xdrgen.md "The generic differential").
//!
//! ```
//! use rpcrdma_xdrgen::difftest::{Rng, Schema};
//! let s = Schema::parse("struct p { int x; string s<4>; };", "p.x")?;
//! assert_eq!(s.types(), ["p"]);
//! let v = s.sample("p", &mut Rng::new(1)).unwrap();
//! assert!(v.bytes.len() >= 8 && v.bytes.len() % 4 == 0);
//! // The string's length word made 5: longer than its bound.
//! assert!(v.mutations.iter().any(|m| m.kind == rpcrdma_xdrgen::difftest::MutationKind::OverBound));
//! # Ok::<(), rpcrdma_xdrgen::Error>(())
//! ```

mod drivers;
mod flatten;
mod judge;
mod schema;
mod values;

pub use judge::{judge, Verdict};
pub use schema::Schema;

/// A reproducible random generator (SplitMix64): the same seed gives the
/// same values on every machine.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator from `seed`.
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number below `n` (0 when `n` is 0).
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            0
        } else {
            self.next_u64() % n
        }
    }

    /// True with probability `num / den`.
    pub fn chance(&mut self, num: u64, den: u64) -> bool {
        self.below(den) < num
    }
}

/// What an invalid mutation of a valid encoding breaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum MutationKind {
    /// A variable-length opaque, string or array's length word one more
    /// than its declared maximum: both must refuse it.
    OverBound,
    /// A union's discriminant that no case lists, in a union without a
    /// default arm: both must refuse it.
    UnlistedDiscriminant,
    /// An enum value that is no item of the enum (not as a union's
    /// discriminant): RFC 4506 §4.3 makes it an error; we refuse it,
    /// libtirpc's `xdr_enum` takes any int (spec-notes G1).
    UndeclaredEnum,
    /// A `bool` (also optional data's presence word, or a bool
    /// discriminant) of TRUE made 2: we refuse it, libtirpc's `xdr_bool`
    /// takes it as TRUE and sends 1 back, and rpcgen's C, where it reads
    /// a run of simple struct members with `IXDR_GET_BOOL`, keeps the 2
    /// (spec-notes G2).
    Bool2,
}

impl MutationKind {
    /// Every kind.
    pub const ALL: [MutationKind; 4] = [
        MutationKind::OverBound,
        MutationKind::UnlistedDiscriminant,
        MutationKind::UndeclaredEnum,
        MutationKind::Bool2,
    ];

    /// Its name in a cases file.
    pub fn name(self) -> &'static str {
        match self {
            MutationKind::OverBound => "over-bound",
            MutationKind::UnlistedDiscriminant => "unlisted-discriminant",
            MutationKind::UndeclaredEnum => "undeclared-enum",
            MutationKind::Bool2 => "bool-2",
        }
    }

    /// The kind of a cases-file name.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.name() == name)
    }
}

/// One invalid encoding: a valid one with one 4-byte word replaced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mutation {
    /// What the new word breaks.
    pub kind: MutationKind,
    /// Where the word is.
    pub offset: usize,
    /// The word's value in the valid encoding.
    pub was: u32,
    /// The whole invalid encoding.
    pub bytes: Vec<u8>,
}

/// A random valid encoding of a type, and its invalid mutations.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sample {
    /// The valid encoding.
    pub bytes: Vec<u8>,
    /// One mutation per place a word can be made invalid.
    pub mutations: Vec<Mutation>,
}

impl Schema {
    /// A random valid encoding of the top-level type `xdr`, with every
    /// invalid mutation of it; `None` for an unknown name, or a type whose
    /// smallest encoding exceeds 1 MiB (a fixed array of a billion
    /// items).
    pub fn sample(&self, xdr: &str, rng: &mut Rng) -> Option<Sample> {
        let id = self.find(xdr)?;
        if self.model.types[id].min_size > values::MAX_ITEM {
            return None;
        }
        Some(values::sample(&self.model, id, rng))
    }

    /// A C program that reads cases (`KIND TYPE HEX` lines) on standard
    /// input and, for each, decodes the bytes with rpcgen's
    /// `xdr_<TYPE>` (XDR_DECODE on an xdrmem stream), encodes the value
    /// again (XDR_ENCODE) and prints `ok HEX` — or `err WHY` when
    /// decoding fails or leaves bytes over. `header` is the header rpcgen
    /// wrote (`rpcgen -h`), included by name.
    pub fn c_driver(&self, header: &str) -> String {
        drivers::c_driver(self, header)
    }

    /// The types printed back as an RPC language file rpcgen takes:
    /// definitions nested in declarations (which rpcgen refuses) made
    /// top-level as `outer_member` just before the type they were nested
    /// in, values as numbers, then the programs; no constants. The
    /// encodings of the top-level types are unchanged.
    pub fn flattened(&self) -> String {
        flatten::flattened(self)
    }

    /// Rust source of a function
    /// `pub(crate) fn roundtrip(ty: &str, bytes: &Bytes) -> Option<Result<Bytes, String>>`
    /// that decodes `bytes` as the type named `ty` with the code
    /// generated from this file (in the module at `module`, e.g.
    /// `crate::nfs3`), checks the value (`xdr_check`) and encodes it
    /// again; `None` for a name the file does not define.
    pub fn rust_dispatch(&self, module: &str) -> String {
        drivers::rust_dispatch(self, module)
    }
}

/// The differential's invariants on any `.x` source that generates (the
/// `xdrgen` fuzz target runs it when both features are on): the
/// flattened copy reads back with the same types and gives the same
/// values, and sampling and the drivers' text never panic.
#[cfg(feature = "fuzzing")]
pub(crate) fn fuzz_check(source: &str) {
    let s = Schema::parse(source, "fuzz.x").expect("a source that generates checks");
    let flat = s.flattened();
    let f = Schema::parse(&flat, "flat.x")
        .unwrap_or_else(|e| panic!("the flattened copy does not read back: {e}\n{flat}"));
    let (mut a, mut b) = (Rng::new(1), Rng::new(1));
    for ty in s.types().iter().take(24) {
        let x = s.sample(ty, &mut a);
        assert_eq!(
            x,
            f.sample(ty, &mut b),
            "`{ty}` flattened samples differently"
        );
        if let Some(x) = x {
            assert_eq!(x.bytes.len() % 4, 0);
            assert!(x.mutations.iter().all(|m| m.bytes.len() == x.bytes.len()));
        }
    }
    assert!(!s.c_driver("fuzz.h").is_empty());
    assert!(!s.rust_dispatch("crate::x").is_empty());
}
