//! Error types, split by cause.

use std::net::SocketAddr;
use std::time::Duration;

use rpcrdma_xdr::{EncodeError, XdrError};

use crate::client_key::ClientKey;
pub use crate::msg::MessageError;
use crate::msg::{AcceptStat, AuthFlavor, AuthStat};

/// An `AUTH_SYS` (or `AUTH_NONE`) credential that breaks the rules.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AuthSysError {
    /// Machine name longer than 255 bytes.
    #[error("AUTH_SYS machine name of {len} bytes exceeds the limit of 255")]
    MachineNameTooLong {
        /// Its length.
        len: usize,
    },
    /// More than 16 supplementary groups.
    #[error("AUTH_SYS credential with {count} groups exceeds the limit of 16")]
    TooManyGids {
        /// How many were given.
        count: usize,
    },
    /// Not an `AUTH_SYS` credential.
    #[error("credential flavor is {flavor}, not AUTH_SYS")]
    WrongFlavor {
        /// The flavor found.
        flavor: AuthFlavor,
    },
    /// The body does not decode as `authsys_parms`.
    #[error("malformed AUTH_SYS credential")]
    Malformed(#[source] XdrError),
    /// An `AUTH_NONE` credential with a non-empty body.
    #[error("AUTH_NONE credential carries a {len}-byte body; it must be empty")]
    NoneWithBody {
        /// Body length.
        len: usize,
    },
}

/// A record-marking violation (RFC 5531 §11) by the peer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RecordError {
    /// The record would exceed the configured maximum; the connection must
    /// be closed because the rest of the stream cannot be resynchronised.
    #[error("RPC record of at least {len} bytes exceeds the limit of {max} bytes (raise the maximum record size if the peer is legitimate)")]
    TooLarge {
        /// Record length so far, including the offending fragment.
        len: u64,
        /// The configured limit.
        max: usize,
    },
    /// The stream ended inside a record.
    #[error("connection closed in the middle of an RPC record ({buffered} bytes buffered)")]
    Truncated {
        /// Bytes of the unfinished record.
        buffered: usize,
    },
}

/// A transport failure: the connection, not the RPC, went wrong.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TransportError {
    /// An I/O error on the connection.
    #[error("transport I/O error")]
    Io(#[from] std::io::Error),
    /// The peer closed the connection.
    #[error("the peer closed the connection")]
    Closed,
    /// The peer broke record marking.
    #[error(transparent)]
    Record(#[from] RecordError),
    /// A message we were asked to send is larger than the transport allows
    /// (over TCP: [`crate::tcp::TcpConfig::max_record`]).
    #[error("RPC message of {len} bytes exceeds the transport's limit of {max} bytes (TcpConfig::max_record: raise it on both ends, ServerConfig::tcp on a server)")]
    MessageTooLarge {
        /// Message size.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// Connecting failed.
    #[error("cannot connect to {addr}")]
    Connect {
        /// Where we tried to connect.
        addr: String,
        /// Why it failed.
        source: std::io::Error,
    },
    /// A reverse-direction call was refused by our own transport because
    /// the client has not said it takes them on this connection (RFC 8167
    /// §6). The connection stays up; the RPC layer reports it as
    /// [`RpcError::BackchannelNotReady`].
    #[error("the client has not enabled reverse-direction calls on this connection (RFC 8167 §6)")]
    BackchannelNotReady,
    /// The connection cannot carry reverse-direction calls at all (for
    /// RPC-over-RDMA: no reverse-direction credits are configured).
    #[error("this connection cannot carry reverse-direction calls: {0}")]
    BackchannelUnsupported(&'static str),
    /// The TCP server closed the connection without a byte of answer to
    /// our call, and answered an iWARP MPA Request on a connection of
    /// its own: the port speaks RPC-over-RDMA (software iWARP or an iWARP
    /// adapter), not ONC RPC over TCP. Calls fail with it at once (no
    /// retransmission).
    #[error("{addr} speaks RPC-over-RDMA (iWARP MPA), not ONC RPC over TCP: it closed the connection without answering the call and answers an MPA Request; connect with RPC-over-RDMA instead (`--transport rdma` on the rpcrdma command line; `rpcrdma::Transport::Rdma` or `rpcrdma_transport::RdmaConnector` in code)")]
    SpeaksRdma {
        /// The server's address.
        addr: SocketAddr,
    },
    /// A transport-specific failure (e.g. an RPC-over-RDMA `RDMA_ERROR`
    /// for one call, or a verbs error): the transport's own error type,
    /// which this crate cannot name (it knows no transport but TCP), so a
    /// caller that wants its cause downcasts it. Its message is this
    /// error's; `source()` is `None`.
    #[error("{0}")]
    Backend(Box<dyn std::error::Error + Send + Sync>),
}

/// Why an RPC call did not produce results.
#[derive(Debug)]
#[non_exhaustive]
pub enum RpcError {
    /// No reply arrived in time. The call's resources were released.
    Timeout {
        /// Transaction id.
        xid: u32,
        /// The timeout that expired.
        after: Duration,
    },
    /// The connection was lost and retransmission on new connections was
    /// exhausted (or is not possible for this client).
    ConnectionLost {
        /// Transaction id.
        xid: u32,
        /// Connections the call was sent on.
        attempts: u32,
    },
    /// No connection could be made.
    Connect(TransportError),
    /// The transport failed this call (for example an RPC-over-RDMA
    /// `RDMA_ERROR`). The message includes the transport's error (which
    /// says what to do about it); `source()` is that error's own cause.
    Transport {
        /// Transaction id.
        xid: u32,
        /// The transport's error.
        source: TransportError,
    },
    /// The client was shut down (or, for a reverse-direction client, the
    /// server).
    Shutdown,
    /// A reverse-direction call on a connection whose client has not said
    /// it takes them (RFC 8167 §6). Nothing was sent; the connection is
    /// unaffected.
    BackchannelNotReady {
        /// Transaction id.
        xid: u32,
    },
    /// A reverse-direction call found no connection from its client that
    /// is ready for callbacks within the bound: the client's connection
    /// was lost (or never declared ready) and the client did not come back
    /// in time. A server cannot reconnect to a client (RFC 8167 §5.4).
    ClientGone {
        /// Transaction id (kept across retransmissions).
        xid: u32,
        /// The Upper Layer's name for the client.
        key: ClientKey,
        /// How long the call waited for a connection.
        waited: Duration,
        /// Connections the call was sent on.
        attempts: u32,
    },
    /// `PROG_UNAVAIL`: the server does not offer the program.
    ProgUnavail {
        /// Program.
        prog: u32,
    },
    /// `PROG_MISMATCH`: the server offers other versions.
    ProgMismatch {
        /// Program.
        prog: u32,
        /// Version asked for.
        vers: u32,
        /// Lowest version offered.
        low: u32,
        /// Highest version offered.
        high: u32,
    },
    /// `PROC_UNAVAIL`.
    ProcUnavail {
        /// Program.
        prog: u32,
        /// Version.
        vers: u32,
        /// Procedure.
        proc_: u32,
    },
    /// `GARBAGE_ARGS`: the server could not decode the arguments.
    GarbageArgs,
    /// `SYSTEM_ERR`.
    SystemErr,
    /// An `accept_stat` RFC 5531 does not define.
    UnknownAcceptStat(AcceptStat),
    /// `RPC_MISMATCH`.
    RpcMismatch {
        /// Lowest version supported.
        low: u32,
        /// Highest version supported.
        high: u32,
    },
    /// `AUTH_ERROR` with its `auth_stat`.
    Auth(AuthStat),
    /// The reply header could not be decoded.
    BadReply(MessageError),
    /// The arguments break the limits of their XDR declaration (checked
    /// by generated client stubs before anything is sent).
    BadArgs(EncodeError),
    /// The results could not be decoded (or violated DDP placement).
    Results(XdrError),
}

impl std::fmt::Display for RpcError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Timeout { xid, after, .. } => write!(f, "RPC call {xid:#010x} timed out after {after:?} (raise the client timeout or check the server)"),
            Self::ConnectionLost { xid, attempts, .. } => write!(f, "RPC call {xid:#010x} failed: connection lost {attempts} time(s); giving up"),
            Self::Connect(_) => f.write_str("cannot reach the RPC server"),
            Self::Transport { xid, source, .. } => write!(f, "RPC call {xid:#010x}: {source}"),
            Self::Shutdown => f.write_str("the RPC client was shut down"),
            Self::BackchannelNotReady { xid, .. } => write!(f, "reverse-direction call {xid:#010x} refused: the client has not said it takes reverse-direction calls on this connection (RFC 8167 §6); the server's Upper Layer must call Connection::peer_ready_for_callbacks first"),
            Self::ClientGone { xid, key, waited, attempts, .. } => write!(f, "reverse-direction call {xid:#010x}: no connection from client {key} ready for callbacks within {waited:?} (sent {attempts} time(s)); a server cannot reconnect (RFC 8167 §5.4): the client must reconnect and declare readiness again, or raise ServerConfig::callback_reconnect_wait"),
            Self::ProgUnavail { prog, .. } => write!(f, "program {prog} is not available on the server (PROG_UNAVAIL)"),
            Self::ProgMismatch { prog, vers, low, high, .. } => write!(f, "program {prog} version {vers} is not supported; the server offers versions {low}..={high} (PROG_MISMATCH)"),
            Self::ProcUnavail { proc_, prog, vers, .. } => write!(f, "procedure {proc_} of program {prog} version {vers} is not available (PROC_UNAVAIL)"),
            Self::GarbageArgs => f.write_str("the server could not decode the arguments (GARBAGE_ARGS)"),
            Self::SystemErr => f.write_str("the server failed to run the procedure (SYSTEM_ERR)"),
            Self::UnknownAcceptStat(v) => write!(f, "the server answered with unknown accept_stat {v}"),
            Self::RpcMismatch { low, high, .. } => write!(f, "the server supports RPC versions {low}..={high}, not 2 (RPC_MISMATCH)"),
            Self::Auth(v) => write!(f, "the server rejected the credentials: {v} (AUTH_ERROR)"),
            Self::BadReply(_) => f.write_str("malformed RPC reply"),
            Self::BadArgs(_) => f.write_str("arguments not sent"),
            Self::Results(_) => f.write_str("cannot decode the RPC results"),
        }
    }
}

impl std::error::Error for RpcError {
    /// The cause the message does not print: the error a variant wraps,
    /// or for [`RpcError::Transport`], whose message includes the
    /// transport's, that error's own cause.
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Connect(e) => Some(e),
            Self::BadReply(e) => Some(e),
            Self::BadArgs(e) => Some(e),
            Self::Results(e) => Some(e),
            Self::Transport { source, .. } => source.source(),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::error::Error;

    /// The messages of `e` and its causes, outermost first.
    fn chain(e: &(dyn Error + 'static)) -> Vec<String> {
        let mut out = vec![e.to_string()];
        let mut cause = e.source();
        while let Some(c) = cause {
            out.push(c.to_string());
            cause = c.source();
        }
        out
    }

    /// A printer of error chains names each cause once: no message
    /// repeats the one of its cause.
    #[test]
    fn each_cause_is_named_once() {
        let refused = || std::io::Error::from(std::io::ErrorKind::ConnectionRefused);
        let short = || XdrError::UnexpectedEnd {
            offset: 0,
            needed: 4,
            remaining: 0,
        };
        let cases: Vec<Box<dyn Error + 'static>> = vec![
            Box::new(RpcError::Connect(TransportError::Connect {
                addr: "127.0.0.1:1".into(),
                source: refused(),
            })),
            Box::new(RpcError::Connect(TransportError::Io(refused()))),
            Box::new(RpcError::Transport {
                xid: 7,
                source: TransportError::Io(refused()),
            }),
            Box::new(RpcError::Transport {
                xid: 7,
                source: TransportError::Backend("no Reply chunk".into()),
            }),
            Box::new(RpcError::BadReply(MessageError::Xdr(short()))),
            Box::new(RpcError::Results(short())),
            Box::new(AuthSysError::Malformed(short())),
        ];
        for e in &cases {
            let msgs = chain(e.as_ref());
            for w in msgs.windows(2) {
                assert!(!w[0].contains(&w[1]), "{msgs:?}");
            }
        }
        // What a chain printer shows for a refused connection.
        assert_eq!(
            chain(cases[0].as_ref()).join(": "),
            format!(
                "cannot reach the RPC server: cannot connect to 127.0.0.1:1: {}",
                refused()
            )
        );
        // The transport's error stays in the message of the call it failed.
        assert!(cases[3].to_string().contains("no Reply chunk"));
    }
}
