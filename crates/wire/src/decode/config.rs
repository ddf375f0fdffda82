//! How a receiver decodes: the versions it speaks ([`VersionRange`]), the
//! credits of its error replies ([`ErrorCredits`]) and both with the limits
//! and options in one [`DecodeConfig`].

use crate::error::ConfigError;
use crate::v2::OptionRegistry;
use crate::Limits;

/// The inclusive range of RPC-over-RDMA versions a receiver supports; it is
/// what an `ERR_VERS` reply advertises (`rdma_vers_low`, `rdma_vers_high`).
///
/// ```
/// use rpcrdma_wire::VersionRange;
/// assert_eq!(VersionRange::default(), VersionRange::V1_AND_V2);
/// assert!(VersionRange::V1_ONLY.contains(1) && !VersionRange::V1_ONLY.contains(2));
/// assert!(VersionRange::new(1, 3).is_err()); // version 3 does not exist here
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct VersionRange {
    low: u32,
    high: u32,
}

impl VersionRange {
    /// Versions One and Two (the default).
    pub const V1_AND_V2: Self = Self { low: 1, high: 2 };
    /// Version One only: `ERR_VERS` replies advertise 1..1.
    pub const V1_ONLY: Self = Self { low: 1, high: 1 };
    /// Version Two only.
    pub const V2_ONLY: Self = Self { low: 2, high: 2 };

    /// A range within the versions this crate implements (1 and 2).
    pub fn new(low: u32, high: u32) -> Result<Self, ConfigError> {
        if (1..=2).contains(&low) && (low..=2).contains(&high) {
            Ok(Self { low, high })
        } else {
            Err(ConfigError::BadVersionRange { low, high })
        }
    }

    /// Lowest supported version.
    pub fn low(&self) -> u32 {
        self.low
    }

    /// Highest supported version.
    pub fn high(&self) -> u32 {
        self.high
    }

    /// Whether `vers` is supported.
    pub fn contains(&self, vers: u32) -> bool {
        (self.low..=self.high).contains(&vers)
    }
}

impl Default for VersionRange {
    fn default() -> Self {
        Self::V1_AND_V2
    }
}

/// What `rdma_credit` an error reply carries.
///
/// The specifications say which XID and version an `RDMA_ERROR` copies but
/// not which credit value it carries (see `docs/spec-notes.md`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum ErrorCredits {
    /// Copy the failing message's `rdma_credit`, raised to 1 if it is 0 (a
    /// credit value sent back to a requester must never be zero, RFC 8166
    /// §3.3.1). Without a complete credit word, 1. The default; it makes the
    /// reply a function of the received bytes alone.
    #[default]
    Echo,
    /// Always send this value: a connection's current credit grant.
    Grant(u32),
}

/// How a receiver decodes: which versions it speaks, its limits, the
/// Version Two options it supports and the credits its error replies carry.
///
/// ```
/// use rpcrdma_wire::{DecodeConfig, VersionRange};
/// let v1_only = DecodeConfig { versions: VersionRange::V1_ONLY, ..DecodeConfig::default() };
/// assert_eq!(v1_only.versions.high(), 1);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DecodeConfig {
    /// Supported versions (default 1..=2).
    pub versions: VersionRange,
    /// Chunk-list limits.
    pub limits: Limits,
    /// Supported `RDMA2_OPTIONAL` types (default: none).
    pub options: OptionRegistry,
    /// Credits in error replies (default: echo).
    pub error_credits: ErrorCredits,
}
