//! Fuzz target `private_data`: RFC 8797 private data search, decode, re-encode and threshold derivation.
fn main() {
    afl::fuzz!(|data: &[u8]| {
        rpcrdma_wire::fuzzing::private_data_roundtrip(data);
    });
}
