//! Fuzz target `engine`: hostile RPC-over-RDMA messages injected into both
//! ends of a connected pair of engines over the in-memory fabric (calls,
//! replies, chunk lists, errors, versions, options), among a legitimate
//! chunked call. Fails if anything panics, leaks a registration or
//! completes a call twice (`rpcrdma_engine::testing::fuzz_pair`).
fn main() {
    afl::fuzz!(|data: &[u8]| {
        rpcrdma_engine::testing::fuzz_pair(data);
    });
}
