//! Generates the BULK program's types, codecs, client and server from
//! `bulk.x` with the facade's code generator: the code names only the
//! `rpcrdma` crate.

fn main() {
    rpcrdma::codegen::builder("bulk.x")
        .generate_to_out_dir()
        .unwrap_or_else(|e| panic!("{e}"));
}
