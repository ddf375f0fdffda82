//! The client's settings ([`Nfs4ClientConfig`]).

use std::time::Duration;

use bytes::Bytes;

use super::session::BackChannelLimits;

/// The client's settings. Defaults are documented on each field.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Nfs4ClientConfig {
    /// The minor version (default 1).
    pub minor_version: u32,
    /// `co_ownerid` (default: unique to this client instance: host name,
    /// process id and a random number).
    pub owner: Option<Bytes>,
    /// Largest READ or WRITE asked for (default 1 MiB; the session and
    /// the server's `maxread`/`maxwrite` may lower it).
    pub max_io: u32,
    /// Fore channel slots asked for (default 16).
    pub slots: u32,
    /// Operations per COMPOUND asked for (default 16).
    pub max_operations: u32,
    /// Whether the client asks for a back channel on its connection
    /// (default true; put [`Callbacks::services`](super::Callbacks::services) in the ONC RPC client's
    /// configuration).
    pub backchannel: bool,
    /// The back channel offered.
    pub back_channel: BackChannelLimits,
    /// How long a request is tried again across lost connections,
    /// `NFS4ERR_DELAY`, `NFS4ERR_GRACE` and a server's restart (default
    /// 120 s).
    pub patience: Duration,
    /// READs or WRITEs in flight for whole files (default 4).
    pub in_flight: usize,
}

impl Default for Nfs4ClientConfig {
    fn default() -> Self {
        Self {
            minor_version: 1,
            owner: None,
            max_io: 1 << 20,
            slots: 16,
            max_operations: 16,
            backchannel: true,
            back_channel: BackChannelLimits::default(),
            patience: Duration::from_secs(120),
            in_flight: 4,
        }
    }
}
