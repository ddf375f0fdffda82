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

fn unsupported(rpc: &Option<RpcError>) -> String {
    match rpc {
        Some(e) => e.to_string(),
        None => "NFS4ERR_MINOR_VERS_MISMATCH".to_owned(),
    }
}

/// How the server broke the protocol.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Violation {
    /// A COMPOUND's results lack the ones asked for.
    #[error("{what}: a result is missing")]
    Missing {
        /// The operations.
        what: &'static str,
    },
    /// A COMPOUND failed and no operation's result says which.
    #[error("{what}: status {status:?} without a result")]
    NoResult {
        /// What the COMPOUND was for.
        what: String,
        /// The COMPOUND's status.
        status: Status,
    },
    /// A single operation was answered with another's result.
    #[error("{op} answered another operation")]
    OtherOperation {
        /// The operation sent.
        op: &'static str,
    },
    /// EXCHANGE_ID chose state protection the client did not ask for.
    #[error("EXCHANGE_ID: the server chose state protection the client did not ask for")]
    StateProtection,
    /// CREATE_SESSION granted what the client cannot use.
    #[error("{0}")]
    Session(super::session::Refused),
    /// Attributes that do not decode.
    #[error("{0}")]
    Attributes(super::attrs::AttrError),
    /// OPEN asked for OPEN_CONFIRM (NFSv4.0 only).
    #[error("OPEN asked for OPEN_CONFIRM, which NFSv4.1 does not have")]
    OpenConfirm,
    /// A WRITE reply's count is more than the data sent.
    #[error("WRITE count {count} beyond the {sent} bytes sent")]
    WriteCount {
        /// The reply's count.
        count: u32,
        /// The bytes sent.
        sent: usize,
    },
    /// A WRITE wrote nothing.
    #[error("WRITE wrote nothing")]
    WroteNothing,
    /// A READ returned more data than asked for.
    #[error("READ of {asked} bytes returned {data}")]
    ReadCount {
        /// The count asked for.
        asked: u32,
        /// The bytes of data in the reply.
        data: usize,
    },
    /// A READ returned no data and no end of file.
    #[error("READ at {offset} returned nothing before the end of the file")]
    ReadNoProgress {
        /// The READ's offset.
        offset: u64,
    },
    /// READDIR returned no entries without reaching the end of the
    /// directory, so following its cookie would loop.
    #[error("READDIR returned no entries and no end of directory")]
    EmptyReaddir,
    /// A directory has more entries than the client collects.
    #[error("directory has more than {max} entries")]
    TooManyEntries {
        /// The limit ([`MAX_LIST`](super::MAX_LIST)).
        max: usize,
    },
}

/// Which state could not be recovered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Lost {
    /// The file is not open: closed, or its open could not be recovered.
    #[error("the file is not open (closed, or its open could not be recovered)")]
    NotOpen,
    /// No lock is held where one was recorded.
    #[error("no lock is held")]
    NoLock,
    /// An open went away while its locks were being reclaimed.
    #[error("the open went away")]
    OpenGone,
}

/// What went wrong.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Nfs4Error {
    /// The RPC failed (no answer within the client's patience, the
    /// connection could not be made, the server refused the program).
    #[error("{op}")]
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
    #[error("the server does not serve NFSv4.{minor}: {}", unsupported(.rpc))]
    Unsupported {
        /// The minor version asked for.
        minor: u32,
        /// The NULL call's answer (`ProgMismatch`, `ProgUnavail`); `None`
        /// when a COMPOUND was answered `NFS4ERR_MINOR_VERS_MISMATCH`.
        rpc: Option<RpcError>,
    },
    /// The server broke the protocol.
    #[error("protocol: {0}")]
    Protocol(Violation),
    /// State could not be recovered after the server restarted or the
    /// lease expired.
    #[error("state lost: {0}")]
    StateLost(Lost),
    /// A local error while handling data.
    #[error(transparent)]
    Local(#[from] std::io::Error),
    /// A task running one of the requests kept in flight failed.
    #[error("{op} task failed")]
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

/// An error and its sources, `: `-separated, for the logs (a variant
/// prints its own words; its cause is its `source()`).
pub(crate) struct Chain<'a>(pub(crate) &'a (dyn std::error::Error + 'static));

impl std::fmt::Display for Chain<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.0)?;
        let mut next = self.0.source();
        while let Some(e) = next {
            write!(f, ": {e}")?;
            next = e.source();
        }
        Ok(())
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

    #[test]
    fn each_cause_is_named_once() {
        use std::error::Error as _;
        let io = std::io::Error::other("disk on fire");
        let e = Nfs4Error::Local(io);
        assert_eq!(e.to_string(), "disk on fire");
        assert!(e.source().is_none());
        let e = Nfs4Error::Rpc {
            op: "LOOKUP",
            source: RpcError::Shutdown,
        };
        assert_eq!(e.to_string(), "LOOKUP");
        assert!(e.source().is_some());
        assert_eq!(
            Chain(&e).to_string(),
            format!("LOOKUP: {}", e.source().unwrap())
        );
        let e = Nfs4Error::Protocol(Violation::Missing { what: "READ" });
        assert_eq!(e.to_string(), "protocol: READ: a result is missing");
        assert!(e.source().is_none());
        let e = Nfs4Error::Unsupported {
            minor: 2,
            rpc: None,
        };
        assert_eq!(
            e.to_string(),
            "the server does not serve NFSv4.2: NFS4ERR_MINOR_VERS_MISMATCH"
        );
        assert!(e.source().is_none());
    }
}
