//! Fuzz target `nfs3_args`: NFSv3 and MOUNT v3 arguments (and the largest
//! results) decoded the server's way and re-encoded.
fn main() {
    afl::fuzz!(|data: &[u8]| {
        rpcrdma_nfs3::fuzzing::args_roundtrip(data);
    });
}
