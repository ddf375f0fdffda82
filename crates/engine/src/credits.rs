//! Requester-side credit accounting (RFC 8166 §3.3.1, §4.3.1; RFC 8167 §4.1).
//!
//! A requester may have at most as many calls outstanding as the
//! responder last granted, starts with one credit until a reply reports the
//! real grant (§4.3.3), treats a grant of zero as one (a zero grant would
//! deadlock) and clamps grants above what it asked for (it posted no more
//! receive buffers than that). Each direction of a bidirectional connection
//! has its own instance.

/// Credit state of one requester.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Credits {
    granted: u32,
    in_flight: u32,
    max: u32,
    seen_grant: bool,
}

impl Credits {
    /// A requester that will never use more than `max` credits.
    pub(crate) fn new(max: u32) -> Self {
        Self {
            //= rfc5666bis-04#section-4.3.3
            //# A responder MAY exceed this basic level of configuration, but
            //# a requester MUST NOT assume more than one credit is available,
            //# and MUST receive a valid reply from the responder carrying the
            //# actual number of available credits, prior to sending its next
            //# request.
            //= draft-cel-01#section-5
            //# As with RPC-over-RDMA Version One, a requester MUST assume the
            //# ability to exchange only a single RPC-over-RDMA message at a
            //# time until it receives a non-error RPC-over-RDMA message from
            //# the responder that reports the responder's actual credit
            //# limit.
            granted: 1,
            in_flight: 0,
            max: max.max(1),
            seen_grant: false,
        }
    }

    /// Whether another call may be sent now.
    //= rfc5666bis-04#section-4.3.1
    //# The requester MUST NOT send unacknowledged requests in excess of this
    //# granted responder credit limit.
    //= rfc5666bis-04#section-5.2.3
    //# RPC Calls SHOULD NOT be sent in excess of the currently granted limit.
    pub(crate) fn available(&self) -> bool {
        self.in_flight < self.granted
    }

    /// Records a call sent.
    pub(crate) fn take(&mut self) {
        debug_assert!(self.available(), "credit taken without one available");
        self.in_flight += 1;
    }

    /// Records a call finished (reply or error received).
    pub(crate) fn put(&mut self) {
        self.in_flight = self.in_flight.saturating_sub(1);
    }

    /// Applies a grant from a reply, sanitised: 0 counts as 1, values
    /// above our maximum are clamped. Returns the value applied.
    pub(crate) fn grant(&mut self, value: u32) -> u32 {
        self.granted = value.clamp(1, self.max);
        self.seen_grant = true;
        self.granted
    }

    /// The most this requester will use: what it asks for in every call.
    pub(crate) fn max(&self) -> u32 {
        self.max
    }

    /// The current grant.
    pub(crate) fn granted(&self) -> u32 {
        self.granted
    }

    /// Calls outstanding.
    pub(crate) fn in_flight(&self) -> u32 {
        self.in_flight
    }

    /// Whether any reply has reported a grant yet.
    #[cfg(test)]
    pub(crate) fn seen_grant(&self) -> bool {
        self.seen_grant
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    //= rfc5666bis-04#section-4.3.3
    //= type=test
    //# A responder MAY exceed this basic level of configuration, but a
    //# requester MUST NOT assume more than one credit is available, and MUST
    //# receive a valid reply from the responder carrying the actual number of
    //# available credits, prior to sending its next request.
    #[test]
    fn one_credit_until_first_grant() {
        let mut c = Credits::new(128);
        assert!(c.available());
        c.take();
        assert!(!c.available());
        assert!(!c.seen_grant());
        c.put();
        assert_eq!(c.grant(64), 64);
        for _ in 0..64 {
            c.take();
        }
        assert!(!c.available());
    }

    #[test]
    fn zero_grant_is_one_and_huge_grant_is_clamped() {
        let mut c = Credits::new(128);
        assert_eq!(c.grant(0), 1);
        assert_eq!(c.grant(u32::MAX), 128);
    }

    proptest! {
        //= rfc5666bis-04#section-4.3.1
        //= type=test
        //# The requester MUST NOT send unacknowledged requests in excess of
        //# this granted responder credit limit.
        #[test]
        fn never_more_in_flight_than_granted(ops in proptest::collection::vec((0u8..3, any::<u32>()), 0..200)) {
            let mut c = Credits::new(32);
            for (op, v) in ops {
                match op {
                    0 => if c.available() { c.take() },
                    1 => c.put(),
                    _ => { c.grant(v); }
                }
                // A lowered grant may leave more in flight than granted,
                // but then nothing more may be sent.
                if c.in_flight() >= c.granted() { prop_assert!(!c.available()); }
                prop_assert!(c.granted() >= 1 && c.granted() <= 32);
            }
        }
    }
}
