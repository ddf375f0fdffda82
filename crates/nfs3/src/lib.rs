//! NFSv3 (RFC 1813) and MOUNT v3 for the RPC-over-RDMA stack.
//!
//! # Layers
//!
//! * [`fs`] — the export: a local directory with stable, authenticated
//!   file handles, attributes from the real file system, READDIR cookies,
//!   UNSTABLE writes and COMMIT, AUTH_SYS identities with root squashing,
//!   read-only exports, and confinement (`..` never leaves the export, no
//!   symbolic link is ever followed by the server). It has its own Rust
//!   types and no wire encoding, so it is tested on its own.
//!
//! The design is in `docs/nfs.md`.
#![forbid(unsafe_code)]

pub mod client;
pub mod convert;
pub mod fs;
pub mod fuzzing;
pub mod proto;
pub mod server;
