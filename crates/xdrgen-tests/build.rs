//! Generates the test programs: NFSv3 and MOUNT v3 (`../xdrgen/xdr`) and
//! `xdr/all.x` and `xdr/nested.x`, which use every construct of the RPC
//! language.

fn main() {
    for x in [
        "../xdrgen/xdr/nfs3.x",
        "../xdrgen/xdr/mount3.x",
        "xdr/all.x",
        "xdr/nested.x",
        "xdr/zoo.x",
        "xdr/odd.x",
        "xdr/chain.x",
        "xdr/stress.x",
        "xdr/names.x",
        "xdr/prelude.x",
    ] {
        rpcrdma_xdrgen::Builder::new(x)
            .generate_to_out_dir()
            .unwrap_or_else(|e| panic!("{e}"));
    }
    // The same NFS definitions with strings as raw bytes (file names).
    rpcrdma_xdrgen::Builder::new("../xdrgen/xdr/nfs3.x")
        .strings_as_bytes(true)
        .out_file_name("nfs3_bytes.rs")
        .generate_to_out_dir()
        .unwrap_or_else(|e| panic!("{e}"));
}
