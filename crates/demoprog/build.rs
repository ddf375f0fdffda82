//! Generates the demo program's types, codecs, stubs and Upper-Layer
//! Binding from `demo.x` (rpcrdma-xdrgen).

fn main() {
    rpcrdma_xdrgen::Builder::new("demo.x")
        .generate_to_out_dir()
        .unwrap_or_else(|e| panic!("{e}"));
}
