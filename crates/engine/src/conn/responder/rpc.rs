//! The RPC-level bits the responder reads and writes itself (RFC 5531):
//! the check of a call's RPC header and the accepted replies with an error
//! status it answers some calls with.

use bytes::{BufMut, Bytes, BytesMut};
use rpcrdma_xdr::round_up;

/// RPC `accept_stat` values the engine itself answers with.
pub(super) const GARBAGE_ARGS: u32 = 4;
pub(super) const SYSTEM_ERR: u32 = 5;

/// An accepted RPC reply with `AUTH_NONE` verifier and `stat` (RFC 5531 §9).
pub(super) fn rpc_error_reply(xid: u32, stat: u32) -> Bytes {
    let mut b = BytesMut::with_capacity(24);
    for w in [xid, 1, 0, 0, 0, stat] {
        b.put_u32(w);
    }
    b.freeze()
}

/// Largest `opaque_auth` body (RFC 5531 §8.2).
const MAX_AUTH_BYTES: u32 = 400;

/// What the start of a call's Payload stream holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum RpcHead {
    /// A complete RPC call header (RFC 5531 §9: xid, CALL, rpcvers, prog,
    /// vers, proc, cred, verf), or one the upper layer answers from its
    /// first words (another RPC version, an over-long credential or
    /// verifier).
    Usable,
    /// No RPC call: fewer than eight bytes, another XID, not a CALL.
    NotACall,
    /// XID and CALL, then cut short before the verifier ends.
    Truncated,
}

/// Classifies the RPC call header at the start of `s` (the same steps as
/// the ONC RPC layer's header decoder, so exactly the calls it would drop
/// are caught here).
pub(super) fn rpc_call_head(s: &[u8], xid: u32) -> RpcHead {
    let word = |i: usize| {
        s.get(i..i + 4)
            .map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    };
    if word(0) != Some(xid) || word(4) != Some(0) {
        return RpcHead::NotACall;
    }
    match word(8) {
        None => return RpcHead::Truncated,
        // RPC_MISMATCH, answered by the upper layer from three words.
        Some(v) if v != 2 => return RpcHead::Usable,
        Some(_) => {}
    }
    // prog, vers, proc; then the credential and the verifier.
    let mut at = 24usize;
    if s.len() < at {
        return RpcHead::Truncated;
    }
    for _ in 0..2 {
        let Some(len) = word(at + 4) else {
            return RpcHead::Truncated;
        };
        if len > MAX_AUTH_BYTES {
            // AUTH_BADCRED / AUTH_BADVERF, answered by the upper layer.
            return RpcHead::Usable;
        }
        at += 8 + round_up(len as usize);
        if s.len() < at {
            return RpcHead::Truncated;
        }
    }
    RpcHead::Usable
}
