//! Fuzz target `wire_v1`: RPC-over-RDMA messages under the default (v1+v2), Version One-only and Version Two-only configurations: decode, re-encode, compare; error replies must decode.
fn main() {
    afl::fuzz!(|data: &[u8]| {
        rpcrdma_wire::fuzzing::decode_roundtrip(data);
    });
}
