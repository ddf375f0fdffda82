//! Responder side of the engine: taking the peer's calls and answering
//! them (RFC 8166 §4.4.5, §4.5.3, §5.5; RFC 8797 §4.1), split by mechanism
//! as Linux splits svcrdma:
//!
//! * `intake`: a received call checked (credits, its RPC header, its Read
//!   list) and queued for admission, or refused;
//! * `admission`: waiting calls admitted in arrival order once their Read
//!   sinks and reply room fit the connection's limit and the shared
//!   memory budget;
//! * `pulls`: an admitted call's Read chunks pulled with RDMA Reads within
//!   the ORD limit and its Payload stream rebuilt, then handed up;
//! * `answer`: replies reduced into the requester's Write chunks or sent
//!   through its Reply chunk, and the memory a call holds given back;
//! * `rpc`: the RPC-level bits the engine reads and writes itself (the call
//!   header check, its own `GARBAGE_ARGS` / `SYSTEM_ERR` replies).
//!
//! Enabling the reverse direction (RFC 8167 §6) is here too.

use std::time::Instant;

use rpcrdma_verbs::ProtectionDomain;

use crate::config::Role;
use crate::conn::Engine;
use crate::error::ApiError;

mod admission;
mod answer;
mod intake;
mod pulls;
mod rpc;

impl<P: ProtectionDomain> Engine<P> {
    /// Client: accept reverse-direction calls from now on (RFC 8167 §6).
    /// Call this before telling the server (through the Upper Layer) that
    /// the reverse direction is ready. Fails if the configuration grants
    /// no reverse-direction credits.
    pub fn enable_backchannel(&mut self) -> Result<(), ApiError> {
        self.check_alive()?;
        if self.cfg.role == Role::Client && self.grant > 0 {
            self.resp_enabled = true;
            Ok(())
        } else {
            Err(ApiError::BackchannelNotReady)
        }
    }

    /// Server: the client has said (through the Upper Layer) that it takes
    /// reverse-direction calls; [`Engine::send_call`] works from now on.
    pub fn peer_backchannel_ready(&mut self, now: Instant) -> Result<(), ApiError> {
        self.check_alive()?;
        if self.cfg.role == Role::Server && self.cfg.backchannel_credits > 0 {
            self.req_enabled = true;
            self.pump_calls(now);
            Ok(())
        } else {
            Err(ApiError::BackchannelNotReady)
        }
    }
}
