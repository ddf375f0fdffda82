//! The identifiers the server hands out: client IDs, session IDs and
//! stateids (RFC 8881 §2.4, §2.10.3, §8.2).
//!
//! Each carries the server instance's boot stamp, so an identifier of an
//! earlier instance is recognised as stale after a restart
//! (`NFS4ERR_STALE_CLIENTID`, `NFS4ERR_BADSESSION`, `NFS4ERR_STALE_STATEID`)
//! rather than confused with a new one.

/// A client ID (`clientid4`): the boot stamp in the high 32 bits, a
/// counter in the low 32.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ClientId(pub u64);

impl ClientId {
    /// The ID made by instance `boot` as its `n`th.
    pub fn new(boot: u32, n: u32) -> Self {
        Self((u64::from(boot) << 32) | u64::from(n))
    }

    /// The boot stamp of the instance that made it.
    pub fn boot(self) -> u32 {
        (self.0 >> 32) as u32
    }
}

/// A session ID (`sessionid4`, 16 octets): the client ID, a counter and
/// four random octets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SessionId(pub [u8; 16]);

impl SessionId {
    /// A session of `client`, its server's `n`th, with `salt`.
    pub fn new(client: ClientId, n: u32, salt: [u8; 4]) -> Self {
        let mut b = [0u8; 16];
        b[..8].copy_from_slice(&client.0.to_be_bytes());
        b[8..12].copy_from_slice(&n.to_be_bytes());
        b[12..].copy_from_slice(&salt);
        Self(b)
    }

    /// The client it belongs to (as written in it).
    pub fn client(&self) -> ClientId {
        let mut c = [0u8; 8];
        c.copy_from_slice(&self.0[..8]);
        ClientId(u64::from_be_bytes(c))
    }
}

/// The part of a stateid that names the state (`other`, 12 octets): boot
/// stamp, a counter, and the low half of the client ID.
pub type Other = [u8; 12];

/// A stateid (`stateid4`): a sequence number and the state it names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct StateId {
    /// Bumped each time the state changes (OPEN upgrade, LOCK, ...).
    pub seqid: u32,
    /// Which state.
    pub other: Other,
}

/// What a stateid sent by a client means before any lookup (RFC 8881
/// §8.2.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Special {
    /// All zeros: anonymous (I/O without an open, as NFSv3 would).
    Anonymous,
    /// All ones: READ that bypasses share and delegation checks.
    Bypass,
    /// seqid 1, other zeros: the compound's current stateid.
    Current,
    /// seqid `0xFFFFFFFF`, other zeros: never valid.
    Invalid,
    /// Any other: a state this server handed out (or not).
    Regular,
}

impl StateId {
    /// The anonymous stateid (all zeros).
    pub const ANONYMOUS: Self = Self {
        seqid: 0,
        other: [0; 12],
    };

    /// A new state's first stateid.
    pub fn new(boot: u32, n: u32, client: ClientId) -> Self {
        let mut other = [0u8; 12];
        other[..4].copy_from_slice(&boot.to_be_bytes());
        other[4..8].copy_from_slice(&n.to_be_bytes());
        other[8..].copy_from_slice(&(client.0 as u32).to_be_bytes());
        Self { seqid: 1, other }
    }

    /// The boot stamp written in `other`.
    pub fn boot(&self) -> u32 {
        u32::from_be_bytes([self.other[0], self.other[1], self.other[2], self.other[3]])
    }

    /// Which kind of stateid this is.
    ///
    /// ```
    /// use rpcrdma_nfs4::state::{Special, StateId};
    /// assert_eq!(StateId::ANONYMOUS.special(), Special::Anonymous);
    /// let bypass = StateId { seqid: u32::MAX, other: [0xff; 12] };
    /// assert_eq!(bypass.special(), Special::Bypass);
    /// assert_eq!(StateId { seqid: 1, other: [0; 12] }.special(), Special::Current);
    /// assert_eq!(StateId { seqid: u32::MAX, other: [0; 12] }.special(), Special::Invalid);
    /// ```
    pub fn special(&self) -> Special {
        if self.other == [0; 12] {
            match self.seqid {
                0 => Special::Anonymous,
                1 => Special::Current,
                _ => Special::Invalid,
            }
        } else if self.other == [0xff; 12] && self.seqid == u32::MAX {
            Special::Bypass
        } else {
            Special::Regular
        }
    }

    /// The next seqid (wrapping past 0: RFC 8881 §8.2.2).
    pub fn bumped(self) -> Self {
        let seqid = match self.seqid.wrapping_add(1) {
            0 => 1,
            s => s,
        };
        Self { seqid, ..self }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_carry_their_instance() {
        let c = ClientId::new(0x6000_0001, 7);
        assert_eq!(c.boot(), 0x6000_0001);
        let s = SessionId::new(c, 3, [1, 2, 3, 4]);
        assert_eq!(s.client(), c);
        let st = StateId::new(0x6000_0001, 9, c);
        assert_eq!((st.seqid, st.boot()), (1, 0x6000_0001));
        assert_eq!(st.special(), Special::Regular);
    }

    #[test]
    fn seqids_skip_zero_when_they_wrap() {
        let s = StateId {
            seqid: u32::MAX,
            other: [5; 12],
        };
        assert_eq!(s.bumped().seqid, 1);
        assert_eq!(s.bumped().bumped().seqid, 2);
    }
}
