//! The library half of `rpcrdma`, the command line of the RPC-over-RDMA
//! stack: what other programs build on rather than run.
//!
//! * [`report`]: the text and JSON renderings `rpcrdma decode` prints for a
//!   decoded RPC-over-RDMA message or RFC 8797 private data. The codecs in
//!   `rpcrdma-wire` only decode; presenting the result is the command's job.
//! * `fuzzing` (feature `fuzzing`): the entry point the coverage-guided
//!   harness `fuzz/fuzz_targets/decode_cli.rs` and the bounded run in
//!   `tests/decode_fuzz_bounded.rs` share, so both exercise exactly the code
//!   the command runs.
//!
//! The subcommands themselves live in the binary (`src/main.rs`,
//! `src/cmd/`).

#[cfg(feature = "fuzzing")]
pub mod fuzzing;
pub mod report;
