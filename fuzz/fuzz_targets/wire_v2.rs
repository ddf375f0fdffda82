//! Fuzz target `wire_v2`: Version Two messages, also with the message's own RDMA2_OPTIONAL type registered.
fn main() {
    afl::fuzz!(|data: &[u8]| {
        rpcrdma_wire::fuzzing::decode_v2_roundtrip(data);
    });
}
