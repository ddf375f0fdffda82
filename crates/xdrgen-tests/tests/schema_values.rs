//! Every type of every `.x` file in the tree, driven by the schema-driven
//! generator (`rpcrdma_xdrgen::difftest`, the generator of the rpcgen
//! differential, here without rpcgen): random valid encodings decode,
//! check, re-encode to exactly the same bytes and decode again to the
//! same value (bytes -> value -> bytes -> value), and every invalid
//! mutation of them (a length over its bound, an unlisted discriminant,
//! an undeclared enum value, a bool of 2) is refused. NFSv3 and MOUNT v3
//! too, with strings as `String` and as bytes. Seed:
//! `XDRGEN_SCHEMA_SEED` (default 1); values per type:
//! `XDRGEN_SCHEMA_VALUES` (default 60).

use bytes::Bytes;
use rpcrdma_xdrgen::difftest::{Rng, Schema};

macro_rules! dispatch {
    ($($m:ident => $file:literal),* $(,)?) => {
        $(mod $m {
            include!(concat!(env!("OUT_DIR"), "/", stringify!($m), "_dispatch.rs"));
        })*
        /// (module, its .x file, its dispatch)
        type Roundtrip = fn(&str, &Bytes) -> Option<Result<Bytes, String>>;
        const FILES: &[(&str, &str, Roundtrip)] = &[
            $((stringify!($m), $file, $m::roundtrip)),*
        ];
    };
}

dispatch! {
    all => "xdr/all.x",
    nested => "xdr/nested.x",
    zoo => "xdr/zoo.x",
    odd => "xdr/odd.x",
    chain => "xdr/chain.x",
    stress => "xdr/stress.x",
    names => "xdr/names.x",
    prelude => "xdr/prelude.x",
    every => "xdr/every-construct.x",
    nfs3 => "../xdrgen/xdr/nfs3.x",
    nfs3_bytes => "../xdrgen/xdr/nfs3.x",
    mount3 => "../xdrgen/xdr/mount3.x",
}

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

#[test]
fn every_type_round_trips_and_refuses_every_invalid_mutation() {
    let seed = env_u64("XDRGEN_SCHEMA_SEED", 1);
    let values = env_u64("XDRGEN_SCHEMA_VALUES", 60);
    let mut failures = Vec::new();
    let mut counted = (0usize, 0usize, 0usize);
    for (module, file, roundtrip) in FILES {
        let path = format!("{}/{file}", env!("CARGO_MANIFEST_DIR"));
        let schema = Schema::load(&path).unwrap();
        let mut rng = Rng::new(seed);
        for ty in schema.types() {
            counted.0 += 1;
            for _ in 0..values {
                let s = schema.sample(&ty, &mut rng).unwrap();
                let input = Bytes::from(s.bytes.clone());
                match roundtrip(&ty, &input) {
                    Some(Ok(out)) if out == input => counted.1 += 1,
                    other => failures.push(format!(
                        "{module}::{ty}: valid {} gave {other:?}",
                        hex::encode(&input)
                    )),
                }
                for m in &s.mutations {
                    counted.2 += 1;
                    let bad = Bytes::from(m.bytes.clone());
                    if !matches!(roundtrip(&ty, &bad), Some(Err(_))) {
                        failures.push(format!(
                            "{module}::{ty}: {} at {} accepted: {}",
                            m.kind.name(),
                            m.offset,
                            hex::encode(&bad)
                        ));
                    }
                }
            }
        }
        assert!(roundtrip("no such type", &Bytes::new()).is_none());
    }
    assert!(
        failures.is_empty(),
        "{} failures (seed {seed}), the first:\n{}",
        failures.len(),
        failures[..failures.len().min(10)].join("\n")
    );
    // 12 files, 300 types: a type lost from the list would show here.
    assert!(counted.0 >= 300, "{counted:?}");
    assert!(counted.1 >= counted.0 * values as usize);
    assert!(counted.2 > counted.1, "{counted:?}");
}
