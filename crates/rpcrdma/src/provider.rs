//! Which verbs provider carries RPC-over-RDMA.

/// The verbs provider of RPC-over-RDMA connections and listeners.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Provider {
    /// The software iWARP provider: MPA/DDP/RDMAP over TCP in user space,
    /// no RDMA hardware and no kernel module needed; talks to Linux `siw`
    /// and iWARP adapters.
    #[default]
    SoftIwarp,
    /// An RDMA device through rdma-core (libibverbs/librdmacm):
    /// InfiniBand, RoCE and iWARP adapters, Linux `rxe` and `siw`
    /// (feature `rdma-core`). The configuration names the device (`None`:
    /// the first with an active port).
    #[cfg(feature = "rdma-core")]
    RdmaCore(rpcrdma_rdmacore::DeviceConfig),
}

/// The rdma-core provider's options for an engine configured as `engine`:
/// receive slots as large as the inline threshold it advertises.
#[cfg(feature = "rdma-core")]
pub(crate) fn rdmacore_options(engine: &rpcrdma_engine::EngineConfig) -> rpcrdma_rdmacore::Options {
    rpcrdma_rdmacore::Options {
        recv_size: (engine.inline_recv as usize).max(1024),
        ..rpcrdma_rdmacore::Options::default()
    }
}
