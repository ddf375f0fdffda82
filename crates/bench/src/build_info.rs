//! How the binary running the bench was built (said in the reports).

/// Whether this binary was built with the profile-guided optimization
/// profile (`scripts/rustc-pgo` sets `--cfg rpcrdma_pgo` when it applies
/// it; docs/performance.md, "Profile-guided optimization").
pub const PGO_BUILD: bool = cfg!(rpcrdma_pgo);

/// The report's line on how the binary was built.
pub fn pgo_line() -> &'static str {
    if PGO_BUILD {
        "build: optimized with the PGO profile (pgo/; RPCRDMA_PGO=off builds without it)"
    } else {
        "build: without the PGO profile (a debug build, RPCRDMA_PGO=off, or a toolchain whose LLVM cannot read pgo/)"
    }
}
