//! An RDMA verbs provider over rdma-core (libibverbs and librdmacm): the
//! [`rpcrdma_verbs`] interface on InfiniBand, RoCE and iWARP adapters and
//! on the Linux kernel's soft devices `rxe` (RoCE v2) and `siw` (iWARP).
//!
//! # Opt-in
//!
//! The provider proper is behind the `rdma-core` cargo feature, which
//! compiles a small C shim (`csrc/shim.c`: libibverbs' fast path is static
//! inline in its headers) and links libibverbs and librdmacm. Debian needs
//! `libibverbs-dev librdmacm-dev` (and a C compiler, which cargo needs
//! anyway). Without the feature this crate is its sans-IO part only (the
//! limits, status mappings, receive matching and gather planning, all
//! tested), the default build needs no C library, and [`OpenError::NotBuilt`]
//! tells how to get the provider.
//!
//! # What differs from the software iWARP provider
//!
//! * Keys are the device's (`ibv_reg_mr`), addresses are virtual
//!   addresses.
//! * Receives land in registered slots of the provider's, posted before
//!   the connection is established, and are copied into the caller's
//!   buffers ([`recv`]).
//! * Inline `Bytes` of a gather list are posted inline, copied into
//!   registered bounce buffers, or registered while the request is
//!   outstanding ([`gather`]).
//! * Regions cannot be invalidated remotely or locally (no memory windows
//!   or fast registration): the provider advertises no remote invalidation
//!   (R = 0) and refuses local invalidation requests.
//! * Device limits ([`DeviceLimits`]) clamp queue depths, gather lists and
//!   IRD/ORD; the RDMA-CM limits private data per transport
//!   ([`Transport::private_data_limits`]).
//! * iWARP RDMA Read sinks get remote write access
//!   ([`Transport::region_access`]).
//!
//! # Example (with the feature and a device)
//!
//! ```no_run
//! # #[cfg(feature = "rdma-core")]
//! # async fn f() -> Result<(), Box<dyn std::error::Error>> {
//! use rpcrdma_rdmacore::{DeviceConfig, Options, RdmaCore};
//! use rpcrdma_verbs::{Device, Listener};
//! let dev = RdmaCore::open(&DeviceConfig { name: Some("rxe0".into()), ..Default::default() })?;
//! println!("{} ({})", dev.info().name, dev.info().limits.transport.name());
//! let listener = dev.listen("10.0.2.15:20049".parse()?, Options::default()).await?;
//! let request = listener.accept().await?;
//! # Ok(()) }
//! ```
#![deny(unsafe_code)]

mod config;
pub mod gather;
mod info;
mod limits;
pub mod recv;
pub mod status;

#[cfg(feature = "rdma-core")]
mod sys;

pub use config::{DeviceConfig, Options};
pub use info::{DeviceInfo, OpenError, PortInfo, BUILT, HOW_TO_BUILD};
pub use limits::{
    check_private_data, negotiate_active, negotiate_passive, DeviceLimits, PrivateDataLimits,
    QpRequest, Transport, CM_RD_ATOM_MAX, WANTED_INLINE, WANTED_SGE,
};
pub use status::{
    cm_event_name, connect_failure, disconnect_reason, is_memlock_failure, memlock_text, wc_status,
    wc_status_name, DEVICE_REMOVED,
};
#[cfg(feature = "rdma-core")]
pub use sys::{Cq, Listener, Mr, Pd, Qp, RdmaCore, Request};
