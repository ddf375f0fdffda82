//! The experimental "transport properties" feature: each end advertises its
//! receive buffer size, its largest Send, the chunk-list limits its decoder
//! enforces and the largest message it accepts through chunks
//! (`docs/v2-transport-properties.md` is the specification).

use bytes::{Bytes, BytesMut};
use rpcrdma_wire::{Limits, OptionType};
use rpcrdma_xdr::{Decoder, Encoder};

use super::{Adjustments, FeatureContext, FeatureError, OptionalFeature};

/// `rdma_opttype` of transport properties: `0x80545001`.
///
/// The draft defines no registry and reserves no range; values are to be
/// assigned by Standards Track documents, which will start from small
/// numbers. We keep experiments in the upper half of the 32-bit space (top
/// bit set), mark this one with ASCII `TP` (`0x54 0x50`), and keep a
/// revision number in the low byte: an incompatible revision of the
/// properties gets a new type, so a peer that knows only the old one
/// answers `RDMA2_ERR_INVAL_OPTION` instead of misreading it (draft §3.3:
/// an implementation knows all of a feature or none of it).
pub const TRANSPORT_PROPERTIES: OptionType = OptionType(0x8054_5001);

/// The exact length of its `rdma_optinfo`: six XDR `uint32`s.
pub const TRANSPORT_PROPERTIES_LEN: usize = 24;

/// Smallest `recv_size` a Version Two receiver may advertise: it MUST
/// support the 4096-byte default (draft §2.3).
const MIN_RECV_SIZE: u32 = rpcrdma_wire::v2::DEFAULT_INLINE_THRESHOLD;
/// Smallest `send_size`: the Version One default every RPC-over-RDMA
/// implementation can send.
const MIN_SEND_SIZE: u32 = rpcrdma_wire::v1::DEFAULT_INLINE_THRESHOLD;

/// The `rdma_optinfo` of [`TRANSPORT_PROPERTIES`] (`rpcrdma2_xprt_props`).
///
/// ```
/// use rpcrdma_engine::TransportProperties;
/// let p = TransportProperties {
///     recv_size: 16384,
///     send_size: 16384,
///     max_read_segments: 64,
///     max_write_chunks: 16,
///     max_segments_per_chunk: 64,
///     max_message: 1 << 24,
/// };
/// let info = p.to_optinfo();
/// assert_eq!(info.len(), 24);
/// assert_eq!(TransportProperties::from_optinfo(&info), Ok(p));
/// assert!(TransportProperties::from_optinfo(&info[..20]).is_err());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TransportProperties {
    /// `rdma_xp_recv_size`: the size of every receive buffer the sender
    /// posts, in bytes; at least 4096.
    pub recv_size: u32,
    /// `rdma_xp_send_size`: the largest message the sender posts as one
    /// Send, in bytes; at least 1024.
    pub send_size: u32,
    /// `rdma_xp_max_read_segs`: most Read segments it accepts in one Read
    /// list; at least 1.
    pub max_read_segments: u32,
    /// `rdma_xp_max_write_chunks`: most Write chunks it accepts in one
    /// Write list (0: none).
    pub max_write_chunks: u32,
    /// `rdma_xp_max_chunk_segs`: most segments it accepts in one Write
    /// chunk or Reply chunk; at least 1.
    pub max_segments_per_chunk: u32,
    /// `rdma_xp_max_message`: the largest RPC message it accepts through
    /// chunks, in bytes.
    pub max_message: u32,
}

impl TransportProperties {
    /// This end's properties.
    pub fn of(ctx: &FeatureContext) -> Self {
        Self {
            recv_size: ctx.recv_buffer_size,
            send_size: ctx.inline_send,
            max_read_segments: ctx.limits.max_read_segments,
            max_write_chunks: ctx.limits.max_write_chunks,
            max_segments_per_chunk: ctx.limits.max_segments_per_chunk,
            max_message: ctx.max_message,
        }
    }

    /// The XDR encoding (exactly [`TRANSPORT_PROPERTIES_LEN`] bytes).
    pub fn to_optinfo(&self) -> Bytes {
        let mut buf = BytesMut::with_capacity(TRANSPORT_PROPERTIES_LEN);
        let mut e = Encoder::new(&mut buf);
        for w in [
            self.recv_size,
            self.send_size,
            self.max_read_segments,
            self.max_write_chunks,
            self.max_segments_per_chunk,
            self.max_message,
        ] {
            e.put_u32(w);
        }
        buf.freeze()
    }

    /// Decodes and checks an `rdma_optinfo`: exactly 24 bytes, and values
    /// within the documented minimums.
    pub fn from_optinfo(info: &[u8]) -> Result<Self, FeatureError> {
        if info.len() != TRANSPORT_PROPERTIES_LEN {
            return Err(FeatureError::Malformed(
                "transport properties are exactly 24 bytes (six uint32)",
            ));
        }
        let mut d = Decoder::new(info);
        let mut w = [0u32; 6];
        for v in &mut w {
            *v = d
                .get_u32()
                .map_err(|_| FeatureError::Malformed("transport properties are truncated"))?;
        }
        let [recv_size, send_size, max_read_segments, max_write_chunks, max_segments_per_chunk, max_message] =
            w;
        let p = Self {
            recv_size,
            send_size,
            max_read_segments,
            max_write_chunks,
            max_segments_per_chunk,
            max_message,
        };
        p.check()?;
        Ok(p)
    }

    /// The value rules of `docs/v2-transport-properties.md`.
    pub fn check(&self) -> Result<(), FeatureError> {
        if self.recv_size < MIN_RECV_SIZE {
            return Err(FeatureError::Malformed(
                "recv_size is below the Version Two minimum of 4096",
            ));
        }
        if self.send_size < MIN_SEND_SIZE {
            return Err(FeatureError::Malformed("send_size is below 1024"));
        }
        if self.max_read_segments == 0 {
            return Err(FeatureError::Malformed(
                "max_read_segments is 0 (a Long call needs one)",
            ));
        }
        if self.max_segments_per_chunk == 0 {
            return Err(FeatureError::Malformed(
                "max_segments_per_chunk is 0 (a chunk has at least one segment)",
            ));
        }
        Ok(())
    }

    /// What the engine applies once the peer has shown support.
    pub fn adjustments(&self) -> Adjustments {
        Adjustments {
            peer_recv_size: Some(self.recv_size),
            peer_send_size: Some(self.send_size),
            peer_limits: Some(Limits {
                max_read_segments: self.max_read_segments,
                max_write_chunks: self.max_write_chunks,
                max_segments_per_chunk: self.max_segments_per_chunk,
            }),
            peer_max_message: Some(self.max_message),
        }
    }
}

/// The [`OptionalFeature`] of [`TRANSPORT_PROPERTIES`]: the client offers
/// its properties once Version Two is settled; the server answers with its
/// own; each end then applies the other's (the server as soon as the
/// client's CALL arrives, the client when the server's REPLY does).
///
/// On by default ([`crate::EngineConfig::transport_properties`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TransportPropertiesFeature {
    peer: Option<TransportProperties>,
}

impl TransportPropertiesFeature {
    /// A feature that has learned nothing yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// The peer's properties, once received.
    pub fn peer(&self) -> Option<&TransportProperties> {
        self.peer.as_ref()
    }

    fn take(&mut self, optinfo: &Bytes, payload: &Bytes) -> Result<(), FeatureError> {
        if !payload.is_empty() {
            return Err(FeatureError::UnexpectedPayload(payload.len()));
        }
        self.peer = Some(TransportProperties::from_optinfo(optinfo)?);
        Ok(())
    }
}

impl OptionalFeature for TransportPropertiesFeature {
    fn opttype(&self) -> OptionType {
        TRANSPORT_PROPERTIES
    }

    fn name(&self) -> &'static str {
        "transport-properties"
    }

    fn offer(&mut self, ctx: &FeatureContext) -> Option<Bytes> {
        let ours = TransportProperties::of(ctx);
        // A configuration whose own values break the rules has nothing
        // truthful to advertise.
        ours.check().ok()?;
        Some(ours.to_optinfo())
    }

    fn on_call(
        &mut self,
        ctx: &FeatureContext,
        optinfo: &Bytes,
        payload: &Bytes,
    ) -> Result<Bytes, FeatureError> {
        self.take(optinfo, payload)?;
        Ok(TransportProperties::of(ctx).to_optinfo())
    }

    fn on_reply(
        &mut self,
        _ctx: &FeatureContext,
        optinfo: &Bytes,
        payload: &Bytes,
    ) -> Result<(), FeatureError> {
        self.take(optinfo, payload)
    }

    fn adjustments(&self) -> Adjustments {
        self.peer
            .as_ref()
            .map(TransportProperties::adjustments)
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Role;

    fn ctx() -> FeatureContext {
        FeatureContext {
            role: Role::Server,
            version: Some(2),
            recv_buffer_size: 8192,
            inline_send: 4096,
            limits: Limits::default(),
            max_message: 1 << 20,
        }
    }

    #[test]
    fn encoding_is_six_big_endian_words() {
        let p = TransportProperties::of(&ctx());
        assert_eq!(
            hex(&p.to_optinfo()),
            "00002000 00001000 00000040 00000010 00000040 00100000"
        );
    }

    fn hex(b: &[u8]) -> String {
        b.chunks(4)
            .map(|c| c.iter().map(|x| format!("{x:02x}")).collect::<String>())
            .collect::<Vec<_>>()
            .join(" ")
    }

    #[test]
    fn every_rule_is_enforced() {
        let good = TransportProperties::of(&ctx());
        assert_eq!(good.check(), Ok(()));
        let bad = [
            TransportProperties {
                recv_size: 4095,
                ..good
            },
            TransportProperties {
                send_size: 1023,
                ..good
            },
            TransportProperties {
                max_read_segments: 0,
                ..good
            },
            TransportProperties {
                max_segments_per_chunk: 0,
                ..good
            },
        ];
        for b in bad {
            assert!(matches!(
                TransportProperties::from_optinfo(&b.to_optinfo()),
                Err(FeatureError::Malformed(_))
            ));
        }
        // Zero Write chunks and any max_message are allowed.
        let odd = TransportProperties {
            max_write_chunks: 0,
            max_message: 0,
            ..good
        };
        assert_eq!(
            TransportProperties::from_optinfo(&odd.to_optinfo()),
            Ok(odd)
        );
        // Every other length is malformed.
        let info = good.to_optinfo();
        for len in [0, 4, 20, 23, 25, 28] {
            let mut v = info.to_vec();
            v.resize(len, 0);
            assert!(TransportProperties::from_optinfo(&v).is_err(), "{len}");
        }
    }

    #[test]
    fn feature_answers_with_its_own_and_keeps_the_peers() {
        let mut f = TransportPropertiesFeature::new();
        assert_eq!(f.adjustments(), Adjustments::default());
        let peer = TransportProperties {
            recv_size: 65536,
            ..TransportProperties::of(&ctx())
        };
        let answer = f
            .on_call(&ctx(), &peer.to_optinfo(), &Bytes::new())
            .unwrap();
        assert_eq!(answer, TransportProperties::of(&ctx()).to_optinfo());
        assert_eq!(f.peer(), Some(&peer));
        assert_eq!(f.adjustments().peer_recv_size, Some(65536));
        // A payload after the header is refused.
        let mut g = TransportPropertiesFeature::new();
        assert_eq!(
            g.on_reply(&ctx(), &peer.to_optinfo(), &Bytes::from_static(b"xx")),
            Err(FeatureError::UnexpectedPayload(2))
        );
        assert_eq!(g.peer(), None);
    }

    #[test]
    fn nothing_is_offered_when_our_own_values_break_the_rules() {
        let mut c = ctx();
        c.limits.max_read_segments = 0;
        assert_eq!(TransportPropertiesFeature::new().offer(&c), None);
        assert!(TransportPropertiesFeature::new().offer(&ctx()).is_some());
    }
}
