//! Generates the NFSv4.1/4.2 codecs, stubs, server traits and call hints
//! from the RFC 5662/7863 definitions of `rpcrdma-xdrgen` (`nfs4.x`; file
//! names, link texts, owners and other strings as raw bytes: they need
//! not be UTF-8).

fn main() {
    let x = "../xdrgen/xdr/nfs4.x";
    println!("cargo:rerun-if-changed={x}");
    rpcrdma_xdrgen::Builder::new(x)
        .strings_as_bytes(true)
        .generate_to_out_dir()
        .unwrap_or_else(|e| panic!("{e}"));
}
