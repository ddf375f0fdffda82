//! The client side: connecting, with RFC 8797 private data and a memory of
//! which responders lack Version Two (draft-cel-01 §5.2).

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use rpcrdma_engine::{Engine, EngineConfig, EngineError, ErrCode, VersionPolicy};
use rpcrdma_oncrpc::{Connector, TransportError};
use rpcrdma_sync::lock;
use rpcrdma_verbs::{Device, QpCaps, QpParams, QueuePair};

use crate::error::RdmaError;
use crate::transport::{Hooks, RdmaTransport};

/// Remembers responders that answered a Version Two probe with `ERR_VERS`
/// (or never answered it: no answer within the negotiation timeout, or
/// the connection lost with the probe unanswered), so later connections
/// to them start with Version One instead of negotiating again
/// (draft-cel-01 §5.2). A probe
/// refused with another error (`ERR_BADHEADER`) makes the connection fall
/// back at once but is not remembered: it does not say the responder lacks
/// Version Two (spec note E25). Cheap to clone; clones share.
#[derive(Debug, Clone, Default)]
pub struct VersionMemory {
    v1_only: Arc<Mutex<HashMap<SocketAddr, bool>>>,
}

impl VersionMemory {
    /// An empty memory.
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether `addr` is known to lack Version Two.
    pub fn lacks_v2(&self, addr: SocketAddr) -> bool {
        self.lock().get(&addr).copied().unwrap_or(false)
    }

    /// Records that `addr` lacks Version Two.
    pub fn set_lacks_v2(&self, addr: SocketAddr) {
        self.lock().insert(addr, true);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<SocketAddr, bool>> {
        lock(&self.v1_only)
    }
}

/// Everything a client needs to open RPC-over-RDMA connections to one
/// address. Implements [`Connector`], so `rpcrdma_oncrpc::Client` can
/// reconnect and retransmit through it.
pub struct RdmaConnector<D: Device> {
    device: D,
    addr: SocketAddr,
    config: EngineConfig,
    options: D::Options,
    caps: QpCaps,
    memory: VersionMemory,
    current: Arc<Mutex<Option<RdmaTransport<D>>>>,
}

impl<D: Device + Clone> Clone for RdmaConnector<D> {
    fn clone(&self) -> Self {
        Self {
            device: self.device.clone(),
            addr: self.addr,
            config: self.config.clone(),
            options: self.options.clone(),
            caps: self.caps,
            memory: self.memory.clone(),
            current: self.current.clone(),
        }
    }
}

/// Gives access to the connector's most recent connection after the
/// connector has been handed to a client.
#[derive(Clone)]
pub struct ConnectorHandle<D: Device> {
    current: Arc<Mutex<Option<RdmaTransport<D>>>>,
}

impl<D: Device> ConnectorHandle<D> {
    /// The most recent connection, if any.
    pub fn transport(&self) -> Option<RdmaTransport<D>> {
        rpcrdma_sync::lock(&self.current).clone()
    }
}

impl<D: Device> RdmaConnector<D> {
    /// A connector to `addr` with `config` (role must be client). Its
    /// queue pairs' receive queue holds, unless [`Self::caps`] says
    /// otherwise, a receive for every credit `config` asks for plus one for
    /// every reverse-direction call it grants (RFC 8167 §4.3.1): with the
    /// defaults 128 + 8, so the client asks for 128 credits and grants 8
    /// (spec note E29).
    pub fn new(device: D, addr: SocketAddr, config: EngineConfig) -> Self {
        let caps = QpCaps {
            recv_depth: QpCaps::default().recv_depth.max(
                config
                    .credits_request
                    .saturating_add(config.backchannel_credits),
            ),
            ..QpCaps::default()
        };
        Self {
            device,
            addr,
            config,
            options: D::Options::default(),
            caps,
            memory: VersionMemory::new(),
            current: Arc::new(Mutex::new(None)),
        }
    }

    /// A connector to `addr` with the client defaults
    /// ([`EngineConfig::client`]: negotiate Version Two, fall back to
    /// Version One; 4 KiB inline thresholds; 128 credits asked, 8 granted
    /// for reverse-direction calls). [`RdmaConnector::new`] takes another
    /// configuration.
    pub fn with_defaults(device: D, addr: SocketAddr) -> Self {
        Self::new(device, addr, EngineConfig::client())
    }

    /// Sets the provider's connection options.
    #[must_use]
    pub fn options(mut self, options: D::Options) -> Self {
        self.options = options;
        self
    }

    /// Sets the queue pair sizes.
    #[must_use]
    pub fn caps(mut self, caps: QpCaps) -> Self {
        self.caps = caps;
        self
    }

    /// Shares a version memory with other connectors.
    #[must_use]
    pub fn version_memory(mut self, memory: VersionMemory) -> Self {
        self.memory = memory;
        self
    }

    /// A handle to the latest connection.
    pub fn handle(&self) -> ConnectorHandle<D> {
        ConnectorHandle {
            current: self.current.clone(),
        }
    }

    /// Opens one connection (also used by `rpcrdma probe`).
    pub async fn open(&self) -> Result<RdmaTransport<D>, RdmaError> {
        let mut cfg = self.config.clone();
        // R = 1 only where the device's regions can be invalidated remotely.
        cfg.remote_invalidate &= self.device.remote_invalidation();
        if cfg.client_version == VersionPolicy::Negotiate && self.memory.lacks_v2(self.addr) {
            tracing::debug!(addr = %self.addr, "responder known to lack Version Two; using Version One");
            cfg.client_version = VersionPolicy::V1;
        }
        let pd = self.device.alloc_pd()?;
        let cq = self
            .device
            .create_cq((self.caps.send_depth + self.caps.recv_depth) as usize + 16)?;
        let private = Bytes::copy_from_slice(&cfg.private_data().to_bytes());
        let params = QpParams::new(&pd, &cq, self.options.clone()).with_caps(self.caps);
        let (qp, peer_private) = self
            .device
            .connect(self.addr, params, private)
            .await
            .map_err(|source| RdmaError::Connect {
                addr: self.addr,
                source,
            })?;
        let engine = Engine::new(cfg, pd, qp.caps(), Some(&peer_private))?;
        let (m1, m2, addr) = (self.memory.clone(), self.memory.clone(), self.addr);
        let hooks = Hooks {
            on_negotiated: Some(Box::new(move |_v, cause| {
                if cause == Some(ErrCode::VERS) {
                    m1.set_lacks_v2(addr);
                }
            })),
            on_fatal: Some(Box::new(move |e, probe_unanswered| {
                // The probe was lost (draft-cel-01 §5.2): no answer in time,
                // or the responder dropped the connection on it (not our
                // own close).
                if probe_unanswered && !matches!(e, EngineError::Closed) {
                    m2.set_lacks_v2(addr);
                }
            })),
        };
        let t = RdmaTransport::with_hooks(engine, qp, cq, self.addr, peer_private, hooks);
        *lock(&self.current) = Some(t.clone());
        Ok(t)
    }
}

impl<D: Device> Connector for RdmaConnector<D> {
    type Transport = RdmaTransport<D>;

    async fn connect(&self) -> Result<RdmaTransport<D>, TransportError> {
        self.open()
            .await
            .map_err(|e| TransportError::Backend(Box::new(e)))
    }
}
