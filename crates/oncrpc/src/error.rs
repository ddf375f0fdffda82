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
    #[error("malformed AUTH_SYS credential: {0}")]
    Malformed(XdrError),
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
    #[error("transport I/O error: {0}")]
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
    #[error("cannot connect to {addr}: {source}")]
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
    /// for one call, or a verbs error).
    #[error("{0}")]
    Backend(Box<dyn std::error::Error + Send + Sync>),
}

/// Why an RPC call did not produce results.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RpcError {
    /// No reply arrived in time. The call's resources were released.
    #[error("RPC call {xid:#010x} timed out after {after:?} (raise the client timeout or check the server)")]
    Timeout {
        /// Transaction id.
        xid: u32,
        /// The timeout that expired.
        after: Duration,
    },
    /// The connection was lost and retransmission on new connections was
    /// exhausted (or is not possible for this client).
    #[error("RPC call {xid:#010x} failed: connection lost {attempts} time(s); giving up")]
    ConnectionLost {
        /// Transaction id.
        xid: u32,
        /// Connections the call was sent on.
        attempts: u32,
    },
    /// No connection could be made.
    #[error("cannot reach the RPC server: {0}")]
    Connect(#[source] TransportError),
    /// The transport failed this call (for example an RPC-over-RDMA
    /// `RDMA_ERROR`).
    #[error("RPC call {xid:#010x}: {source}")]
    Transport {
        /// Transaction id.
        xid: u32,
        /// The transport's error.
        #[source]
        source: TransportError,
    },
    /// The client was shut down (or, for a reverse-direction client, the
    /// server).
    #[error("the RPC client was shut down")]
    Shutdown,
    /// A reverse-direction call on a connection whose client has not said
    /// it takes them (RFC 8167 §6). Nothing was sent; the connection is
    /// unaffected.
    #[error("reverse-direction call {xid:#010x} refused: the client has not said it takes reverse-direction calls on this connection (RFC 8167 §6); the server's Upper Layer must call Connection::peer_ready_for_callbacks first")]
    BackchannelNotReady {
        /// Transaction id.
        xid: u32,
    },
    /// A reverse-direction call found no connection from its client that
    /// is ready for callbacks within the bound: the client's connection
    /// was lost (or never declared ready) and the client did not come back
    /// in time. A server cannot reconnect to a client (RFC 8167 §5.4).
    #[error("reverse-direction call {xid:#010x}: no connection from client {key} ready for callbacks within {waited:?} (sent {attempts} time(s)); a server cannot reconnect (RFC 8167 §5.4): the client must reconnect and declare readiness again, or raise ServerConfig::callback_reconnect_wait")]
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
    #[error("program {prog} is not available on the server (PROG_UNAVAIL)")]
    ProgUnavail {
        /// Program.
        prog: u32,
    },
    /// `PROG_MISMATCH`: the server offers other versions.
    #[error("program {prog} version {vers} is not supported; the server offers versions {low}..={high} (PROG_MISMATCH)")]
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
    #[error("procedure {proc_} of program {prog} version {vers} is not available (PROC_UNAVAIL)")]
    ProcUnavail {
        /// Program.
        prog: u32,
        /// Version.
        vers: u32,
        /// Procedure.
        proc_: u32,
    },
    /// `GARBAGE_ARGS`: the server could not decode the arguments.
    #[error("the server could not decode the arguments (GARBAGE_ARGS)")]
    GarbageArgs,
    /// `SYSTEM_ERR`.
    #[error("the server failed to run the procedure (SYSTEM_ERR)")]
    SystemErr,
    /// An `accept_stat` RFC 5531 does not define.
    #[error("the server answered with unknown accept_stat {0}")]
    UnknownAcceptStat(AcceptStat),
    /// `RPC_MISMATCH`.
    #[error("the server supports RPC versions {low}..={high}, not 2 (RPC_MISMATCH)")]
    RpcMismatch {
        /// Lowest version supported.
        low: u32,
        /// Highest version supported.
        high: u32,
    },
    /// `AUTH_ERROR` with its `auth_stat`.
    #[error("the server rejected the credentials: {0} (AUTH_ERROR)")]
    Auth(AuthStat),
    /// The reply header could not be decoded.
    #[error("malformed RPC reply: {0}")]
    BadReply(#[source] MessageError),
    /// The arguments break the limits of their XDR declaration (checked
    /// by generated client stubs before anything is sent).
    #[error("arguments not sent: {0}")]
    BadArgs(#[source] EncodeError),
    /// The results could not be decoded (or violated DDP placement).
    #[error("cannot decode the RPC results: {0}")]
    Results(#[source] XdrError),
}
