//! A session's negotiated terms, its lease, and what SEQUENCE's status
//! flags ask of the client (RFC 8881 §18.36, §18.46.3), sans-IO.

use std::time::{Duration, Instant};

use crate::proto::nfs4 as p;

/// The back channel the client offers in CREATE_SESSION (RFC 8881
/// §18.36): what it can take of the server's callbacks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BackChannelLimits {
    /// Callbacks at once (`ca_maxrequests`): back channel slots. Over
    /// RPC-over-RDMA each needs a receive the transport posts for reverse
    /// calls (the engine's `backchannel_credits`, 8 by default).
    pub max_requests: u32,
    /// Largest callback (`ca_maxrequestsize`, the whole RPC call). Over
    /// RPC-over-RDMA callbacks travel inline (RFC 8167 §5.1; the Linux
    /// server offers no chunks): the receive inline threshold less the
    /// transport header, 4096 − 28 by default, as the Linux client asks.
    pub max_request_size: u32,
    /// Largest reply (`ca_maxresponsesize`), inline too.
    pub max_response_size: u32,
    /// Operations in one CB_COMPOUND, CB_SEQUENCE included.
    pub max_operations: u32,
}

impl Default for BackChannelLimits {
    fn default() -> Self {
        Self {
            max_requests: 4,
            max_request_size: 4096 - 28,
            max_response_size: 4096 - 28,
            max_operations: 8,
        }
    }
}

impl BackChannelLimits {
    /// The attributes for CREATE_SESSION.
    pub fn attrs(&self) -> p::ChannelAttrs4 {
        p::ChannelAttrs4 {
            ca_headerpadsize: 0,
            ca_maxrequestsize: self.max_request_size,
            ca_maxresponsesize: self.max_response_size,
            ca_maxresponsesize_cached: self.max_response_size,
            ca_maxoperations: self.max_operations,
            ca_maxrequests: self.max_requests,
            ca_rdma_ird: Vec::new(),
        }
    }
}

/// Bytes of a COMPOUND request or reply besides the READ or WRITE data:
/// the RPC header with the largest credential, SEQUENCE, PUTFH and the
/// other small operations.
pub const COMPOUND_OVERHEAD: u32 = 4096;

/// The fore channel the client asks for: `max_io` bytes of data per READ
/// or WRITE, `slots` requests at once, `max_ops` operations per COMPOUND.
pub fn fore_attrs(max_io: u32, slots: u32, max_ops: u32) -> p::ChannelAttrs4 {
    p::ChannelAttrs4 {
        ca_headerpadsize: 0,
        ca_maxrequestsize: max_io.saturating_add(COMPOUND_OVERHEAD),
        ca_maxresponsesize: max_io.saturating_add(COMPOUND_OVERHEAD),
        ca_maxresponsesize_cached: 8192,
        ca_maxoperations: max_ops,
        ca_maxrequests: slots,
        ca_rdma_ird: Vec::new(),
    }
}

/// What CREATE_SESSION's answer means for the client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Terms {
    /// The fore channel as granted.
    pub fore: p::ChannelAttrs4,
    /// The back channel as granted.
    pub back: p::ChannelAttrs4,
    /// Whether the connection CREATE_SESSION went on is the backchannel.
    pub back_on_connection: bool,
    /// Largest READ and WRITE data the fore channel carries.
    pub max_io: u32,
}

/// Why the client cannot use the session CREATE_SESSION granted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Refused {
    /// No slot, or too few operations for SEQUENCE and one more.
    #[error("CREATE_SESSION granted {slots} slots and {operations} operations")]
    NoRoom {
        /// The fore channel's slots.
        slots: u32,
        /// Its operations per COMPOUND.
        operations: u32,
    },
    /// The back channel was raised beyond what the client offered.
    #[error("CREATE_SESSION raised the back channel beyond what the client offered: {granted:?}")]
    BackChannelRaised {
        /// The back channel granted.
        granted: Box<p::ChannelAttrs4>,
    },
    /// Requests or replies too small to carry a READ or WRITE.
    #[error("CREATE_SESSION granted requests of {requests} and replies of {replies} bytes: too small for I/O")]
    TooSmall {
        /// The fore channel's largest request.
        requests: u32,
        /// Its largest reply.
        replies: u32,
    },
}

/// Checks the server's answer against what was asked (RFC 8881 §18.36.3:
/// the server may lower the fore channel's values; the back channel's
/// it must not raise above the client's).
pub fn accept(
    asked_fore: &p::ChannelAttrs4,
    asked_back: &p::ChannelAttrs4,
    res: &p::CreateSession4resok,
) -> Result<Terms, Refused> {
    let f = &res.csr_fore_chan_attrs;
    let b = &res.csr_back_chan_attrs;
    if f.ca_maxrequests == 0 || f.ca_maxoperations < 2 {
        return Err(Refused::NoRoom {
            slots: f.ca_maxrequests,
            operations: f.ca_maxoperations,
        });
    }
    if b.ca_maxrequests > asked_back.ca_maxrequests
        || b.ca_maxrequestsize > asked_back.ca_maxrequestsize
        || b.ca_maxresponsesize > asked_back.ca_maxresponsesize
        || b.ca_maxoperations > asked_back.ca_maxoperations
    {
        return Err(Refused::BackChannelRaised {
            granted: Box::new(b.clone()),
        });
    }
    let room = f.ca_maxrequestsize.min(f.ca_maxresponsesize);
    let max_io = room.saturating_sub(COMPOUND_OVERHEAD).min(
        asked_fore
            .ca_maxrequestsize
            .saturating_sub(COMPOUND_OVERHEAD),
    );
    if max_io < 4096 {
        return Err(Refused::TooSmall {
            requests: f.ca_maxrequestsize,
            replies: f.ca_maxresponsesize,
        });
    }
    Ok(Terms {
        fore: f.clone(),
        back: b.clone(),
        back_on_connection: res.csr_flags & p::CREATE_SESSION4_FLAG_CONN_BACK_CHAN != 0,
        max_io: round_down_4k(max_io),
    })
}

fn round_down_4k(n: u32) -> u32 {
    n & !4095
}

/// The client's lease (RFC 8881 §8.3): renewed by every SEQUENCE that
/// succeeds, as of the moment the request was sent.
#[derive(Debug, Clone, Copy)]
pub struct Lease {
    period: Duration,
    renewed: Instant,
}

impl Lease {
    /// A lease of `period`, renewed at `now`.
    pub fn new(period: Duration, now: Instant) -> Self {
        Self {
            period: period.max(Duration::from_secs(1)),
            renewed: now,
        }
    }

    /// The lease period.
    pub fn period(&self) -> Duration {
        self.period
    }

    /// Sets the period (the root's `lease_time` attribute).
    pub fn set_period(&mut self, period: Duration) {
        self.period = period.max(Duration::from_secs(1));
    }

    /// A request sent at `sent` renewed the lease.
    pub fn renewed(&mut self, sent: Instant) {
        self.renewed = self.renewed.max(sent);
    }

    /// When an idle client sends a SEQUENCE to keep the lease: a third of
    /// the period after the last renewal, so two may be lost.
    pub fn renew_at(&self) -> Instant {
        self.renewed + self.period / 3
    }

    /// Whether the lease has run out at `now` (state may be gone).
    pub fn expired(&self, now: Instant) -> bool {
        now >= self.renewed + self.period
    }
}

/// What SEQUENCE's `sr_status_flags` ask of the client.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FlagActions {
    /// No backchannel works: bind the connection to the back channel
    /// again (`SEQ4_STATUS_CB_PATH_DOWN`, `_SESSION`, `BACKCHANNEL_FAULT`).
    pub rebind_backchannel: bool,
    /// Some delegations were revoked: find them (TEST_STATEID) and free
    /// them (FREE_STATEID) (`SEQ4_STATUS_RECALLABLE_STATE_REVOKED`,
    /// `EXPIRED_SOME_STATE_REVOKED`, `ADMIN_STATE_REVOKED`).
    pub test_state: bool,
    /// Everything was revoked, or the server restarted with the session
    /// kept: recover the state (`EXPIRED_ALL_STATE_REVOKED`,
    /// `RESTART_RECLAIM_NEEDED`).
    pub recover: bool,
}

/// The actions for a SEQUENCE's status flags.
pub fn flag_actions(flags: u32) -> FlagActions {
    FlagActions {
        rebind_backchannel: flags
            & (p::SEQ4_STATUS_CB_PATH_DOWN
                | p::SEQ4_STATUS_CB_PATH_DOWN_SESSION
                | p::SEQ4_STATUS_BACKCHANNEL_FAULT)
            != 0,
        test_state: flags
            & (p::SEQ4_STATUS_RECALLABLE_STATE_REVOKED
                | p::SEQ4_STATUS_EXPIRED_SOME_STATE_REVOKED
                | p::SEQ4_STATUS_ADMIN_STATE_REVOKED)
            != 0,
        recover: flags
            & (p::SEQ4_STATUS_EXPIRED_ALL_STATE_REVOKED | p::SEQ4_STATUS_RESTART_RECLAIM_NEEDED)
            != 0,
    }
}

/// The names of the status flags set in `flags`, for reports.
pub fn flag_names(flags: u32) -> Vec<&'static str> {
    const NAMES: [(u32, &str); 13] = [
        (p::SEQ4_STATUS_CB_PATH_DOWN, "CB_PATH_DOWN"),
        (
            p::SEQ4_STATUS_CB_GSS_CONTEXTS_EXPIRING,
            "CB_GSS_CONTEXTS_EXPIRING",
        ),
        (
            p::SEQ4_STATUS_CB_GSS_CONTEXTS_EXPIRED,
            "CB_GSS_CONTEXTS_EXPIRED",
        ),
        (
            p::SEQ4_STATUS_EXPIRED_ALL_STATE_REVOKED,
            "EXPIRED_ALL_STATE_REVOKED",
        ),
        (
            p::SEQ4_STATUS_EXPIRED_SOME_STATE_REVOKED,
            "EXPIRED_SOME_STATE_REVOKED",
        ),
        (p::SEQ4_STATUS_ADMIN_STATE_REVOKED, "ADMIN_STATE_REVOKED"),
        (
            p::SEQ4_STATUS_RECALLABLE_STATE_REVOKED,
            "RECALLABLE_STATE_REVOKED",
        ),
        (p::SEQ4_STATUS_LEASE_MOVED, "LEASE_MOVED"),
        (
            p::SEQ4_STATUS_RESTART_RECLAIM_NEEDED,
            "RESTART_RECLAIM_NEEDED",
        ),
        (p::SEQ4_STATUS_CB_PATH_DOWN_SESSION, "CB_PATH_DOWN_SESSION"),
        (p::SEQ4_STATUS_BACKCHANNEL_FAULT, "BACKCHANNEL_FAULT"),
        (p::SEQ4_STATUS_DEVID_CHANGED, "DEVID_CHANGED"),
        (p::SEQ4_STATUS_DEVID_DELETED, "DEVID_DELETED"),
    ];
    NAMES
        .iter()
        .filter(|(bit, _)| flags & bit != 0)
        .map(|(_, n)| *n)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn granted(
        fore: p::ChannelAttrs4,
        back: p::ChannelAttrs4,
        flags: u32,
    ) -> p::CreateSession4resok {
        p::CreateSession4resok {
            csr_sessionid: [1; 16],
            csr_sequence: 1,
            csr_flags: flags,
            csr_fore_chan_attrs: fore,
            csr_back_chan_attrs: back,
        }
    }

    #[test]
    fn the_grant_sets_the_io_size() {
        let fore = fore_attrs(1 << 20, 16, 16);
        let back = BackChannelLimits::default().attrs();
        let mut g = fore.clone();
        g.ca_maxresponsesize = (256 << 10) + 4096 + 100;
        let t = accept(&fore, &back, &granted(g, back.clone(), 2)).unwrap();
        assert_eq!(t.max_io, 256 << 10);
        assert!(t.back_on_connection);
        let t = accept(&fore, &back, &granted(fore.clone(), back.clone(), 0)).unwrap();
        assert_eq!(t.max_io, 1 << 20);
        assert!(!t.back_on_connection);
    }

    #[test]
    fn a_back_channel_beyond_the_offer_is_refused() {
        let fore = fore_attrs(1 << 20, 16, 16);
        let back = BackChannelLimits::default().attrs();
        let mut b = back.clone();
        b.ca_maxrequestsize += 1;
        assert!(accept(&fore, &back, &granted(fore.clone(), b, 2)).is_err());
        let mut f = fore.clone();
        f.ca_maxrequests = 0;
        assert!(accept(&fore, &back, &granted(f, back.clone(), 2)).is_err());
    }

    #[test]
    fn lease_renewal_times() {
        let t0 = Instant::now();
        let mut l = Lease::new(Duration::from_secs(90), t0);
        assert_eq!(l.renew_at(), t0 + Duration::from_secs(30));
        l.renewed(t0 + Duration::from_secs(10));
        l.renewed(t0 + Duration::from_secs(5)); // an older request's answer
        assert_eq!(l.renew_at(), t0 + Duration::from_secs(40));
        assert!(!l.expired(t0 + Duration::from_secs(99)));
        assert!(l.expired(t0 + Duration::from_secs(100)));
    }

    #[test]
    fn status_flags() {
        assert_eq!(flag_actions(0), FlagActions::default());
        assert!(flag_actions(p::SEQ4_STATUS_CB_PATH_DOWN_SESSION).rebind_backchannel);
        assert!(flag_actions(p::SEQ4_STATUS_RECALLABLE_STATE_REVOKED).test_state);
        assert!(flag_actions(p::SEQ4_STATUS_RESTART_RECLAIM_NEEDED).recover);
        assert_eq!(
            flag_names(p::SEQ4_STATUS_CB_PATH_DOWN | p::SEQ4_STATUS_LEASE_MOVED),
            vec!["CB_PATH_DOWN", "LEASE_MOVED"]
        );
    }
}
