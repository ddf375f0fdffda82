//! Generates the test programs: NFSv3 and MOUNT v3 (`../xdrgen/xdr`) and
//! the files of `xdr/` (`all.x`, `nested.x` and `every-construct.x` use
//! every construct of the RPC language), and for each a dispatch by type
//! name over its generated code (`rpcrdma_xdrgen::difftest`), which
//! `tests/schema_values.rs` and `tests/golden_every.rs` drive with random
//! values made from the same definitions.

fn main() {
    let out = std::path::PathBuf::from(std::env::var_os("OUT_DIR").expect("OUT_DIR"));
    // The .x file, the generated file's stem, the module of src/lib.rs.
    for (x, stem, module) in [
        ("../xdrgen/xdr/nfs3.x", "nfs3", "nfs3"),
        ("../xdrgen/xdr/mount3.x", "mount3", "mount3"),
        ("xdr/all.x", "all", "all"),
        ("xdr/nested.x", "nested", "nested"),
        ("xdr/zoo.x", "zoo", "zoo"),
        ("xdr/odd.x", "odd", "odd"),
        ("xdr/chain.x", "chain", "chain"),
        ("xdr/stress.x", "stress", "stress"),
        ("xdr/names.x", "names", "names"),
        ("xdr/prelude.x", "prelude", "prelude_names"),
        ("xdr/every-construct.x", "every", "every"),
    ] {
        rpcrdma_xdrgen::Builder::new(x)
            .out_file_name(format!("{stem}.rs"))
            .generate_to_out_dir()
            .unwrap_or_else(|e| panic!("{e}"));
        let schema = rpcrdma_xdrgen::difftest::Schema::load(x).unwrap_or_else(|e| panic!("{e}"));
        let dispatch = schema.rust_dispatch(&format!("rpcrdma_xdrgen_tests::{module}"));
        std::fs::write(out.join(format!("{stem}_dispatch.rs")), dispatch)
            .unwrap_or_else(|e| panic!("{stem}_dispatch.rs: {e}"));
    }
    // The same NFS definitions with strings as raw bytes (file names).
    rpcrdma_xdrgen::Builder::new("../xdrgen/xdr/nfs3.x")
        .strings_as_bytes(true)
        .out_file_name("nfs3_bytes.rs")
        .generate_to_out_dir()
        .unwrap_or_else(|e| panic!("{e}"));
    let schema = rpcrdma_xdrgen::difftest::Schema::load("../xdrgen/xdr/nfs3.x")
        .unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(
        out.join("nfs3_bytes_dispatch.rs"),
        schema.rust_dispatch("rpcrdma_xdrgen_tests::nfs3_bytes"),
    )
    .unwrap_or_else(|e| panic!("nfs3_bytes_dispatch.rs: {e}"));
}
