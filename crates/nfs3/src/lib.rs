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
//! * [`exports`] — which clients may use which export and how: the exports
//!   file (Linux's `/etc/exports` syntax), the table in force (replaced on
//!   a reload), and the admission of each call by its client's address.
//!
//! The design is in `docs/nfs.md`.
#![forbid(unsafe_code)]

pub mod client;
pub mod convert;
pub mod exports;
pub mod fs;
pub mod fuzzing;
pub mod proto;
pub mod server;
