//! The client's errors: every `NFS4ERR_*` the server can answer is a
//! variant of [`Status`] (the generated `nfsstat4`), carried with the
//! operation that failed; RPC failures, protocol violations and local
//! errors are their own variants.

use bytes::Bytes;
use rpcrdma_oncrpc::RpcError;

pub use crate::proto::nfs4::Nfsstat4 as Status;

/// The RFC name of a status (`NFS4ERR_STALE_STATEID`, `NFS4_OK`).
pub fn status_name(s: Status) -> String {
    let debug = format!("{s:?}");
    let Some(rest) = debug.strip_prefix("Nfs4err") else {
        return "NFS4_OK".to_owned();
    };
    let mut out = String::from("NFS4ERR_");
    for (i, c) in rest.chars().enumerate() {
        if c.is_ascii_uppercase() && i > 0 {
            out.push('_');
        }
        out.push(c.to_ascii_uppercase());
    }
    out
}

fn about(what: &str) -> String {
    if what.is_empty() {
        String::new()
    } else {
        format!(" {what}")
    }
}

fn sname(s: &Status) -> String {
    status_name(*s)
}

fn kind(write: &bool) -> &'static str {
    if *write {
        "a write"
    } else {
        "a read"
    }
}

/// What went wrong.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Nfs4Error {
    /// The RPC failed (no answer within the client's patience, the
    /// connection could not be made, the server refused the program).
    #[error("{op}: {source}")]
    Rpc {
        /// The COMPOUND's main operation.
        op: &'static str,
        /// Why.
        source: RpcError,
    },
    /// The server answered an operation with an error.
    #[error("{op}{}: {}", about(.what), sname(.status))]
    Status {
        /// The operation that failed.
        op: &'static str,
        /// What it was about (a name), if known.
        what: String,
        /// The status.
        status: Status,
    },
    /// LOCK was denied: another owner holds a conflicting lock.
    #[error("LOCK denied: {} lock of {length} bytes at {offset} held by another owner", kind(.write))]
    Denied {
        /// The conflicting lock's start.
        offset: u64,
        /// Its length (`u64::MAX`: to the end of the file).
        length: u64,
        /// Whether it is a write lock.
        write: bool,
        /// Its owner (opaque, as the server gave it).
        owner: Bytes,
    },
    /// The server does not serve NFSv4 with this minor version.
    #[error("the server does not serve NFSv4.{minor}: {why}")]
    Unsupported {
        /// The minor version asked for.
        minor: u32,
        /// What it answered.
        why: String,
    },
    /// The server broke the protocol.
    #[error("protocol: {0}")]
    Protocol(String),
    /// State could not be recovered after the server restarted or the
    /// lease expired.
    #[error("state lost: {0}")]
    StateLost(String),
    /// A local error while handling data.
    #[error("{0}")]
    Local(#[from] std::io::Error),
    /// A task running one of the requests kept in flight failed.
    #[error("{op} task failed: {source}")]
    Task {
        /// The operation.
        op: &'static str,
        /// Why.
        source: tokio::task::JoinError,
    },
    /// The server's write verifier kept changing (it restarted during a
    /// transfer and may have lost unstable data more often than we retry).
    #[error(
        "the server's write verifier kept changing: it restarted during the transfer; try again"
    )]
    VerifierChanged,
    /// The client was shut down.
    #[error("the client was shut down")]
    Shutdown,
}

impl Nfs4Error {
    /// The NFSv4 status, if the server answered one.
    pub fn status(&self) -> Option<Status> {
        match self {
            Self::Status { status, .. } => Some(*status),
            Self::Denied { .. } => Some(Status::Nfs4errDenied),
            _ => None,
        }
    }

    /// A status error of `op` about `what`.
    pub(crate) fn status_of(op: &'static str, what: impl Into<String>, status: Status) -> Self {
        Self::Status {
            op,
            what: what.into(),
            status,
        }
    }
}

/// The client's results.
pub type Result<T, E = Nfs4Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_the_rfc() {
        assert_eq!(status_name(Status::Nfs4Ok), "NFS4_OK");
        assert_eq!(status_name(Status::Nfs4errNoent), "NFS4ERR_NOENT");
        assert_eq!(
            status_name(Status::Nfs4errStaleStateid),
            "NFS4ERR_STALE_STATEID"
        );
        assert_eq!(
            status_name(Status::Nfs4errRepTooBigToCache),
            "NFS4ERR_REP_TOO_BIG_TO_CACHE"
        );
        let e = Nfs4Error::status_of("LOOKUP", "x", Status::Nfs4errNoent);
        assert_eq!(e.to_string(), "LOOKUP x: NFS4ERR_NOENT");
        assert_eq!(e.status(), Some(Status::Nfs4errNoent));
    }
}
