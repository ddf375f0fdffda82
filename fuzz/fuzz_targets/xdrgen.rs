//! Fuzz target `xdrgen`: the RPC language parser, type checker and generator
//! on arbitrary `.x` input (code or located diagnostics, never a panic).
fn main() {
    afl::fuzz!(|data: &[u8]| {
        rpcrdma_xdrgen::fuzzing::generate_any(data);
    });
}
