//! Generates the NFSv4.1/4.2 codecs, stubs, server traits and call hints
//! from the RFC 5662/7863 definitions `rpcrdma-xdrgen` ships
//! (`rpcrdma_xdrgen::definitions::NFS4`, its `nfs4.x`; file names, link
//! texts, owners and other strings as raw bytes: they need not be UTF-8).

fn main() {
    // The definitions come with the generator: a change to them rebuilds
    // it, and so reruns this script.
    println!("cargo:rerun-if-changed=build.rs");
    rpcrdma_xdrgen::Builder::from_source("nfs4.x", rpcrdma_xdrgen::definitions::NFS4)
        .strings_as_bytes(true)
        .generate_to_out_dir()
        .unwrap_or_else(|e| panic!("{e}"));
}
