//! Generates the NFSv3 and MOUNT v3 codecs, stubs, server traits and call
//! hints from the RFC 1813 definitions `rpcrdma-xdrgen` ships
//! (`rpcrdma_xdrgen::definitions`; file names and paths as raw bytes:
//! they need not be UTF-8).

fn main() {
    // The definitions come with the generator: a change to them rebuilds
    // it, and so reruns this script.
    println!("cargo:rerun-if-changed=build.rs");
    for (name, source) in [
        ("nfs3.x", rpcrdma_xdrgen::definitions::NFS3),
        ("mount3.x", rpcrdma_xdrgen::definitions::MOUNT3),
    ] {
        rpcrdma_xdrgen::Builder::from_source(name, source)
            .strings_as_bytes(true)
            .generate_to_out_dir()
            .unwrap_or_else(|e| panic!("{e}"));
    }
}
