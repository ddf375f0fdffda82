//! What a handler sees of a call ([`CallInfo`]), what it may answer
//! instead of results ([`ProcError`]), and how calls ended, for an
//! observer ([`CallOutcome`], [`CallObserver`]).

use std::fmt;
use std::time::Duration;

use rpcrdma_xdr::Payload;

use crate::auth::Credential;
use crate::conn::Connection;
use crate::msg::{AuthStat, OpaqueAuth};

/// What a handler may answer instead of results.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ProcError {
    /// Reply `GARBAGE_ARGS` (the arguments are unusable).
    #[error("GARBAGE_ARGS")]
    GarbageArgs,
    /// Reply `SYSTEM_ERR`.
    #[error("SYSTEM_ERR")]
    SystemErr,
    /// Reply `PROC_UNAVAIL`.
    #[error("PROC_UNAVAIL")]
    ProcUnavail,
    /// Deny the call with `AUTH_ERROR` and this `auth_stat`.
    #[error("AUTH_ERROR {0}")]
    Auth(AuthStat),
}

/// What a handler learns about the call besides its arguments.
#[derive(Clone)]
pub struct CallInfo {
    /// Transaction id (the peer's; unique among its outstanding calls).
    pub xid: u32,
    /// Program.
    pub prog: u32,
    /// Version.
    pub vers: u32,
    /// Procedure.
    pub proc_: u32,
    /// The credential, interpreted.
    pub cred: Credential,
    /// The verifier.
    pub verf: OpaqueAuth,
    /// The connection the call arrived on: [`Connection::client`] makes
    /// calls back to the peer over it (RFC 8167 reverse direction, NFSv4.1
    /// backchannel).
    pub connection: Connection,
}

impl fmt::Debug for CallInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CallInfo")
            .field("xid", &format_args!("{:#010x}", self.xid))
            .field("prog", &self.prog)
            .field("vers", &self.vers)
            .field("proc_", &self.proc_)
            .field("cred", &self.cred)
            .finish_non_exhaustive()
    }
}

/// How a call the [`Services`](crate::Services) dispatched ended, as its reply says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum CallOutcome {
    /// `SUCCESS` (the program's own status, if any, is in its results).
    Success,
    /// `PROG_UNAVAIL`.
    ProgUnavail,
    /// `PROG_MISMATCH`.
    ProgMismatch,
    /// `PROC_UNAVAIL`.
    ProcUnavail,
    /// `GARBAGE_ARGS`.
    GarbageArgs,
    /// `SYSTEM_ERR` (a handler that failed or panicked, too).
    SystemErr,
    /// Denied: `RPC_MISMATCH`.
    RpcMismatch,
    /// Denied: `AUTH_ERROR`.
    AuthError,
    /// Not answered: the message was not a call that can be answered.
    Dropped,
}

impl CallOutcome {
    /// Every outcome, in a fixed order (index with [`Self::index`]).
    pub const ALL: [CallOutcome; 9] = [
        Self::Success,
        Self::ProgUnavail,
        Self::ProgMismatch,
        Self::ProcUnavail,
        Self::GarbageArgs,
        Self::SystemErr,
        Self::RpcMismatch,
        Self::AuthError,
        Self::Dropped,
    ];

    /// Its place in [`Self::ALL`].
    pub fn index(self) -> usize {
        self as usize
    }

    /// A lower-case name (`success`, `garbage_args`, ...).
    pub fn name(self) -> &'static str {
        match self {
            Self::Success => "success",
            Self::ProgUnavail => "prog_unavail",
            Self::ProgMismatch => "prog_mismatch",
            Self::ProcUnavail => "proc_unavail",
            Self::GarbageArgs => "garbage_args",
            Self::SystemErr => "system_err",
            Self::RpcMismatch => "rpc_mismatch",
            Self::AuthError => "auth_error",
            Self::Dropped => "dropped",
        }
    }

    /// The outcome an encoded reply says (`SystemErr` for one that does
    /// not decode: every reply here is ours).
    pub fn of_reply(reply: &Payload) -> Self {
        let b = reply.inline();
        let word = |at: usize| -> Option<u32> {
            let w = b.get(at..at.checked_add(4)?)?;
            Some(u32::from_be_bytes([w[0], w[1], w[2], w[3]]))
        };
        let outcome = || -> Option<Self> {
            match word(8)? {
                // MSG_ACCEPTED: the verifier (flavor, length, body), then
                // accept_stat.
                0 => {
                    let len = usize::try_from(word(16)?).ok()?;
                    let at = 20usize.checked_add(len.checked_add(3)? & !3)?;
                    Some(match word(at)? {
                        0 => Self::Success,
                        1 => Self::ProgUnavail,
                        2 => Self::ProgMismatch,
                        3 => Self::ProcUnavail,
                        4 => Self::GarbageArgs,
                        _ => Self::SystemErr,
                    })
                }
                // MSG_DENIED: reject_stat.
                1 => Some(if word(12)? == 0 {
                    Self::RpcMismatch
                } else {
                    Self::AuthError
                }),
                _ => None,
            }
        };
        outcome().unwrap_or(Self::SystemErr)
    }
}

/// Told of every call [`Services`](crate::Services) dispatch: which procedure, how it
/// ended, how long from its dispatch to its encoded reply. Set with
/// [`Services::set_observer`](crate::Services::set_observer); without one, dispatch measures nothing.
/// Called on the connection's reader or the handler's task: keep it
/// cheap (atomics, no lock per call).
pub trait CallObserver: Send + Sync + 'static {
    /// A call was answered (or dropped: `outcome` [`CallOutcome::Dropped`],
    /// with the program, version and procedure 0 when the header did not
    /// decode).
    fn call_done(&self, prog: u32, vers: u32, proc_: u32, outcome: CallOutcome, elapsed: Duration);
}
