//! The NFSv4.1/4.2 codecs (generated from `crates/xdrgen/xdr/nfs4.x`).
