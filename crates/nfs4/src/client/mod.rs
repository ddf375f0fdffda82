//! An NFSv4.1 client (RFC 8881) over any ONC RPC transport —
//! RPC-over-RDMA or TCP — that answers the server's callbacks on its own
//! connection (over RPC-over-RDMA, reverse-direction calls, RFC 8167).
//!
//! * Sessions: EXCHANGE_ID, CREATE_SESSION with a back channel on the
//!   client's connection, SEQUENCE on a slot table ([`slots`]); a request
//!   whose connection is lost goes again on the same slot with the same
//!   sequence id, so the server answers it from its reply cache; each new
//!   connection is bound to the session again (BIND_CONN_TO_SESSION);
//!   the lease is renewed when the client is idle ([`session`]).
//! * Files: LOOKUP, GETATTR, READDIR, OPEN, READ, WRITE, COMMIT, CLOSE,
//!   CREATE, REMOVE, RENAME, LOCK, LOCKU ([`Nfs4Client`], [`File`]), with
//!   several READs or WRITEs in flight and the NFS Upper-Layer Binding
//!   (RFC 8267: READ data in Write chunks, WRITE data in Read chunks;
//!   [`ops`]).
//! * Recovery: when the server restarts, a new client record and session,
//!   then every open and lock reclaimed in its grace period (CLAIM_PREVIOUS,
//!   LOCK `reclaim`), RECLAIM_COMPLETE ([`state`] holds what to reclaim).
//! * The backchannel ([`Callbacks`], [`callback`]): CB_NULL and
//!   CB_COMPOUND (CB_SEQUENCE, CB_RECALL, CB_RECALL_ANY, CB_NOTIFY,
//!   CB_NOTIFY_LOCK, CB_RECALL_SLOT) within the back channel attributes the
//!   session negotiated; a recalled delegation is returned (DELEGRETURN)
//!   after the file's cached writes are flushed.
//! * Errors are typed: [`Nfs4Error`], with every `NFS4ERR_*` a [`Status`].
//!
//! ```no_run
//! # async fn f(addr: std::net::SocketAddr) -> Result<(), rpcrdma_nfs4::client::Nfs4Error> {
//! use rpcrdma_nfs4::client::{Nfs4Client, Nfs4ClientConfig, OpenOptions};
//! use rpcrdma_oncrpc::{tcp::TcpConnector, ClientConfig};
//! let nfs = Nfs4Client::connect(TcpConnector::new(addr), ClientConfig::default(), Nfs4ClientConfig::default()).await?;
//! let (dir, _) = nfs.lookup_path(b"/dir").await?;
//! let file = nfs.open(&dir, b"file.bin", OpenOptions::read()).await?;
//! let mut data = Vec::new();
//! file.read_to(file.attrs().size, |chunk| { data.extend_from_slice(chunk); Ok(()) }).await?;
//! file.close().await?;
//! nfs.close().await?;
//! # Ok(()) }
//! ```

use std::sync::Arc;

use rpcrdma_oncrpc::{Client, ClientConfig, Connector};

pub mod attrs;
mod backchannel;
mod cache;
pub mod callback;
mod config;
mod driver;
pub mod error;
mod file;
mod files;
pub mod ops;
mod recovery;
pub mod session;
pub mod slots;
pub mod state;
mod tasks;

pub use attrs::{Attrs, FileKind, SetAttrs, Time};
pub use backchannel::{Callbacks, CbStats, CB_PROGRAM};
pub use config::Nfs4ClientConfig;
pub use driver::{ClientEvent, Report};
pub use error::{status_name, Lost, Nfs4Error, Result, Status, Violation};
pub use file::{File, WRITE_BEHIND};
pub use files::{DirEntry, OpenOptions, MAX_LIST};
pub use session::BackChannelLimits;

use crate::proto::nfs4 as p;

/// An NFSv4.1 client: one client record and session on one server. Cheap
/// to clone (the clones share everything).
#[derive(Clone)]
pub struct Nfs4Client {
    inner: Arc<driver::Inner>,
}

impl std::fmt::Debug for Nfs4Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = self.report();
        f.debug_struct("Nfs4Client")
            .field("clientid", &format_args!("{:#018x}", s.clientid))
            .field("session", &driver::hex(&s.session))
            .finish_non_exhaustive()
    }
}

impl Nfs4Client {
    /// Connects with `connector` (the callback service put in `rpc`'s
    /// services) and starts the client.
    pub async fn connect<C: Connector>(
        connector: C,
        mut rpc: ClientConfig,
        cfg: Nfs4ClientConfig,
    ) -> Result<Self> {
        let callbacks = Callbacks::default();
        if cfg.backchannel {
            rpc.services = callbacks.services();
        }
        let client = Client::connect(connector, rpc)
            .await
            .map_err(|source| Nfs4Error::Rpc {
                op: "connect",
                source,
            })?;
        Self::start(client, callbacks, cfg).await
    }

    /// Starts a client on an ONC RPC client whose configuration serves
    /// `callbacks`' services (`ClientConfig::services`): NULL, EXCHANGE_ID,
    /// CREATE_SESSION, RECLAIM_COMPLETE, the root's handle and limits.
    /// A server without NFSv4 at `cfg`'s minor version is
    /// [`Nfs4Error::Unsupported`].
    pub async fn start(rpc: Client, callbacks: Callbacks, cfg: Nfs4ClientConfig) -> Result<Self> {
        let nfs = p::nfs_v4::Client::new(rpc);
        let (inner, rx) = driver::Inner::new(nfs, callbacks, cfg);
        inner.start(rx).await?;
        Ok(Self { inner })
    }

    /// The session's terms, the backchannel's counts, the status flags seen.
    pub fn report(&self) -> Report {
        self.inner.report()
    }

    /// Events: delegations granted, recalled and returned, recoveries.
    pub fn events(&self) -> tokio::sync::broadcast::Receiver<ClientEvent> {
        self.inner.subscribe()
    }

    /// Binds the current connection to the session again
    /// (BIND_CONN_TO_SESSION, fore and back channel).
    pub async fn bind_connection(&self) -> Result<()> {
        self.inner.bind_conn().await
    }

    /// The ONC RPC client underneath.
    pub fn rpc(&self) -> &Client {
        self.inner.nfs.rpc()
    }

    /// Returns the delegations, then DESTROY_SESSION and DESTROY_CLIENTID.
    pub async fn close(&self) -> Result<()> {
        self.inner.close().await
    }
}
