//! **Test support only — not part of the RPC-over-RDMA stack.**
//!
//! Small, dependency-light helpers that tests of the `rpcrdma` crates use to
//! read real captures and to write synthetic ones:
//!
//! * [`pcap`]: read classic pcap and pcapng files; write classic pcap.
//! * [`tcp`]: Ethernet/IPv4/TCP parsing, TCP byte-stream reassembly, and a
//!   synthetic two-stream TCP conversation writer (handshake, data, FIN).
//! * [`mpa`]: the minimal MPA (RFC 5044/6581) and DDP/RDMAP (RFC 5041/5040)
//!   framing needed to pull RDMA Send payloads out of a capture and to put
//!   our messages into one.
//! * [`relay`]: a recording, fault-injecting TCP relay (cut a connection at
//!   an exact byte offset; turn what it forwarded into a pcap file).
//! * [`rng`]: a reproducible pseudo-random generator for bounded fuzz runs.
//!
//! None of this validates hostile input the way a production codec must;
//! it returns `None`/errors on what it does not understand and is meant for
//! trusted test fixtures. The real MPA/DDP/RDMAP implementation lives in
//! `crates/iwarp`.
#![forbid(unsafe_code)]

pub mod mpa;
pub mod pcap;
pub mod relay;
pub mod rng;
pub mod tcp;

/// The project's `shared/` directory (specs, oracles, captures): the value
/// of `RPCRDMA_SHARED_DIR` if set, else `../shared` beside the workspace
/// root, found from a crate's `CARGO_MANIFEST_DIR` (`crates/<name>`).
pub fn shared_dir(manifest_dir: &str) -> std::path::PathBuf {
    match std::env::var_os("RPCRDMA_SHARED_DIR") {
        Some(d) => d.into(),
        None => std::path::Path::new(manifest_dir).join("../../../shared"),
    }
}
