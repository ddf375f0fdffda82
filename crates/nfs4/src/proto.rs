//! The NFSv4.1 and NFSv4.2 codecs, generated at build time by
//! `rpcrdma-xdrgen` from `crates/xdrgen/xdr/nfs4.x` (RFC 5662 and RFC 7863
//! written out, with RFC 8276's extended-attribute operations and the RFC
//! 8267 Upper-Layer Binding pragmas): types, XDR encoding and decoding,
//! client stubs, server traits and call hints for `NFS4_PROGRAM` and the
//! callback program `NFS4_CALLBACK`. Strings (file names, link texts,
//! owners, tags, network ids) are `bytes::Bytes`.
#![allow(missing_docs, unreachable_pub, clippy::all, clippy::pedantic)]

/// NFS version 4 (`NFS4_PROGRAM` 100003, `NFS_V4`, minor versions 1 and 2)
/// and its callback program (`NFS4_CALLBACK`, `NFS_CB`).
pub mod nfs4 {
    include!(concat!(env!("OUT_DIR"), "/nfs4.rs"));
}
