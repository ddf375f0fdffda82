//! Which device to open ([`DeviceConfig`]) and the provider's connection
//! options ([`Options`]).

use std::time::Duration;

/// Which device to open and how to drive its completion queues.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DeviceConfig {
    /// The device name (`ibv_devices`, `rdma link`: mlx5_0, rxe0, siw0,
    /// ...); `None`: the first device with an active port.
    pub name: Option<String>,
    /// Poll completion queues instead of sleeping on the completion
    /// channel: lower latency, one core busy per waiting task.
    pub polling: bool,
}

/// Connection options of the provider (`Device::Options`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    /// Size of each receive slot the provider posts before the caller's
    /// buffers are known; slots grow to the largest buffer the caller
    /// posts. Set it to the largest message expected (RPC-over-RDMA: the
    /// inline threshold this end advertises). Default 4096.
    pub recv_size: usize,
    /// Whole connection set-up (address and route resolution, the CM
    /// exchange). Default 10 s.
    pub connect_timeout: Duration,
    /// Address and route resolution, each. Default 2 s.
    pub resolve_timeout: Duration,
    /// Listen backlog. Default 128.
    pub backlog: i32,
    /// InfiniBand/RoCE transport retries (0..=7). Default 7.
    pub retry_count: u8,
    /// InfiniBand/RoCE RNR retries (0..=7, 7 = for ever). Default 7: a
    /// peer whose receives are all in use is waited for, not failed
    /// (iWARP has no RNR: there such a Send ends the connection).
    pub rnr_retry_count: u8,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            recv_size: 4096,
            connect_timeout: Duration::from_secs(10),
            resolve_timeout: Duration::from_secs(2),
            backlog: 128,
            retry_count: 7,
            rnr_retry_count: 7,
        }
    }
}
