//! Encoding replies: a handler's outcome, a panic, the framework's error
//! replies, and the public [`encode_reply`] and [`encode_success`].

use rpcrdma_xdr::{Payload, PayloadEncoder};

use super::call::ProcError;
use super::version::Reply;
use crate::codec::Marshal;
use crate::conn::Connection;
use crate::msg::{AcceptedStatus, RejectedReply, ReplyHeader};

/// Encodes a handler's outcome (results in the connection's arena).
pub(super) fn encode_result(connection: &Connection, xid: u32, r: Reply) -> Payload {
    match r {
        Ok(results) => {
            let h = ReplyHeader::success(xid);
            let mut arena = crate::util::lock(connection.ops.arena());
            let mut pe = PayloadEncoder::in_arena(&mut arena, h.encoded_len() + 64);
            let mut enc = pe.encoder();
            h.encode(&mut enc);
            results.marshal(&mut enc);
            pe.finish_into(&mut arena)
        }
        Err(ProcError::Auth(stat)) => {
            encode_reply(&ReplyHeader::denied(xid, RejectedReply::AuthError(stat)))
        }
        Err(e) => encode_reply(&ReplyHeader::accepted(
            xid,
            match e {
                ProcError::GarbageArgs => AcceptedStatus::GarbageArgs,
                ProcError::ProcUnavail => AcceptedStatus::ProcUnavail,
                _ => AcceptedStatus::SystemErr,
            },
        )),
    }
}

/// The answer to a call whose handler panicked.
pub(super) fn encode_panic(xid: u32) -> Payload {
    tracing::error!(
        xid = format_args!("{xid:#010x}"),
        "RPC handler panicked; answering SYSTEM_ERR"
    );
    encode_reply(&ReplyHeader::accepted(xid, AcceptedStatus::SystemErr))
}

/// Encodes a reply that has no results.
pub fn encode_reply(h: &ReplyHeader) -> Payload {
    let mut pe = PayloadEncoder::with_capacity(h.encoded_len());
    h.encode(&mut pe.encoder());
    pe.finish()
}

/// Encodes a successful reply: header, then the results with their
/// DDP-eligible items out of line.
pub fn encode_success(xid: u32, results: &dyn Marshal) -> Payload {
    let h = ReplyHeader::success(xid);
    let mut pe = PayloadEncoder::with_capacity(h.encoded_len() + 64);
    let mut enc = pe.encoder();
    h.encode(&mut enc);
    results.marshal(&mut enc);
    pe.finish()
}
