//! Generates the NFSv3 and MOUNT v3 codecs, stubs, server traits and call
//! hints from the RFC 1813 definitions of `rpcrdma-xdrgen` (file names and
//! paths as raw bytes: they need not be UTF-8).

fn main() {
    for x in ["../xdrgen/xdr/nfs3.x", "../xdrgen/xdr/mount3.x"] {
        println!("cargo:rerun-if-changed={x}");
        rpcrdma_xdrgen::Builder::new(x)
            .strings_as_bytes(true)
            .generate_to_out_dir()
            .unwrap_or_else(|e| panic!("{e}"));
    }
}
