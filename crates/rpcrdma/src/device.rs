//! [`AnyDevice`]: one verbs device type whose provider is chosen at run
//! time, and the objects it makes.
//!
//! The stack's RDMA code is generic over [`Device`]; a program that picks
//! the provider from its command line or configuration would otherwise
//! compile its code once per provider and dispatch to the right copy.
//! `AnyDevice` is a `Device` whose every object (protection domain,
//! region, completion queue, queue pair, listener, connection request) is
//! an enum over the providers' own, each verb a `match` to the provider's:
//! the code is compiled once and runs on whichever device was opened.

use std::net::SocketAddr;
use std::task::{Context, Poll};

use bytes::{Bytes, BytesMut};
use rpcrdma_engine::EngineConfig;
use rpcrdma_softiwarp::SoftIwarp;
use rpcrdma_verbs::{
    Access, CompletionQueue, ConnectError, ConnectRequest, DeregisterError, Device,
    DisconnectReason, Listener, LocalSge, MemoryRegion, MrBuffer, PostError, ProtectionDomain,
    QpCaps, QpParams, QueuePair, RecvWr, RegisterError, RemoteAddr, ResourceError, SendWr,
    WorkCompletion,
};

use crate::error::Error;
use crate::provider::Provider;

/// Runs `$body` with `$x` bound to the provider's object inside `$value`
/// (an enum of this module), whatever the provider.
macro_rules! dispatch {
    ($value:expr, $ty:ident, $x:ident => $body:expr) => {
        match $value {
            $ty::SoftIwarp($x) => $body,
            #[cfg(feature = "rdma-core")]
            $ty::RdmaCore($x) => $body,
        }
    };
}

/// Implements `From` the providers' type for one of this module's enums.
macro_rules! from_providers {
    ($ty:ident, $soft:ty, $core:ty) => {
        impl From<$soft> for $ty {
            fn from(x: $soft) -> Self {
                $ty::SoftIwarp(x)
            }
        }
        #[cfg(feature = "rdma-core")]
        impl From<$core> for $ty {
            fn from(x: $core) -> Self {
                $ty::RdmaCore(x)
            }
        }
    };
}

/// A verbs device of the provider chosen at run time: software iWARP, or
/// (feature `rdma-core`) an RDMA device through rdma-core.
///
/// It implements [`Device`], so everything generic over a device
/// ([`crate::RdmaConnector`], [`crate::transport::serve_rdma`], the verbs
/// themselves) takes it; its objects are the `Any*` enums of this module,
/// which forward each verb to the provider's object. Objects of one
/// device must not be used with another device of a different provider
/// (the verbs' own rule: a queue pair uses its device's protection domain
/// and completion queues).
///
/// ```no_run
/// use rpcrdma::{AnyDevice, AnyOptions, EngineConfig, Provider, RdmaConnector};
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// // Software iWARP here; `Provider::RdmaCore(config)` with the
/// // `rdma-core` feature: the code below stays the same.
/// let device = AnyDevice::open(&Provider::SoftIwarp)?;
/// let engine = EngineConfig::client();
/// let options = AnyOptions::for_engine(&engine);
/// let connector = RdmaConnector::new(device, "192.0.2.1:20049".parse()?, engine)
///     .options(options);
/// let client = rpcrdma::Client::connect(connector, Default::default()).await?;
/// # drop(client);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub enum AnyDevice {
    /// The software iWARP provider (no RDMA hardware needed).
    SoftIwarp(SoftIwarp),
    /// An rdma-core device (feature `rdma-core`).
    #[cfg(feature = "rdma-core")]
    RdmaCore(rpcrdma_rdmacore::RdmaCore),
}

from_providers!(AnyDevice, SoftIwarp, rpcrdma_rdmacore::RdmaCore);

impl AnyDevice {
    /// Opens the device of `provider`: a new software iWARP device, or the
    /// rdma-core device its configuration names. Fails only for rdma-core
    /// (`Error::Device`: no such device, none at all), with an error
    /// saying what to do.
    pub fn open(provider: &Provider) -> Result<AnyDevice, Error> {
        match provider {
            Provider::SoftIwarp => Ok(AnyDevice::SoftIwarp(SoftIwarp::new())),
            #[cfg(feature = "rdma-core")]
            Provider::RdmaCore(config) => rpcrdma_rdmacore::RdmaCore::open(config)
                .map(AnyDevice::RdmaCore)
                .map_err(Error::Device),
        }
    }

    /// The provider's name: "software iWARP" or "rdma-core".
    pub fn provider_name(&self) -> &'static str {
        match self {
            AnyDevice::SoftIwarp(_) => "software iWARP",
            #[cfg(feature = "rdma-core")]
            AnyDevice::RdmaCore(_) => "rdma-core",
        }
    }
}

/// The connection options of every provider; a connection takes those of
/// its device's provider.
#[derive(Debug, Clone, Default)]
pub struct AnyOptions {
    /// Software iWARP: MPA revision, CRC, peer-to-peer mode, ...
    pub softiwarp: rpcrdma_softiwarp::Options,
    /// rdma-core: receive slot size, timeouts, retries (feature
    /// `rdma-core`).
    #[cfg(feature = "rdma-core")]
    pub rdmacore: rpcrdma_rdmacore::Options,
}

impl AnyOptions {
    /// The defaults for an engine configured as `engine`: rdma-core's
    /// receive slots as large as the inline threshold it advertises (the
    /// largest message a peer may Send it).
    pub fn for_engine(engine: &EngineConfig) -> AnyOptions {
        #[cfg(not(feature = "rdma-core"))]
        let _ = engine;
        AnyOptions {
            softiwarp: Default::default(),
            #[cfg(feature = "rdma-core")]
            rdmacore: crate::provider::rdmacore_options(engine),
        }
    }
}

/// A protection domain of an [`AnyDevice`].
#[derive(Debug, Clone)]
pub enum AnyPd {
    /// Software iWARP's.
    SoftIwarp(rpcrdma_softiwarp::Pd),
    /// rdma-core's.
    #[cfg(feature = "rdma-core")]
    RdmaCore(rpcrdma_rdmacore::Pd),
}

from_providers!(AnyPd, rpcrdma_softiwarp::Pd, rpcrdma_rdmacore::Pd);

/// A memory region of an [`AnyDevice`].
#[derive(Debug)]
pub enum AnyMr {
    /// Software iWARP's.
    SoftIwarp(rpcrdma_softiwarp::Mr),
    /// rdma-core's.
    #[cfg(feature = "rdma-core")]
    RdmaCore(rpcrdma_rdmacore::Mr),
}

from_providers!(AnyMr, rpcrdma_softiwarp::Mr, rpcrdma_rdmacore::Mr);

/// A completion queue of an [`AnyDevice`].
#[derive(Debug, Clone)]
pub enum AnyCq {
    /// Software iWARP's.
    SoftIwarp(rpcrdma_softiwarp::Cq),
    /// rdma-core's.
    #[cfg(feature = "rdma-core")]
    RdmaCore(rpcrdma_rdmacore::Cq),
}

from_providers!(AnyCq, rpcrdma_softiwarp::Cq, rpcrdma_rdmacore::Cq);

/// A queue pair of an [`AnyDevice`].
#[derive(Debug)]
pub enum AnyQp {
    /// Software iWARP's.
    SoftIwarp(rpcrdma_softiwarp::Qp),
    /// rdma-core's.
    #[cfg(feature = "rdma-core")]
    RdmaCore(rpcrdma_rdmacore::Qp),
}

from_providers!(AnyQp, rpcrdma_softiwarp::Qp, rpcrdma_rdmacore::Qp);

/// A listener of an [`AnyDevice`].
#[derive(Debug)]
pub enum AnyListener {
    /// Software iWARP's.
    SoftIwarp(rpcrdma_softiwarp::SoftListener),
    /// rdma-core's.
    #[cfg(feature = "rdma-core")]
    RdmaCore(rpcrdma_rdmacore::Listener),
}

from_providers!(
    AnyListener,
    rpcrdma_softiwarp::SoftListener,
    rpcrdma_rdmacore::Listener
);

/// A connection request that came to an [`AnyListener`].
// One per connection, moved a few times before it is accepted: not worth
// a box.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub enum AnyRequest {
    /// Software iWARP's (an MPA request).
    SoftIwarp(rpcrdma_softiwarp::Request),
    /// rdma-core's (an RDMA-CM request).
    #[cfg(feature = "rdma-core")]
    RdmaCore(rpcrdma_rdmacore::Request),
}

from_providers!(
    AnyRequest,
    rpcrdma_softiwarp::Request,
    rpcrdma_rdmacore::Request
);

/// The panic of a protection domain or completion queue of one provider
/// given to another's connection (API misuse).
#[cfg(feature = "rdma-core")]
fn mismatch(what: &str) -> ! {
    panic!("AnyDevice: {what} of another provider's device given to a connection")
}

/// `params` for software iWARP.
///
/// # Panics
/// If the protection domain or a completion queue is another provider's.
fn softiwarp_params(params: QpParams<'_, AnyDevice>) -> QpParams<'_, SoftIwarp> {
    fn pd(pd: &AnyPd) -> &rpcrdma_softiwarp::Pd {
        match pd {
            AnyPd::SoftIwarp(pd) => pd,
            #[cfg(feature = "rdma-core")]
            _ => mismatch("a protection domain"),
        }
    }
    fn cq(cq: &AnyCq) -> &rpcrdma_softiwarp::Cq {
        match cq {
            AnyCq::SoftIwarp(cq) => cq,
            #[cfg(feature = "rdma-core")]
            _ => mismatch("a completion queue"),
        }
    }
    QpParams {
        pd: pd(params.pd),
        send_cq: cq(params.send_cq),
        recv_cq: cq(params.recv_cq),
        caps: params.caps,
        options: params.options.softiwarp,
    }
}

/// `params` for rdma-core.
///
/// # Panics
/// If the protection domain or a completion queue is another provider's.
#[cfg(feature = "rdma-core")]
fn rdmacore_params(params: QpParams<'_, AnyDevice>) -> QpParams<'_, rpcrdma_rdmacore::RdmaCore> {
    fn pd(pd: &AnyPd) -> &rpcrdma_rdmacore::Pd {
        match pd {
            AnyPd::RdmaCore(pd) => pd,
            _ => mismatch("a protection domain"),
        }
    }
    fn cq(cq: &AnyCq) -> &rpcrdma_rdmacore::Cq {
        match cq {
            AnyCq::RdmaCore(cq) => cq,
            _ => mismatch("a completion queue"),
        }
    }
    QpParams {
        pd: pd(params.pd),
        send_cq: cq(params.send_cq),
        recv_cq: cq(params.recv_cq),
        caps: params.caps,
        options: params.options.rdmacore,
    }
}

impl Device for AnyDevice {
    type Pd = AnyPd;
    type Mr = AnyMr;
    type Cq = AnyCq;
    type Qp = AnyQp;
    type Listener = AnyListener;
    type Request = AnyRequest;
    type Options = AnyOptions;

    fn remote_invalidation(&self) -> bool {
        dispatch!(self, AnyDevice, d => d.remote_invalidation())
    }

    fn alloc_pd(&self) -> Result<AnyPd, ResourceError> {
        dispatch!(self, AnyDevice, d => d.alloc_pd().map(Into::into))
    }

    fn create_cq(&self, capacity: usize) -> Result<AnyCq, ResourceError> {
        dispatch!(self, AnyDevice, d => d.create_cq(capacity).map(Into::into))
    }

    async fn listen(&self, addr: SocketAddr, options: AnyOptions) -> std::io::Result<AnyListener> {
        match self {
            AnyDevice::SoftIwarp(d) => d.listen(addr, options.softiwarp).await.map(Into::into),
            #[cfg(feature = "rdma-core")]
            AnyDevice::RdmaCore(d) => d.listen(addr, options.rdmacore).await.map(Into::into),
        }
    }

    /// # Panics
    /// If the protection domain or a completion queue of `params` is
    /// another provider's.
    async fn connect(
        &self,
        addr: SocketAddr,
        params: QpParams<'_, AnyDevice>,
        private_data: Bytes,
    ) -> Result<(AnyQp, Bytes), ConnectError> {
        match self {
            AnyDevice::SoftIwarp(d) => d
                .connect(addr, softiwarp_params(params), private_data)
                .await
                .map(|(qp, pd)| (qp.into(), pd)),
            #[cfg(feature = "rdma-core")]
            AnyDevice::RdmaCore(d) => d
                .connect(addr, rdmacore_params(params), private_data)
                .await
                .map(|(qp, pd)| (qp.into(), pd)),
        }
    }
}

impl ProtectionDomain for AnyPd {
    type Mr = AnyMr;

    fn register_bytes(&self, buf: Bytes, access: Access) -> Result<AnyMr, RegisterError> {
        dispatch!(self, AnyPd, pd => pd.register_bytes(buf, access).map(Into::into))
    }

    fn register_mut(&self, buf: BytesMut, access: Access) -> Result<AnyMr, RegisterError> {
        dispatch!(self, AnyPd, pd => pd.register_mut(buf, access).map(Into::into))
    }
}

impl MemoryRegion for AnyMr {
    #[inline]
    fn lkey(&self) -> u32 {
        dispatch!(self, AnyMr, mr => mr.lkey())
    }

    #[inline]
    fn rkey(&self) -> u32 {
        dispatch!(self, AnyMr, mr => mr.rkey())
    }

    #[inline]
    fn addr(&self) -> u64 {
        dispatch!(self, AnyMr, mr => mr.addr())
    }

    #[inline]
    fn len(&self) -> usize {
        dispatch!(self, AnyMr, mr => mr.len())
    }

    #[inline]
    fn is_empty(&self) -> bool {
        dispatch!(self, AnyMr, mr => mr.is_empty())
    }

    fn access(&self) -> Access {
        dispatch!(self, AnyMr, mr => mr.access())
    }

    #[inline]
    fn sge(&self, offset: usize, len: usize) -> LocalSge {
        dispatch!(self, AnyMr, mr => mr.sge(offset, len))
    }

    #[inline]
    fn remote(&self, offset: usize) -> RemoteAddr {
        dispatch!(self, AnyMr, mr => mr.remote(offset))
    }

    fn deregister(self) -> Result<MrBuffer, DeregisterError> {
        dispatch!(self, AnyMr, mr => mr.deregister())
    }
}

impl CompletionQueue for AnyCq {
    #[inline]
    fn poll(&self, out: &mut Vec<WorkCompletion>, max: usize) -> usize {
        dispatch!(self, AnyCq, cq => cq.poll(out, max))
    }

    async fn wait(&self) {
        dispatch!(self, AnyCq, cq => cq.wait().await)
    }

    #[inline]
    fn poll_wait(&self, cx: &mut Context<'_>) -> Poll<()> {
        dispatch!(self, AnyCq, cq => cq.poll_wait(cx))
    }

    #[inline]
    fn poll_next_batch(
        &self,
        out: &mut Vec<WorkCompletion>,
        max: usize,
        cx: &mut Context<'_>,
    ) -> Poll<usize> {
        dispatch!(self, AnyCq, cq => cq.poll_next_batch(out, max, cx))
    }

    fn pause(&self) {
        dispatch!(self, AnyCq, cq => cq.pause())
    }

    fn capacity(&self) -> usize {
        dispatch!(self, AnyCq, cq => cq.capacity())
    }
}

impl QueuePair for AnyQp {
    #[inline]
    fn post_send(&self, wr: SendWr) -> Result<(), PostError> {
        dispatch!(self, AnyQp, qp => qp.post_send(wr))
    }

    #[inline]
    fn post_send_chain<I>(&self, wrs: I) -> Result<(), PostError>
    where
        I: IntoIterator<Item = SendWr>,
    {
        dispatch!(self, AnyQp, qp => qp.post_send_chain(wrs))
    }

    #[inline]
    fn post_recv(&self, wr: RecvWr) -> Result<(), PostError> {
        dispatch!(self, AnyQp, qp => qp.post_recv(wr))
    }

    #[inline]
    fn post_recv_chain<I>(&self, wrs: I) -> Result<(), PostError>
    where
        I: IntoIterator<Item = RecvWr>,
    {
        dispatch!(self, AnyQp, qp => qp.post_recv_chain(wrs))
    }

    fn caps(&self) -> QpCaps {
        dispatch!(self, AnyQp, qp => qp.caps())
    }

    async fn disconnect(&self) {
        dispatch!(self, AnyQp, qp => qp.disconnect().await)
    }

    fn abort(&self) {
        dispatch!(self, AnyQp, qp => qp.abort())
    }

    async fn closed(&self) -> DisconnectReason {
        dispatch!(self, AnyQp, qp => qp.closed().await)
    }
}

impl Listener for AnyListener {
    type Device = AnyDevice;

    async fn accept(&self) -> Result<AnyRequest, ConnectError> {
        dispatch!(self, AnyListener, l => l.accept().await.map(Into::into))
    }

    fn local_addr(&self) -> SocketAddr {
        dispatch!(self, AnyListener, l => l.local_addr())
    }
}

impl ConnectRequest for AnyRequest {
    type Device = AnyDevice;

    fn private_data(&self) -> &Bytes {
        dispatch!(self, AnyRequest, r => r.private_data())
    }

    fn ird_ord(&self) -> Option<(u16, u16)> {
        dispatch!(self, AnyRequest, r => r.ird_ord())
    }

    fn peer_addr(&self) -> SocketAddr {
        dispatch!(self, AnyRequest, r => r.peer_addr())
    }

    /// # Panics
    /// If the protection domain or a completion queue of `params` is
    /// another provider's.
    async fn accept(
        self,
        params: QpParams<'_, AnyDevice>,
        private_data: Bytes,
    ) -> Result<AnyQp, ConnectError> {
        match self {
            AnyRequest::SoftIwarp(r) => r
                .accept(softiwarp_params(params), private_data)
                .await
                .map(Into::into),
            #[cfg(feature = "rdma-core")]
            AnyRequest::RdmaCore(r) => r
                .accept(rdmacore_params(params), private_data)
                .await
                .map(Into::into),
        }
    }

    async fn reject(self, private_data: Bytes) -> Result<(), ConnectError> {
        dispatch!(self, AnyRequest, r => r.reject(private_data).await)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn softiwarp_opens_and_makes_its_objects() {
        let dev = AnyDevice::open(&Provider::SoftIwarp).unwrap();
        assert_eq!(dev.provider_name(), "software iWARP");
        assert!(dev.remote_invalidation());
        let pd = dev.alloc_pd().unwrap();
        assert!(matches!(pd, AnyPd::SoftIwarp(_)));
        let cq = dev.create_cq(16).unwrap();
        assert_eq!(cq.capacity(), 16);
        let mr = pd
            .register_bytes(Bytes::from_static(b"abcd"), Access::REMOTE_READ)
            .unwrap();
        assert_eq!(mr.len(), 4);
        assert_eq!(mr.sge(1, 2).len, 2);
        assert_eq!(mr.remote(0).rkey, mr.rkey());
        assert!(mr.deregister().is_ok());
    }

    #[test]
    fn a_connection_over_any_device() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let dev = AnyDevice::from(SoftIwarp::new());
            let l = dev
                .listen("127.0.0.1:0".parse().unwrap(), AnyOptions::default())
                .await
                .unwrap();
            let at = l.local_addr();
            let server = {
                let dev = dev.clone();
                tokio::spawn(async move {
                    let req = l.accept().await.unwrap();
                    assert_eq!(req.private_data().as_ref(), b"hi");
                    let pd = dev.alloc_pd().unwrap();
                    let cq = dev.create_cq(64).unwrap();
                    let qp = req
                        .accept(
                            QpParams::new(&pd, &cq, AnyOptions::default()),
                            Bytes::from_static(b"yo"),
                        )
                        .await
                        .unwrap();
                    qp.closed().await;
                })
            };
            let pd = dev.alloc_pd().unwrap();
            let cq = dev.create_cq(64).unwrap();
            let (qp, back) = dev
                .connect(
                    at,
                    QpParams::new(&pd, &cq, AnyOptions::default()),
                    Bytes::from_static(b"hi"),
                )
                .await
                .unwrap();
            assert_eq!(back.as_ref(), b"yo");
            assert!(matches!(qp, AnyQp::SoftIwarp(_)));
            qp.disconnect().await;
            server.await.unwrap();
        });
    }
}
