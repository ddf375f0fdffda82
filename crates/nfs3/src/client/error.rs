//! The client's errors ([`NfsClientError`], [`ProtocolViolation`]), how
//! an RPC's or the server's failure becomes one, and the retries while
//! the server answers `NFS3ERR_JUKEBOX`.

use rpcrdma_oncrpc::RpcError;

use crate::convert::error_of;
use crate::fs::{NfsError, NFS3_FHSIZE};
use crate::proto::mount3 as m;
use crate::proto::nfs3 as p;

/// What went wrong on the client side.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum NfsClientError {
    /// The RPC failed.
    #[error("{op}")]
    Rpc {
        /// The procedure.
        op: &'static str,
        /// Why.
        source: RpcError,
    },
    /// The server answered with an NFS error.
    #[error("{op} {path}: {status}")]
    Nfs {
        /// The procedure.
        op: &'static str,
        /// What it was about.
        path: String,
        /// The status.
        status: NfsError,
    },
    /// MOUNT refused the path.
    #[error("MOUNT {path}: the server answered {status:?} (is the path exported? `showmount -e` lists exports)")]
    Mount {
        /// The path.
        path: String,
        /// The status.
        status: m::Mountstat3,
    },
    /// The server returned a file handle longer than NFSv3 allows.
    #[error("{op} returned a file handle of {len} bytes, over NFSv3's {NFS3_FHSIZE}")]
    BadHandle {
        /// The procedure.
        op: &'static str,
        /// The handle's length.
        len: usize,
    },
    /// The task running one of the requests kept in flight failed
    /// (it panicked or was cancelled).
    #[error("{op} task failed")]
    Task {
        /// The procedure.
        op: &'static str,
        /// Why.
        source: tokio::task::JoinError,
    },
    /// A directory has more entries than [`NfsClient::list`](super::NfsClient::list) collects.
    #[error("directory has more than {max} entries")]
    TooManyEntries {
        /// The limit ([`MAX_LIST`](super::MAX_LIST)).
        max: usize,
    },
    /// A local error while handling data.
    #[error(transparent)]
    Local(#[from] std::io::Error),
    /// The server broke the protocol (the violation is this error's own
    /// words, not a cause).
    #[error("protocol: {0}")]
    Protocol(ProtocolViolation),
    /// The server restarted during a write and lost unstable data more
    /// often than we retry.
    #[error(
        "the server's write verifier kept changing: it restarted during the transfer; try again"
    )]
    VerifierChanged,
}

impl From<ProtocolViolation> for NfsClientError {
    fn from(v: ProtocolViolation) -> Self {
        Self::Protocol(v)
    }
}

/// How a server broke the protocol.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ProtocolViolation {
    /// READDIR(PLUS) returned no entries without reaching the end of the
    /// directory, so following its cookie would loop.
    #[error("READDIR returned no entries and no end of directory")]
    EmptyReaddir,
    /// A READ reply's `count` or data disagree with each other or with the
    /// count asked for.
    #[error("READ of {asked} bytes returned count {count} with {data} bytes")]
    ReadCount {
        /// The count asked for.
        asked: u32,
        /// The reply's `count`.
        count: u32,
        /// The bytes of data in the reply.
        data: usize,
    },
    /// A READ returned no data and no end of file.
    #[error("READ at {offset} returned nothing before the end of the file")]
    ReadNoProgress {
        /// The READ's offset.
        offset: u64,
    },
    /// A WRITE reply's `count` is more than the data sent.
    #[error("WRITE count {count} beyond the {sent} bytes sent")]
    WriteCount {
        /// The reply's `count`.
        count: u32,
        /// The bytes sent.
        sent: usize,
    },
    /// A WRITE wrote less than it was sent (this client does not resend
    /// the rest).
    #[error("short WRITE: {written} of {sent} bytes")]
    ShortWrite {
        /// The reply's `count`.
        written: u32,
        /// The bytes sent.
        sent: usize,
    },
}

pub(super) fn rpc(op: &'static str) -> impl FnOnce(RpcError) -> NfsClientError {
    move |source| NfsClientError::Rpc { op, source }
}

pub(super) fn bad_handle(op: &'static str, len: usize) -> impl FnOnce(NfsError) -> NfsClientError {
    move |_| NfsClientError::BadHandle { op, len }
}

/// How long a request the server answers `NFS3ERR_JUKEBOX` is retried
/// (RFC 1813 §2.6: the server started it and could not finish in time;
/// the client retries later): 2 minutes, the delay doubling from 50 ms to
/// 2 s. An NFSv4 delegation held by another client is one reason: the
/// change waits until it is returned.
pub const JUKEBOX_PATIENCE: std::time::Duration = std::time::Duration::from_secs(120);

/// Runs `f` again while the server answers `NFS3ERR_JUKEBOX`, within
/// [`JUKEBOX_PATIENCE`].
pub(super) async fn patiently<T, Fut>(mut f: impl FnMut() -> Fut) -> Result<T, NfsClientError>
where
    Fut: std::future::Future<Output = Result<T, NfsClientError>>,
{
    let start = std::time::Instant::now();
    let mut delay = std::time::Duration::from_millis(50);
    loop {
        match f().await {
            Err(NfsClientError::Nfs {
                status: NfsError::Jukebox,
                ..
            }) if start.elapsed() < JUKEBOX_PATIENCE => {
                tokio::time::sleep(delay).await;
                delay = (delay * 2).min(std::time::Duration::from_secs(2));
            }
            other => return other,
        }
    }
}

pub(super) fn nfs(op: &'static str, path: &[u8], s: p::Nfsstat3) -> NfsClientError {
    NfsClientError::Nfs {
        op,
        path: String::from_utf8_lossy(path).into_owned(),
        status: error_of(s).unwrap_or(NfsError::ServerFault),
    }
}

#[cfg(test)]
mod tests {
    use std::error::Error as _;

    use super::*;

    #[test]
    fn each_cause_is_named_once() {
        let e = rpc("GETATTR")(RpcError::Shutdown);
        assert_eq!(e.to_string(), "GETATTR");
        assert!(e.source().is_some());
        let e = NfsClientError::Local(std::io::Error::other("disk on fire"));
        assert_eq!(e.to_string(), "disk on fire");
        assert!(e.source().is_none());
        let e: NfsClientError = ProtocolViolation::EmptyReaddir.into();
        assert_eq!(
            e.to_string(),
            "protocol: READDIR returned no entries and no end of directory"
        );
        assert!(e.source().is_none());
    }
}
