//! Fuzz target `decode_cli`: the `rpcrdma decode` path: decode, render as text and JSON, parse the JSON back.
fn main() {
    afl::fuzz!(|data: &[u8]| {
        rpcrdma_cli::fuzzing::report_roundtrip(data);
    });
}
