//! Hostile input for the generated decoders of `zoo.x`, `odd.x` and
//! `chain.x`: rpcgen's golden vectors with bits flipped, words replaced by
//! extreme values and ends cut off. Decoding must fail with an error or
//! give a value whose encoding decodes and encodes to the same bytes — never panic,
//! never allocate beyond what the input could fill.

#[allow(unused_macros, unused_imports)]
mod common;

use bytes::Bytes;
use rpcrdma_oncrpc::{Marshal, Unmarshal};
use rpcrdma_xdr::{Decoder, Encoder};
use rpcrdma_xdrgen_tests::{chain, odd, zoo};

use common::golden;

/// A small deterministic generator (xorshift64*).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

fn mutate(rng: &mut Rng, v: &[u8]) -> Vec<u8> {
    let mut m = v.to_vec();
    for _ in 0..1 + rng.below(3) {
        match rng.below(4) {
            0 if !m.is_empty() => {
                let i = rng.below(m.len());
                m[i] ^= 1 << rng.below(8);
            }
            1 if m.len() >= 4 => {
                let i = rng.below(m.len() / 4) * 4;
                let w: u32 = [0, 1, 2, 3, 0x7fff_ffff, 0x8000_0000, u32::MAX, 64, 65][rng.below(9)];
                m[i..i + 4].copy_from_slice(&w.to_be_bytes());
            }
            2 => {
                let n = rng.below(m.len() + 1);
                m.truncate(n);
            }
            _ => {
                let i = rng.below(m.len() + 1) / 4 * 4;
                m.splice(i..i, [0, 0, 0, 1]);
            }
        }
    }
    m
}

fn hammer<T: Unmarshal + Marshal>(name: &str, v: &[u8], rng: &mut Rng) {
    for _ in 0..1500 {
        let input = Bytes::from(mutate(rng, v));
        let mut dec = Decoder::from_bytes(&input);
        let Ok(value) = T::unmarshal(&mut dec) else {
            continue;
        };
        let mut buf = bytes::BytesMut::new();
        value.marshal(&mut Encoder::new(&mut buf));
        let again = Bytes::from(buf);
        let back = T::unmarshal(&mut Decoder::from_bytes(&again)).unwrap_or_else(|e| {
            panic!("{name}: a decoded value does not decode after encoding: {e}")
        });
        // Bytes, not values: a flipped bit may make a float NaN.
        let mut buf = bytes::BytesMut::new();
        back.marshal(&mut Encoder::new(&mut buf));
        assert_eq!(buf.freeze(), again, "{name}");
    }
}

#[test]
fn mutated_rpcgen_vectors_never_panic() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let z = golden("XDRGEN_C_ZOO_VECTORS", include_str!("golden/zoo.txt"));
    for (name, v) in &z {
        match name.as_str() {
            n if n.starts_with("pen") => hammer::<zoo::Pen>(n, v, &mut rng),
            n if n.starts_with("feeding_") && !n.starts_with("feeding_t") => {
                hammer::<zoo::Feeding>(n, v, &mut rng)
            }
            n if n.starts_with("byint") => hammer::<zoo::Byint>(n, v, &mut rng),
            n if n.starts_with("byuint") => hammer::<zoo::Byuint>(n, v, &mut rng),
            n if n.starts_with("bybool") => hammer::<zoo::Bybool>(n, v, &mut rng),
            n if n.starts_with("arrays_of") => hammer::<zoo::ArraysOf>(n, v, &mut rng),
            n if n.starts_with("visitor_3") => hammer::<zoo::Visitor>(n, v, &mut rng),
            _ => {}
        }
    }
    let o = golden("XDRGEN_C_ODD_VECTORS", include_str!("golden/odd.txt"));
    for (name, v) in &o {
        match name.as_str() {
            "move" => hammer::<odd::Move>(name, v, &mut rng),
            n if n.starts_with("self_") => hammer::<odd::Self_>(n, v, &mut rng),
            "type" => hammer::<odd::Type>(name, v, &mut rng),
            _ => {}
        }
    }
    let c = golden("XDRGEN_C_CHAIN_VECTORS", include_str!("golden/chain.txt"));
    for (name, v) in &c {
        match name.as_str() {
            n if n.starts_with("fnode") => hammer::<chain::Fnode>(n, v, &mut rng),
            n if n.starts_with("vlist") => hammer::<chain::Vlist>(n, v, &mut rng),
            n if n.starts_with("item") => hammer::<chain::Item>(n, v, &mut rng),
            n if n.starts_with("holder") => hammer::<chain::Holder>(n, v, &mut rng),
            n if n.starts_with("ping") => hammer::<chain::Ping>(n, v, &mut rng),
            _ => {}
        }
    }
}
