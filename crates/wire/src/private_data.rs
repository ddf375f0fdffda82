//! RPC-over-RDMA Version One CM private data (RFC 8797): the 8-byte message
//! each peer puts in its connection request/reply to advertise its inline
//! thresholds and remote-invalidation support, and what a receiver derives
//! from it.

use bytes::{BufMut, BytesMut};

use crate::v1::DEFAULT_INLINE_THRESHOLD;

/// The Format Identifier that starts the message (RFC 8797 §4).
pub const FORMAT_IDENTIFIER: u32 = 0xf6ab_0e18;
/// The only message format version defined (RFC 8797 §4).
pub const FORMAT_VERSION: u8 = 1;
/// Length of a version 1 message.
pub const PRIVATE_DATA_LEN: usize = 8;
/// Smallest inline threshold the size fields can express (code 0).
pub const MIN_INLINE_SIZE: u32 = 1024;
/// Largest inline threshold the size fields can express (code 255).
pub const MAX_INLINE_SIZE: u32 = 256 * 1024;
/// The R flag: the sender supports remote invalidation (RFC 8797 §4.1).
/// It is the least significant bit of the flags byte ("bit 15" of the
/// second word in the RFC's figure).
pub const FLAG_REMOTE_INVALIDATE: u8 = 0x01;

/// An inline threshold as the Send Size / Receive Size fields encode it:
/// the number of 1024-byte units beyond the first (RFC 8797 §4.2).
///
/// ```
/// use rpcrdma_wire::private_data::InlineSize;
/// assert_eq!(InlineSize(3).bytes(), 4096);
/// assert_eq!(InlineSize::from_bytes(4096), InlineSize(3));
/// assert_eq!(InlineSize::from_bytes(5000), InlineSize(3));    // rounds down
/// assert_eq!(InlineSize::from_bytes(100), InlineSize(0));     // at least 1024
/// assert_eq!(InlineSize::from_bytes(1 << 20), InlineSize(255)); // at most 256 KiB
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct InlineSize(pub u8);

impl InlineSize {
    /// The threshold in bytes: `(code + 1) * 1024`, 1024..=262144.
    pub fn bytes(self) -> u32 {
        (u32::from(self.0) + 1) * 1024
    }

    /// The code for a buffer of `bytes` bytes: divided by 1024, minus one
    /// (RFC 8797 §4.2), rounded down so the advertisement never promises
    /// more than the buffer holds, and clamped to what the field can
    /// express (a buffer under 1024 bytes cannot be advertised; Version One
    /// requires at least that much).
    pub fn from_bytes(bytes: u32) -> Self {
        let units = (bytes / 1024).clamp(1, 256);
        Self(u8::try_from(units - 1).unwrap_or(u8::MAX))
    }
}

/// A version 1 RFC 8797 message.
///
/// ```
/// use rpcrdma_wire::PrivateData;
/// let pd = PrivateData::new(4096, 4096, true);
/// assert_eq!(hex::encode(pd.to_bytes()), "f6ab0e1801010303");
/// assert_eq!(PrivateData::decode(&pd.to_bytes()), Ok(pd));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PrivateData {
    /// The flags byte: reserved bits (senders send zero, receivers ignore
    /// them; kept so a decoded message re-encodes exactly) and the R bit.
    pub flags: u8,
    /// Send Size: the most this peer sends in one RDMA Send.
    pub send_size: InlineSize,
    /// Receive Size: the most this peer receives in one RDMA Receive.
    pub recv_size: InlineSize,
}

/// Why a buffer does not hold a usable RFC 8797 message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PrivateDataError {
    /// The Format Identifier 0xf6ab0e18 appears nowhere in the buffer.
    #[error("no RPC-over-RDMA private data: the Format Identifier f6ab0e18 does not occur in the {len} bytes")]
    NotFound {
        /// Length of the buffer.
        len: usize,
    },
    /// Fewer than 8 bytes follow the Format Identifier.
    #[error("RPC-over-RDMA private data at offset {offset} is cut short: {available} of 8 bytes present")]
    Truncated {
        /// Offset of the Format Identifier.
        offset: usize,
        /// Bytes present from there.
        available: usize,
    },
    /// A format version other than 1.
    #[error("RPC-over-RDMA private data at offset {offset} has format version {version}; only version 1 is defined")]
    UnknownVersion {
        /// Offset of the Format Identifier.
        offset: usize,
        /// The version byte.
        version: u8,
    },
}

impl PrivateData {
    /// Our own advertisement: the largest Send we will post, the receive
    /// buffers we post, and whether our STags may be invalidated remotely.
    //= rfc8797#section-1
    //# To enable current RPC-over-RDMA version 1 implementations to
    //# interoperate with implementations that support the private message
    //# format described in this document, implementation of the private data
    //# message is OPTIONAL.
    //= rfc8797#section-4
    //# Senders MUST set these bits to zero and receivers MUST ignore their
    //# value.
    pub fn new(send_bytes: u32, recv_bytes: u32, remote_invalidation: bool) -> Self {
        Self {
            flags: if remote_invalidation {
                FLAG_REMOTE_INVALIDATE
            } else {
                0
            },
            send_size: InlineSize::from_bytes(send_bytes),
            recv_size: InlineSize::from_bytes(recv_bytes),
        }
    }

    /// What a peer that sent no (usable) private data is taken to have
    /// advertised (RFC 8797 §5.1): R clear, both sizes code 0 (1024 bytes).
    pub const DEFAULT: Self = Self {
        flags: 0,
        send_size: InlineSize(0),
        recv_size: InlineSize(0),
    };

    /// Whether the R bit is set.
    pub fn remote_invalidation(&self) -> bool {
        self.flags & FLAG_REMOTE_INVALIDATE != 0
    }

    /// The 8-byte message.
    pub fn to_bytes(&self) -> [u8; PRIVATE_DATA_LEN] {
        let id = FORMAT_IDENTIFIER.to_be_bytes();
        [
            id[0],
            id[1],
            id[2],
            id[3],
            FORMAT_VERSION,
            self.flags,
            self.send_size.0,
            self.recv_size.0,
        ]
    }

    /// Appends the 8-byte message to `buf` (e.g. after the RFC 6581 IRD/ORD
    /// words of an MPA revision 2 private-data field).
    pub fn encode_into(&self, buf: &mut BytesMut) {
        buf.put_slice(&self.to_bytes());
    }

    /// Decodes a message that starts at the beginning of `buf` (trailing
    /// bytes are ignored).
    pub fn decode(buf: &[u8]) -> Result<Self, PrivateDataError> {
        if buf.get(..4) != Some(&FORMAT_IDENTIFIER.to_be_bytes()[..]) {
            return Err(PrivateDataError::NotFound { len: buf.len() });
        }
        Self::decode_at(buf, 0)
    }

    fn decode_at(buf: &[u8], offset: usize) -> Result<Self, PrivateDataError> {
        let rest = buf.get(offset..).unwrap_or(&[]);
        let Some(m) = rest.get(..PRIVATE_DATA_LEN) else {
            return Err(PrivateDataError::Truncated {
                offset,
                available: rest.len(),
            });
        };
        if m[4] != FORMAT_VERSION {
            return Err(PrivateDataError::UnknownVersion {
                offset,
                version: m[4],
            });
        }
        Ok(Self {
            flags: m[5],
            send_size: InlineSize(m[6]),
            recv_size: InlineSize(m[7]),
        })
    }

    /// Searches a received private-data buffer for the message (RFC 8797
    /// §5.2): the Format Identifier may sit at any offset, with no
    /// alignment, e.g. behind the 4-byte IRD/ORD word of MPA revision 2.
    ///
    /// Every occurrence of the identifier is tried in order and the first
    /// that is followed by a complete version 1 message wins, so bytes of
    /// another layer that happen to match the identifier cannot hide the
    /// real message. Returns the message and its offset, or why none was
    /// usable (the error of the last occurrence tried).
    ///
    /// ```
    /// use rpcrdma_wire::PrivateData;
    /// // MPA rev 2 private data from a Linux client: IRD/ORD, then RFC 8797.
    /// let buf = hex::decode("00800000f6ab0e1801010303").unwrap();
    /// let (offset, pd) = PrivateData::find(&buf).unwrap();
    /// assert_eq!(offset, 4);
    /// assert!(pd.remote_invalidation());
    /// assert_eq!((pd.send_size.bytes(), pd.recv_size.bytes()), (4096, 4096));
    /// ```
    pub fn find(buf: &[u8]) -> Result<(usize, Self), PrivateDataError> {
        let id = FORMAT_IDENTIFIER.to_be_bytes();
        let mut last = PrivateDataError::NotFound { len: buf.len() };
        for (offset, w) in buf.windows(4).enumerate() {
            if w == id {
                match Self::decode_at(buf, offset) {
                    Ok(pd) => return Ok((offset, pd)),
                    Err(e) => last = e,
                }
            }
        }
        Err(last)
    }

    /// What to assume about a peer from the private data it sent: the
    /// message if [`PrivateData::find`] finds one, otherwise
    /// [`PrivateData::DEFAULT`] (RFC 8797 §5.1, §5.2).
    //= rfc8797#section-5.1
    //# In other words, the peer MUST behave as if a Private Data message was
    //# received in which bit 15 of the Flags field is zero, and both Size
    //# fields contain the value zero.
    //= rfc8797#section-5.2
    //# If the RPC-over-RDMA version 1 CM Private Data Format Identifier is
    //# not present, an RPC-over-RDMA version 1 receiver MUST behave as if no
    //# RPC-over-RDMA version 1 CM Private Data has been provided.
    pub fn from_peer(buf: Option<&[u8]>) -> Self {
        buf.and_then(|b| Self::find(b).ok())
            .map_or(Self::DEFAULT, |(_, pd)| pd)
    }
}

/// The pair of inline thresholds of a connection, seen from one end.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct InlineThresholds {
    /// The largest message this end may Send.
    pub send: u32,
    /// The largest message this end can be sent (what the peer uses as
    /// its send threshold).
    pub recv: u32,
}

impl InlineThresholds {
    /// The Version One defaults (1024 each way, RFC 8166 §3.3.3).
    pub const V1_DEFAULT: Self = Self {
        send: DEFAULT_INLINE_THRESHOLD,
        recv: DEFAULT_INLINE_THRESHOLD,
    };

    /// Derives the thresholds from both advertisements (RFC 8797 §4.2):
    /// the client-to-server threshold is the smaller of the client's Send
    /// Size and the server's Receive Size, and the server-to-client one the
    /// smaller of the server's Send Size and the client's Receive Size. Seen
    /// from either end that is: send = min(local send, remote receive),
    /// recv = min(local receive, remote send). Pass
    /// [`PrivateData::from_peer`] as `remote` so an absent or malformed
    /// message yields the 1024-byte defaults.
    ///
    /// ```
    /// use rpcrdma_wire::{InlineThresholds, PrivateData};
    /// let local = PrivateData::new(8192, 4096, true);
    /// let t = InlineThresholds::derive(&local, &PrivateData::from_peer(None));
    /// assert_eq!(t, InlineThresholds::V1_DEFAULT);
    /// let peer = PrivateData::new(16384, 16384, false);
    /// let t = InlineThresholds::derive(&local, &peer);
    /// assert_eq!((t.send, t.recv), (8192, 4096));
    /// ```
    pub fn derive(local: &PrivateData, remote: &PrivateData) -> Self {
        Self {
            send: local.send_size.bytes().min(remote.recv_size.bytes()),
            recv: local.recv_size.bytes().min(remote.send_size.bytes()),
        }
    }
}

/// Whether a responder may reply with RDMA Send With Invalidate (RFC 8797
/// §4.1): only when both peers set the R bit. `remote` should come from
/// [`PrivateData::from_peer`], so a peer without private data counts as
/// not supporting it.
///
/// ```
/// use rpcrdma_wire::{private_data::remote_invalidation_allowed, PrivateData};
/// let us = PrivateData::new(4096, 4096, true);
/// assert!(remote_invalidation_allowed(&us, &PrivateData::new(1024, 1024, true)));
/// assert!(!remote_invalidation_allowed(&us, &PrivateData::DEFAULT));
/// ```
//= rfc8797#section-4.1
//# When either peer on a connection clears this flag, the responder MUST use
//# only RDMA Send when transmitting RPC Replies.
pub fn remote_invalidation_allowed(local: &PrivateData, remote: &PrivateData) -> bool {
    local.remote_invalidation() && remote.remote_invalidation()
}
