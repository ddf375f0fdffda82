//! The NFSv3 and MOUNT v3 codecs, generated at build time by
//! `rpcrdma-xdrgen` from `crates/xdrgen/xdr/nfs3.x` and `mount3.x` (RFC
//! 1813, with the RFC 8267 Upper-Layer Binding pragmas): types, XDR
//! encoding and decoding, client stubs, server traits and call hints.
//! Strings (file names, paths) are `bytes::Bytes`.
#![allow(missing_docs, unreachable_pub, clippy::all, clippy::pedantic)]

/// NFS version 3 (`NFS_PROGRAM` 100003, `NFS_V3`).
pub mod nfs3 {
    include!(concat!(env!("OUT_DIR"), "/nfs3.rs"));
}

/// MOUNT version 3 (`MOUNT_PROGRAM` 100005, `MOUNT_V3`).
pub mod mount3 {
    include!(concat!(env!("OUT_DIR"), "/mount3.rs"));
}
