//! RPC messages and data shared by the engine's integration tests.
#![allow(dead_code)]

use bytes::Bytes;
use rpcrdma_xdr::{Payload, PayloadEncoder};

/// Big-endian words as octets.
pub(crate) fn words(ws: &[u32]) -> Vec<u8> {
    ws.iter().flat_map(|w| w.to_be_bytes()).collect()
}

/// An RPC call header (AUTH_NONE) for program 0x20000099 v1 `proc`, then
/// `args`, then an optional DDP-eligible opaque.
pub(crate) fn call(xid: u32, proc_: u32, args: &[u8], ddp: Option<Bytes>) -> Payload {
    let mut pe = PayloadEncoder::new();
    let mut e = pe.encoder();
    for w in [xid, 0, 2, 0x2000_0099, 1, proc_, 0, 0, 0, 0] {
        e.put_u32(w);
    }
    e.put_fixed_opaque(args);
    if let Some(d) = ddp {
        e.put_opaque_ddp(d);
    }
    pe.finish()
}

/// An accepted SUCCESS reply, `body`, then an optional DDP-eligible opaque.
pub(crate) fn reply(xid: u32, body: &[u8], ddp: Option<Bytes>) -> Payload {
    let mut pe = PayloadEncoder::new();
    let mut e = pe.encoder();
    for w in [xid, 1, 0, 0, 0, 0] {
        e.put_u32(w);
    }
    e.put_fixed_opaque(body);
    if let Some(d) = ddp {
        e.put_opaque_ddp(d);
    }
    pe.finish()
}

/// `len` octets of a pattern that differs for each `seed`.
pub(crate) fn pattern(len: usize, seed: u8) -> Bytes {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
        .collect::<Vec<u8>>()
        .into()
}
