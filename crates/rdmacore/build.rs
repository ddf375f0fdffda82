//! Builds the C shim (static-inline verbs calls, struct conversions) and
//! links libibverbs and librdmacm, only with the `rdma-core` feature.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=csrc/shim.c");
    #[cfg(feature = "rdma-core")]
    build_shim();
}

#[cfg(feature = "rdma-core")]
fn build_shim() {
    for header in [
        "/usr/include/infiniband/verbs.h",
        "/usr/include/rdma/rdma_cma.h",
    ] {
        if !std::path::Path::new(header).exists() && std::env::var_os("RDMACORE_INCLUDE").is_none()
        {
            println!(
                "cargo:warning={header} not found: the rdma-core feature needs the rdma-core \
                 development headers (Debian/Ubuntu: apt-get install libibverbs-dev librdmacm-dev; \
                 Fedora: dnf install rdma-core-devel); set RDMACORE_INCLUDE for another prefix"
            );
        }
    }
    let mut build = cc::Build::new();
    build
        .file("csrc/shim.c")
        .warnings(true)
        .extra_warnings(true);
    if let Some(inc) = std::env::var_os("RDMACORE_INCLUDE") {
        build.include(inc);
    }
    build.compile("rpcrdma_rdmacore_shim");
    println!("cargo:rustc-link-lib=ibverbs");
    println!("cargo:rustc-link-lib=rdmacm");
}
